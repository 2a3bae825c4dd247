"""Shared packing (issue 14) without Spark: the pool of a topology, how its instances are
packed into Python workers, the slot pool's first-come-first-served admission, and the
WAITING_FOR_SLOTS status of a real SharedDriver (its ZeroMQ sockets, no Spark)."""

import json
import time

import pytest

from topology.exceptions import SettingValueError
from topology.launcher import _handle
from topology.control import TopologyHandle, run_dir_alive
from topology.model import Topology
from topology.pools import SlotPool, pool_name, task_groups
from topology.shared_driver import SharedDriver
from topology.shared_launch import SharedTopologyHandle
from topology.spark_settings import load_spark_settings
from topology.testing import CollectBolt, ListSpout


def settings(**overrides):
    return load_spark_settings(overrides={f"topology.{k}": v for k, v in overrides.items()}, env={})


def test_packing_setting_defaults_to_app_per_plan_and_rejects_other_values():
    assert settings()["topology.packing"] == "app-per-plan"
    assert settings(packing="shared")["topology.packing"] == "shared"
    with pytest.raises(SettingValueError, match="not one of app-per-plan, shared"):
        settings(packing="packed")


def test_pool_is_the_tenant_or_one_named_pool():
    assert pool_name("Stock[-1234]", settings()) == "cep-pool[-1234]"
    assert pool_name("Stock[7]", settings()) == "cep-pool[7]"
    assert pool_name("WordCount", settings()) == "cep-pool[default]"
    assert pool_name("Stock[7]", settings(pool="gold")) == "cep-pool[gold]"


def test_task_groups_pack_instances_into_workers():
    assert task_groups(4, 0) == [[0, 1, 2, 3]]  # a whole plan in one Python worker
    assert task_groups(4, 1) == [[0], [1], [2], [3]]  # app-per-plan's one instance per task
    assert task_groups(5, 2) == [[0, 1], [2, 3], [4]]
    assert task_groups(3, 8) == [[0, 1, 2]]


def test_slot_pool_admits_first_come_first_served_and_frees_on_release():
    pool = SlotPool(4, "the shared application P")
    assert pool.request("a", 2) and pool.request("b", 1)
    assert not pool.request("c", 2)  # 1 free
    assert not pool.request("d", 1)  # would fit, but c came first and fits once a slot frees
    assert pool.waiting == [("c", 2), ("d", 1)]
    assert pool.reason("c", 2) == (
        "needs 2 free slots in the shared application P; it has 4, "
        "1 free; it starts when another topology of the "
        "application ends"
    )
    pool.release("b")
    assert pool.request("c", 2) and not pool.request("d", 1)
    assert pool.reason("c", 2) is None and pool.free == 0
    pool.release("a")
    assert pool.request("d", 1)
    assert pool.describe() == {"total": 4, "used": 3, "topologies": 2, "waiting": []}


def test_a_topology_bigger_than_the_pool_waits_without_blocking_others():
    pool = SlotPool(4, "the shared application P")
    assert not pool.request("huge", 5)
    assert "more than the whole application" in pool.reason("huge", 5)
    assert pool.request("small", 1)  # huge can never fit: it blocks nobody
    pool.release("huge")  # a killed waiting topology leaves the queue
    assert pool.waiting == []


class FakeApp:
    """What a SharedDriver needs of its PoolApp."""

    def __init__(self, slots, executors=True):
        self.name, self.sc, self.master = "cep-pool[-1234]", None, None
        self.slots, self.executors = (
            SlotPool(slots, f"the shared application {self.name}"),
            executors,
        )
        self.ended_names = []

    def executors_ready(self):
        return self.executors

    def ended(self, name):
        self.ended_names.append(name)


def plan(name, bolts=3):
    t = Topology(name)
    t.add_spout("src", ListSpout, outputs={"default": ["x"]}, config={"rows": []})
    t.add_bolt("sink", CollectBolt, inputs={"src": "shuffle"}, parallelism=bolts)
    return t


def shared_driver(tmp_path, app, name, per_task=0):
    launch = {
        "host": "127.0.0.1",
        "executors": 4,
        "kill_wait_secs": 1,
        "master_ui_url": "http://127.0.0.1:9",
        "options": {},
        "instances_per_task": per_task,
    }
    run_dir = tmp_path / name
    run_dir.mkdir()
    driver = SharedDriver(plan(f"{name}[-1234]"), launch, run_dir, app)
    driver.phase = "waiting"
    return driver


def test_shared_driver_waits_for_slots_with_the_reason_then_releases_them(tmp_path):
    app = FakeApp(slots=2)
    first = shared_driver(tmp_path, app, "First")  # 4 instances in one worker: 1 slot
    second = shared_driver(tmp_path, app, "Second", per_task=1)  # 4 workers: 4 slots
    try:
        first._wait_for_slots()
        assert (first.partitions, second.partitions) == (1, 4)
        assert app.slots.request("Second[-1234]", second.partitions) is False
        status = second.status()
        assert status["status"] == "WAITING_FOR_SLOTS"
        assert status["reason"].startswith(
            "needs 4 free slots in the shared application "
            "cep-pool[-1234]; it has 2, 1 free: more than the "
            "whole application"
        )
        assert (status["packing"], status["application"], status["workers"]) == (
            "shared",
            "cep-pool[-1234]",
            1,
        )
        assert first.status()["status"] == "SUBMITTED"  # slots given: starting its tasks
        app.executors = False
        assert "waits for its executor" in second.status()["reason"]
        first._stop_context()  # the topology ended: its slot goes back, the app stays
        assert app.slots.free == 2 and app.ended_names == ["First[-1234]"]
    finally:
        for driver in (first, second):
            driver.zctx.destroy(linger=0)


def test_a_shared_topology_handle_is_chosen_and_ends_with_its_final_status(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    own = {"pid": 1, "name": "Own[-1234]"}  # pid 1 is alive: an application of its own
    (run_dir / "submit.json").write_text(json.dumps(own))
    assert type(_handle("Own[-1234]", run_dir)) is TopologyHandle
    (run_dir / "submit.json").write_text(
        json.dumps({**own, "pool": "cep-pool[-1234]", "pool_dir": str(tmp_path)})
    )
    assert isinstance(_handle("Own[-1234]", run_dir), SharedTopologyHandle)
    assert run_dir_alive(run_dir)  # the shared application runs, the topology too
    (run_dir / "final.json").write_text(json.dumps({"name": "Own[-1234]", "status": "KILLED"}))
    assert not run_dir_alive(run_dir)  # ended, though its application runs on
    assert _handle("Own[-1234]", run_dir).status()["status"] == "KILLED"


class Master:
    def __init__(self):
        self.value = None

    def state(self):
        return self.value


def test_the_shared_application_ends_once_its_master_is_gone_after_its_topologies():
    from topology.shared_app import PoolApp

    app = PoolApp.__new__(PoolApp)  # its master watch only: no SparkContext
    app.name, app.launch, app.master = "cep-pool[-1234]", {"master_lost_s": -9.8}, Master()
    app._lost_since, app._master_seen = None, False
    assert not app._master_lost()  # not seen yet (starting): never lost
    app.master.value = {"status": "ALIVE"}
    assert not app._master_lost()
    app.master.value = None
    assert not app._master_lost()  # gone for less than master_lost_s + 10 s (0.2 s here)
    time.sleep(0.3)
    assert app._master_lost()  # the next submit starts a new application
