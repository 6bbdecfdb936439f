"""The type-43 archive-link message, read by an independent protobuf decoder (protoc's C++ parser), both with
our schema and schema-less (--decode_raw, which checks status-go's field numbers without our .proto files)."""
import subprocess
import sys
from pathlib import Path

import pytest

from core.archive.codec import keccak256
from core.pb import status_protocol_message_pb2 as proto_pb
from core.status import application_metadata as am

ROOT = Path(__file__).resolve().parents[3]
MAGNET = ("magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567&dn=0x02aa"
          "&tr=udp%3A%2F%2Ftracker.opentrackr.org%3A1337%2Fannounce")
CLOCK = 1_700_000_000_123

pytestmark = pytest.mark.interop


def protoc(args: list[str], raw: bytes) -> str:
    out = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", *args, f"-I{ROOT / 'proto'}"],
                         input=raw, capture_output=True, check=True, cwd=ROOT, timeout=60)
    return out.stdout.decode()


def test_magnet_message_decoded_by_protoc(community):
    pm_raw = am.build_archive_link_message(community.private_key, CLOCK, MAGNET, installation_id="archivist-1")
    app_raw = proto_pb.ProtocolMessage.FromString(pm_raw).public_message

    text = protoc(["--decode=encryption.ProtocolMessage", "status_protocol_message.proto"], pm_raw)
    assert 'installation_id: "archivist-1"' in text and "public_message:" in text

    text = protoc(["--decode=protobuf.ApplicationMetadataMessage", "status_application_metadata.proto"], app_raw)
    assert "type: COMMUNITY_MESSAGE_ARCHIVE_MAGNETLINK" in text
    sig = community.sign(am.parse_application(app_raw).payload)
    assert "signature: " in text

    raw = protoc(["--decode_raw"], app_raw)            # schema-less: status-go's field numbers
    assert "3: 43" in raw.splitlines()
    payload = am.parse_application(app_raw).payload
    body = protoc(["--decode=protobuf.CommunityMessageArchiveMagnetlink", "communities_archive.proto"], payload)
    assert f"clock: {CLOCK}" in body and f'magnet_uri: "{MAGNET}"' in body
    body_raw = protoc(["--decode_raw"], payload).splitlines()
    assert f"1: {CLOCK}" in body_raw and f'2: "{MAGNET}"' in body_raw
    # ProtocolMessage field numbers: 2 = installation_id, 102 = public_message
    pm_fields = protoc(["--decode_raw"], pm_raw).splitlines()
    assert '2: "archivist-1"' in pm_fields and any(line.startswith("102 {") or line.startswith("102: ")
                                                    for line in pm_fields)
    # signature = 65 bytes over keccak256(payload), by the community key, V in {0,1}
    app = am.parse_application(app_raw)
    assert app.signature == sig and len(sig) == 65 and sig[64] in (0, 1)
    assert app.signer == community.public_key


def test_encrypted_archive_fails_a_plain_decode_in_protoc_too(community):
    """status-go decrypts an archive only after a plain WakuMessageArchive decode fails: a second protobuf
    implementation (protoc, C++) must also fail on our encrypted archives, and read their HR header."""
    from core.status import archive_encryption as ae
    from core.status.identity import community_id_bytes
    gk = ae.GroupKey(community_id_bytes(community.community_id), keccak256(b"gk"), 1_700_000_000_000)
    enc = ae.wrap(b"\x12\x00" + b"archive bytes" * 10, gk, 4)
    with pytest.raises(subprocess.CalledProcessError):
        protoc(["--decode=protobuf.WakuMessageArchive", "communities_archive.proto"], enc)
    text = protoc(["--decode=encryption.ProtocolMessage", "status_protocol_message.proto"], enc)
    assert 'key: "none"' in text and "seq_no: 4" in text and "HR_header {" in text


def test_encrypted_index_plain_decodes_to_zero_entries_in_protoc(community):
    """status-go's index reader needs the opposite: the plain decode succeeds with zero entries, then it decrypts."""
    from core.archive import codec
    from core.archive.codec import IndexEntry
    from core.status import archive_encryption as ae
    from core.status.identity import community_id_bytes
    gk = ae.GroupKey(community_id_bytes(community.community_id), keccak256(b"gk"), 1_700_000_000_000)
    index = codec.encode_index({"0x" + "ab" * 32: IndexEntry(1, 2, (b"abcd",), 0, 102400, 10)})
    text = protoc(["--decode=protobuf.WakuMessageArchiveIndex", "communities_archive.proto"], ae.wrap(index, gk, 1))
    assert "archives" not in text
