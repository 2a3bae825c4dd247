"""A sender that survives the loss of the CEP worker it sends to: events for one stream go to
the first of several workers (`POST /events/<tenant>/<plan>/<stream>`), and every batch a
worker accepted is kept until that worker's write-ahead log says a checkpoint committed it.

Why keep what was accepted: a worker answers 200 once the events are in its log, but until a
checkpoint of the plan covers them they live only there (and in flight to the topology). If
the worker's machine is lost, they are lost with it. Every reply of a worker whose stream is
logged carries `wal: {receiver_id, appended, committed}` (receivers/router.py): the batch is
at or below `appended`, and once a later reply (or an empty POST, `poll()`) shows `committed`
at or past it, the batch is acknowledged for good and dropped.

When a worker does not answer (refused, reset, timed out), the sender moves to the next one
and sends there first every batch the lost worker had not acknowledged, then the batch it
was sending. Those resent events may reach the sinks twice (the lost worker may have handed
them to the topology before it died): they are counted in `resent`, and only they can be
duplicates. A batch whose POST failed without an answer is sent again too (it may have been
accepted): counted in `unanswered`.

Batches a worker refused for back-pressure (503 or 207 with `refused_indices`) are sent to
the same worker again after its Retry-After; rejected events (invalid) are counted, never
resent. A worker without a log (wal.enabled false) acknowledges on accepting."""

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import quote


@dataclass
class _Pending:
    worker: int  # index into urls
    receiver_id: str
    appended: int
    events: list


@dataclass
class SenderStats:
    sent: int = 0  # events handed to POSTs, first time
    accepted: int = 0  # events some worker accepted (a resend counted again)
    rejected: int = 0  # invalid events (never resent)
    resent: int = 0  # events sent again to another worker after a loss
    unanswered: int = 0  # events of POSTs that got no answer (sent again)
    failovers: int = 0  # moves to the next worker
    acknowledged: int = 0  # events a checkpoint committed
    resent_ids: list = field(default_factory=list)  # the events resent (for the caller)


class FailoverSender:
    """See the module doc. Not thread-safe: one sender per thread."""

    def __init__(
        self,
        urls: list[str],
        tenant: int | str,
        plan: str,
        stream: str,
        timeout: float = 5.0,
        headers: dict | None = None,
        give_up_s: float = 120.0,
    ):
        if not urls:
            raise ValueError("FailoverSender needs at least one worker URL")
        path = "/".join(quote(str(x), safe="") for x in (tenant, plan, stream))
        self.urls = [f"{u.rstrip('/')}/events/{path}" for u in urls]
        self.timeout, self.headers, self.give_up_s = timeout, dict(headers or {}), give_up_s
        self.current = 0
        self.pending: list[_Pending] = []
        self.stats = SenderStats()

    @property
    def pending_events(self) -> int:
        return sum(len(p.events) for p in self.pending)

    def send(self, events: list) -> int:
        """Send one batch (a list of events in any form the HTTP receiver takes) until a
        worker accepted it; returns how many were accepted (the rest were invalid). Raises
        ConnectionError when no worker answered for give_up_s seconds."""
        self.stats.sent += len(events)
        return self._deliver(list(events))

    def poll(self) -> int:
        """Ask the current worker where its log stands (an empty POST); returns how many
        events are still unacknowledged."""
        reply = self._post(self.current, [])
        if reply is None:
            self._failover()
        else:
            self._ack(self.current, reply[1])
        return self.pending_events

    def flush(self, timeout: float = 60.0, every: float = 0.25) -> bool:
        """poll() until every accepted event is acknowledged (True) or timeout (False)."""
        deadline = time.monotonic() + timeout
        while self.poll():
            if time.monotonic() > deadline:
                return False
            time.sleep(every)
        return True

    # -- internals --
    def _deliver(self, events):
        started = time.monotonic()
        accepted = 0
        while events:
            worker = self.current
            reply = self._post(worker, events)
            if reply is None:  # no answer: the worker (or its machine) is gone
                self.stats.unanswered += len(events)
                if time.monotonic() - started > self.give_up_s:
                    raise ConnectionError(
                        f"no CEP worker of {self.urls} answered for {self.give_up_s:.0f} s"
                    )
                self._failover()
                continue
            status, body = reply
            if status in (401, 404, 413) or (status == 400 and "accepted" not in body):
                raise ValueError(
                    f"worker {self.urls[worker]} refused the batch: {status} "
                    f"{body.get('error') or body}"
                )
            taken = int(body.get("accepted", 0))
            accepted += taken
            self.stats.accepted += taken
            self.stats.rejected += int(body.get("rejected", 0))
            refused = set(body.get("refused_indices") or ())
            if status == 503 and not taken:  # back-pressure, no manager, starting: wait
                refused = set(range(len(events)))
            bad = {e["index"] for e in body.get("errors") or ()}
            kept = [e for i, e in enumerate(events) if i not in refused and i not in bad]
            if kept:
                self._keep(worker, body, kept)
            self._ack(worker, body)
            events = [events[i] for i in sorted(refused)]
            if events:
                time.sleep(_retry_after(body))
        return accepted

    def _keep(self, worker, body, events):
        wal = body.get("wal")
        if not wal:  # no write-ahead log: accepted is all the worker can promise
            self.stats.acknowledged += len(events)
            return
        self.pending.append(_Pending(worker, wal["receiver_id"], int(wal["appended"]), events))

    def _ack(self, worker, body):
        wal = body.get("wal")
        if not wal:
            return
        rid, committed = wal["receiver_id"], int(wal["committed"])
        keep, lost = [], []
        for p in self.pending:
            if p.worker != worker:
                keep.append(p)
            elif p.receiver_id != rid:  # the worker came back with another log: send again
                lost.append(p)
            elif p.appended <= committed:
                self.stats.acknowledged += len(p.events)
            else:
                keep.append(p)
        self.pending = keep
        for p in lost:
            self._resend(p.events)

    def _failover(self):
        """Move to the next worker and send it what the lost one had not acknowledged."""
        lost = self.current
        self.current = (self.current + 1) % len(self.urls)
        self.stats.failovers += 1
        behind = [p for p in self.pending if p.worker == lost]
        self.pending = [p for p in self.pending if p.worker != lost]
        for p in behind:
            self._resend(p.events)
        if not behind and len(self.urls) == 1:
            time.sleep(0.5)  # one worker: wait for it to come back

    def _resend(self, events):
        self.stats.resent += len(events)
        self.stats.resent_ids.extend(events)
        self._deliver(events)

    def _post(self, worker, events):
        """(status, reply dict), or None when the worker did not answer."""
        req = urllib.request.Request(
            self.urls[worker],
            json.dumps(events).encode(),
            {"Content-Type": "application/json", **self.headers},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read() or b"{}") | {
                    "_retry": exc.headers.get("Retry-After")
                }
            except ValueError:
                return None if exc.code >= 502 else (exc.code, {"error": str(exc)})
        except (urllib.error.URLError, OSError, ValueError):
            return None


def _retry_after(body):
    try:
        return min(5.0, max(0.05, float(body.get("_retry") or 1.0)))
    except (TypeError, ValueError):
        return 1.0
