import json

from core.cli import main


def test_synth_build_inspect_verify_via_cli(tmp_path, capsys):
    assert main(["synth", "--out", str(tmp_path / "m.sqlite"), "--messages", "800", "--weeks", "3", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    args = ["build", "--db", s["path"], "--community-id", s["community_id"], "--data-dir", str(tmp_path / "d"),
            "--torrent-dir", str(tmp_path / "t"), "--end", str(s["end"]), "--json"]
    for t in s["topics"]:
        args += ["--topic", t]
    assert main(args) == 0
    b = json.loads(capsys.readouterr().out)
    assert len(b["new_archive_ids"]) == 3 and b["messages"] == 800
    assert b["magnet"].startswith("magnet:?xt=urn:btih:" + b["infohash"])
    assert main(["verify", str(tmp_path / "d" / s["community_id"])]) == 0
    capsys.readouterr()
    # building again adds nothing
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["new_archive_ids"] == []


def test_build_rejects_bad_arguments(tmp_path, capsys):
    import pytest
    with pytest.raises(SystemExit) as e:
        main(["build", "--db", "x", "--community-id", "0x12", "--topic", "0x00", "--data-dir", "d",
              "--torrent-dir", "t"])
    assert e.value.code == 2
    assert "argument --community-id: '0x12' is not a community ID (0x + 66 hex digits)" in capsys.readouterr().err
    assert main(["build", "--db", str(tmp_path / "missing.sqlite"), "--community-id", "0x" + "02" * 33,
                 "--topic", "0x00eb85a7", "--data-dir", str(tmp_path), "--torrent-dir", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_help_lists_commands(capsys):
    import pytest
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for c in ("build", "inspect", "verify", "synth", "demo", "gui"):
        assert c in out
