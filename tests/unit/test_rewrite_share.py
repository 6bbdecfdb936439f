"""tests/support/rewrite_share.py: the bytecode one xdist worker writes is what pytest itself reads on import for
the other workers (its asserts rewritten), and a file changed since is rewritten."""
import os

import pytest
from _pytest.assertion import rewrite as rw

from tests.support.rewrite_share import rewrite_share, rewritten_files


def _pyc(fn):
    return rw.get_cache_dir(fn) / (fn.name[:-3] + rw.PYC_TAIL)


def test_written_bytecode_is_read_by_pytest_with_its_asserts_rewritten(tmp_path, request):
    fn = tmp_path / "test_sample.py"
    fn.write_text("def test_it():\n    items = [1, 2]\n    assert len(items) == 3\n")
    assert rewrite_share(request.config, [fn], 0, 1) == 1
    co = rw._read_pyc(fn, _pyc(fn))                  # what pytest's import hook does first
    assert co is not None
    ns = {"__name__": "test_sample"}
    exec(co, ns)
    with pytest.raises(AssertionError) as e:
        ns["test_it"]()
    assert "assert 2 == 3" in str(e.value) and "where 2 = len([1, 2])" in str(e.value)   # pytest's explanation
    assert rewrite_share(request.config, [fn], 0, 1) == 0         # already there: not written again


def test_each_worker_writes_its_share_and_a_changed_file_again(tmp_path, request):
    files = []
    for i in range(5):
        fn = tmp_path / f"test_m{i}.py"
        fn.write_text(f"def test_{i}():\n    assert {i} == {i}\n")
        files.append(fn)
    assert rewrite_share(request.config, files, 1, 2) == 2        # the second of two workers: files 1 and 3
    assert [_pyc(fn).exists() for fn in files] == [False, True, False, True, False]
    assert rewrite_share(request.config, files, 0, 2) == 3
    files[3].write_text("def test_3():\n    assert 3 == 3  # changed\n")
    os.utime(files[3], (1, 1))                                    # another mtime: the old bytecode is stale
    assert rw._read_pyc(files[3], _pyc(files[3])) is None
    assert rewrite_share(request.config, files, 1, 2) == 1


def test_rewritten_files_are_test_modules_and_conftests_outside_node_packages(tmp_path):
    for rel in ("conftest.py", "a/test_x.py", "a/helper.py", "js/node_modules/p/test_y.py", "a/__pycache__/test_z.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert rewritten_files(tmp_path) == [tmp_path / "a" / "test_x.py", tmp_path / "conftest.py"]
