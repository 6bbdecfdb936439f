"""Hash-ratchet encryption of archives and the index, as status-go does it for token-gated communities.

Wire (WIRE-FORMAT.md section 6; status-go protocol/encryption): ProtocolMessage{installation_id,
encrypted_message["none"] = EncryptedMessageProtocol{HR_header{deprecated_key_id = uint32(key timestamp),
seq_no, group_id = community ID bytes, key_id = keccak256(group_id || uint64_le(timestamp) || key)},
payload = AES-256-GCM(keccak256^seq_no(group key), plaintext) = ciphertext || tag || 12-byte nonce}}.

Departures (documented in docs/STATUS-LAYER.md): the nonce is derived from the message key and the plaintext
(a synthetic IV: the same build gives the same bytes, and a nonce never repeats for different plaintexts) where
status-go draws it at random; readers cannot tell the difference. A missing key is a terminal KeyMissing state.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from Crypto.Cipher import AES
from google.protobuf.message import DecodeError as _PbDecodeError

from core.archive.codec import OTHER_FIELDS, count_top_fields, keccak256
from core.hextext import from_hex
from core.pb import archivist_status_view_pb2 as view_pb
from core.pb import communities_archive_pb2 as archive_pb
from core.pb import status_protocol_message_pb2 as proto_pb
from core.status.errors import EncryptionError, KeyMissing, TamperedContent
from core.status.identity import community_id_bytes, write_private_file
from core.varint import DecodeError as VarintError, next_field
from core.varint import write_varint as _varint

NO_INSTALLATION_ID = "none"          # status-go's map key for group (hash-ratchet) messages
MAX_SEQ_NO = 100_000                 # status-go's maxHashRatchetSeqNoDelta: refuse to hash further
NONCE_LENGTH = 12
TAG_LENGTH = 16
# Installation ID written into encrypted archives. status-go's reader first tries the bytes as a plain
# WakuMessageArchive and only decrypts when that fails; an ID starting with "f" (wire type 6 when read as a
# protobuf tag) guarantees that first attempt fails, so status-go goes on to decrypt.
ARCHIVE_INSTALLATION_ID = "f0a7c41e-4e2a-4b4d-9c1d-a7c41e000000"
_EncryptedProbe = view_pb.EncryptedProbe


@dataclass(frozen=True, slots=True)
class GroupKey:
    """A community's hash-ratchet group key (status-go HashRatchetKeyCompatibility)."""

    group_id: bytes                  # community ID bytes
    key: bytes                       # 32 bytes
    timestamp: int                   # milliseconds; status-go requires non-zero

    def __post_init__(self):
        if len(self.key) != 32:
            raise EncryptionError(f"group key must be 32 bytes, got {len(self.key)}", code="bad-key")
        if self.timestamp <= 0 or self.timestamp >= 1 << 64:
            raise EncryptionError("group key timestamp must be a positive uint64", code="bad-key")
        if not self.group_id:
            raise EncryptionError("group key needs a group ID", code="bad-key")

    @property
    def key_id(self) -> bytes:
        return keccak256(self.group_id + self.timestamp.to_bytes(8, "little") + self.key)

    @property
    def deprecated_key_id(self) -> int:
        return self.timestamp & 0xFFFFFFFF

    def to_json(self) -> dict:
        return {"group_id": self.group_id.hex(), "key": self.key.hex(), "timestamp": self.timestamp}

    @classmethod
    def from_json(cls, d: dict) -> "GroupKey":
        return cls(bytes.fromhex(d["group_id"]), bytes.fromhex(d["key"]), int(d["timestamp"]))


def ratchet_key(key: bytes, seq_no: int) -> bytes:
    """The message key for `seq_no`: Keccak-256 applied seq_no times to the group key."""
    for _ in range(seq_no):
        key = keccak256(key)
    return key


