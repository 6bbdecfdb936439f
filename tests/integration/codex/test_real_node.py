"""The same client and backend against a real Codex / Logos Storage node: set CODEX_API_URL to its base URL
(e.g. http://127.0.0.1:8080/api/codex/v1). Skipped otherwise. Uploads are random bytes, deleted afterwards."""
import os
import secrets

import httpx
import pytest

from core.codex.backend import CodexMember, CodexOwner
from core.codex.client import CodexClient
from core.codex.errors import CodexNotFound
from core.codex.manifest import manifest_cid
from core.torrent.selection import Selection
from tests.support.codex_node import NOT_FOUND_BODY

API = os.environ.get("CODEX_API_URL")
pytestmark = pytest.mark.skipif(not API, reason="set CODEX_API_URL to run against a real Codex node")


@pytest.fixture
def real():
    c = CodexClient(API, read_timeout=30, download_deadline=120)
    uploaded = []
    yield c, uploaded
    for cid in uploaded:
        try:
            c.delete(cid)
        except Exception:  # noqa: BLE001
            pass
    c.close()


def test_cids_match_our_computation(real):
    c, uploaded = real
    for data in (b"Hello World!", secrets.token_bytes(200_000)):
        cid = c.upload(data)
        uploaded.append(cid)
        assert cid == str(manifest_cid(data))
        assert c.exists(cid) is True
        assert c.download(cid) == data
        m = c.manifest(cid)
        assert m.dataset_size == len(data) and m.filename is None


def test_documented_quirks(real):
    c, _ = real
    unknown = str(manifest_cid(secrets.token_bytes(64)))
    r = httpx.get(f"{API}/data/{unknown}", timeout=10)
    assert r.status_code == 404 and r.content == NOT_FOUND_BODY
    with pytest.raises(CodexNotFound):
        c.download(unknown)
    assert c.exists(unknown) is False
    assert httpx.post(f"{API}/data", content=b"", timeout=10).status_code == 500
    assert httpx.delete(f"{API}/data/{unknown}", timeout=10).status_code == 204
    assert c.space().quota_max_bytes > 0 and c.debug_info().get("id")


def test_publish_and_fetch_latest(tmp_path, real):
    from core.archive.codec import ArchiveMessage, encode_archive
    c, uploaded = real
    owner = CodexOwner(c, tmp_path, "0x02" + secrets.token_hex(32))
    topic = secrets.token_bytes(4)
    archives = []
    for i in range(2):
        lo, hi = 1_700_000_000 + i * 604800, 1_700_000_000 + (i + 1) * 604800
        msgs = [ArchiveMessage(b"\x04" * 65, lo + k, topic, secrets.token_bytes(200), b"", secrets.token_bytes(32))
                for k in range(10)]
        archives.append((lo, hi, [topic], encode_archive(lo, hi, [topic], msgs)))
    pub = owner.publish_archives(archives, 20)
    uploaded.extend(owner.live_cids())
    res = CodexMember(c, network=False).sync(pub.index_cid, selection=Selection("latest"))
    assert res.ok and len(res.messages()) == 10
