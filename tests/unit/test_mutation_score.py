"""scripts/mutation_score.py reads mutmut's .meta files: the score per module and the survivors' names."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import mutation_score  # noqa: E402


def _meta(root: Path, module: str, codes: dict) -> None:
    path = root / (module + ".meta")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": codes}))


def test_survivors_name_functions_and_methods(tmp_path):
    _meta(tmp_path, "core/archive/codec.py", {
        "core.archive.codec.x__count_messages__mutmut_4": 0,           # survived
        "core.archive.codec.x_decode_index__mutmut_70": 0,
        "core.archive.codec.x_decode_index__mutmut_71": 1,             # killed
        "core.archive.codec.x_encode__mutmut_2": None})                # not run
    _meta(tmp_path, "core/node/control.py", {
        "core.node.control.x\u01c1ControlNode\u01c1__init____mutmut_15": 0,
        "core.node.control.x\u01c1ControlNode\u01c1_classify__mutmut_103": 0,
        "core.node.control.x\u01c1ControlNode\u01c1start__mutmut_5": 33})   # no tests
    assert mutation_score.survivors(tmp_path) == [
        ("core/archive/codec.py", "_count_messages", 4), ("core/archive/codec.py", "decode_index", 70),
        ("core/node/control.py", "ControlNode.__init__", 15), ("core/node/control.py", "ControlNode._classify", 103)]
    scores = dict(mutation_score.scores(tmp_path))
    assert scores["core/archive/codec.py"]["survived"] == 2 and scores["core/archive/codec.py"]["killed"] == 1
    assert scores["core/node/control.py"]["no tests"] == 1


def test_survivors_flag_prints_one_line_each(tmp_path, capsys):
    _meta(tmp_path, "core/torrent/magnet.py", {"core.torrent.magnet.x_parse__mutmut_9": 0})
    assert mutation_score.main(["--dir", str(tmp_path), "--survivors"]) == 0
    assert capsys.readouterr().out == "core/torrent/magnet.py parse 9\n"
