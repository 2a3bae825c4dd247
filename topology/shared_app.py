"""The shared application: one long-running Spark application hosting many
topologies, started by ``sparkapp.py --pool <pool dir>``.

It creates one SparkContext (FAIR scheduler), binds one ZeroMQ REP socket on the host
(CURVE like every topology socket when the cluster has keys) and writes it to
``<pool dir>/pool.json``. Requests (msgpack dicts):

- ``{"cmd": "deploy", "run_dir": d}``: host the topology of run dir ``d`` (its ``spec.json``
  and ``launch.json``, written by the launcher) as a ``SharedDriver``; a topology that cannot
  be loaded fails alone (``final.json`` FAILED with the error), the others run on;
- ``{"cmd": "list"}``: every hosted topology's status from memory (no Spark call), for
  status pages that show all topologies at once;
- ``{"cmd": "cancel", "name": n}``: cancel that topology's job group (a kill's last resort);
- ``{"cmd": "stop"}``: kill every hosted topology and end the application.

The application ends by itself when its SparkContext stops (master gone, killed).
"""

import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

import zmq

from cep.security import curve
from cep.protocol.frames import pack_message, unpack_message
from topology.cluster import ended_cluster_process
from topology.control import authorized
from topology.exceptions import TopologyError
from topology.master_watch import CachedMaster
from topology.model import Topology
from topology.pools import SlotPool
from topology.shared_driver import SharedDriver

log = logging.getLogger(__name__)


