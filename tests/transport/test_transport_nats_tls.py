"""The NATS JetStream transport over TLS, on a real nats-server whose certificates the test
makes with openssl and which requires a client certificate: the named connection
`tls://host:port?ca=...&cert=...&key=...` carries the CA and the client certificate; a
worker's inflow, a receiver spout (its URL from the launch options) and the manager's stream
view connect with it; without the client certificate, or trusting another CA, nothing
connects; bad TLS options are refused with the reason."""

import re
import threading
import time

import pytest

from cep.policy.exceptions import PolicyViolation
from cep.security import curve
from cep.worker.nats_inflow import NatsInflow
from connectors.nats_transport import inflow_stream, split_tls, transport_url
from manager.jetstream import JetStreamView
from receivers.nats_spout import NatsReceiverSpout
from tests.connectors.servers import make_tls_files, start_nats
from topology.component import Collector, Context

T, P = -1234, "TlsPlan"
OUT = {"S": ["ts", "a"], "_tick": ["ts"]}


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    files = make_tls_files(tmp_path_factory.mktemp("certs"))
    server = start_nats(
        tmp_path_factory.mktemp("nats-tls"),
        tls={"cert": files["cert"], "key": files["key"], "ca": files["ca"]},
    )
    yield server, files
    server.stop()


def url_with(server, **files):
    query = "&".join(f"{k}={v}" for k, v in files.items())
    return f"{server.url}?{query}" if query else server.url


def inflow(url, plan=P):
    return NatsInflow(url, T, plan, "S", "w1", batch_size=10, reconnect_interval=0.2).start()


def wait(cond, timeout=20):
    ev = threading.Event()
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        ev.wait(0.05)
    return cond()


def test_inflow_spout_and_manager_view_connect_with_the_ca_and_client_certificate(tls_server):
    server, files = tls_server
    assert server.url.startswith("tls://")
    url = url_with(server, ca=files["ca"], cert=files["client_cert"], key=files["client_key"])
    assert transport_url("bus", {"bus": url}) == url
    conn = inflow(url)
    try:
        assert wait(lambda: conn.connected), conn.last_error
        assert conn.offer([(i, (i,)) for i in range(30)]) == 0
        assert conn.metrics()["acked"] == 30
    finally:
        conn.stop()
    security = curve.LinkSecurity(brokers=(("bus", url),))
    spout = NatsReceiverSpout(
        {"tenant": T, "plan": P, "streams": {"S": ["a"]}, "nats_connection": "bus", "tick_ms": 0}
    )
    collector = Collector("EventReceiverSpout", OUT)
    spout.open(
        Context(f"{P}[{T}]", "EventReceiverSpout", 0, 1, 0, OUT, security=security), collector
    )
    rows = []
    try:
        for _ in range(200):
            spout.next_batch()
            rows.extend(r for _, batch, _ in collector.take() for r in batch)
            if len(rows) >= 30:
                break
    finally:
        spout.close()
    assert sorted(r[1] for r in rows) == list(range(30))
    view = JetStreamView(url)
    try:
        report = view.report(T, P)
        assert report["inflow"]["stream"] == inflow_stream(T, P)
        assert report["inflow"]["published"] == 3 and report["inflow"]["pending"] == 0
        assert view.remove_plan(T, P)["deleted"] == [inflow_stream(T, P)]
    finally:
        view.close()


@pytest.mark.parametrize(
    "which, files, reason",
    [
        ("no client certificate", {"ca": "ca"}, "CERTIFICATE_REQUIRED|Connection lost|closed"),
        (
            "a CA that did not sign the server's",
            {"ca": "other_ca", "cert": "client_cert"},
            "CERTIFICATE_VERIFY_FAILED",
        ),
        (
            "no CA: the system's do not know the test CA",
            {"cert": "client_cert"},
            "CERTIFICATE_VERIFY_FAILED",
        ),
    ],
)
def test_without_the_right_certificates_nothing_connects(tls_server, which, files, reason):
    server, paths = tls_server
    options = {k: paths[v] for k, v in files.items()}
    if "cert" in options:
        options["key"] = paths["client_key"]
    url = url_with(server, **options)
    view = JetStreamView(url)  # one attempt, its error reported
    try:
        report = view.report(T, "Refused")
    finally:
        view.close()
    assert "error" in report and "not reachable" in report["error"], (which, report)
    assert re.search(reason, report["error"]), (which, report["error"])
    if "other_ca" not in files.values():
        return
    conn = inflow(url, plan="Refused")  # a worker's inflow: it keeps trying, never connects
    try:
        assert not wait(lambda: conn.connected, timeout=1.0), which
        assert conn.offer([(1, (1,))]) == 1  # refused: no server to store it
    finally:
        conn.stop()


def test_bad_tls_options_are_refused_with_the_reason():
    assert split_tls("tls://h:4222?ca=/c.pem") == ("tls://h:4222", {"ca": "/c.pem"})
    assert split_tls("nats://h:4222") == ("nats://h:4222", {})
    cases = [
        ("tls://h:4222?cafile=/c.pem", "unknown option 'cafile' \\(known: ca, cert, key\\)"),
        ("tls://h:4222?key=/k.pem", "key= needs cert="),
        ("nats://h:4222?ca=/c.pem", "ca=, cert= and key= need a tls:// URL"),
        ("tls://h:4222?ca=", "option 'ca' names no file"),
    ]
    for url, reason in cases:
        with pytest.raises(PolicyViolation, match=f"connection 'bus': {reason}"):
            transport_url("bus", {"bus": url})
