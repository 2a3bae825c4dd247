"""Event simulator: replays a JSON-lines event file into a worker's HTTP receiver.

Each line is `{"stream": "S", "timestamp": T, "data": [...]}` (the `cep run` input format).
Events are sent in batches, restamped with the current time (or kept with `keep_time`), at a
target rate; with `loop` the file is replayed until stopped. Used by bin/cep.sh for its sample
feed, and by anyone who wants to push a recorded file into a live plan.

Given several worker URLs (comma-separated), each stream is sent through a
receivers.failover_sender.FailoverSender: events a worker accepted are kept until a
checkpoint committed them, and sent to the next worker if that one is lost first."""

import json
import time
import urllib.error
import urllib.request
from collections import defaultdict


def load_events(path):
    """The events of a JSON-lines file as (line number, stream, timestamp, data) tuples;
    lines that are not events (blank, clock-only) are skipped."""
    events = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            if "stream" in obj and "data" in obj:
                events.append((n, obj["stream"], obj.get("timestamp"), obj["data"]))
    return events


def post_batch(url, events, timeout=5.0):
    """POST a JSON array of events; returns the receiver's reply as a dict."""
    body = json.dumps(events).encode()
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:  # 400: every event rejected; the body says why
        return json.loads(exc.read() or b"{}")


class Simulator:
    """Sends `events` to `<base_url>/events/<tenant>/<plan>/<stream>` at `rate` events/s."""

    def __init__(self, base_url, tenant, plan, events, rate=10.0, batch=10, keep_time=False):
        self.urls = [u.strip().rstrip("/") for u in base_url.split(",") if u.strip()]
        self.base_url = self.urls[0]
        self.senders = {}  # stream -> FailoverSender, with several worker URLs
        self.position = 0  # index of the next event run() sends
        self.tenant, self.plan = tenant, plan
        self.events, self.rate, self.batch = events, float(rate), max(1, int(batch))
        self.keep_time = keep_time
        self.sent = self.accepted = self.rejected = 0

    def url(self, stream):
        return f"{self.base_url}/events/{self.tenant}/{self.plan}/{stream}"

    def send_chunk(self, chunk):
        by_stream = defaultdict(list)
        now = int(time.time() * 1000)
        for _, stream, ts, data in chunk:
            event = {"data": data}
            event["timestamp"] = ts if self.keep_time and ts is not None else now
            by_stream[stream].append(event)
        for stream, events in by_stream.items():
            if len(self.urls) > 1:
                self._send_failover(stream, events)
                continue
            reply = post_batch(self.url(stream), events)
            self.sent += len(events)
            self.accepted += int(reply.get("accepted", 0))
            self.rejected += int(reply.get("rejected", 0))

    def _send_failover(self, stream, events):
        from receivers.failover_sender import FailoverSender

        sender = self.senders.get(stream)
        if sender is None:
            sender = self.senders[stream] = FailoverSender(
                self.urls, self.tenant, self.plan, stream
            )
        rejected = sender.stats.rejected
        self.sent += len(events)
        self.accepted += sender.send(events)
        self.rejected += sender.stats.rejected - rejected

    def acknowledge(self, timeout=60.0):
        """With several workers: wait until a checkpoint committed every accepted event
        (True), or timeout (False); {stream: stats} says what was resent on the way."""
        return all(s.flush(timeout) for s in self.senders.values())

    def run(self, loop=False, stop=lambda: False):
        """Replay the events once (or until `stop()` with `loop`); returns (sent, accepted).
        Called again after an exception (`cep feed --retry`), it goes on from the chunk that
        failed rather than from the first event."""
        pause = self.batch / self.rate if self.rate > 0 else 0.0
        while True:
            for i in range(self.position, len(self.events), self.batch):
                if stop():
                    return self.sent, self.accepted
                started = time.monotonic()
                self.send_chunk(self.events[i : i + self.batch])
                self.position = i + self.batch
                time.sleep(max(0.0, pause - (time.monotonic() - started)))
            self.position = 0
            if not loop:
                return self.sent, self.accepted
