"""The endpoint registry at the scale of 100 plans (issue 14): 100 workers and 1,000 endpoints
on the real ZeroMQ service. Lookups still pick within the right plan and stream, spread
over the least connected spouts, and prefer the requester's machine. (Its speed, <= 1 ms p99
per lookup, is measured by benchmarks/many_plans.py, not timed here.)"""

import collections

import pytest

from cep.protocol.registry_client import RegistryClient
from manager.registry.service import RegistryService

T, PLANS, WORKERS = -1234, 100, 100


@pytest.fixture(scope="module")
def crowded():
    """100 plans x (5 receiver spouts + 5 publishers) = 1,000 endpoints, 100 workers."""
    service = RegistryService(port=0, bind_host="127.0.0.1")
    service.start()
    client = RegistryClient(f"tcp://127.0.0.1:{service.port}")
    for i in range(PLANS * 10):
        kind = "receiver" if i % 10 < 5 else "publisher"
        host = f"10.0.{i % 10}.1"
        client.register(
            kind,
            T,
            f"Plan{i // 10}",
            host,
            20000 + i,
            machine=[host],
            streams=[f"S{i % 2}"],
            worker=f"w{i % WORKERS}",
        )
    for w in range(WORKERS):
        client.worker_info(worker=f"w{w}", host=f"10.1.0.{w}")
    yield service, client
    client.close()
    service.stop()


def test_a_crowded_registry_holds_every_endpoint_and_worker(crowded):
    service, _ = crowded
    assert len(service.table.endpoints) == 1000
    assert len(service.table.worker_infos()) == WORKERS


def test_lookups_stay_within_plan_and_stream_and_spread_over_spouts(crowded):
    service, client = crowded
    seen = collections.Counter()
    for n in range(200):
        plan = f"Plan{n % PLANS}"
        ep = client.lookup("receiver", T, plan, stream="S0")
        port = int(ep["endpoint"].rsplit(":", 1)[1]) - 20000
        assert port // 10 == n % PLANS and port % 10 < 5 and port % 2 == 0, (plan, ep)
        client.connect("receiver", T, plan, ep["endpoint"], f"w{n}", stream="S0")
        seen[ep["endpoint"]] += 1
    # Plan k has 3 S0 spouts (ports k0, k2, k4): 2 connections each go to 2 different ones
    assert max(seen.values()) == 1 and len(seen) == 200


def test_lookups_prefer_the_requesters_machine(crowded):
    _, client = crowded
    ep = client.lookup("receiver", T, "Plan7", stream="S1", machine=["10.0.3.1"])
    assert ep["endpoint"].endswith(":20073") and ep["local"] is True
