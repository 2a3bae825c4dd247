"""The launcher's side of shared applications (``topology.packing: shared``).

``submit_to_pool`` starts the topology's pool application when it is not running
(``spark-submit ... sparkapp.py --pool <state_dir>/pools/<pool>/``, FAIR scheduler, one
executor with ``topology.pool_slots`` cores) and asks it to host the topology. The topology
keeps its own run dir (``spec.json``, ``launch.json``, ``driver.json``, ``final.json``), so a
``SharedTopologyHandle`` controls it exactly like an application of its own; only the last
resort of a kill differs (cancel the topology's job group, never stop the application), and
its status comes from one cached ``list`` request per pool and half second, however many
topologies a status page shows.
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import zmq

from cep.security import curve
from cep.protocol.frames import pack_message, unpack_message
from topology.cluster import SPARK_HOME, _locked
from topology.control import (
    TopologyHandle,
    _read,
    new_control_secret,
    pid_alive,
    private_dir,
    run_dir_alive,
)
from topology.exceptions import ControlError, LaunchError
from topology.pools import pool_name
from topology.spark_settings import state_dir

START_TIMEOUT_S = 120.0
STATUS_TTL_S = 0.5


def pool_dir(settings, name):
    from topology.app_conf import run_dir_name

    return private_dir(state_dir(settings) / "pools" / run_dir_name(name))


class PoolClient:
    """Requests to one shared application, and its cached list of topology statuses."""

    _cache, _cache_lock = {}, threading.Lock()

    def __init__(self, name, directory):
        self.name, self.dir = name, Path(directory)

    def alive(self):
        """True while the application's spark-submit and its Python driver run."""
        submit, info = _read(self.dir / "submit.json"), _read(self.dir / "pool.json")
        return bool(submit and info and pid_alive(submit["pid"]) and pid_alive(info["pid"]))

    def request(self, message, timeout=10.0):
        info = _read(self.dir / "pool.json")
        if not info or not pid_alive(info["pid"]):
            raise ControlError(f"shared application {self.name!r} is not running")
        launch = _read(self.dir / "launch.json") or {}
        sock = zmq.Context.instance().socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        curve.client(sock, curve.LinkSecurity.from_options(launch.get("security")).curve)
        try:
            sock.connect(info["control"])
            sock.send(pack_message({**message, "secret": launch.get("control_secret")}))
            if not sock.poll(int(timeout * 1000)):
                raise ControlError(
                    f"shared application {self.name!r} did not answer "
                    f"{message.get('cmd')!r} within {timeout} s"
                )
            return unpack_message(sock.recv())
        finally:
            sock.close()

    def statuses(self, ttl=STATUS_TTL_S):
        """{topology name: status} of every hosted topology, at most one request per ttl."""
        key = str(self.dir)
        with self._cache_lock:
            at, value = self._cache.get(key, (None, None))
            if at is None or time.monotonic() - at >= ttl:
                value = self.request({"cmd": "list"}).get("topologies", {})
                self._cache[key] = (time.monotonic(), value)
            return value

    def stop(self, timeout=60.0):
        """Kill every hosted topology and end the application."""
        if not self.alive():
            return
        try:
            self.request({"cmd": "stop"})
        except ControlError:
            pass
        submit = _read(self.dir / "submit.json") or {}
        deadline = time.monotonic() + timeout
        while pid_alive(submit.get("pid", 0)) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid_alive(submit.get("pid", 0)):
            os.killpg(submit["pid"], 15)


def ensure_pool(settings, cluster, name, security=None):
    """The running pool application `name`, started (and waited for) if needed."""
    directory = pool_dir(settings, name)
    client = PoolClient(name, directory)
    with _locked(directory / ".start.lock"):
        if client.alive():
            return client
        (directory / "pool.json").unlink(missing_ok=True)
        proc = _start(settings, cluster, name, directory, security)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if client.alive():
            return client
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    tail = TopologyHandle(name, directory).log_tail()
    raise LaunchError(f"the shared application {name!r} did not start: {tail}")


def pool_slots(settings, cluster):
    """Task slots of a pool: topology.pool_slots, at most the embedded worker's cores."""
    slots = settings["topology.pool_slots"]
    return min(slots, cluster.slots) if cluster.embedded and cluster.slots else slots


