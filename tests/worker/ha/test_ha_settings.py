"""The ha.* settings: what a pair needs, refused with the setting's name and the reason."""

import pytest

from cep.worker.config import load_config
from cep.worker.exceptions import WorkerConfigError
from cep.worker.ha import create

BASE = {"worker.mode": "standalone", "ha.peer": "http://127.0.0.1:9"}


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"worker.mode": "distributed"}, "an HA pair is for standalone workers"),
        ({"ha.peer": "127.0.0.1:9090"}, "is not an http(s):// URL"),
        ({"ha.failover_s": 1.0, "ha.sync_interval": 1.0}, "at least twice ha.sync_interval"),
        ({"ha.sync_interval": 0.0}, "ha.sync_interval"),
        ({"ha.queue_events": 0}, "ha.queue_events"),
    ],
)
def test_bad_ha_settings_are_refused_by_name(tmp_path, overrides, message):
    with pytest.raises(WorkerConfigError, match="setting ha") as info:
        load_config(overrides={**BASE, **overrides}, conf_dir=str(tmp_path))
    assert message in str(info.value)


def test_a_pair_without_the_cluster_secret_does_not_start(tmp_path, monkeypatch):
    monkeypatch.delenv("CEP_CLUSTER_SECRET", raising=False)
    cfg = load_config(overrides=BASE, conf_dir=str(tmp_path))
    with pytest.raises(WorkerConfigError, match="needs the cluster secret"):
        create(cfg)


def test_env_and_flags_reach_the_settings(tmp_path):
    import argparse

    from cep.cli.worker import overrides_from_args, subparser_hook

    parser = argparse.ArgumentParser()
    subparser_hook(parser.add_subparsers())
    args = parser.parse_args(
        [
            "worker",
            "--mode",
            "standalone",
            "--ha-peer",
            "http://h:1",
            "--ha-forward",
            "--redis-url",
            "redis://r:6379/0",
        ]
    )
    cfg = load_config(
        overrides_from_args(args), conf_dir=str(tmp_path), env={"CEP_HA_FAILOVER_S": "3"}
    )
    assert (cfg["ha.peer"], cfg["ha.forward"], cfg["ha.redis_url"], cfg["ha.failover_s"]) == (
        "http://h:1",
        True,
        "redis://r:6379/0",
        3.0,
    )
    assert cfg["ha.sync_interval"] == 1.0 and cfg["ha.playback"] is True
