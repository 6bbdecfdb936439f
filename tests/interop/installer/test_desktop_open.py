"""What the package's desktop entries hand the app: `archivist gui %u` (magnet: links, .torrent files) and
`archivist gui %f` (folders). The argument must reach the Inspector unchanged in meaning."""
from __future__ import annotations

import configparser
from pathlib import Path

from core.appcli import open_target
from core.cli import make_parser

ROOT = Path(__file__).resolve().parents[3]
MAGNET = "magnet:?xt=urn:btih:" + "ab" * 20 + "&dn=community&tr=udp://tracker.example:6969/announce"


def test_magnet_link_is_kept_as_text_with_its_double_slashes():
    assert open_target(MAGNET) == MAGNET          # a Path would turn udp:// into udp:/


def test_file_url_becomes_the_local_path_unquoted():
    assert open_target("file:///home/a/My%20Archives/0xabc") == Path("/home/a/My Archives/0xabc")


def test_plain_path_and_nothing():
    assert open_target("archives/0xabc") == Path("archives/0xabc")
    assert open_target(None) is None and open_target("") is None


def test_gui_command_takes_the_target_and_keeps_config():
    a = make_parser("gui").parse_args(["gui", "--config", "n.toml", MAGNET])
    assert (a.target, a.config) == (MAGNET, "n.toml")
    assert make_parser("gui").parse_args(["gui"]).target is None


def _entry(name: str) -> configparser.SectionProxy:
    cp = configparser.ConfigParser(interpolation=None)
    cp.optionxform = str
    cp.read(ROOT / "installer" / "files" / name)
    return cp["Desktop Entry"]


def test_desktop_entries_register_the_handlers_the_app_accepts():
    menu, folder = _entry("archivist.desktop"), _entry("archivist-folder.desktop")
    assert menu["Exec"] == "archivist gui %u" and folder["Exec"] == "archivist gui %f"
    assert {"x-scheme-handler/magnet", "application/x-bittorrent"} <= set(menu["MimeType"].strip(";").split(";"))
    assert folder["MimeType"].strip(";").split(";") == ["inode/directory"] and folder["NoDisplay"] == "true"
    assert menu.get("NoDisplay", "false") == "false" and menu["Icon"] == "archivist"
