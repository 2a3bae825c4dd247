"""A standalone worker's Prometheus /metrics over real HTTP, parsed with prometheus_client's
parser: receiver counters per stream and the sinks' sent events (the distributed worker's
families are checked in tests/manager/test_manager_workers.py and the Spark end-to-end test)."""

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.worker.test_worker_standalone import make_worker, post, wait_for


def scrape(worker):
    with urllib.request.urlopen(f"{worker.http_url}/metrics", timeout=5) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    return {
        (f.name, s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def test_standalone_worker_counts_received_and_sunk_events(tmp_path):
    plan = tmp_path / "p.siddhiql"
    plan.write_text(
        "@Plan:name('P') define stream S (a int); from S[a > 1] select a insert into O;"
    )
    w = make_worker(tmp_path, [str(tmp_path)]).start()
    try:
        assert wait_for(lambda: w.status()["plans"].get("-1234/P"))
        post(f"{w.http_url}/events/-1234/P/S", [[1], [2], [3], ["x"]])
        labels = (("plan", "P"), ("stream", "S"), ("tenant", "-1234"), ("worker", "s1"))
        sink = (("plan", "P"), ("stream", "O"), ("tenant", "-1234"), ("worker", "s1"))

        def counted():
            m = scrape(w)
            return (
                m.get(("cep_worker_sink_events_sent", "cep_worker_sink_events_sent_total", sink))
                == 2
                and m
            )

        m = wait_for(counted)
        assert m, scrape(w)
        assert (
            m[
                (
                    "cep_worker_receiver_events_accepted",
                    "cep_worker_receiver_events_accepted_total",
                    labels,
                )
            ]
            == 3
        )
        assert (
            m[
                (
                    "cep_worker_receiver_events_rejected",
                    "cep_worker_receiver_events_rejected_total",
                    labels,
                )
            ]
            == 1
        )
        assert (
            m[("cep_worker_sink_events_failed", "cep_worker_sink_events_failed_total", sink)] == 0
        )
        dropped = {
            dict(lab)["sink"]: v
            for (f, _, lab), v in m.items()
            if f == "cep_worker_sink_dedup_dropped" and dict(lab)["stream"] == "O"
        }
        assert list(dropped.values()) == [0] and list(dropped)[0].endswith("#0")
    finally:
        w.stop()
