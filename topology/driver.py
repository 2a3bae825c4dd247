"""The topology's Spark driver: one Spark application running one barrier stage.

Started by the launcher through spark-submit (client mode) with ``topology/sparkapp.py``.
It binds three ZeroMQ sockets on the host: a REP control socket for the launcher (status,
metrics, activate, deactivate, kill), a PUB socket telling tasks the desired state, and a
PULL socket receiving task reports. It waits for the executors before submitting the stage
(so Spark never refuses the barrier stage for lack of slots), reports WAITING_FOR_SLOTS
while the master cannot give it cores, and on kill deactivates, drains, stops, exits.
"""

import json
import logging
import math
import os
import re
import threading
import time
from pathlib import Path

import zmq

from cep.security import curve
from cep.protocol.frames import pack_message, unpack_message
from topology.checkpoint.coordinator import Coordinator
from topology.cluster import ended_cluster_process
from topology.control import authorized
from topology.master_watch import CachedMaster
from topology.restart_rate import RestartRate
from topology.task_watch import TaskWatch
from topology.metrics import add_queue_depths
from topology.preflight import check_executors
from topology.model import Topology

log = logging.getLogger(__name__)


class Driver:
    """State machine + control loop of one running topology."""

    def __init__(self, topology, launch, run_dir):
        self.topology, self.launch, self.run_dir = topology, launch, Path(run_dir)
        self.ntasks = topology.total_parallelism
        self.phase, self.reason = "starting", ""
        self.desired, self.seq = "active", 0
        self.attempt, self.ready, self.restarts = -1, set(), 0
        self.reports = {}
        self.kill_deadline = None
        self.app_id, self.sc, self.job_done = None, None, threading.Event()
        self.started = time.time()
        self.active_since = None
        self.timeline = {"driver_started": self.started}
        self.master_seen, self.master_lost_since = False, None
        self.checkpoints = Coordinator(launch["options"].get("checkpoint"), self.ntasks)
        self.master = CachedMaster(launch["master_ui_url"])  # <= 1 request/s
        self.rate = RestartRate(
            launch.get("max_restarts", 10), launch.get("restart_window_s", 300.0)
        )
        self.resubmits = 0  # jobs submitted again after Spark gave up on one
        self.rate_failed = False  # failed by the restart rate while the job still ran
        self.last_task_error = None  # the latest error a task reported (any attempt)
        # dead task processes seen at once; silent ones after topology.task_silence_s
        self.watch = TaskWatch(silent_s=float(launch.get("task_silence_s") or 0.0))
        self.job_group = "topology"  # a shared application gives each topology its own
        self._bind()

    def _bind(self):
        host = self.launch["host"]
        keys = curve.LinkSecurity.from_options(self.launch["options"].get("security")).curve
        self.zctx = zmq.Context()
        curve.start_authenticator(self.zctx, keys)
        self.rep, self.pub, self.pull = (self.zctx.socket(k) for k in (zmq.REP, zmq.PUB, zmq.PULL))
        endpoints = {}
        for name, sock in (("control", self.rep), ("tasks", self.pub), ("reports", self.pull)):
            sock.setsockopt(zmq.LINGER, 0)
            curve.server(sock, keys)
            endpoints[name] = f"tcp://{host}:{sock.bind_to_random_port(f'tcp://{host}')}"
        self.endpoints = endpoints
        # orders this topology's drivers: with the stage attempt it fences stale tasks' output
        self.endpoints["generation"] = int(self.started * 1000)
        self._write(
            "driver.json",
            {
                "pid": os.getpid(),
                "control": endpoints["control"],
                "name": self.topology.name,
                "started": self.started,
            },
        )

    def _write(self, name, data):
        tmp = self.run_dir / f".{name}.tmp"
        tmp.write_text(json.dumps(data))
        tmp.replace(self.run_dir / name)

    # --- Spark side (a background thread) ---------------------------------------------
    def spark_thread(self):
        """Create the SparkContext, wait for slots, run the barrier job until it ends."""
        try:
            self.sc = self._make_context()
            self.app_id = self.sc.applicationId
            self.timeline["context_ready"] = time.time()
            if self.phase == "starting":
                self.phase = "waiting"
                self._wait_for_slots()
            if self.phase == "killing":
                return
            self.timeline["executors_ready"] = time.time()
            failed = check_executors(
                self.sc, self.launch["executors"], self.launch.get("preflight")
            )
            if failed:  # a missing dependency: one clear reason, not a stage failing for ever
                self.phase, self.reason = "failed", failed
            if self.phase != "waiting":  # failed, or killed meanwhile
                return
            self.phase = "running"
            self._run_job()
        except Exception as exc:  # noqa: BLE001 - the job's failure is the topology's status
            if self.phase == "failed" and self.rate_failed and "cancel" not in str(exc).lower():
                self.reason = f"{_short(exc)} ({self.reason})"  # the tasks' error first
            elif self.phase not in ("killing", "failed"):  # "failed": the reason is set already
                self.phase, self.reason = "failed", _short(exc)
                log.error("topology %s failed: %s", self.topology.name, exc)
        finally:
            self.job_done.set()

    def _make_context(self):
        """This topology's own application (a shared application's topology borrows it)."""
        from pyspark import SparkContext

        sc = SparkContext()
        sc.setLogLevel("WARN")
        return sc

    def _wait_for_slots(self):
        """Poll until executors with enough cores registered (or a kill)."""
        needed = self.launch["executors"]
        tracker = self.sc._jsc.sc()
        while self.phase == "waiting":
            if tracker.getExecutorMemoryStatus().size() - 1 >= needed:
                return
            time.sleep(0.2)

    def _run_job(self):
        """Run the stage; when Spark gives up on it (its lifetime attempt limit), submit it
        again while the restart rate allows, else fail with the rate's reason."""
        fn = self._task_function()
        while True:
            restarts_before = self.restarts
            self.sc.setJobGroup(self.job_group, self.topology.name, interruptOnCancel=True)
            parts = self.partitions
            rdd = self.sc.parallelize(range(parts), parts).barrier().mapPartitions(fn)
            # a failed barrier ResultStage is never retried, a failed barrier ShuffleMapStage
            # is: so the instances run in a map stage feeding an (empty) shuffle
            try:
                rdd.map(lambda row: (0, row)).partitionBy(1).count()
                return
            except Exception as exc:  # noqa: BLE001 - Spark's job failure, retried by rate
                if self.phase != "running" or self.kill_deadline is not None:
                    raise
                # a job whose tasks reported a new attempt was counted by the reports already
                if self.restarts == restarts_before and not self.rate.record():
                    self.phase, self.reason = "failed", f"{_short(exc)} ({self.rate.reason()})"
                    raise
                self.resubmits += 1
                log.warning(
                    "topology %s: Spark gave up on the stage (%s); submitting it again "
                    "(%d restarts in the window)",
                    self.topology.name,
                    _short(exc),
                    self.rate.count(),
                )

    @property
    def partitions(self):
        """The barrier stage's tasks (a shared application packs several instances in one)."""
        return self.ntasks

    def _task_function(self):
        from topology.task import make_task_function

        return make_task_function(self.topology.to_dict(), self.endpoints, self.launch["options"])

    # --- control loop (the main thread) ----------------------------------------------
    def serve(self):
        """Answer control requests and reports until the job has ended; returns exit code."""
        poller = zmq.Poller()
        poller.register(self.rep, zmq.POLLIN)
        poller.register(self.pull, zmq.POLLIN)
        next_pub = next_check = 0.0
        while not (self.job_done.is_set() and self.phase in ("failed", "killing", "done")):
            events = dict(poller.poll(100))
            if self.pull in events:
                self._read_reports()
            if self.rep in events:
                self._answer_raw(self.rep.recv())
            if time.monotonic() >= next_pub:
                self._publish()
                next_pub = time.monotonic() + 0.2
            if self.checkpoints.tick(self.phase == "running" and len(self.ready) == self.ntasks):
                self._publish()  # spouts start the checkpoint at once
            if self.kill_deadline is not None:
                self._kill_step()
            elif self.phase == "running" and self.watch.check(self.attempt, self.reports):
                self._task_died()
            if self.job_done.is_set() and self.phase == "running":
                self.phase, self.reason = "failed", "the topology's tasks ended"
            if time.monotonic() >= next_check:
                self._check_context()
                next_check = time.monotonic() + 0.5  # pid checks; the master view is cached
        return self._finish()

    def _check_context(self):
        """Fail (and exit) when Spark stopped the application or its master is gone."""
        if self.sc is None or self.phase not in ("waiting", "running"):
            return
        try:
            stopped = self.sc._jsc.sc().isStopped()
        except Exception:  # noqa: BLE001 - the JVM side is gone too
            stopped = True
        ended = ended_cluster_process(self.launch.get("cluster_pids"))
        lost = self._master_lost_for()
        if stopped or ended or lost > self.launch.get("master_lost_s", 30.0):
            self.phase = "failed"
            url = self.launch["master_ui_url"]
            if stopped:
                self.reason = "the Spark application was stopped"
            elif ended:
                self.reason = (
                    f"the Spark master ({url}) is gone: the embedded cluster's "
                    f"{ended[0]} process (pid {ended[1]}) ended"
                )
            else:
                self.reason = f"the Spark master ({url}) has not answered for {lost:.0f} s"
            self.job_done.set()

    def _master_lost_for(self):
        """Seconds the master's web UI has been unreachable (0 until it was seen once)."""
        if self.master.state() is not None:
            self.master_seen, self.master_lost_since = True, None
            return 0.0
        if not self.master_seen:
            return 0.0
        self.master_lost_since = self.master_lost_since or time.monotonic()
        return time.monotonic() - self.master_lost_since

    def _publish(self):
        state = "stop" if self.kill_deadline == "stop" else self.desired
        abort = self.attempt if self.watch.failed(self.attempt) else None
        self.pub.send(
            pack_message(
                {
                    "state": state,
                    "seq": self.seq,
                    "abort": abort,
                    "attempt": self.attempt,
                    **self.checkpoints.control(),
                }
            )
        )

    def _task_died(self):
        """A task process of this attempt is gone: say so, and end the attempt's other tasks
        now instead of when Spark kills them (topology/task_watch.py)."""
        self.timeline["failure_seen"] = self.watch.failure["time"]
        log.warning("topology %s: %s", self.topology.name, self.watch.reason(self.attempt))
        if "silent_s" in self.watch.failure:
            self._kill_executors(self.watch.failure["executors"], self.watch.failure["address"])
        self._publish()

    def _kill_executors(self, ids, host):
        """A silent task's machine: ask Spark to kill its executors (the tasks there report
        theirs), so that nothing more is scheduled there, before the stage runs again: else
        a task of the next attempt may land on the unreachable executor and the whole
        attempt wait for Spark's own timeout. As many executors are requested again: a
        replacement starts where a worker has room."""
        if not ids or self.sc is None:
            return
        try:
            sc = self.sc._jsc.sc()
            sc.killExecutors(self.sc._jvm.PythonUtils.toSeq(list(ids)))
            sc.requestExecutors(len(ids))
            log.warning(
                "topology %s: executors %s on %s killed (not heard from)",
                self.topology.name,
                list(ids),
                host,
            )
        except Exception as exc:  # noqa: BLE001 - Spark's own detection still follows
            log.warning(
                "topology %s: could not kill executors %s on %s: %s",
                self.topology.name,
                list(ids),
                host,
                exc,
            )

    def _read_reports(self):
        while True:
            try:
                report = unpack_message(self.pull.recv(zmq.NOBLOCK))
                attempt, task, kind = report["attempt"], report["task"], report["type"]
            except zmq.Again:
                return
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("ignoring a malformed task report: %s", exc)
                continue
            if kind in ("failed", "stopped") and isinstance(report.get("last_error"), dict):
                # noted whatever its attempt: the report of a task that failed may come after
                # the first report of the attempt that replaced it
                self._note_task_error(str(report["last_error"].get("error", "")))
            if attempt < 0:
                continue
            if attempt > self.attempt:
                if self.attempt >= 0:
                    self.restarts += 1
                    self._count_restart()
                self.attempt, self.ready, self.reports = attempt, set(), {}
                self.timeline["attempt_started"] = time.time()  # its first task reported
                self.watch.new_attempt()
                self.checkpoints.new_attempt(attempt)
                self._publish()  # the restore point the new tasks wait for
            if attempt < self.attempt:
                continue
            self.watch.hear(task)
            if kind == "heartbeat":  # from the task's own thread: it and its link live
                continue
            if kind == "checkpoint":
                if self.checkpoints.on_ack(attempt, report):
                    self._publish()  # spouts commit their offsets at the workers
                continue
            self.reports[task] = report
            if kind == "ready":
                self.ready.add(task)
                if len(self.ready) == self.ntasks:
                    self.timeline["attempt_ready"] = time.time()  # every task restored
                if len(self.ready) == self.ntasks and self.active_since is None:
                    self.active_since = self.timeline["tasks_ready"] = time.time()

    def _note_task_error(self, error):
        """Remember a task's error; a topology the restart rate failed names it first."""
        if not error:
            return
        self.last_task_error = error
        if self.phase == "failed" and self.rate_failed and error not in (self.reason or ""):
            self.reason = f"{error} ({self.reason})"

    def _count_restart(self):
        """A new stage attempt: within the restart rate, or the topology is FAILED (its
        reason: the tasks' last error, then the rate's)."""
        if self.rate.record() or self.phase != "running":
            return
        reason = self.rate.reason()
        if self.last_task_error:
            reason = f"{self.last_task_error} ({reason})"
        self.phase, self.reason, self.rate_failed = "failed", reason, True
        log.error("topology %s: %s", self.topology.name, self.reason)
        if self.sc is not None:
            self.sc.cancelJobGroup(self.job_group)

    def _answer_raw(self, data):
        """Answer one request; a malformed one gets an error reply and changes nothing."""
        try:
            request = unpack_message(data)
            if not isinstance(request, dict):
                raise ValueError(f"expected a map, got {type(request).__name__}")
            if "wait" in request:
                request["wait"] = float(request["wait"])
        except (ValueError, TypeError) as exc:
            self.rep.send(pack_message({"error": f"malformed control request: {exc}"}))
            return
        if not authorized(request, self.launch.get("control_secret")):
            log.warning(
                "topology %s: refused a control request (%r) without its secret",
                self.topology.name,
                request.get("cmd"),
            )
            self.rep.send(
                pack_message(
                    {"error": "refused: the request does not carry this topology's control secret"}
                )
            )
            return
        self._answer(request)

    def _answer(self, request):
        cmd = request.get("cmd")
        if cmd in ("activate", "deactivate") and self.kill_deadline is None:
            self.desired = "active" if cmd == "activate" else "inactive"
            self.seq += 1
            self._publish()
        elif cmd == "kill" and self.kill_deadline is None:
            self._start_kill(request.get("wait", self.launch["kill_wait_secs"]))
        if cmd == "metrics":
            reply = {
                "instances": add_queue_depths([dict(r) for r in self.reports.values()]),
                "status": self.status(),
            }
        elif cmd in ("status", "activate", "deactivate", "kill"):
            reply = self.status()
        else:
            reply = {"error": f"unknown command {cmd!r}"}
        self.rep.send(pack_message(reply))

    # --- kill: deactivate, drain, stop ------------------------------------------------
    def _start_kill(self, wait):
        log.info("killing %s (drain up to %.1f s)", self.topology.name, wait)
        self.desired, self.seq = "inactive", self.seq + 1
        self.kill_deadline, self.kill_wait_until = time.monotonic() + wait, None
        self.drain_totals, self.drain_seq = None, self.seq
        if self.phase in ("starting", "waiting"):
            self.phase = "killing"
        self._publish()

    def _kill_step(self):
        if self.kill_deadline == "stop":
            if time.monotonic() > self.kill_wait_until and self.sc is not None:
                self.sc.cancelJobGroup(self.job_group)
                self.kill_wait_until = float("inf")
            return
        if not (
            self._drained() or time.monotonic() >= self.kill_deadline or self.phase != "running"
        ):
            return
        self.phase, self.kill_deadline = "killing", "stop"
        self.kill_wait_until = time.monotonic() + self.launch["stop_timeout_s"]
        self._publish()

    def _drained(self):
        """Spouts inactive, every queue empty, and totals unchanged since the last look."""
        if self.phase != "running" or len(self.ready) < self.ntasks:
            return False
        fresh = [r for r in self.reports.values() if r["seq"] >= self.drain_seq]
        if len(fresh) < self.ntasks or any(r["active"] for r in fresh):
            self.seq += 1
            return False
        depths = add_queue_depths([dict(r) for r in fresh])
        totals = sum(r["transferred"] + r["received"] for r in fresh)
        drained = all(d["input_queue_depth"] == 0 for d in depths) and totals == self.drain_totals
        self.drain_totals, self.drain_seq = totals, self.seq + 1
        self.seq += 1
        return drained

    def status(self):
        """The status dict the launcher shows (Storm's states plus WAITING_FOR_SLOTS)."""
        status, reason = self._state()
        return {
            "name": self.topology.name,
            "status": status,
            "reason": reason,
            "app_id": self.app_id,
            "attempt": max(self.attempt, 0),
            "restarts": self.restarts,
            "resubmits": self.resubmits,
            "restarts_in_window": self.rate.count(),
            "tasks": self.ntasks,
            "workers": self.launch["executors"],
            "ready": len(self.ready),
            "uptime_s": round(time.time() - self.started, 1),
            "active_since": self.active_since,
            "driver_pid": os.getpid(),
            "placement": self.placement(),
            "timeline": self.timeline,
            "checkpoints": self.checkpoints.metrics(),
            "ui": self.sc.uiWebUrl if self.sc is not None else None,
        }

    def placement(self):
        """{address: ["component[index]", ...]}: the machine each running instance is on
        (from the instances' latest reports; empty until they report)."""
        out = {}
        for report in sorted(self.reports.values(), key=lambda r: (r["component"], r["index"])):
            where = report.get("address") or report.get("host") or "?"
            out.setdefault(where, []).append(f"{report['component']}[{report['index']}]")
        return out

    def _state(self):
        if self.kill_deadline is not None or self.phase == "killing":
            return "KILLED", "draining" if isinstance(self.kill_deadline, float) else "stopping"
        if self.phase == "failed":
            return "FAILED", self.reason
        # too few tasks ready, or the attempt lost a task and the next one cannot start yet
        if self.phase in ("waiting", "running") and (
            len(self.ready) < self.ntasks or self.watch.failed(self.attempt)
        ):
            waiting = self._waiting_reason()
            if waiting:
                return "WAITING_FOR_SLOTS", waiting
        if self.phase == "running" and self.watch.failed(self.attempt):
            return "SUBMITTED", self.watch.reason(self.attempt)
        if self.phase == "running" and len(self.ready) == self.ntasks:
            return ("ACTIVE" if self.desired == "active" else "INACTIVE"), ""
        return "SUBMITTED", (
            f"starting tasks {len(self.ready)}/{self.ntasks} (attempt {max(self.attempt, 0)})"
        )

    def _waiting_reason(self):
        """Why the master does not start this app (cores needed vs the cluster's), or None."""
        state = self.master.state()
        if state is None:
            return f"needs {self.ntasks} free slots" if time.time() - self.started > 20 else None
        apps = [a for a in state.get("activeapps", []) if a.get("id") == self.app_id]
        if not apps:
            return None
        if apps[0].get("state") == "WAITING":
            return slots_reason(self.ntasks, state.get("cores"), state.get("coresused"))
        # running with fewer cores than tasks (a machine died and the survivors have too few
        # free): the stage cannot start until more cores join
        # (an application whose executors are still starting is granted fewer too, while the
        # cluster has the free cores to grant: that is starting, not waiting)
        granted, total, used = apps[0].get("cores"), state.get("cores"), state.get("coresused")
        if (
            isinstance(granted, int)
            and granted < self.ntasks
            and isinstance(total, int)
            and total - (used or 0) < self.ntasks - granted
        ):
            return partial_slots_reason(
                self.ntasks, granted, state.get("cores"), state.get("coresused")
            )
        return None

    def _finish(self):
        status, reason = ("KILLED", "") if self.phase in ("killing", "done") else self._state()
        self._write(
            "final.json",
            {
                "name": self.topology.name,
                "status": status,
                "reason": reason,
                "app_id": self.app_id,
                "ended": time.time(),
            },
        )
        self._stop_context()
        curve.stop_authenticator(self.zctx)
        self.zctx.destroy(linger=0)
        return 0 if status == "KILLED" else 1

    def _stop_context(self):
        """Stop the application (a shared application's topology leaves it running)."""
        if self.sc is not None:
            self.sc.stop()


