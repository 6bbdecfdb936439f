"""`archivist` command line. Each area registers its own subcommands; this module imports none of them: it loads
the one module a command needs by name (COMMANDS), so `archivist --help` imports nothing heavy (issue 17).

Exit codes: 0 success, 1 the thing checked is bad (verify), 2 usage or input error.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Sequence

from core import __version__

# command: (module exposing register(subparsers), one-line summary). Order = order in `archivist --help`. The
# summaries live here only: `--help` must not import the command modules, and a module's own add_parser(help=...)
# is replaced by this text (tests/unit/test_cli_start.py checks both lists name the same commands).
COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("core.status.build_cli", "build archives from a status-go waku_messages database"),
    "inspect": ("core.archive.cli", "list archives and messages of a folder, index, data or .torrent"),
    "verify": ("core.archive.cli", "check every invariant; exit 1 with the reason if anything is wrong"),
    "synth": ("core.synth_cli", "generate a deterministic waku_messages database shaped like Status traffic"),
    "seed": ("core.torrent.cli", "seed the newest archive torrent of each community (control node)"),
    "fetch": ("core.torrent.cli", "download a community's archives from a magnet link (member)"),
    "topic": ("core.status.cli", "the Status topic and Waku content topic of a chat ID"),
    "traffic": ("core.status.cli", "write real signed, payload-v1 encrypted Status chat into a waku_messages db"),
    "key": ("core.node.key_cli", "community keys: new, import, show, export (key files are mode 0600); "
                                 "`key group add|list|remove COMMUNITY` for encrypted communities"),
    "codex-inspect": ("core.codex.cli", "list the archives of a Codex index (a CID, or an index file)"),
    "codex-verify": ("core.codex.cli", "fetch a Codex index and every archive, and check them all"),
    "codex-publish": ("core.codex.cli", "upload a community's archives and index to a Codex node"),
    "codex-fetch": ("core.codex.cli", "fetch and verify archives of a Codex index CID (all/latest/range)"),
    "node": ("core.node.cli", "run a headless control or member node (events as JSON lines)"),
    "import": ("core.node.import_cli", "import a downloaded archive folder into a member history database"),
    "spark-build": ("core.pipeline.cli", "build archives on Spark (same arguments and bytes as `build`)"),
    "spark-hydrate": ("core.pipeline.cli", "import downloaded archives into a member history database on Spark"),
    "spark-master": ("core.pipeline.cli", "run a Spark standalone master (Spark's own daemon) in the foreground"),
    "spark-worker": ("core.pipeline.cli", "run a Spark standalone worker (Spark's own daemon) in the foreground"),
    "export": ("core.pipeline.export_cli", "export a community folder's or a history database's messages as "
                                           "Parquet or JSON lines, partitioned by week (Spark)"),
    "wakunode": ("core.waku.cli", "run a standalone Waku node (relay, store, metadata, lightpush)"),
    "gui": ("core.appcli", "the desktop window (default)"),
    "demo": ("core.appcli", "the window with a sample community on 127.0.0.1 (headless without a display)"),
}

# Modules exposing register(subparsers), in `--help` order (tests/unit/test_layering.py reads this registry).
COMMAND_MODULES = list(dict.fromkeys(module for module, _ in COMMANDS.values()))


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=None, separators=(",", ":"), default=str)
    sys.stdout.write("\n")
    sys.stdout.flush()


class _Subcommands:
    """What a module's register() gets: argparse's subparsers, with each command's summary taken from COMMANDS."""

    def __init__(self, sub) -> None:
        self._sub = sub

    def add_parser(self, name: str, **kw):
        if name in COMMANDS:
            kw["help"] = COMMANDS[name][1]
        return self._sub.add_parser(name, **kw)

    def __getattr__(self, attr):
        return getattr(self._sub, attr)


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    ap = argparse.ArgumentParser(prog="archivist", description="Status community history archives: build, "
                                 "inspect, verify, seed, fetch, and the desktop app.")
    ap.add_argument("--version", action="version", version=f"archivist {__version__}")
    return ap, ap.add_subparsers(dest="command", metavar="COMMAND")


def help_parser() -> argparse.ArgumentParser:
    """Every command with its summary and no arguments: what `archivist --help` prints, importing no module."""
    ap, sub = _top_parser()
    for name, (_, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary)
    return ap


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser (every command module imported), or with a known `command` only the module that registers
    it: `archivist verify` then never imports Spark, Qt, libtorrent or trio."""
    ap, sub = _top_parser()
    modules = [COMMANDS[command][0]] if command in COMMANDS else COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(_Subcommands(sub))
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and not argv[0].startswith("-") else None
    ap = make_parser(command) if command in COMMANDS else help_parser()
    args = ap.parse_args(argv)   # --help, --version and unknown commands end here (help_parser)
    if not getattr(args, "func", None):
        args = make_parser("gui").parse_args(["gui", *argv])
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
