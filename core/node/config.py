"""The node's TOML configuration (one file; command-line options override). Every port defaults to 0."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from core.archive.constants import COMMUNITY_ID, community_id as canonical_community_id
from core.node.community import GRACE_SECONDS, RETENTION_SECONDS, SETTLE_SECONDS, CommunityConfig
from core.pipeline.session import DEFAULT_MASTER, EXECUTOR_TIMEOUT_S
from core.torrent.magnet import format_peer, parse_listen, parse_peer
from core.torrent.selection import MODES
from core.waku.message import DEFAULT_MAX_FUTURE_S, DEFAULT_MAX_MESSAGE_SIZE
from core.waku.ratelimit import IP_BURST, IP_RATE_S, PEER_BURST, PEER_RATE_S

DEFAULT_POLICIES = ("all", "latest")  # a default needs no dates; a range is chosen per community


class ConfigError(ValueError):
    pass


@dataclass
class NodeSettings:
    data_dir: Path
    settle_seconds: float = SETTLE_SECONDS
    grace_period: int = GRACE_SECONDS            # control: a 7-day window is built this long after it closed
    retention_period: int = RETENTION_SECONDS    # control: archived messages older than this leave the database
    default_policy: str = "all"                  # member communities without their own `policy`: all | latest
    tick_seconds: float = 1.0
    torrent_listen: str = "0.0.0.0:0"
    torrent_peers: list[tuple[str, int]] = field(default_factory=list)
    torrent_local: bool = False                  # loopback: no DHT/LSD/UPnP/NAT-PMP, TCP only
    waku_backend: str = "embedded"               # embedded | nwaku-rest | none
    waku_host: str = "127.0.0.1"
    waku_port: int = 0
    waku_peers: list[str] = field(default_factory=list)
    waku_rest_url: str = "http://127.0.0.1:8645"
    waku_max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE   # bytes; the Status fleet carries up to 1024 KiB
    waku_max_future_s: float = DEFAULT_MAX_FUTURE_S  # refuse message timestamps further ahead than this (nwaku: 20 s)
    waku_read_timeout_s: float = 10.0            # deadline of every store/lightpush/metadata request
    waku_requests_per_s: float = PEER_RATE_S     # store/lightpush requests per peer id (token bucket) ...
    waku_request_burst: int = PEER_BURST         # ... beyond which a peer gets 429
    waku_requests_per_ip_s: float = IP_RATE_S    # the same per source address, whatever peer ids it uses
    waku_request_burst_per_ip: int = IP_BURST
    waku_rate_exempt_ips: list[str] = field(default_factory=list)  # addresses without an address budget
    waku_network: str = "local"                  # local | status: cluster, shards, enrtree (core/waku/networks.py)
    spark_master: str = DEFAULT_MASTER
    spark_build: bool = True                     # control nodes build on Spark (False: single-process path)
    spark_secret_file: str | None = None         # the cluster's shared secret (spark.authenticate), a 0600 file
    spark_encrypt: bool = False                  # spark.network.crypto.enabled (needs spark_secret_file)
    spark_driver_host: str | None = None         # cluster: the address executors reach the driver at (default:
    spark_driver_bind: str | None = None         # the one that routes to the master); where it listens (NAT)
    spark_driver_port: int = 0                   # fixed driver / block manager ports for firewalls (0: any)
    spark_block_manager_port: int = 0
    spark_executor_timeout: float = EXECUTOR_TIMEOUT_S  # cluster: a job with no executor this long fails (s)
    spark_stage_dir: str | None = None           # cluster: a folder shared by the driver and every worker, where
                                                 # the driver stages messages (core/pipeline/stage.py)
    communities: list[CommunityConfig] = field(default_factory=list)


def default_data_dir() -> Path:
    import platformdirs
    return Path(platformdirs.user_data_dir("archivist", "archivist"))


def peer(s) -> tuple[str, int]:
    """A BitTorrent peer from the config file or a settings form (core.torrent.magnet.parse_peer's rule, the one
    for every peer address). Raises ConfigError."""
    p = parse_peer(s.strip()) if isinstance(s, str) else None
    if p is None:
        raise ConfigError(f"BitTorrent peer {s!r} is not HOST:PORT (or [IPv6]:PORT), with a port from 1 to 65535")
    return p


def listen_address(s) -> tuple[str, int]:
    """`[torrent] listen` (core.torrent.magnet.parse_listen's rule: the config, the node and the settings forms).
    Raises ConfigError."""
    p = parse_listen(s.strip()) if isinstance(s, str) else None
    if p is None:
        raise ConfigError(f"torrent.listen {s!r} is not HOST:PORT (or [IPv6]:PORT), with a port from 0 (any free "
                          "port) to 65535")
    return p


def _range_bound(v, key: str, until: bool) -> int | None:
    """A community's `from` / `to`: unix seconds, or a date or date and time (a TOML one, or text), read by the
    command line's rule (core.torrent.selection.parse_when: UTC unless it says otherwise; a date alone is a whole
    day, so `to = 2026-11-07` includes that day, as the member view's date fields do)."""
    import argparse
    import datetime as dt
    from core.torrent.selection import day_end, day_start, parse_when
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v
    if isinstance(v, dt.datetime):
        return int((v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)).timestamp())
    if isinstance(v, dt.date):
        return day_end(v) if until else day_start(v)
    if isinstance(v, str):
        try:
            return parse_when(v.strip(), until=until)
        except argparse.ArgumentTypeError as e:
            raise ConfigError(f"[[community]] {key}: {e}") from None
    raise ConfigError(f"[[community]] {key} must be unix seconds or a date, not {v!r}")


