"""Failed-login throttling that cannot be used to lock a user out.

Failures are counted per client address and per user name within `window` seconds. An
attempt is refused (429 with Retry-After) only when its own address has failed recently, and
either that address has failed `addr_limit` times or the user name has failed `user_limit`
times (from any address). The wait grows with the failures (exponential backoff from
`base` seconds, at most `window`). So a client spraying wrong passwords slows itself down,
and a botnet spraying one name slows every failing address, while a correct password from an
address that has not failed is always taken: nobody can keep `admin` out. In memory, per
manager process; bounded (the oldest keys go first when there are too many).

`retry_after()` returns (seconds, newly locked) so that the caller can audit each lock once.
"""

import threading
import time
from collections import defaultdict, deque

_MAX_KEYS = 10_000


class LoginThrottle:
    def __init__(self, addr_limit=5, user_limit=10, window=300.0, base=1.0, clock=time.monotonic):
        self.addr_limit, self.user_limit = addr_limit, user_limit
        self.window, self.base, self.clock = window, base, clock
        self._by_addr = defaultdict(deque)  # address -> monotonic times of recent failures
        self._by_user = defaultdict(deque)  # user name -> the same
        self._locked = set()  # (user, address) pairs whose lock was reported
        self._lock = threading.Lock()

    def _recent(self, table, key):
        times, cutoff = table[key], self.clock() - self.window
        while times and times[0] < cutoff:
            times.popleft()
        return times

    def retry_after(self, name, address=None):
        """(seconds until `name` may try again from `address`, 0: now; True when this call
        found the pair newly locked)."""
        with self._lock:
            mine = self._recent(self._by_addr, address)
            if not mine:  # an address that has not failed is never refused
                return 0.0, False
            users = self._recent(self._by_user, name)
            over = max(len(mine) - self.addr_limit, len(users) - self.user_limit)
            if over < 0:
                self._locked.discard((name, address))
                return 0.0, False
            wait = min(self.window, self.base * (2 ** min(over, 20)))
            left = max(0.0, mine[-1] + wait - self.clock())
            if left <= 0:
                return 0.0, False
            new = (name, address) not in self._locked
            self._locked.add((name, address))
            return left, new

    def failed(self, name, address=None):
        with self._lock:
            now = self.clock()
            self._recent(self._by_addr, address).append(now)
            self._recent(self._by_user, name).append(now)
            for table in (self._by_addr, self._by_user):
                if len(table) > _MAX_KEYS:  # keys sprayed at random: keep memory bounded
                    for key in [k for k, v in table.items() if not v][: len(table) // 2] or list(
                        table
                    )[: len(table) // 2]:
                        del table[key]
            if len(self._locked) > _MAX_KEYS:
                self._locked.clear()

    def succeeded(self, name, address=None):
        """A right password: that address's failures and the pair's lock are forgotten (the
        name's count from other addresses stays: they still have to wait)."""
        with self._lock:
            self._by_addr.pop(address, None)
            self._locked.discard((name, address))
