"""A fake topology launcher for fast unit tests of the manager (the real one is tested with
Spark in test_manager_spark.py)."""
import threading
from pathlib import Path


class FakeHandle:
    def __init__(self, name, launcher):
        self.name = name
        self.run_dir = Path("/fake") / f"{name}-{id(self)}"
        self.state = launcher.initial_state
        self.launcher = launcher

    def status(self):
        return {"name": self.name, "status": self.state, "reason": ""}

    def kill(self, wait_secs=None):
        self.state = "KILLED"
        self.launcher.killed.append(self.name)
        return self.status()


class FakeLauncher:
    """Records submits and kills; new topologies start in `initial_state`."""

    def __init__(self, initial_state="ACTIVE"):
        self.initial_state = initial_state
        self.submitted = []
        self.killed = []
        self.handles = {}
        self.lock = threading.Lock()

    def submit(self, topology):
        with self.lock:
            topology.validate(check_classes=True)
            handle = FakeHandle(topology.name, self)
            self.submitted.append(topology)
            self.handles[topology.name] = handle
            return handle

    def find(self, name):
        h = self.handles.get(name)
        return h if h is not None and h.state not in ("KILLED", "FAILED") else None
