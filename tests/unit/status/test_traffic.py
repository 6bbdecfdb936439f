import hashlib

from core.archive import codec
from core.archive.build import build_archives
from core.archive.folder import ArchiveFolder
from core.status import archive_encryption as ae
from core.status import topics, traffic
from core.status.chat_message import open_archived_chat
from core.storage import waku_messages


def test_waku_message_hash_rfc14_vectors():
    pubsub, ct, ts = "/waku/2/default-waku/proto", "/waku/2/default-content/proto", 0x175789bfa23f8400
    payload = bytes.fromhex("010203045445535405060708")
    assert traffic.waku_message_hash(pubsub, payload, ct, bytes.fromhex("73757065722d736563726574"), ts).hex() == \
        "64cce733fed134e83da02b02c6f689814872b1a0ac97ea56b76095c3c72bfe05"
    assert traffic.waku_message_hash(pubsub, payload, ct, b"", ts).hex() == \
        "a2554498b31f5bcdfcbf7fa58ad1c2d45f0254f3f8110a85588ec3cf10720fd8"
    assert traffic.waku_message_hash(pubsub, b"", ct, bytes.fromhex("73757065722d736563726574"), ts).hex() == \
        "483ea950cb63f9b9d6926b262bb36194d3f40a0463ce8446228350bd44e96de4"


def test_generator_is_deterministic():
    a = list(traffic.TrafficGenerator(7).messages(30))
    b = list(traffic.TrafficGenerator(7).messages(30))
    c = list(traffic.TrafficGenerator(8).messages(30))
    assert [m.envelope for m in a] == [m.envelope for m in b]
    assert [m.envelope for m in a] != [m.envelope for m in c]
    assert [m.timestamp_ns for m in a] == sorted(m.timestamp_ns for m in a)


def test_archive_rows_are_what_status_go_stores():
    gen = traffic.TrafficGenerator(3, channels=4, authors=5)
    msgs = list(gen.messages(40))
    authors = {a.public_key.format(compressed=False) for a in gen.authors}
    chats = {c.chat_id: c for c in gen.channels}
    for m in msgs:
        row = traffic.to_archive_message(m)
        assert row.sig == m.author and row.sig in authors and len(row.sig) == 65
        assert row.timestamp == m.timestamp_ns // 10 ** 9
        assert row.topic == topics.status_topic(m.chat_id) and row.topic in gen.topics
        assert m.content_topic == f"/waku/1/0x{row.topic.hex()}/rfc26"
        assert row.hash == hashlib.sha256(m.pubsub_topic.encode() + m.envelope + m.content_topic.encode()
                                          + m.timestamp_ns.to_bytes(8, "big")).digest()
        size_field = 1 if len(row.payload) < 256 else 2
        assert len(row.padding) > 0 and (1 + size_field + len(row.payload) + len(row.padding) + 65) % 256 == 0
        chat = open_archived_chat(row)
        assert chat.author == m.author and chat.message.text == m.text and chat.message.chat_id in chats
        assert chat.message.clock == m.clock and chat.message.content_type_name == "TEXT_PLAIN"


def test_store_then_build_then_read_back(tmp_path, community):
    db = tmp_path / "store.sqlite"
    res = traffic.write_store(db, 120, seed=5, span=21 * 24 * 3600)
    tps = [bytes.fromhex(t[2:]) for t in res.topics]
    con = waku_messages.connect(db, create=False)
    rows = list(waku_messages.query_messages(con, tps, 0, 2 ** 40))
    con.close()
    assert len(rows) == 120
    key = ae.GroupKey(bytes.fromhex(res.community_id[2:]), b"\x11" * 32, 1)
    build = build_archives(db, res.community_id, tps, tmp_path / "data", tmp_path / "torrents",
                           end=traffic.DEFAULT_START + 22 * 24 * 3600,
                           transform=ae.transform_from_cli("11" * 32, res.community_id))
    assert build.messages == 120 and len(build.new_archive_ids) >= 3
    store = ae.GroupKeyStore()
    store.add(key)
    folder = ArchiveFolder(tmp_path / "data" / res.community_id)
    data = folder.data_path.read_bytes()
    index = codec.decode_index(ae.open_index_bytes(folder.index_path.read_bytes(), store))
    texts = []
    for aid, e in codec.sorted_entries(index):
        blob = data[e.offset:e.offset + e.raw_size]
        assert ae.is_encrypted(blob)
        arch = codec.decode_archive(ae.open_archive_bytes(blob, store, archive_id=aid))
        texts += [open_archived_chat(m).message.text for m in arch.messages]
    assert sorted(texts) == sorted(open_archived_chat(r).message.text for r in rows)
