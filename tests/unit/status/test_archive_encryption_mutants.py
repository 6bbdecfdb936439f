"""Hash-ratchet archive encryption (core/status/archive_encryption.py): each reason, code, boundary and field,
pinned against the survivors of `make mutation` (docs/QUALITY.md). Expected values come from the rules written in
the module doc and WIRE-FORMAT.md section 6 (Keccak chains, HMAC-SHA256 nonce, AES-GCM by pycryptodome)."""
from __future__ import annotations

import hashlib
import hmac
import json
import threading

import pytest
from Crypto.Cipher import AES

from core.archive import codec
from core.archive.codec import IndexEntry, keccak256
from core.pb import status_protocol_message_pb2 as proto_pb
from core.status import archive_encryption as ae
from core.status.errors import EncryptionError, KeyMissing, TamperedContent
from core.status.identity import community_id_bytes

GID = bytes.fromhex("02" + "11" * 32)
CID = "0x" + GID.hex()
KEY = keccak256(b"group key")


def gk(ts=1_700_000_000_000, key=KEY, gid=GID):
    return ae.GroupKey(gid, key, ts)


def store_of(*keys):
    s = ae.GroupKeyStore()
    for k in keys:
        s.add(k)
    return s


def hr_message(header: proto_pb.HRHeader, payload: bytes = b"", map_key: str = "none") -> bytes:
    pm = proto_pb.ProtocolMessage(installation_id="i")
    pm.encrypted_message[map_key].HR_header.CopyFrom(header)
    pm.encrypted_message[map_key].payload = payload
    return pm.SerializeToString()


def test_constants():
    assert (ae.NO_INSTALLATION_ID, ae.MAX_SEQ_NO, ae.NONCE_LENGTH, ae.TAG_LENGTH) == ("none", 100_000, 12, 16)
    assert ae.ARCHIVE_INSTALLATION_ID == "f0a7c41e-4e2a-4b4d-9c1d-a7c41e000000"
    assert ae.DEFAULT_CLI_KEY_TIMESTAMP == 1 and ae.GroupKeyStore.FILE_NAME == "group-keys.json"


@pytest.mark.parametrize("kw,msg", [
    (dict(key=b"k" * 31), "group key must be 32 bytes, got 31"),
    (dict(key=b"k" * 33), "group key must be 32 bytes, got 33"),
    (dict(ts=0), "group key timestamp must be a positive uint64"),
    (dict(ts=-1), "group key timestamp must be a positive uint64"),
    (dict(ts=1 << 64), "group key timestamp must be a positive uint64"),
    (dict(gid=b""), "group key needs a group ID"),
])
def test_bad_group_keys(kw, msg):
    with pytest.raises(EncryptionError) as e:
        gk(**kw)
    assert str(e.value) == msg and e.value.code == "bad-key"


def test_timestamp_edges_accepted_and_ids():
    lo, hi = gk(ts=1), gk(ts=(1 << 64) - 1)
    assert lo.key_id == keccak256(GID + (1).to_bytes(8, "little") + KEY)
    assert hi.key_id == keccak256(GID + b"\xff" * 8 + KEY)
    assert lo.deprecated_key_id == 1 and hi.deprecated_key_id == 0xFFFFFFFF
    assert gk(ts=(5 << 32) + 7).deprecated_key_id == 7


def test_json_round_trip():
    k = gk()
    assert k.to_json() == {"group_id": GID.hex(), "key": KEY.hex(), "timestamp": 1_700_000_000_000}
    assert ae.GroupKey.from_json({"group_id": GID.hex(), "key": KEY.hex(), "timestamp": "1700000000000"}) == k


def test_ratchet_key_is_keccak_applied_n_times():
    assert ae.ratchet_key(KEY, 0) == KEY
    assert ae.ratchet_key(KEY, 1) == keccak256(KEY)
    assert ae.ratchet_key(KEY, 3) == keccak256(keccak256(keccak256(KEY)))


def test_store_without_path_changes_memory_only():
    s = ae.GroupKeyStore()
    assert s.path is None and s.refresh() is False and len(s) == 0
    k = gk()
    s.add(k)
    assert len(s) == 1 and s.next_seq(k) == 1 and s.next_seq(k) == 2


