"""Encrypted communities in the member's view: add the community's group key (pasted HEX[@TIMESTAMP_MS] or read
from a file) and see which archives wait for it. The key is checked here first (a bad one gets a plain sentence
under the field and nothing is stored); a good one goes to Engine.add_group_key, which writes the data folder's
group-keys.json (the file `archivist key group add` writes) and resumes the parked archives."""
from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QFileDialog, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout,
                               QWidget)

from core.node.state import CommunityState
from core.hextext import strip_0x
from gui.models import short_archive_id

MAX_KEY_FILE = 64 * 1024


class KeyTextError(ValueError):
    """The text is not a group key; the message is the sentence shown under the field."""


def key_text_from_file(path: Path | str) -> str:
    """HEX[@TIMESTAMP_MS] from a key file: a line of text (comments with #), or the JSON of one key
    ({"key": HEX, "timestamp": MS}, as the group-key store holds it)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_KEY_FILE:
            raise KeyTextError(f"{p.name} is too large to be a key file")
        raw = p.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise KeyTextError(f"{p.name} cannot be read: {e}") from None
    if raw.startswith("{"):
        try:
            doc = json.loads(raw)
            return f"{doc['key']}@{int(doc['timestamp'])}" if doc.get("timestamp") else str(doc["key"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise KeyTextError(f"{p.name} is JSON but holds no group key (\"key\" and \"timestamp\")") from None
    lines = [x.strip() for x in raw.splitlines() if x.strip() and not x.strip().startswith("#")]
    if len(lines) != 1:
        raise KeyTextError(f"{p.name} should hold one key (HEX or HEX@TIMESTAMP_MS), found {len(lines)} lines")
    return lines[0]


def check_key(text: str, community_id: str):
    """The GroupKey of `text` for this community, or KeyTextError with a plain sentence."""
    from core.status.archive_encryption import is_key_timestamp, parse_cli_key
    from core.status.errors import EncryptionError
    t = text.strip()
    if not t:
        raise KeyTextError("Paste the community's key (64 hex digits, optionally @ and its timestamp in ms).")
    hex_part, _, ts = t.partition("@")
    digits = strip_0x(hex_part)
    if any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise KeyTextError("That is not a key: a key is 64 hex digits (0-9, a-f).")
    if len(digits) != 64:
        raise KeyTextError(f"That key has {len(digits)} hex digits; a community key has 64.")
    if ts and not is_key_timestamp(ts):
        raise KeyTextError("After @ comes the key's timestamp in milliseconds (digits only).")
    try:
        return parse_cli_key(t, community_id)
    except EncryptionError as e:
        raise KeyTextError(f"That key cannot be used: {e}") from None


class GroupKeyBox(QGroupBox):
    """The community's key: a field, "Choose file…", "Add key", the error under the field, and the archives
    waiting for the key with their reason."""
    key_submitted = Signal(str, str)        # community ID, "HEX[@TIMESTAMP_MS]" (already checked)

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Community key (encrypted community)", parent)
        self.setObjectName("groupKeyBox")
        self.community_id: str | None = None
        self.reason = QLabel("")
        self.reason.setObjectName("keyWait")
        self.reason.setWordWrap(True)
        self.field = QLineEdit()
        self.field.setObjectName("groupKeyField")
        self.field.setPlaceholderText("HEX or HEX@TIMESTAMP_MS (from the community's owner, or "
                                      "`archivist key group list`)")
        self.field.returnPressed.connect(self.submit)
        self.file_btn = QPushButton("Choose file…")
        self.file_btn.clicked.connect(self._choose_file)
        self.add_btn = QPushButton("Add key")
        self.add_btn.setObjectName("addGroupKey")
        self.add_btn.clicked.connect(self.submit)
        row = QHBoxLayout()
        row.addWidget(self.field, 1)
        row.addWidget(self.file_btn)
        row.addWidget(self.add_btn)
        self.error = QLabel("")
        self.error.setObjectName("keyError")
        self.error.setWordWrap(True)
        self.error.setVisible(False)
        self.status = QLabel("")              # "Key added: …" after a good key
        self.status.setWordWrap(True)
        self.parked = QLabel("")              # one line per archive waiting, with its reason
        self.parked.setObjectName("parkedArchives")
        self.parked.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addWidget(self.reason)
        lay.addLayout(row)
        lay.addWidget(self.error)
        lay.addWidget(self.status)
        lay.addWidget(self.parked)

    def show_state(self, c: CommunityState) -> None:
        if c.community_id != self.community_id:
            self.field.clear()
            self.status.clear()
            self._set_error("")
        self.community_id = c.community_id
        self.setVisible(bool(c.encrypted or c.key_wait or c.parked))
        self.reason.setText(c.key_wait[:1].upper() + c.key_wait[1:] + "." if c.key_wait else
                            "The community's archives are encrypted; its key is held." if c.encrypted else "")
        self.parked.setText("\n".join(f"{short_archive_id(aid)}: {why}" for aid, why in c.parked))
        self.parked.setVisible(bool(c.parked))

    def _set_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Community key file", "", "Key files (*.txt *.key *.json);;"
                                                                            "All files (*)")
        if path:
            self.load_file(path)

    def load_file(self, path: Path | str) -> None:
        """Read a key file into the field and add it (the file dialog's choice)."""
        try:
            self.field.setText(key_text_from_file(path))
        except KeyTextError as e:
            self._set_error(str(e))
            return
        self.submit()

    def submit(self) -> None:
        if self.community_id is None:
            return
        try:
            key = check_key(self.field.text(), self.community_id)
        except KeyTextError as e:
            self.status.clear()
            self._set_error(str(e))
            return
        self._set_error("")
        self.status.setText(f"Key added (timestamp {key.timestamp}): waiting archives are being imported.")
        self.key_submitted.emit(self.community_id, self.field.text().strip())
        self.field.clear()


def wire(window) -> None:
    """Send the member view's keys to the window's engine (MainWindow._command -> Engine.add_group_key). Called
    once per window; a second call does nothing."""
    if getattr(window, "_group_keys_wired", False):
        return
    window._group_keys_wired = True
    window.member.keys.key_submitted.connect(
        lambda cid, key: window._command("add the community's key", "add_group_key", cid, key))
