"""Errors of the Codex backend. Each has a stable `code` (for the GUI and `--json`) and a sentence for people."""
from __future__ import annotations


class CodexError(Exception):
    code = "codex-error"
    user_message = "The Codex node reported an error."

    def __init__(self, message: str | None = None, *, cid: str | None = None, status: int | None = None):
        super().__init__(message or self.user_message)
        self.cid = cid
        self.status = status

    def to_json(self) -> dict:
        return {"code": self.code, "message": str(self), "cid": self.cid, "status": self.status}


class CodexUnreachable(CodexError):
    code = "codex-unreachable"
    user_message = "The Codex node cannot be reached (is it running, and is the API URL right?)."


class CodexTimeout(CodexError):
    code = "codex-timeout"
    user_message = "The Codex node did not answer in time (the content may have no reachable provider)."


class CodexNotFound(CodexError):
    code = "codex-not-found"
    user_message = "The Codex node does not have this content."


class CodexTruncated(CodexError):
    code = "codex-truncated"
    user_message = "The download from the Codex node ended before all bytes arrived."


class CodexQuotaExceeded(CodexError):
    code = "codex-quota-exceeded"
    user_message = "The Codex node's storage quota is exhausted."


class CodexBadResponse(CodexError):
    code = "codex-bad-response"
    user_message = "The Codex node sent an answer that does not make sense."


class CodexVerifyError(CodexError):
    """Content fetched by CID does not hash to that CID, or an index/archive does not decode or check out."""

    code = "codex-verify-failed"
    user_message = "Content from Codex failed verification."
