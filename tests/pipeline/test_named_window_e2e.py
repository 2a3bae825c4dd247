"""A plan with a named window deployed on real Spark: worker ZeroMQ receiver -> receiver
spout -> Siddhi bolt (holding the window, its writer and its reader) -> publisher bolt ->
worker publisher -> sink, on a manager with its own embedded Spark cluster
(benchmarks/pipeline_bench.FullSystem, stopped at the end). The sums over the window's last
three rows reach the sink, and the query plan places the window in that one bolt."""

import os
import shutil
import time

import pytest
from lxml import etree

from benchmarks.pipeline_bench import STREAM, FullSystem, batches
from publishers.base import Sink
from receivers.zmq_receiver import ZmqEventClient

pytestmark = pytest.mark.slow
N = 300
NAME = "WindowPlan"
PLAN = f"""@Plan:name('{NAME}')
@Plan:dist(receiverParallelism='1', publisherParallelism='1')
@Import('{STREAM}:1.0.0')
define stream {STREAM} (symbol string, price double, volume long);
@Export('Out:1.0.0')
define stream Out (volume long, total long);
define window Last3 (volume long) length(3);
@info(name='fill')
from {STREAM} select volume insert into Last3;
@info(name='sum')
from Last3 select volume, sum(volume) as total insert into Out;
"""


class Totals(Sink):
    type = "totals"

    def __init__(self):
        super().__init__("Out", {})
        self.seen = []

    def write_batch(self, events):
        self.seen.extend(tuple(row) for _, row in events)


def test_a_named_window_plan_deploys_and_runs_on_spark(tmp_path):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for the Spark e2e test (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    system = FullSystem(str(tmp_path), plan=PLAN)
    try:
        root = etree.fromstring(system.manager.plans.query_plan(-1234, NAME).encode())
        (holder,) = [
            p for p in root.iterfind("event-processor") if p.find("window-definitions") is not None
        ]
        assert "define window Last3" in holder.findtext("window-definitions")
        assert "insert into Last3" in holder.findtext("queries")
        assert "from Last3" in holder.findtext("queries")
        sink = Totals()
        system.worker.plans[(-1234, NAME)].service.sink_set.add("Out", sink)
        client = ZmqEventClient(system.worker.zmq_url)
        try:
            for b in batches(N, size=100):
                client.send(("-1234", NAME, STREAM), b)
        finally:
            client.close()
        deadline = time.monotonic() + 120
        while len(sink.seen) < N and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # anything extra would arrive now
        want = [(i, sum(range(max(0, i - 2), i + 1))) for i in range(N)]  # volumes are 0..N-1
        assert sink.seen == want, f"{len(sink.seen)} of {N}: {sink.seen[:6]}"
    finally:
        system.close()
