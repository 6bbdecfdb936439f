"""One default Spark master (core.pipeline.session.DEFAULT_MASTER) for the node's config, `archivist spark-*`
and the window's Settings, and the first-run screen writes the master chosen in Settings into the new config.
Before, Settings said local[2] until a community existed and local[*] after, and the first run dropped a typed
master."""
from __future__ import annotations

import argparse

from core.node.config import NodeSettings, first_run_settings, load, save
from core.pipeline import DEFAULT_MASTER
from gui.views.settings import DEFAULTS

CID = "0x02" + "ab" * 32


def test_every_default_is_the_one_constant(tmp_path):
    from core.pipeline import cli
    p = argparse.ArgumentParser()
    cli.add_spark_arguments(p)
    config = tmp_path / "c.toml"
    config.write_text(f'data_dir = "{tmp_path}"\n')
    assert DEFAULT_MASTER == "local[*]"
    assert NodeSettings(tmp_path).spark_master == load(config).spark_master == DEFAULTS["spark_master"]
    assert DEFAULTS["spark_master"] == DEFAULT_MASTER
    assert p.parse_args([]).master == DEFAULT_MASTER


def test_the_first_run_keeps_the_master_chosen_in_settings(tmp_path):
    s = first_run_settings(role="member", community_id=CID, data_dir=tmp_path, spark_master=" spark://h:7077 ")
    save(s, tmp_path / "a.toml")
    assert load(tmp_path / "a.toml").spark_master == "spark://h:7077"
    assert first_run_settings(role="member", community_id=CID, data_dir=tmp_path).spark_master == DEFAULT_MASTER


def test_every_reader_checks_a_master_the_same(tmp_path, qtbot):
    """One check (core.pipeline.cluster_conf.master_problem) for the config file, `--master` and the window's Spark
    box. Before, only the box checked: the config took any text, and a node started with it failed in Spark."""
    import pytest

    from core.node.config import ConfigError
    from core.pipeline import cli
    from core.pipeline.cluster_conf import master_problem
    from gui.views.spark_settings import SparkBox
    p = argparse.ArgumentParser(exit_on_error=False)
    cli.add_spark_arguments(p)
    from PySide6.QtWidgets import QLabel
    box = SparkBox(NodeSettings(tmp_path), QLabel)
    qtbot.addWidget(box)
    for master, ok in (("local[*]", True), ("local[2]", True), ("spark://h:7077", True), ("yarn", True),
                       ("k8s://https://h:6443", True), ("spark://h", False), ("mesos://h:5050", False),
                       ("http://h:7077", False)):
        problem = master_problem(master)
        assert (problem is None) == ok, master
        box.master.setText(master)
        assert box.check() == problem
        config = tmp_path / "c.toml"
        config.write_text(f'data_dir = "{tmp_path}"\n[spark]\nmaster = "{master}"\n')
        if ok:
            assert load(config).spark_master == master == p.parse_args(["--master", master]).master
        else:
            with pytest.raises(ConfigError) as e:
                load(config)
            assert str(e.value) == f"spark.master: {problem}"
            with pytest.raises(argparse.ArgumentError):
                p.parse_args(["--master", master])
