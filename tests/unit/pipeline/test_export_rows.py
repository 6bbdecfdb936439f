"""Export without a JVM: week partitions, history weeks, channel names only from the community's own signed
descriptions, the output folder's refusals, the source's kind; and [spark] executor_timeout reaching SparkSettings."""
from __future__ import annotations

import datetime as dt
import json
import sqlite3

import pytest
from coincurve import PrivateKey

from core.archive.codec import keccak256
from core.node.config import ConfigError, NodeSettings, dump, load
from core.node.runner import spark_settings
from core.pipeline import export_rows as X
from core.pipeline.export import ExportError, check_output, folder_community_id, source_kind
from core.status.application_metadata import CHAT_MESSAGE, wrap_application, wrap_public
from core.status.community_names import COMMUNITY_DESCRIPTION
from core.storage import history
from tests.unit.status.test_community_names import description_bytes

OWNER = PrivateKey(keccak256(b"export-owner"))
CID = "0x" + OWNER.public_key.format(compressed=True).hex()
UUID = "3a8e5f0c-1111-4222-8333-444455556666"


def _monday(ts: int) -> str:
    d = dt.datetime.fromtimestamp(ts, dt.timezone.utc).date()
    return (d - dt.timedelta(days=d.weekday())).isoformat()


@pytest.mark.parametrize("ts", [0, 4 * 86400 - 1, 4 * 86400, 1_700_000_000, 1_700_006_399, 1_700_438_400 - 1,
                                1_700_438_400, 1_704_067_199, 2_000_000_000])
def test_week_is_the_utc_monday_of_the_calendar_week(ts):
    assert X.week_of(ts) == _monday(ts)


def test_week_boundaries_are_monday_midnight_utc():
    monday = int(dt.datetime(2023, 11, 20, tzinfo=dt.timezone.utc).timestamp())
    assert (X.week_of(monday - 1), X.week_of(monday), X.week_of(monday + 7 * 86400 - 1)) == (
        "2023-11-13", "2023-11-20", "2023-11-20")


def _desc(signer: PrivateKey, names: dict[str, str], clock: int) -> bytes:
    return wrap_public(wrap_application(description_bytes(names, clock), COMMUNITY_DESCRIPTION, signer), "d")


def test_channel_names_come_only_from_the_communitys_own_signed_descriptions():
    assert X.description_names(CID, COMMUNITY_DESCRIPTION, _desc(OWNER, {UUID: "general"}, 4)) == (
        4, json.dumps({CID + UUID: "general"}))
    forged = _desc(PrivateKey(keccak256(b"mallory")), {UUID: "evil"}, 99)
    assert X.description_names(CID, COMMUNITY_DESCRIPTION, forged) is None
    assert X.description_names(CID, COMMUNITY_DESCRIPTION, b"\x01garbage") is None
    chat = wrap_public(wrap_application(b"", CHAT_MESSAGE, OWNER), "d")
    assert X.description_names(CID, CHAT_MESSAGE, chat) is None
    assert X.channel_map([(9, json.dumps({"a": "new"})), (4, json.dumps({"a": "old", "b": "dev"}))]) == {
        "a": "new", "b": "dev"}


def test_export_row_columns():
    author = PrivateKey(keccak256(b"author")).public_key.format(compressed=False)
    r = X.export_row((CID, b"\xaa" * 32, 1_700_000_000, b"\x01\x02\x03\x04", author, CID + UUID, 7, None,
                      CHAT_MESSAGE, "hello", b"raw", "0xarch"))
    from core.status.alias import three_word_name
    assert r == (1_700_000_000, "2023-11-13", CID, CID + UUID, "0x" + author.hex(), three_word_name(author),
                 CHAT_MESSAGE, "hello", "0x" + "aa" * 32, "0xarch", None, None, None, None)
    assert len(r) == X.ROW_WIDTH
    # a WakuMessage sig that is no public key: hex author, no name
    assert X.export_row((CID, b"\x01" * 32, 5, b"t", b"\x04" + b"\x11" * 64, None, None, None, None, None, b"p",
                         None))[4:6] == ("0x04" + "11" * 64, None)


