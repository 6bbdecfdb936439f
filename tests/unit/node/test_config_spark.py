"""[spark] secret_file / encrypt in the node's TOML: read (path relative to the file), checked, written back."""
from __future__ import annotations

import pytest

from core.node.config import ConfigError, NodeSettings, dump, load, save


def write(tmp_path, text):
    p = tmp_path / "node.toml"
    p.write_text(text)
    return p


def test_spark_security_keys_are_read_relative_to_the_file(tmp_path):
    s = load(write(tmp_path, 'data_dir = "d"\n[spark]\nmaster = "spark://10.0.0.5:7077"\n'
                             'secret_file = "keys/spark.secret"\nencrypt = true\n'))
    assert s.spark_master == "spark://10.0.0.5:7077"
    assert s.spark_secret_file == str(tmp_path / "keys" / "spark.secret")
    assert s.spark_encrypt is True
    s = load(write(tmp_path, 'data_dir = "d"\n[spark]\nsecret_file = "/etc/archivist/spark.secret"\n'))
    assert (s.spark_secret_file, s.spark_encrypt) == ("/etc/archivist/spark.secret", False)


def test_defaults_have_no_secret_and_no_encryption(tmp_path):
    s = load(write(tmp_path, 'data_dir = "d"\n'))
    assert (s.spark_secret_file, s.spark_encrypt) == (None, False)
    assert "[spark]" not in dump(s, tmp_path)


def test_encrypt_needs_the_secret_and_a_boolean(tmp_path):
    with pytest.raises(ConfigError, match="spark.encrypt needs spark.secret_file"):
        load(write(tmp_path, 'data_dir = "d"\n[spark]\nencrypt = true\n'))
    with pytest.raises(ConfigError, match="spark.encrypt must be true or false, not 'yes'"):
        load(write(tmp_path, 'data_dir = "d"\n[spark]\nsecret_file = "s"\nencrypt = "yes"\n'))


def test_spark_security_keys_round_trip(tmp_path):
    s = NodeSettings(data_dir=tmp_path / "data", spark_master="spark://m:7077",
                     spark_secret_file=str(tmp_path / "spark.secret"), spark_encrypt=True)
    text = dump(s, tmp_path)
    assert 'secret_file = "spark.secret"' in text and "encrypt = true" in text
    path = save(s, tmp_path / "node.toml")
    back = load(path)
    assert (back.spark_master, back.spark_secret_file, back.spark_encrypt) == (
        "spark://m:7077", str(tmp_path / "spark.secret"), True)


def test_stage_dir_is_read_relative_to_the_file_and_round_trips(tmp_path):
    s = load(write(tmp_path, 'data_dir = "d"\n[spark]\nmaster = "spark://m:7077"\nstage_dir = "shared/stage"\n'))
    assert s.spark_stage_dir == str(tmp_path / "shared" / "stage")
    assert load(write(tmp_path, 'data_dir = "d"\n')).spark_stage_dir is None
    text = dump(s, tmp_path)
    assert 'stage_dir = "shared/stage"' in text
    back = load(save(s, tmp_path / "saved.toml"))
    assert back.spark_stage_dir == str(tmp_path / "shared" / "stage")
    with pytest.raises(ConfigError, match="config has a bad value"):
        load(write(tmp_path, 'data_dir = "d"\n[spark]\nstage_dir = 5\n'))
