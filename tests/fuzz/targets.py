"""The decoders of outside data, each as a fuzz target: valid encodings to start from, the call, the allowed errors.

- index: codec.decode_index, then index_check.check_entries and plan_reads against several `data` lengths; also
  checks that a decoded entry's (cached) archive ID equals the ID of the same entry built afresh.
- archive: codec.decode_archive, then the verifier's checks of the same bytes padded as in `data`.
- torrent: torrent.parse_metainfo (metainfo from a file or a peer).
- magnet-libtorrent: core/torrent/fetch.parse_magnet (the member's download: the link as libtorrent parameters);
  magnet-inspector: core/torrent/magnet.parse_magnet with its x.pe peers (the Inspector). One parser underneath.
- archive-link: the member's path for a received type-43 message: node/links.LinkGate.consider_envelope ->
  status/application_metadata.open_archive_link_envelope (payload-v1 decrypt, signature, ProtocolMessage,
  ApplicationMetadataMessage, CommunityMessageArchiveMagnetlink). Mutations are made at each layer and the outer
  layers rebuilt and signed, so that every parser is reached, not only the AES-GCM tag check.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import tempfile
from pathlib import Path

import fastbencode

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.errors import ArchiveError
from core.archive.index_check import check_entries, described_length, plan_reads
from core.archive.torrent import build_metainfo, magnet_link, parse_metainfo
from core.archive.verify import Report, verify_archive_bytes
from core.torrent.magnet import MagnetError
from core.pb import communities_archive_pb2 as pb
from tests.fuzz.driver import Target

TOPIC = bytes.fromhex("00eb85a7")
TOPICS = (TOPIC, bytes.fromhex("deadbeef"), bytes.fromhex("0102fffe"))
CID = "0x02" + "00" * 31 + "aa"


class InvariantBroken(AssertionError):
    """A decoder returned, but its result breaks a promise (never an allowed outcome)."""


# ---------------------------------------------------------------- index

def _index(entries: list[IndexEntry]) -> bytes:
    return codec.encode_index({e.archive_id: e for e in entries})


def index_seeds() -> list[bytes]:
    out = []
    for n, topics in ((1, (TOPIC,)), (3, TOPICS), (5, TOPICS[:2])):
        entries, off = [], 0
        for i in range(n):
            size, pad = codec.padded_size(72 + 150_000 * i)
            entries.append(IndexEntry(1577836800 + i * 604800, 1577836800 + (i + 1) * 604800, topics, off, size, pad))
            off += size
        out.append(_index(entries))
    out.append(_index([IndexEntry(10, 20, (), 0, 102400, 102400, version=1)]))         # version set, no topics
    e = IndexEntry(1577836800, 1578355200, (TOPIC,), 0, 102400, 102328)
    out.append(codec.encode_index({"0x" + "00" * 32: e, "not hex": e}))                 # keys that are not IDs
    # an entry carrying an unknown field (15, varint: status-go's ID never covers it), and one without metadata
    idx = pb.WakuMessageArchiveIndex()
    idx.archives[e.archive_id].ParseFromString(e.encode() + b"\x78\x05")
    out.append(idx.SerializeToString())
    out.append(b"\x0a\x08\x0a\x02k1\x12\x02\x18\x05")
    return out


def run_index(raw: bytes) -> str:
    entries = codec.decode_index(raw)
    described = described_length(entries)
    outcome = "ok"
    for data_len in (described, None, 0, described + 102400, len(raw) * 102400):
        findings = check_entries(entries, data_len)
        if not all(f.code and f.message for f in findings):
            raise InvariantBroken(f"finding without code or message: {findings}")
        if data_len == described and any(f.severity == "error" for f in findings):
            outcome = "faults"
        plan = plan_reads(entries, data_len or 0)
        end = -1
        for _, e, skip in plan:       # what plan_reads allows to be read lies inside data, once
            if skip is None:
                if e.offset < end or e.offset + e.size > (data_len or 0) or e.padding > e.size:
                    raise InvariantBroken(f"plan_reads allows an unsafe read: {e}")
                end = e.offset + e.size
    for aid, e in entries.items():
        if e.archive_id != dataclasses.replace(e).archive_id:
            raise InvariantBroken(f"cached archive ID {e.archive_id} differs from a fresh encoding's")
    return outcome


# ---------------------------------------------------------------- archive

def _msg(i: int, sig: int = 65, payload: int = 40, third: str = "") -> ArchiveMessage:
    return ArchiveMessage(bytes([4]) * sig, 1577840400 + i, TOPIC, bytes(range(payload % 256)) * (payload // 256 + 1),
                          b"", i.to_bytes(32, "big"), third)


def archive_seeds() -> list[bytes]:
    wire = [ArchiveMessage(b"\x01", 1577840400, TOPIC, b"\x01", b"\x01", b"\x01"),
            ArchiveMessage(b"\x01", 1577844000, TOPIC, b"\x01", b"\x01", b"\x02")]
    return [codec.encode_archive(1577836800, 1578355200, [TOPIC], wire),
            codec.encode_archive(1577836800, 1578355200, TOPICS, [_msg(i) for i in range(12)]),
            codec.encode_archive(1577836800, 1578355200, TOPICS[:1], [_msg(1, 0, 0, "x" * 20), _msg(2, 65, 300)]),
            codec.encode_archive(1577836800, 1578355200, (), [])]


def run_archive(raw: bytes) -> str:
    arch = codec.decode_archive(raw)
    if len(arch.messages) > codec.MAX_ARCHIVE_MESSAGES:
        raise InvariantBroken(f"{len(arch.messages)} messages decoded, over the limit")
    size, pad = codec.padded_size(len(raw))
    e = IndexEntry(arch.start, arch.end, arch.topics, 0, size, pad)
    rep = Report("fuzz")
    verify_archive_bytes("0x" + "11" * 32, e, raw + bytes(pad), rep)
    return "ok" if rep.ok else "faults"


# ---------------------------------------------------------------- torrent

@functools.lru_cache(maxsize=1)
def torrent_seeds() -> list[bytes]:
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d) / CID
        folder.mkdir()
        raw = archive_seeds()[1]
        size, pad = codec.padded_size(len(raw))
        (folder / "data").write_bytes(raw + bytes(pad) + bytes(102400))
        (folder / "index").write_bytes(index_seeds()[1])
        plain = build_metainfo(folder, CID)
        tracked = build_metainfo(folder, CID, ["udp://tracker.opentrackr.org:1337/announce", "http://[::1]:6969/a"])
    meta = fastbencode.bdecode(plain)
    hybrid = dict(meta)
    hybrid[b"info"] = {**meta[b"info"], b"meta version": 2, b"file tree": {b"data": {b"": {b"length": 1}}}}
    single = {b"info": {b"name": CID.encode(), b"piece length": 102400, b"length": 5, b"pieces": bytes(20)}}
    return [plain, tracked, fastbencode.bencode(hybrid), fastbencode.bencode(single)]


def run_torrent(raw: bytes) -> str:
    mi = parse_metainfo(raw)
    if mi.total_length > (1 << 40) or mi.num_pieces != -(-mi.total_length // 102400):
        raise InvariantBroken(f"accepted torrent with {mi.total_length} bytes in {mi.num_pieces} pieces")
    mi.magnet()
    return "ok"


# ---------------------------------------------------------------- magnet links

def magnet_seeds() -> list[str]:
    ih = "06cdef495dc46b0335c90ecd55c877e2bad3706c"
    return [magnet_link(ih, CID),
            magnet_link(ih, CID, ["udp://tracker.opentrackr.org:1337/announce", "udp://x:6969/announce"]),
            magnet_link(ih, CID) + "&x.pe=127.0.0.1:6881&x.pe=[::1]:6881",
            f"magnet:?xt=urn:btih:{ih.upper()}&dn={CID}",
            f"magnet:?xt=urn:btmh:1220{'ab' * 32}&dn={CID}"]


def run_magnet_libtorrent(text: str) -> str:
    from core.torrent.fetch import parse_magnet
    atp, infohash, cid = parse_magnet(text)
    if len(infohash) != 40 or not cid.startswith("0x"):
        raise InvariantBroken(f"accepted {text!r} as {infohash} {cid}")
    return "ok"


def run_magnet_inspector(text: str) -> str:
    from core.torrent.magnet import parse_magnet
    m = parse_magnet(text)   # x.pe peers are parsed here too: must never raise anything but MagnetError
    if len(m.infohash) != 40 or any(not (isinstance(h, str) and 0 < p < 65536) for h, p in m.peers):
        raise InvariantBroken(f"accepted {text!r} as {m}")
    return "ok"


# ---------------------------------------------------------------- archive-link messages (member side)

@functools.lru_cache(maxsize=1)
def _link_world():
    from coincurve import PrivateKey

    from core.node.links import LinkGate
    from core.status import topics
    from core.storage.archive_state import ArchiveStateDB
    key = PrivateKey(codec.keccak256(b"archivist fuzz community key"))
    other = PrivateKey(codec.keccak256(b"archivist fuzz other key"))
    cid = "0x" + key.public_key.format(compressed=True).hex()
    chat = topics.magnetlinks_chat_id(cid)
    kw = {}
    if "now_ms" in inspect.signature(LinkGate).parameters:   # a fixed clock: the same outcomes every run
        kw["now_ms"] = lambda: 1_700_000_000_000
    return key, other, cid, chat, topics.symmetric_key(chat), LinkGate(ArchiveStateDB(":memory:"), cid, **kw)


BODY, APPLICATION, PROTOCOL, PLAINTEXT, ENVELOPE = range(5)
_PAD = bytes(range(7))
_NONCE = bytes(12)


def link_seeds() -> list[tuple[int, bytes]]:
    from core.pb import communities_archive_pb2 as archive_pb
    from core.status import application_metadata as am
    from core.status import payload_v1
    key, other, cid, chat, sym, _ = _link_world()
    link = magnet_link("06cdef495dc46b0335c90ecd55c877e2bad3706c", cid)
    body = archive_pb.CommunityMessageArchiveMagnetlink(clock=1_700_000_000_000, magnet_uri=link).SerializeToString()
    app = am.build_archive_link_application(key, 1_700_000_000_001, link + "&tr=x")
    codex_cid = "zDvZRwzm2mK2rAd4JUMcasfR4G2GxrJUpiFfvrZdgWkaYAdhFRxq"
    proto = am.build_archive_link_message(key, 1_700_000_000_002, codex_cid)
    plain = payload_v1.plaintext(proto, signer=key, padding=_PAD)
    return [(BODY, body), (APPLICATION, app), (APPLICATION, am.build_archive_link_application(other, 5, link)),
            (APPLICATION, am.wrap_application(body, am.CHAT_MESSAGE, key)),
            (PROTOCOL, proto), (PLAINTEXT, plain), (PLAINTEXT, payload_v1.plaintext(proto, padding=_PAD)),
            (ENVELOPE, payload_v1.encrypt(proto, sym, signer=key, padding=_PAD, nonce=_NONCE))]


def link_envelope(layer: int, data: bytes) -> bytes:
    """Rebuild (and sign, with the community key) every layer outside the mutated one."""
    from Crypto.Cipher import AES

    from core.status import application_metadata as am
    from core.status import payload_v1
    from core.status.errors import StatusError
    key, _, _, _, sym, _ = _link_world()
    if layer == ENVELOPE:
        return data
    try:
        if layer == BODY:
            data = am.wrap_application(data, am.COMMUNITY_MESSAGE_ARCHIVE_MAGNETLINK, key)
        if layer <= APPLICATION:
            data = am.wrap_public(data, "fuzz-installation")
        if layer <= PROTOCOL:
            data = payload_v1.plaintext(data, signer=key if data[-1:] != b"\x00" else None, padding=_PAD)
    except (StatusError, ValueError):
        pass   # not buildable (e.g. over the payload-v1 limit): send the bytes as they are
    ct, tag = AES.new(sym, AES.MODE_GCM, nonce=_NONCE).encrypt_and_digest(data)
    return ct + tag + _NONCE


def run_archive_link(item: tuple[int, bytes]) -> str:
    """The gate must decide (accept or reject with a reason) and never raise."""
    *_, chat, _, gate = _link_world()
    d = gate.consider_envelope(link_envelope(*item), chat)
    if d.accepted and (d.message is None or not d.message.link):
        raise InvariantBroken("accepted a link message without a link")
    return d.reason


# ---------------------------------------------------------------- the import's first pass (member side)
# status-payload: core/status/unwrap.py preview_opened (one parse of an archived payload down to its chat message)
# must answer as the three parses do (preview_parsed), and never raise. archive-preview: core/history_import.py
# preview_archives (what the import writes for an archive, its per-message fast path inline) must give the rows of
# decode_archive + preview_parsed. archive-encryption: core/status/archive_encryption.py hash_ratchet_message, whose
# shortcut (may_be_encrypted: the first field, then a probe) must agree with the whole ProtocolMessage parse.

def _payload_seeds() -> list[bytes]:
    from coincurve import PrivateKey

    from core.status.application_metadata import CHAT_MESSAGE, wrap_application, wrap_public
    from core.status.chat_message import encode_chat_message
    key = PrivateKey(codec.keccak256(b"archivist fuzz author"))
    chat = encode_chat_message("gm \u2728 fuzz", "0x02" + "ab" * 32 + "-chan", 7, 1_700_000_000_000)
    app = wrap_application(chat, CHAT_MESSAGE, key)
    return [wrap_public(app, "f0a7c41e-4e2a"), wrap_public(wrap_application(chat, CHAT_MESSAGE, None), "i"),
            wrap_public(wrap_application(b"\x08\x01\x12\x03abc", 43, key), "i"),
            wrap_public(app, "i") + wrap_public(wrap_application(chat[:9], CHAT_MESSAGE, key), ""),
            b"\xb2\x06\x00", b"\xb2\x06\x02\x18\x00"]


def payload_seeds() -> list[bytes]:
    return _payload_seeds()


def run_status_payload(raw: bytes) -> str:
    from core.status.unwrap import preview_opened, preview_parsed
    got, want = preview_opened(raw, b"s"), preview_parsed(raw, b"s")
    if got != want:
        raise InvariantBroken(f"one parse gives {got}, three give {want}")
    (_, chat_id, _, _, kind, _), signed = got
    return "raw" if kind is None else "chat" if chat_id is not None else f"type {kind}"


def preview_seeds() -> list[bytes]:
    ms = [ArchiveMessage(b"\x04" * 65 if i % 2 else b"", 1577840400 + i, TOPIC, p, b"",
                         i.to_bytes(32, "big") if i % 3 else b"") for i, p in enumerate(_payload_seeds() * 2)]
    return [codec.encode_archive(1577836800, 1578355200, [TOPIC], ms),
            codec.encode_archive(1577836800, 1578355200, [TOPIC], ms[:1])]


def run_archive_preview(raw: bytes) -> str:
    from core.history_import import preview_archives
    from core.status.unwrap import preview_parsed
    arch = codec.decode_archive(raw)
    got = preview_archives(CID, [("0xa", raw, arch.start, arch.end)])
    rows, pending = [], []
    for m in arch.messages:
        opened, signed = preview_parsed(m.payload, m.sig)
        h = m.hash or codec.keccak256(m.to_pb().SerializeToString(deterministic=True))
        rows.append((CID, h, m.timestamp, m.topic, *opened, m.payload, "0xa"))
        if signed:
            pending.append(h)
    if got != (rows, pending):
        raise InvariantBroken("preview_archives differs from decode_archive + preview_parsed")
    return "ok" if rows else "empty"


def encryption_seeds() -> list[bytes]:
    from core.status import archive_encryption as ae
    gk = ae.GroupKey(b"\x02" + bytes(32), codec.keccak256(b"fuzz"), 1_700_000_000_000)
    plain = archive_seeds()
    return [*plain[:2], ae.wrap(plain[0], gk, 1), ae.wrap(plain[3], gk, 2, installation_id="")]


def run_archive_encryption(raw: bytes) -> str:
    from core.pb import status_protocol_message_pb2 as proto_pb
    from core.status import archive_encryption as ae
    got = ae.hash_ratchet_message(raw)
    try:
        pm = proto_pb.ProtocolMessage.FromString(raw) if raw else None
    except Exception:  # noqa: BLE001 - the reference: whatever the whole parse does not take is not encrypted
        pm = None
    want = None
    if pm is not None and pm.encrypted_message:
        msg = pm.encrypted_message.get(ae.NO_INSTALLATION_ID) or next(iter(pm.encrypted_message.values()))
        want = msg if msg.HasField("HR_header") and msg.HR_header.group_id else None
    if got != want:
        raise InvariantBroken(f"the encryption check says {got is not None}, the whole parse {want is not None}")
    return "encrypted" if got is not None else "plain"


TARGETS = [
    Target("index", "protobuf", index_seeds, run_index, (ArchiveError,)),
    Target("archive", "protobuf", archive_seeds, run_archive, (ArchiveError,)),
    Target("torrent", "bencode", torrent_seeds, run_torrent, (ArchiveError,)),
    Target("magnet-libtorrent", "text", magnet_seeds, run_magnet_libtorrent, (MagnetError,)),
    Target("magnet-inspector", "text", magnet_seeds, run_magnet_inspector, (MagnetError,)),
    Target("archive-link", "protobuf", link_seeds, run_archive_link, ()),
    Target("status-payload", "protobuf", payload_seeds, run_status_payload, ()),
    Target("archive-preview", "protobuf", preview_seeds, run_archive_preview, (ArchiveError,)),
    Target("archive-encryption", "protobuf", encryption_seeds, run_archive_encryption, ()),
]
