"""ZeroMQ CURVE on the cluster links (issue 10), on real sockets: a party without the cluster
key cannot register, send events to a spout, read what a publisher bolt sends, push forged
output to a worker's publisher service, send to the worker's ZeroMQ receiver, push to a task,
or talk to a topology driver; with the key each of these works."""

import json
import os
import stat
import threading
import time

import pytest
import zmq

from cep.security import curve
from cep.security.exceptions import CurveKeyError
from manager.exceptions import RegistryUnavailableError
from cep.protocol.registry_client import RegistryClient
from manager.registry.service import RegistryService
from publishers.base import Sink
from publishers.bolt import PublisherBolt
from publishers.service import PublisherService, numbered
from publishers.sink_set import SinkSet
from receivers.router import IngestRouter
from receivers.spout import ReceiverSpout
from receivers.zmq_receiver import ZmqEventClient, ZmqReceiver
from tests.security.conftest import STOCK, Recorder
from cep.protocol import frames as wire
from cep.protocol.frames import encode_batch
from topology.component import Batch, Collector, Context
from topology.control import TopologyHandle
from topology.driver import Driver
from topology.model import Topology
from topology.task import TaskRunner
from topology.testing import CollectBolt, ListSpout

T, P, S = -1234, "Curve", "S"
QUIET_MS = 700  # how long a refused party waits to see that nothing arrives


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    return curve.create_or_load(tmp_path_factory.mktemp("keys") / "security" / "curve")


@pytest.fixture(scope="module")
def stranger():
    """A key pair that is not the cluster's (a client who knows the server's public key)."""
    public, secret = zmq.curve_keypair()
    return curve.CurveKeys(public, secret)


def plain_push(url, kind=zmq.PUSH):
    sock = zmq.Context.instance().socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(url)
    return sock


def stranger_push(url, stranger, server_key, kind=zmq.PUSH):
    sock = zmq.Context.instance().socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    curve.client(sock, stranger, server_key)
    sock.connect(url)
    return sock