def test_history_weeks_and_rows(tmp_path):
    db = tmp_path / "h.sqlite"
    con = history.connect(db)
    other = "0x03" + "cd" * 32
    t = 1_700_000_000     # a Tuesday
    rows = [(c, bytes([i]) * 32, ts, b"tttt", None, None, None, None, None, f"m{i}", b"p", None)
            for i, (c, ts) in enumerate([(CID, t), (CID, t + 86400), (CID, t + 14 * 86400), (other, t)])]
    history.bulk_insert(con, rows)
    lo = int(dt.datetime(2023, 11, 13, tzinfo=dt.timezone.utc).timestamp())
    assert X.history_weeks(con) == [(CID, lo, lo + X.WEEK), (CID, lo + 2 * X.WEEK, lo + 3 * X.WEEK),
                                    (other, lo, lo + X.WEEK)]
    assert X.history_weeks(con, other) == [(other, lo, lo + X.WEEK)]
    con.close()
    got = list(X.history_rows(X.history_weeks(sqlite3.connect(db), CID), str(db)))
    assert sorted(r[7] for r in got) == ["m0", "m1", "m2"]


def test_output_refusals(tmp_path):
    out = tmp_path / "out"
    assert check_output(out) == out                      # absent: fine
    out.mkdir()
    assert check_output(out) == out                      # empty: fine
    (out / "f").write_text("x")
    with pytest.raises(ExportError, match=r"out is not empty: choose another --out or add --overwrite$"):
        check_output(out)
    assert check_output(out, overwrite=True) == out
    (tmp_path / "file").write_text("x")
    with pytest.raises(ExportError, match=r"file exists and is not a folder$"):
        check_output(tmp_path / "file")
    (tmp_path / "o.tmp").mkdir()
    (tmp_path / "o.tmp" / "thesis.tex").write_text("mine")
    with pytest.raises(ExportError, match=r"o\.tmp is in the way and is not a previous export's leftover"):
        check_output(tmp_path / "o")
    (tmp_path / "o.tmp" / "thesis.tex").unlink()
    (tmp_path / "o.tmp" / "week=2023-11-13").mkdir()
    (tmp_path / "o.tmp" / "_SUCCESS").write_text("")
    assert check_output(tmp_path / "o") == tmp_path / "o"


def test_source_kind_and_community(tmp_path):
    with pytest.raises(ExportError, match=r"nope does not exist$"):
        source_kind(tmp_path / "nope")
    (tmp_path / "f").mkdir()
    with pytest.raises(ExportError, match=r"f is not a community archive folder \(it needs `index` and `data`\)$"):
        source_kind(tmp_path / "f")
    (tmp_path / "f" / "index").write_bytes(b"")
    (tmp_path / "f" / "data").write_bytes(b"")
    assert source_kind(tmp_path / "f") == "folder"
    history.connect(tmp_path / "h.sqlite").close()
    assert source_kind(tmp_path / "h.sqlite") == "history"
    (tmp_path / "junk").write_bytes(b"not sqlite at all, just bytes" * 10)
    with pytest.raises(ExportError, match=r"junk is neither a community archive folder nor a member history"):
        source_kind(tmp_path / "junk")
    with pytest.raises(ExportError, match=r"its name is not a community ID; give --community-id$"):
        folder_community_id(tmp_path / "f", None)
    (tmp_path / CID).mkdir()
    assert folder_community_id(tmp_path / CID, None) == CID
    assert folder_community_id(tmp_path / "f", CID) == CID


def test_spark_executor_timeout_in_the_node_config(tmp_path):
    p = tmp_path / "node.toml"
    p.write_text('data_dir = "d"\n')
    s = load(p)
    assert s.spark_executor_timeout == 120.0 and spark_settings(s).executor_timeout == 120.0
    assert "executor_timeout" not in dump(s, tmp_path)
    p.write_text('data_dir = "d"\n[spark]\nmaster = "spark://10.0.0.5:7077"\nexecutor_timeout = 15\n')
    s = load(p)
    assert s.spark_executor_timeout == 15.0 and spark_settings(s).executor_timeout == 15.0
    assert "executor_timeout = 15.0" in dump(s, tmp_path).splitlines()
    p.write_text(dump(s, tmp_path))
    assert load(p).spark_executor_timeout == 15.0
    for bad in ("0", "-3", '"soon"', "true"):
        p.write_text(f'data_dir = "d"\n[spark]\nexecutor_timeout = {bad}\n')
        with pytest.raises(ConfigError, match=r"spark.executor_timeout must be a number of seconds above 0"):
            load(p)
    assert NodeSettings(data_dir=tmp_path).spark_executor_timeout == 120.0
