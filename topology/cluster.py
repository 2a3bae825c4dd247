"""The Spark standalone cluster: start (or reuse) the embedded one, or name an external one.

``spark.master: embedded`` starts a master and a worker on loopback with pyspark's own
``spark-class``, records them in ``<state_dir>/cluster.json`` and leaves them running, so
other processes with the same state_dir reuse them; another state_dir gets its own cluster
on other (free) ports. ``stop_cluster`` stops the processes recorded there.
"""

import fcntl
import json
import os
import shlex
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import pyspark

from topology.exceptions import ClusterError, ClusterStartError
from topology.jvm_options import jvm_options
from topology.spark_settings import state_dir

SPARK_HOME = os.path.dirname(pyspark.__file__)


@dataclass
class ClusterInfo:
    """Where a cluster is: master URL, master web UI URL, and our pids (embedded only)."""

    master_url: str
    ui_url: str
    pids: tuple = ()
    slots: int = 0
    embedded: bool = False


def free_port(host="127.0.0.1"):
    """A port free right now on host."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def master_state(ui_url, timeout=2.0):
    """The master's /json (apps, workers, cores) or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"{ui_url}/json/", timeout=timeout) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


def ensure_cluster(settings):
    """The cluster to submit to: external master, or the (started or reused) embedded one."""
    master = settings["spark.master"]
    if master != "embedded":
        if not master.startswith("spark://"):
            raise ClusterError(
                f"spark.master must be 'embedded' or spark://host:port, got {master!r}"
            )
        host = master[len("spark://") :].split(":")[0]
        return ClusterInfo(master, settings["spark.master_ui_url"] or f"http://{host}:8080")
    root = state_dir(settings)
    with _locked(root / "cluster.lock"):
        info = _running_cluster(root)
        if info is None:
            info = _start_cluster(settings, root)
            (root / "cluster.json").write_text(json.dumps(asdict(info)))
    return info


def recorded_cluster(settings):
    """The running embedded cluster of this state_dir, or None (starts nothing)."""
    root = state_dir(settings)
    with _locked(root / "cluster.lock"):
        path = root / "cluster.json"
        if not path.exists():
            return None
        info = ClusterInfo(**json.loads(path.read_text()))
        return info if master_state(info.ui_url) else None


def _running_cluster(root):
    path = root / "cluster.json"
    if not path.exists():
        return None
    info = ClusterInfo(**json.loads(path.read_text()))
    state = master_state(info.ui_url)
    if state and state.get("aliveworkers", 0) >= 1 and all(_alive(p) for p in info.pids):
        return info
    _stop_pids(info.pids)
    return None


def _start_cluster(settings, root):
    host, slots = settings["spark.host"], settings["spark.slots"]
    port = settings["spark.master_port"] or free_port(host)
    ui_port = settings["spark.master_ui_port"] or free_port(host)
    master_url, ui_url = f"spark://{host}:{port}", f"http://{host}:{ui_port}"
    (root / "work").mkdir(exist_ok=True)
    master = _spark_class(
        root / "master.log",
        jvm_options(settings, "master"),
        "org.apache.spark.deploy.master.Master",
        "--host",
        host,
        "--port",
        str(port),
        "--webui-port",
        str(ui_port),
    )
    worker = _spark_class(
        root / "worker.log",
        jvm_options(settings, "worker"),
        "org.apache.spark.deploy.worker.Worker",
        master_url,
        "--host",
        host,
        "--cores",
        str(slots),
        "--memory",
        settings["spark.worker_memory"],
        "--webui-port",
        str(free_port(host)),
        "--work-dir",
        str(root / "work"),
    )
    info = ClusterInfo(master_url, ui_url, (master.pid, worker.pid), slots, True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = master_state(ui_url)
        if state and state.get("aliveworkers", 0) >= 1:
            return info
        if master.poll() is not None or worker.poll() is not None:
            break
        time.sleep(0.3)
    _stop_pids(info.pids)
    raise ClusterStartError(
        f"embedded Spark cluster did not start on {master_url} within 60 s; "
        f"see {root / 'master.log'} and {root / 'worker.log'}"
    )


def _spark_class(log_path, java_opts, main_class, *args):
    env = dict(
        os.environ,
        SPARK_HOME=SPARK_HOME,
        SPARK_DAEMON_MEMORY="256m",
        SPARK_DAEMON_JAVA_OPTS=" ".join(
            [os.environ.get("SPARK_DAEMON_JAVA_OPTS", ""), shlex.join(java_opts)]
        ).strip(),
        SPARK_LOCAL_IP=args[args.index("--host") + 1] if "--host" in args else "127.0.0.1",
        # ended topologies' executor logs are removed after a week
        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=true "
        "-Dspark.worker.cleanup.appDataTtl=604800",
    )
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [os.path.join(SPARK_HOME, "bin", "spark-class"), main_class, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )


def stop_cluster(settings):
    """Stop the embedded cluster recorded in this state_dir (no-op when none)."""
    root = state_dir(settings)
    path = root / "cluster.json"
    with _locked(root / "cluster.lock"):
        if path.exists():
            _stop_pids(ClusterInfo(**json.loads(path.read_text())).pids)
            path.unlink()


def ended_cluster_process(pids):
    """For an embedded cluster on this machine: the first of its recorded processes (master,
    worker) that has ended, as ("master"|"worker", pid), else None. A dead master is known
    at once this way, where its silent web UI would take `topology.master_lost_s` to trust."""
    for role, pid in zip(("master", "worker"), pids or ()):
        if not _alive(pid):
            return role, pid
    return None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _stop_pids(pids, timeout=10.0):
    """SIGTERM the process groups we started (each spark-class is its own session)."""
    for pid in pids:
        if _alive(pid):
            try:
                os.killpg(pid, signal.SIGTERM)
            except OSError:
                pass
    deadline = time.monotonic() + timeout
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        if _alive(pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


@contextmanager
def _locked(path):
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
