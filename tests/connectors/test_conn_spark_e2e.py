"""Events in through a broker source, through a topology on a real Spark cluster, out through
a broker sink, counted, for NATS JetStream, MQTT (QoS 1), JMS (ActiveMQ over STOMP) and Kafka
(librdkafka's mock cluster); and no accepted event lost (nor written twice) when a topology
task is killed with SIGKILL mid-stream, for NATS, MQTT QoS 1 and JMS at once. Slow: an
embedded Spark cluster and real brokers."""

import asyncio
import collections
import json
import threading
import time

import nats
import paho.mqtt.client as mqtt
import pytest
import stomp
from nats.js.api import AckPolicy, ConsumerConfig

from connectors.nats_io import default_stream
from tests.connectors.flow import handle, kill_task, start_system

pytestmark = pytest.mark.slow

PLAN = """@Plan:name('BrokerFlow')
@Import('Ticks:1.0.0')
@source(type='nats', connection='events', subject='flow.in', durable='flow')
define stream Ticks (id long, price double);
@Export('Out:1.0.0')
@sink(type='nats', connection='events', subject='flow.out', delivery='exactly-once')
define stream Out (id long, price double);
@Import('MTicks:1.0.0')
@source(type='mqtt', connection='plant', topic='flow/in', qos='1', client.id='flow-in')
define stream MTicks (id long, price double);
@Export('MOut:1.0.0')
@sink(type='mqtt', connection='plant', topic='flow/out', qos='1')
define stream MOut (id long, price double);
@Import('JTicks:1.0.0')
@source(type='jms', connection='amq', destination='/queue/flow.in')
define stream JTicks (id long, price double);
@Export('JOut:1.0.0')
@sink(type='jms', connection='amq', destination='/queue/flow.out')
define stream JOut (id long, price double);
@Import('KTicks:1.0.0')
@source(type='kafka', connection='bus', topic='flow.in', group.id='flow')
define stream KTicks (id long, price double);
@Export('KOut:1.0.0')
@sink(type='kafka', connection='bus', topic='flow.out')
define stream KOut (id long, price double);
@dist(parallel='2', execGroup='f')
from Ticks select id, price insert into Out;
@dist(parallel='1', execGroup='m')
from MTicks select id, price insert into MOut;
@dist(parallel='1', execGroup='j')
from JTicks select id, price insert into JOut;
@dist(parallel='1', execGroup='k')
from KTicks select id, price insert into KOut;
"""


class Readers:
    """What came out of the MQTT topic and the JMS queue, counted by id, from the start."""

    def __init__(self, mosquitto, activemq):
        self.mqtt, self.jms, self.lock = (
            collections.Counter(),
            collections.Counter(),
            threading.Lock(),
        )
        self.m = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id="flow-reader", clean_session=False
        )
        self.m.on_message = lambda c, u, msg: self._take(self.mqtt, msg.payload)
        self.m.on_connect = lambda c, u, f, r, p: c.subscribe("flow/out", qos=1)
        self.m.connect("127.0.0.1", mosquitto.port)
        self.m.loop_start()
        readers = self

        class Listener(stomp.ConnectionListener):
            def on_message(self, frame):
                readers._take(readers.jms, frame.body)

        self.j = stomp.Connection12([("127.0.0.1", activemq.port)])
        self.j.set_listener("r", Listener())
        self.j.connect(wait=True)
        self.j.subscribe("/queue/flow.out", id="r", ack="auto")

    def _take(self, counter, payload):
        with self.lock:
            counter[json.loads(payload)["data"][0]] += 1

    def snapshot(self, which):
        with self.lock:
            return collections.Counter(getattr(self, which))

    def close(self):
        self.m.disconnect()
        self.m.loop_stop()
        self.j.disconnect()


@pytest.fixture(scope="module")
def system(tmp_path_factory, nats_server, mosquitto, activemq, kafka_mock):
    s = start_system(
        tmp_path_factory.mktemp("flow"),
        PLAN,
        [
            f"events={nats_server.url}",
            f"plant={mosquitto.url}",
            f"amq={activemq.url}",
            f"bus={kafka_mock}",
        ],
    )
    yield s
    s.close()


