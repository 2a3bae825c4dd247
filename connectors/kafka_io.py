"""`@source(type='kafka')` and `@sink(type='kafka')` on confluent-kafka (librdkafka).

Source: a consumer of `topic` in consumer group `group.id` (default one per plan stream),
auto-commit off. After the worker took a batch, the next offset of every partition in it is
saved under the worker's state folder (connectors/position.py) and then committed to the
group; when partitions are assigned, a saved offset ahead of the group's wins, so a restarted
source resumes after what it handed on even when the commit was lost.

Sink: an idempotent producer (`acks`, default all); each event is a record of `topic`, keyed
by the value of attribute `key` when given; a batch is written once every record of it was
delivered. librdkafka reports only the records that failed (`delivery.report.only.error`: no
Python callback per delivered record) and fails a record it could not deliver within
`timeout` (`message.timeout.ms`), so `flush` returning with no failure report means every
record of the batch was acknowledged by the broker.

The tests run librdkafka's built-in mock cluster (`test.mock.num.brokers`), not a Kafka
broker: no Kafka broker runs on these machines."""

import logging

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from connectors.connections import parts, shown
from connectors.mapping import decode_payload, json_batch_decoder, sink_payloads
from connectors.options import integer, number, required
from connectors.pump import Fetched, decode_batch
from publishers.base import Sink
from publishers.exceptions import SinkWriteError

log = logging.getLogger(__name__)


def client_config(url: str) -> dict:
    """librdkafka settings of a kafka://[user:password@]host:port[,host:port] connection
    (with a user: SASL PLAIN)."""
    _, hosts, user, password, _ = parts(url)
    config = {"bootstrap.servers": ",".join(f"{h}:{p or 9092}" for h, p in hosts), "log_level": 4}
    if user:
        config.update(
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "PLAIN",
                "sasl.username": user,
                "sasl.password": password or "",
            }
        )
    return config


class KafkaSource:
    """A broker source for connectors.pump.BrokerPump; see the module doc."""

    type = "kafka"
    decode = staticmethod(decode_payload)  # set by the pump: the @map or this JSON
    decode_many = staticmethod(json_batch_decoder(""))  # set by the pump: per batch

    def __init__(self, key, options, url, position):
        where = f"@source(type='kafka') on {key}"
        self.key, self.url = key, url
        self.topic = required(options, "topic", where, "topic.list")
        if "," in self.topic:
            raise ValueError(f"{where}: one topic per source (topic.list={self.topic!r})")
        self.group = str(options.get("group.id") or f"cep-{key.tenant}-{key.plan}-{key.stream}")
        self.batch = integer(options, "batch.size", 1000, where, 1, 100000)
        self.position = position
        self.offsets = dict(position.load() or {})  # "partition" -> next offset
        self.consumer = None
        self.skipped = 0

    def open(self):
        self.consumer = Consumer(
            {
                **client_config(self.url),
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                # fetch ahead up to 1M messages (64 MB, librdkafka's
                # queued.max.messages.kbytes, bounds the memory): past
                # 100,000 (the default) librdkafka pauses fetching for a
                # second while a fast source drains its queue
                "queued.min.messages": 1_000_000,
            }
        )
        self.consumer.subscribe([self.topic], on_assign=self._on_assign)

    def _on_assign(self, consumer, partitions):
        for tp in partitions:
            saved = self.offsets.get(str(tp.partition))
            if saved is not None:
                tp.offset = saved  # the saved position wins over the group's commit
        consumer.assign(partitions)

    def fetch(self, timeout):
        msgs = self.consumer.consume(self.batch, timeout)
        if not msgs:
            return None
        errors, ends, kept = [], {}, []
        offsets = self.offsets
        for m in msgs:
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    errors.append(f"kafka error: {m.error()}")
                continue
            partition, offset = m.partition(), m.offset()
            ends[partition] = offset + 1
            saved = offsets.get(str(partition)) if offsets else None
            if saved is not None and offset < saved:
                self.skipped += 1
                continue
            kept.append(m)
        events, pairs, bad = decode_batch(
            self,
            [m.value() or b"" for m in kept],
            lambda i: f"partition {kept[i].partition()} offset {kept[i].offset()}",
        )
        return Fetched(events, errors + bad, ends, pairs)

    def ack(self, token):
        if not token:
            return
        for partition, end in token.items():
            self.offsets[str(partition)] = max(end, self.offsets.get(str(partition), 0))
        self.position.save(self.offsets)
        self.consumer.commit(
            offsets=[TopicPartition(self.topic, p, o) for p, o in token.items()], asynchronous=True
        )

    def close(self):
        if self.consumer is not None:
            self.consumer.close()

    def describe(self):
        return {
            "type": "kafka",
            "url": shown(self.url),
            "topic": self.topic,
            "group_id": self.group,
            "offsets": dict(self.offsets),
            "skipped": self.skipped,
        }


class KafkaSink(Sink):
    """`@sink(type='kafka', connection='bus', topic='alerts', key='symbol')`."""

    type = "kafka"

    def __init__(self, stream, options, url, attributes=None):
        super().__init__(stream, options)
        where = f"@sink(type='kafka') on stream {stream}"
        self.url = url
        self.topic = required(self.options, "topic", where)
        self.key_index = (
            integer(self.options, "key", -1, where, -1)
            if str(self.options.get("key", "-1")).lstrip("-").isdigit()
            else None
        )
        self.timeout = number(self.options, "timeout", 10.0, where)
        self.per_message = integer(self.options, "batch.events", 1, where, 1, 100000)
        acks = str(self.options.get("acks", "all"))
        self.producer = Producer(
            {
                **client_config(url),
                "acks": acks,
                "enable.idempotence": acks == "all",
                "linger.ms": 5,
                "batch.num.messages": 10000,
                # a record not acknowledged within `timeout` fails (and
                # is reported) instead of waiting in librdkafka's queue
                "message.timeout.ms": max(1, int(self.timeout * 1000)),
                # the callback runs for failed records only
                "delivery.report.only.error": True,
                "on_delivery": self._delivered,
            }
        )
        self._failed = []

    def _delivered(self, err, msg):
        if err is not None:
            self._failed.append(str(err))

    def write_batch(self, events):
        self._failed = []
        payloads = sink_payloads(self, events, self.per_message)
        produce, topic = self.producer.produce, self.topic
        if self.key_index is not None and self.key_index >= 0:
            k, step = self.key_index, self.per_message
            for i, payload in enumerate(payloads):
                row = events[min(i * step, len(events) - 1)][1]
                key = str(row[k]).encode() if k < len(row) else None
                try:
                    produce(topic, payload, key=key)
                except BufferError:  # the local queue is full: let deliveries drain it
                    self._produce_when_room(payload, key)
        else:
            for payload in payloads:
                try:
                    produce(topic, payload)
                except BufferError:
                    self._produce_when_room(payload, None)
        # every record is delivered or failed (and reported) by its message timeout
        left = self.producer.flush(self.timeout + 5)
        if left or self._failed:
            raise SinkWriteError(
                f"kafka sink {shown(self.url)} topic {self.topic}: "
                f"{left} records not delivered within {self.timeout} s, "
                f"{len(self._failed)} failed"
                f"{': ' + self._failed[0] if self._failed else ''}"
            )
        self.written += len(events)

    def _produce_when_room(self, payload, key):
        while True:
            self.producer.poll(0.1)
            try:
                self.producer.produce(self.topic, payload, key=key)
                return
            except BufferError:
                continue

    def close(self):
        self.producer.flush(self.timeout)

    def describe(self):
        return {**super().describe(), "url": shown(self.url), "topic": self.topic}
