"""Community identity: secp256k1 keys, community ID, recoverable signatures, key files.

status-go facts: community ID = "0x" + hex of the 33-byte compressed public key; signatures are go-ethereum's
`crypto.Sign` output, 65 bytes [R || S || V] with V in {0, 1} (not 27/28) over a 32-byte Keccak-256 digest;
public keys in Waku messages are 65-byte uncompressed (0x04 || X || Y).
"""
from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from coincurve import PrivateKey, PublicKey
from Crypto.Cipher import AES
from Crypto.Protocol.KDF import scrypt

from core.archive.codec import keccak256
from core.archive.diskio import write_private_file  # noqa: F401 - key files, and core.status's other secrets
from core.hextext import from_hex
from core.status.errors import KeyFileError, SignatureError

KEY_FILE_TYPE = "archivist-community-key"
KEY_FILE_VERSION = 1
SCRYPT_N = 2 ** 17       # ~0.3 s on this machine: a deliberate cost for guessing passphrases
SCRYPT_R = 8
SCRYPT_P = 1
# What a key file may ask of scrypt: 256 MiB (128·N·r bytes) and N·r·p <= 2^22 (~2 s here). Ours ask 128 MiB
# and 2^20, geth's standard keystore 256 MiB and 2^21; the old bounds alone let a file ask for 16 GiB and ~9 minutes.
SCRYPT_MAX_MEMORY = 256 * 1024 * 1024
SCRYPT_MAX_WORK = 2 ** 22


# ---------------------------------------------------------------- signatures

def sign_digest(key: PrivateKey, digest: bytes) -> bytes:
    """65-byte recoverable signature [R||S||V] (V = recovery id 0/1) of a 32-byte digest, as go-ethereum signs."""
    if len(digest) != 32:
        raise SignatureError(f"digest must be 32 bytes, got {len(digest)}")
    return key.sign_recoverable(digest, hasher=None)


def recover_digest(digest: bytes, signature: bytes) -> bytes:
    """The 65-byte uncompressed public key that made `signature` over `digest`. Raises SignatureError.

    Like go-ethereum's SigToPub, V must be 0..3 (27/28 are refused).
    """
    if len(digest) != 32:
        raise SignatureError(f"digest must be 32 bytes, got {len(digest)}")
    if len(signature) != 65:
        raise SignatureError(f"signature must be 65 bytes [R||S||V], got {len(signature)}")
    if signature[64] > 3:
        raise SignatureError(f"signature recovery id V={signature[64]} is not 0..3")
    try:
        return PublicKey.from_signature_and_message(bytes(signature), digest, hasher=None).format(compressed=False)
    except Exception as e:  # coincurve raises plain Exception/ValueError for invalid signatures
        raise SignatureError(f"signature does not recover a public key: {e}") from None


def sign_keccak(key: PrivateKey, data: bytes) -> bytes:
    return sign_digest(key, keccak256(data))


def recover_keccak(data: bytes, signature: bytes) -> bytes:
    return recover_digest(keccak256(data), signature)


def uncompressed(public_key: bytes | PublicKey) -> bytes:
    pk = public_key if isinstance(public_key, PublicKey) else PublicKey(bytes(public_key))
    return pk.format(compressed=False)


def compressed(public_key: bytes | PublicKey) -> bytes:
    pk = public_key if isinstance(public_key, PublicKey) else PublicKey(bytes(public_key))
    return pk.format(compressed=True)


# ---------------------------------------------------------------- community identity

def community_id_of(public_key: bytes | PublicKey) -> str:
    return "0x" + compressed(public_key).hex()


def community_id_bytes(community_id: str) -> bytes:
    """The 33 raw bytes of a community ID (also the hash-ratchet group ID). Raises ValueError."""
    try:
        raw = from_hex(community_id)
    except ValueError:
        raise ValueError(f"community ID {community_id!r} is not hex") from None
    if len(raw) != 33 or raw[0] not in (2, 3):
        raise ValueError("community ID must be 0x + 66 hex digits (a compressed secp256k1 public key)")
    return raw


def community_public_key(community_id: str) -> bytes:
    """65-byte uncompressed public key of a community (what a recovered signer is compared with)."""
    try:
        return uncompressed(community_id_bytes(community_id))
    except ValueError:
        raise
    except Exception as e:
        raise ValueError(f"community ID is not a point on secp256k1: {e}") from None


