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
    "core.archive.cli",
    "core.torrent.cli",
    "core.status.cli",
    "core.codex.cli",
    "core.node.cli",
    "core.node.import_cli",
    "core.pipeline.cli",
    "core.waku.cli",
    "core.appcli",
]


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=None, separators=(",", ":"), default=str)
    sys.stdout.write("\n")
    sys.stdout.flush()


def make_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="archivist", description="Status community history archives: build, "
                                 "inspect, verify, seed, fetch, and the desktop app.")
    ap.add_argument("--version", action="version", version=f"archivist {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = make_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        args = ap.parse_args(["gui", *(argv or [])])
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
