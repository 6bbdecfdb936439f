"""The communities list: each community's role, effective archive-support state and health."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QTableView, QVBoxLayout, QWidget

from core.node.state import ArchiveSupport, CommunityState, Role, SeedingState
from gui.models import Column, KeyedTableModel, short_id
from gui.views.inspector import make_table

SUPPORT_TEXT = {ArchiveSupport.ON: "Archiving", ArchiveSupport.OFF: "Off",
                ArchiveSupport.DISABLED_GLOBALLY: "Off (global switch)"}
SEEDING_TEXT = {SeedingState.NOT_SEEDING: "not seeding", SeedingState.STARTING: "starting to seed (checking files)",
                SeedingState.SEEDING_WITH_PEERS: "seeding to peers",
                SeedingState.SEEDING_IDLE: "seeding, no peer connected", SeedingState.NOT_REACHABLE: "not reachable",
                SeedingState.ERROR: "error"}


def support_text(c: CommunityState) -> str:
    if c.support == ArchiveSupport.ON and c.broken:
        return "Stopped"
    return SUPPORT_TEXT.get(c.support, str(c.support))


def health(c: CommunityState) -> str:
    """One short sentence a person can act on."""
    if c.role == Role.CONTROL:
        if c.support != ArchiveSupport.ON:
            return "history limited to what store nodes keep"
        if c.broken:
            return f"archives stopped: {c.broken}"
        if c.seeding == SeedingState.ERROR:
            return "seeding error"
        if c.seeding == SeedingState.NOT_REACHABLE:
            return "peers cannot reach this node"
        return SEEDING_TEXT.get(c.seeding, str(c.seeding))
    if c.waiting_reason:
        return c.waiting_reason
    total = len(c.archives)
    if not total:
        return "no archives offered yet"
    imported = sum(1 for a in c.archives if a.imported)
    return f"{imported} of {total} archives imported"


def is_bad(c: CommunityState) -> bool:
    return c.seeding in (SeedingState.ERROR, SeedingState.NOT_REACHABLE) or bool(c.broken)


class CommunitiesView(QWidget):
    selected = Signal(str)   # community id

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = KeyedTableModel([
            Column("Community", lambda c: c.name, tooltip=lambda c: c.community_id),
            Column("Role", lambda c: c.role.value, lambda c: "Owner" if c.role == Role.CONTROL else "Member"),
            Column("Archives", lambda c: c.support.value, support_text),
            Column("Health", health, tooltip=health),
        ], key=lambda c: c.community_id, foreground=lambda c: QColor("#c0392b") if is_bad(c) else None)
        self.view, self.proxy = make_table(self.model)
        self.view.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.view.selectionModel().currentRowChanged.connect(self._current)
        self.empty = QLabel("No communities yet. The engine lists communities you own or joined; "
                            "the Inspector works without one.")
        self.empty.setWordWrap(True)
        self.setMinimumWidth(280)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        title = QLabel("Communities")
        title.setObjectName("heading")
        lay.addWidget(title)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.empty)

    def update_states(self, states: list[CommunityState]) -> None:
        fresh = self.model.rowCount() == 0
        self.model.replace_all(states)
        if fresh and states:
            self.view.resizeColumnsToContents()
        self.empty.setVisible(not states)
        if states and not self.view.currentIndex().isValid():
            self.select(states[0].community_id)

    def select(self, community_id: str) -> None:
        i = self.model.row_of(community_id)
        if i is not None:
            self.view.setCurrentIndex(self.proxy.mapFromSource(self.model.index(i, 0)))

    def current_id(self) -> str | None:
        idx = self.view.currentIndex()
        if not idx.isValid():
            return None
        return self.proxy.data(idx.siblingAtColumn(0), Qt.ItemDataRole.ToolTipRole)

    def _current(self, current, _prev) -> None:
        cid = self.current_id()
        if cid:
            self.selected.emit(cid)

    def label_of(self, c: CommunityState) -> str:
        return f"{c.name} ({short_id(c.community_id)})"
