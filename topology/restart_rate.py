"""A topology's restart limit as a rate: at most `topology.max_restarts` restarts
within any `topology.restart_window_s` seconds.

Spark counts a barrier stage's failed attempts for the life of the job
(`spark.stage.maxConsecutiveAttempts`, `spark.task.maxFailures`): killing a task now and then
used to add up until the topology failed for good. The driver now counts each restart (a new
stage attempt, or a resubmitted job) here; while the rate allows, a job that Spark gave up on
is submitted again, and when the rate is exceeded the topology is FAILED with `reason()`.

    rate = RestartRate(max_restarts=10, window_s=300)
    if not rate.record(): fail(rate.reason())
"""

import collections
import time


class RestartRate:
    """Restart times within the window; `record()` is False once more than allowed."""

    def __init__(self, max_restarts=10, window_s=300.0, clock=time.monotonic):
        self.max_restarts, self.window_s, self._clock = int(max_restarts), float(window_s), clock
        self._times = collections.deque()

    def _trim(self, now):
        while self._times and now - self._times[0] > self.window_s:
            self._times.popleft()

    def record(self):
        """Count one restart now; True while the count in the window is within the limit."""
        now = self._clock()
        self._times.append(now)
        self._trim(now)
        return len(self._times) <= self.max_restarts

    def count(self):
        """Restarts within the last window."""
        self._trim(self._clock())
        return len(self._times)

    def reason(self):
        return (
            f"restarted {len(self._times)} times within {self.window_s:g} s: more than the "
            f"restart rate allows (topology.max_restarts={self.max_restarts} per "
            f"topology.restart_window_s={self.window_s:g})"
        )
