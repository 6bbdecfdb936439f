"""The real main window: its views, keyboard shortcuts, remembered state, and the Inspector through it."""
from __future__ import annotations

from PySide6.QtCore import Qt

from gui.main_window import TAB_COMMUNITY, TAB_HISTORY, TAB_INSPECTOR, TAB_LOG, MainWindow


def test_window_has_every_view(window):
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    assert titles == ["Community", "History", "Inspector", "Log"]
    assert window.stack.isAncestorOf(window.control) and window.stack.isAncestorOf(window.member)
    assert window.communities.isVisible()
    assert not window.windowIcon().isNull()
    from PySide6.QtWidgets import QApplication
    assert "QGroupBox" in QApplication.instance().styleSheet()


def test_shortcuts_switch_views(qtbot, window):
    for key, tab in ((Qt.Key.Key_3, TAB_INSPECTOR), (Qt.Key.Key_4, TAB_LOG), (Qt.Key.Key_2, TAB_HISTORY),
                     (Qt.Key.Key_1, TAB_COMMUNITY)):
        qtbot.keyClick(window, key, Qt.KeyboardModifier.ControlModifier)
        assert window.tabs.currentIndex() == tab
    assert window.act_archive.shortcut().toString() == "Ctrl+Shift+A"
    assert window.act_settings.shortcut().toString() == "Ctrl+,"


def test_window_state_is_remembered(qtbot, settings):
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.show()
    w.resize(760, 560)
    w.tabs.setCurrentIndex(TAB_LOG)
    w.split.setSizes([200, 800])
    sizes = w.split.sizes()
    size = (w.width(), w.height())
    assert size == (760, 560)
    w.close()
    w2 = MainWindow(settings=settings)
    qtbot.addWidget(w2)
    w2.show()
    assert w2.tabs.currentIndex() == TAB_LOG
    assert (w2.width(), w2.height()) == size
    assert w2.split.sizes() == sizes
    w2.close()


def test_inspector_in_window_shows_fault(qtbot, window, community_copy):
    from core.archive import codec
    folder = community_copy["folder"]
    aid, e = codec.sorted_entries(codec.decode_index((folder / "index").read_bytes()))[0]
    with open(folder / "data", "r+b") as f:
        f.seek(e.offset + e.size - 5)
        f.write(b"\x07")
    with qtbot.waitSignal(window.inspector.opened, timeout=20_000) as b:
        window.open_path(folder)
    assert window.tabs.currentIndex() == TAB_INSPECTOR
    res = b.args[0]
    assert ("padding-nonzero", aid) in {(f.code, f.archive_id) for f in res.faults}
    assert window.inspector.summary.property("state") == "fault"


def test_settings_round_trip(qtbot, window):
    from gui.views.settings import SettingsDialog, load
    dlg = SettingsDialog(window.settings, window)
    qtbot.addWidget(dlg)
    dlg.torrent_port.setValue(40123)
    dlg.nwaku.setText("http://127.0.0.1:8645")
    dlg.codex.setText("http://127.0.0.1:9999/api/codex/v1")
    dlg.global_support.setChecked(False)
    dlg.accept()
    v = load(window.settings)
    assert (v["torrent_port"], v["nwaku_rest_url"], v["global_archive_support"]) == (40123, "http://127.0.0.1:8645",
                                                                                     False)
    window.apply_settings()
    assert window.inspector.codex_api == "http://127.0.0.1:9999/api/codex/v1"
    again = SettingsDialog(window.settings, window)
    qtbot.addWidget(again)
    assert again.torrent_port.value() == 40123 and not again.global_support.isChecked()


def test_desktop_file_is_valid():
    import shutil
    import subprocess
    from pathlib import Path
    import gui.resources
    desktop = Path(gui.resources.__file__).parent / "archivist.desktop"
    text = desktop.read_text()
    assert "Exec=archivist gui" in text and "Icon=archivist" in text
    assert (desktop.parent / "icons" / "archivist.svg").exists()
    if shutil.which("desktop-file-validate"):
        r = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True)
        assert r.returncode == 0 and not r.stdout.strip(), r.stdout
