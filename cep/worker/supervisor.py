"""Supervised worker threads: no long-running thread of the worker dies silently.

Every loop the worker runs in a thread (the inflow senders, the publisher services, the
deployment sync, the worker-info reporter, the registry heartbeats, the ZeroMQ receiver) runs
under a `SupervisedThread`. When the loop raises, the exception is logged with its traceback
and counted, the thread shows `restarting`, and the loop is started again after a backoff
(0.5 s, doubling up to 30 s; back to 0.5 s after a minute without failure). A loop that fails
more than `max_failures` times within `window_s` seconds is given up: `failed`, with the last
error, in the worker's `GET /status` (`threads`) and the worker-info the manager shows.

    book = ThreadBook()
    book.adopt(component, "inflow -1234/Plan/Stream")   # component has _run() and _stop
    component.start()                                     # starts the supervised thread
    book.describe()  # [{"name", "state", "restarts", "failures", "last_error", ...}]
"""

import collections
import logging
import threading
import time

log = logging.getLogger(__name__)

BACKOFF_S, MAX_BACKOFF_S, HEALTHY_S = 0.5, 30.0, 60.0


class SupervisedThread:
    """A daemon thread running `target()` until it returns, restarting it when it raises.

    `stop_event` (a threading.Event) ends the backoff waits; `target` returns by itself once
    the owner set it. The object has the Thread calls owners use: start, join, is_alive."""

    def __init__(
        self,
        name,
        target,
        stop_event,
        backoff=BACKOFF_S,
        max_backoff=MAX_BACKOFF_S,
        max_failures=20,
        window_s=60.0,
    ):
        self.name, self.target, self.stop_event = name, target, stop_event
        self.backoff, self.max_backoff = backoff, max_backoff
        self.max_failures, self.window_s = max_failures, window_s
        self.state = "new"
        self.created = time.monotonic()
        self.restarts = self.failures = 0
        self.last_error = self.last_error_at = None
        self._recent = collections.deque()  # monotonic times of recent failures
        self._thread = threading.Thread(target=self._loop, daemon=True, name=name)

    def start(self):
        self.state = "running"
        self._thread.start()
        return self

    def join(self, timeout=None):
        if self._thread.is_alive():
            self._thread.join(timeout)
        elif self.state == "new":  # built, never started (a plan whose setup failed)
            self.state = "stopped"

    def is_alive(self):
        return self._thread.is_alive()

    def _loop(self):
        delay = self.backoff
        while True:
            began = time.monotonic()
            try:
                self.target()
                break  # a normal return: the owner stopped it
            except Exception as exc:  # noqa: BLE001 - any failure restarts the loop
                if time.monotonic() - began > HEALTHY_S:
                    delay = self.backoff
                if not self._failed(exc, delay):
                    return
            if self.stop_event.wait(delay):
                break
            delay = min(delay * 2, self.max_backoff)
            self.restarts += 1
            self.state = "running"
            log.warning("thread %s restarted (restart %d)", self.name, self.restarts)
        self.state = "stopped"

    def _failed(self, exc, delay):
        """Record a failure; False when the thread gives up (too many within the window)."""
        now = time.monotonic()
        self.failures += 1
        self.last_error = f"{type(exc).__name__}: {exc}"[:500]
        self.last_error_at = time.time()
        self._recent.append(now)
        while self._recent and now - self._recent[0] > self.window_s:
            self._recent.popleft()
        if len(self._recent) > self.max_failures or self.stop_event.is_set():
            self.state = "failed" if not self.stop_event.is_set() else "stopped"
            log.exception(
                "thread %s failed %d times within %.0f s; given up",
                self.name,
                len(self._recent),
                self.window_s,
            )
            return False
        self.state = "restarting"
        log.exception("thread %s failed; restarting in %.1f s", self.name, delay)
        return True

    def describe(self):
        return {
            "name": self.name,
            "state": self.state,
            "restarts": self.restarts,
            "failures": self.failures,
            "last_error": self.last_error,
            "last_error_at": self.last_error_at,
        }


class ThreadBook:
    """The supervised threads of one worker, listed in its status."""

    def __init__(self, **defaults):
        self.defaults = defaults  # SupervisedThread keyword arguments (backoff, ...)
        self._threads = []
        self._lock = threading.Lock()

    def thread(self, name, target, stop_event):
        """A new SupervisedThread (not started) listed in this book until it stops."""
        t = SupervisedThread(name, target, stop_event, **self.defaults)
        with self._lock:
            self._threads = [x for x in self._threads if _listed(x)] + [t]
        return t

    def adopt(self, component, name=None):
        """Run `component._run` supervised: replaces its `_thread` before it is started."""
        old = component._thread
        component._thread = self.thread(name or old.name, component._run, component._stop)
        return component

    def describe(self):
        with self._lock:
            self._threads = [t for t in self._threads if _listed(t)]
            threads = [t for t in self._threads if t.state != "new"]
        return [t.describe() for t in threads]

    def summary(self):
        """{"running": n, "restarting": n, "failed": n, "restarts": total} for worker-info."""
        counts = collections.Counter(t["state"] for t in self.describe())
        return {
            "running": counts["running"],
            "restarting": counts["restarting"],
            "failed": counts["failed"],
            "restarts": sum(t.restarts for t in list(self._threads)),
        }


def _listed(t):
    """Kept in the book: not stopped, and not a thread built a minute ago and never started."""
    return t.state != "stopped" and not (
        t.state == "new" and time.monotonic() - t.created > HEALTHY_S
    )


def adopt(book, component, name=None):
    """`book.adopt(component, name)` when there is a book, else the component unchanged."""
    return book.adopt(component, name) if book is not None else component