def test_store_file_holds_keys_and_counters(tmp_path):
    p = tmp_path / "d" / "group-keys.json"
    s = ae.GroupKeyStore(p)
    a, b = gk(ts=5), gk(ts=9, key=keccak256(b"b"))
    s.add(a)
    s.add(b)
    assert s.next_seq(a) == 1 and s.next_seq(a) == 2
    doc = json.loads(p.read_text())
    assert doc["version"] == 1 and doc["keys"] == [a.to_json(), b.to_json()]
    assert doc["seq"] == {a.key_id.hex(): 2}
    assert p.read_text().endswith("}\n") and '\n  "keys"' in p.read_text()
    again = ae.GroupKeyStore(p)
    assert again.keys_of(GID) == [a, b] and again.next_seq(a) == 3
    assert (tmp_path / "d" / "group-keys.json.lock").exists()


def test_refresh_reports_only_added_keys(tmp_path):
    p = tmp_path / "group-keys.json"
    mine, other = ae.GroupKeyStore(p), ae.GroupKeyStore(p)
    assert mine.refresh() is False                      # no file yet
    other.add(gk(ts=5))
    assert mine.refresh() is True and len(mine) == 1
    assert mine.refresh() is False                      # unchanged file
    other.remove(gk(ts=5).key_id)
    assert mine.refresh() is False and len(mine) == 0   # a removal is taken, but is no addition


def test_refresh_keeps_the_higher_counter(tmp_path):
    p = tmp_path / "group-keys.json"
    k = gk()
    a = ae.GroupKeyStore(p)
    a.add(k)
    b = ae.GroupKeyStore(p)
    for _ in range(3):
        a.next_seq(k)
    assert b.next_seq(k) == 4                           # re-read under the lock before counting


@pytest.mark.parametrize("text,why", [
    (b"[1, 2]", "not a JSON object"),
    (b"{not json", "Expecting property name"),
    (b'{"keys": [{"group_id": "zz"}]}', "non-hexadecimal"),
    (b'{"keys": [{"group_id": "02", "key": "00", "timestamp": 1}]}', "group key must be 32 bytes, got 1"),
    (b'{"keys": [], "seq": {"00": "x"}}', "invalid literal"),
])
def test_malformed_store_file(tmp_path, text, why):
    p = tmp_path / "group-keys.json"
    p.write_bytes(text)
    with pytest.raises(EncryptionError) as e:
        ae.GroupKeyStore(p)
    assert str(e.value).startswith(f"group key store {p} is malformed: ") and why in str(e.value)
    assert e.value.code == "bad-key-store" and e.value.__suppress_context__


def test_pickled_store_keeps_keys_only(tmp_path):
    import pickle
    s = ae.GroupKeyStore(tmp_path / "k.json")
    k = gk()
    s.add(k)
    s.next_seq(k)
    c = pickle.loads(pickle.dumps(s))
    assert c.path is None and c.find(k.key_id) == k and c.next_seq(k) == 1
    assert isinstance(c._lock, type(threading.Lock())) and c._stamp is None and c._chain == {}


def test_keys_of_current_find_and_remove():
    old, new = gk(ts=10), gk(ts=20, key=keccak256(b"n"))
    elsewhere = gk(ts=30, gid=bytes.fromhex("03" + "22" * 32))
    s = store_of(new, elsewhere, old)
    assert s.keys_of(GID) == [old, new] and s.current(GID) == new and s.current(b"\x02") is None
    assert s.find(new.key_id) == new and s.find(bytearray(new.key_id)) == new
    assert s.find(b"", GID, 20) == new and s.find(b"", GID, 99) is None and s.find(b"", b"", 20) is None
    assert s.find(b"\x01" * 32, GID, 20) is None          # a key ID that is not held: no fallback
    s.next_seq(new)
    s.message_key(new, 2)
    assert s.remove(bytearray(new.key_id)) == new and s.remove(new.key_id) is None
    assert s.keys_of(GID) == [old] and s._seq == {} and all(c[0] != new.key_id for c in s._chain)
    assert s.next_seq(new) == 1                           # its counter went with it


