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



def test_module_run_summary_scores_the_decided_mutants_and_sums_every_module(tmp_path, monkeypatch, capsys):
    """scripts/mutation_module.py (`make mutation`): each module's line leaves the mutants not checked out of the
    score, and --all ends with a line that sums every module and fails the run when one is under --min."""
    from collections import Counter

    import mutation_module
    pct, line = mutation_module.summary_line(
        "core/x.py", Counter({"killed": 17, "survived": 2, "no tests": 1, "not checked": 5}), 90)
    assert pct == 85.0
    assert line.split("\t")[1:] == ["core/x.py", "25", "17", "2", "1", "5", "85.0%", "1.5 min"]
    pct, line = mutation_module.summary_line("core/y.py", Counter({"not checked": 3}), 0)
    assert pct is None and line.split("\t")[7] == "-"

    runs = {"core/a.py": Counter({"killed": 9, "survived": 1}), "core/b.py": Counter({"killed": 7, "survived": 3})}
    monkeypatch.setattr(mutation_module, "MODULES", {m: ["tests/t.py"] for m in runs})

    def run_one(module, tests, work, head, nice):
        pct, line = mutation_module.summary_line(module, runs[module], 60)
        return 0, pct, line, runs[module]
    monkeypatch.setattr(mutation_module, "run_one", run_one)
    assert mutation_module.main(["--all", "--work", str(tmp_path), "--min", "85"]) == 1
    rows = [r.split("\t") for r in capsys.readouterr().out.strip().splitlines()[-3:]]
    assert [(r[1], r[7]) for r in rows] == [("core/a.py", "90.0%"), ("core/b.py", "70.0%"), ("all 2 modules", "80.0%")]
    assert rows[1][-1] == "UNDER MIN" and rows[2][2:5] == ["20", "16", "4"]
