"""The owner's view of one community: archive-support switch with explainer, timeline, next archive due with
"Archive now", and a seeding panel whose state means something (never "Downloading 0%" for our own torrent)."""
from __future__ import annotations

import time
from typing import Callable

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (QCheckBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QVBoxLayout, QWidget)

from core.node.state import ArchiveSupport, CommunityState, SeedingState
from gui.models import fmt_bytes, fmt_time
from gui.views.progress import fmt_duration
from gui.views.timeline import TimelineChart

EXPLAINER = ("When on, this computer bundles every 7 days of the community's messages into an archive and shares "
             "them over BitTorrent, so members who join later can read the full history. Without it, new members "
             "see only what Waku store nodes still keep (about 30 days at best). This computer must stay online "
             "for members to download the archives.")
SEEDING_SENTENCE = {
    SeedingState.NOT_SEEDING: "Not seeding.",
    SeedingState.STARTING: "Starting: checking the archive files; members can connect once that is done.",
    SeedingState.SEEDING_WITH_PEERS: "Seeding: members are downloading history from this computer.",
    SeedingState.SEEDING_IDLE: "Seeding, idle: ready to share; no member is connected right now.",
    SeedingState.NOT_REACHABLE: "Not reachable: members cannot connect (check the firewall or port forwarding).",
    SeedingState.ERROR: "Error: seeding stopped (see the log; a full disk shows here).",
}


def due_text(next_at: int | None, now: float, c: CommunityState | None = None) -> str:
    """When the next archive is due; else why not, in words of its own (never "support is off" while the effective
    state says ON, never a due date while it says OFF): support off, the folder stopped (ControlNode.broken), or no
    message stored yet."""
    if c is not None:         # the engine still computes a date when support is off: it is not shown then
        if c.support == ArchiveSupport.DISABLED_GLOBALLY:
            return "No archive scheduled: archive support is off for all communities (Settings)."
        if c.support != ArchiveSupport.ON:
            return "No archive scheduled: archive support is off."
        if c.broken:
            return "No archive scheduled: archives are stopped until the folder is repaired (see below)."
    if next_at is None:
        if c is None:
            return "No archive scheduled."
        return ("No archive scheduled yet: no message has been stored yet; the first archive is due 7 days after "
                "the first message, plus the grace period.")
    left = next_at - now
    if left <= 0:
        return f"Next archive is due now (was due {fmt_time(next_at)} UTC)."
    return f"Next archive due {fmt_time(next_at)} UTC (in {fmt_duration(left)})."


def effective_text(c: CommunityState) -> str:
    if c.support == ArchiveSupport.ON and c.broken:
        return ("Effective state: STOPPED: the archive folder cannot be trusted, so nothing is built, seeded or "
                "deleted until the next start.")
    return {
        ArchiveSupport.ON: "Effective state: ON: archives are built every 7 days and seeded.",
        ArchiveSupport.OFF: "Effective state: OFF.",
        ArchiveSupport.DISABLED_GLOBALLY: "Effective state: OFF, because archive support is disabled "
                                          "for all communities in Settings.",
    }.get(c.support, str(c.support))


def seeding_text(c: CommunityState) -> str:
    if c.seeding == SeedingState.NOT_SEEDING:
        if c.support != ArchiveSupport.ON:
            return "Not seeding: archive support is off."
        if c.broken:
            return "Not seeding: archives are stopped (the folder cannot be trusted)."
        if not c.archives:
            return "Not seeding: no archive has been built yet."
    return SEEDING_SENTENCE.get(c.seeding, str(c.seeding))