def slots_reason(needed, total, used):
    """WAITING_FOR_SLOTS's reason: cores needed vs the cluster's total and free cores; a plan
    that needs more than the whole cluster says it will wait until the cluster grows."""
    if not isinstance(total, int):
        return f"needs {needed} free slots"
    free = max(total - (used or 0), 0)
    text = f"needs {needed} free slots (cores); the cluster has {total}, {free} free"
    if needed > total:
        text += (
            f": more than the whole cluster, so it waits until workers with "
            f"{needed - total} more cores join (spark.slots) or its @dist parallel is lowered"
        )
    return text


def partial_slots_reason(needed, granted, total, used):
    """WAITING_FOR_SLOTS's reason for an application granted some of the cores it needs."""
    free = max(total - (used or 0), 0) if isinstance(total, int) else "?"
    return (
        f"needs {needed} slots (cores), has {granted}: {needed - granted} more must free up "
        f"or join; the cluster has {total if isinstance(total, int) else '?'}, {free} free"
    )


PYTHON_ERROR = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception)): (.*)$")


def _short(exc, limit=800):
    """A one-line reason: the task's Python exception when there is one, else the first line."""
    lines = str(exc).strip().splitlines()
    python = [
        m
        for m in map(PYTHON_ERROR.match, lines)
        if m and not m.group(1).startswith(("org.", "py4j", "java."))
    ]
    if python:
        last = python[-1]
        return f"{last.group(1)}: {last.group(3)}"[:limit]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:limit]


def main(run_dir):
    """Entry point: read spec.json and launch.json from run_dir, run until killed."""
    run_dir = Path(run_dir)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    topology = Topology.from_dict(json.loads((run_dir / "spec.json").read_text()))
    launch = json.loads((run_dir / "launch.json").read_text())
    driver = Driver(topology, launch, run_dir)
    threading.Thread(target=driver.spark_thread, name="spark-job", daemon=True).start()
    return driver.serve()


def executors_needed(parallelism, workers, spare=0):
    """(executors, cores per executor) for N tasks over the configured workers; with `spare`
    executors' worth of cores more, so that after losing that many executors (a machine's
    death) the others still hold every task and the stage re-runs on them at once, without
    waiting for the master to start a replacement executor."""
    workers = max(1, min(workers, parallelism))
    spare = max(0, min(spare, workers - 1))
    cores = math.ceil(parallelism / (workers - spare))
    return workers, cores
