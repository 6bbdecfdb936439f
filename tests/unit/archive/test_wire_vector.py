"""WIRE-FORMAT.md section 8, reproduced."""
from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry, keccak256

CHAT_ID = "0x02" + "00" * 31 + "aa" + "d1f7c3e2-0000-4000-8000-000000000000"


def test_keccak_is_not_sha3():
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"


def test_section_8_vector():
    topic = keccak256(CHAT_ID.encode())[:4]
    assert topic.hex() == "00eb85a7"
    msgs = [ArchiveMessage(b"\x01", 1577840400, topic, b"\x01", b"\x01", b"\x01"),
            ArchiveMessage(b"\x01", 1577844000, topic, b"\x01", b"\x01", b"\x02")]
    raw = codec.encode_archive(1577836800, 1578355200, [topic], msgs)
    assert len(raw) == 72
    size, padding = codec.padded_size(len(raw))
    assert (size, padding) == (102400, 102328)
    entry = IndexEntry(1577836800, 1578355200, (topic,), 0, size, padding)
    assert entry.archive_id == "0x1a02fd9e90e11bfe85a55d24be5219df6f2cb1158577601531815827d51f06a7"
    # first archive: offset 0 is absent from the encoding (proto3)
    assert b"\x18" not in entry.encode()[:2]
    back = codec.decode_archive(raw)
    assert back.messages == msgs and (back.start, back.end, back.topics) == (1577836800, 1578355200, (topic,))
