"""One rule for a community ID typed by a person or read from a file (core.archive.constants.community_id): blanks
and the case of the hex do not matter, the 0x and the 66 digits do. Followed by every `--community-id`, the node's
config file, the first-run screen and the export's folder name. Before, five copies had five rules: `archivist
export HISTORY --community-id 0x02AB…` matched no row (the history stores lower case) and said 0 messages, and the
config file took any text as a community's ID."""
from __future__ import annotations

import argparse

import pytest

from core.archive.constants import community_id, community_id_arg
from core.node.config import ConfigError, first_run_settings, load
from core.pipeline.export import ExportError, folder_community_id
from tests.unit.node.support import config_error

def key_group_parser() -> argparse.ArgumentParser:
    """`archivist key group ... COMMUNITY` (a positional, not --community-id: before, it had its own rule)."""
    from core.node import key_cli
    p = argparse.ArgumentParser()
    key_cli.register(p.add_subparsers())
    return p


LOWER = "0x02" + "ab" * 32
IDS = {LOWER: LOWER, "0x02" + "AB" * 32: LOWER, f"  {LOWER}\n": LOWER, "0X02" + "ab" * 32: LOWER,
       LOWER[2:]: None, LOWER[:-2]: None, LOWER + "00": None, "0x02" + "ag" * 32: None, "": None}


@pytest.mark.parametrize("text,expected", IDS.items(), ids=range(len(IDS)))
def test_every_place_reads_a_community_id_the_same(text, expected, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path}"\n[[community]]\nid = {text!r}\nrole = "member"\n'.replace("'", '"'))
    folder = tmp_path / text.strip() if text.strip() and "/" not in text else tmp_path / "not-an-id"
    if expected is None:
        with pytest.raises(ValueError) as e:
            community_id(text)
        assert str(e.value) == f"{text!r} is not a community ID (0x + 66 hex digits)"
        with pytest.raises(argparse.ArgumentTypeError):
            community_id_arg(text)
        with pytest.raises(SystemExit):
            key_group_parser().parse_args(["key", "group", "list", text])
        with pytest.raises(ConfigError) as c:
            load(config)
        assert str(c.value) == f"[[community]] id: {e.value}"
        with pytest.raises(ConfigError):
            first_run_settings(role="member", community_id=text, data_dir=tmp_path)
        with pytest.raises(ExportError) as x:
            folder_community_id(tmp_path / "f", text or None)
        assert x.value.code == "no-community-id"
        return
    assert community_id(text) == community_id_arg(text) == expected
    assert key_group_parser().parse_args(["key", "group", "list", text]).community == expected
    assert [c.community_id for c in load(config).communities] == [expected]
    s = first_run_settings(role="member", community_id=text, data_dir=tmp_path)
    assert s.communities[0].community_id == expected
    assert folder_community_id(tmp_path / "f", text) == expected
    folder.mkdir()
    assert folder_community_id(folder, None) == expected       # a folder named with the ID, in any case


def test_a_community_without_an_id_is_a_config_error(tmp_path):
    assert config_error(tmp_path, '[[community]]\nrole = "member"\n') == (
        "[[community]] id: 'None' is not a community ID (0x + 66 hex digits)")
