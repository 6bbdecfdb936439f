import json
import os
import stat

import pytest
from Crypto.Cipher import AES
from hypothesis import given, settings, strategies as st

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry, keccak256
from core.archive.errors import ArchiveError, DecodeError
from core.pb import status_protocol_message_pb2 as proto_pb
from core.status import archive_encryption as ae
from core.status.errors import EncryptionError, KeyMissing, TamperedContent
from core.status.identity import community_id_bytes

TOPIC = bytes.fromhex("00eb85a7")


@pytest.fixture
def group_key(community):
    return ae.GroupKey(community_id_bytes(community.community_id), keccak256(b"group key"), 1_700_000_000_000)


@pytest.fixture
def store(group_key):
    s = ae.GroupKeyStore()
    s.add(group_key)
    return s


def archive_bytes(n=3):
    msgs = [ArchiveMessage(b"\x04" + bytes(64), 1577840400 + i, TOPIC, b"payload %d" % i, b"", bytes([i]) * 32)
            for i in range(n)]
    return codec.encode_archive(1577836800, 1578355200, [TOPIC], msgs)


def test_wrap_unwrap_round_trip_archive_and_index(group_key, store):
    raw = archive_bytes()
    enc = ae.wrap(raw, group_key, 1)
    assert enc != raw and ae.is_encrypted(enc) and not ae.is_encrypted(raw)
    assert ae.unwrap(enc, store) == raw
    assert codec.decode_archive(ae.open_archive_bytes(enc, store)).messages[2].payload == b"payload 2"
    index = codec.encode_index({"0xaa": IndexEntry(1, 2, (TOPIC,), 0, 102400, 100)})
    enc_index = ae.wrap(index, group_key, 2)
    assert ae.open_index_bytes(enc_index, store) == index
    assert ae.open_index_bytes(index, None) == index           # plain passes through without a key
    assert ae.open_archive_bytes(raw, None) == raw


def test_wire_layout_matches_status_go(group_key):
    """HR header fields and payload = AES-256-GCM(keccak^seq(key)) with tag and nonce appended."""
    raw = archive_bytes(1)
    pm = proto_pb.ProtocolMessage.FromString(ae.wrap(raw, group_key, 3))
    assert list(pm.encrypted_message) == ["none"] and not pm.public_message
    m = pm.encrypted_message["none"]
    h = m.HR_header
    assert h.group_id == group_key.group_id and h.seq_no == 3
    assert h.key_id == keccak256(group_key.group_id + group_key.timestamp.to_bytes(8, "little") + group_key.key)
    assert h.deprecated_key_id == group_key.timestamp % 2 ** 32
    mk = keccak256(keccak256(keccak256(group_key.key)))
    p = m.payload
    assert AES.new(mk, AES.MODE_GCM, nonce=p[-12:]).decrypt_and_verify(p[:-28], p[-28:-12]) == raw


def test_status_go_style_plain_decode_of_encrypted_archive_fails(group_key):
    """status-go tries a plain WakuMessageArchive decode first; ours must not pass it by chance."""
    with pytest.raises(DecodeError):
        codec.decode_archive(ae.wrap(archive_bytes(), group_key, 1))
    with pytest.raises(DecodeError):       # index: non-empty with zero entries
        codec.decode_index(ae.wrap(b"\x0a\x00", group_key, 1))


def test_missing_or_wrong_key_is_key_missing(group_key):
    enc = ae.wrap(archive_bytes(), group_key, 1)
    for s in (ae.GroupKeyStore(), None):
        with pytest.raises(KeyMissing) as e:
            ae.open_archive_bytes(enc, s, archive_id="0x01")
        assert e.value.code == "key-missing" and e.value.group_id == group_key.group_id
        assert e.value.key_id == group_key.key_id and e.value.archive_id == "0x01"
        assert isinstance(e.value, ArchiveError)
    wrong = ae.GroupKeyStore()
    wrong.add(ae.GroupKey(group_key.group_id, keccak256(b"wrong"), group_key.timestamp))
    with pytest.raises(KeyMissing):
        ae.unwrap(enc, wrong)


