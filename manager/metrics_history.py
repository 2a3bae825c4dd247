"""A small in-manager history of each topology's metrics, for windows of 10 min, 3 h, 1 day
and all time (Storm UI's windows), in bounded memory.

Each sample is a flat map of cumulative counters (per component: emitted, transferred,
executed, failed, acked, busy seconds, latency x executed; per edge: rows sent from one
component to another). Task restarts reset the topology's counters to 0; the history adds the
value before the reset as an offset, so its counters only grow. Samples are kept in three
tiers: every sample for 10 minutes, one a minute for 3 hours, one per 10 minutes for a day
(about 400 samples per topology whatever the uptime)."""

import collections
import threading
import time

WINDOWS = {"10m": 600.0, "3h": 3 * 3600.0, "1d": 24 * 3600.0, "all": None}
COUNTERS = ("emitted", "transferred", "executed", "failed", "acked")
TIERS = ((0.0, 600.0), (60.0, 3 * 3600.0), (600.0, 24 * 3600.0))  # (spacing, span) seconds
MAX_ERRORS = 50


def flatten(components):
    """{key: cumulative value} of one handle.metrics()["components"], keys as tuples."""
    flat, task_of = {}, {}
    for comp, c in components.items():
        for inst in c["instances"]:
            task_of[inst["task"]] = comp
    for comp, c in components.items():
        for name in COUNTERS:
            flat[("c", comp, name)] = c.get(name, 0)
        for inst in c["instances"]:
            idx = inst["index"]
            for name in COUNTERS:
                flat[("i", comp, idx, name)] = inst.get(name, 0)
            for task, rows in inst.get("sent_to", {}).items():
                to = task_of.get(int(task))
                if to is not None:
                    flat[("e", comp, to)] = flat.get(("e", comp, to), 0) + rows
    return flat


class _Series:
    """One topology's samples, restart offsets and recent errors."""

    def __init__(self):
        self.raw = {}  # key -> last raw value seen
        self.offset = collections.Counter()
        self.tiers = [collections.deque() for _ in TIERS]
        self.latest = {}  # adjusted counters of the last sample, with per-instance keys
        self.gauges = {}  # component -> {"instances", "capacity", "latency", "queue", per inst}
        self.errors = collections.deque(maxlen=MAX_ERRORS)
        self.error_seen = {}  # (component, index) -> time of the last error recorded
        self.last_t = None

    def adjust(self, flat):
        out = {}
        for key, value in flat.items():
            if value < self.raw.get(key, 0):
                self.offset[key] += self.raw[key]  # counters restarted with the tasks
            self.raw[key] = value
            out[key] = value + self.offset[key]
        return out

    def add(self, t, sample):
        for (spacing, span), tier in zip(TIERS, self.tiers):
            if not tier or t - tier[-1][0] >= spacing:
                tier.append((t, sample))
            while tier and t - tier[0][0] > span + spacing:
                tier.popleft()

    def at(self, start):
        """The newest sample at or before `start`, else the oldest one kept."""
        best = None
        for tier in self.tiers:
            for t, s in tier:
                if t <= start and (best is None or t > best[0]):
                    best = (t, s)
        if best is None:
            best = min((tier[0] for tier in self.tiers if tier), key=lambda x: x[0])
        return best


