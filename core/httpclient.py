"""The HTTP clients of the Codex API and nwaku's REST API: one TLS context per process.

httpx builds a TLS context for every Client (the CA bundle read and parsed: ~34 ms of CPU here), even when the URL
is plain http:// as a local node's is. A context is only read once it is made, so every client shares one (per
`trust_env`: with it, SSL_CERT_FILE / SSL_CERT_DIR choose the CAs, read when the first such client is made)."""
from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx


@functools.lru_cache(maxsize=2)
def tls_context(trust_env: bool) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=trust_env)


def http_client(*, trust_env: bool = True, **kwargs: Any) -> httpx.Client:
    """httpx.Client(**kwargs) that verifies TLS as httpx does by default, with the process's shared context."""
    return httpx.Client(verify=tls_context(trust_env), trust_env=trust_env, **kwargs)
