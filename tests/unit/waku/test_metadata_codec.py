"""66/WAKU2-METADATA bytes as nwaku writes and reads them (waku/waku_metadata/rpc_codec.nim): shards unpacked in
field 2 (what js-waku 0.0.30 can read) and packed in field 3; field 3 wins on decode, else field 2 in either form.
The expected bytes are written out by hand from the protobuf wire format."""
import pytest

from core.waku.metadata import decode_metadata, encode_metadata


def test_encoding_is_nwakus_byte_for_byte():
    # 08 10: cluster_id 16 | 10 20, 10 40: field 2 varints 32, 64 one by one | 1a 02 20 40: field 3 packed [32, 64]
    assert encode_metadata(16, [32, 64]).hex() == "0810" "1020" "1040" "1a022040"
    assert encode_metadata(16, []).hex() == "0810"


@pytest.mark.parametrize("hexbytes, expected", [
    ("0810" "1020" "1040" "1a022040", (16, [32, 64])),     # nwaku today
    ("0810" "1a022040", (16, [32, 64])),                   # packed field 3 only
    ("0810" "12022040", (16, [32, 64])),                   # field 2 packed (proto3 default; our old encoding)
    ("0810" "1020" "1040", (16, [32, 64])),                # field 2 unpacked (older nwaku, js-waku)
    ("0810" "1001" "1a0102", (16, [2])),                   # both present and different: field 3 wins, as nwaku
    ("", (None, [])),                                      # no cluster id: tolerated (cluster_matches)
])
def test_decoding_reads_every_form_nwaku_reads(hexbytes, expected):
    assert decode_metadata(bytes.fromhex(hexbytes)) == expected