class ControlView(QWidget):
    support_toggled = Signal(str, bool)   # community id, enabled
    archive_now = Signal(str)

    def __init__(self, parent: QWidget | None = None, clock: Callable[[], float] = time.time):
        super().__init__(parent)
        self.clock = clock
        self.community_id: str | None = None
        self.title = QLabel("")
        self.title.setObjectName("heading")

        self.support = QCheckBox("New members can see the full message history (archive support)")
        self.support.setObjectName("supportSwitch")
        self.support.toggled.connect(self._support_clicked)
        self.effective = QLabel("")
        self.effective.setObjectName("effective")
        explainer = QLabel(EXPLAINER)
        explainer.setWordWrap(True)
        explainer.setObjectName("explainer")
        sup_box = QGroupBox("Archive support")
        sl = QVBoxLayout(sup_box)
        for w in (self.support, self.effective, explainer):
            sl.addWidget(w)

        self.chart = TimelineChart()
        self.due = QLabel("")
        self.archive_btn = QPushButton("Archive now")
        self.archive_btn.setObjectName("archiveNow")
        self.archive_btn.setToolTip("Build archives now for every message since the last archive, up to the grace "
                                    "period (1 hour by default) ago; the week may be partial (Ctrl+Shift+A)")
        self.archive_btn.clicked.connect(lambda: self.community_id and self.archive_now.emit(self.community_id))
        self.build_status = QLabel("")
        due_row = QHBoxLayout()
        due_row.addWidget(self.due, 1)
        due_row.addWidget(self.build_status)
        due_row.addWidget(self.archive_btn)
        self.note = QLabel("")                 # late messages, a stopped folder (ControlNode.note())
        self.note.setObjectName("controlNote")
        self.note.setWordWrap(True)
        self.note.setVisible(False)

        seed_box = QGroupBox("Seeding")
        form = QFormLayout(seed_box)
        self.seed_state = QLabel("")
        self.seed_state.setWordWrap(True)
        self.peers = QLabel("0")
        self.uploaded = QLabel("0 B")
        self.magnet = QLineEdit()
        self.magnet.setReadOnly(True)
        self.copy_btn = QPushButton("Copy")
        self.copy_btn.setToolTip("Copy the announced magnet link")
        self.copy_btn.clicked.connect(self.copy_magnet)
        mrow = QHBoxLayout()
        mrow.addWidget(self.magnet, 1)
        mrow.addWidget(self.copy_btn)
        form.addRow("State:", self.seed_state)
        form.addRow("Peers:", self.peers)
        form.addRow("Uploaded:", self.uploaded)
        form.addRow("Magnet link:", mrow)

        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(sup_box)
        lay.addWidget(self.chart, 1)
        lay.addLayout(due_row)
        lay.addWidget(self.note)
        lay.addWidget(seed_box)
        self._updating = False
        self.building = False                   # "Archive now" running: the button stays off until it ends

    def set_building(self, on: bool) -> None:
        self.building = on
        self.archive_btn.setEnabled(not on)

    def show_state(self, c: CommunityState) -> None:
        self._updating = True
        try:
            self.community_id = c.community_id
            self.title.setText(f"{c.name} · you own this community")
            wants = c.support in (ArchiveSupport.ON, ArchiveSupport.DISABLED_GLOBALLY)
            if self.support.isChecked() != wants:
                self.support.setChecked(wants)
            self.support.setEnabled(True)
            self.effective.setText(effective_text(c))
            look = "ok" if c.support == ArchiveSupport.ON and not c.broken else "off"
            if self.effective.property("state") != look:     # re-polishing restyles the label: only on a change
                self.effective.setProperty("state", look)
                self.effective.style().polish(self.effective)
            self.chart.set_archives(c.archives)
            self.due.setText(due_text(c.next_archive_at, self.clock(), c))
            self.note.setText(c.waiting_reason or "")
            self.note.setVisible(bool(c.waiting_reason))
            self.archive_btn.setEnabled(c.support == ArchiveSupport.ON and not c.broken and not self.building)
            self.seed_state.setText(seeding_text(c))
            self.peers.setText(str(c.peers))
            self.uploaded.setText(fmt_bytes(c.uploaded))
            self.magnet.setText(c.magnet or "(none yet: no archive built)")
            self.magnet.setCursorPosition(0)
            self.copy_btn.setEnabled(bool(c.magnet))
        finally:
            self._updating = False

    def _support_clicked(self, on: bool) -> None:
        if not self._updating and self.community_id:
            self.support.setEnabled(False)     # until the engine confirms
            self.support_toggled.emit(self.community_id, on)

    def copy_magnet(self) -> None:
        if self.copy_btn.isEnabled():
            QGuiApplication.clipboard().setText(self.magnet.text())

    def set_build_status(self, text: str) -> None:
        self.build_status.setText(text)
