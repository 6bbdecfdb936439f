"""Status share links and public-key forms: what a member pastes to join a community.

Decoded as status-go does (protocol/messenger_share_urls.go, services/utils/utils.go, api/multiformat/utils.go):
- `https://status.app/c/<data>#<key>` (community with data), `https://status.app/c#<key>` (key only),
  `https://status.app/cc/<data or channel UUID>#<key>` (a channel of a community); `/u` links are people.
- `<key>`: multibase base58btc (`z`) of the multicodec varint 0xe7 0x01 (secp256k1-pub) + the 33-byte compressed
  public key: the familiar `zQ3sh…` form. The community ID is `0x` + hex of those 33 bytes.
- `<data>`: base64url (with padding) of a Brotli-compressed `URLData` protobuf (protocol/protobuf/url_data.proto)
  whose `content` is a `Community` or a `Channel` message; status-go reads at most 4096 decompressed bytes.
Brotli comes from the `brotli` package; without it only the key is read and `data_decoded` is False. The protobuf
classes are generated (proto/status_url_data.proto).
"""
from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from core.varint import DecodeError, read_varint

BASE_URL = "https://status.app"
SECP256K1_PUB = 0xE7                 # multicodec secp256k1-pub
MAX_DATA_BYTES = 4096                # status-go decodes into a 4096-byte buffer
MAX_LINK_CHARS = 8192
CHANNEL_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-5][0-9a-f]{3}-[089ab][0-9a-f]{3}-[0-9a-f]{12}\Z")
_HEX = re.compile(r"^0x[0-9a-fA-F]+\Z")


class ShareLinkError(ValueError):
    """A link or key that cannot be used; str() is one sentence for the screen."""


@dataclass(frozen=True)
class CommunityLink:
    community_id: str                        # 0x + 66 hex (compressed public key)
    source: str                              # "community-link" | "channel-link" | "public-key"
    name: str = ""
    description: str = ""
    members: int = 0
    color: str = ""
    tag_indices: tuple[int, ...] = ()
    channel_uuid: str | None = None          # channel links
    channel_name: str = ""
    channel_emoji: str = ""
    shard: tuple[int, int] | None = None     # (cluster, index) when the link carries one
    data_decoded: bool = False               # False: the link had no data part, or Brotli is not installed

    @property
    def channel_chat_id(self) -> str | None:
        return self.community_id + self.channel_uuid if self.channel_uuid else None


# ---------------------------------------------------------------- base58btc and the serialized public key

def b58decode(text: str) -> bytes:
    import base58
    try:
        return base58.b58decode(text)
    except ValueError:
        raise ShareLinkError("the key holds something that is not a base58 character") from None


def b58encode(data: bytes) -> str:
    import base58
    return base58.b58encode(data).decode()


def _on_curve(raw: bytes) -> bytes:
    """The 33-byte compressed form of a secp256k1 public key (compressed or uncompressed input)."""
    from coincurve import PublicKey
    try:
        return PublicKey(raw).format(compressed=True)
    except Exception:  # coincurve raises plain ValueError/Exception for points off the curve
        raise ShareLinkError("the key is not a point on secp256k1") from None


def deserialize_public_key(text: str) -> bytes:
    """`zQ3sh…` -> the 33-byte compressed key. Raises ShareLinkError."""
    if not text.startswith("z"):
        raise ShareLinkError("a Status public key starts with z (base58btc), like zQ3sh…")
    raw = b58decode(text[1:])
    try:
        codec, pos = read_varint(raw, 0)
    except DecodeError:
        raise ShareLinkError("the key is too short") from None
    if codec != SECP256K1_PUB:
        raise ShareLinkError(f"the key is not a secp256k1 key (multicodec 0x{codec:x})")
    key = raw[pos:]
    if len(key) != 33 or key[0] not in (2, 3):
        raise ShareLinkError(f"the key holds {len(key)} bytes, not a 33-byte compressed public key")
    return _on_curve(key)


def serialize_public_key(public_key: bytes) -> str:
    """A compressed or uncompressed public key -> `zQ3sh…` (as status-go's SerializePublicKey)."""
    return "z" + b58encode(bytes([SECP256K1_PUB, 0x01]) + _on_curve(public_key))


def community_id_from_key(text: str) -> str:
    """`0x02…` (66 hex), `0x04…` (130 hex) or `zQ3…` -> community ID `0x` + 66 hex."""
    t = text.strip()
    if t.startswith("z"):
        return "0x" + deserialize_public_key(t).hex()
    if _HEX.match(t) and len(t) in (68, 132):
        return "0x" + _on_curve(bytes.fromhex(t[2:])).hex()
    raise ShareLinkError("a community key is 0x + 66 hex digits or the zQ3… form")