class GroupKeyStore:
    """Group keys we hold, by key ID, plus the last sequence number used per key (for sending).

    With a path it persists as JSON with mode 0600 (a node keeps it as FILE_NAME in its data folder). Thread-safe."""

    FILE_NAME = "group-keys.json"

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._keys: dict[bytes, GroupKey] = {}
        self._seq: dict[bytes, int] = {}
        self._chain: dict[tuple[bytes, int], bytes] = {}
        self._stamp: tuple[int, int] | None = None       # (mtime_ns, size) of the file as we last read or wrote it
        if self.path is not None:
            with self._file_lock():
                self._read_file()

    # -- the file is shared: the node, `archivist key group` and the window may each change it ----------------
    def _file_lock(self):
        """An exclusive lock on a sibling lock file for a read-modify-write (fcntl; released on close)."""
        import contextlib
        import fcntl

        @contextlib.contextmanager
        def held():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)
        return held()

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size

    def _read_file(self) -> bool:
        """Take the file's key set as the truth (another process may have added or removed keys); keep the
        higher send counter of each key. True when a key was added."""
        stamp = self._file_stamp()
        if stamp is None or stamp == self._stamp:
            return False
        try:
            doc = json.loads(self.path.read_bytes())
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            keys = {k.key_id: k for k in (GroupKey.from_json(d) for d in doc.get("keys", []))}
            seq = {bytes.fromhex(h): int(n) for h, n in doc.get("seq", {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, EncryptionError) as e:
            raise EncryptionError(f"group key store {self.path} is malformed: {e}", code="bad-key-store") from None
        added = bool(keys.keys() - self._keys.keys())
        self._keys = keys
        self._seq = {h: max(n, self._seq.get(h, 0)) for h, n in seq.items()}
        self._stamp = stamp
        return added

    def refresh(self) -> bool:
        """Pick up keys that another process (`archivist key group add`) wrote; True when one was added."""
        if self.path is None:
            return False
        with self._lock, self._file_lock():
            return self._read_file()

    def __getstate__(self) -> dict:
        """Pickled (Spark executors open encrypted archives): the keys only, never the file or send counters."""
        with self._lock:
            return {"keys": list(self._keys.values())}

    def __setstate__(self, state: dict) -> None:
        self.path, self._lock, self._seq, self._chain, self._stamp = None, threading.Lock(), {}, {}, None
        self._keys = {k.key_id: k for k in state["keys"]}

    def _change(self, change) -> object:
        """Apply `change()` to the in-memory store and write the file, as one read-modify-write under the file
        lock: first re-read what others wrote, so that no key they added or removed is lost or brought back."""
        with self._lock:
            if self.path is None:
                return change()
            with self._file_lock():
                self._read_file()
                result = change()
                doc = {"version": 1, "keys": [k.to_json() for k in self._keys.values()],
                       "seq": {h.hex(): n for h, n in self._seq.items()}}
                write_private_file(self.path, json.dumps(doc, indent=2).encode() + b"\n")
                self._stamp = self._file_stamp()
                return result

    def add(self, key: GroupKey) -> None:
        def change():
            self._keys[key.key_id] = key
        self._change(change)

    def __len__(self) -> int:
        return len(self._keys)

    def keys_of(self, group_id: bytes) -> list[GroupKey]:
        """A community's keys, oldest first."""
        with self._lock:
            return sorted((k for k in self._keys.values() if k.group_id == group_id), key=lambda k: k.timestamp)

    def remove(self, key_id: bytes) -> GroupKey | None:
        """Forget one key (and its send counter); the removed key, or None when it was not held."""
        def change():
            k = self._keys.pop(bytes(key_id), None)
            if k is not None:
                self._seq.pop(k.key_id, None)
                self._chain = {c: v for c, v in self._chain.items() if c[0] != k.key_id}
            return k
        return self._change(change)

    def find(self, key_id: bytes, group_id: bytes = b"", deprecated_key_id: int = 0) -> GroupKey | None:
        with self._lock:
            k = self._keys.get(bytes(key_id))
            if k is None and not key_id and group_id:   # old-format header: group + uint32 key ID only
                k = next((c for c in self._keys.values()
                          if c.group_id == group_id and c.deprecated_key_id == deprecated_key_id), None)
            return k

    def current(self, group_id: bytes) -> GroupKey | None:
        with self._lock:
            keys = [k for k in self._keys.values() if k.group_id == group_id]
            return max(keys, key=lambda k: k.timestamp) if keys else None

    def next_seq(self, key: GroupKey) -> int:
        def change():
            n = self._seq.get(key.key_id, 0) + 1
            self._seq[key.key_id] = n
            return n
        return self._change(change)

    def message_key(self, key: GroupKey, seq_no: int) -> bytes:
        """keccak256^seq_no(key), continuing from the nearest cached lower step."""
        if seq_no > MAX_SEQ_NO:
            raise EncryptionError(f"hash-ratchet seq_no {seq_no} is above {MAX_SEQ_NO}", code="seq-too-high")
        with self._lock:
            start, value = 0, key.key
            for (kid, n), v in self._chain.items():
                if kid == key.key_id and start < n <= seq_no:
                    start, value = n, v
        value = ratchet_key(value, seq_no - start)
        with self._lock:
            if len(self._chain) > 10_000:
                self._chain.clear()
            self._chain[(key.key_id, seq_no)] = value
        return value


# ---------------------------------------------------------------- wrap / unwrap

def _synthetic_nonce(message_key: bytes, plaintext: bytes) -> bytes:
    """HMAC-SHA256(message key, plaintext)[:12]: equal nonces only for equal plaintexts under one key."""
    return hmac.new(message_key, plaintext, hashlib.sha256).digest()[:NONCE_LENGTH]


def wrap(plaintext: bytes, key: GroupKey, seq_no: int, *, installation_id: str = ARCHIVE_INSTALLATION_ID,
         nonce: bytes | None = None) -> bytes:
    """Encrypt an encoded archive or index into a hash-ratchet ProtocolMessage (seq_no >= 1)."""
    if not 1 <= seq_no <= MAX_SEQ_NO:
        raise EncryptionError(f"seq_no must be 1..{MAX_SEQ_NO}", code="bad-seq")
    mk = ratchet_key(key.key, seq_no)
    nonce = _synthetic_nonce(mk, plaintext) if nonce is None else nonce
    ct, tag = AES.new(mk, AES.MODE_GCM, nonce=nonce).encrypt_and_digest(plaintext)
    header = proto_pb.HRHeader(deprecated_key_id=key.deprecated_key_id, seq_no=seq_no, group_id=key.group_id,
                               key_id=key.key_id).SerializeToString(deterministic=True)
    return _protocol_message_bytes(installation_id, header, (ct, tag, nonce))


def _protocol_message_bytes(installation_id: str, header: bytes, payload: tuple[bytes, ...]) -> bytes:
    """ProtocolMessage{installation_id, encrypted_message{"none": {payload = 3, HR_header = 102}}} encoded by
    hand in protobuf's canonical field order, joining the (large) payload once instead of copying it through
    three nested messages. A test checks byte equality with protobuf's own serialization."""
    plen = sum(len(p) for p in payload)
    emp_tail = _varint(102 << 3 | 2) + _varint(len(header)) + header
    emp_len = len(_varint(3 << 3 | 2)) + len(_varint(plen)) + plen + len(emp_tail)
    key = NO_INSTALLATION_ID.encode()
    entry_head = _varint(1 << 3 | 2) + _varint(len(key)) + key + _varint(2 << 3 | 2) + _varint(emp_len)
    entry_len = len(entry_head) + emp_len
    inst = installation_id.encode()
    head = (_varint(2 << 3 | 2) + _varint(len(inst)) + inst if inst else b"") + _varint(101 << 3 | 2) + \
        _varint(entry_len) + entry_head + _varint(3 << 3 | 2) + _varint(plen)
    return b"".join((head, *payload, emp_tail))


def hash_ratchet_message(data: bytes) -> proto_pb.EncryptedMessageProtocol | None:
    """The hash-ratchet part if `data` is an HR-encrypted ProtocolMessage, else None (never raises).

    A plain archive is told apart first by the one field that matters (may_be_encrypted), without the full
    ProtocolMessage parse, which reads each of its messages as a Bundle (~10 ms a 10 MB archive)."""
    if not data or not may_be_encrypted(data) or too_many_bundles(data):
        return None
    pm = proto_pb.ProtocolMessage()
    try:
        pm.ParseFromString(bytes(data))
    except (_PbDecodeError, RuntimeError, ValueError):
        return None
    if not pm.encrypted_message:
        return None
    msg = pm.encrypted_message.get(NO_INSTALLATION_ID) or next(iter(pm.encrypted_message.values()))
    if not msg.HasField("HR_header") or not msg.HR_header.group_id:
        return None
    return msg


MAX_BUNDLES = 4096    # status-go's ProtocolMessage carries a bundle or two; more is a shape that only costs memory


def too_many_bundles(data: bytes) -> bool:
    """Whether `data` holds more than MAX_BUNDLES top-level bundles (field 3) or more top-level fields than that
    allows, counted before the ProtocolMessage parse makes a Bundle of each: 30 MiB of empty ones took it 1.3
    CPU-s and ~1 GB. Such bytes are not opened as an encrypted archive (and then do not decode as a plain one)."""
    if data.count(b"\x1a") <= MAX_BUNDLES:           # each bundle starts with 0x1a: else there cannot be too many
        return False
    bundles, fields = count_top_fields(data, MAX_BUNDLES, field=3)
    return bundles > MAX_BUNDLES or fields > MAX_BUNDLES + OTHER_FIELDS


def may_be_encrypted(data: bytes) -> bool:
    """False when `data` is certainly not an HR-encrypted ProtocolMessage, told from its first field alone when
    that can tell, else without building its other fields; True: the full check decides (hash_ratchet_message).

    - The first field, parsed alone as a ProtocolMessage, does not parse: neither does the whole (the full parse
      reads that same field by the same rules). A plain archive starts with its metadata, field 2, which is the
      installation ID (a string) there; its timestamps' varints are almost never UTF-8. Microseconds.
    - Read as EncryptedProbe (proto/archivist_status_view.proto: ProtocolMessage's `encrypted_message` alone, every
      other field unknown) it does not parse or holds no encrypted message: the ProtocolMessage parse checks that
      field the same way and more (its other fields' types), so it fails or finds none too. The probe skips the
      messages of a plain archive where the ProtocolMessage parse makes a Bundle of each (2x faster)."""
    data = bytes(data)
    head = _first_field_end(data)
    if head is not None:
        try:
            proto_pb.ProtocolMessage.FromString(data[:head])
        except (_PbDecodeError, RuntimeError, ValueError):
            return False
    try:
        return bool(_EncryptedProbe.FromString(data).encrypted_message)
    except (_PbDecodeError, RuntimeError, ValueError):
        return False


def _first_field_end(data: bytes) -> int | None:
    """Where the first field of `data` ends when it is a length-delimited field that fits (None otherwise: the
    probe decides)."""
    try:
        _, wire, end = next_field(data, 0)
    except VarintError:
        return None
    return end if wire == 2 and end <= len(data) else None


def is_encrypted(data: bytes) -> bool:
    return hash_ratchet_message(data) is not None


def unwrap(data: bytes, store: GroupKeyStore, *, archive_id: str | None = None) -> bytes:
    """Decrypt a hash-ratchet ProtocolMessage. Raises KeyMissing (key not held: terminal), TamperedContent
    (authentication failed), or EncryptionError (not an HR message, bad seq_no)."""
    msg = hash_ratchet_message(data)
    if msg is None:
        raise EncryptionError("not a hash-ratchet encrypted ProtocolMessage", code="not-encrypted",
                              archive_id=archive_id)
    return _decrypt(msg, store, archive_id)


def _decrypt(msg: proto_pb.EncryptedMessageProtocol, store: GroupKeyStore, archive_id: str | None) -> bytes:
    h = msg.HR_header
    key = store.find(h.key_id, h.group_id, h.deprecated_key_id)
    if key is None:
        raise KeyMissing(f"group key {h.key_id.hex()[:16] or h.deprecated_key_id} of community "
                         f"0x{h.group_id.hex()} is not held: content stays encrypted until the key is added",
                         group_id=h.group_id, key_id=h.key_id, archive_id=archive_id)
    if h.seq_no == 0:
        # status-go treats seq_no 0 as a key-exchange message with a plaintext payload; archives never use it
        raise EncryptionError("hash-ratchet seq_no 0 (key exchange) is not an encrypted archive", code="bad-seq",
                              archive_id=archive_id)
    payload = memoryview(msg.payload)
    if len(payload) < NONCE_LENGTH + TAG_LENGTH:
        raise TamperedContent("encrypted payload is too short", archive_id=archive_id)
    mk = store.message_key(key, h.seq_no)
    cut = len(payload) - NONCE_LENGTH - TAG_LENGTH
    try:
        return AES.new(mk, AES.MODE_GCM, nonce=payload[cut + TAG_LENGTH:]).decrypt_and_verify(
            payload[:cut], payload[cut:cut + TAG_LENGTH])
    except ValueError:
        raise TamperedContent("encrypted content does not authenticate: its bytes were changed",
                              archive_id=archive_id) from None


def open_archive_bytes(raw: bytes, store: GroupKeyStore | None, *, archive_id: str | None = None) -> bytes:
    """Plain archive bytes: decrypt when encrypted (KeyMissing when no store/key), pass through otherwise.

    The HR check comes first (status-go tries a plain decode first, which an encrypted blob can pass by chance)."""
    msg = hash_ratchet_message(raw)
    if msg is None:
        return raw
    return _decrypt(msg, store if store is not None else GroupKeyStore(), archive_id)


def open_index_bytes(raw: bytes, store: GroupKeyStore | None) -> bytes:
    """Plain index bytes. Detects encryption as WIRE-FORMAT.md says: non-empty but zero entries -> try HR."""
    idx = archive_pb.WakuMessageArchiveIndex()
    try:
        idx.ParseFromString(bytes(raw))
        if idx.archives or not raw:
            return raw
    except (_PbDecodeError, RuntimeError, ValueError):
        pass
    return open_archive_bytes(raw, store)


class HashRatchetEncryptor:
    """Wraps successive archives (and the index) with the community's current key and increasing seq_no."""

    def __init__(self, store: GroupKeyStore, group_id: bytes):
        self.store, self.group_id = store, group_id

    def __call__(self, plaintext: bytes) -> bytes:
        key = self.store.current(self.group_id)
        if key is None:
            raise KeyMissing(f"no group key for community 0x{self.group_id.hex()}: cannot encrypt",
                             group_id=self.group_id)
        return wrap(plaintext, key, self.store.next_seq(key))


DEFAULT_CLI_KEY_TIMESTAMP = 1


def is_key_timestamp(text: str) -> bool:
    """The TIMESTAMP_MS of `HEX@TIMESTAMP_MS`: ASCII digits (int() would also take "1_000", "+1" and " 1 ")."""
    return text.isascii() and text.isdigit()


def parse_cli_key(key_hex: str, community_id: str) -> GroupKey:
    """`HEX` or `HEX@TIMESTAMP_MS` (the timestamp is part of the key ID; status-go keys carry their own)."""
    text, _, ts = key_hex.strip().partition("@")
    try:
        if ts and not is_key_timestamp(ts):
            raise ValueError(f"the timestamp after @ is milliseconds, digits only, not {ts[:20]!r}")
        key = from_hex(text)
        timestamp = int(ts) if ts else DEFAULT_CLI_KEY_TIMESTAMP
        group_id = community_id_bytes(community_id)
    except ValueError as e:
        raise EncryptionError(f"not a group key (HEX or HEX@TIMESTAMP_MS): {e}", code="bad-key") from None
    return GroupKey(group_id, key, timestamp)


def key_store(keys, community_id: str) -> "GroupKeyStore | None":
    """An in-memory store of the keys given on a command line (`--key HEX[@TIMESTAMP_MS]`, repeatable), or None."""
    if not keys:
        return None
    store = GroupKeyStore()
    for k in keys:
        store.add(parse_cli_key(k, community_id))
    return store


def transform_from_cli(key_hex: str, community_id: str) -> Callable[[bytes], bytes]:
    """The archive transform for `archivist build --encrypt-key KEY[@TIMESTAMP]`: each call wraps one encoded
    archive with the next seq_no (1, 2, ...). The synthetic nonce keeps repeated builds safe and reproducible."""
    store = GroupKeyStore()
    key = parse_cli_key(key_hex, community_id)
    store.add(key)
    return HashRatchetEncryptor(store, key.group_id)


def index_codec(store: GroupKeyStore, group_id: bytes):
    """The IndexCodec of an encrypted community: the index is wrapped like an archive (status-go does too), and
    `open_archive` lets a damaged index be rebuilt from the (encrypted) archives in `data`."""
    from core.archive.folder import IndexCodec
    return IndexCodec(HashRatchetEncryptor(store, group_id), lambda raw: open_index_bytes(raw, store),
                      open_archive=lambda raw: open_archive_bytes(raw, store))
