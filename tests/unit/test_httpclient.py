"""core.httpclient: the REST clients share one TLS context per process, one that verifies as httpx's own."""
from __future__ import annotations

import ssl

import pytest

from core import httpclient
from core.codex.client import CodexClient
from core.waku.nwaku_rest import NwakuRestBackend


@pytest.fixture
def made(monkeypatch):
    """Counts the TLS contexts made (ssl.create_default_context) from an empty cache on."""
    count = []
    real = ssl.create_default_context

    def counting(*a, **kw):
        count.append(kw)
        return real(*a, **kw)
    monkeypatch.setattr(ssl, "create_default_context", counting)
    httpclient.tls_context.cache_clear()
    yield count
    httpclient.tls_context.cache_clear()


def test_every_client_shares_one_context_per_trust_env(made):
    clients = [CodexClient(None), CodexClient("http://127.0.0.1:1/api/storage/v1"), NwakuRestBackend(),
               NwakuRestBackend("http://127.0.0.1:2")]
    try:
        assert len(made) == 2       # one for the Codex clients (trust_env=False), one for nwaku's (trust_env=True)
    finally:
        for c in clients[:2]:
            c.close()
        for c in clients[2:]:
            c.http.close()
    CodexClient(None).close()
    assert len(made) == 2


def test_the_shared_context_verifies_like_httpx(made):
    for trust_env in (False, True):
        ctx = httpclient.tls_context(trust_env)
        assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname is True
        assert ctx.cert_store_stats()["x509_ca"] > 0            # the CA bundle is loaded
        assert httpclient.tls_context(trust_env) is ctx


def test_trust_env_reads_ssl_cert_file_and_codex_does_not(made, monkeypatch, tmp_path):
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(FileNotFoundError):
        httpclient.http_client(trust_env=True)                    # httpx's own rule: the named CA file is read
    CodexClient(None).close()                                      # trust_env=False: the variable is not read
    assert made[-1].get("cafile") != str(tmp_path / "missing.pem")