def community_share_link(community_id: str) -> str:
    """The key-only share link of a community (status-go's ShareCommunityURLWithChatKey)."""
    return f"{BASE_URL}/c#{serialize_public_key(bytes.fromhex(community_id[2:]))}"


# ---------------------------------------------------------------- the data part

def _community(c) -> dict:
    return {"name": c.display_name, "description": c.description, "members": c.members_count, "color": c.color,
            "tag_indices": tuple(c.tag_indices)}


def _parse(message, raw: bytes):
    from google.protobuf.message import DecodeError as PbDecodeError
    try:
        message.ParseFromString(raw)
    except (PbDecodeError, RuntimeError, ValueError):
        raise ShareLinkError("the link's data is damaged (it does not decode)") from None
    return message


def decode_data(data: str) -> bytes | None:
    """base64url + Brotli -> URLData bytes; None when Brotli is not installed."""
    try:
        import brotli
    except ImportError:
        return None
    try:
        raw = base64.b64decode(data + "=" * (-len(data) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ShareLinkError("the link's data part is not base64url") from None
    d = brotli.Decompressor()
    try:
        out = d.process(raw, output_buffer_limit=MAX_DATA_BYTES + 1)
    except brotli.error:
        raise ShareLinkError("the link's data part is damaged (not Brotli)") from None
    if len(out) > MAX_DATA_BYTES:
        raise ShareLinkError(f"the link's data is larger than {MAX_DATA_BYTES} bytes")
    if not d.is_finished():
        raise ShareLinkError("the link's data part is cut short")
    return out


def _with_data(cid: str, data: str, source: str) -> CommunityLink:
    from core.pb import status_url_data_pb2 as pb
    url_data = decode_data(data)
    if url_data is None:
        return CommunityLink(cid, source)
    u = _parse(pb.URLData(), url_data)
    shard = (u.shard.cluster, u.shard.index) if u.HasField("shard") else None
    if source == "community-link":
        return CommunityLink(cid, source, shard=shard, data_decoded=True,
                             **_community(_parse(pb.Community(), u.content)))
    ch = _parse(pb.Channel(), u.content)
    if ch.uuid and not CHANNEL_UUID.match(ch.uuid):
        raise ShareLinkError("the channel link's UUID is malformed")
    return CommunityLink(cid, source, shard=shard, data_decoded=True, **_community(ch.community),
                         channel_uuid=ch.uuid or None, channel_name=ch.display_name, channel_emoji=ch.emoji)


# ---------------------------------------------------------------- entry point

def parse(text: str) -> CommunityLink:
    """A share link (`https://status.app/c/…#zQ3…`, `/c#…`, `/cc/…#…`) or a bare public key. Raises
    ShareLinkError with one sentence."""
    t = (text or "").strip()
    if not t:
        raise ShareLinkError("Paste the community's share link or its public key.")
    if len(t) > MAX_LINK_CHARS:
        raise ShareLinkError("That is too long for a Status share link.")
    if not re.match(r"^(https?://)?status\.app/", t):
        if re.match(r"^[a-z][a-z0-9+.-]*://", t, re.I):
            raise ShareLinkError("Not a Status community link (those start with https://status.app/c/).")
        try:
            return CommunityLink(community_id_from_key(t), "public-key")
        except ShareLinkError as e:
            raise ShareLinkError(f"Not a community link or key: {e}.") from None
    path = re.sub(r"^(https?://)?status\.app/", "", t)
    if path.startswith(("u/", "u#")):
        raise ShareLinkError("This links to a person's profile, not to a community.")
    kind = "c" if path.startswith(("c/", "c#")) else "cc" if path.startswith("cc/") else None
    if kind is None:
        raise ShareLinkError("Not a Status community link (those start with https://status.app/c/).")
    body = path[len(kind):]
    data, sep, key = body.lstrip("/").partition("#")
    if not sep or not key:
        raise ShareLinkError("The link has no community key after '#': copy the whole link.")
    try:
        cid = "0x" + deserialize_public_key(key).hex()
    except ShareLinkError as e:
        raise ShareLinkError(f"The key after '#' is not a Status public key: {e}.") from None
    try:
        if kind == "c":
            return _with_data(cid, data, "community-link") if data else CommunityLink(cid, "community-link")
        if not data:
            raise ShareLinkError("The channel link has nothing between /cc/ and '#'.")
        if CHANNEL_UUID.match(data):
            return CommunityLink(cid, "channel-link", channel_uuid=data)
        return _with_data(cid, data, "channel-link")
    except ShareLinkError as e:
        msg = str(e)
        raise ShareLinkError(msg[0].upper() + msg[1:] + ("" if msg.endswith(".") else ".")) from None
