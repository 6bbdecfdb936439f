"""Support staff, from an empty home folder: a user sends a damaged archive folder; support opens it from the
welcome screen ("Open an archive"), sees the fault named on screen with its archive and bytes, exports a report
through the save dialog (real clicks, real Qt file dialog), and the report file names the fault and its place."""
from __future__ import annotations

import json
import shutil


from PySide6.QtCore import QSettings, Qt

from core.archive import codec
from core.archive.build import build_archives
from core.archive.constants import PIECE_LENGTH
from core.synth import synthesize
from gui.main_window import TAB_INSPECTOR, MainWindow

LEFT = Qt.MouseButton.LeftButton


def damaged_folder(root):
    """A real community folder built by the project's builder, one message byte flipped in its third archive.
    Returns (folder, archive id, byte offset in data)."""
    root.mkdir(parents=True, exist_ok=True)
    s = synthesize(root / "messages.sqlite", messages=1500, weeks=5, channels=2, seed=5)
    build_archives(s.path, s.community_id, [bytes.fromhex(t[2:]) for t in s.topics], root / "archivedata",
                   root / "torrents", end=s.end)
    folder = root / "archivedata" / s.community_id
    aid, e = codec.sorted_entries(codec.decode_index((folder / "index").read_bytes()))[2]
    at = e.offset + e.raw_size // 3
    with open(folder / "data", "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x5A]))
    return folder, aid, at


def test_support_opens_a_damaged_folder_and_exports_a_report(qtbot, home, tmp_path):
    from gui.app import make_app, open_start_window
    folder, aid, at = damaged_folder(tmp_path / "ticket-1234")
    make_app()
    settings = QSettings(str(home / ".config" / "Archivist" / "Archivist.conf"), QSettings.Format.IniFormat)
    welcome = open_start_window(settings)
    qtbot.waitExposed(welcome)
    qtbot.mouseClick(welcome.open_btn, LEFT)
    main = welcome.main_window
    assert isinstance(main, MainWindow)
    qtbot.addWidget(main)
    qtbot.waitExposed(main)
    try:
        view = main.inspector
        assert main.tabs.currentIndex() == TAB_INSPECTOR and main.running_node is None
        assert not view.export_btn.isEnabled()             # nothing to export yet
        with qtbot.waitSignal(view.opened, timeout=30_000):
            qtbot.keyClicks(view.source, str(folder))
            qtbot.keyClick(view.source, Qt.Key.Key_Return)

        # on screen: the fault in plain words, its archive and bytes, what to do; not "Verified"
        summary = view.summary.text()
        assert "Verified" not in summary and "fault" in summary and aid in summary
        piece = at // PIECE_LENGTH
        assert f"data bytes {piece * PIECE_LENGTH}..{(piece + 1) * PIECE_LENGTH - 1}" in summary
        f0 = view.findings
        cells = [[f0.data(f0.index(0, c)) for c in range(f0.columnCount())]]
        severity, what, where, todo, code = cells[0]
        assert (severity, code) == ("error", "piece-mismatch")
        assert "altered" in what and aid in where and "Download" in todo
        assert "Piece hashes (against the torrent) ✗ failed" in view.checks.text()
        assert view.archive_view.isVisible() and view.archives.rowCount() == 5

        # export: the button opens the save dialog; support types a name and saves
        qtbot.mouseClick(view.export_btn, LEFT)
        dlg = view.export_dialog
        qtbot.waitUntil(dlg.isVisible)
        out = tmp_path / "reports" / "ticket-1234.html"
        out.parent.mkdir()
        dlg.setDirectory(str(out.parent))
        dlg.selectFile(str(out))
        with qtbot.waitSignal(view.exported, timeout=5_000) as b:
            dlg.accept()
        assert b.args == [str(out)] and not dlg.isVisible()
        page = out.read_text(encoding="utf-8")
        assert "piece-mismatch" in page and aid in page and f"data bytes {piece * PIECE_LENGTH}.." in page
        assert "altered after it was published" in page and "<script" not in page
        assert str(out) in view.export_note.toolTip() and "Report saved (HTML)" in view.export_note.text()

        # and as JSON, chosen by its file type
        qtbot.mouseClick(view.export_btn, LEFT)
        qtbot.waitUntil(dlg.isVisible)
        dlg.selectNameFilter("JSON report (*.json)")
        dlg.selectFile(str(out.with_suffix("")))
        with qtbot.waitSignal(view.exported, timeout=5_000) as b:
            dlg.accept()
        rep = json.loads((out.parent / "ticket-1234.json").read_text(encoding="utf-8"))
        first = rep["faults"][0]
        assert (first["code"], first["archive_id"]) == ("piece-mismatch", aid)
        assert first["data_start"] <= at <= first["data_end"] and rep["ok"] is False
        assert {c["name"]: c["status"] for c in rep["checks"]}["Piece hashes (against the torrent)"] == "failed"
        assert not (home / ".local").exists()              # support wrote nothing but the report
    finally:
        main.close()
        assert main.ops.pool.waitForDone(10_000)
        shutil.rmtree(tmp_path / "ticket-1234", ignore_errors=True)