class PoolApp:
    """The SparkContext, the slots and the hosted topologies of one shared application."""

    def __init__(self, pool_dir):
        from pyspark import SparkContext

        self.dir = Path(pool_dir)
        self.launch = json.loads((self.dir / "launch.json").read_text())
        self.name = self.launch["name"]
        self.sc = SparkContext()
        self.sc.setLogLevel("WARN")
        self.slots = SlotPool(self.launch["slots"], f"the shared application {self.name}")
        self.master = CachedMaster(self.launch["master_ui_url"])
        self.drivers, self.started = {}, time.time()
        self._executors_at, self._executors = 0.0, False
        self._lock = threading.Lock()
        self.stopping = False
        self._lost_since, self._master_seen = None, False
        self._bind()

    def _bind(self):
        host = self.launch["host"]
        keys = curve.LinkSecurity.from_options(self.launch.get("security")).curve
        self.zctx = zmq.Context()
        curve.start_authenticator(self.zctx, keys)
        self.rep = self.zctx.socket(zmq.REP)
        self.rep.setsockopt(zmq.LINGER, 0)
        curve.server(self.rep, keys)
        control = f"tcp://{host}:{self.rep.bind_to_random_port(f'tcp://{host}')}"
        info = {
            "pid": os.getpid(),
            "control": control,
            "name": self.name,
            "app_id": self.sc.applicationId,
            "started": self.started,
        }
        tmp = self.dir / ".pool.json.tmp"
        tmp.write_text(json.dumps(info))
        tmp.replace(self.dir / "pool.json")

    def executors_ready(self):
        """True once the application's executor registered (asked at most once a second)."""
        with self._lock:
            if time.monotonic() - self._executors_at >= 1.0:
                try:
                    count = self.sc._jsc.sc().getExecutorMemoryStatus().size() - 1
                except Exception:  # noqa: BLE001 - the JVM is going away
                    count = 0
                self._executors, self._executors_at = count >= 1, time.monotonic()
            return self._executors

    # --- requests ----------------------------------------------------------------------
    def serve(self):
        """Answer requests until stopped or the SparkContext ends; returns the exit code."""
        while not self.stopping:
            if self.rep.poll(500):
                self._answer_raw(self.rep.recv())
            if self.sc._jsc.sc().isStopped():
                log.error("shared application %s: the SparkContext stopped", self.name)
                break
            if self._master_lost():
                break
        return self._finish()

    def _master_lost(self):
        """True once the master's web UI has not answered for master_lost_s: the application
        ends (its topologies fail for the same reason), so the next submit starts a new one."""
        ended = ended_cluster_process(self.launch.get("cluster_pids"))
        if ended:  # the hosted topologies see it too, at their next check
            log.error(
                "shared application %s: the embedded cluster's %s (pid %d) ended", self.name, *ended
            )
            return True
        if self.master.state() is not None or not self._master_seen:
            self._master_seen = self._master_seen or self.master.state() is not None
            self._lost_since = None
            return False
        self._lost_since = self._lost_since or time.monotonic()
        lost = time.monotonic() - self._lost_since
        # later than the hosted topologies, which fail first with the master's reason (the
        # manager resubmits those: topology_recovery), rather than be killed by the pool
        if lost <= self.launch.get("master_lost_s", 30.0) + 10.0:
            return False
        log.error(
            "shared application %s: the Spark master has not answered for %.0f s", self.name, lost
        )
        return True

    def _answer_raw(self, data):
        try:
            request = unpack_message(data)
            cmd = request.get("cmd") if isinstance(request, dict) else None
            if not authorized(request, self.launch.get("control_secret")):
                log.warning(
                    "shared application %s: refused a request (%r) without its secret",
                    self.name,
                    cmd,
                )
                reply = {
                    "error": "refused: the request does not carry this application's control secret"
                }
            else:
                reply = self._answer(cmd, request)
        except Exception as exc:  # noqa: BLE001 - one bad request never ends the application
            log.exception("shared application %s: request failed", self.name)
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        self.rep.send(pack_message(reply))

    def _answer(self, cmd, request):
        if cmd == "deploy":
            return self.deploy(Path(request["run_dir"]))
        if cmd == "list":
            with self._lock:
                drivers = list(self.drivers.values())
            return {
                "application": self.name,
                "app_id": self.sc.applicationId,
                "slots": self.slots.describe(),
                "topologies": {d.topology.name: d.status() for d in drivers},
            }
        if cmd == "cancel":
            driver = self.drivers.get(request.get("name"))
            if driver is not None:
                driver.phase = "killing"
                self.sc.cancelJobGroup(driver.job_group)
            return {"cancelled": driver is not None}
        if cmd == "stop":
            self.stopping = True
            return {"stopping": self.name}
        return {"error": f"unknown command {cmd!r}"}

    def deploy(self, run_dir):
        """Host the topology of run_dir; a topology that cannot start fails alone."""
        name = None
        try:
            spec = json.loads((run_dir / "spec.json").read_text())
            name = spec.get("name")
            launch = json.loads((run_dir / "launch.json").read_text())
            topology = Topology.from_dict(spec)
            topology.validate(for_spark=True)
            with self._lock:
                if topology.name in self.drivers:
                    return {"error": f"topology {topology.name!r} already runs in {self.name}"}
            driver = SharedDriver(topology, launch, run_dir, self)
        except (OSError, ValueError, KeyError, TypeError, TopologyError, zmq.ZMQError) as exc:
            reason = f"cannot start in {self.name}: {type(exc).__name__}: {exc}"
            log.error("topology %s %s", name, reason)
            _write_json(
                run_dir / "final.json",
                {
                    "name": name,
                    "status": "FAILED",
                    "reason": reason,
                    "app_id": self.sc.applicationId,
                    "application": self.name,
                    "ended": time.time(),
                },
            )
            return {"name": name, "status": "FAILED", "reason": reason}
        with self._lock:
            self.drivers[topology.name] = driver
        threading.Thread(
            target=driver.spark_thread, daemon=True, name=f"job {topology.name}"
        ).start()
        threading.Thread(
            target=self._serve_driver, args=(driver,), daemon=True, name=f"control {topology.name}"
        ).start()
        return driver.status()

    def _serve_driver(self, driver):
        try:
            driver.serve()
        except Exception as exc:  # noqa: BLE001 - this topology fails, the others run on
            log.exception("topology %s: its driver loop failed", driver.topology.name)
            _write_json(
                driver.run_dir / "final.json",
                {
                    "name": driver.topology.name,
                    "status": "FAILED",
                    "application": self.name,
                    "reason": f"its driver loop failed: {type(exc).__name__}: {exc}",
                    "app_id": self.sc.applicationId,
                    "ended": time.time(),
                },
            )
            self.slots.release(driver.topology.name)
            self.ended(driver.topology.name)

    def ended(self, name):
        """A hosted topology ended (its final.json is written)."""
        with self._lock:
            self.drivers.pop(name, None)

    def _finish(self):
        with self._lock:
            drivers = list(self.drivers.values())
        for driver in drivers:
            self._kill(driver)
        deadline = time.monotonic() + 20
        while self.drivers and time.monotonic() < deadline:
            time.sleep(0.2)
        self.sc.stop()
        curve.stop_authenticator(self.zctx)
        self.zctx.destroy(linger=0)
        return 0

    def _kill(self, driver):
        """Ask a hosted driver to kill its topology through its own control socket (its
        sockets belong to its thread)."""
        sock = self.zctx.socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        curve.client(
            sock, curve.LinkSecurity.from_options(driver.launch["options"].get("security")).curve
        )
        try:
            sock.connect(driver.endpoints["control"])
            sock.send(
                pack_message(
                    {"cmd": "kill", "wait": 0.0, "secret": driver.launch.get("control_secret")}
                )
            )
            sock.poll(2000)
        finally:
            sock.close()


def _write_json(path, data):
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def main(pool_dir):
    """Entry point of `sparkapp.py --pool <pool dir>`."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    app = PoolApp(pool_dir)
    return app.serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