def test_key_missing_is_terminal_not_retried(group_key, monkeypatch):
    """One attempt, one KeyMissing: no loop re-deriving keys or retrying decryption."""
    calls = []
    real = ae.GroupKeyStore.find
    monkeypatch.setattr(ae.GroupKeyStore, "find", lambda self, *a: calls.append(a) or real(self, *a))
    monkeypatch.setattr(ae.GroupKeyStore, "message_key", lambda *a: pytest.fail("must not derive keys"))
    with pytest.raises(KeyMissing):
        ae.unwrap(ae.wrap(b"x", group_key, 1), ae.GroupKeyStore())
    assert len(calls) == 1
    with pytest.raises(KeyMissing):
        ae.HashRatchetEncryptor(ae.GroupKeyStore(), group_key.group_id)(b"x")


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzz_tampered_bytes_are_rejected(data):
    from core.status.identity import CommunityIdentity
    gk = ae.GroupKey(b"\x02" + bytes(32), keccak256(b"fuzz"), 1_700_000_000_000)
    s = ae.GroupKeyStore()
    s.add(gk)
    raw = archive_bytes(2)
    enc = bytearray(ae.wrap(raw, gk, 1))
    pos = data.draw(st.integers(0, len(enc) - 1))
    enc[pos] ^= data.draw(st.integers(1, 255))
    try:
        out = ae.unwrap(bytes(enc), s)
    except (EncryptionError, KeyMissing, TamperedContent):
        return
    # a change outside the authenticated payload (e.g. the installation ID) may still decrypt: never to other bytes
    assert out == raw


def test_tampered_ciphertext_gives_tampered(group_key, store):
    pm = proto_pb.ProtocolMessage.FromString(ae.wrap(archive_bytes(), group_key, 1))
    p = bytearray(pm.encrypted_message["none"].payload)
    p[5] ^= 1
    pm.encrypted_message["none"].payload = bytes(p)
    with pytest.raises(TamperedContent) as e:
        ae.unwrap(pm.SerializeToString(), store)
    assert e.value.code == "tampered"


def test_seq_limits(group_key, store):
    with pytest.raises(EncryptionError):
        ae.wrap(b"x", group_key, 0)
    pm = proto_pb.ProtocolMessage.FromString(ae.wrap(b"x", group_key, 1))
    pm.encrypted_message["none"].HR_header.seq_no = ae.MAX_SEQ_NO + 1
    with pytest.raises(EncryptionError) as e:
        ae.unwrap(pm.SerializeToString(), store)
    assert e.value.code == "seq-too-high"


def test_store_persists_with_mode_0600_and_counts_seq(tmp_path, group_key):
    path = tmp_path / "group-keys.json"
    s = ae.GroupKeyStore(path)
    s.add(group_key)
    enc = ae.HashRatchetEncryptor(s, group_key.group_id)
    a, b = enc(b"first"), enc(b"second")
    seqs = [proto_pb.ProtocolMessage.FromString(x).encrypted_message["none"].HR_header.seq_no for x in (a, b)]
    assert seqs == [1, 2]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    s2 = ae.GroupKeyStore(path)
    assert ae.unwrap(b, s2) == b"second" and s2.next_seq(group_key) == 3
    newer = ae.GroupKey(group_key.group_id, keccak256(b"rekey"), group_key.timestamp + 1)
    s2.add(newer)
    assert s2.current(group_key.group_id) == newer


def test_message_key_cache_matches_plain_ratchet(group_key, store):
    for n in (5, 2, 9, 9, 100):
        assert store.message_key(group_key, n) == ae.ratchet_key(group_key.key, n)


def test_transform_from_cli(community, group_key):
    t = ae.transform_from_cli("0x" + group_key.key.hex() + "@" + str(group_key.timestamp), community.community_id)
    raw = archive_bytes()
    out1, out2 = t(raw), t(raw)
    s = ae.GroupKeyStore()
    s.add(group_key)
    assert ae.unwrap(out1, s) == raw and ae.unwrap(out2, s) == raw and out1 != out2   # seq 1 then 2
    again = ae.transform_from_cli(group_key.key.hex() + "@" + str(group_key.timestamp), community.community_id)
    assert again(raw) == out1                                # reproducible builds
    assert ae.parse_cli_key(group_key.key.hex(), community.community_id).timestamp == ae.DEFAULT_CLI_KEY_TIMESTAMP
    for bad in ("zz", "00" * 31, "00" * 32 + "@x", "00" * 32 + "@0"):
        with pytest.raises(EncryptionError):
            ae.transform_from_cli(bad, community.community_id)
    with pytest.raises(EncryptionError):
        ae.transform_from_cli(group_key.key.hex(), "0x1234")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_detection_and_unwrap_of_arbitrary_bytes(blob):
    s = ae.GroupKeyStore()
    ae.is_encrypted(blob)
    try:
        ae.open_index_bytes(blob, s)
        ae.open_archive_bytes(blob, s)
    except EncryptionError:
        pass


