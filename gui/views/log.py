"""The log: every engine event and every GUI operation as a sentence, newest last, filterable.

`describe(name, data)` turns an event into a sentence and a level. Normal rejections (a replayed or older archive
link: every member sees them) are greyed, not shown as failures; forged or unreadable links are warnings; errors
are failures (red). The raw event (name and JSON) is one click away: "Raw JSON" shows the Event and Details
columns and a pane with the selected event's full JSON."""
from __future__ import annotations

import json
import re
import time
from typing import Any

from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QSplitter, QVBoxLayout,
                               QWidget)
from PySide6.QtCore import Qt, QTimer

from core.node import events as E
from gui.models import Column, RingTableModel, fmt_time, short_archive_id, short_id
from gui.views.inspector import make_table

MAX_ROWS = 5000          # the newest rows kept (up to MAX_ROWS + MAX_ROWS // 50: the oldest go in batches)
FOLLOW_MS = 50           # the view catches up with the newest row at most this often (not once per event)
INFO, IGNORED, WARNING, FAILURE = "info", "ignored", "warning", "failure"
COLOURS = {IGNORED: "#7f8c8d", WARNING: "#b9770e", FAILURE: "#c0392b"}
COL_EVENT, COL_DETAILS = 3, 4

COMMANDS = {"set_archive_support": "switch archive support", "archive_now": "build archives now",
            "set_download_policy": "change what to download", "cancel_download": "cancel the download",
            "resume_download": "resume the download", "history": "read the message history",
            "set_global_archive_support": "switch archive support for every community",
            "add_group_key": "add a decryption key"}


def details(data: dict, limit: int | None = 400) -> str:
    try:
        text = json.dumps(data, default=str, sort_keys=True)
    except (TypeError, ValueError):
        text = str(data)
    return text if limit is None else text[:limit]


def _cap(s: str) -> str:
    s = str(s).strip()
    return s[:1].upper() + s[1:] if s else s


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _rejected(d: dict) -> tuple[str, str]:
    """An ignored archive link in words, from the event's facts (core.node.links' reasons; clock and stored)."""
    from core.node.links import FORGED, FUTURE_CLOCK, MALFORMED, OLDER_CLOCK, REPLAYED
    reason, detail = d.get("reason", ""), str(d.get("detail") or "")
    if reason == OLDER_CLOCK:
        clock, stored = d.get("clock"), d.get("stored")
        return ("Ignored an older archive link" + (f" (clock {clock} < {stored})" if clock is not None
                                                    and stored is not None else ""), IGNORED)
    if reason == REPLAYED:
        return "Ignored an archive link already processed (a repeat of one we have)", IGNORED
    if reason == FUTURE_CLOCK:
        return "Ignored an archive link dated in the future" + (f" ({detail})" if detail else ""), WARNING
    if reason == FORGED:
        return "Ignored an archive link not signed by the community key", WARNING
    if reason == MALFORMED:
        return "Ignored an archive link message that could not be read" + (f" ({detail})" if detail else ""), WARNING
    return f"Ignored an archive link ({reason or 'no reason given'})", WARNING


def _window(d: dict) -> str:
    s, e = d.get("start"), d.get("end")
    return f" ({fmt_time(s)} to {fmt_time(e)} UTC)" if isinstance(s, (int, float)) and isinstance(e, (int, float)) \
        else ""


def _archives(d: dict) -> int:
    a = d.get("archives")
    return len(a) if isinstance(a, (list, tuple, dict)) else int(a) if isinstance(a, int) else 0


