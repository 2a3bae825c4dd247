"""@source/@sink(type='kafka') against librdkafka's built-in mock cluster (not a Kafka
broker: none runs on these machines): events out and back in, the consumer's offsets saved
after the worker took a batch, and a restarted source resuming from them even when the
group's commit was lost; a sink whose records are not delivered fails its batch."""

import pytest
from confluent_kafka import Producer

from connectors.kafka_io import client_config
from publishers.sinks import build_sink
from publishers.exceptions import SinkWriteError
from receivers.sources import build_source
from tests.conftest import free_port
from tests.connectors.conftest import KEY, wait_for


def test_out_through_the_sink_in_through_the_source(kafka_mock, router, taken, tmp_path):
    sink = build_sink(
        {"type": "kafka", "options": {"url": kafka_mock, "topic": "k1", "key": "0"}}, "Ticks"
    )
    sink.write_batch([(1000 + i, [i, 0.25]) for i in range(1000)])
    sink.close()
    assert sink.written == 1000
    pump = build_source(
        {"type": "kafka", "url": kafka_mock, "topic": "k1", "group.id": "k1-group"},
        router,
        KEY,
        state_dir=str(tmp_path),
    ).start()
    try:
        assert wait_for(lambda: len(taken.ids()) == 1000)
        assert sorted(taken.ids()) == list(range(1000))
        assert wait_for(lambda: sum(pump.source.offsets.values()) == 1000)
    finally:
        pump.stop()


def test_a_restarted_source_resumes_from_its_saved_offsets(kafka_mock, router, taken, tmp_path):
    producer = Producer(client_config(kafka_mock))
    for i in range(200):
        producer.produce("k2", f'{{"data": [{i}, 1.0]}}'.encode(), partition=0)
    producer.flush(10)
    pump = build_source(
        {"type": "kafka", "url": kafka_mock, "topic": "k2", "group.id": "k2-first"},
        router,
        KEY,
        state_dir=str(tmp_path),
    ).start()
    assert wait_for(lambda: len(taken.ids()) == 200)
    pump.stop()
    for i in range(200, 250):
        producer.produce("k2", f'{{"data": [{i}, 1.0]}}'.encode(), partition=0)
    producer.flush(10)
    # a new consumer group (no commit at all): the saved offsets still say where to resume
    again = build_source(
        {"type": "kafka", "url": kafka_mock, "topic": "k2", "group.id": "another"},
        router,
        KEY,
        state_dir=str(tmp_path),
    ).start()
    try:
        assert wait_for(lambda: len(taken.ids()) == 250)
        assert taken.ids() == list(range(250))
    finally:
        again.stop()


def test_a_batch_whose_records_are_not_delivered_fails_and_is_not_counted():
    # nothing listens on the port: librdkafka fails each record at the sink's timeout and
    # reports it (the sink asks for reports of failed records only)
    sink = build_sink(
        {
            "type": "kafka",
            "options": {"url": f"kafka://127.0.0.1:{free_port()}", "topic": "k3", "timeout": "1"},
        },
        "Ticks",
    )
    try:
        with pytest.raises(SinkWriteError) as failed:
            sink.write_batch([(1000 + i, [i, 0.25]) for i in range(50)])
        assert "0 records not delivered" in str(failed.value)
        assert "50 failed" in str(failed.value)
        assert sink.written == 0
    finally:
        sink.producer.purge()
