"""Failed-login throttling: after `limit` failed logins of one user name within `window`
seconds, further attempts for that name are refused (429) until the oldest failure ages out,
whatever the password. In memory, per manager process."""
import threading
import time
from collections import defaultdict, deque


class LoginThrottle:
    def __init__(self, limit=10, window=300.0, clock=time.monotonic):
        self.limit, self.window, self.clock = limit, window, clock
        self._failures = defaultdict(deque)  # name -> monotonic times of recent failures
        self._lock = threading.Lock()

    def _recent(self, name):
        times, cutoff = self._failures[name], self.clock() - self.window
        while times and times[0] < cutoff:
            times.popleft()
        return times

    def retry_after(self, name):
        """Seconds until `name` may try again (0: now)."""
        with self._lock:
            times = self._recent(name)
            if len(times) < self.limit:
                return 0.0
            return max(0.0, times[0] + self.window - self.clock())

    def failed(self, name):
        with self._lock:
            self._recent(name).append(self.clock())
            if len(self._failures) > 10_000:  # names sprayed at random: keep memory bounded
                for key in [k for k, v in self._failures.items() if not v]:
                    del self._failures[key]

    def succeeded(self, name):
        with self._lock:
            self._failures.pop(name, None)