def describe(name: str, data: dict | None) -> tuple[str, str]:
    """(sentence, level) for an event or GUI log entry."""
    d = data or {}
    aid = d.get("archive_id")
    simple = {
        E.CREATING_HISTORY_ARCHIVES: "Building archives…",
        E.NO_HISTORY_ARCHIVES_CREATED: "Nothing new to archive",
        E.HISTORY_ARCHIVES_UNSEEDED: "Stopped seeding the archives",
        E.DOWNLOADING_HISTORY_ARCHIVES_STARTED: "Started downloading the archives",
        E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED: "Finished downloading and importing the archives",
    }
    if name in simple:
        return simple[name], INFO
    if name == E.HISTORY_ARCHIVES_CREATED:
        return f"Built {_n(_archives(d), 'new archive')}", INFO
    if name == E.HISTORY_ARCHIVES_SEEDING:
        return "Seeding the archives" + (" (link ready to share)" if d.get("magnet") or d.get("link") else ""), INFO
    if name == E.HISTORY_ARCHIVE_DOWNLOADED:
        return f"Downloaded archive {short_archive_id(str(aid or '?'))}{_window(d)}", INFO
    if name == E.IMPORTING_HISTORY_ARCHIVE_MESSAGES:
        done, total = d.get("done"), d.get("total")
        step = f"week {done + 1} of {total}" if isinstance(done, int) and isinstance(total, int) else "messages"
        return f"Importing {step} ({_n(_archives(d), 'archive')})", INFO
    if name == E.MAGNETLINK_RECEIVED:
        return "Received a new archive link" + (f" (clock {d['clock']})" if "clock" in d else ""), INFO
    if name == E.MAGNETLINK_REJECTED:
        return _rejected(d)
    if name == E.WAITING:
        until = d.get("until")
        when = f" (until {fmt_time(until)} UTC)" if isinstance(until, (int, float)) else ""
        return _cap(d.get("reason") or "waiting") + when, INFO
    if name == E.PROGRESS:
        return f"{_cap(d.get('job') or 'work')}: {d.get('done', '?')} of {d.get('total', '?')}", INFO
    if name == E.LATE_MESSAGES:
        return (f"Kept {_n(d.get('count', 0), 'message')} that arrived after their week was archived "
                f"({d.get('total', 0)} in all; they stay in the message store)"), WARNING
    if name in (E.ERROR, "archivist.error"):
        what = d.get("message") or d.get("error") or d.get("code") or "unknown error"
        where = (f"Archive {short_archive_id(str(aid))}: " if aid else
                 f"{_cap(d['what'])} failed: " if d.get("what") else "")
        return (where + str(what) if where else _cap(str(what))), FAILURE
    if name == "archivist.command":
        cmd = d.get("command", "")
        return f"Asked the node to {COMMANDS.get(cmd, cmd.replace('_', ' '))}", INFO
    if name == "archivist.engineAttached":
        return "Connected to the node", INFO
    if name == "archivist.nodeStarting":
        return f"Starting the node ({d.get('config', 'no config')})", INFO
    if name == "archivist.startFailed":
        what = f"{_cap(d['what'])} did not start" if d.get("what") else "The node did not start"
        return f"{what}: {d.get('error', 'unknown error')}", FAILURE
    if name == "archivist.operationFailed":
        return f"A background task failed: {d.get('operation') or 'unnamed'}", FAILURE
    if name == "archivist.sparkReady":
        return f"Spark is ready ({d.get('seconds', '?')} s)", INFO
    if name == "archivist.sparkFailed":
        return f"Spark did not start: {d.get('error', 'unknown error')}", FAILURE
    if name == "archivist.demo":
        return _cap(d.get("step") or "demo"), INFO
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name.rsplit(".", 1)[-1]).lower()
    level = FAILURE if "error" in name.lower() or "fail" in name.lower() else INFO
    extra = ", ".join(f"{k} {v}" for k, v in sorted(d.items()) if isinstance(v, (str, int, float)))[:200]
    return _cap(words) + (f": {extra}" if extra else ""), level


