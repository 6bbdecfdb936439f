"""Imports after PySide6 without reading every module's source.

PySide6 (6.11) replaces `builtins.__import__`; after each import its `shibokensupport.feature.feature_imported`
asks `_mod_uses_pyside(module)`, which calls `inspect.getsource(module)` and looks for the word "PySide6". The
window imports a lot after PySide6: pyspark, pandas and pyarrow when Spark warms up, libp2p when the node starts,
protobuf for the Inspector. Each of their ~1,500 modules had its source read and split into lines while holding
the GIL (1.3-1.6 s of CPU against 1.0-1.1 s without the scan for pyspark + pandas + pyarrow + libp2p; see
`tests/gui/test_import_hook.py`), which is time the GUI thread waits.

The answer only matters to modules that select a PySide feature (`from __feature__ import snake_case`); no module
here does. So the check here is the module's globals (a PySide6 module or class bound in it), and the source scan
stays for Archivist's own `gui` package, whose modules often import PySide6 inside functions."""
from __future__ import annotations

import sys
from types import ModuleType

_QT_PREFIXES = ("PySide6", "shiboken6")


def _binds_qt(module: ModuleType) -> bool:
    for v in list(vars(module).values()):
        name = v.__name__ if isinstance(v, ModuleType) else getattr(v, "__module__", None)
        if isinstance(name, str) and name.startswith(_QT_PREFIXES):
            return True
    return False


def install() -> bool:
    """Replace the source scan (idempotent). False when this PySide6 has no such hook (nothing to do)."""
    feature = sys.modules.get("shibokensupport.feature")
    scan = getattr(feature, "_mod_uses_pyside", None)
    if scan is None:
        return False
    if getattr(scan, "archivist", False):
        return True
    original = scan

    def uses_pyside(module) -> bool:
        name = getattr(module, "__name__", "") or ""
        if name == "gui" or name.startswith("gui."):
            return original(module)
        return _binds_qt(module)
    uses_pyside.archivist = True
    feature._mod_uses_pyside = uses_pyside
    return True
