"""`archivist` starts light (issue 17): `--help` lists every command from core.cli's table without importing any
command module, and a command imports only the module that registers it."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from core import cli
from core.archive.build import build_archives
from core.synth import synthesize

# Modules no light command may import: generated protobuf, libtorrent, Spark, HTTP, secp256k1, trio/libp2p, Qt...
HEAVY = ("google.protobuf", "core.pb", "libtorrent", "pyspark", "py4j", "httpx", "coincurve", "trio", "libp2p",
         "PySide6", "numpy", "Crypto", "multiaddr")

_PROBE = """
import contextlib, io, json, sys
from core.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:
        code = e.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _run(*argv: str) -> dict:
    p = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _loaded(modules: list[str], prefixes) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in prefixes)]


def test_help_lists_every_command_and_imports_no_command_module():
    r = _run("--help")
    assert r["code"] == 0
    text = " ".join(r["out"].split())      # argparse wraps lines: compare word by word
    for name, (_, summary) in cli.COMMANDS.items():
        assert f"{name} {' '.join(summary.split())}" in text, name
    assert _loaded(r["modules"], HEAVY) == []
    assert _loaded(r["modules"], cli.COMMAND_MODULES) == []


def test_the_table_names_exactly_what_the_modules_register():
    for module in cli.COMMAND_MODULES:
        ap = argparse.ArgumentParser()
        sub = ap.add_subparsers()
        __import__(module, fromlist=["register"]).register(cli._Subcommands(sub))
        assert set(sub.choices) == {n for n, (m, _) in cli.COMMANDS.items() if m == module}, module
    # and every command's summary in `--help` is the table's, whatever the module passed to add_parser
    ap = cli.make_parser()
    sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    assert {c.dest: c.help for c in sub._choices_actions} == {n: s for n, (_, s) in cli.COMMANDS.items()}


def test_a_command_parser_loads_only_its_module():
    assert _loaded(_run("synth", "--help")["modules"], set(cli.COMMAND_MODULES) - {"core.synth_cli"}) == []
    a = cli.make_parser("verify").parse_args(["verify", "x", "--json"])
    assert a.command == "verify" and a.json


def test_inspect_of_a_small_folder_imports_nothing_heavy(tmp_path):
    syn = synthesize(tmp_path / "store.db", messages=60, weeks=2, seed=3)
    build_archives(syn.path, syn.community_id, [bytes.fromhex(t[2:]) for t in syn.topics], tmp_path / "d",
                   tmp_path / "t", end=syn.end + 1)
    r = _run("inspect", str(tmp_path / "d" / syn.community_id), "--json")
    assert r["code"] == 0
    assert len(json.loads(r["out"])["archives"]) >= 2
    assert _loaded(r["modules"], ("libtorrent", "pyspark", "py4j", "httpx", "coincurve", "trio", "libp2p",
                                  "PySide6", "numpy")) == []


@pytest.mark.parametrize("argv, code, text", [(["--version"], 0, "archivist "), (["no-such-command"], 2, "")])
def test_version_and_unknown_command(argv, code, text):
    r = _run(*argv)
    assert r["code"] == code and text in r["out"]
    assert _loaded(r["modules"], cli.COMMAND_MODULES) == []
