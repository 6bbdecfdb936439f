"""Icons (SVG drawn for Archivist), the style sheet and the desktop file."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def icon(name: str | None):
    from PySide6.QtGui import QIcon
    p = HERE / "icons" / f"{name}.svg"
    return QIcon(str(p)) if name and p.exists() else QIcon()


def style_sheet() -> str:
    return (HERE / "archivist.qss").read_text(encoding="utf-8")