def _start(settings, cluster, name, directory, security):
    from topology.app_conf import SPARKAPP, _write_private, spark_conf

    slots = pool_slots(settings, cluster)
    launch = {
        "name": name,
        "host": settings["spark.host"],
        "master_ui_url": cluster.ui_url,
        "slots": slots,
        "master_lost_s": settings["topology.master_lost_s"],
        "cluster_pids": list(cluster.pids) if cluster.embedded else [],
        "control_secret": new_control_secret(),
    }
    if security is not None:
        launch["security"] = security.to_options()
    _write_private(directory / "launch.json", json.dumps(launch, indent=1))
    conf = dict(spark_conf(settings, 1, slots), **{"spark.scheduler.mode": "FAIR"})
    cmd = [
        os.path.join(SPARK_HOME, "bin", "spark-submit"),
        "--master",
        cluster.master_url,
        "--deploy-mode",
        "client",
        "--name",
        name,
        "--driver-memory",
        settings["spark.driver_memory"],
    ]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(SPARKAPP), "--pool", str(directory)]
    python = settings["spark.python"] or sys.executable
    env = dict(
        os.environ,
        SPARK_HOME=SPARK_HOME,
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
        SPARK_LOCAL_IP=settings["spark.host"],
    )
    with open(directory / "driver.log", "ab") as log:
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise LaunchError(f"cannot run spark-submit for {name!r}: {exc}") from None
    (directory / "submit.json").write_text(
        json.dumps(
            {
                "pid": proc.pid,
                "submitted": time.time(),
                "name": name,
                "slots": slots,
                "master": cluster.master_url,
                "master_ui": cluster.ui_url,
            }
        )
    )
    return proc


def submit_to_pool(topology, settings, cluster, run_dir, security=None):
    """Host `topology` (its run dir written) in its pool; returns its handle at once."""
    name = pool_name(topology.name, settings)
    client = ensure_pool(settings, cluster, name, security)
    submit = _read(client.dir / "submit.json")
    (run_dir / "submit.json").write_text(
        json.dumps(
            {
                "pid": submit["pid"],
                "submitted": time.time(),
                "name": topology.name,
                "master": cluster.master_url,
                "master_ui": cluster.ui_url,
                "pool": name,
                "pool_dir": str(client.dir),
            }
        )
    )
    reply = client.request({"cmd": "deploy", "run_dir": str(run_dir)})
    if "error" in reply:
        (run_dir / "submit.json").unlink(missing_ok=True)
        raise LaunchError(f"{name} refused {topology.name!r}: {reply['error']}")
    return SharedTopologyHandle(topology.name, run_dir)


def list_pools(settings):
    """The PoolClients of this state_dir's shared applications (running or not)."""
    root = state_dir(settings) / "pools"
    out = []
    for directory in sorted(root.iterdir()) if root.exists() else ():
        submit = _read(directory / "submit.json")
        if submit:
            out.append(PoolClient(submit["name"], directory))
    return out


class SharedTopologyHandle(TopologyHandle):
    """A topology of a shared application (see the module doc)."""

    def __init__(self, name, run_dir, process=None):
        super().__init__(name, run_dir)
        submit = _read(self.run_dir / "submit.json") or {}
        self.pool = PoolClient(submit.get("pool", "?"), submit.get("pool_dir", self.run_dir))

    def _alive(self):
        return run_dir_alive(self.run_dir)

    def status(self):
        final = _read(self.run_dir / "final.json")
        if final:
            return final
        if self._alive():
            try:
                status = self.pool.statuses().get(self.name)
            except ControlError as exc:
                return {"name": self.name, "status": "SUBMITTED", "reason": str(exc)}
            return status or super().status()
        return {
            "name": self.name,
            "status": "FAILED",
            "application": self.pool.name,
            "reason": f"the shared application {self.pool.name} exited: "
            + TopologyHandle(self.pool.name, self.pool.dir).log_tail(),
        }

    def _terminate(self):
        """Last resort of a kill: cancel this topology's job group, never the application."""
        try:
            self.pool.request({"cmd": "cancel", "name": self.name})
        except ControlError:
            return
        deadline = time.monotonic() + 20
        while self._alive() and time.monotonic() < deadline:
            time.sleep(0.2)

    def log_tail(self, lines=5):
        return TopologyHandle(self.pool.name, self.pool.dir).log_tail(lines)