class MetricsHistory:
    """Samples per topology key ((tenant, plan)); thread-safe."""

    def __init__(self, clock=time.time):
        self.clock = clock
        self.series = {}
        self._lock = threading.Lock()

    def record(self, key, components, uptime_s=None, now=None):
        """Add one handle.metrics()["components"] sample of topology `key`."""
        now = self.clock() if now is None else now
        with self._lock:
            series = self.series.get(key)
            if series is None:
                series = self.series[key] = _Series()
                if uptime_s:  # counts so far were made since the topology started
                    series.add(now - uptime_s, {})
            adjusted = series.adjust(flatten(components))
            busy = self._busy(series, components, now)
            for comp, value in busy.items():
                adjusted[("b", comp)] = value
            series.latest = adjusted
            series.gauges = _gauges(components)
            series.add(now, {k: v for k, v in adjusted.items() if k[0] != "i"})
            series.last_t = now
            _note_errors(series, components)

    def _busy(self, series, components, now):
        """Cumulative busy seconds and latency x executed per component (for window means)."""
        span = now - series.last_t if series.last_t is not None else 0.0
        out = {}
        for comp, c in components.items():
            prev_busy = series.latest.get(("b", comp), (0.0, 0.0))
            executed_delta = max(
                0,
                c.get("executed", 0)
                + series.offset[("c", comp, "executed")]
                - series.latest.get(("c", comp, "executed"), 0),
            )
            out[comp] = (
                prev_busy[0] + c.get("capacity", 0.0) * span,
                prev_busy[1] + c.get("execute_latency_ms", 0.0) * executed_delta,
            )
        return out

    def forget(self, key):
        with self._lock:
            self.series.pop(key, None)

    def keys(self):
        with self._lock:
            return list(self.series)

    def latest(self, key):
        """(adjusted counters, gauges) of the last sample, or (None, None)."""
        with self._lock:
            s = self.series.get(key)
            return (dict(s.latest), dict(s.gauges)) if s is not None else (None, None)

    def window(self, key, window):
        """{"components": {id: {...}}, "edges": {(from, to): rate}, "recentErrors", "spanSec"}
        over the window (10m, 3h, 1d, all); None when the topology has no sample yet."""
        length = WINDOWS[window]
        with self._lock:
            s = self.series.get(key)
            if s is None or s.last_t is None:
                return None
            now, latest = s.last_t, s.latest
            t0, base = s.at(now - length) if length is not None else (None, {})
            if t0 is None:
                t0 = min(tier[0][0] for tier in s.tiers if tier)
            errors = [e for e in s.errors if length is None or e["time"] >= now - length]
            gauges = s.gauges
        return _window_view(latest, base, max(now - t0, 1e-9), gauges, errors)


def _window_view(latest, base, span, gauges, errors):
    comps, edges = {}, {}
    for key, value in latest.items():
        if key[0] == "c":
            comp = comps.setdefault(key[1], {})
            comp[key[2]] = value - base.get(key, 0)
        elif key[0] == "e":
            edges[(key[1], key[2])] = round((value - base.get(key, 0)) / span, 2)
        elif key[0] == "b":
            b0 = base.get(key, (0.0, 0.0))
            comps.setdefault(key[1], {})["_busy"] = (value[0] - b0[0], value[1] - b0[1])
    for comp, c in comps.items():
        busy, lat = c.pop("_busy", (0.0, 0.0))
        g = gauges.get(comp, {})
        c["instances"] = g.get("instances", 0)
        c["capacity"] = round(min(busy / span, 1.0), 4) if span else 0.0
        c["executeLatencyMs"] = round(lat / c["executed"], 4) if c.get("executed") else 0.0
        c["errors"] = sum(1 for e in errors if e["component"] == comp)
    return {
        "components": comps,
        "edges": edges,
        "recentErrors": list(reversed(errors)),
        "spanSec": round(span, 1),
    }


def _gauges(components):
    return {
        comp: {
            "instances": len(c["instances"]),
            "capacity": c.get("capacity", 0.0),
            "latency": c.get("execute_latency_ms", 0.0),
            "queue": c.get("input_queue_depth", 0),
            "per_instance": {
                i["index"]: {
                    "capacity": i.get("capacity", 0.0),
                    "latency": i.get("execute_latency_ms", 0.0),
                    "queue": i.get("input_queue_depth", 0),
                }
                for i in c["instances"]
            },
        }
        for comp, c in components.items()
    }


def _note_errors(series, components):
    for comp, c in components.items():
        for inst in c["instances"]:
            err = inst.get("last_error")
            if not err:
                continue
            where = (comp, inst["index"])
            if series.error_seen.get(where) == err["time"]:
                continue
            series.error_seen[where] = err["time"]
            message = f"{err.get('where', '')}: {err['error']}".lstrip(": ")
            series.errors.append(
                {
                    "time": err["time"],
                    "component": comp,
                    "instance": inst["index"],
                    "message": message,
                }
            )
