"""Codex (Logos Storage) as the archive transport: REST client, CIDs, owner and member backends."""

DEFAULT_API = "http://127.0.0.1:8080/api/codex/v1"   # a local node's REST address: used when none is configured
