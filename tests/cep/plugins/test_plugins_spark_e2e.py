"""A plug-in on the real embedded Spark cluster: the sample plug-in is installed in a
temporary folder (not in site-packages), the manager deploys a plan that calls its function
and its stream processor, and the plan topology's executors (which import this checkout,
topology.code: path) find the plug-in on the PYTHONPATH the launcher gives them: events come
out transformed by the plug-in."""

import os
import sys

import pytest

from cep.catalog import plugins
from tests.cep.plugins.install import install
from tests.manager.test_manager_spark import (  # noqa: F401  (the launcher fixture)
    launcher,
    new_manager,
    next_output,
    stand_in_worker,
    wait_state,
)

pytestmark = pytest.mark.slow
PLAN = """@Plan:name('PluginTrades')
@Plan:dist(receiverParallelism='1', publisherParallelism='1')
@Import('TradeStream:1.0.0')
define stream TradeStream (symbol string, price double, volume long);
@Export('Tagged:1.0.0')
define stream Tagged (symbol string, doubled long, label string);
@info(name='tag') @dist(parallel='1')
from TradeStream#demo:tag('p')
select symbol, demo:twice(volume) as doubled, label
insert into Tagged;
"""


@pytest.fixture
def plugin_on_path(tmp_path, monkeypatch):
    target = install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(target))
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(
            [str(target)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    plugins.plugins(reload=True)
    yield target
    monkeypatch.undo()
    sys.modules.pop("cep_sample_plugin", None)
    plugins.plugins(reload=True)


def test_a_plan_using_a_plugin_runs_on_spark_executors(
    tmp_path, redis_db, launcher, plugin_on_path
):
    from cep.protocol.frames import encode_batch

    manager = new_manager(tmp_path, redis_db, launcher)
    try:
        manager.plans.add(-1234, PLAN.replace("TradeStream", "TradeStream"))
        wait_state(manager, -1234, "PluginTrades", "ACTIVE")
        reg, pull, push, cid = stand_in_worker(manager, -1234, "PluginTrades")
        try:
            push.send(encode_batch("TradeStream", [[1, ["IBM", 10.0, 500]], [2, ["X", 1.0, 5]]]))
            assert next_output(pull) == ("Tagged", [[1, ["IBM", 1000, "p"]], [2, ["X", 10, "p"]]])
        finally:
            push.close(0)
            pull.close(0)
            reg.close()
        manager.plans.remove(-1234, "PluginTrades")
    finally:
        manager.stop()
