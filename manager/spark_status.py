"""The Spark master as the status page shows it: a snapshot of the master's `/json` taken at
most once per `min_interval` (1 s) whatever the number of callers; concurrent callers wait
for the one fetch in flight and share its answer."""

import threading
import time

from topology.cluster import master_state


def snapshot_from(master_url, ui_url, state):
    """The /api/v1/status `spark` section from the master's /json (None: not answering)."""
    if state is None:
        return {
            "master": master_url,
            "alive": False,
            "uiUrl": ui_url,
            "slotsUsed": 0,
            "slotsTotal": 0,
            "applications": [],
        }
    apps = [
        {
            "id": a.get("id"),
            "name": a.get("name"),
            "state": a.get("state"),
            "cores": a.get("cores", 0),
            "uiUrl": ui_url,
        }
        for a in state.get("activeapps", [])
    ]
    return {
        "master": master_url,
        "alive": state.get("status", "ALIVE") == "ALIVE",
        "uiUrl": ui_url,
        "slotsUsed": state.get("coresused", 0),
        "slotsTotal": state.get("cores", 0),
        "applications": apps,
        "workers": state.get("aliveworkers", len(state.get("workers", []))),
    }


def locator(launcher):
    """A `locate()` for a launcher: its own (SparkLauncher: starts nothing), else one from its
    `cluster()` (test and benchmark launchers), else none."""
    if hasattr(launcher, "locate"):
        return launcher.locate
    if hasattr(launcher, "cluster"):

        def locate():
            info = launcher.cluster()
            return info.master_url, info.ui_url

        return locate
    return lambda: None


class SparkStatus:
    """`snapshot()` of the cluster `locate()` names ((master_url, ui_url) or None)."""

    def __init__(self, locate, fetch=master_state, min_interval=1.0, clock=time.monotonic):
        self.locate, self.fetch = locate, fetch
        self.min_interval, self.clock = min_interval, clock
        self.fetches = 0
        self._cached, self._at = None, None
        self._lock = threading.Lock()

    def snapshot(self):
        with self._lock:
            now = self.clock()
            if self._at is not None and now - self._at < self.min_interval:
                return self._cached
            self._cached, self._at = self._take(), self.clock()
            return self._cached

    def _take(self):
        try:
            where = self.locate()
        except Exception as exc:  # noqa: BLE001 - a status page must not fail on the cluster
            return {**snapshot_from(None, None, None), "error": f"{type(exc).__name__}: {exc}"}
        if where is None:
            return snapshot_from(None, None, None)
        master_url, ui_url = where
        self.fetches += 1
        return snapshot_from(master_url, ui_url, self.fetch(ui_url, timeout=1.0))
