"""A worker serving a plan whose deployment entry says `transport: nats` (the manager's
topology.transport), on a real nats-server: events posted to its HTTP receiver are in the
plan's JetStream inflow stream when the receiver answers (a NATS receiver spout reads them),
output a NATS publisher bolt publishes reaches the plan's sink, and a transport connection
the worker does not have fails that plan with the reason."""

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from publishers.nats_bolt import NatsPublisherBolt
from receivers.nats_spout import NatsReceiverSpout
from tests.connectors.servers import start_nats
from tests.worker.test_worker_distributed import get, make_worker, plan_url, post, worker_open
from topology.component import Batch, Collector, Context

OUT = {"StockStream": ["ts", "symbol", "price", "volume"]}


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory):
    server = start_nats(tmp_path_factory.mktemp("nats"))
    yield server
    server.stop()


def nats_entry(helpers, connection="bus", name="StockAnalysis"):
    return {
        **helpers["stock_entry"](name=name),
        "transport": "nats",
        "transportConnection": connection,
    }


def test_a_nats_plan_takes_events_into_jetstream_and_output_out_of_it(
    fake_manager, registry_service, registry_client, tmp_path, helpers, nats_server
):
    wait_for = helpers["wait_for"]
    fake_manager.set_plans([nats_entry(helpers)])
    w = make_worker(
        fake_manager,
        registry_service,
        tmp_path,
        **{"connections.brokers": [f"bus={nats_server.url}"]},
    ).start()
    spout = bolt = None
    try:
        assert wait_for(
            lambda: (
                w.status()["plans"]
                .get("-1234/StockAnalysis", {})
                .get("inflow", {})
                .get("connected")
                == 1
            )
        )
        status, body = post(
            plan_url(w),
            [
                {"timestamp": 1, "data": ["IBM", 510.0, 10]},
                {"timestamp": 2, "data": ["WSO2", 60.0, 5]},
            ],
        )
        assert status == 200 and body["accepted"] == 2
        # nothing registered: the spout finds the events in JetStream
        assert registry_client.status(-1234, "StockAnalysis")["connections"] == []
        spout = NatsReceiverSpout(
            {
                "tenant": -1234,
                "plan": "StockAnalysis",
                "streams": {"StockStream": ["symbol", "price", "volume"]},
                "nats_url": nats_server.url,
                "tick_ms": 0,
            }
        )
        collector = Collector("EventReceiverSpout", OUT)
        spout.open(Context("StockAnalysis[-1234]", "EventReceiverSpout", 0, 1, 0, OUT), collector)
        rows = []

        def took_two():
            spout.next_batch()
            rows.extend(r for _, batch, _ in collector.take() for r in batch)
            return len(rows) == 2

        assert wait_for(took_two)
        assert rows == [(1, "IBM", 510.0, 10), (2, "WSO2", 60.0, 5)]
        bolt = NatsPublisherBolt(
            {
                "registry": "tcp://127.0.0.1:1",
                "tenant": -1234,
                "plan": "StockAnalysis",
                "host": "127.0.0.1",
                "streams": {"HighPriceStream": ["symbol", "price", "volume"]},
                "nats_url": nats_server.url,
            }
        )
        bolt.prepare(
            Context("StockAnalysis[-1234]", "EventPublisherBolt", 0, 1, 0, {}), Collector("p", {})
        )
        bolt.execute(Batch([(1, "IBM", 510.0, 10)], "HighPriceStream"))
        out = tmp_path / "out" / "-1234" / "StockAnalysis" / "HighPriceStream.jsonl"
        assert wait_for(lambda: out.exists() and out.read_text().count("\n") == 1)
        assert json.loads(out.read_text()) == {
            "stream": "HighPriceStream",
            "timestamp": 1,
            "data": ["IBM", 510.0, 10],
        }
        st = get(f"{w.http_url}/status")["plans"]["-1234/StockAnalysis"]
        assert st["outflow"]["transport"] == "nats" and st["outflow"]["events"] == 1
        assert st["inflow"]["streams"][0]["sent"] == 2
        # /metrics: events sent and acknowledged, and each stream's state (sampled every 2 s)
        plan = {"worker": w.identity.worker_id, "tenant": "-1234", "plan": "StockAnalysis"}
        stream, inbound, outbound = (
            {**plan, "stream": "StockStream"},
            {**plan, "direction": "in"},
            {**plan, "direction": "out"},
        )
        want = [
            ("cep_worker_nats_inflow_events_published_total", stream, 2),
            ("cep_worker_nats_inflow_events_acked_total", stream, 2),
            ("cep_worker_nats_outflow_events_acked_total", plan, 1),
            # one frame of two events in: the spout read and acknowledged it
            ("cep_worker_nats_stream_published_messages", inbound, 1),
            ("cep_worker_nats_stream_pending_messages", inbound, 0),
            ("cep_worker_nats_stream_consumers", inbound, 1),
            # the bolt's start notice and one frame out, handed to the sink and acknowledged
            ("cep_worker_nats_stream_published_messages", outbound, 2),
            ("cep_worker_nats_stream_acked_messages", outbound, 2),
            ("cep_worker_nats_stream_pending_messages", outbound, 0),
        ]

        def missing():
            with worker_open(f"{w.http_url}/metrics") as resp:  # the cluster secret
                text = resp.read().decode()
            got = {
                (s.name, frozenset(s.labels.items())): s.value
                for fam in text_string_to_metric_families(text)
                for s in fam.samples
            }
            return [
                (name, labels, value, got.get((name, frozenset(labels.items()))))
                for name, labels, value in want
                if got.get((name, frozenset(labels.items()))) != value
            ]

        assert wait_for(lambda: not missing(), timeout=20), missing()
    finally:
        if bolt is not None:
            bolt.cleanup()
        if spout is not None:
            spout.close()
        w.stop()


def test_a_transport_connection_the_worker_lacks_fails_that_plan(
    fake_manager, registry_service, tmp_path, helpers
):
    wait_for = helpers["wait_for"]
    fake_manager.set_plans([nats_entry(helpers, "elsewhere", "Far"), helpers["stock_entry"]()])
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    try:
        assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"])
        error = w.status()["failed"]["-1234/Far"]["error"]
        assert "'elsewhere' is not a configured broker connection" in error
    finally:
        w.stop()
