"""EIP-778 Ethereum Node Records with the "v4" identity scheme, and the fields Waku puts in them (31/WAKU2-ENR).

A record is RLP([signature, seq, k1, v1, k2, v2, ...]) with the keys sorted and unique, at most 300 bytes; the
signature is a 64-byte r||s secp256k1 signature over keccak256(RLP([seq, k1, v1, ...])) by the key in the
`secp256k1` field (33-byte compressed). Waku fields:
- `waku2`: one byte of capability bits (relay=0, store=1, filter=2, lightpush=3, sync=4);
- `multiaddrs`: addresses ip/tcp cannot express (WebSocket...), each as uint16_be(len) || binary multiaddr,
  without the /p2p part;
- `rs`: relay shards as a list: uint16_be(cluster) || uint8(count) || count * uint16_be(shard);
- `rsv`: relay shards as a bit vector: uint16_be(cluster) || 128 bytes, shard s = bit (s % 8) of byte s // 8
  (nwaku's test vector: 00 49 02 04 00... is cluster 73, shards 1 and 10). nwaku writes `rsv` from 64 shards on.
Every decoding problem raises `EnrError`, whatever the bytes.
"""
from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass
from typing import Iterable, Union

import coincurve
import multiaddr
from coincurve.ecdsa import cdata_to_der, deserialize_compact

from core.archive.codec import keccak256
from core.waku.topics import static_shard_topic

MAX_RECORD_SIZE = 300
CAPABILITIES = ("relay", "store", "filter", "lightpush", "sync")
SHARD_LIST_MAX = 64        # nwaku: from this many shards on, the bit vector form is used
RSV_BYTES = 128            # 1024 shards

Item = Union[bytes, list]  # an RLP item


class EnrError(ValueError):
    """A record (or one of its fields) is malformed, too big, or wrongly signed."""




# --- RLP ---

def rlp_encode(item: Item) -> bytes:
    if isinstance(item, (bytes, bytearray)):
        b = bytes(item)
        if len(b) == 1 and b[0] < 0x80:
            return b
        return _rlp_len(len(b), 0x80) + b
    body = b"".join(rlp_encode(x) for x in item)
    return _rlp_len(len(body), 0xC0) + body


def _rlp_len(n: int, offset: int) -> bytes:
    if n < 56:
        return bytes([offset + n])
    nb = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([offset + 55 + len(nb)]) + nb


def rlp_decode(data: bytes) -> Item:
    item, end = _rlp_item(data, 0)
    if end != len(data):
        raise EnrError(f"RLP: {len(data) - end} trailing bytes")
    return item


def _rlp_item(data: bytes, pos: int) -> tuple[Item, int]:
    if pos >= len(data):
        raise EnrError("RLP: truncated")
    p = data[pos]
    if p < 0x80:
        return data[pos:pos + 1], pos + 1
    is_list = p >= 0xC0
    base = 0xC0 if is_list else 0x80
    if p - base < 56:
        n, start = p - base, pos + 1
    else:
        ll = p - base - 55
        if pos + 1 + ll > len(data) or data[pos + 1] == 0:
            raise EnrError("RLP: bad long length")
        n, start = int.from_bytes(data[pos + 1:pos + 1 + ll], "big"), pos + 1 + ll
        if n < 56:
            raise EnrError("RLP: non-canonical length")
    end = start + n
    if end > len(data):
        raise EnrError("RLP: truncated")
    if not is_list:
        if n == 1 and data[start] < 0x80:
            raise EnrError("RLP: non-canonical single byte")
        return data[start:end], end
    out, q = [], start
    while q < end:
        x, q = _rlp_item(data[:end], q)
        out.append(x)
    return out, end


def _uint(b: Item, name: str) -> int:
    if not isinstance(b, bytes) or (b[:1] == b"\x00") or len(b) > 8:
        raise EnrError(f"{name}: not a canonical integer")
    return int.from_bytes(b, "big")


def _ubytes(n: int) -> bytes:
    return n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""


# --- relay shards and multiaddrs ---

@dataclass(frozen=True)
class RelayShards:
    cluster: int
    shards: tuple[int, ...]

    def topics(self) -> list[str]:
        return [static_shard_topic(self.cluster, s) for s in self.shards]


def encode_rs(cluster: int, shards: Iterable[int]) -> bytes:
    sh = sorted(set(shards))
    if not 0 < len(sh) < 256 or any(not 0 <= s < 0x10000 for s in sh) or not 0 <= cluster < 0x10000:
        raise EnrError("rs: bad cluster or shard list")
    return cluster.to_bytes(2, "big") + bytes([len(sh)]) + b"".join(s.to_bytes(2, "big") for s in sh)


def decode_rs(v: bytes) -> RelayShards:
    if len(v) < 3 or len(v) != 3 + 2 * v[2]:
        raise EnrError(f"rs: {len(v)} bytes do not match the shard count")
    shards = tuple(int.from_bytes(v[3 + 2 * i:5 + 2 * i], "big") for i in range(v[2]))
    return RelayShards(int.from_bytes(v[:2], "big"), shards)


