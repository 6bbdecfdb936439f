"""`archivist export` on a real SparkSession: a community folder and the member history imported from it give
exactly the source messages (count, hashes, text, authors, channel names), one file per calendar week."""
from __future__ import annotations

import datetime as dt
import json
import os

import pyarrow.dataset as ds
import pytest

from core.archive.build import build_archives
from core.archive.codec import ArchiveMessage, keccak256
from core.archive.folder import ArchiveFolder
from core.history_import import plan_import, read_window_rows
from core.pipeline.export import ExportError, submit_export
from core.status.alias import three_word_name
from core.status.application_metadata import wrap_application, wrap_public
from core.status.archive_encryption import key_store, transform_from_cli
from core.status.community_names import COMMUNITY_DESCRIPTION
from core.status.traffic import TrafficGenerator, to_archive_message
from core.storage import history, waku_messages
from coincurve import PrivateKey
from tests.unit.status.test_community_names import description_bytes

pytestmark = pytest.mark.spark
DAY = 24 * 3600
START = 1_700_000_000            # Tuesday 2023-11-14 22:13:20 UTC
GROUP_KEY = "5a" * 32


def _monday(ts: int) -> str:
    d = dt.datetime.fromtimestamp(ts, dt.timezone.utc).date()
    return (d - dt.timedelta(days=d.weekday())).isoformat()


def _description(gen, signer: PrivateKey, names: dict[int, str], clock: int, ts: int) -> ArchiveMessage:
    cid = gen.community_id
    desc = description_bytes({gen.channels[i].chat_id[len(cid):]: n for i, n in names.items()}, clock)
    payload = wrap_public(wrap_application(desc, COMMUNITY_DESCRIPTION, signer), "device-1")
    return ArchiveMessage(b"", ts, gen.channels[0].topic, payload, b"", keccak256(payload + ts.to_bytes(8, "big")))


@pytest.fixture(scope="module")
def community(tmp_path_factory):
    """300 signed chat messages over 3 weeks on 3 channels, two signed community descriptions (the later one
    renames channel 0) and a forged one; built into a plain and an encrypted folder."""
    root = tmp_path_factory.mktemp("export")
    gen = TrafficGenerator(11, channels=3, authors=6)
    traffic = list(gen.messages(300, start=START, span=20 * DAY))
    owner_key = gen.community.private_key
    extra = [_description(gen, owner_key, {0: "general", 1: "dev"}, 5, START + 100),
             _description(gen, owner_key, {0: "lobby"}, 9, START + 8 * DAY),
             _description(gen, PrivateKey(keccak256(b"mallory")), {2: "evil"}, 99, START + 9 * DAY)]
    msgs = [to_archive_message(m) for m in traffic] + extra
    db = root / "store.sqlite"
    con = waku_messages.connect(db)
    waku_messages.insert_messages(con, msgs)
    con.commit()
    con.close()
    end = START + 21 * DAY
    build_archives(db, gen.community_id, gen.topics, root / "d", root / "t", end=end)
    build_archives(db, gen.community_id, gen.topics, root / "enc", root / "enc-t", end=end,
                   transform=transform_from_cli(GROUP_KEY, gen.community_id))
    return root, gen, traffic, msgs


def _parquet_rows(out) -> list[dict]:
    return ds.dataset(str(out), format="parquet", partitioning="hive").to_table().to_pylist()


def _expected(gen, traffic, msgs):
    text = {"0x" + m.hash.hex(): m.text for m in traffic}
    author = {"0x" + m.hash.hex(): m.author for m in traffic}
    chat = {"0x" + m.hash.hex(): m.chat_id for m in traffic}
    return {"0x" + m.hash.hex(): m for m in msgs}, text, author, chat


def _check(rows, gen, traffic, msgs):
    by_hash, text, author, chat = _expected(gen, traffic, msgs)
    assert len(rows) == len(msgs) and {r["hash"] for r in rows} == set(by_hash)
    names = {gen.channels[0].chat_id: "lobby", gen.channels[1].chat_id: "dev"}   # newest signed clock wins
    for r in rows:
        m = by_hash[r["hash"]]
        t = r["time"]
        assert (t if isinstance(t, dt.datetime) else dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
                ).timestamp() == m.timestamp
        assert str(r["week"]) == _monday(m.timestamp)
        assert r["community_id"] == gen.community_id and r["archive_id"]
        if r["hash"] in text:                                   # a chat message
            assert r["text"] == text[r["hash"]] and r["type"] == 1
            assert r["chat_id"] == chat[r["hash"]]
            assert r["channel"] == names.get(chat[r["hash"]], chat[r["hash"]])
            assert r["author"] == "0x" + author[r["hash"]].hex()
            assert r["author_name"] == three_word_name(author[r["hash"]])
        else:                                                   # a description: no text
            assert r["type"] == COMMUNITY_DESCRIPTION and r["text"] is None
    assert "evil" not in {r["channel"] for r in rows}           # the forged description names nothing