def _bool(v, key: str) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(f"{key} must be true or false, not {v!r}")
    return v


def _port(v, key: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 65535:
        raise ConfigError(f"{key} must be a port number from 0 (any free port) to 65535, not {v!r}")
    return v


def _positive(v, key: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise ConfigError(f"{key} must be a number of seconds above 0, not {v!r}")
    return float(v)


def _host(v, key: str) -> str | None:
    if not isinstance(v, str):
        raise ConfigError(f"{key} must be a host name or address in quotes, not {v!r}")
    return v.strip() or None


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
        t, w, sp = doc.get("torrent", {}), doc.get("waku", {}), doc.get("spark", {})
        default_policy = str(doc.get("default_policy", "all"))
        if default_policy not in DEFAULT_POLICIES:
            raise ConfigError(f"default_policy must be all or latest, not {default_policy!r}")
        D = NodeSettings(Path("."))       # the defaults: the dataclass's, written once
        s = NodeSettings(
            data_dir=Path(rel(doc["data_dir"])) if "data_dir" in doc else default_data_dir(),
            settle_seconds=float(doc.get("settle_seconds", D.settle_seconds)),
            grace_period=int(doc.get("grace_period", D.grace_period)),
            retention_period=int(doc.get("retention_period", D.retention_period)),
            default_policy=default_policy,
            tick_seconds=float(doc.get("tick_seconds", D.tick_seconds)),
            torrent_listen=str(t.get("listen", D.torrent_listen)),
            torrent_peers=[peer(x) for x in t.get("peers", [])],
            torrent_local=bool(t.get("local", D.torrent_local)),
            waku_backend=str(w.get("backend", D.waku_backend)),
            waku_host=str(w.get("host", D.waku_host)),
            waku_port=int(w.get("port", D.waku_port)),
            waku_peers=[str(x) for x in w.get("peers", [])],
            waku_rest_url=str(w.get("rest_url", D.waku_rest_url)),
            waku_max_message_size=int(w.get("max_message_size", D.waku_max_message_size)),
            waku_max_future_s=float(w.get("max_future_s", D.waku_max_future_s)),
            waku_read_timeout_s=float(w.get("read_timeout_s", D.waku_read_timeout_s)),
            waku_requests_per_s=float(w.get("requests_per_s", D.waku_requests_per_s)),
            waku_request_burst=int(w.get("request_burst", D.waku_request_burst)),
            waku_requests_per_ip_s=float(w.get("requests_per_ip_s", D.waku_requests_per_ip_s)),
            waku_request_burst_per_ip=int(w.get("request_burst_per_ip", D.waku_request_burst_per_ip)),
            waku_rate_exempt_ips=[str(x) for x in w.get("rate_exempt_ips", [])],
            waku_network=str(w.get("network", D.waku_network)).strip().lower(),
            spark_master=str(sp.get("master", D.spark_master)),
            spark_build=bool(sp.get("build", D.spark_build)),
            spark_secret_file=rel(sp.get("secret_file")),
            spark_encrypt=_bool(sp.get("encrypt", D.spark_encrypt), "spark.encrypt"),
            spark_driver_host=_host(sp.get("driver_host", ""), "spark.driver_host"),
            spark_driver_bind=_host(sp.get("driver_bind", ""), "spark.driver_bind"),
            spark_driver_port=_port(sp.get("driver_port", D.spark_driver_port), "spark.driver_port"),
            spark_block_manager_port=_port(sp.get("block_manager_port", D.spark_block_manager_port),
                                           "spark.block_manager_port"),
            spark_executor_timeout=_positive(sp.get("executor_timeout", D.spark_executor_timeout),
                                             "spark.executor_timeout"),
            spark_stage_dir=rel(sp.get("stage_dir")),
        )
        for c in doc.get("community", []):
            role = c.get("role", "member")
            if role not in ("control", "member"):
                raise ConfigError(f"community role must be control or member, not {role!r}")
            try:
                cid = canonical_community_id(c.get("id"))
            except ValueError as e:
                raise ConfigError(f"[[community]] id: {e}") from None
            s.communities.append(CommunityConfig(
                community_id=cid, name=str(c.get("name", "")), role=role,
                channel_chat_ids=[str(x) for x in c.get("channels", [])], key_file=rel(c.get("key_file")),
                archive_support=bool(c.get("archive_support", True)), policy=str(c.get("policy", default_policy)),
                range_start=_range_bound(c.get("from"), "from", False),
                range_end=_range_bound(c.get("to"), "to", True),
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
    if s.retention_period < 0:
        raise ConfigError(f"retention_period must be 0 or more seconds, not {s.retention_period}")
    if s.waku_max_message_size < 1024 or s.waku_max_future_s < 0 or s.waku_read_timeout_s <= 0:
        raise ConfigError("waku.max_message_size must be at least 1024 bytes, max_future_s >= 0 and "
                          "read_timeout_s > 0")
    if min(s.waku_requests_per_s, s.waku_requests_per_ip_s) <= 0 or \
            min(s.waku_request_burst, s.waku_request_burst_per_ip) < 1:
        raise ConfigError("waku.requests_per_s and requests_per_ip_s must be > 0, request_burst and "
                          "request_burst_per_ip at least 1")
    if s.spark_encrypt and not s.spark_secret_file:
        raise ConfigError("spark.encrypt needs spark.secret_file (encryption uses the cluster's shared secret)")
    listen_address(s.torrent_listen)
    from core.pipeline.cluster_conf import master_problem
    if problem := master_problem(s.spark_master):
        raise ConfigError(f"spark.master: {problem}")
    if s.waku_backend not in ("embedded", "nwaku-rest", "none"):
        raise ConfigError(f"waku.backend must be embedded, nwaku-rest or none, not {s.waku_backend!r}")
    from core.waku.networks import NETWORKS
    if s.waku_network not in NETWORKS:
        raise ConfigError(f"waku.network must be {' or '.join(sorted(NETWORKS))}, not {s.waku_network!r}")
    return s


# ---------------------------------------------------------------- writing (first run: the window writes the file
# that `archivist node --config` reads, so a headless node and the window share one file)

HEADER = ("# Archivist node configuration (format: docs/NODE.md). Read by `archivist node --config FILE` and by the\n"
          "# window (`archivist gui`); paths are relative to this file.\n")


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    out = []
    for ch in str(v):            # TOML basic string: escape quote, backslash and control characters
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _path(p, base: Path) -> str:
    p = Path(p)
    try:
        return p.relative_to(base).as_posix() or "."
    except ValueError:
        return str(p)


def dump(s: NodeSettings, base: Path, channel_names: dict[str, str] | None = None) -> str:
    """TOML that `load` reads back to equal settings (paths under `base`, the file's folder, are written relative).
    Defaults are left out, except the data folder, the network choices and each community's identity.
    `channel_names` (chat ID -> name) become comments, since the format has no field for them."""
    names = channel_names or {}
    d, dc = NodeSettings(data_dir=s.data_dir), CommunityConfig(community_id="")
    lines = [HEADER, f"data_dir = {_toml(_path(s.data_dir, base))}"]
    for key, attr in (("settle_seconds", "settle_seconds"), ("grace_period", "grace_period"),
                      ("retention_period", "retention_period"), ("default_policy", "default_policy"),
                      ("tick_seconds", "tick_seconds")):
        if getattr(s, attr) != getattr(d, attr):
            lines.append(f"{key} = {_toml(getattr(s, attr))}")
    lines += ["", "[torrent]", f"listen = {_toml(s.torrent_listen)}", f"local = {_toml(s.torrent_local)}"]
    if s.torrent_peers:
        lines.append(f"peers = {_toml([format_peer(h, p) for h, p in s.torrent_peers])}")
    lines += ["", "[waku]", f"backend = {_toml(s.waku_backend)}"]
    for key, attr in (("network", "waku_network"),
                      ("host", "waku_host"), ("port", "waku_port"), ("peers", "waku_peers"),
                      ("rest_url", "waku_rest_url"), ("max_message_size", "waku_max_message_size"),
                      ("max_future_s", "waku_max_future_s"), ("read_timeout_s", "waku_read_timeout_s"),
                      ("requests_per_s", "waku_requests_per_s"), ("request_burst", "waku_request_burst"),
                      ("requests_per_ip_s", "waku_requests_per_ip_s"),
                      ("request_burst_per_ip", "waku_request_burst_per_ip"),
                      ("rate_exempt_ips", "waku_rate_exempt_ips")):
        if getattr(s, attr) != getattr(d, attr):
            lines.append(f"{key} = {_toml(getattr(s, attr))}")
    spark = ("spark_master", "spark_build", "spark_secret_file", "spark_encrypt", "spark_driver_host",
             "spark_driver_bind", "spark_driver_port", "spark_block_manager_port", "spark_executor_timeout",
             "spark_stage_dir")
    if any(getattr(s, a) != getattr(d, a) for a in spark):
        lines += ["", "[spark]", f"master = {_toml(s.spark_master)}", f"build = {_toml(s.spark_build)}"]
        if s.spark_secret_file:
            lines.append(f"secret_file = {_toml(_path(s.spark_secret_file, base))}")
        if s.spark_stage_dir:
            lines.append(f"stage_dir = {_toml(_path(s.spark_stage_dir, base))}")
        if s.spark_encrypt:
            lines.append("encrypt = true")
        for key in ("driver_host", "driver_bind", "driver_port", "block_manager_port", "executor_timeout"):
            if getattr(s, "spark_" + key) and getattr(s, "spark_" + key) != getattr(d, "spark_" + key):
                lines.append(f"{key} = {_toml(getattr(s, 'spark_' + key))}")
    for c in s.communities:
        lines += ["", "[[community]]", f"id = {_toml(c.community_id)}", f"name = {_toml(c.name)}",
                  f"role = {_toml(c.role)}", "channels = ["]
        lines += [f"  {_toml(ch)},{'  # ' + names[ch].replace(chr(10), ' ') if names.get(ch) else ''}"
                  for ch in c.channel_chat_ids]
        lines.append("]")
        if c.key_file:
            lines.append(f"key_file = {_toml(_path(c.key_file, base))}")
        if c.role == "member" or c.policy != dc.policy:
            lines.append(f"policy = {_toml(c.policy)}")
        for key, attr in (("from", "range_start"), ("to", "range_end"), ("archive_support", "archive_support"),
                          ("announce_on", "announce_on"), ("trackers", "trackers"), ("encrypted", "encrypted"),
                          ("backend", "backend"), ("codex_api", "codex_api")):
            v = getattr(c, attr)
            if v is not None and v != getattr(dc, attr):
                lines.append(f"{key} = {_toml(v)}")
    return "\n".join(lines) + "\n"


def save(s: NodeSettings, path: Path | str, channel_names: dict[str, str] | None = None, *,
         overwrite: bool = False) -> Path:
    """Write `s` to `path` atomically, after checking that the text reads back to the same settings."""
    import os
    import secrets
    path = Path(path).absolute()
    if path.exists() and not overwrite:
        raise ConfigError(f"{path} already exists: refusing to overwrite it")
    text = dump(s, path.parent, channel_names)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if dump(load(tmp), path.parent, channel_names) != text:
            raise ConfigError("the configuration does not read back the same (a bug): nothing was written")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def channel_chat_ids(community_id: str, entries: list[str], *, new_allowed: bool = True) -> list[tuple[str, str]]:
    """(label, chat ID) for each channel the person listed: a name (a new channel: community ID + a fresh UUID v4,
    as Status makes them), a channel share link (status.app/cc/…), a chat ID or a channel UUID."""
    import uuid

    from core.status.share_link import CHANNEL_UUID, ShareLinkError, parse
    out: list[tuple[str, str]] = []
    for raw in entries:
        e = raw.strip()
        if not e:
            continue
        low = e.lower()        # a chat ID: the community ID (COMMUNITY_ID's 68 characters), then a channel UUID
        m = (low[:68], low[68:]) if COMMUNITY_ID.match(low[:68]) and CHANNEL_UUID.match(low[68:]) else None
        if "status.app/" in e:
            try:
                link = parse(e)
            except ShareLinkError as err:
                raise ConfigError(f"channel link {e[:40]}…: {err}") from None
            if link.channel_uuid is None:
                raise ConfigError("that is a community link, not a channel link (status.app/cc/…)")
            if link.community_id != community_id:
                raise ConfigError(f"the link to channel {link.channel_name or link.channel_uuid} belongs to "
                                  f"another community")
            item = (link.channel_name, link.channel_chat_id)
        elif m:
            if m[0] != community_id:
                raise ConfigError(f"chat ID {e[:20]}… belongs to another community")
            item = ("", e.lower())
        elif CHANNEL_UUID.match(e.lower()):
            item = ("", community_id + e.lower())
        elif not new_allowed:
            raise ConfigError(f"{e!r}: a member cannot add channels; paste the channel's link (status.app/cc/…) "
                              "or its chat ID")
        elif len(e) > 100 or any(ord(ch) < 0x20 for ch in e):
            raise ConfigError(f"{e[:30]!r} is not a channel name (one line, at most 100 characters)")
        else:
            item = (e, community_id + str(uuid.uuid4()))
        if any(item[1] == c or (item[0] and item[0].lower() == n.lower()) for n, c in out):
            raise ConfigError(f"channel {item[0] or item[1]} is listed twice")
        out.append(item)
    return out


def private_key_from_text(text: str):
    """A CommunityIdentity from hex (as `archivist key export` prints it, or Status exports a community key) or an
    Archivist key file's JSON (without passphrase: the node reads its key file unattended)."""
    import json

    from core.status.errors import StatusError
    from core.status.identity import CommunityIdentity
    t = text.strip()
    try:
        if t.startswith("{"):
            try:
                doc = json.loads(t)
            except json.JSONDecodeError:
                raise ConfigError("the key file is not valid JSON") from None
            return CommunityIdentity.from_file_json(doc)
        lines = [x.strip() for x in t.splitlines() if x.strip() and not x.lstrip().startswith("#")]
        if len(lines) != 1:
            raise ConfigError("paste the private key: 64 hex digits (0x optional)")
        return CommunityIdentity.from_hex(lines[0])
    except StatusError as e:
        if getattr(e, "code", "") == "passphrase":
            raise ConfigError("this key file has a passphrase: run `archivist key export FILE --passphrase-env VAR` "
                              "and paste the hex it prints") from None
        raise ConfigError(str(e)) from None


def first_run_settings(*, role: str, community_id: str, data_dir: Path, name: str = "",
                       channels: list[str] | None = None, key_file: Path | str | None = None, policy: str = "all",
                       range_start: int | None = None, range_end: int | None = None, torrent_port: int = 0,
                       loopback: bool = False, waku_port: int = 0, waku_peers: list[str] | None = None,
                       nwaku_rest_url: str = "", torrent_peers: list[str] | None = None,
                       default_policy: str = "all", spark_master: str = "") -> NodeSettings:
    """The node settings of one community from the first-run choices (owner: role control with its key file and
    channels; member: a download policy). Raises ConfigError with one sentence."""
    from core.status.identity import community_public_key
    if role not in ("control", "member"):
        raise ConfigError(f"role must be control or member, not {role!r}")
    try:
        community_id = canonical_community_id(community_id)
        community_public_key(community_id)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if role == "control" and not key_file:
        raise ConfigError("an owner's node needs the community key")
    if role == "control" and not channels:
        raise ConfigError("name at least one channel: the owner's node archives the community's channels")
    if policy not in MODES:
        raise ConfigError(f"policy must be all, latest or range, not {policy!r}")
    if policy == "range" and (range_start is None or range_end is None or range_start >= range_end):
        raise ConfigError("the time range must end after it starts")
    for port in (torrent_port, waku_port):
        if not 0 <= port <= 65535:
            raise ConfigError(f"port {port} is not 0..65535")
    if default_policy not in DEFAULT_POLICIES:
        default_policy = "all"          # a window setting of "range" has no dates to be a node default
    host = "127.0.0.1" if loopback else "0.0.0.0"
    s = NodeSettings(data_dir=Path(data_dir), torrent_listen=format_peer(host, torrent_port), torrent_local=loopback,
                     waku_backend="nwaku-rest" if nwaku_rest_url else "embedded", waku_port=waku_port,
                     waku_peers=[p for p in (waku_peers or []) if p.strip()],
                     torrent_peers=[peer(p) for p in (torrent_peers or []) if p.strip()],
                     default_policy=default_policy, spark_master=spark_master.strip() or DEFAULT_MASTER)
    if nwaku_rest_url:
        s.waku_rest_url = nwaku_rest_url
    rng = (range_start, range_end) if policy == "range" else (None, None)
    s.communities.append(CommunityConfig(
        community_id=community_id, name=name.strip(), role=role, channel_chat_ids=list(channels or []),
        key_file=str(key_file) if key_file else None, policy=policy, range_start=rng[0], range_end=rng[1]))
    return s