@dataclass(frozen=True)
class CommunityIdentity:
    """A community's key pair (the control node's identity)."""

    private_key: PrivateKey

    @classmethod
    def generate(cls) -> "CommunityIdentity":
        return cls(PrivateKey(secrets.token_bytes(32)))

    @classmethod
    def from_secret(cls, secret: bytes) -> "CommunityIdentity":
        if len(secret) != 32:
            raise KeyFileError(f"a secp256k1 private key is 32 bytes, got {len(secret)}")
        try:
            return cls(PrivateKey(bytes(secret)))
        except ValueError as e:
            raise KeyFileError(f"not a valid secp256k1 private key: {e}") from None

    @classmethod
    def from_hex(cls, text: str) -> "CommunityIdentity":
        """Import from hex (as status-go exports a community private key: 64 hex digits, optional 0x)."""
        try:
            raw = from_hex(text.strip())
        except ValueError:
            raise KeyFileError("private key is not hex") from None
        return cls.from_secret(raw)

    def export_hex(self) -> str:
        return "0x" + self.private_key.secret.hex()

    @property
    def public_key(self) -> bytes:
        """65-byte uncompressed public key."""
        return self.private_key.public_key.format(compressed=False)

    @property
    def community_id(self) -> str:
        return community_id_of(self.private_key.public_key)

    def sign(self, data: bytes) -> bytes:
        """Recoverable signature over keccak256(data)."""
        return sign_keccak(self.private_key, data)

    # ------------------------------------------------------------ key files

    def to_file_json(self, passphrase: str | None = None, *, scrypt_n: int = SCRYPT_N) -> dict:
        doc: dict = {"type": KEY_FILE_TYPE, "version": KEY_FILE_VERSION, "community_id": self.community_id}
        if passphrase is None:
            doc["private_key"] = self.private_key.secret.hex()
            return doc
        salt = secrets.token_bytes(16)
        key = scrypt(passphrase.encode(), salt, 32, N=scrypt_n, r=SCRYPT_R, p=SCRYPT_P)
        nonce = secrets.token_bytes(12)
        cipher = AES.new(key, AES.MODE_GCM, nonce=nonce)
        cipher.update(self.community_id.encode())           # binds the ciphertext to its community ID
        ct, tag = cipher.encrypt_and_digest(self.private_key.secret)
        doc["encryption"] = {"kdf": "scrypt", "n": scrypt_n, "r": SCRYPT_R, "p": SCRYPT_P, "salt": salt.hex(),
                             "cipher": "aes-256-gcm", "nonce": nonce.hex(), "ciphertext": ct.hex(), "tag": tag.hex()}
        return doc

    @classmethod
    def from_file_json(cls, doc: dict, passphrase: str | None = None) -> "CommunityIdentity":
        if not isinstance(doc, dict) or doc.get("type") != KEY_FILE_TYPE:
            raise KeyFileError("not an Archivist community key file")
        if doc.get("version") != KEY_FILE_VERSION:
            raise KeyFileError(f"unsupported key file version {doc.get('version')!r}")
        try:
            if "encryption" in doc:
                enc = doc["encryption"]
                if not isinstance(enc, dict):
                    raise KeyFileError("key file 'encryption' is not an object")
                if enc.get("kdf") != "scrypt" or enc.get("cipher") != "aes-256-gcm":
                    raise KeyFileError("unsupported key file encryption")
                if passphrase is None:
                    raise KeyFileError("key file is passphrase-protected: a passphrase is needed", code="passphrase")
                n, r, p = int(enc["n"]), int(enc["r"]), int(enc["p"])
                if not (2 <= n <= 2 ** 22 and n & (n - 1) == 0 and 1 <= r <= 32 and 1 <= p <= 16
                        and 128 * n * r <= SCRYPT_MAX_MEMORY and n * r * p <= SCRYPT_MAX_WORK):
                    raise KeyFileError("key file scrypt parameters are out of range")
                key = scrypt(passphrase.encode(), bytes.fromhex(enc["salt"]), 32, N=n, r=r, p=p)
                cipher = AES.new(key, AES.MODE_GCM, nonce=bytes.fromhex(enc["nonce"]))
                cipher.update(str(doc.get("community_id", "")).encode())
                try:
                    secret = cipher.decrypt_and_verify(bytes.fromhex(enc["ciphertext"]), bytes.fromhex(enc["tag"]))
                except ValueError:
                    raise KeyFileError("wrong passphrase (or the key file was changed)", code="passphrase") from None
            else:
                secret = bytes.fromhex(doc["private_key"])
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
            if isinstance(e, KeyFileError):
                raise
            raise KeyFileError(f"key file is malformed: {e}") from None
        ident = cls.from_secret(secret)
        if doc.get("community_id") and str(doc["community_id"]).lower() != ident.community_id:
            raise KeyFileError("key file's community_id does not match its key")
        return ident

    def save(self, path: Path | str, passphrase: str | None = None, *, scrypt_n: int = SCRYPT_N) -> Path:
        """Write a key file with mode 0600, atomically."""
        data = json.dumps(self.to_file_json(passphrase, scrypt_n=scrypt_n), indent=2).encode() + b"\n"
        return write_private_file(path, data)

    @classmethod
    def load(cls, path: Path | str, passphrase: str | None = None) -> "CommunityIdentity":
        path = Path(path)
        try:
            doc = json.loads(path.read_bytes())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise KeyFileError(f"{path}: not JSON: {e}") from None
        return cls.from_file_json(doc, passphrase)


def key_file_is_private(path: Path | str) -> bool:
    """True when no one but the owner can read or write the key file (POSIX mode bits)."""
    return os.name != "posix" or (os.stat(path).st_mode & 0o077) == 0
