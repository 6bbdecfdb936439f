"""Errors of the Status layer. Each has a stable machine-readable `code`; str() is a sentence for people."""
from __future__ import annotations

from core.archive.errors import ArchiveError


class StatusError(ValueError):
    """Bad Status-layer input (keys, envelopes, signatures, protobufs)."""

    code = "status-error"

    def __init__(self, message: str, *, code: str | None = None):
        super().__init__(message)
        if code:
            self.code = code


class KeyFileError(StatusError):
    code = "key-file"


class PayloadError(StatusError):
    """A Waku payload-v1 envelope that cannot be opened (wrong key, truncated, garbled, bad signature)."""

    code = "payload-v1"


class SignatureError(StatusError):
    code = "bad-signature"


class MessageDecodeError(StatusError):
    code = "message-undecodable"


class EncryptionError(ArchiveError):
    """Hash-ratchet encrypted archive or index problems (an ArchiveError, so archive tools report it)."""

    code = "encryption-error"


class KeyMissing(EncryptionError):
    """A terminal state, not a transient failure: we do not hold the group key this content was encrypted with.

    Callers must show it and stop (never retry in a loop); it clears only when a key is added to the store.
    """

    code = "key-missing"

    def __init__(self, message: str, *, group_id: bytes = b"", key_id: bytes = b"", archive_id: str | None = None):
        super().__init__(message, archive_id=archive_id)
        self.group_id = group_id
        self.key_id = key_id


class TamperedContent(EncryptionError):
    """The key is known but authentication (AES-GCM tag) failed: the bytes were changed."""

    code = "tampered"
