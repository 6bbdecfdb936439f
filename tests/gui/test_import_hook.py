"""gui/import_hook.py: after PySide6, a module that binds nothing of Qt is imported without its source being read,
and one that does still counts as a PySide module (the answer PySide6's own scan gives). In a fresh interpreter:
the hook is process-wide and this process has imported most modules already."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import json, linecache, sys
sys.path.insert(0, sys.argv[1])
from gui.app import make_app
app = make_app()
if sys.argv[2] == "off":       # PySide6's own scan, as before the hook
    feature = sys.modules["shibokensupport.feature"]
    feature._mod_uses_pyside = feature._mod_uses_pyside.__closure__[0].cell_contents
import plain_module, qt_module
feature = sys.modules["shibokensupport.feature"]
print(json.dumps({m.__name__: [feature.pyside_feature_dict.get(m.__name__), m.__file__ in linecache.cache]
                  for m in (plain_module, qt_module)}))
"""


@pytest.mark.parametrize("hook", ["on", "off"])
def test_a_module_without_qt_is_imported_without_reading_its_source(tmp_path, hook):
    (tmp_path / "plain_module.py").write_text('"""Says PySide6 in its text, binds nothing of it."""\nVALUE = 1\n')
    (tmp_path / "qt_module.py").write_text("from PySide6.QtCore import QObject\n")
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), hook], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if hook == "on":
        assert got == {"plain_module": [-1, False], "qt_module": [0, False]}
    else:   # the reference: PySide6 read both sources and took the word in the docstring for a use
        assert got == {"plain_module": [0, True], "qt_module": [0, True]}
