"""The whole distributed pipeline, count-exact: worker ZeroMQ receiver -> receiver spout ->
Siddhi bolt -> publisher bolt -> worker publisher service -> sink, on a manager with its own
embedded Spark cluster (benchmarks/pipeline_bench.FullSystem, stopped at the end). Every event
sent reaches the sink exactly once, for 1,000- and 4,000-event frames between worker and
spout (4,000-event frames lost ~95% of the events before the publisher bolt was fixed)."""

import os
import shutil
import time

import pytest

from benchmarks.pipeline_bench import STREAM, FullSystem, batches
from publishers.base import Sink
from receivers.zmq_receiver import ZmqEventClient

pytestmark = pytest.mark.slow
N = 400_000


class Volumes(Sink):
    type = "volumes"

    def __init__(self):
        super().__init__("Out", {})
        self.seen = []

    def write_batch(self, events):
        self.seen.extend(row[2] for _, row in events)


@pytest.mark.parametrize("frame_events", [1000, 4000])
def test_every_event_sent_reaches_the_sink_once(tmp_path, frame_events):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for the pipeline e2e test (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    system = FullSystem(str(tmp_path), batch_size=frame_events)
    try:
        sink = Volumes()
        system.worker.plans[(-1234, "BenchFilter")].service.sink_set.add("Out", sink)
        client = ZmqEventClient(system.worker.zmq_url)
        try:
            for b in batches(N, size=4000):
                client.send(("-1234", "BenchFilter", STREAM), b)
        finally:
            client.close()
        deadline = time.monotonic() + 120
        while len(sink.seen) < N and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # anything extra (duplicates) would arrive now
        inflow = system.worker.status()["plans"]["-1234/BenchFilter"]["inflow"]["streams"][0]
        assert inflow["refused"] == 0 and inflow["sent"] == N
        assert len(sink.seen) == N, f"{len(sink.seen)} of {N} at the sink; inflow {inflow}"
        assert sorted(sink.seen) == list(range(N))
    finally:
        system.close()
