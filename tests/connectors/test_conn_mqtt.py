"""@source/@sink(type='mqtt') against a real mosquitto broker: QoS 0, 1 and 2 in and out;
a QoS 1 message the worker did not take comes back after the source reconnects (persistent
session, acknowledged by hand); a payload that is not an event is counted."""

import json

import paho.mqtt.client as mqtt
import pytest

from publishers.sinks import build_sink
from receivers.sources import build_source
from tests.connectors.conftest import KEY, wait_for


def source(server, router, **options):
    return build_source({"type": "mqtt", "url": server.url, **options}, router, KEY)


def sink(server, **options):
    return build_sink({"type": "mqtt", "options": {"url": server.url, **options}}, "Ticks")


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_events_in_and_out_at_each_qos(mosquitto, router, taken, qos):
    topic = f"q{qos}/ticks"
    pump = source(mosquitto, router, topic=topic, qos=str(qos), **{"client.id": f"in{qos}"})
    pump.start()
    out = sink(mosquitto, topic=topic, qos=str(qos))
    try:
        out.write_batch([(1000 + i, [i, 0.5]) for i in range(400)])
        assert out.written == 400
        assert wait_for(lambda: len(taken.ids()) == 400)
        assert sorted(taken.ids()) == list(range(400))
        assert pump.describe()["qos"] == qos
    finally:
        out.close()
        pump.stop()


def test_a_qos1_message_not_taken_comes_back_after_a_reconnect(mosquitto, router, taken):
    topic = "keep/ticks"
    first = source(mosquitto, router, topic=topic, qos="1", **{"client.id": "keeper"})
    first.start()
    taken.full = True  # the worker refuses: nothing is acknowledged
    arrived, deliver = [], first.source.client.on_message
    first.source.client.on_message = lambda c, u, m: (arrived.append(m.mid), deliver(c, u, m))
    out = sink(mosquitto, topic=topic, qos="1")
    try:
        out.write_batch([(1, [i, 1.0]) for i in range(50)])
        # all 50 reached the first source (queued, or in the batch the worker keeps refusing)
        assert wait_for(lambda: len(arrived) == 50, 60.0)
        assert first.accepted == 0
        first.stop()  # the worker goes away with the events unacknowledged
        taken.full = False
        again = source(mosquitto, router, topic=topic, qos="1", **{"client.id": "keeper"})
        again.start()
        try:
            assert wait_for(lambda: sorted(set(taken.ids())) == list(range(50)))
        finally:
            again.stop()
    finally:
        out.close()


def test_a_bad_payload_is_counted_and_its_neighbours_go_on(mosquitto, router, taken):
    pump = source(mosquitto, router, topic="bad/ticks", qos="1", **{"client.id": "bad"})
    pump.start()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.connect("127.0.0.1", mosquitto.port)
    client.loop_start()
    try:
        for payload in (json.dumps({"data": [1, 1.0]}), "{broken", json.dumps({"data": [2, 2.0]})):
            client.publish("bad/ticks", payload, qos=1).wait_for_publish(5)
        assert wait_for(lambda: taken.ids() == [1, 2] and pump.bad_payloads == 1)
    finally:
        client.disconnect()
        client.loop_stop()
        pump.stop()
