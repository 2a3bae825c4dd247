"""The backtest summary: events in, out per stream, time span, run time, output counts over time."""

import json
from dataclasses import asdict, dataclass, field


@dataclass
class Summary:
    plan: str
    tenant: str
    mode: str  # 'keyed' | 'single-task'
    reason: str  # why single-task ('' when keyed)
    events_in: int = 0
    first_ts: int = None
    last_ts: int = None
    events_out: dict = field(default_factory=dict)  # stream -> count
    out_over_time: dict = field(default_factory=dict)  # stream -> [[bucket start ms, count]]
    bucket_ms: int = 0
    run_seconds: float = 0.0
    tasks: int = 0
    executors: int = 0  # Spark executors registered (local mode: its threads)
    spark_master: str = ""
    task_seconds: dict = field(default_factory=dict)  # phase -> wall seconds summed over tasks
    output: str = ""
    format: str = ""

    @property
    def rate(self):
        return self.events_in / self.run_seconds if self.run_seconds > 0 else 0.0

    def to_json(self):
        d = asdict(self)
        d["events_per_second"] = round(self.rate, 1)
        return d

    def text(self):
        lines = [
            f"backtest:{self.plan}[{self.tenant}] {self.mode}"
            + (f" ({self.reason})" if self.reason else ""),
            f"events in: {self.events_in:,} from {self.first_ts} to {self.last_ts} "
            f"(span {_span(self.first_ts, self.last_ts)})",
            f"run time: {self.run_seconds:.2f} s ({self.rate:,.0f} events/s, "
            f"{self.tasks} tasks, {self.executors} executors, {self.spark_master})",
        ]
        lines += [f"out {sid}: {n:,}" for sid, n in sorted(self.events_out.items())]
        lines.append(f"output: {self.output} ({self.format})")
        return "\n".join(lines)


def merge_stats(summary, stat_rows):
    """Fold the tasks' count rows (task.STAT_SCHEMA) into `summary`."""
    buckets = {}
    for stream, count, first, last, hist in stat_rows:
        if stream == "":
            summary.events_in += count
            summary.tasks += 1
            for phase, sec in json.loads(hist or "{}").items():
                summary.task_seconds[phase] = round(summary.task_seconds.get(phase, 0) + sec, 3)
            if first is not None:
                summary.first_ts = (
                    first if summary.first_ts is None else min(summary.first_ts, first)
                )
                summary.last_ts = last if summary.last_ts is None else max(summary.last_ts, last)
            continue
        summary.events_out[stream] = summary.events_out.get(stream, 0) + count
        per = buckets.setdefault(stream, {})
        for k, n in json.loads(hist or "{}").items():
            per[int(k)] = per.get(int(k), 0) + n
    summary.out_over_time = {
        s: [[k * summary.bucket_ms, n] for k, n in sorted(b.items())] for s, b in buckets.items()
    }
    return summary


def _span(first, last):
    if first is None:
        return "no events"
    seconds = (last - first) / 1000
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.3f} s"