@pytest.fixture(scope="module")
def readers(mosquitto, activemq):
    r = Readers(mosquitto, activemq)
    time.sleep(0.5)
    yield r
    r.close()


class Sender(threading.Thread):
    """Sends `{"data": [id, 1.0]}` at about `rate` events/s (ids counting up from `first`) in
    20 batches a second; keeps the ids the broker confirmed (accepted)."""

    def __init__(self, first, rate):
        super().__init__(daemon=True)
        self.next, self.per = first, max(1, rate // 20)
        self.accepted, self.stop = [], threading.Event()

    def run(self):
        self.open()
        while not self.stop.is_set():
            ids = list(range(self.next, self.next + self.per))
            self.next += self.per
            self.accepted.extend(self.send([f'{{"data": [{i}, 1.0]}}' for i in ids], ids))
            time.sleep(0.05)
        self.close()


class NatsSender(Sender):
    def __init__(self, url, subject, first, rate):
        super().__init__(first, rate)
        self.url, self.subject = url, subject

    def open(self):
        self.loop = asyncio.new_event_loop()
        self.nc = self.loop.run_until_complete(nats.connect(self.url))
        self.js = self.nc.jetstream()

    def send(self, bodies, ids):
        async def go():
            futures = [await self.js.publish_async(self.subject, b.encode()) for b in bodies]
            ok = []
            for i, f in zip(ids, futures):
                try:
                    await f
                    ok.append(i)
                except Exception:  # noqa: BLE001 - not accepted: not counted
                    pass
            return ok

        return self.loop.run_until_complete(go())

    def close(self):
        self.loop.run_until_complete(self.nc.close())


class MqttSender(Sender):
    def __init__(self, port, first, rate):
        super().__init__(first, rate)
        self.port = port

    def open(self):
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"flow-w{self.next}")
        self.c.connect("127.0.0.1", self.port)
        self.c.loop_start()

    def send(self, bodies, ids):
        infos = [self.c.publish("flow/in", b, qos=1) for b in bodies]
        ok = []
        for i, info in zip(ids, infos):
            info.wait_for_publish(10)
            if info.is_published():
                ok.append(i)
        return ok

    def close(self):
        self.c.disconnect()
        self.c.loop_stop()


class JmsSender(Sender):
    def __init__(self, port, first, rate):
        super().__init__(first, rate)
        self.port = port

    def open(self):
        self.receipts = set()
        sender = self

        class Listener(stomp.ConnectionListener):
            def on_receipt(self, frame):
                sender.receipts.add(frame.headers["receipt-id"])

        self.c = stomp.Connection12([("127.0.0.1", self.port)])
        self.c.set_listener("w", Listener())
        self.c.connect(wait=True)

    def send(self, bodies, ids):
        receipt = f"r{ids[0]}"
        for k, b in enumerate(bodies):
            headers = {
                "persistent": "true",
                **({"receipt": receipt} if k == len(bodies) - 1 else {}),
            }
            self.c.send("/queue/flow.in", b, headers=headers)
        deadline = time.monotonic() + 10
        while receipt not in self.receipts and time.monotonic() < deadline:
            time.sleep(0.01)
        return ids if receipt in self.receipts else []

    def close(self):
        self.c.disconnect()