def _weeks_on_disk(out) -> dict[str, list[str]]:
    return {p.name: sorted(f.name for f in p.iterdir()) for p in out.iterdir() if p.is_dir()}


def test_export_folder_parquet_gives_the_source_messages_by_week(spark_owner, community, tmp_path):
    root, gen, traffic, msgs = community
    out = tmp_path / "out"
    res = submit_export(spark_owner, root / "d" / gen.community_id, out).result(300)
    rows = _parquet_rows(out)
    _check(rows, gen, traffic, msgs)
    weeks = {_monday(m.timestamp) for m in msgs}
    layout = _weeks_on_disk(out)
    assert set(layout) == {f"week={w}" for w in weeks} and len(weeks) == 4   # 20 days from a Tuesday: 4 weeks
    assert all(len(files) == 1 and files[0].endswith(".parquet") for files in layout.values())  # no .crc files
    assert res.messages == len(msgs) and res.source == "folder" and res.channels_named == 2
    assert res.weeks == {w: sum(1 for m in msgs if _monday(m.timestamp) == w) for w in sorted(weeks)}
    assert not (tmp_path / "out.tmp").exists()
    one = ds.dataset(str(out / f"week={min(weeks)}"), format="parquet").to_table().to_pylist()
    assert [r["time"] for r in one] == sorted(r["time"] for r in one)       # time order inside a week


def test_export_history_jsonl_equals_the_folder_export(spark_owner, community, tmp_path):
    root, gen, traffic, msgs = community
    folder = ArchiveFolder(root / "d" / gen.community_id)
    db = tmp_path / "member.sqlite"
    con = history.connect(db)
    for w in plan_import(folder.entries, list(folder.entries)):     # the single-process importer
        history.import_window(con, gen.community_id, w.start, w.end,
                              read_window_rows(folder.path / "data", gen.community_id, folder.entries, w),
                              w.archive_ids)
    con.close()
    out = tmp_path / "jsonl"
    res = submit_export(spark_owner, db, out, fmt="jsonl").result(300)
    rows = []
    for week_dir in sorted(p for p in out.iterdir() if p.is_dir()):
        files = list(week_dir.glob("part-*.jsonl"))
        assert len(files) == 1, files
        for line in files[0].read_text().splitlines():
            r = json.loads(line)
            assert set(r) == {"time", "channel", "chat_id", "author", "author_name", "type", "text", "hash",
                              "archive_id", "community_id"}                  # nulls kept, week is the folder
            rows.append({**r, "week": week_dir.name.removeprefix("week=")})
    _check(rows, gen, traffic, msgs)
    assert res.source == "history" and res.messages == len(msgs)


def test_encrypted_folder_needs_the_key_and_a_failure_writes_nothing(spark_owner, community, tmp_path):
    root, gen, traffic, msgs = community
    folder = root / "enc" / gen.community_id
    out = tmp_path / "enc-out"
    with pytest.raises(ExportError, match=r"^archive 0x[0-9a-f]{64} cannot be read: .*key.*\(and \d+ more\)$") as e:
        submit_export(spark_owner, folder, out).result(300)
    assert e.value.archive_id in ArchiveFolder(folder).entries
    assert not out.exists() and not (tmp_path / "enc-out.tmp").exists()
    store = key_store([GROUP_KEY], gen.community_id)
    submit_export(spark_owner, folder, out, store=store).result(300)
    _check(_parquet_rows(out), gen, traffic, msgs)


def test_output_is_refused_when_not_empty_and_replaced_whole_with_overwrite(spark_owner, community, tmp_path):
    root, gen, traffic, msgs = community
    src = root / "d" / gen.community_id
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match=r"o is not empty: choose another --out or add --overwrite$"):
        submit_export(spark_owner, src, out).result(300)
    assert os.listdir(out) == ["notes.txt"]
    (tmp_path / "o.tmp" / "week=2020-01-06").mkdir(parents=True)        # a crashed export's leftover: removed
    submit_export(spark_owner, src, out, fmt="jsonl", overwrite=True).result(300)
    assert not (out / "notes.txt").exists() and not (tmp_path / "o.tmp").exists()
    assert "week=2020-01-06" not in os.listdir(out) and len(_weeks_on_disk(out)) == 4


def test_cli_refuses_before_any_jvm_starts(community, tmp_path, capsys):
    from core.cli import main
    root, gen, traffic, msgs = community
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    assert main(["export", str(root / "d" / gen.community_id), "--out", str(tmp_path / "full")]) == 2
    assert capsys.readouterr().err.strip() == (f"archivist export: {tmp_path / 'full'} is not empty: choose another "
                                               "--out or add --overwrite")
    assert main(["export", str(root / "store.sqlite"), "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip() == (f"archivist export: {root / 'store.sqlite'} is neither a community "
                                               "archive folder nor a member history database")
