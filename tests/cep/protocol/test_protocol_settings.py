"""The generic settings loader: layering, types, sources, errors."""

import pytest

from cep.protocol.exceptions import ConfigFileError, SettingValueError, UnknownSettingError
from cep.protocol.settings import Schema, Setting

SCHEMA = Schema(
    "demo",
    [
        Setting("spark", "master", str, "embedded", "where to run"),
        Setting("spark", "slots", int, 16, "worker cores"),
        Setting("spark", "ui", bool, True, "UI on"),
        Setting("topology", "paths", list, [], "extra paths"),
        Setting("topology", "mode", str, "a", "mode", choices=("a", "b")),
    ],
)


def test_layers_defaults_file_env_override(tmp_path):
    (tmp_path / "demo.yaml").write_text("spark:\n  master: spark://h:7077\n  slots: 4\n")
    env = {"CEP_SPARK_SLOTS": "8", "CEP_SPARK_UI": "off", "CEP_TOPOLOGY_PATHS": "/a, /b"}
    s = SCHEMA.load(conf_dir=tmp_path, env=env, overrides={"topology.mode": "b"})
    assert s["spark.master"] == "spark://h:7077"
    assert s.source("spark.master") == str(tmp_path / "demo.yaml")
    assert s["spark.slots"] == 8 and s.source("spark.slots") == "CEP_SPARK_SLOTS"
    assert s["spark.ui"] is False
    assert s["topology.paths"] == ["/a", "/b"]
    assert s["topology.mode"] == "b" and s.source("topology.mode") == "override"
    assert s.section("spark") == {"master": "spark://h:7077", "slots": 8, "ui": False}
    assert s.with_overrides({"spark.slots": 2})["spark.slots"] == 2


def test_missing_file_gives_defaults(tmp_path):
    s = SCHEMA.load(conf_dir=tmp_path, env={})
    assert s["spark.slots"] == 16 and s.source("spark.slots") == "default"


def test_unknown_key_in_file_is_named(tmp_path):
    (tmp_path / "demo.yaml").write_text("spark:\n  slotz: 4\n")
    with pytest.raises(UnknownSettingError, match="'spark.slotz'.*demo.yaml"):
        SCHEMA.load(conf_dir=tmp_path, env={})


def test_bad_value_names_setting_source_and_value(tmp_path):
    with pytest.raises(SettingValueError, match=r"spark.slots: 'many' from CEP_SPARK_SLOTS"):
        SCHEMA.load(conf_dir=tmp_path, env={"CEP_SPARK_SLOTS": "many"})
    with pytest.raises(SettingValueError, match="not one of a, b"):
        SCHEMA.load(conf_dir=tmp_path, env={}, overrides={"topology.mode": "c"})


def test_malformed_file(tmp_path):
    (tmp_path / "demo.yaml").write_text("- just\n- a list\n")
    with pytest.raises(ConfigFileError, match="mapping of sections"):
        SCHEMA.load(conf_dir=tmp_path, env={})


def test_describe_lists_every_setting_with_env_var():
    table = SCHEMA.describe()
    assert "| `spark.slots` | `CEP_SPARK_SLOTS` | int | `16` | worker cores |" in table
    assert table.count("\n") == 1 + len(SCHEMA.settings)
