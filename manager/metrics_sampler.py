"""Sample every running plan topology's metrics into the MetricsHistory (and the Prometheus
execute-latency histogram) every `metrics.sample_interval` seconds, on one daemon thread."""

import logging
import threading

from topology.exceptions import TopologyError

log = logging.getLogger("manager.metrics")
RUNNING = ("ACTIVE", "INACTIVE")


class MetricsSampler:
    """Polls each deployed topology's driver for metrics; a failure skips that sample only."""

    def __init__(self, topologies, history, interval=5.0, on_sample=None):
        self.topologies, self.history, self.interval = topologies, history, interval
        self.on_sample = on_sample  # callable(key, components), e.g. the latency histogram
        self.samples = 0
        self.last_error = None
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True, name="metrics-sampler")
        self._thread.start()
        return self

    @property
    def running(self):
        return self._thread is not None and self._thread.is_alive()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self):
        while not self._stop.wait(self.interval):
            try:
                self.sample_all()
                self.last_error = None
            except Exception as exc:  # noqa: BLE001 - the sampler outlives any one failure
                self.last_error = f"{type(exc).__name__}: {exc}"  # shown in /api/v1/status
                log.exception("metrics sampling failed")

    def sample_all(self):
        """One sample of every running topology; forgets plans no longer deployed."""
        deployed = dict(self.topologies.deployments)
        for key in self.history.keys():
            if key not in deployed:
                self.history.forget(key)
        for key, dep in deployed.items():
            handle = dep.handle
            if handle is None or dep.phase != "SUBMITTED":
                continue
            self.sample(key, handle)

    def sample(self, key, handle):
        try:
            metrics = handle.metrics()
        except TopologyError as exc:  # the driver is starting, stopping or gone
            log.debug("no metrics from %s: %s", handle, exc)
            return False
        except Exception as exc:  # noqa: BLE001 - one bad answer skips this topology only
            log.warning("bad metrics answer from %s: %s: %s", handle, type(exc).__name__, exc)
            return False
        if metrics.get("status", {}).get("status") not in RUNNING:
            return False
        components = metrics["components"]
        self.history.record(key, components, metrics["status"].get("uptime_s"))
        if self.on_sample is not None:
            self.on_sample(key, components)
        self.samples += 1
        return True
