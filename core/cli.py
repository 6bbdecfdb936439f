"""`archivist` command line. Each area registers its own subcommands (see COMMAND_MODULES).

Exit codes: 0 success, 1 the thing checked is bad (verify), 2 usage or input error.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Sequence

from core import __version__

# Modules exposing register(subparsers). Order = order in `archivist --help`.
COMMAND_MODULES = [
    "core.status.build_cli",     # build (its --encrypt-key needs core.status; core/archive sits below it)
    "core.archive.cli",          # inspect, verify
    "core.synth_cli",            # synth
    "core.torrent.cli",
    "core.status.cli",
    "core.node.key_cli",         # key (the community key file; group keys in the node's data folder)
    "core.codex.cli",
    "core.node.cli",
    "core.node.import_cli",
    "core.pipeline.cli",
    "core.pipeline.export_cli",  # export (Parquet / JSON lines on Spark)
    "core.waku.cli",
    "core.appcli",
]


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=None, separators=(",", ":"), default=str)
    sys.stdout.write("\n")
    sys.stdout.flush()


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with `command` only the modules up to the one that registers it: `archivist verify`
    then skips importing Spark, Qt, libtorrent and trio front ends it never uses (0.35 s of start-up)."""
    ap = argparse.ArgumentParser(prog="archivist", description="Status community history archives: build, "
                                 "inspect, verify, seed, fetch, and the desktop app.")
    ap.add_argument("--version", action="version", version=f"archivist {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
        if command is not None and command in sub.choices:
            break
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = make_parser(argv[0] if argv and not argv[0].startswith("-") else None)
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        args = ap.parse_args(["gui", *argv])
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
