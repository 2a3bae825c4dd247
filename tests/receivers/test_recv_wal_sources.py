"""@source sources with a write-ahead log over its cap (real log, real inflow, real router): a
file source holds its batch instead of dropping it, and goes on once the log is committed;
an HTTP source with its own listener answers 503 with the reason."""

import json
import time
import urllib.error
import urllib.request

import pytest

from cep.worker.logged_inflow import LoggedSpoutConnection
from manager.exceptions import RegistryError
from receivers.file_source import FileSource, SourcePump
from receivers.router import IngestRouter
from receivers.validation import StreamKey
from receivers.wal import WriteAheadLog

KEY = StreamKey("-1234", "P", "S")


class NoRegistry:
    """The inflow's sender is not started here; a lookup would fail."""

    def lookup(self, *args, **kwargs):
        raise RegistryError("no registry in this test")


@pytest.fixture
def logged_router(tmp_path):
    wal = WriteAheadLog(str(tmp_path / "wal"), max_bytes=600).open()
    conn = LoggedSpoutConnection(NoRegistry(), -1234, "P", "S", "w", wal=wal, receiver_id="r")
    router = IngestRouter()
    router.register(KEY, _definition(), conn.offer)
    yield router, conn, wal
    wal.close()


def _definition():
    from cep.worker.plans import spec_from_deployment

    return (
        spec_from_deployment(
            {
                "tenant": -1234,
                "name": "P",
                "version": 1,
                "imported": [
                    {"stream": "S", "attributes": [["symbol", "string"], ["volume", "long"]]}
                ],
                "exported": [],
            }
        )
        .imported[0]
        .definition
    )


def test_file_source_holds_its_batch_while_the_log_is_full(logged_router, tmp_path):
    router, conn, wal = logged_router
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"symbol": "A", "volume": i}) + "\n" for i in range(60)))
    pump = SourcePump(FileSource(str(path), batch_size=20), router, KEY).start()
    try:
        deadline = time.monotonic() + 10
        while pump.wal_waits < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pump.wal_waits >= 2 and wal.metrics()["full_refusals"] >= 2
        held_at = wal.metrics()["appended_offset"] + 1
        wal.commit(held_at - 1)  # a checkpoint covers what was logged: room again
        deadline = time.monotonic() + 10
        while wal.metrics()["appended_offset"] < 59 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert wal.metrics()["appended_offset"] == 59 and held_at < 60
        volumes = [e[1][1] for _, evs in wal.read() for e in evs]
        assert volumes == list(range(60))  # nothing dropped, nothing twice, in order
    finally:
        pump.stop()


def test_http_source_listener_answers_503_with_the_reason(logged_router):
    from receivers.http_receiver import DEFAULT_LIMITS, HttpServer
    from receivers.sources import _single_stream_app

    router, _, wal = logged_router
    server = HttpServer(_single_stream_app(router, KEY, DEFAULT_LIMITS), "127.0.0.1", 0).start()
    try:
        answers = [
            _post(server.url, [{"symbol": "A", "volume": i} for i in range(10)]) for _ in range(8)
        ]
        assert answers[0][0] == 200
        status, body = answers[-1]
        assert status == 503 and body["reason"] == "backpressure" and body["retry"] is True
        assert "wal.max_bytes" in body["error"]
        accepted = sum(b.get("accepted", 0) for s, b in answers if s == 200)
        assert wal.metrics()["appended_offset"] + 1 == accepted  # a 503 logged nothing
    finally:
        server.stop()


def _post(url, events):
    req = urllib.request.Request(
        url + "/",
        json.dumps(events).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
