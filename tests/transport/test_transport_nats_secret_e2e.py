"""The NATS JetStream transport end to end on Spark with a nats-server that wants a user and a
password: the topology spec the launcher writes under Spark's state dir (spec.json, read by
every executor) holds neither the password nor the server's address, only the connection's
name; launch.json (mode 0600) carries the URL. The plan still runs: events posted to the
worker reach its sink; its status shows the inflow stream read to the end by the spout's
consumer; removing the plan deletes its streams on the server."""

import json
import os
import shutil
import stat
import time
import urllib.request

import nats
import pytest

from benchmarks.pipeline_bench import FullSystem
from connectors.aio import LoopThread
from connectors.nats_transport import inflow_stream, outflow_stream
from tests.connectors.servers import start_nats

pytestmark = pytest.mark.slow
T, P = -1234, "BenchFilter"
PASSWORD = "e2e-s3cret"


def poll(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)
    return value


def streams(url):
    loop = LoopThread("test streams")

    async def names():
        nc = await nats.connect(url)
        try:
            return {s.config.name for s in await nc.jetstream().streams_info()}
        finally:
            await nc.close()

    try:
        return loop.run(names(), 30)
    finally:
        loop.close()


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for this e2e test (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    root = tmp_path_factory.mktemp("nats-secret")
    server = start_nats(root / "nats", user="cep", password=PASSWORD)
    brokers = [f"bus={server.url}"]
    system = None
    try:
        system = FullSystem(
            str(root),
            checkpoint_interval=1.0,
            wal=False,
            manager={
                "topology.transport": "nats",
                "topology.nats_connection": "bus",
                "connections.brokers": brokers,
            },
            worker={"connections.brokers": brokers},
        )
        system.nats = server
        yield system
    finally:
        if system is not None:
            system.close()
        server.stop()


def test_the_spec_holds_no_secret_the_plan_runs_and_its_removal_deletes_its_streams(system):
    handle = system.manager.plans.topologies.deployments[(T, P)].handle
    spec = (handle.run_dir / "spec.json").read_text()
    assert PASSWORD not in spec and str(system.nats.port) not in spec
    assert '"nats_connection": "bus"' in spec
    launch = handle.run_dir / "launch.json"
    assert stat.S_IMODE(launch.stat().st_mode) == 0o600
    assert json.loads(launch.read_text())["options"]["security"]["brokers"] == {
        "bus": system.nats.url
    }
    body = json.dumps(
        [{"timestamp": 1_700_000_000_000 + i, "data": ["IBM", 1.0, i]} for i in range(500)]
    ).encode()
    request = urllib.request.Request(
        f"{system.worker.http_url}/events/{T}/{P}/StockStream",
        body,
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        assert json.loads(resp.read())["accepted"] == 500
    poll(lambda: system.count >= 500, 120, "500 events at the sink")
    status = poll(
        lambda: (
            (s := system.manager.plans.status(T, P))["inflow"]["jetstream"].get("pending") == 0
            and s["inflow"]["jetstream"].get("published", 0) >= 1
            and s
        ),
        60,
        "the inflow stream read to its end",
    )
    assert status["inflow"]["jetstream"]["consumers"] >= 1
    assert status["outflow"]["published"] >= 1
    assert {inflow_stream(T, P), outflow_stream(T, P)} <= streams(system.nats.url)
    removed = system.manager.plans.remove(T, P)
    assert sorted(removed["jetstream"]["deleted"]) == sorted(
        [inflow_stream(T, P), outflow_stream(T, P)]
    )
    time.sleep(3.0)  # the worker drops the plan (it polls every 0.5 s): nothing makes them again
    left = streams(system.nats.url)
    assert inflow_stream(T, P) not in left and outflow_stream(T, P) not in left
