"""Errors of the archive layer. Each carries a machine-readable `code` and a sentence for people."""


class ArchiveError(Exception):
    """Base class: `code` is stable (used by `archivist verify --json` and the GUI), str() is for people."""

    code = "archive-error"

    def __init__(self, message: str, *, code: str | None = None, archive_id: str | None = None):
        super().__init__(message)
        if code:
            self.code = code
        self.archive_id = archive_id


class DecodeError(ArchiveError):
    code = "decode-error"


class CorruptFolder(ArchiveError):
    code = "corrupt-folder"


class InvalidTorrent(ArchiveError):
    code = "invalid-torrent"
