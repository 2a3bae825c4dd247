"""What a topology's driver asks the Spark master, asked at most once a second.

Every status request of a plan reaches its driver, and a driver whose tasks are still starting
asks the master why (WAITING_FOR_SLOTS); its liveness check asks too. However many browsers
poll, the master sees at most one request per `ttl` seconds from one application: the answer,
or that it did not answer (None), is kept for `ttl`.

    master = CachedMaster("http://127.0.0.1:8080"); master.state()  # master_state's dict|None
"""

import threading
import time

from topology.cluster import master_state


class CachedMaster:
    """`state()`: the master's /json, fetched at most once per `ttl` seconds."""

    def __init__(self, ui_url, ttl=1.0, timeout=0.5, fetch=master_state, clock=time.monotonic):
        self.ui_url, self.ttl, self.timeout = ui_url, ttl, timeout
        self._fetch, self._clock = fetch, clock
        self._lock = threading.Lock()
        self._at, self._value = None, None
        self.requests = 0  # how many times the master was actually asked

    def state(self):
        with self._lock:
            now = self._clock()
            if self._at is None or now - self._at >= self.ttl:
                self._value = self._fetch(self.ui_url, timeout=self.timeout)
                self._at = self._clock()
                self.requests += 1
            return self._value
