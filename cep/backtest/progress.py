"""A progress bar for the backtest's Spark job: events processed, rate and ETA.

Events are estimated from the completed tasks of the job's stages (tasks finish one key
range each, and there are several per executor), polled from Spark's status tracker."""

import sys
import threading
import time


class Progress:
    def __init__(self, spark_context, total_events, stream=None, interval=0.5):
        self.sc, self.total = spark_context, max(int(total_events), 1)
        self.out = stream or sys.stderr
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="backtest-progress", daemon=True)
        self.started = time.monotonic()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=2)
        if exc[0] is None:
            self._draw(1.0)
        self.out.write("\n")
        self.out.flush()

    def fraction(self):
        tracker = self.sc.statusTracker()
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None and info.numTasks:
                done += info.numCompletedTasks
                total += info.numTasks
        return done / total if total else 0.0

    def _run(self):
        while not self._stop.wait(self.interval):
            try:
                self._draw(self.fraction())
            except Exception:  # the tracker may go away while Spark stops
                return

    def _draw(self, fraction):
        elapsed = time.monotonic() - self.started
        events = int(self.total * fraction)
        rate = events / elapsed if elapsed > 0 else 0.0
        eta = (self.total - events) / rate if rate > 0 else float("nan")
        bar = "#" * int(30 * fraction)
        self.out.write(
            f"\r[{bar:<30}] {events:,}/{self.total:,} events  {rate:,.0f} ev/s  ETA {eta:.0f} s   "
            if eta == eta
            else f"\r[{bar:<30}] {events:,}/{self.total:,} events  ETA ?   "
        )
        self.out.flush()
