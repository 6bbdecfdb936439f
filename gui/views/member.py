"""A member's view of one community: archives on offer against those held locally, the download choice (all,
latest, or a time range, with the bytes each implies), progress with the reason for every wait, cancel/resume."""
from __future__ import annotations

import datetime as dt
import time
from typing import Callable

from PySide6.QtCore import QDate, QDateTime, Qt, QTimeZone, Signal
from PySide6.QtWidgets import (QButtonGroup, QDateEdit, QGroupBox, QHBoxLayout, QLabel, QPushButton, QRadioButton,
                               QVBoxLayout, QWidget)

from core.node import events as E
from core.node.state import ArchiveInfo, CommunityState, DownloadPolicy
from gui.models import POLICY_WORDS, Column, KeyedTableModel, fmt_bytes, fmt_time, short_archive_id
from gui.views.inspector import make_table
from gui.views.keys import GroupKeyBox
from gui.views.progress import ProgressDelegate, SmoothBar, archive_percent, overall


def warm_imports() -> None:
    """Import what the view's first snapshot needs (the engine's selection rule: protobuf, the archive codec;
    30-60 ms) ahead of it, on a worker thread (MainWindow.attach_engine), not on the GUI thread in show_state;
    kept off the cold start."""
    import core.history_import      # noqa: F401  (Selection.choose uses its whole_windows)
    import core.torrent.selection   # noqa: F401


def selected_archives(archives: list[ArchiveInfo], policy: DownloadPolicy, start: int | None = None,
                      end: int | None = None) -> list[ArchiveInfo]:
    """Which archives a policy implies, by the engine's own rule (core.torrent.selection.Selection: whole weeks),
    for the preview shown before choosing. An open end of a range means "no limit"."""
    from core.torrent.selection import Selection
    by_id = {a.archive_id: a for a in archives}
    if policy == DownloadPolicy.RANGE:
        lo = start if start is not None else -(1 << 62)
        hi = end if end is not None else 1 << 62
        if lo >= hi:
            return []
        sel = Selection("range", lo, hi)
    else:
        sel = Selection(DownloadPolicy(policy).value)
    return [by_id[i] for i in sel.choose(by_id)]


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def archive_state(a: ArchiveInfo) -> str:
    if a.state:
        return a.state
    if a.imported:
        return "imported"
    if a.local:
        return "downloaded, waiting to import"
    return "on offer"


def to_ts(d: QDate, end_of_day: bool = False) -> int:
    """A date field's UTC day: its first second, or its end (a range's `to` day is included, as on the command
    line: core.torrent.selection.day_end)."""
    from core.torrent.selection import day_end, day_start   # not at the window's start (warm_imports loads it)
    day = dt.date(d.year(), d.month(), d.day())
    return day_end(day) if end_of_day else day_start(day)


def to_qdate(ts: int) -> QDate:
    return QDateTime.fromSecsSinceEpoch(int(ts), QTimeZone.utc()).date()