def test_message_key_limit_and_cache():
    k = gk()
    s = store_of(k)
    with pytest.raises(EncryptionError) as e:
        s.message_key(k, ae.MAX_SEQ_NO + 1)
    assert str(e.value) == "hash-ratchet seq_no 100001 is above 100000" and e.value.code == "seq-too-high"
    assert s.message_key(k, 3) == ae.ratchet_key(KEY, 3)
    assert s.message_key(k, 5) == ae.ratchet_key(KEY, 5)   # continues from step 3
    assert s.message_key(k, 4) == ae.ratchet_key(KEY, 4)   # lower than a cached step: from a lower one
    other = gk(ts=2)
    s.add(other)
    assert s.message_key(other, 5) == ae.ratchet_key(KEY, 5)   # same key bytes, own chain entry
    assert (k.key_id, 5) in s._chain and (other.key_id, 5) in s._chain


def test_message_key_cache_is_bounded():
    k = gk()
    s = store_of(k)
    s._chain = {(b"x", i): b"" for i in range(10_001)}
    s.message_key(k, 1)
    assert s._chain == {(k.key_id, 1): keccak256(KEY)}
    s._chain = {(b"x", i): b"" for i in range(10_000)}
    s.message_key(k, 1)
    assert len(s._chain) == 10_001


def test_synthetic_nonce_is_hmac_sha256_prefix():
    mk = ae.ratchet_key(KEY, 1)
    assert ae._synthetic_nonce(mk, b"abc") == hmac.new(mk, b"abc", hashlib.sha256).digest()[:12]


def test_wrap_fields_nonce_and_seq_bounds():
    k = gk()
    pm = proto_pb.ProtocolMessage.FromString(ae.wrap(b"plain", k, 1))
    assert pm.installation_id == ae.ARCHIVE_INSTALLATION_ID
    m = pm.encrypted_message["none"]
    mk = keccak256(KEY)
    nonce = hmac.new(mk, b"plain", hashlib.sha256).digest()[:12]
    assert m.payload[-12:] == nonce
    assert AES.new(mk, AES.MODE_GCM, nonce=nonce).decrypt_and_verify(m.payload[:-28], m.payload[-28:-12]) == b"plain"
    h = m.HR_header
    assert (h.seq_no, h.group_id, h.key_id, h.deprecated_key_id) == (1, GID, k.key_id, k.deprecated_key_id)
    pm = proto_pb.ProtocolMessage.FromString(ae.wrap(b"p", k, ae.MAX_SEQ_NO, installation_id="dev",
                                                      nonce=b"N" * 12))
    assert pm.installation_id == "dev" and pm.encrypted_message["none"].payload[-12:] == b"N" * 12
    for bad in (0, ae.MAX_SEQ_NO + 1):
        with pytest.raises(EncryptionError) as e:
            ae.wrap(b"p", k, bad)
        assert str(e.value) == "seq_no must be 1..100000" and e.value.code == "bad-seq"


@pytest.mark.parametrize("n,raw", [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"),
                                   (300, b"\xac\x02"), (16384, b"\x80\x80\x01")])
def test_varint(n, raw):
    assert ae._varint(n) == raw


def test_hash_ratchet_message_detection():
    h = proto_pb.HRHeader(seq_no=1, group_id=GID, key_id=b"k")
    assert ae.hash_ratchet_message(b"") is None
    assert ae.hash_ratchet_message(b"\x12\x09short") is None                  # does not parse
    assert ae.hash_ratchet_message(proto_pb.ProtocolMessage(public_message=b"x").SerializeToString()) is None
    assert ae.hash_ratchet_message(hr_message(proto_pb.HRHeader(seq_no=1, key_id=b"k"))) is None   # no group
    pm = proto_pb.ProtocolMessage()
    pm.encrypted_message["none"].payload = b"p"                                     # no HR header
    assert ae.hash_ratchet_message(pm.SerializeToString()) is None
    got = ae.hash_ratchet_message(bytearray(hr_message(h, b"pay", map_key="device-7")))   # any key, when no "none"
    assert got.payload == b"pay" and got.HR_header.group_id == GID
    pm = proto_pb.ProtocolMessage()
    pm.encrypted_message["a"].payload = b"first"
    pm.encrypted_message["a"].HR_header.group_id = GID
    pm.encrypted_message["none"].payload = b"chosen"
    pm.encrypted_message["none"].HR_header.group_id = GID
    assert ae.hash_ratchet_message(pm.SerializeToString()).payload == b"chosen"
    assert ae.is_encrypted(hr_message(h)) is True and ae.is_encrypted(b"") is False


