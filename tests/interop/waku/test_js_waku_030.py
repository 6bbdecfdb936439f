"""The 66/WAKU2-METADATA handshake with js-waku @waku/sdk 0.0.30 (npm alias "waku-sdk-030", the last release with
the legacy store): its codec reads `shards` (field 2) one varint per tag, so a packed field 2 gives it the byte
length as a shard (seen: [2] for shards 32 and 64). Ours writes field 2 unpacked, as nwaku does (metadata.py)."""
import pytest

from tests.interop.waku.conftest import JS_DIR, needs_js

pytestmark = [pytest.mark.interop, needs_js,
              pytest.mark.skipif(not (JS_DIR / "node_modules" / "waku-sdk-030").is_dir(),
                                 reason="js-waku 0.0.30 not installed: run `make js-deps`")]


@pytest.mark.parametrize("shards", [(32,), (32, 64, 128, 256)])
def test_js_waku_030_reads_our_metadata(our_node, js_node, shards):
    ours = our_node(store=False, shards=shards)
    js = js_node("handshake030.mjs", peer=ours.ws_addr(), cluster=16, shards=",".join(map(str, shards)))
    ready = js.next("ready")
    got = js.next("metadata")
    assert (got["clusterId"], got["shards"], got["error"]) == (16, list(shards), None)
    assert ready["peerId"] not in ours.node.metadata_rejected   # its request was read as cluster 16 too
