"""Persisted secp256k1 node identity (peer ids `16Uiu2...`), stored as the hex secret in a 0600 file."""
from __future__ import annotations

from pathlib import Path

from libp2p.crypto.keys import KeyPair
from libp2p.crypto.secp256k1 import create_new_key_pair
from libp2p.peer.id import ID

from core.archive.diskio import write_private_file


def load_or_create_identity(path: str | Path | None) -> KeyPair:
    """Load the key at `path`, or create it (mode 0600, written atomically). None: a fresh ephemeral key."""
    if path is None:
        return create_new_key_pair()
    p = Path(path)
    if p.exists():
        secret = bytes.fromhex(p.read_text().strip())
        if len(secret) != 32:
            raise ValueError(f"{p}: not a 32-byte secp256k1 secret")
        return create_new_key_pair(secret)
    kp = create_new_key_pair()
    write_private_file(p, (kp.private_key.to_bytes().hex() + "\n").encode())
    return kp


def peer_id_of(kp: KeyPair) -> str:
    return ID.from_pubkey(kp.public_key).pretty()