def test_a_message_of_too_many_bundles_is_not_parsed():
    """A ProtocolMessage parse makes a Bundle of each top-level field 3; more than MAX_BUNDLES of them (or more
    top-level fields than that allows) is refused before that parse, however the encrypted part looks. Payload
    bytes that happen to be 0x1a are not bundles: the exact count decides."""
    h = proto_pb.HRHeader(seq_no=1, group_id=GID, key_id=b"k")
    real = hr_message(h, b"\x1a" * (ae.MAX_BUNDLES * 2))               # many 0x1a bytes, no bundle
    assert ae.hash_ratchet_message(real).payload == b"\x1a" * (ae.MAX_BUNDLES * 2)
    assert ae.hash_ratchet_message(real + b"\x1a\x00" * ae.MAX_BUNDLES) is not None     # at the limit
    assert ae.too_many_bundles(real + b"\x1a\x00" * (ae.MAX_BUNDLES + 1))
    assert ae.hash_ratchet_message(real + b"\x1a\x00" * (ae.MAX_BUNDLES + 1)) is None
    other = b"\x10\x01" * (ae.MAX_BUNDLES + 15)     # not bundles: with real's two fields, one past the field bound
    assert ae.too_many_bundles(real + other) and not ae.too_many_bundles(real + other[:-2])


def test_unwrap_not_encrypted_names_the_archive():
    with pytest.raises(EncryptionError) as e:
        ae.unwrap(b"plain bytes", store_of(), archive_id="0xab")
    assert str(e.value) == "not a hash-ratchet encrypted ProtocolMessage"
    assert e.value.code == "not-encrypted" and e.value.archive_id == "0xab"


def test_key_missing_reason_and_fields():
    k = gk()
    raw = ae.wrap(b"p", k, 1)
    with pytest.raises(KeyMissing) as e:
        ae.unwrap(raw, store_of(), archive_id="0xab")
    assert str(e.value) == (f"group key {k.key_id.hex()[:16]} of community {CID} is not held: content stays "
                            "encrypted until the key is added")
    assert (e.value.group_id, e.value.key_id, e.value.archive_id) == (GID, k.key_id, "0xab")
    old = hr_message(proto_pb.HRHeader(seq_no=1, group_id=GID, deprecated_key_id=4242), b"x" * 40)
    with pytest.raises(KeyMissing) as e:
        ae.unwrap(old, store_of())
    assert str(e.value).startswith("group key 4242 of community ")


def test_seq_zero_is_refused():
    k = gk()
    raw = hr_message(proto_pb.HRHeader(seq_no=0, group_id=GID, key_id=k.key_id), b"x" * 40)
    with pytest.raises(EncryptionError) as e:
        ae.unwrap(raw, store_of(k), archive_id="0x1")
    assert str(e.value) == "hash-ratchet seq_no 0 (key exchange) is not an encrypted archive"
    assert e.value.code == "bad-seq" and e.value.archive_id == "0x1"