async def _nats_output(url, stream):
    """Counter of the first value of every message in JetStream stream `stream`."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    try:
        info = await js.stream_info(stream)
    except Exception:  # noqa: BLE001 - not created yet: nothing came out
        await nc.close()
        return collections.Counter()
    sub = await js.pull_subscribe(
        ">", stream=stream, config=ConsumerConfig(ack_policy=AckPolicy.NONE)
    )
    got = collections.Counter()
    left = info.state.messages
    while left > 0:
        msgs = await sub.fetch(min(left, 1000), timeout=10)
        for m in msgs:
            got[json.loads(m.data)["data"][0]] += 1
        left -= len(msgs)
    await sub.unsubscribe()
    await nc.close()
    return got


def nats_output(url):
    return asyncio.new_event_loop().run_until_complete(
        _nats_output(url, default_stream("flow.out"))
    )


def wait_for_all(read, want, what, timeout=180):
    """Waits until `read()` holds every id of `want`; then a moment for copies to show."""
    deadline = time.monotonic() + timeout
    got = collections.Counter()
    while time.monotonic() < deadline:
        got = read()
        if not want - got:
            time.sleep(1.0)  # a replay's copies would have arrived with the missing ids
            return read()
        time.sleep(0.5)
    missing = sorted(want - got)
    pytest.fail(f"{what}: {len(missing)} accepted ids never came out (first: {missing[:10]})")


def run_senders(senders, seconds, during=None):
    for s in senders:
        s.start()
    time.sleep(seconds / 2)
    if during:
        during()
    time.sleep(seconds / 2)
    for s in senders:
        s.stop.set()
    for s in senders:
        s.join(60)


def test_events_in_through_nats_through_spark_out_through_nats(system, nats_server):
    sender = NatsSender(nats_server.url, "flow.in", 0, 2000)
    run_senders([sender], 2.0)
    assert sender.accepted, "the broker accepted nothing"
    want = collections.Counter(sender.accepted)
    got = wait_for_all(lambda: nats_output(nats_server.url), want, "nats")
    assert got == want


def test_events_in_through_mqtt_through_spark_out_through_mqtt(system, readers, mosquitto):
    sender = MqttSender(mosquitto.port, 0, 2000)
    run_senders([sender], 2.0)
    want = collections.Counter(sender.accepted)
    assert want, "the broker accepted nothing"
    got = wait_for_all(lambda: readers.snapshot("mqtt"), want, "mqtt")
    assert got == want


def test_events_in_through_jms_through_spark_out_through_jms(system, readers, activemq):
    sender = JmsSender(activemq.port, 0, 2000)
    run_senders([sender], 2.0)
    want = collections.Counter(sender.accepted)
    assert want, "the broker accepted nothing"
    got = wait_for_all(lambda: readers.snapshot("jms"), want, "jms")
    assert got == want


def test_events_in_through_kafka_through_spark_out_through_kafka(system, kafka_mock):
    from confluent_kafka import Consumer, Producer
    from connectors.kafka_io import client_config

    producer = Producer(client_config(kafka_mock))
    for i in range(2000):
        producer.produce("flow.in", json.dumps({"data": [i, 1.0]}).encode())
    assert producer.flush(30) == 0
    consumer = Consumer(
        {**client_config(kafka_mock), "group.id": "flow-reader", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["flow.out"])
    got = collections.Counter()
    want = collections.Counter(range(2000))
    deadline = time.monotonic() + 120
    try:
        while want - got and time.monotonic() < deadline:
            for m in consumer.consume(1000, 1.0):
                if not m.error():
                    got[json.loads(m.value())["data"][0]] += 1
    finally:
        consumer.close()
    assert got == want


@pytest.mark.parametrize("target", ["siddhi-0", "publisher", "spout"])
def test_a_task_killed_mid_stream_loses_no_accepted_event_and_writes_none_twice(
    system, readers, nats_server, mosquitto, activemq, target
):
    """NATS (exactly-once sink), MQTT QoS 1 and JMS flows all send while the task of
    `target` in every execution group is killed; every accepted id comes out once."""
    before = {
        "nats": nats_output(nats_server.url),
        "mqtt": readers.snapshot("mqtt"),
        "jms": readers.snapshot("jms"),
    }
    first = 1 + max(max(c) if c else 0 for c in before.values())
    senders = {
        "nats": NatsSender(nats_server.url, "flow.in", first, 1000),
        "mqtt": MqttSender(mosquitto.port, first, 1000),
        "jms": JmsSender(activemq.port, first, 1000),
    }
    restarts = []
    run_senders(
        list(senders.values()), 3.0, during=lambda: restarts.append(kill_task(system, target))
    )
    reads = {
        "nats": lambda: nats_output(nats_server.url),
        "mqtt": lambda: readers.snapshot("mqtt"),
        "jms": lambda: readers.snapshot("jms"),
    }
    for name, sender in senders.items():
        assert sender.accepted, f"{name}: nothing accepted"
        want = before[name] + collections.Counter(sender.accepted)
        got = wait_for_all(reads[name], want, f"{name} after a {target} kill")
        assert got == want, f"{name}: written twice: {sorted(got - want)[:10]}"
    assert handle(system).status()["restarts"] > restarts[0], "the kill did not restart the stage"
