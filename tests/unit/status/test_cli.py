import json
import os
import stat

import pytest

from core.cli import main
from core.status import topics
from core.storage import waku_messages


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_key_new_show_export_import(tmp_path, capsys, monkeypatch):
    path = tmp_path / "c.json"
    code, out, _ = run(capsys, "key", "new", str(path), "--json")
    assert code == 0 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    cid = json.loads(out)["community_id"]
    chats = json.loads(out)["archive_link_chats"]
    assert chats[0]["chat_id"] == cid + "-magnetlinks" and chats[1]["content_topic"] == topics.content_topic(cid + "-memberUpdate")
    code, out, err = run(capsys, "key", "export", str(path))
    assert code == 0 and "private key" in err
    secret = out.strip()
    monkeypatch.setenv("PP", "pass phrase")
    code, out, _ = run(capsys, "key", "import", str(tmp_path / "d.json"), secret, "--passphrase-env", "PP", "--json")
    assert code == 0 and json.loads(out)["community_id"] == cid
    assert secret[2:] not in (tmp_path / "d.json").read_text()
    code, _, err = run(capsys, "key", "show", str(tmp_path / "d.json"))
    assert code == 2 and "passphrase" in err
    monkeypatch.setenv("PP", "wrong")
    code, _, err = run(capsys, "key", "show", str(tmp_path / "d.json"), "--passphrase-env", "PP")
    assert code == 2 and "wrong passphrase" in err
    code, _, err = run(capsys, "key", "new", str(path))
    assert code == 2 and "exists" in err


def test_topic_command(capsys):
    chat = "0x02" + "00" * 31 + "aa" + "d1f7c3e2-0000-4000-8000-000000000000"
    code, out, _ = run(capsys, "topic", chat, "--json")
    assert code == 0 and json.loads(out)["topic"] == "0x00eb85a7"


def test_traffic_command(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    code, out, _ = run(capsys, "traffic", str(db), "--messages", "25", "--weeks", "1", "--json")
    res = json.loads(out)
    assert code == 0 and res["messages"] == 25
    con = waku_messages.connect(db, create=False)
    rows = list(waku_messages.query_messages(con, [bytes.fromhex(t[2:]) for t in res["topics"]], 0, 2 ** 40))
    con.close()
    assert len(rows) == 25 and all(len(r.sig) == 65 for r in rows)
