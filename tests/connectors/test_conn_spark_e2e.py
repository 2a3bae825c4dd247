"""Events in through a broker source, through a topology on a real Spark cluster, out through
a broker sink, counted; and no accepted event lost (nor written twice) when a topology task
is killed with SIGKILL mid-stream. Slow: an embedded Spark cluster and real brokers."""
import asyncio
import collections
import json
import threading
import time

import nats
import pytest
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
@dist(parallel='1', execGroup='k')
from KTicks select id, price insert into KOut;
"""


@pytest.fixture(scope="module")
def system(tmp_path_factory, nats_server, mosquitto, kafka_mock):
    s = start_system(tmp_path_factory.mktemp("flow"), PLAN,
                     [f"events={nats_server.url}", f"plant={mosquitto.url}", f"bus={kafka_mock}"])
    yield s
    s.close()


class NatsSender(threading.Thread):
    """Publishes `{"data": [id, 1.0]}` to JetStream at about `rate` events/s (ids counting
    up from `first`); keeps the ids JetStream acknowledged (accepted)."""

    def __init__(self, url, subject, first, rate):
        super().__init__(daemon=True)
        self.url, self.subject, self.next, self.per = url, subject, first, max(1, rate // 20)
        self.accepted, self.stop = [], threading.Event()

    def run(self):
        asyncio.new_event_loop().run_until_complete(self._run())

    async def _run(self):
        nc = await nats.connect(self.url)
        js = nc.jetstream()
        while not self.stop.is_set():
            ids = list(range(self.next, self.next + self.per))
            self.next += self.per
            futures = [await js.publish_async(self.subject, f'{{"data": [{i}, 1.0]}}'.encode())
                       for i in ids]
            for i, f in zip(ids, futures):
                try:
                    await f
                    self.accepted.append(i)
                except Exception:  # noqa: BLE001 - not accepted: not counted
                    pass
            await asyncio.sleep(0.05)
        await nc.close()


async def _output(url, stream):
    """Counter of the first value of every message in JetStream stream `stream`."""
    import json
    nc = await nats.connect(url)
    js = nc.jetstream()
    try:
        info = await js.stream_info(stream)
    except Exception:  # noqa: BLE001 - not created yet: nothing came out
        await nc.close()
        return collections.Counter()
    sub = await js.pull_subscribe(">", stream=stream,
                                  config=ConsumerConfig(ack_policy=AckPolicy.NONE))
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


def output(url, stream):
    return asyncio.new_event_loop().run_until_complete(_output(url, stream))


def wait_output(url, stream, want, timeout=180):
    deadline = time.monotonic() + timeout
    got = collections.Counter()
    while time.monotonic() < deadline:
        got = output(url, stream)
        if not want - got:
            return got
        time.sleep(0.5)
    missing = sorted(want - got)
    pytest.fail(f"{len(missing)} accepted ids never came out of {stream} (first: {missing[:10]})")


def send(url, subject, first, rate, seconds, during=None):
    sender = NatsSender(url, subject, first, rate)
    sender.start()
    time.sleep(seconds / 2)
    if during:
        during()
    time.sleep(seconds / 2)
    sender.stop.set()
    sender.join(30)
    return sender


def test_events_in_through_nats_through_spark_out_through_nats(system, nats_server):
    sender = send(nats_server.url, "flow.in", 0, 2000, 2.0)
    assert len(sender.accepted) > 1000
    got = wait_output(nats_server.url, default_stream("flow.out"),
                      collections.Counter(sender.accepted))
    assert got == collections.Counter(sender.accepted)
    described = system.worker.plans[(-1234, "BrokerFlow")]
    assert described is not None


@pytest.mark.parametrize("target", ["siddhi-0", "publisher", "spout"])
def test_a_task_killed_mid_stream_loses_no_accepted_event_and_writes_none_twice(
        system, nats_server, target):
    before = output(nats_server.url, default_stream("flow.out"))
    first = max(before) + 1 if before else 0
    restarts = []
    sender = send(nats_server.url, "flow.in", first, 2000, 3.0,
                  during=lambda: restarts.append(kill_task(system, target)))
    want = before + collections.Counter(sender.accepted)
    got = wait_output(nats_server.url, default_stream("flow.out"), want)
    time.sleep(1.0)  # a replay's copies would have arrived with the missing ids
    got = output(nats_server.url, default_stream("flow.out"))
    assert got == want, (f"duplicates {sorted((got - want))[:10]}")
    assert handle(system).status()["restarts"] > restarts[0], "the kill did not restart the stage"


def test_events_in_through_mqtt_through_spark_out_through_mqtt(system, mosquitto):
    import paho.mqtt.client as mqtt
    got = collections.Counter()
    reader = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="flow-reader")
    reader.on_message = lambda c, u, m: got.update([json.loads(m.payload)["data"][0]])
    reader.connect("127.0.0.1", mosquitto.port)
    reader.subscribe("flow/out", qos=1)
    reader.loop_start()
    writer = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="flow-writer")
    writer.connect("127.0.0.1", mosquitto.port)
    writer.loop_start()
    try:
        time.sleep(0.5)
        infos = [writer.publish("flow/in", json.dumps({"data": [i, 1.0]}), qos=1)
                 for i in range(2000)]
        for info in infos:
            info.wait_for_publish(30)
        want = collections.Counter(range(2000))
        deadline = time.monotonic() + 120
        while want - got and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not want - got, f"{sum((want - got).values())} events did not come out"
        assert set(got) == set(want)
    finally:
        for c in (reader, writer):
            c.disconnect()
            c.loop_stop()


def test_events_in_through_kafka_through_spark_out_through_kafka(system, kafka_mock):
    from confluent_kafka import Consumer, Producer
    from connectors.kafka_io import client_config
    producer = Producer(client_config(kafka_mock))
    for i in range(2000):
        producer.produce("flow.in", json.dumps({"data": [i, 1.0]}).encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**client_config(kafka_mock), "group.id": "flow-reader",
                         "auto.offset.reset": "earliest"})
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
