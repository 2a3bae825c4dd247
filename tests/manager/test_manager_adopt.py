"""Issue 11: a restarted manager adopts the topologies still running from the same query plan,
keeps the plan versions it stored (workers never see a renumbered plan), and redeploys only a
plan whose stored text now builds another query plan. The fake launcher stands for Spark
(the handles outlive the manager, as running topologies do); the stores are real."""

from pathlib import Path

from manager.server import Manager
from manager.settings import load_manager_settings
from manager.store import FileStore
from tests.manager.manager_fakes import FakeHandle, FakeLauncher
from tests.manager.manager_helpers import poll
from tests.manager.manager_plans import STAT_PLAN

SAMPLE = (Path(__file__).resolve().parents[2] / "conf/samples/StockAnalysis.siddhiql").read_text()


class RunDirLauncher(FakeLauncher):
    """Handles with a real run directory (where the manager keeps the query plan's hash)."""

    def __init__(self, root):
        super().__init__()
        self.root = root

    def submit(self, topology):
        handle = super().submit(topology)
        handle.run_dir = self.root / f"run{len(self.submitted)}"
        handle.run_dir.mkdir()
        return handle


def manager(data_dir, launcher, redis_url=None):
    overrides = {
        "manager.data_dir": str(data_dir),
        "registry.port": 0,
        "registry.bind_host": "127.0.0.1",
        "manager.advertised_host": "127.0.0.1",
    }
    if redis_url:
        overrides["store.redis_url"] = redis_url
    return Manager(load_manager_settings(overrides=overrides, env={}), launcher=launcher).start()


def state(m, name):
    return m.topologies.status(-1234, name)["state"]


def test_a_restarted_manager_adopts_running_topologies_and_keeps_versions(tmp_path):
    launcher = RunDirLauncher(tmp_path)
    first = manager(tmp_path / "data", launcher)
    first.plans.add(-1234, STAT_PLAN)
    first.plans.add(-1234, SAMPLE)
    poll(lambda: state(first, "StockAnalysis") == "ACTIVE", timeout=5)
    before = first.plans.deployments()
    first.stop()  # the topologies keep running (a kill -9 does the same)
    second = manager(tmp_path / "data", launcher)
    try:
        poll(
            lambda: (
                state(second, "StockAnalysis") == "ACTIVE"
                and state(second, "StatExecutionPlan") == "ACTIVE"
            ),
            timeout=5,
        )
        assert len(launcher.submitted) == 2 and launcher.killed == []  # adopted, not redeployed
        after = second.plans.deployments()
        assert after == before  # the same versions: workers keep their plans
        assert second.topologies.status(-1234, "StockAnalysis")["adopted"] is True
        second.plans.add(-1234, STAT_PLAN.replace("StatExecutionPlan", "Third"))
        assert second.plans.deployments()["version"] > before["version"]  # never renumbered
    finally:
        second.stop()


def test_a_plan_whose_stored_text_changed_is_redeployed(tmp_path):
    launcher = RunDirLauncher(tmp_path)
    first = manager(tmp_path / "data", launcher)
    first.plans.add(-1234, SAMPLE)
    poll(lambda: state(first, "StockAnalysis") == "ACTIVE", timeout=5)
    version = first.plans.versions[(-1234, "StockAnalysis")]
    first.stop()
    changed = SAMPLE.replace("price > 500.0", "price > 600.0")
    assert changed != SAMPLE
    FileStore(tmp_path / "data").save(-1234, "StockAnalysis", changed)
    second = manager(tmp_path / "data", launcher)
    try:
        poll(
            lambda: len(launcher.submitted) == 2 and state(second, "StockAnalysis") == "ACTIVE",
            timeout=5,
        )
        assert launcher.killed == ["StockAnalysis[-1234]"]
        assert second.plans.versions[(-1234, "StockAnalysis")] == version
    finally:
        second.stop()


def test_a_topology_without_the_plan_hash_is_redeployed(tmp_path):
    launcher = FakeLauncher()  # run dirs that cannot hold the hash: nothing to compare
    first = manager(tmp_path / "data", launcher)
    first.plans.add(-1234, SAMPLE)
    poll(lambda: state(first, "StockAnalysis") == "ACTIVE", timeout=5)
    first.stop()
    second = manager(tmp_path / "data", launcher)
    try:
        poll(lambda: len(launcher.submitted) == 2, timeout=5)
        assert launcher.killed == ["StockAnalysis[-1234]"]
    finally:
        second.stop()
    assert isinstance(launcher.handles["StockAnalysis[-1234]"], FakeHandle)


def test_versions_survive_in_the_redis_store(tmp_path, redis_db):
    launcher = RunDirLauncher(tmp_path)
    first = manager(tmp_path / "data", launcher, redis_db)
    first.plans.add(-1234, SAMPLE)
    before = first.plans.deployments()
    first.stop()
    second = manager(tmp_path / "data2", launcher, redis_db)  # the state is in Redis only
    try:
        assert second.plans.deployments() == before
        poll(lambda: state(second, "StockAnalysis") == "ACTIVE", timeout=5)
        assert len(launcher.submitted) == 1
    finally:
        second.stop()