class MemberView(QWidget):
    policy_chosen = Signal(str, object, object, object)   # community id, DownloadPolicy, start, end
    cancel_requested = Signal(str)
    resume_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None, clock: Callable[[], float] = time.time):
        super().__init__(parent)
        self.clock = clock                 # the engine's time (fake clocks in tests): today's date without a span
        self.state: CommunityState | None = None
        self.shown_policy: tuple | None = None   # the engine's (policy, from, to) the controls were last set to
        self.shown_span: tuple | None = None     # the archive span the date pickers were last set to
        self.wanted: set[str] = set()      # archives the current choice asks for
        self.live: dict[str, str] = {}      # archive id -> what the engine last said about it (events)
        self.title = QLabel("")
        self.title.setObjectName("heading")
        self.banner = QLabel("")
        self.banner.setObjectName("waiting")
        self.banner.setWordWrap(True)

        self.model = KeyedTableModel([
            Column("Archive", lambda a: a.archive_id, lambda a: short_archive_id(a.archive_id), lambda a: a.archive_id),
            Column("From (UTC)", lambda a: a.start, lambda a: fmt_time(a.start)),
            Column("To (UTC)", lambda a: a.end, lambda a: fmt_time(a.end)),
            Column("Size", lambda a: a.size, lambda a: fmt_bytes(a.size), align_right=True),
            Column("Messages", lambda a: a.messages, align_right=True),
            Column("Chosen", lambda a: int(a.archive_id in self.wanted), lambda a: "yes" if a.archive_id in self.wanted
                   else ""),
            Column("State", self.state_text, tooltip=self.state_text),
            Column("Progress", lambda a: archive_percent(a, self.state),
                   lambda a: "" if archive_percent(a, self.state) is None else f"{archive_percent(a, self.state)}%"),
        ], key=lambda a: a.archive_id)
        self.table, self.proxy = make_table(self.model)
        self.progress_col = 7
        self.table.setItemDelegateForColumn(self.progress_col, ProgressDelegate(self.table))
        self.table.sortByColumn(1, Qt.SortOrder.AscendingOrder)
        self.counts = QLabel("")

        choice = QGroupBox("What to download")
        cl = QVBoxLayout(choice)
        self.all_btn = QRadioButton(POLICY_WORDS["all"])
        self.latest_btn = QRadioButton(POLICY_WORDS["latest"])
        self.range_btn = QRadioButton(POLICY_WORDS["range"] + ":")
        self.group = QButtonGroup(self)
        for i, b in enumerate((self.all_btn, self.latest_btn, self.range_btn)):
            self.group.addButton(b, i)
        self.all_btn.setChecked(True)
        self.date_from, self.date_to = QDateEdit(), QDateEdit()
        for d in (self.date_from, self.date_to):
            d.setCalendarPopup(True)
            d.setDisplayFormat("yyyy-MM-dd")
            d.setTimeZone(QTimeZone.utc())
            d.dateChanged.connect(self._preview)
        self.group.idToggled.connect(lambda *_: self._preview())
        self.range_error = QLabel("")          # an inverted range is refused here; nothing goes to the engine
        self.range_error.setObjectName("rangeError")
        self.range_error.setWordWrap(True)
        self.range_error.setVisible(False)
        row = QHBoxLayout()
        row.addWidget(self.range_btn)
        row.addWidget(QLabel("from"))
        row.addWidget(self.date_from)
        row.addWidget(QLabel("to"))
        row.addWidget(self.date_to)
        row.addStretch(1)
        self.implied = QLabel("")
        self.implied.setObjectName("implied")
        self.apply_btn = QPushButton("Download selection")
        self.apply_btn.setObjectName("applyPolicy")
        self.apply_btn.clicked.connect(self._apply)
        arow = QHBoxLayout()
        arow.addWidget(self.implied, 1)
        arow.addWidget(self.apply_btn)
        for w in (self.all_btn, self.latest_btn):
            cl.addWidget(w)
        cl.addLayout(row)
        cl.addWidget(self.range_error)
        cl.addLayout(arow)

        self.keys = GroupKeyBox()            # encrypted communities: the key, and what waits for it
        self.keys.setVisible(False)
        self.download = SmoothBar()          # bytes of the running download (or of the chosen archives held)
        self.download.setObjectName("downloadBar")
        self.download.setTextVisible(True)
        self.progress = SmoothBar()
        self.progress.setFormat("%v of %m archives")
        self.cancel_btn, self.resume_btn = QPushButton("Cancel download"), QPushButton("Resume")
        self.cancel_btn.clicked.connect(lambda: self.state and self.cancel_requested.emit(self.state.community_id))
        self.resume_btn.clicked.connect(lambda: self.state and self.resume_requested.emit(self.state.community_id))
        prow = QHBoxLayout()
        prow.addWidget(self.progress, 1)
        prow.addWidget(self.cancel_btn)
        prow.addWidget(self.resume_btn)

        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(self.banner)
        lay.addWidget(self.keys)
        lay.addWidget(choice)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.counts)
        lay.addWidget(self.download)
        lay.addLayout(prow)

    def policy(self) -> tuple[DownloadPolicy, int | None, int | None]:
        if self.latest_btn.isChecked():
            return DownloadPolicy.LATEST, None, None
        if self.range_btn.isChecked():
            return DownloadPolicy.RANGE, to_ts(self.date_from.date()), to_ts(self.date_to.date(), end_of_day=True)
        return DownloadPolicy.ALL, None, None

    def set_range(self, start: int, end: int) -> None:
        """Choose a time range (dates in UTC; `end` is inclusive of its day)."""
        self.range_btn.setChecked(True)
        self.date_from.setDate(to_qdate(start))
        self.date_to.setDate(to_qdate(end - 1))
        self._preview()

    def _range(self) -> tuple[int, int]:
        return to_ts(self.date_from.date()), to_ts(self.date_to.date(), end_of_day=True)

    def _preview(self) -> None:
        archives = list(self.state.archives) if self.state else []
        pol, s, e = self.policy()
        chosen = selected_archives(archives, pol, s, e)
        need = [a for a in chosen if not a.local]
        for btn, p in ((self.all_btn, DownloadPolicy.ALL), (self.latest_btn, DownloadPolicy.LATEST),
                       (self.range_btn, DownloadPolicy.RANGE)):
            label = POLICY_WORDS[p.value]
            sel = selected_archives(archives, p, s, e) if p == DownloadPolicy.RANGE and pol == p else \
                selected_archives(archives, p, *self._range())
            btn.setText(f"{label} ({plural(len(sel), 'archive')}, {fmt_bytes(sum(a.size for a in sel))})"
                        + (":" if p == DownloadPolicy.RANGE else ""))
        pending = self.state is not None and not self._matches_engine()
        self.implied.setText(f"{plural(len(chosen), 'archive')}, {fmt_bytes(sum(a.size for a in chosen))}"
                             f" ({fmt_bytes(sum(a.size for a in need))} still to download)"
                             + (" · not applied yet: press Download selection" if pending else ""))
        problem = self.range_problem()
        self.range_error.setText(problem)
        self.range_error.setVisible(bool(problem))

    def _matches_engine(self) -> bool:
        """Do the controls show the engine's policy (ranges compared by day, as the pickers show them)?"""
        c = self.state
        pol = self.policy()[0]
        if c is None or pol != c.policy:
            return False
        if pol != DownloadPolicy.RANGE or c.range_start is None or c.range_end is None:
            return True
        return (self.date_from.date(), self.date_to.date()) == (to_qdate(c.range_start), to_qdate(c.range_end - 1))

    def range_problem(self) -> str:
        """A plain sentence when the chosen range cannot be applied, else ""."""
        if self.range_btn.isChecked() and self.date_from.date() > self.date_to.date():
            return (f"The range ends ({self.date_to.date().toString('yyyy-MM-dd')}) before it starts "
                    f"({self.date_from.date().toString('yyyy-MM-dd')}): choose a \"to\" date on or after the "
                    "\"from\" date.")
        return ""

    def _apply(self) -> None:
        problem = self.range_problem()
        self.range_error.setText(problem)
        self.range_error.setVisible(bool(problem))
        if self.state and not problem:
            pol, s, e = self.policy()
            self.policy_chosen.emit(self.state.community_id, pol, s, e)

    def show_state(self, c: CommunityState) -> None:
        first = self.state is None or self.state.community_id != c.community_id
        self.state = c
        self.keys.show_state(c)
        self.title.setText(f"{c.name} · member")
        self.banner.setText(f"Waiting: {c.waiting_reason}" if c.waiting_reason else "")
        self.banner.setVisible(bool(c.waiting_reason))
        engine_policy = (c.policy, c.range_start, c.range_end)
        wanted = selected_archives(list(c.archives), *engine_policy)
        self.wanted = {a.archive_id for a in wanted}
        self.model.replace_all(list(c.archives))
        self.model.refresh_cells()   # "Chosen", "State", "Progress" follow the choice, the wait and the download
        #                              too, not only the row: the rows whose cells changed are told, no others
        self._show_download(c)
        imported = sum(1 for a in c.archives if a.imported)
        self.counts.setText(f"{len(c.archives)} archives on offer · {len(self.wanted)} chosen · {imported} imported")
        self._show_span(c, first)
        if first or engine_policy != self.shown_policy:
            self._show_policy(c)
        self.progress.setFormat("%v of %m chosen archives imported")
        self.progress.setMaximum(max(1, len(wanted)))
        self.progress.setValue(sum(1 for a in wanted if a.imported))
        self._preview()

    def _show_download(self, c: CommunityState) -> None:
        """Bytes as a bar (scaled to KiB: QProgressBar holds an int), with the words beside the numbers."""
        done, total, text = overall(c, self.wanted)
        self.download.setMaximum(max(1, total // 1024))
        self.download.setValue(min(done, total) // 1024 if total else 0)
        if total and done >= total:
            self.download.setValue(self.download.maximum())
        self.download.setFormat(text.replace("%", "%%"))

    def _show_span(self, c: CommunityState, first: bool) -> None:
        """The date pickers cover the archive span the node knows (earliest start to latest end); they start at it
        (never at Qt's 2000-01-01), and follow it as it grows unless a range is chosen."""
        span = c.archive_span
        if span is None:
            if first:
                today = to_qdate(int(self.clock()))
                for d in (self.date_from, self.date_to):
                    d.clearMinimumDate()
                    d.clearMaximumDate()
                    d.setDate(today)
            return
        if span == self.shown_span and not first:
            return
        lo, hi = span
        for d in (self.date_from, self.date_to):
            d.setDateRange(to_qdate(min(lo, c.range_start or lo)), to_qdate(max(hi, c.range_end or hi) - 1))
        if c.policy != DownloadPolicy.RANGE or c.range_start is None or c.range_end is None:
            self.date_from.setDate(to_qdate(lo))
            self.date_to.setDate(to_qdate(hi - 1))
        self.shown_span = span

    def _show_policy(self, c: CommunityState) -> None:
        """The radio buttons and dates show the engine's (saved) policy: at first sight and whenever it changes
        from outside; the person's own unapplied choice stays otherwise."""
        self.shown_policy = (c.policy, c.range_start, c.range_end)
        {DownloadPolicy.ALL: self.all_btn, DownloadPolicy.LATEST: self.latest_btn,
         DownloadPolicy.RANGE: self.range_btn}.get(c.policy, self.all_btn).setChecked(True)
        if c.policy == DownloadPolicy.RANGE and c.range_start is not None and c.range_end is not None:
            self.set_range(c.range_start, c.range_end)
        self.range_error.setVisible(False)

    def on_event(self, e) -> None:
        """Per-archive progress from the engine's events (status-go names), between two snapshots."""
        if self.state is None or e.community_id != self.state.community_id:
            return
        if e.name == E.HISTORY_ARCHIVE_DOWNLOADED and e.data.get("archive_id"):
            self.live[e.data["archive_id"]] = "downloaded, waiting to import"
        elif e.name == E.IMPORTING_HISTORY_ARCHIVE_MESSAGES:
            for aid in e.data.get("archives", []):
                self.live[aid] = "importing"
            total = int(e.data.get("total") or 0)
            if total:
                self.progress.setMaximum(total)
                self.progress.setValue(int(e.data.get("done") or 0))
                self.progress.setFormat("importing: %v of %m weeks")
        elif e.name == E.DOWNLOADING_HISTORY_ARCHIVES_STARTED:
            self.live.clear()
            self.progress.setFormat("%v of %m archives")
        else:
            return
        self.model.refresh_cells()          # only the rows whose state changed

    def state_text(self, a: ArchiveInfo) -> str:
        if a.state or a.imported:
            return archive_state(a)
        if a.archive_id in self.live:
            return self.live[a.archive_id]
        if a.archive_id not in self.wanted:
            return "on offer (not chosen)"
        return (self.state.waiting_reason if self.state and self.state.waiting_reason else "") or "wanted"

    def on_progress(self, data: dict) -> None:
        total = int(data.get("total") or 0)
        if total:
            self.progress.setMaximum(total)
            self.progress.setValue(int(data.get("done") or 0))
            self.progress.setFormat(f"{data.get('job', 'progress')}: %v of %m")
