"""The node's TOML configuration (one file; command-line options override). Every port defaults to 0."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from core.node.community import CommunityConfig


class ConfigError(ValueError):
    pass


@dataclass
class NodeSettings:
    data_dir: Path
    settle_seconds: float = 20.0
    grace_period: int = 3600                     # control: a 7-day window is built this long after it closed
    tick_seconds: float = 1.0
    torrent_listen: str = "0.0.0.0:0"
    torrent_peers: list[tuple[str, int]] = field(default_factory=list)
    torrent_local: bool = False                  # loopback: no DHT/LSD/UPnP/NAT-PMP, TCP only
    waku_backend: str = "embedded"               # embedded | nwaku-rest | none
    waku_host: str = "127.0.0.1"
    waku_port: int = 0
    waku_peers: list[str] = field(default_factory=list)
    waku_rest_url: str = "http://127.0.0.1:8645"
    spark_master: str = "local[*]"
    spark_build: bool = True                     # control nodes build on Spark (False: single-process path)
    communities: list[CommunityConfig] = field(default_factory=list)


def default_data_dir() -> Path:
    import platformdirs
    return Path(platformdirs.user_data_dir("archivist", "archivist"))


def _peer(s: str) -> tuple[str, int]:
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"peer {s!r} is not HOST:PORT")
    return host, int(port)


def load(path: Path | str) -> NodeSettings:
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {p} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {p} is not valid TOML: {e}") from None
    return from_dict(doc, base=p.parent)


def from_dict(doc: dict, base: Path = Path(".")) -> NodeSettings:
    def rel(v: str | None) -> str | None:
        return None if v is None else str((base / v) if not Path(v).is_absolute() else Path(v))
    try:
        t, w = doc.get("torrent", {}), doc.get("waku", {})
        s = NodeSettings(
            data_dir=Path(rel(doc["data_dir"])) if "data_dir" in doc else default_data_dir(),
            settle_seconds=float(doc.get("settle_seconds", 20.0)),
            grace_period=int(doc.get("grace_period", 3600)),
            tick_seconds=float(doc.get("tick_seconds", 1.0)),
            torrent_listen=str(t.get("listen", "0.0.0.0:0")),
            torrent_peers=[_peer(x) for x in t.get("peers", [])],
            torrent_local=bool(t.get("local", False)),
            waku_backend=str(w.get("backend", "embedded")),
            waku_host=str(w.get("host", "127.0.0.1")),
            waku_port=int(w.get("port", 0)),
            waku_peers=[str(x) for x in w.get("peers", [])],
            waku_rest_url=str(w.get("rest_url", "http://127.0.0.1:8645")),
            spark_master=str(doc.get("spark", {}).get("master", "local[*]")),
            spark_build=bool(doc.get("spark", {}).get("build", True)),
        )
        for c in doc.get("community", []):
            role = c.get("role", "member")
            if role not in ("control", "member"):
                raise ConfigError(f"community role must be control or member, not {role!r}")
            s.communities.append(CommunityConfig(
                community_id=str(c["id"]).lower(), name=str(c.get("name", "")), role=role,
                channel_chat_ids=[str(x) for x in c.get("channels", [])], key_file=rel(c.get("key_file")),
                archive_support=bool(c.get("archive_support", True)), policy=str(c.get("policy", "all")),
                range_start=c.get("from"), range_end=c.get("to"),
                announce_on=tuple(c.get("announce_on", ("magnetlinks", "memberUpdate"))),
                trackers=tuple(c.get("trackers", ())), encrypted=bool(c.get("encrypted", False)),
                backend=str(c.get("backend", "torrent")), codex_api=c.get("codex_api")))
    except KeyError as e:
        raise ConfigError(f"config is missing {e.args[0]!r}") from None
    except (TypeError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"config has a bad value: {e}") from None
    if s.grace_period < 0:
        raise ConfigError(f"grace_period must be 0 or more seconds, not {s.grace_period}")
    if s.waku_backend not in ("embedded", "nwaku-rest", "none"):
        raise ConfigError(f"waku.backend must be embedded, nwaku-rest or none, not {s.waku_backend!r}")
    return s
