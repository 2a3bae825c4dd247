"""The broker flows of the Spark end-to-end tests: a real system (manager, worker, embedded
Spark cluster) running a plan whose streams come in through broker sources and go out through
broker sinks, and the helpers that send events to a broker, read what came out, and kill -9 a
topology task (as tests/pipeline/kill_matrix.py does)."""

import json
import os
import shutil
import signal

import pytest

from tests.conftest import IN_CI


def start_system(root, plan, connections):
    """A FullSystem running `plan`, with `connections` (connections.brokers entries) at the
    manager (the plan check) and at the worker (the sources and sinks); checkpoints every
    second, so kills happen between checkpoints."""
    if shutil.which("java") is None:
        if IN_CI:
            pytest.fail("java is required for this e2e test (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    from benchmarks.pipeline_bench import FullSystem

    return FullSystem(
        str(root),
        checkpoint_interval=1.0,
        plan=plan,
        spark={"topology.metrics_interval_s": 0.5, "topology.max_restarts": 100000},
        manager={"connections.brokers": connections},
        worker={"connections.brokers": connections},
    )


def handle(system):
    return system.manager.plans.topologies.deployments[(-1234, system.plan_name)].handle


def task_pids(system, target):
    """The pids of topology task `target` ('spout', 'siddhi-0', 'publisher', ...) in every
    component of that kind (a plan of several execution groups has a Siddhi bolt each)."""
    h = handle(system)
    spec = json.loads((h.run_dir / "spec.json").read_text())
    kind, _, index = target.partition("-")
    suffix = {"spout": ":ReceiverSpout", "siddhi": ":SiddhiBolt", "publisher": ":PublisherBolt"}[
        kind
    ]
    components = h.metrics()["components"]
    return sorted(
        {
            components[c["id"]]["instances"][int(index or 0)]["pid"]
            for c in spec["components"]
            if c["class"].endswith(suffix)
        }
    )


def kill_task(system, target):
    """kill -9 the task `target` of every component of its kind; returns the stage's restart
    count before the kill."""
    restarts = handle(system).status()["restarts"]
    for pid in task_pids(system, target):
        os.kill(pid, signal.SIGKILL)
    return restarts