def full_parse_hr(data: bytes):
    """hash_ratchet_message as it was before its shortcut (may_be_encrypted): the whole ProtocolMessage parsed."""
    if not data:
        return None
    pm = proto_pb.ProtocolMessage()
    try:
        pm.ParseFromString(bytes(data))
    except Exception:  # noqa: BLE001
        return None
    if not pm.encrypted_message:
        return None
    msg = pm.encrypted_message.get(ae.NO_INSTALLATION_ID) or next(iter(pm.encrypted_message.values()))
    return msg if msg.HasField("HR_header") and msg.HR_header.group_id else None


def shortcut_cases() -> list[bytes]:
    """Plain archives (metadata that is UTF-8 as an installation ID, and not), encrypted ones (ours, a bare map
    entry first, a bundle first, the installation ID after), and both in one."""
    gk = ae.GroupKey(b"\x02" + bytes(32), keccak256(b"probe"), 1_700_000_000_000)
    plain, small = archive_bytes(4), codec.encode_archive(1, 2, [b"abcd"], [ArchiveMessage(b"s", 1, b"abcd", b"p")])
    enc = ae.wrap(plain, gk, 1)
    pm = proto_pb.ProtocolMessage.FromString(enc)
    bare = proto_pb.ProtocolMessage()
    bare.encrypted_message["none"].CopyFrom(pm.encrypted_message["none"])
    bundle = proto_pb.ProtocolMessage()
    bundle.bundles.add(identity=b"k")
    bundle.encrypted_message["none"].CopyFrom(pm.encrypted_message["none"])
    late = bare.SerializeToString() + b"\x12\x01f"            # installation ID after the map
    bad_late = bare.SerializeToString() + b"\x12\x02\xff\xfe"   # ... and not UTF-8: the whole does not parse
    return [plain, small, enc, bare.SerializeToString(), bundle.SerializeToString(), late, bad_late,
            small + bare.SerializeToString(), plain + bare.SerializeToString(), b"\x12\x00", b"\x12\x05ab"]


