"""The one parser of magnet links (BEP 9), used by the member's download (core/torrent/fetch.py) and by the
Inspector (gui/inspection.py). Links come from outside (Waku messages, pasted text): every refusal is a
MagnetError whose message says why in one sentence."""
from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl

from core.archive.constants import COMMUNITY_ID
from core.archive.torrent import is_magnet_link

MAX_LINK = 8192                       # far beyond any link we build (infohash, community ID, a few trackers)
_HEX = re.compile(r"^[0-9a-fA-F]{40}\Z")
_B32 = re.compile(r"^[A-Za-z2-7]{32}\Z")


class MagnetError(ValueError):
    """A magnet link that cannot be used; str(e) is the reason."""


@dataclass(frozen=True)
class MagnetLink:
    infohash: str                                  # BitTorrent v1 infohash, 40 lower-case hex digits
    name: str                                      # dn, as given ("" when absent)
    trackers: tuple[str, ...] = ()
    peers: tuple[tuple[str, int], ...] = ()        # x.pe=host:port (malformed ones are left out)
    community_id: str | None = None                # the expected community (dn, or given), when it is one


def _host_port(text: str, lowest: int) -> tuple[str, int] | None:
    """host:port or [v6]:port with lowest <= port <= 65535, or None. ASCII digits only: "²".isdigit() is true but
    int("²") raises."""
    host, _, port = text.rpartition(":")
    ok = host and port.isascii() and port.isdigit() and lowest <= int(port) < 65536
    return (host.strip("[]"), int(port)) if ok else None


def parse_peer(text: str) -> tuple[str, int] | None:
    """A peer to connect to: host:port or [v6]:port, port 1-65535, or None."""
    return _host_port(text, 1)


def parse_listen(text: str) -> tuple[str, int] | None:
    """Where a BitTorrent session listens (`[torrent] listen`, `--listen`): host:port or [v6]:port, port 0 (any
    free one) to 65535, or None."""
    return _host_port(text, 0)


def format_peer(host: str, port: int) -> str:
    """What parse_peer reads back: an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _infohash(value: str) -> str:
    if _HEX.match(value):
        return value.lower()
    if _B32.match(value):
        return base64.b32decode(value.upper()).hex()
    raise MagnetError(f"infohash {value[:60]!r} is not 40 hex digits (or 32 base32 characters)")


def parse_magnet(uri: str, community_id: str | None = None, *, need_community: bool = False) -> MagnetLink:
    """Parse `uri`. `community_id` overrides dn as the expected community; with `need_community` a link whose
    community is unknown (dn is not a community ID and none was given) is refused."""
    if not isinstance(uri, str):
        raise MagnetError("not a magnet link: not text")
    uri = uri.strip()
    if len(uri) > MAX_LINK:
        raise MagnetError(f"not a magnet link: {len(uri)} characters (at most {MAX_LINK})")
    if not is_magnet_link(uri):
        raise MagnetError("not a magnet link: it does not start with 'magnet:?'")
    try:
        uri.encode("utf-8")     # lone surrogates (from a mis-decoded file or clipboard) are not text libtorrent takes
    except UnicodeEncodeError as e:
        raise MagnetError(f"not a magnet link: character {e.start} is not valid text") from None
    try:
        params = parse_qsl(uri[8:], keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError) as e:
        raise MagnetError(f"not a magnet link: its parameters do not decode ({e})") from None
    hashes: list[str] = []
    name, trackers, peers = "", [], []
    for key, value in params:
        k = key.lower()
        if k == "xt" or (k.startswith("xt.") and k[3:].isdigit()):
            if value.lower().startswith("urn:btih:"):
                hashes.append(_infohash(value[9:]))
        elif k == "dn" and not name:
            name = value
        elif k == "tr" and value:
            trackers.append(value)
        elif k == "x.pe":
            p = parse_peer(value)
            if p is not None:
                peers.append(p)
    if not hashes:
        raise MagnetError("magnet link has no BitTorrent v1 infohash (xt=urn:btih:…)")
    if len(set(hashes)) > 1:
        raise MagnetError(f"magnet link names {len(set(hashes))} different torrents; one is expected")
    if hashes[0] == "0" * 40:
        raise MagnetError("magnet link's infohash is all zeros")
    cid = (community_id or name).lower()
    if not COMMUNITY_ID.match(cid):
        if need_community:
            raise MagnetError(f"magnet name {cid[:80]!r} is not a community ID (0x + 66 hex digits)")
        cid = None
    return MagnetLink(hashes[0], name, tuple(dict.fromkeys(trackers)), tuple(dict.fromkeys(peers)), cid)