def wait(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# -- keys ------------------------------------------------------------------------------------


def test_keys_are_created_once_with_a_private_secret_file(tmp_path):
    folder = tmp_path / "curve"
    first = curve.create_or_load(folder)
    again = curve.create_or_load(folder)
    assert first == again and len(first.public) == 40
    assert stat.S_IMODE(os.stat(folder / "cluster.key_secret").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert first.secret.decode() not in repr(first)
    assert first.secret.decode() not in (folder / "cluster.key").read_text()


def test_a_worker_with_curve_on_and_no_key_folder_gets_a_clear_error(tmp_path):
    with pytest.raises(CurveKeyError, match="curve_dir, --curve-dir or CEP_CURVE_DIR"):
        curve.worker_keys({"security.curve": True, "security.curve_dir": ""}, env={})
    with pytest.raises(CurveKeyError, match="cluster.key_secret"):
        curve.worker_keys(
            {"security.curve": False, "security.curve_dir": ""},
            env={"CEP_CURVE_DIR": str(tmp_path)},
        )
    assert curve.worker_keys({"security.curve": False, "security.curve_dir": ""}, env={}) is None


# -- registry --------------------------------------------------------------------------------


@pytest.fixture
def curve_registry(keys):
    svc = RegistryService(
        port=0, bind_host="127.0.0.1", heartbeat_interval=0.1, security=curve.LinkSecurity(keys)
    )
    svc.start()
    yield svc, f"tcp://127.0.0.1:{svc.port}"
    svc.stop()


def test_registry_with_curve_answers_only_the_cluster_key(curve_registry, keys, stranger):
    svc, url = curve_registry
    member = RegistryClient(url, security=curve.LinkSecurity(keys))
    assert member.register("receiver", T, P, "127.0.0.1", 4000, streams=[S])["ok"]
    for outsider in (
        curve.LinkSecurity(),
        curve.LinkSecurity(curve.CurveKeys(stranger.public, stranger.secret)),
    ):
        client = RegistryClient(url, timeout=0.5, retries=0, security=outsider)
        with pytest.raises(RegistryUnavailableError):
            client.register("receiver", T, P, "127.0.0.1", 4666, streams=[S])
        client.close()
    # the outsider's server key is right, its own key is not: the handshake fails
    assert [e["endpoint"] for e in member.status(T, P)["receivers"]] == ["tcp://127.0.0.1:4000"]
    member.close()


# -- spout -----------------------------------------------------------------------------------


@pytest.fixture
def curve_spout(curve_registry, keys):
    svc, url = curve_registry
    spout = ReceiverSpout(
        {
            "registry": url,
            "tenant": T,
            "plan": P,
            "streams": {S: ["a"]},
            "host": "127.0.0.1",
            "tick_ms": 0,
        }
    )
    out = {S: ["ts", "a"]}
    collector = Collector("EventReceiverSpout", out)
    spout.open(
        Context(f"{P}[{T}]", "EventReceiverSpout", 0, 1, 0, out, security=curve.LinkSecurity(keys)),
        collector,
    )
    yield spout, collector, f"tcp://127.0.0.1:{spout.port}"
    spout.close()


def test_a_spout_takes_events_only_from_the_cluster_key(curve_spout, keys, stranger):
    spout, collector, url = curve_spout
    assert spout.heartbeat.beats >= 1  # it registered through CURVE
    outsiders = [plain_push(url), stranger_push(url, stranger, keys.public)]
    for sock in outsiders:
        try:  # a refused handshake may leave the socket no peer to queue for: that is the
            sock.send(encode_batch(S, [[1, ["forged"]]]), zmq.NOBLOCK)  # refusal, not a hang
        except zmq.Again:
            pass
    assert not spout.sock.poll(QUIET_MS)
    member = zmq.Context.instance().socket(zmq.PUSH)
    member.setsockopt(zmq.LINGER, 0)
    curve.client(member, keys)
    member.connect(url)
    member.send(encode_batch(S, [[2, ["real"]]]))
    assert spout.sock.poll(3000)
    spout.next_batch()
    assert [rows for _, rows, _ in collector.take()] == [[(2, "real")]]
    for sock in outsiders + [member]:
        sock.close(0)


# -- publisher bolt and the worker's publisher service ----------------------------------------


class ListSink(Sink):
    type = "list"

    def __init__(self):
        super().__init__(S, {})
        self.rows = []

    def write_batch(self, events):
        self.rows.extend(row for _, row in events)


def test_forged_output_pushed_to_a_publisher_port_never_reaches_the_sink(keys, stranger):
    sink = ListSink()
    sset = SinkSet("w1")
    sset.add(S, sink)
    svc = PublisherService(sset, "127.0.0.1", keys=keys).start()
    url = f"tcp://127.0.0.1:{svc.port}"
    # DEALER sockets, as publisher bolts: only the handshake can keep them out
    outsiders = [plain_push(url, zmq.DEALER), stranger_push(url, stranger, keys.public, zmq.DEALER)]
    for sock in outsiders:
        try:
            sock.send_multipart(numbered(1, encode_batch(S, [[1, ["forged"]]])), zmq.NOBLOCK)
        except zmq.Again:
            pass  # a refused handshake leaves no peer to queue for
    time.sleep(QUIET_MS / 1000)
    assert sink.rows == [] and svc.frames == 0
    member = zmq.Context.instance().socket(zmq.DEALER)
    curve.client(member, keys)
    member.connect(url)
    member.send_multipart(numbered(1, encode_batch(S, [[2, ["real"]]])))
    assert wait(lambda: sink.rows == [("real",)])
    for sock in outsiders + [member]:
        sock.close(0)
    svc.stop()


def test_a_fake_publisher_endpoint_reads_nothing_a_bolt_sends(curve_registry, keys, stranger):
    """Even a publisher endpoint the registry lists cannot read a bolt's frames without the
    cluster secret key: the bolt's CURVE handshake fails and nothing is sent."""
    svc, url = curve_registry
    fakes = []
    for server_keys in (None, stranger):
        sock = zmq.Context.instance().socket(zmq.ROUTER)  # what a worker's publisher port is
        sock.setsockopt(zmq.LINGER, 0)
        curve.server(sock, server_keys)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        fakes.append(sock)
        member = RegistryClient(url, security=curve.LinkSecurity(keys))
        member.register("publisher", T, P, "127.0.0.1", port, worker=f"fake{port}")
        bolt = PublisherBolt(
            {
                "registry": url,
                "tenant": T,
                "plan": P,
                "streams": {S: ["a"]},
                "host": "127.0.0.1",
                "retry_interval": 0.05,
                "connect_timeout": 0.5,
                "drain_timeout": 0.2,
            }
        )
        bolt.prepare(
            Context(
                f"{P}[{T}]", "EventPublisherBolt", 0, 1, 0, {}, security=curve.LinkSecurity(keys)
            ),
            Collector("p", {}),
        )
        bolt.execute(Batch([(1, "secret output")], S))
        assert not sock.poll(QUIET_MS)
        assert bolt.sent == 0 and not bolt.connected  # a TCP connection is not a link
        bolt.cleanup()
        member.unregister("publisher", T, P, f"tcp://127.0.0.1:{port}")
        member.close()
    for sock in fakes:
        sock.close(0)


# -- the worker's ZeroMQ receiver -------------------------------------------------------------


def test_the_zmq_receiver_takes_the_cluster_key_and_listed_clients_only(tmp_path, stranger):
    folder = tmp_path / "curve"
    keys = curve.create_or_load(folder)
    (folder / "clients").mkdir()
    public, secret = zmq.auth.create_certificates(str(folder / "clients"), "sender")
    sender = curve.CurveKeys(*zmq.auth.load_certificate(secret))
    keys = curve.load(folder)
    router, recorder = IngestRouter(), Recorder()
    router.register(("1", P, "StockStream"), STOCK, recorder)
    receiver = ZmqReceiver(router, keys=keys).start()
    event = ["IBM", 1.0, 1, 1, True]
    # a refused handshake may leave an outsider's PUSH socket with no peer, where a send
    # blocks: a send timeout, and a refused send counts as not delivered
    outsiders = [
        ZmqEventClient(receiver.url, send_timeout_ms=2000),
        ZmqEventClient(receiver.url, keys=stranger, server_key=keys.public, send_timeout_ms=2000),
    ]
    for client in outsiders:
        try:
            client.send(("1", P, "StockStream"), [[1, event]])
        except zmq.Again:
            pass
    time.sleep(QUIET_MS / 1000)
    assert recorder.events == []
    insiders = [
        ZmqEventClient(receiver.url, keys=keys),
        ZmqEventClient(receiver.url, keys=sender, server_key=keys.public),
    ]
    for ts, client in enumerate(insiders, 2):
        client.send(("1", P, "StockStream"), [[ts, event]])
    assert wait(lambda: sorted(ts for ts, _ in recorder.events) == [2, 3])
    for client in outsiders + insiders:
        client._sock.setsockopt(zmq.LINGER, 0)
        client.close()
    receiver.stop()


# -- task links and the topology driver -------------------------------------------------------


def small_topology():
    t = Topology("CurveLinks")
    t.add_spout("src", ListSpout, outputs={"default": ["x"]}, config={"rows": []})
    t.add_bolt("sink", CollectBolt, inputs={"src": "shuffle"})
    return t


OPTIONS = {
    "host": "127.0.0.1",
    "queue_batches": 8,
    "socket_buffer": 65536,
    "metrics_interval_s": 1.0,
    "idle_sleep_ms": 1,
}


def test_a_task_input_takes_frames_only_from_the_cluster_key(keys, stranger):
    options = dict(OPTIONS, security=curve.LinkSecurity(keys).to_options())
    driver = {"reports": "tcp://127.0.0.1:9", "tasks": "tcp://127.0.0.1:9"}
    topology = small_topology()
    bolt_task = [t for t, (cid, _) in enumerate(topology.tasks()) if cid == "sink"][0]
    runner = TaskRunner(topology, bolt_task, driver, options)
    url = runner.bind("127.0.0.1")
    frames = [wire.header("default", "src", 0.0), wire.encode_rows([(1,)])]
    outsiders = [plain_push(url), stranger_push(url, stranger, keys.public)]
    for sock in outsiders:
        try:  # a refused handshake may leave the socket no peer to queue for (a blocking send
            sock.send_multipart(frames, zmq.NOBLOCK)  # hung here once): that is the refusal
        except zmq.Again:
            pass
    assert not runner.pull.poll(QUIET_MS)
    member = zmq.Context.instance().socket(zmq.PUSH)
    curve.client(member, keys)
    member.connect(url)
    member.send_multipart(frames)
    assert runner.pull.poll(3000)
    for sock in outsiders + [member]:
        sock.close(0)
    curve.stop_authenticator(runner.zctx)
    runner.zctx.destroy(linger=0)


def test_the_driver_answers_only_the_cluster_key(tmp_path, keys, stranger):
    launch = {
        "host": "127.0.0.1",
        "executors": 1,
        "kill_wait_secs": 1,
        "master_ui_url": "",
        "options": dict(OPTIONS, security=curve.LinkSecurity(keys).to_options()),
    }
    (tmp_path / "launch.json").write_text(json.dumps(launch))
    driver = Driver(small_topology(), launch, tmp_path)
    stop = threading.Event()

    def serve():  # the driver's loop: answer control requests, publish the desired state
        while not stop.is_set():
            if driver.rep.poll(50):
                driver._answer_raw(driver.rep.recv())
            driver._publish()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    control = driver.endpoints["control"]
    for outsider in (None, stranger):
        sock = zmq.Context.instance().socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        curve.client(sock, outsider, keys.public)
        sock.connect(control)
        sock.send(wire.pack_message({"cmd": "kill"}))
        assert not sock.poll(QUIET_MS)
        sock.close(0)
    subs = []
    for subscriber in (None, stranger, keys):  # the tasks' control feed
        sub = zmq.Context.instance().socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        curve.client(sub, subscriber, keys.public)
        sub.connect(driver.endpoints["tasks"])
        subs.append(sub)
    assert subs[2].poll(3000) and wire.unpack_message(subs[2].recv())["state"] == "active"
    assert not subs[0].poll(QUIET_MS) and not subs[1].poll(0)
    for sub in subs:
        sub.close(0)
    handle = TopologyHandle("CurveLinks", tmp_path)  # the keys from launch.json
    reply = handle.request({"cmd": "status"}, timeout=3)
    assert reply["name"] == "CurveLinks" and driver.kill_deadline is None
    stop.set()
    thread.join(2)
    curve.stop_authenticator(driver.zctx)
    driver.zctx.destroy(linger=0)


def test_the_cli_flags_turn_curve_on():
    from cep.cli.main import build_parser
    from cep.cli.manager import overrides_from
    from cep.cli.worker import overrides_from_args

    parser = build_parser()
    assert overrides_from(parser.parse_args(["manager", "--curve"]))["security.curve"] is True
    assert "security.curve" not in overrides_from(parser.parse_args(["manager"]))
    args = parser.parse_args(["worker", "--curve-dir", "/etc/cep/curve"])
    assert overrides_from_args(args)["security.curve_dir"] == "/etc/cep/curve"
