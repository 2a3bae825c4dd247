"""Malicious plans: each is rejected when added over REST (400, positioned at the annotation,
nothing stored) and again at the worker (standalone worker: the plan fails to deploy; the
distributed worker's sink and source builders refuse it); nothing is written or read."""

import json
import os
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import cep
from cep.worker.config import load_config
from cep.worker.exceptions import PlanDeployError
from cep.worker.node import Worker
from cep.worker.plans import spec_from_plan
from cep.worker.plumbing import build_sink_set, start_sources
from receivers.router import IngestRouter

HEAD = "@Plan:name('Evil')\n"
BODY = "define stream Inp (a int);\nfrom Inp select a insert into Out;\n"


class _Count(BaseHTTPRequestHandler):
    hits = []

    def do_POST(self):  # noqa: N802 - http.server's name
        self.hits.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def local_http():
    """An HTTP server on 127.0.0.1 that counts the POSTs it receives."""
    _Count.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Count)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def malicious(name, roots, http_port, redis_port, tcp=None):
    """(plan text, what the error names, a check that nothing was written or read).
    `tcp`: a listening socket on 127.0.0.1 that must receive no connection."""
    allowed, outside = roots
    tcp_port = tcp.getsockname()[1] if tcp else 9
    probe = f"/etc/cep-sec-probe-{uuid.uuid4().hex}.jsonl"
    sink = "@sink(type={kind}, {opts})\ndefine stream Out (a int);\n"
    cases = {
        "file sink to /etc": (
            sink.format(kind="'file'", opts=f"path='{probe}'"),
            "@sink(type='file')",
            lambda: not os.path.exists(probe),
        ),
        "../ escape": (
            sink.format(kind="'file'", opts="path='../../../outside/x.jsonl'"),
            "'..'",
            lambda: not (outside / "x.jsonl").exists(),
        ),
        "absolute outside": (
            sink.format(kind="'file'", opts=f"path='{outside}/y.jsonl'"),
            "outside the allowed file roots",
            lambda: not (outside / "y.jsonl").exists(),
        ),
        "symlink escape": (
            sink.format(kind="'file'", opts="path='escape/z.jsonl'"),
            "symbolic link",
            lambda: not (outside / "z.jsonl").exists(),
        ),
        "http to metadata": (
            sink.format(kind="'http'", opts="publisher.url='http://169.254.169.254/latest'"),
            "link-local",
            lambda: True,
        ),
        "http to loopback": (
            sink.format(kind="'http'", opts=f"publisher.url='http://127.0.0.1:{http_port}/'"),
            "loopback",
            lambda: _Count.hits == [],
        ),
        "redis unconfigured": (
            sink.format(kind="'redis'", opts=f"url='redis://127.0.0.1:{redis_port}/0'"),
            "@sink(type='redis')",
            lambda: True,
        ),
        "source /etc/passwd": (
            "@source(type='file', path='/etc/passwd')\ndefine stream In2 (a int);\n",
            "@source(type='file')",
            lambda: True,
        ),
        "source outside secret": (
            f"@source(type='file', path='{outside}/secret.txt')\ndefine stream In2 (a int);\n",
            "outside",
            lambda: True,
        ),
        "zmq connect to loopback": (
            sink.format(kind="'zmq'", opts=f"url='tcp://127.0.0.1:{tcp_port}', mode='connect'"),
            "ZeroMQ sink allow-list",
            lambda: _no_connection(tcp),
        ),
        "zmq bind everywhere": (
            sink.format(kind="'zmq'", opts="url='tcp://*:0'"),
            "may not bind '*'",
            lambda: True,
        ),
        "zmq source on 0.0.0.0": (
            "@source(type='zmq', url='tcp://0.0.0.0:0')\ndefine stream In2 (a int);\n",
            "may not bind '0.0.0.0'",
            lambda: True,
        ),
        "http source on 0.0.0.0": (
            f"@source(type='http', host='0.0.0.0', port='{tcp_port}')\n"
            "define stream In2 (a int);\n",
            "may not bind '0.0.0.0'",
            lambda: True,
        ),
        "nats sink to metadata": (
            sink.format(kind="'nats'", opts="url='nats://169.254.169.254:4222', subject='x'"),
            "must name a configured connection",
            lambda: True,
        ),
        "mqtt source to loopback": (
            f"@source(type='mqtt', url='mqtt://127.0.0.1:{tcp_port}', topic='t')\n"
            "define stream In2 (a int);\n",
            "must name a configured connection",
            lambda: _no_connection(tcp),
        ),
        "kafka source unconfigured": (
            "@source(type='kafka', connection='bus', topic='t')\ndefine stream In2 (a int);\n",
            "not a configured broker connection",
            lambda: True,
        ),
    }
    text, names, nothing_touched = cases[name]
    return HEAD + text + BODY, names, nothing_touched


def _no_connection(sock):
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False


@pytest.fixture
def tcp():
    """A listening TCP socket on 127.0.0.1 that nothing should connect to."""
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    sock.setblocking(False)
    yield sock
    sock.close()


CASES = [
    "file sink to /etc",
    "../ escape",
    "absolute outside",
    "symlink escape",
    "http to metadata",
    "http to loopback",
    "redis unconfigured",
    "source /etc/passwd",
    "source outside secret",
    "zmq connect to loopback",
    "zmq bind everywhere",
    "zmq source on 0.0.0.0",
    "http source on 0.0.0.0",
    "nats sink to metadata",
    "mqtt source to loopback",
    "kafka source unconfigured",
]