class LogView(QWidget):
    """The log table. Each event is one O(1) append to a RingTableModel (the oldest rows beyond `max_rows` are
    dropped in batches), seen through the filter proxy, which re-filters only on a new filter text. While the view
    is scrolled to the bottom it follows the newest row, once per FOLLOW_MS for all the events of that time:
    `scrollToBottom` lays the table out at once (0.3 ms for each event before), and the columns are sized once,
    for the first rows (Qt measured 40 rows for each column, 15-30 ms, every 200 events before)."""

    def __init__(self, parent: QWidget | None = None, max_rows: int = MAX_ROWS):
        super().__init__(parent)
        self._n = 0
        # row: (n, at, name, community, details json (full), sentence, level)
        self.model = RingTableModel([
            Column("Time (UTC)", lambda r: r[1], lambda r: time.strftime("%H:%M:%S", time.gmtime(r[1])),
                   lambda r: fmt_time(r[1])),
            Column("Community", lambda r: r[3] or "", lambda r: short_id(r[3]) if r[3] else "",
                   lambda r: r[3]),
            Column("What happened", lambda r: r[5], tooltip=lambda r: r[5]),
            Column("Event", lambda r: r[2]),
            Column("Details", lambda r: r[4], lambda r: r[4][:400], tooltip=lambda r: r[4][:2000]),
        ], key=lambda r: r[0], capacity=max_rows, foreground=lambda r: QColor(COLOURS[r[6]]) if r[6] in COLOURS
            else None)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter the log…")
        self.search.setClearButtonEnabled(True)
        self.view, self.proxy = make_table(self.model, search=self.search)
        self.raw = QPushButton("Raw JSON")
        self.raw.setCheckable(True)
        self.raw.setToolTip("Show each event's name and its data as JSON")
        self.raw.toggled.connect(self.show_raw)
        clear = QPushButton("Clear")
        clear.clicked.connect(self.model.clear)
        self._follow = QTimer(self)
        self._follow.setSingleShot(True)
        self._follow.setInterval(FOLLOW_MS)
        self._follow.timeout.connect(self.view.scrollToBottom)
        self.json = QPlainTextEdit(readOnly=True)
        self.json.setPlaceholderText("Select an event to see its JSON.")
        self.view.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._show_json(cur))
        top = QHBoxLayout()
        title = QLabel("Log and events")
        title.setObjectName("heading")
        for w, stretch in ((self.search, 1), (self.raw, 0), (clear, 0)):
            top.addWidget(w, stretch)
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(self.view)
        self.split.addWidget(self.json)
        self.split.setStretchFactor(0, 3)
        lay = QVBoxLayout(self)
        lay.addWidget(title)
        lay.addLayout(top)
        lay.addWidget(self.split, 1)
        self.show_raw(False)

    def show_raw(self, on: bool) -> None:
        for col in (COL_EVENT, COL_DETAILS):
            self.view.setColumnHidden(col, not on)
        if on and self.model.rowCount():
            self.view.resizeColumnsToContents()     # the raw columns, sized once they show (40 rows measured)
        self.json.setVisible(on)
        if self.raw.isChecked() != on:
            self.raw.setChecked(on)

    def _show_json(self, proxy_index) -> None:
        if not proxy_index.isValid():
            return
        r = self.model.row(self.proxy.mapToSource(proxy_index).row())
        try:
            data = json.loads(r[4])
        except ValueError:
            data = {"details": r[4]}
        self.json.setPlainText(json.dumps({"event": r[2], "community_id": r[3], "at": r[1],
                                           **(data if isinstance(data, dict) else {"details": data})},
                                          indent=2, sort_keys=True, default=str))

    def add(self, name: str, community_id: str | None = None, data: dict | None = None,
            at: float | None = None) -> None:
        self._n += 1
        sentence, level = describe(name, data)
        bar = self.view.verticalScrollBar()
        follow = self._follow.isActive() or bar.value() >= bar.maximum()   # at the newest row: keep following it
        self.model.append((self._n, at or time.time(), name, community_id, details(data or {}, None), sentence,
                           level))
        if self._n <= 3:
            self.view.resizeColumnsToContents()
        if follow and not self._follow.isActive():
            self._follow.start()

    def add_event(self, e: Any) -> None:
        self.add(e.name, e.community_id, e.data, e.at)
