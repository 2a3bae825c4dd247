"""The event simulator: events for a deployed plan's imported stream, sent through a live CEP
worker's HTTP receiver (`POST <worker url>/events/<tenant>/<plan>/<stream>`) at a chosen rate.

Events come as rows (`[[v, ...], ...]`, the form's attribute values) or as JSON-lines text
(each line an event in any form the worker takes; a line may name its own `stream`). The
worker validates every event and answers accepted/rejected with reasons, which are passed
back with the index of the event in the request."""

import json
import time
import urllib.error
import urllib.request
from urllib.parse import quote

from manager.web.console.exceptions import (
    BadConsoleRequestError,
    NoLiveWorkerError,
    WorkerRequestError,
)

MAX_EVENTS = 100_000
MAX_SECONDS = 300
TICKS_PER_SEC = 10


def parse_request(body, streams):
    """(stream, [(stream, event), ...], rate, worker id or None) from a simulate body."""
    if not isinstance(body, dict):
        raise BadConsoleRequestError(
            'the body must be a JSON object {"stream", "events" | "jsonl", "rate"}'
        )
    stream = body.get("stream")
    if stream not in streams:
        raise BadConsoleRequestError(
            f"stream {stream!r} is not imported by this plan; "
            f"imported: {', '.join(sorted(streams)) or 'none'}"
        )
    if body.get("jsonl") is not None:
        events = _jsonl(body["jsonl"], stream, streams)
    else:
        rows = body.get("events")
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise BadConsoleRequestError('"events" must be a list of rows ([[v, ...], ...])')
        events = [(stream, {"data": r}) for r in rows]
    if not events or len(events) > MAX_EVENTS:
        raise BadConsoleRequestError(f"send 1 to {MAX_EVENTS} events, got {len(events)}")
    rate = body.get("rate", 100)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0:
        raise BadConsoleRequestError(f'"rate" must be a positive number of events/s, got {rate!r}')
    if len(events) / rate > MAX_SECONDS:
        raise BadConsoleRequestError(
            f"{len(events)} events at {rate:g}/s take longer than "
            f"{MAX_SECONDS} s; raise the rate or send fewer"
        )
    return stream, events, float(rate), body.get("worker")


def _jsonl(text, default_stream, streams):
    if not isinstance(text, str):
        raise BadConsoleRequestError('"jsonl" must be text, one JSON event a line')
    events = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadConsoleRequestError(
                f"line {n} is not JSON: {exc.msg} at column {exc.colno}"
            ) from None
        stream = default_stream
        if isinstance(event, dict) and "stream" in event:
            event = dict(event)
            stream = event.pop("stream")
            event.pop("delay", None)
            if stream not in streams:
                raise BadConsoleRequestError(
                    f"line {n}: stream {stream!r} is not imported by this plan"
                )
        events.append((stream, event))
    return events


def pick_worker(workers, tenant, plan, wanted=None):
    """A live worker with an HTTP URL that serves the plan (a receiver), `wanted` if named."""
    key = f"{tenant}/{plan}"
    live = [
        w
        for w in workers
        if w.get("url")
        and not w.get("stale")
        and "receiver" in (w.get("roles") or ["receiver"])
        and key in (w.get("plans") or [])
    ]
    if wanted is not None:
        live = [w for w in live if w.get("id") == wanted]
    if not live:
        who = f"worker {wanted!r}" if wanted is not None else "no live worker"
        raise NoLiveWorkerError(
            f"{who} serves plan {plan!r} of tenant {tenant} with an HTTP "
            f"receiver; start a worker (cep worker --manager URL) and retry"
        )
    return min(live, key=lambda w: w.get("heartbeatAgeSec") or 0)


def send(worker, tenant, plan, events, rate, post=None):
    """Send `events` through `worker` at `rate` events/s; {"sent", "worker", "accepted", "rejected"}."""
    post = post or post_events
    chunk = max(1, int(rate / TICKS_PER_SEC))
    start, accepted, rejected = time.monotonic(), 0, []
    for i in range(0, len(events), chunk):
        wait = start + i / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        for stream, offset, batch in _by_stream(events[i : i + chunk], i):
            reply = post(worker["url"], tenant, plan, stream, batch)
            accepted += reply.get("accepted", 0)
            rejected += [
                {
                    "index": None if e.get("index") is None else offset + e["index"],
                    "stream": stream,
                    "reason": e.get("reason", ""),
                }
                for e in reply.get("errors", [])
            ]
    return {
        "sent": len(events),
        "worker": worker.get("id"),
        "accepted": accepted,
        "rejected": rejected,
    }


def _by_stream(events, offset):
    """Consecutive runs of one stream: (stream, index of the run's first event, [events])."""
    runs = []
    for i, (stream, event) in enumerate(events):
        if runs and runs[-1][0] == stream:
            runs[-1][2].append(event)
        else:
            runs.append((stream, offset + i, [event]))
    return runs


def post_events(base_url, tenant, plan, stream, events, timeout=10.0):
    """POST a JSON array of events to a worker's HTTP receiver; its JSON reply."""
    url = f"{base_url.rstrip('/')}/events/{quote(str(tenant))}/{quote(plan)}/{quote(stream)}"
    req = urllib.request.Request(
        url,
        data=json.dumps(events).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            reply = json.loads(exc.read() or b"{}")
        except ValueError:
            reply = {}
        if exc.code == 400 and "errors" in reply:
            return reply  # every event of the batch was rejected: the reasons are in the reply
        raise WorkerRequestError(
            f"worker at {base_url} answered {exc.code}: {reply.get('error') or exc.reason}"
        ) from None
    except (OSError, ValueError) as exc:
        raise WorkerRequestError(f"worker at {base_url} is not reachable: {exc}") from None
