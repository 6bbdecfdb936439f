"""Waku for Archivist: 14/WAKU2-MESSAGE, relay, store v2-beta4/v3, metadata, lightpush on py-libp2p, and an
nwaku REST backend. See docs/WAKU-NODE.md. Import submodules directly (this package imports nothing heavy)."""
