"""Decoders of outside data survive arbitrary bytes: manifest blocks, Codex indexes, CIDs, manifest JSON."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.archive.errors import ArchiveError
from core.codex import index as cindex
from core.codex.cid import CidError, Cid, parse_cid
from core.codex.manifest import LAYOUT_2025, LAYOUT_2026, Manifest, ManifestError, decode_manifest, manifest_for
from core.codex.manifest import manifest_from_json

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def good_index() -> bytes:
    e = cindex.CodexIndexEntry(10, 20, (b"\x00\x01\x02\x03",), str(manifest_for(b"x").cid()))
    return cindex.encode_index([e])


@FUZZ
@given(st.binary(max_size=400))
def test_manifest_decoder_survives_arbitrary_bytes(raw):
    try:
        m, layout = decode_manifest(raw)
    except ManifestError:
        return
    assert isinstance(m, Manifest) and layout in (LAYOUT_2025, LAYOUT_2026)


@FUZZ
@given(st.data())
def test_manifest_decoder_survives_mutations_of_real_manifests(data):
    raw = bytearray(manifest_for(b"hello" * 50, "f.txt", "text/plain").encode(data.draw(st.sampled_from(
        [LAYOUT_2025, LAYOUT_2026]))))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    try:
        decode_manifest(bytes(raw[:cut]))
    except ManifestError:
        pass


@FUZZ
@given(st.binary(max_size=600))
def test_index_decoder_survives_arbitrary_bytes(raw):
    try:
        entries = cindex.decode_index(raw)
    except ArchiveError as e:
        assert e.code.startswith("index-")
        return
    for p in cindex.check_index(entries):
        assert p.code in {"key-mismatch", "window-inverted", "bad-cid", "duplicate-cid"}


@FUZZ
@given(st.data())
def test_index_decoder_survives_mutations_of_a_real_index(data):
    raw = bytearray(good_index())
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        entries = cindex.decode_index(bytes(raw))
    except ArchiveError:
        return
    cindex.check_index(entries)


@FUZZ
@given(st.text(max_size=80))
def test_cid_parser_survives_arbitrary_text(text):
    try:
        cid = parse_cid(text)
    except CidError:
        return
    assert isinstance(cid, Cid) and len(cid.digest) == 32


@FUZZ
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=60),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(
                        st.sampled_from(["manifest", "treeCid", "datasetSize", "blockSize", "filename"]), c,
                        max_size=5), max_leaves=12))
def test_manifest_json_parser_survives_arbitrary_json(obj):
    try:
        manifest_from_json(obj)
    except ManifestError:
        pass


@FUZZ
@given(st.sampled_from([200, 204, 400, 404, 413, 422, 500, 503]), st.binary(max_size=300),
       st.sampled_from(["upload", "exists", "space", "manifest", "fetch", "debug_info", "download", "delete"]))
def test_client_survives_arbitrary_responses(status, body, call):
    """Whatever a node (or a proxy in front of it) answers, the client returns or raises a CodexError."""
    import httpx

    from core.codex.client import CodexClient
    from core.codex.errors import CodexError
    cid = str(manifest_for(b"x").cid())
    c = CodexClient("http://node/api/codex/v1",
                    transport=httpx.MockTransport(lambda r: httpx.Response(status, stream=httpx.ByteStream(body))))
    args = (b"data",) if call == "upload" else () if call in ("space", "debug_info") else (cid,)
    try:
        getattr(c, call)(*args)
    except CodexError:
        pass
    finally:
        c.close()
