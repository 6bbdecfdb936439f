"""`archivist key`: the community's own key file (new, import, show, export: core/status/cli.py) and the group
keys of encrypted communities (`key group add|list|remove COMMUNITY`), kept in the node's data folder where the
running node picks them up (core/node/engine.py) and resumes archives parked for a missing key.

The command sits in core/node because finding the data folder needs the node's config (core/node/config.py)."""
from __future__ import annotations

import sys
from pathlib import Path

from core.archive.constants import community_id_arg


def _data_dir(a) -> Path:
    """--data-dir, else the data_dir of --config / $ARCHIVIST_CONFIG, else the default data folder's config."""
    import os
    from core.node.config import default_data_dir, load
    if a.data_dir:
        return Path(a.data_dir).expanduser()
    config = a.config or os.environ.get("ARCHIVIST_CONFIG")
    if config:
        return load(config).data_dir          # ConfigError: reported by the caller
    default = default_data_dir() / "archivist.toml"
    return load(default).data_dir if default.exists() else default_data_dir()


def cmd_group(a) -> int:
    from core.cli import print_json
    from core.hextext import from_hex
    from core.node.community import NodePaths
    from core.node.config import ConfigError
    from core.status.archive_encryption import GroupKeyStore, parse_cli_key
    from core.status.errors import EncryptionError, StatusError
    from core.status.identity import community_id_bytes
    try:
        group_id = community_id_bytes(a.community)
        paths = NodePaths(_data_dir(a))
        store = GroupKeyStore(paths.group_keys)
        if a.group_action == "add":
            text = sys.stdin.readline() if a.key in (None, "-") else a.key
            if a.key is None and sys.stdin.isatty():
                raise StatusError("give the key as HEX[@TIMESTAMP_MS], or - to read it from stdin")
            key = parse_cli_key(text, a.community)
            store.add(key)
            keys = [key]
        elif a.group_action == "remove":
            held = {k.key_id: k for k in store.keys_of(group_id)}
            try:
                kid = from_hex(a.key_id.strip())
            except ValueError:
                kid = b""
            if kid not in held:
                raise StatusError(f"no group key {a.key_id} for community {a.community}")
            store.remove(kid)
            keys = [held[kid]]
        else:
            keys = store.keys_of(group_id)
    except ConfigError as e:
        print(f"archivist key group: {e}", file=sys.stderr)
        return 2
    except (StatusError, EncryptionError, ValueError, OSError) as e:
        print(f"archivist key group {a.group_action}: {e}", file=sys.stderr)
        return 2
    doc = {"community_id": a.community, "file": str(paths.group_keys), "action": a.group_action,
           "keys": [{"key_id": "0x" + k.key_id.hex(), "timestamp": k.timestamp} for k in keys]}
    if a.json:
        print_json(doc)
        return 0
    verb = {"add": "added", "remove": "removed", "list": "held"}[a.group_action]
    print(f"{len(keys)} group key(s) {verb} for {a.community} in {paths.group_keys}")
    for k in doc["keys"]:
        print(f"  {k['key_id']}  timestamp {k['timestamp']}")
    return 0


def register(sub) -> None:
    from core.status.cli import add_key_file_arguments
    p = sub.add_parser("key")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name in ("new", "import", "show", "export"):
        add_key_file_arguments(actions.add_parser(name, help=f"{name} a community key file"), name == "import")
    g = actions.add_parser("group", help="the hash-ratchet keys of encrypted communities, in the node's data "
                                         "folder (group-keys.json, mode 0600); a running node uses a new key at once")
    g_actions = g.add_subparsers(dest="group_action", metavar="ACTION", required=True)
    for name, what in (("add", "add a key: HEX[@TIMESTAMP_MS], or - for stdin"), ("list", "list the keys held"),
                       ("remove", "forget a key by its ID (as `list` shows it)")):
        q = g_actions.add_parser(name, help=what)
        q.add_argument("community", type=community_id_arg, help="the community ID (0x + 66 hex digits)")
        if name == "add":
            q.add_argument("key", nargs="?", help="HEX[@TIMESTAMP_MS], or - to read it from stdin")
        elif name == "remove":
            q.add_argument("key_id")
        q.add_argument("--config", help="the node's TOML config (default: $ARCHIVIST_CONFIG, else archivist.toml "
                                        "in the default data folder)")
        q.add_argument("--data-dir", help="the node's data folder (overrides the config)")
        q.add_argument("--json", action="store_true")
        q.set_defaults(func=cmd_group)
