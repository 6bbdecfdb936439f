"""Fast tests without Spark: the history DB rules and the executor-side functions, fuzzed."""
from __future__ import annotations

import sqlite3

import pyarrow as pa
from hypothesis import given, settings, strategies as st

from core.archive import codec
from core.archive.codec import ArchiveMessage
from core.archive.partition import chunk_messages
from core.pipeline.encode import make_encoder
from core.pipeline.hydrate import decode_entries
from core.status.unwrap import default_unwrap, no_unwrap
from core.storage import history
from core.storage.archive_state import ArchiveInfo

C = "0x02" + "ab" * 32


def row(ts, tag, community=C):
    return (community, bytes([tag]) * 32, ts, b"abcd", None, None, None, None, None, None, b"p", None)


def test_import_window_is_one_transaction_and_never_deletes(tmp_path):
    con = history.connect(tmp_path / "h.sqlite")
    history.bulk_insert(con, [row(5, 1), row(15, 2), row(25, 3), row(15, 4, "0x03" + "00" * 32)])

    def failing():
        yield row(12, 9)
        raise RuntimeError("crash mid-transaction")
    try:
        history.import_window(con, C, 10, 20, failing(), ["0xaa"])
    except RuntimeError:
        pass
    assert [r[2] for r in history.messages(con, C)] == [5, 15, 25]
    assert history.imported_archive_ids(con, C) == set()
    assert history.import_window(con, C, 10, 20, [row(11, 7), row(19, 8)], ["0xaa"]) == 2
    # the local message at 15 is in no archive: kept (an import never removes what it does not bring back)
    assert [r[2] for r in history.messages(con, C)] == [5, 11, 15, 19, 25]
    assert history.imported_archive_ids(con, C) == {"0xaa"}
    assert history.archive_info(con, C).last_message_archive_end_date == 20
    # the archive's copy of a message replaces the local one with the same hash
    history.import_window(con, C, 10, 20, [row(16, 2)], ["0xab"])
    assert [r[2] for r in history.messages(con, C)] == [5, 11, 16, 19, 25]
    history.import_window(con, C, 0, 5, [], [])
    assert history.archive_info(con, C).last_message_archive_end_date == 20   # never goes back
    history.set_magnetlink(con, C, 7, "magnet:?xt=urn:btih:" + "0" * 40)
    assert history.archive_info(con, C) == ArchiveInfo(magnetlink_clock=7, last_message_archive_end_date=20,
                                                       last_magnetlink_uri="magnet:?xt=urn:btih:" + "0" * 40)
    history.add_archive_ids(con, C, ["0xaa", "0xcc"])
    assert history.imported_archive_ids(con, C) == {"0xaa", "0xab"}
    assert con.execute("SELECT COUNT(*) FROM community_message_archive_hashes").fetchone()[0] == 3
    con.close()


def test_status_go_table_columns(tmp_path):
    con = history.connect(tmp_path / "h.sqlite")
    cols = lambda t: [r[1] for r in con.execute(f"PRAGMA table_info({t})")]  # noqa: E731
    assert cols("community_message_archive_hashes") == ["community_id", "hash", "imported"]
    assert cols("communities_archive_info") == ["community_id", "magnetlink_clock", "last_message_archive_end_date",
                                                "last_magnetlink_uri"]
    con.close()


def messages(n, size=100):
    return [ArchiveMessage(b"\x04" * 65, 100 + i, b"abcd", bytes([i % 256]) * (size + i), b"", bytes([i]) * 32)
            for i in range(n)]


def to_batch(window, ms):
    return pa.RecordBatch.from_pydict({
        "window": pa.array([window] * len(ms), pa.int32()), "timestamp": [m.timestamp for m in ms],
        "hash": pa.array([m.hash for m in ms], pa.binary()), "sig": pa.array([m.sig for m in ms], pa.binary()),
        "topic": pa.array([m.topic for m in ms], pa.binary()),
        "payload": pa.array([m.payload for m in ms], pa.binary()),
        "padding": pa.array([m.padding for m in ms], pa.binary()), "third_party_id": [""] * len(ms)})


