"""Status-layer commands: community keys, topics of a chat, and real Status traffic for a message store."""
from __future__ import annotations

import argparse
import os
import sys

from core.status import topics
from core.status.errors import StatusError
from core.status.identity import CommunityIdentity, key_file_is_private


def _passphrase(a) -> str | None:
    if not a.passphrase_env:
        return None
    value = os.environ.get(a.passphrase_env)
    if value is None:
        raise StatusError(f"environment variable {a.passphrase_env} (the passphrase) is not set")
    return value


def _describe(ident: CommunityIdentity) -> dict:
    cid = ident.community_id
    return {"community_id": cid, "public_key": "0x" + ident.public_key.hex(),
            "archive_link_chats": [{"chat_id": c, "topic": "0x" + topics.status_topic(c).hex(),
                                    "content_topic": topics.content_topic(c)}
                                   for c in topics.archive_link_chat_ids(cid)]}


def _print(a, doc: dict, text: str) -> None:
    from core.cli import print_json
    if a.json:
        print_json(doc)
    else:
        print(text)


def cmd_key(a) -> int:
    try:
        if a.action == "new":
            if os.path.exists(a.path):
                raise StatusError(f"{a.path} exists: refusing to overwrite a key")
            ident = CommunityIdentity.generate()
            ident.save(a.path, _passphrase(a))
        elif a.action == "import":
            if os.path.exists(a.path):
                raise StatusError(f"{a.path} exists: refusing to overwrite a key")
            text = sys.stdin.readline() if getattr(a, "hex", None) in (None, "-") else a.hex
            ident = CommunityIdentity.from_hex(text)
            ident.save(a.path, _passphrase(a))
        else:
            ident = CommunityIdentity.load(a.path, _passphrase(a))
            if a.action == "export":
                print("archivist key export: this is the community's private key; anyone holding it controls "
                      "the community", file=sys.stderr)
                print(ident.export_hex())
                return 0
            if not key_file_is_private(a.path):
                print(f"archivist key: warning: {a.path} is readable by others (chmod 600 it)", file=sys.stderr)
    except (StatusError, OSError) as e:
        print(f"archivist key {a.action}: {e}", file=sys.stderr)
        return 2
    doc = _describe(ident)
    _print(a, doc, f"community ID {doc['community_id']}\n" + "\n".join(
        f"  {c['chat_id'][-13:]:>13}  topic {c['topic']}  {c['content_topic']}" for c in doc["archive_link_chats"]))
    return 0


def cmd_topic(a) -> int:
    doc = {"chat_id": a.chat_id, "topic": "0x" + topics.status_topic(a.chat_id).hex(),
           "content_topic": topics.content_topic(a.chat_id)}
    _print(a, doc, f"topic {doc['topic']}  content topic {doc['content_topic']}")
    return 0


def cmd_traffic(a) -> int:
    from core.status.traffic import write_store
    try:
        res = write_store(a.db, a.messages, seed=a.seed, channels=a.channels, authors=a.authors,
                          start=a.start, span=a.weeks * 7 * 24 * 3600)
    except (OSError, StatusError) as e:
        print(f"archivist traffic: {e}", file=sys.stderr)
        return 2
    _print(a, res.to_json(), f"{res.messages} signed, encrypted Status messages of community {res.community_id}\n"
           f"topics {' '.join(res.topics)}")
    return 0


def add_key_file_arguments(p: argparse.ArgumentParser, takes_hex: bool = False) -> None:
    """`archivist key new|import|show|export PATH`, registered by core/node/key_cli.py with `key group`."""
    p.add_argument("path", help="key file")
    if takes_hex:
        p.add_argument("hex", nargs="?", help="the private key as hex, or - to read it from stdin")
    p.add_argument("--passphrase-env", metavar="VAR", help="encrypt/decrypt the key file with the passphrase in $VAR")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_key)


def register(sub: argparse._SubParsersAction) -> None:
    from core.status.traffic import DEFAULT_START
    p = sub.add_parser("topic")
    p.add_argument("chat_id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_topic)

    p = sub.add_parser("traffic")
    p.add_argument("db")
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--channels", type=int, default=3)
    p.add_argument("--authors", type=int, default=20)
    p.add_argument("--weeks", type=int, default=4)
    p.add_argument("--start", type=int, default=DEFAULT_START, help="first timestamp (Unix seconds)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_traffic)