def test_short_payload_and_tampered_reasons():
    k = gk()
    s = store_of(k)
    head = proto_pb.HRHeader(seq_no=1, group_id=GID, key_id=k.key_id)
    with pytest.raises(TamperedContent) as e:
        ae.unwrap(hr_message(head, b"x" * 27), s, archive_id="0x2")
    assert str(e.value) == "encrypted payload is too short" and e.value.archive_id == "0x2"
    with pytest.raises(TamperedContent) as e:                 # 28 bytes: no ciphertext, tag fails
        ae.unwrap(hr_message(head, b"x" * 28), s, archive_id="0x3")
    assert str(e.value) == "encrypted content does not authenticate: its bytes were changed"
    assert e.value.archive_id == "0x3" and e.value.code == "tampered" and e.value.__suppress_context__
    mk = keccak256(KEY)
    ct, tag = AES.new(mk, AES.MODE_GCM, nonce=b"n" * 12).encrypt_and_digest(b"")
    assert ae.unwrap(hr_message(head, ct + tag + b"n" * 12), s) == b""     # empty plaintext is fine


def test_open_archive_bytes_without_store_is_key_missing():
    raw = ae.wrap(b"p", gk(), 1)
    with pytest.raises(KeyMissing):
        ae.open_archive_bytes(raw, None, archive_id="0x9")
    with pytest.raises(KeyMissing) as e:
        ae.open_archive_bytes(raw, store_of(), archive_id="0x9")
    assert e.value.archive_id == "0x9"
    assert ae.open_archive_bytes(raw, store_of(gk())) == b"p"


def test_open_index_bytes():
    k = gk()
    index = codec.encode_index({"0xaa": IndexEntry(1, 2, (b"t",), 0, 102400, 100)})
    assert ae.open_index_bytes(b"", None) == b""
    assert ae.open_index_bytes(index, None) == index
    assert ae.open_index_bytes(ae.wrap(index, k, 4), store_of(k)) == index
    assert ae.open_index_bytes(b"\x0a\x09short", None) == b"\x0a\x09short"    # not HR either: passed on


def test_encryptor_uses_the_newest_key_and_counts():
    old, new = gk(ts=10), gk(ts=20, key=keccak256(b"n"))
    s = store_of(old, new)
    enc = ae.HashRatchetEncryptor(s, GID)
    for want in (1, 2):
        h = proto_pb.ProtocolMessage.FromString(enc(b"p")).encrypted_message["none"].HR_header
        assert (h.key_id, h.seq_no) == (new.key_id, want)
    with pytest.raises(KeyMissing) as e:
        ae.HashRatchetEncryptor(s, b"\x03\x01")(b"p")
    assert str(e.value) == "no group key for community 0x0301: cannot encrypt" and e.value.group_id == b"\x03\x01"


@pytest.mark.parametrize("text,ts", [(KEY.hex(), 1), ("0x" + KEY.hex(), 1), ("0X" + KEY.hex(), 1),
                                     (f" {KEY.hex()}@1700000000000 ", 1_700_000_000_000)])
def test_parse_cli_key(text, ts):
    assert ae.parse_cli_key(text, CID) == ae.GroupKey(GID, KEY, ts)


@pytest.mark.parametrize("text,cid,why", [("zz", CID, "not hex (only the digits 0-9 and a-f"),
                                          (KEY.hex() + "@x", CID, "the timestamp after @ is milliseconds, digits "
                                                                  "only, not 'x'"),
                                          (KEY.hex(), "0x1234", "community ID must be")])
def test_parse_cli_key_errors(text, cid, why):
    with pytest.raises(EncryptionError) as e:
        ae.parse_cli_key(text, cid)
    assert str(e.value).startswith("not a group key (HEX or HEX@TIMESTAMP_MS): ") and why in str(e.value)
    assert e.value.code == "bad-key" and e.value.__suppress_context__


@pytest.mark.parametrize("ts", ["1_700", "+1700", " 1700", "17 00", "\u00b2", "-1"])
def test_a_key_timestamp_is_ascii_digits_in_every_reader(ts):
    """One rule for `HEX@TIMESTAMP_MS` (is_key_timestamp): `archivist key group add` / `--key` and the member view's
    key field (gui/views/keys.check_key) refuse the same texts; int() alone took "1_700", "+1700" and blanks."""
    with pytest.raises(EncryptionError, match="digits only"):
        ae.parse_cli_key(f"{KEY.hex()}@{ts}", CID)
    assert not ae.is_key_timestamp(ts)
    assert ae.parse_cli_key(f"{KEY.hex()}@1700", CID).timestamp == 1700