def test_encoder_matches_reference_chunks():
    windows = [(0, 50), (100, 200)]
    ms = messages(60)
    cap = 2000
    enc = make_encoder(windows, [b"abcd"], cap, None)
    out = [b.to_pylist()[0] for b in enc(iter([to_batch(1, ms[:25]), to_batch(1, ms[25:])]))]
    want = [codec.encode_archive(100, 200, [b"abcd"], c) for c in chunk_messages(ms, cap)]
    assert [o["raw"] for o in out] == want and [o["chunk"] for o in out] == list(range(len(want)))
    assert all(o["window"] == 1 and o["error"] is None for o in out)


def test_decode_entries_reads_archives(tmp_path):
    ms = messages(5)
    raw = codec.encode_archive(0, 1000, [b"abcd"], ms)
    size, padding = codec.padded_size(len(raw))
    (tmp_path / "data").write_bytes(raw + bytes(padding))
    [(aid, err, rows)] = decode_entries([("0x01", 0, size, padding, 0, 1000)], str(tmp_path / "data"), C, no_unwrap)
    assert err is None and [r[1] for r in rows] == [m.hash for m in ms] and rows[0][10] == ms[0].payload
    [(aid, err, rows)] = decode_entries([("0x01", 0, size, padding, 0, 999)], str(tmp_path / "data"), C, no_unwrap)
    assert rows is None and err.startswith("metadata-mismatch")
    assert default_unwrap(b"\xff\x00garbage") is None  # never raises on bad input


@settings(max_examples=200, deadline=None)
@given(blob=st.binary(max_size=3000), offset=st.integers(0, 4000), size=st.integers(0, 4000),
       padding=st.integers(0, 4000))
def test_decode_entries_survives_arbitrary_bytes(tmp_path_factory, blob, offset, size, padding):
    p = tmp_path_factory.mktemp("fuzz") / "data"
    p.write_bytes(blob)
    out = list(decode_entries([("0xfe", offset, size, min(padding, size), 0, 10)], str(p), C, default_unwrap))
    assert len(out) == 1 and out[0][0] == "0xfe"
    assert (out[0][1] is None) != (out[0][2] is None)


def test_session_settings_follow_dependencies_md(tmp_path):
    import sys
    from core.pipeline.session import SparkSettings
    conf = SparkSettings(master="spark://127.0.0.1:7077", log_dir=str(tmp_path)).conf()
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.ui.enabled"] == "false" and conf["spark.ui.showConsoleProgress"] == "false"
    assert conf["spark.sql.session.timeZone"] == "UTC" and conf["spark.pyspark.python"] == "python3"  # the worker's
    local = SparkSettings(master="local[*]", log_dir=str(tmp_path)).conf()
    assert local["spark.pyspark.python"] == sys.executable
    assert "-XX:MaxDirectMemorySize=" in conf["spark.driver.extraJavaOptions"]
    props = (tmp_path / "log4j2.properties").read_text()
    assert "rootLogger.level = error" in props and str(tmp_path / "spark.log") in props


def test_cli_registers_spark_commands():
    from core.cli import make_parser
    a = make_parser().parse_args(["spark-build", "--db", "x.sqlite", "--community-id", C, "--topic", "0x01020304",
                                  "--data-dir", "d", "--torrent-dir", "t", "--master", "spark://127.0.0.1:7077"])
    assert a.topic == [bytes.fromhex("01020304")] and a.master == "spark://127.0.0.1:7077"
    a = make_parser().parse_args(["spark-hydrate", "--folder", "d", "--community-id", C, "--db", "m.sqlite"])
    assert a.archive_id is None and a.master == "local[*]" and a.mode is None and a.key is None
    a = make_parser().parse_args(["spark-hydrate", "--folder", "d", "--community-id", C, "--db", "m.sqlite",
                                  "--latest", "--key", "aa" * 32])
    assert a.mode == "latest" and a.key == ["aa" * 32]
