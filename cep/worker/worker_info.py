"""The worker-info message (cep/protocol/PROTOCOL.md, op `worker`): every heartbeat
interval a distributed worker tells the manager's registry who it is (id, host, HTTP URL,
roles), which plans it serves, its cumulative event counters and its process load (psutil)."""

import logging
import threading

import psutil

from cep.protocol.exceptions import RegistryError

log = logging.getLogger(__name__)


def duplicates(worker):
    """Results the CEP publishers recognised as replayed, all plans together."""
    total = 0
    for handle in list(worker.plans.values()):
        service = getattr(handle, "service", None)
        if service is not None:
            total += sum(service.sink_set.duplicates().values())
    return total


def event_totals(worker):
    """(events accepted by the receivers, events taken by the CEP publishers) so far."""
    events_in = sum(c["accepted"] for c in worker.router.counters().values())
    events_out = 0
    for handle in list(worker.plans.values()):
        service = getattr(handle, "service", None)
        if service is not None:
            events_out += service.events
    return events_in, events_out


class WorkerReporter:
    """A daemon thread sending the worker-info message every `interval` seconds."""

    def __init__(self, worker, registry, interval=5.0):
        self.worker, self.registry, self.interval = worker, registry, interval
        self.process = psutil.Process()
        self.process.cpu_percent(None)  # the first call starts the measuring interval
        self.sent = 0
        self.last_error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="worker-info")

    def message(self):
        w = self.worker
        events_in, events_out = event_totals(w)
        return {
            "worker": w.identity.worker_id,
            "host": w.identity.host,
            "url": w.http_url,
            "roles": list(w.cfg["worker.roles"]),
            "machine": list(w.identity.machine),
            "plans": [f"{t}/{n}" for (t, n) in sorted(w.plans)],
            "eventsIn": events_in,
            "eventsOut": events_out,
            "duplicates": duplicates(w),
            "cpuPercent": round(self.process.cpu_percent(None), 1),
            "memoryRssBytes": self.process.memory_info().rss,
            "threads": [
                {k: t[k] for k in ("name", "state", "restarts", "last_error")}
                for t in w.threads.describe()
            ],
        }

    def report(self):
        """Send one message; a registry that does not answer is retried on the next beat."""
        try:
            self.registry.worker_info(**self.message())
            self.sent += 1
            self.last_error = None
        except RegistryError as exc:
            if self.last_error != str(exc):
                log.warning("worker-info to the registry failed: %s", exc)
            self.last_error = str(exc)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        while True:
            try:
                self.report()
            except Exception:  # noqa: BLE001 - the reporter must outlive any one failure
                log.exception("worker-info report failed")
            if self._stop.wait(self.interval):
                return

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
