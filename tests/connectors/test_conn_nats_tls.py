"""@source/@sink(type='nats') over TLS on a real nats-server that requires client
certificates (made by the test with openssl): a connection URL
`tls://host:port?ca=...&cert=...&key=...` (the NATS transport's form) serves the JetStream
sink, the core NATS sink and the JetStream source; trusting another CA, nothing is written."""

import pytest

from publishers.exceptions import SinkWriteError
from publishers.sinks import build_sink
from receivers.sources import build_source
from tests.connectors.conftest import KEY, wait_for
from tests.connectors.servers import make_tls_files, start_nats


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    files = make_tls_files(tmp_path_factory.mktemp("certs"))
    server = start_nats(
        tmp_path_factory.mktemp("nats-tls"),
        tls={"cert": files["cert"], "key": files["key"], "ca": files["ca"]},
    )
    yield server, files
    server.stop()


def url(server, files, ca="ca"):
    return f"{server.url}?ca={files[ca]}&cert={files['client_cert']}&key={files['client_key']}"


def test_jetstream_and_core_sinks_and_the_source_connect_with_the_connections_certificates(
    tls, tmp_path, router, taken
):
    server, files = tls
    sink = build_sink(
        {"type": "nats", "options": {"url": url(server, files), "subject": "tls.in"}}, "Ticks"
    )
    core = build_sink(
        {
            "type": "nats",
            "options": {"url": url(server, files), "subject": "tls.core", "jetstream": "false"},
        },
        "Ticks",
    )
    try:
        sink.write_batch([(1000 + i, [i, 1.5]) for i in range(20)])
        assert sink.written == 20
        core.write_batch([(1, [1, 1.0])])  # done at the server's PONG over TLS
    finally:
        sink.close()
        core.close()
    pump = build_source(
        {"type": "nats", "url": url(server, files), "subject": "tls.in", "stream": sink.js_stream},
        router,
        KEY,
        state_dir=str(tmp_path),
    ).start()
    try:
        assert wait_for(lambda: len(taken.ids()) == 20)
        assert taken.ids() == list(range(20))
    finally:
        pump.stop()


def test_trusting_another_ca_nothing_is_written(tls):
    server, files = tls
    sink = build_sink(
        {
            "type": "nats",
            "options": {
                "url": url(server, files, ca="other_ca"),
                "subject": "tls.refused",
                "jetstream": "false",
            },
        },
        "Ticks",
    )
    try:
        with pytest.raises(SinkWriteError, match="CERTIFICATE_VERIFY_FAILED"):
            sink.write_batch([(1, [1, 1.0])])
    finally:
        sink.close()