def encode_rsv(cluster: int, shards: Iterable[int]) -> bytes:
    vec = bytearray(RSV_BYTES)
    for s in shards:
        if not 0 <= s < RSV_BYTES * 8:
            raise EnrError(f"rsv: shard {s} out of range")
        vec[s // 8] |= 1 << (s % 8)
    return cluster.to_bytes(2, "big") + bytes(vec)


def decode_rsv(v: bytes) -> RelayShards:
    if len(v) != 2 + RSV_BYTES:
        raise EnrError(f"rsv: {len(v)} bytes, expected {2 + RSV_BYTES}")
    shards = tuple(i * 8 + b for i, byte in enumerate(v[2:]) for b in range(8) if byte >> b & 1)
    return RelayShards(int.from_bytes(v[:2], "big"), shards)


def encode_relay_shards(cluster: int, shards: Iterable[int]) -> tuple[str, bytes]:
    """(field, value) as nwaku picks it: `rs` below 64 shards, else `rsv`."""
    sh = sorted(set(shards))
    return ("rsv", encode_rsv(cluster, sh)) if len(sh) >= SHARD_LIST_MAX else ("rs", encode_rs(cluster, sh))


def encode_multiaddrs(addrs: Iterable[str]) -> bytes:
    out = b""
    for a in addrs:
        b = multiaddr.Multiaddr(a).to_bytes()
        out += len(b).to_bytes(2, "big") + b
    return out


def decode_multiaddrs(v: bytes) -> list[str]:
    out, pos = [], 0
    while pos < len(v):
        if pos + 2 > len(v):
            raise EnrError("multiaddrs: truncated length")
        n = int.from_bytes(v[pos:pos + 2], "big")
        if n == 0 or pos + 2 + n > len(v):
            raise EnrError("multiaddrs: truncated address")
        try:
            out.append(str(multiaddr.Multiaddr(v[pos + 2:pos + 2 + n])))
        except Exception as e:  # noqa: BLE001 - the multiaddr library raises many types
            raise EnrError(f"multiaddrs: {e}") from None
        pos += 2 + n
    return out


# --- the record ---

@dataclass(frozen=True)
class Enr:
    seq: int
    pairs: tuple[tuple[bytes, Item], ...]   # sorted by key
    signature: bytes
    raw: bytes

    def get(self, key: str) -> Item | None:
        k = key.encode()
        return next((v for kk, v in self.pairs if kk == k), None)

    def _bytes(self, key: str) -> bytes | None:
        v = self.get(key)
        if v is not None and not isinstance(v, bytes):
            raise EnrError(f"{key}: a list where bytes were expected")
        return v

    @property
    def public_key(self) -> bytes:
        """33-byte compressed secp256k1 public key."""
        return self._bytes("secp256k1")  # presence checked by decode()

    @property
    def node_id(self) -> bytes:
        return keccak256(coincurve.PublicKey(self.public_key).format(compressed=False)[1:])

    @property
    def ip(self) -> str | None:
        return self._ip("ip", 4)

    @property
    def ip6(self) -> str | None:
        return self._ip("ip6", 16)

    def _ip(self, key: str, size: int) -> str | None:
        v = self._bytes(key)
        if v is None:
            return None
        if len(v) != size:
            raise EnrError(f"{key}: {len(v)} bytes")
        return str(ipaddress.ip_address(v))

    def _port(self, key: str) -> int | None:
        v = self._bytes(key)
        if v is None:
            return None
        p = _uint(v, key)
        if p > 0xFFFF:
            raise EnrError(f"{key}: {p} is not a port")
        return p

    tcp = property(lambda self: self._port("tcp"))
    udp = property(lambda self: self._port("udp"))
    tcp6 = property(lambda self: self._port("tcp6"))
    udp6 = property(lambda self: self._port("udp6"))

    @property
    def waku2(self) -> int | None:
        v = self._bytes("waku2")
        if v is None:
            return None
        if len(v) != 1:
            raise EnrError(f"waku2: {len(v)} bytes")
        return v[0]

    @property
    def capabilities(self) -> frozenset[str]:
        bits = self.waku2 or 0
        return frozenset(name for i, name in enumerate(CAPABILITIES) if bits >> i & 1)

    @property
    def multiaddrs(self) -> list[str]:
        v = self._bytes("multiaddrs")
        return decode_multiaddrs(v) if v is not None else []

    @property
    def relay_shards(self) -> RelayShards | None:
        """From `rs`, else `rsv` (nwaku reads them in this order)."""
        v = self._bytes("rs")
        if v is not None:
            return decode_rs(v)
        v = self._bytes("rsv")
        return decode_rsv(v) if v is not None else None

    @property
    def peer_id(self) -> str:
        """libp2p peer id (`16Uiu2...`) of the record's key."""
        from libp2p.crypto.secp256k1 import Secp256k1PublicKey
        from libp2p.peer.id import ID
        return ID.from_pubkey(Secp256k1PublicKey.from_bytes(self.public_key)).pretty()

    def dial_addrs(self) -> list[str]:
        """Multiaddrs with /p2p/<peer id>: ip+tcp, ip6+tcp6, then the `multiaddrs` field."""
        base = []
        if self.ip is not None and self.tcp:
            base.append(f"/ip4/{self.ip}/tcp/{self.tcp}")
        if self.ip6 is not None and (self.tcp6 or self.tcp):
            base.append(f"/ip6/{self.ip6}/tcp/{self.tcp6 or self.tcp}")
        base += self.multiaddrs
        pid = self.peer_id
        return [a if "/p2p/" in a else f"{a}/p2p/{pid}" for a in base]

    def matches(self, cluster: int, shards: Iterable[int] | None = None) -> bool:
        """True if the record announces `cluster` and (when given) at least one of `shards`."""
        try:
            rs = self.relay_shards
        except EnrError:
            return False
        if rs is None or rs.cluster != cluster:
            return False
        return shards is None or bool(set(rs.shards) & set(shards))

    def to_text(self) -> str:
        return "enr:" + base64.urlsafe_b64encode(self.raw).rstrip(b"=").decode()


def _content(seq: int, pairs) -> list:
    out: list = [_ubytes(seq)]
    for k, v in pairs:
        out += [k, v]
    return out


def verify_signature(pub: bytes, sig: bytes, digest: bytes) -> bool:
    """64-byte r||s over a 32-byte digest; high-s signatures are refused, as go-ethereum does."""
    try:
        der = cdata_to_der(deserialize_compact(sig))
        return coincurve.PublicKey(pub).verify(der, digest, hasher=None)
    except Exception:  # noqa: BLE001 - bad key or signature bytes: not verified
        return False


def decode(raw: bytes) -> Enr:
    """Parse and verify a record (its RLP bytes)."""
    if len(raw) > MAX_RECORD_SIZE:
        raise EnrError(f"record is {len(raw)} bytes (max {MAX_RECORD_SIZE})")
    items = rlp_decode(raw)
    if not isinstance(items, list) or len(items) < 2 or len(items) % 2:
        raise EnrError("record is not a list of signature, seq and key/value pairs")
    sig, seq = items[0], _uint(items[1], "seq")
    if not isinstance(sig, bytes):
        raise EnrError("signature is a list")
    pairs = []
    for i in range(2, len(items), 2):
        k = items[i]
        if not isinstance(k, bytes):
            raise EnrError("a key is a list")
        if pairs and k <= pairs[-1][0]:
            raise EnrError(f"keys not sorted or duplicated at {k!r}")
        pairs.append((k, items[i + 1]))
    rec = Enr(seq, tuple(pairs), sig, bytes(raw))
    if rec.get("id") != b"v4":
        raise EnrError(f"unsupported identity scheme {rec.get('id')!r}")
    pub = rec.get("secp256k1")
    if not isinstance(pub, bytes) or len(pub) != 33:
        raise EnrError("missing or malformed secp256k1 key")
    if len(sig) != 64 or not verify_signature(pub, sig, keccak256(rlp_encode(_content(seq, pairs)))):
        raise EnrError("bad signature")
    return rec


def from_text(text: str) -> Enr:
    """Parse `enr:<base64url>` (padding optional)."""
    if not isinstance(text, str) or not text.startswith("enr:"):
        raise EnrError("text record must start with 'enr:'")
    body = text[4:].strip()
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (ValueError, TypeError) as e:
        raise EnrError(f"bad base64: {e}") from None
    return decode(raw)


def build(private_key: bytes, seq: int = 1, *, ip: str | None = None, tcp: int | None = None,
          udp: int | None = None, waku2: int | None = None, multiaddrs: Iterable[str] = (),
          shards: tuple[int, Iterable[int]] | None = None, extra: dict[str, Item] | None = None) -> Enr:
    """Sign a v4 record with a 32-byte secp256k1 secret. `shards` = (cluster, shard ids)."""
    sk = coincurve.PrivateKey(private_key)
    kv: dict[str, Item] = {"id": b"v4", "secp256k1": sk.public_key.format(compressed=True)}
    if ip is not None:
        kv["ip" if ipaddress.ip_address(ip).version == 4 else "ip6"] = ipaddress.ip_address(ip).packed
    for name, port in (("tcp", tcp), ("udp", udp)):
        if port is not None:
            kv[name] = _ubytes(port)
    if waku2 is not None:
        kv["waku2"] = bytes([waku2])
    ma = list(multiaddrs)
    if ma:
        kv["multiaddrs"] = encode_multiaddrs(ma)
    if shards is not None:
        field, value = encode_relay_shards(*shards)
        kv[field] = value
    kv.update(extra or {})
    pairs = tuple(sorted((k.encode(), v) for k, v in kv.items()))
    sig = sk.sign_recoverable(keccak256(rlp_encode(_content(seq, pairs))), hasher=None)[:64]
    raw = rlp_encode([sig] + _content(seq, pairs))
    if len(raw) > MAX_RECORD_SIZE:
        raise EnrError(f"record is {len(raw)} bytes (max {MAX_RECORD_SIZE})")
    return Enr(seq, pairs, sig, raw)


def capability_bits(*names: str) -> int:
    return sum(1 << CAPABILITIES.index(n) for n in names)