@pytest.fixture
def escape_link(roots):
    allowed, outside = roots
    os.symlink(outside, allowed / "escape")


@pytest.mark.parametrize("case", CASES)
def test_rejected_by_rest_add_with_position(
    case, tcp, client, manager, roots, local_http, tmp_path, escape_link
):
    text, names, nothing_touched = malicious(case, roots, local_http.server_port, 6399, tcp)
    resp = client.post("/api/v1/tenants/-1234/plans", data=text, content_type="text/plain")
    body = resp.get_json()
    assert resp.status_code == 400, body
    assert body["line"] == 2 and body["column"] == 1 and body["endLine"] == 2, body
    assert names in body["message"], body["message"]
    assert str(roots[0]) not in json.dumps(body)  # the data path is not shown
    assert manager.plans.list(-1234) == [] and manager.launcher.submitted == []
    assert not (tmp_path / "data/tenants/-1234/executionplans/Evil.siddhiql").exists()
    check = client.post("/api/v1/validate?tenant=-1234", data=text, content_type="text/plain")
    assert check.get_json()["valid"] is False
    assert nothing_touched()


def worker_cfg(tmp_path, roots, plan_file=None):
    return load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.id": "sec",
            "worker.mode": "standalone",
            "standalone.plans": [str(plan_file)] if plan_file else [],
            "managers.poll_interval": 0.2,
            "receivers.http_port": 0,
            "receivers.zmq_port": -1,
            "files.roots": [str(roots[0])],
            "worker.state_dir": str(tmp_path / "state"),
        },
    )


@pytest.mark.parametrize("case", CASES)
def test_rejected_by_the_distributed_worker_builders(
    case, tcp, roots, local_http, tmp_path, escape_link
):
    """What a worker does with a deployment the manager should never have sent."""
    text, names, nothing_touched = malicious(case, roots, local_http.server_port, 6399, tcp)
    spec = spec_from_plan(cep.compile(text), -1234)
    cfg = worker_cfg(tmp_path, roots)
    with pytest.raises(PlanDeployError) as info:
        build_sink_set(cfg, spec).close()
        router = IngestRouter()
        for s in spec.imported:
            router.register(("-1234", "Evil", s.stream), s.definition, lambda ev, wait=0: 0)
        start_sources(spec, router, cfg)
    assert "Evil" in str(info.value)
    assert nothing_touched()


@pytest.mark.parametrize("case", CASES)
def test_rejected_by_the_standalone_worker(case, tcp, roots, local_http, tmp_path, escape_link):
    text, names, nothing_touched = malicious(case, roots, local_http.server_port, 6399, tcp)
    plan_file = tmp_path / "evil.siddhiql"
    plan_file.write_text(text)
    worker = Worker(worker_cfg(tmp_path, roots, plan_file)).start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not worker.status()["failed"]:
            time.sleep(0.05)
        status = worker.status()
        assert status["plans"] == {} and list(status["failed"]) == ["-1234/Evil"], status
        assert names in status["failed"]["-1234/Evil"]["error"]
    finally:
        worker.stop()
    assert nothing_touched()


def test_redis_sink_to_unconfigured_server_writes_nothing(redis_db, roots, tmp_path):
    import redis

    port = int(redis_db.rsplit(":", 1)[1].split("/")[0])
    text, names, _ = malicious("redis unconfigured", roots, 1, port)
    spec = spec_from_plan(cep.compile(text), -1234)
    with pytest.raises(PlanDeployError, match="connection='name'"):
        build_sink_set(worker_cfg(tmp_path, roots), spec)
    client = redis.Redis.from_url(redis_db)
    assert client.dbsize() == 0
    client.close()


def test_distributed_worker_releases_what_a_refused_plan_opened(roots, tmp_path):
    """A plan whose @source the worker refuses fails after its publisher service was bound
    and registered: the worker stops it again (port closed, endpoint unregistered)."""
    import socket

    from manager.registry.service import RegistryService

    registry = RegistryService(port=0, bind_host="127.0.0.1")
    registry.start()
    text = (
        HEAD + "@Import('Inp:1.0.0')\n@source(type='file', path='/etc/passwd')\n"
        "define stream Inp (a int);\n@Export('Out:1.0.0')\ndefine stream Out (a int);\n"
        "from Inp select a insert into Out;\n"
    )
    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.id": "sec-d",
            "managers.urls": ["http://127.0.0.1:9"],
            "managers.registries": [f"tcp://127.0.0.1:{registry.port}"],
            "receivers.http_port": 0,
            "receivers.zmq_port": -1,
            "files.roots": [str(roots[0])],
            "worker.state_dir": str(tmp_path / "state"),
            "transport.heartbeat_interval": 0.2,
        },
    )
    worker = Worker(cfg).start()  # its manager never answers: deploy is called directly
    try:
        assert worker.deploy(spec_from_plan(cep.compile(text), -1234)) is None
        port = worker.ports.get("-1234/Evil")  # where its publisher service was bound
        assert port
        assert "outside the allowed file roots" in worker.failed[(-1234, "Evil")][1]
        assert worker.plans == {}
        time.sleep(0.5)
        assert registry.table.status(-1234, "Evil")["publishers"] == []
        with socket.socket() as s:  # the publisher service's port is free again
            s.bind(("127.0.0.1", port))
    finally:
        worker.stop()
        registry.stop()
