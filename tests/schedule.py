"""Longest files first for `pytest -n N --dist loadfile` (bin/test.sh).

pytest-xdist hands out whole files in order of their number of tests, most first, so the
end-to-end files (one to five tests of a minute or more each) start last and the worker that
draws the longest one late sets the end of the run. It also gives a worker its next file as
soon as no more than two of its tests are left, which commits a long file to a worker that
still has minutes of work.

This scheduler hands out the file of the longest known run time first (tests/file_durations.txt,
measured from a full run; files not listed come after them, most tests first), and gives a
worker its next file only when its last test waits to start: the worker holds that test until
it knows which comes next, to tear down module fixtures at the right point. When that last
test belongs to a long file, the next file is the shortest one left, so that no long file
waits behind another on one worker while a second worker is free.

Rebuild the list from a full run's `--durations=0` output:
    python -m tests.schedule LOG > tests/file_durations.txt
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

DURATIONS = Path(__file__).with_name("file_durations.txt")
BUSY_S = 10.0  # a file of a known run time over this is long: no long file queues behind it


def known_durations(path: Path = DURATIONS) -> dict[str, float]:
    """{test file: seconds} as listed in `path` ("seconds path" lines; # comments)."""
    found: dict[str, float] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            seconds, name = line.split(None, 1)
            found[name.strip()] = float(seconds)
    return found


def durations_from_log(text: str) -> dict[str, float]:
    """{test file: seconds of setup + call + teardown} from pytest's `--durations=0` lines."""
    totals: dict[str, float] = collections.defaultdict(float)
    for match in re.finditer(r"^([0-9.]+)s (?:setup|call|teardown)\s+([^:\s]+)::", text, re.M):
        totals[match.group(2)] += float(match.group(1))
    return dict(totals)


def make_scheduler(config, log, durations: dict[str, float] | None = None):
    """The loadfile scheduler with the changes above (imported only when xdist runs);
    `durations` ({test file: seconds}) defaults to tests/file_durations.txt."""
    from xdist.scheduler import LoadFileScheduling

    known = known_durations() if durations is None else durations

    class LongestFileFirst(LoadFileScheduling):
        durations = known

        def _weight(self, scope: str) -> tuple[float, int]:
            return self.durations.get(scope, 0.0), len(self.workqueue[scope])

        def _assign_work_unit(self, node) -> None:
            # A worker given its next file while the last test of a long one is still to run
            # gets the shortest file: the choice of the next long file waits until the worker
            # is nearly free, so it goes to whichever worker frees up first.
            running = [
                scope
                for scope, tests in self.assigned_work.get(node, {}).items()
                if not all(tests.values())
            ]
            busy = any(self.durations.get(scope, 0.0) > BUSY_S for scope in running)
            if busy:  # a file not listed may be a new long one: a listed quick one first
                scope = min(
                    self.workqueue,
                    key=lambda name: (self.durations.get(name, BUSY_S), len(self.workqueue[name])),
                )
            else:
                scope = max(self.workqueue, key=self._weight)
            self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            # the worker runs a test only once it knows the next: with one test left it waits
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return LongestFileFirst(config, log)


def durations_per_test(text: str) -> dict[str, float]:
    """{test id: seconds of setup + call + teardown} from pytest's `--durations=0` lines."""
    totals: dict[str, float] = collections.defaultdict(float)
    for match in re.finditer(r"^([0-9.]+)s (?:setup|call|teardown)\s+(\S+)$", text, re.M):
        totals[match.group(2)] += float(match.group(1))
    return dict(totals)


class _Config:
    """What the xdist schedulers read of pytest's config."""

    def __init__(self, workers: int):
        self.workers = workers
        self.option = type("Option", (), {"loadscopereorder": True})()

    def getvalue(self, name: str):
        return {"tx": [f"{self.workers}*popen"], "dist": "loadfile"}[name]


class _Node:
    """A worker as the scheduler sees it: the tests sent to it, and whether it may stop."""

    def __init__(self, name: str):
        self.gateway = type("Gateway", (), {"id": name})()
        self.queue: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def simulate(tests: dict[str, float], workers: int, scheduler=None):
    """Run a schedule of `tests` ({test id: seconds}, in collection order) on `workers`
    simulated workers as xdist does (a worker runs a test once it knows the next one or may
    stop); returns (the end in seconds, {worker: [files in the order they started]})."""
    import heapq
    from xdist.remote import Producer
    from xdist.scheduler import LoadFileScheduling

    config, quiet = _Config(workers), Producer("simulate", enabled=False)
    sched = (scheduler or LoadFileScheduling)(config, quiet)
    ids = list(tests)
    nodes = [_Node(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()
    clock, events, started = 0.0, [], {node.gateway.id: [] for node in nodes}
    running: dict[_Node, int] = {}

    def start_ready() -> None:
        for i, node in enumerate(nodes):
            if node not in running and node.queue and (len(node.queue) > 1 or node.shutting_down):
                index = node.queue.pop(0)
                running[node] = index
                name = ids[index].split("::", 1)[0]
                if name not in started[node.gateway.id]:
                    started[node.gateway.id].append(name)
                heapq.heappush(events, (clock + tests[ids[index]], i, index))

    start_ready()
    while events:
        clock, i, index = heapq.heappop(events)
        del running[nodes[i]]
        sched.mark_test_complete(nodes[i], index)
        start_ready()
    return clock, started


if __name__ == "__main__":
    text = Path(sys.argv[-1]).read_text(errors="replace")
    if sys.argv[1] == "--simulate":  # the end of the logged run under each scheduler
        tests = durations_per_test(text)
        for workers in (2, 3, 4):
            old, _ = simulate(tests, workers)
            new, _ = simulate(tests, workers, lambda config, log: make_scheduler(config, log))
            print(
                f"{workers} workers: xdist loadfile {old / 60:5.1f} min, longest file "
                f"first {new / 60:5.1f} min"
            )
        sys.exit(0)
    totals = durations_from_log(text)
    print(
        "# seconds per test file (setup + call + teardown) from a full run of bin/test.sh "
        "with --durations=0;\n# tests/schedule.py starts the longest first. Rebuild: "
        "python -m tests.schedule LOG > tests/file_durations.txt"
    )
    for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        if seconds >= 1.0:
            print(f"{seconds:8.1f} {name}")