def test_the_encryption_check_by_its_first_field_finds_what_the_whole_parse_finds():
    cases = shortcut_cases()
    for raw in cases:
        want = full_parse_hr(raw)
        got = ae.hash_ratchet_message(raw)
        assert (got is None) == (want is None) and (got is None or got == want), raw[:40].hex()
    assert [ae.is_encrypted(c) for c in cases] == [False, False, True, True, True, True, False, True, False,
                                                   False, False]
    assert not ae.may_be_encrypted(cases[0])          # a plain archive
    assert ae.may_be_encrypted(cases[2])
    # An installation ID that is not UTF-8 first, the encrypted map after it: the whole does not parse, and the first
    # field alone says so. The probe alone (it skips field 2) would find the map: only the first-field rule answers.
    bad_first = b"\x12\x02\xff\xfe" + cases[3]
    assert full_parse_hr(bad_first) is None and ae.hash_ratchet_message(bad_first) is None
    assert ae._EncryptedProbe.FromString(bad_first).encrypted_message
    assert not ae.may_be_encrypted(bad_first)
    # A good first field, then a field 101 (the map) that does not parse: the probe's own failure says "not encrypted"
    bad_map = b"\x12\x01f" + b"\xaa\x06\x02\xff\xff"
    assert full_parse_hr(bad_map) is None and not ae.may_be_encrypted(bad_map)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_fuzz_the_encryption_shortcut_never_calls_an_encrypted_blob_plain(data):
    """Mutated plain and encrypted archives and random bytes: the shortcut and the whole parse agree."""
    cases = shortcut_cases()
    raw = bytearray(data.draw(st.sampled_from(cases + [b""])))
    for _ in range(data.draw(st.integers(0, 3))):
        op = data.draw(st.integers(0, 2))
        if op == 0 and raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        elif op == 1 and raw:
            del raw[data.draw(st.integers(0, len(raw) - 1)):]
        else:
            raw[data.draw(st.integers(0, len(raw))):0] = data.draw(st.binary(min_size=1, max_size=6))
    raw = bytes(raw)
    want = full_parse_hr(raw)
    got = ae.hash_ratchet_message(raw)
    assert (got is None) == (want is None) and (got is None or got == want)
    if not ae.may_be_encrypted(raw):
        assert want is None
    blob = data.draw(st.binary(max_size=300))
    assert (ae.hash_ratchet_message(blob) is None) == (full_parse_hr(blob) is None)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_group_key_store_file(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("s") / "keys.json"
    path.write_bytes(blob)
    try:
        ae.GroupKeyStore(path)
    except EncryptionError:
        pass


@pytest.mark.parametrize("size", [0, 1, 100, 127, 128, 20_000, 300_000])
@pytest.mark.parametrize("installation_id", ["", ae.ARCHIVE_INSTALLATION_ID])
def test_hand_encoding_equals_protobuf_serialization(group_key, size, installation_id):
    raw = bytes(range(256)) * (size // 256) + bytes(size % 256)
    ours = ae.wrap(raw, group_key, 7, installation_id=installation_id)
    pm = proto_pb.ProtocolMessage.FromString(ours)
    assert pm.SerializeToString(deterministic=True) == ours
    m = pm.encrypted_message["none"]
    reference = proto_pb.ProtocolMessage(installation_id=installation_id)
    reference.encrypted_message["none"].CopyFrom(proto_pb.EncryptedMessageProtocol(
        HR_header=proto_pb.HRHeader(deprecated_key_id=group_key.deprecated_key_id, seq_no=7,
                                    group_id=group_key.group_id, key_id=group_key.key_id),
        payload=m.payload))
    assert reference.SerializeToString(deterministic=True) == ours


def test_store_file_shared_by_two_processes_loses_and_revives_nothing(tmp_path, group_key):
    """The node and `archivist key group` each hold a GroupKeyStore on the same file. A key one adds is never
    dropped by the other's next write (send counter), and a key one removes is not brought back."""
    path = tmp_path / "group-keys.json"
    node, cli = ae.GroupKeyStore(path), ae.GroupKeyStore(path)
    node.add(group_key)
    newer = ae.GroupKey(group_key.group_id, keccak256(b"rekey"), group_key.timestamp + 1)
    cli.add(newer)                               # cli opened before node's add: it must not drop group_key
    assert {k.key_id for k in ae.GroupKeyStore(path).keys_of(group_key.group_id)} == {group_key.key_id,
                                                                                       newer.key_id}
    assert node.refresh() is True and node.current(group_key.group_id) == newer
    assert node.refresh() is False               # nothing new since
    assert node.next_seq(group_key) == 1
    assert cli.remove(group_key.key_id) == group_key
    assert node.next_seq(newer) == 1             # node's write after the removal keeps it removed
    again = ae.GroupKeyStore(path)
    assert [k.key_id for k in again.keys_of(group_key.group_id)] == [newer.key_id]
    assert cli.remove(group_key.key_id) is None
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_key_group_cli(tmp_path, group_key, capsys):
    from core.cli import main
    cid = "0x" + group_key.group_id.hex()
    key = f"{group_key.key.hex()}@{group_key.timestamp}"
    data = ["--data-dir", str(tmp_path)]
    assert main(["key", "group", "list", cid, *data]) == 0
    assert "0 group key(s) held" in capsys.readouterr().out
    assert main(["key", "group", "add", cid, key, *data, "--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["keys"] == [{"key_id": "0x" + group_key.key_id.hex(), "timestamp": group_key.timestamp}]
    assert stat.S_IMODE(os.stat(tmp_path / "group-keys.json").st_mode) == 0o600
    assert main(["key", "group", "list", cid, *data]) == 0
    assert "0x" + group_key.key_id.hex() in capsys.readouterr().out
    other = "0x02" + "11" * 32
    assert main(["key", "group", "remove", other, "0x" + group_key.key_id.hex(), *data]) == 2
    assert "no group key" in capsys.readouterr().err          # another community's key is not removed
    assert main(["key", "group", "remove", cid, "0x" + group_key.key_id.hex(), *data]) == 0
    assert ae.GroupKeyStore(tmp_path / "group-keys.json").keys_of(group_key.group_id) == []
    assert main(["key", "group", "add", cid, "zz", *data]) == 2
    assert "not a group key (HEX or HEX@TIMESTAMP_MS)" in capsys.readouterr().err
