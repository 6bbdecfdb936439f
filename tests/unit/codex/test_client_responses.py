"""The client against odd answers (httpx.MockTransport stands in for a misbehaving node: no network here)."""
import httpx
import pytest

from core.codex.client import CodexClient
from core.codex.errors import (CodexBadResponse, CodexError, CodexNotFound, CodexQuotaExceeded, CodexTimeout,
                               CodexUnreachable)
from core.codex.manifest import manifest_cid

CID = str(manifest_cid(b"Hello World!"))


def client(handler, base="http://node/api/storage/v1"):
    return CodexClient(base, transport=httpx.MockTransport(handler))


def test_base_url_is_configurable_and_upload_has_no_metadata():
    seen = []

    def h(req):
        seen.append(req)
        return httpx.Response(200, text=CID + "\n")
    assert client(h).upload(b"Hello World!") == CID
    req = seen[0]
    assert str(req.url) == "http://node/api/storage/v1/data"
    assert "content-type" not in req.headers and "content-disposition" not in req.headers
    assert req.content == b"Hello World!"
    with pytest.raises(ValueError):
        client(h).upload(b"")


def test_upload_answer_not_a_cid():
    with pytest.raises(CodexBadResponse):
        client(lambda r: httpx.Response(200, text="<html>proxy</html>")).upload(b"x")


@pytest.mark.parametrize("body,expected", [({CID: True}, True), ({CID: False}, False), ({"has": True}, True)])
def test_exists_shapes(body, expected):
    assert client(lambda r: httpx.Response(200, json=body)).exists(CID) is expected


@pytest.mark.parametrize("resp", [httpx.Response(200, text="yes"), httpx.Response(200, json=[1]),
                                  httpx.Response(200, json={"other": True})])
def test_exists_nonsense(resp):
    with pytest.raises(CodexBadResponse):
        client(lambda r: resp).exists(CID)


def test_status_mapping():
    with pytest.raises(CodexQuotaExceeded):
        client(lambda r: httpx.Response(413, text="too big")).upload(b"x")
    with pytest.raises(CodexQuotaExceeded):
        client(lambda r: httpx.Response(500, text="Quota usage would exceed the limit")).upload(b"x")
    with pytest.raises(CodexNotFound):
        client(lambda r: httpx.Response(404, text="nope")).manifest(CID)
    with pytest.raises(CodexError) as ei:
        client(lambda r: httpx.Response(500, text="Data set is empty")).upload(b"x")
    assert type(ei.value) is CodexError and ei.value.status == 500


def test_transport_errors():
    def timeout(r):
        raise httpx.ReadTimeout("slow", request=r)

    def refused(r):
        raise httpx.ConnectError("refused", request=r)
    with pytest.raises(CodexTimeout):
        client(timeout).space()
    with pytest.raises(CodexUnreachable):
        client(refused).space()
    with pytest.raises(CodexUnreachable):
        client(refused).download(CID)


def test_space_and_manifest_parsing():
    sp = client(lambda r: httpx.Response(200, json={"totalBlocks": 2, "quotaMaxBytes": 100, "quotaUsedBytes": 30,
                                                    "quotaReservedBytes": 10})).space()
    assert sp.available == 60
    with pytest.raises(CodexBadResponse):
        client(lambda r: httpx.Response(200, json={"totalBlocks": "x"})).space()
    with pytest.raises(CodexBadResponse):
        client(lambda r: httpx.Response(200, json={"cid": CID, "manifest": {"treeCid": 5}})).manifest(CID)


def test_download_refuses_oversize_and_bad_cid():
    big = client(lambda r: httpx.Response(200, content=b"x" * 100))
    with pytest.raises(CodexBadResponse):
        big.download(CID, max_bytes=50)
    with pytest.raises(CodexError):
        big.download("not-a-cid")


def test_download_asks_for_identity_encoding_and_checks_length():
    seen = []

    def h(req):
        seen.append(req)
        return httpx.Response(200, headers={"Content-Length": "3"}, stream=httpx.ByteStream(b"abc"))
    assert client(h).download(CID) == b"abc"
    assert seen[0].headers["accept-encoding"] == "identity"
    assert str(seen[0].url).endswith(f"/data/{CID}")
    client(h).download(CID, network=True)
    assert str(seen[1].url).endswith(f"/data/{CID}/network/stream")