def test_key_store_from_cli():
    assert ae.key_store([], CID) is None and ae.key_store(None, CID) is None
    other = keccak256(b"o")
    s = ae.key_store([KEY.hex(), other.hex() + "@7"], CID)
    assert s.keys_of(GID) == [ae.GroupKey(GID, KEY, 1), ae.GroupKey(GID, other, 7)]


def test_transform_from_cli_counts_from_one():
    t = ae.transform_from_cli(KEY.hex() + "@3", CID)
    heads = [proto_pb.ProtocolMessage.FromString(t(b"x")).encrypted_message["none"].HR_header for _ in range(2)]
    assert [h.seq_no for h in heads] == [1, 2] and heads[0].key_id == gk(ts=3).key_id


def test_index_codec_wraps_and_opens():
    k = gk()
    s = store_of(k)
    c = ae.index_codec(s, GID)
    index = codec.encode_index({"0xaa": IndexEntry(1, 2, (b"t",), 0, 102400, 100)})
    wrapped = c.wrap(index)
    assert ae.is_encrypted(wrapped) and c.unwrap(wrapped) == index and c.unwrap(index) == index
    assert c.open_archive(ae.wrap(b"arch", k, 9)) == b"arch" and c.open_archive(b"plain") == b"plain"
    assert community_id_bytes(CID) == GID


def test_old_format_header_finds_the_key_by_group_and_deprecated_id():
    k = gk(ts=(7 << 32) + 99)
    mk = keccak256(keccak256(KEY))
    ct, tag = AES.new(mk, AES.MODE_GCM, nonce=b"n" * 12).encrypt_and_digest(b"old")
    raw = hr_message(proto_pb.HRHeader(seq_no=2, group_id=GID, deprecated_key_id=k.deprecated_key_id),
                     ct + tag + b"n" * 12)
    assert ae.unwrap(raw, store_of(gk(ts=5), k)) == b"old"


def test_find_defaults_mean_no_group_and_key_id_zero():
    k = gk(ts=1 << 32)                                          # deprecated key ID 0
    odd = gk(ts=1 << 33, gid=b"XXXX")
    s = store_of(k, odd)
    assert s.find(b"") is None                                  # no key ID and no group: nothing
    assert s.find(b"", GID) == k                                # old-format header with key ID 0


def test_message_key_at_the_limit():
    k = gk()
    s = store_of(k)
    before = s.message_key(k, ae.MAX_SEQ_NO - 1)
    assert s.message_key(k, ae.MAX_SEQ_NO) == keccak256(before)


def test_store_file_without_keys_or_counters(tmp_path):
    p = tmp_path / "group-keys.json"
    p.write_text('{"version": 1}')
    s = ae.GroupKeyStore(p)
    assert len(s) == 0 and s._seq == {}
    p.write_text(json.dumps({"keys": [gk().to_json()]}))
    assert s.refresh() is True and s.next_seq(gk()) == 1


def test_malformed_store_says_not_an_object(tmp_path):
    p = tmp_path / "group-keys.json"
    p.write_bytes(b"[]")
    with pytest.raises(EncryptionError) as e:
        ae.GroupKeyStore(p)
    assert str(e.value) == f"group key store {p} is malformed: not a JSON object"


def test_a_removed_file_keeps_what_was_read_and_counters_never_go_back(tmp_path):
    p = tmp_path / "group-keys.json"
    k = gk()
    s = ae.GroupKeyStore(p)
    s.add(k)
    for _ in range(3):
        s.next_seq(k)
    doc = json.loads(p.read_text())
    doc["seq"] = {k.key_id.hex(): 1}                   # another writer with an older counter
    p.write_text(json.dumps(doc))
    assert s.refresh() is False and s.next_seq(k) == 4
    doc["seq"] = {k.key_id.hex(): 0}
    p.write_text(json.dumps(doc))
    fresh = ae.GroupKeyStore(p)
    assert fresh.next_seq(k) == 1                       # a counter of 0 stays 0 until used
    p.unlink()
    assert s.refresh() is False and s.find(k.key_id) == k
