"""A multi-machine test rig: a Spark standalone master, a manager and a CEP worker on the host,
and three Spark workers each on its own "machine": a network namespace with its own address
(a veth pair whose host end is on a bridge, so the machines reach each other and the host
directly) and its own mount namespace (a private tmpfs for the Spark worker's work folder).
The checkout, the virtualenv and /tmp stay visible in every namespace, so the shared
checkpoint store is a folder (the launcher's state folder) and executors run this Python.

The rig can kill a whole machine (SIGKILL to every process in its network namespace at once),
cut its network both ways (its veth down) and heal it, and start its Spark worker again.
Needs root (ip netns, unshare -m, ip link); ``why_not_possible()`` says why it cannot run.
A harness for the tests (tests/machines/) and benchmarks (benchmarks/scaleout_bench.py),
kept in the package so that benchmarks need nothing from tests/; tests/machines/rig.py adds
the pytest check ``require_rig()``."""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from topology.netns import free_prefix, ip, start_in_namespace
from topology.netns import why_not_possible as netns_missing
from topology.cluster import SPARK_HOME, _spark_class, _stop_pids, free_port, master_state
from topology.jvm_options import startup_options
from topology.spark_settings import load_spark_settings

MACHINES = 3
WORKER_CORES = 4  # Spark slots per machine (not real cores: this host has 2)
CPU_CGROUPS = "/sys/fs/cgroup/cpu"  # the cgroup v1 cpu controller (Machine.limit_cpu)


def why_not_possible() -> str | None:
    """None when namespaces, veth pairs and a bridge can be made here, else the reason."""
    return netns_missing(("unshare", "ip", "java", "iptables-legacy"), bridge=True)


class Machine:
    """One network namespace on the rig's bridge; runs a Spark worker in its own mount ns."""

    def __init__(self, tag: str, index: int, prefix: str, bridge: str):
        self.index, self.bridge = index, bridge
        self.ns, self.vh, self.vn = f"ctm{tag}-{index}", f"ctm{tag}h{index}", f"ctm{tag}n{index}"
        self.address = f"{prefix}.{10 + index}"
        self.root = Path(f"/run/ctm{tag}-{index}")
        self.proc = self.delayer = None
        self.cgroup = None  # a cgroup v1 cpu group holding this machine's processes

    def limit_cpu(self, share: float) -> Path:
        """Give this machine `share` of one CPU (0.5: half a core), a CFS quota in a cgroup
        (v1 cpu controller) that the Spark worker started after this joins, and with it every
        executor and Python worker it starts."""
        group = Path(CPU_CGROUPS) / self.ns
        group.mkdir(exist_ok=True)
        period = int((group / "cpu.cfs_period_us").read_text())
        (group / "cpu.cfs_quota_us").write_text(str(int(share * period)))
        self.cgroup = group
        return group

    def up(self, gateway: str) -> "Machine":
        ip("netns", "add", self.ns)
        ip("link", "add", self.vh, "type", "veth", "peer", "name", self.vn)
        ip("link", "set", self.vn, "netns", self.ns)
        ip("link", "set", self.vh, "master", self.bridge)
        ip("link", "set", self.vh, "up")
        ip("addr", "add", f"{self.address}/24", "dev", self.vn, ns=self.ns)
        ip("link", "set", self.vn, "up", ns=self.ns)
        ip("link", "set", "lo", "up", ns=self.ns)
        ip("route", "add", "default", "via", gateway, ns=self.ns)
        self.root.mkdir(parents=True, exist_ok=True)
        return self

    def start_worker(
        self,
        master_url: str,
        log_path: Path,
        cores: int = WORKER_CORES,
        java_opts: tuple[str, ...] = (),
    ):
        """The Spark worker; its scratch space is the machine's own tmpfs, its work folder
        (the executors' logs) under the rig's folder, so a failed test leaves them;
        `java_opts` (-Dspark.worker.timeout=...) as the master's. With a CPU share
        (Machine.limit_cpu) the worker and everything it starts run in the machine's cgroup."""
        work = log_path.parent / f"work-{self.index}"
        work.mkdir(exist_ok=True)
        java_home = Path(shutil.which("java")).resolve().parent.parent
        script = f"""set -e
mount -t tmpfs tmpfs {self.root}
exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root JAVA_HOME={java_home} \\
  SPARK_HOME={SPARK_HOME} SPARK_LOCAL_IP={self.address} SPARK_DAEMON_MEMORY=192m \\
  SPARK_LOCAL_DIRS={self.root} SPARK_WORKER_OPTS="{" ".join(java_opts)}" \\
  SPARK_DAEMON_JAVA_OPTS="{" ".join(startup_options(load_spark_settings(env={})))}" \\
  {SPARK_HOME}/bin/spark-class org.apache.spark.deploy.worker.Worker {master_url} \\
  --host {self.address} --cores {cores} --memory 2g --webui-port 0 \\
  --work-dir {work}
"""
        self.proc = start_in_namespace(self.ns, script, log_path)
        if self.cgroup is not None:
            # from outside: `ip netns exec` mounts a sysfs of its own, without the cgroup
            # folders; the process execs its way to the Spark worker (same pid), which starts
            # its executors seconds later, inside the group
            (self.cgroup / "cgroup.procs").write_text(str(self.proc.pid))
        return self.proc

    def pids(self) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def kill_all(self) -> int:
        """SIGKILL every process in this machine's network namespace at once (its worker,
        executors and their Python workers): the machine's death. Returns how many."""
        pids = self.pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            self.proc.wait(timeout=10)
        return len(pids)

    def partition(self, cut: bool = True) -> None:
        """Cut this machine off the network both ways (its veth down), or heal it."""
        ip("link", "set", self.vh, "down" if cut else "up")

    def delay(self, ms: int | None) -> None:
        """Delay this machine's traffic by `ms` both ways, or (None) end the delay. Packets in
        and out of its veth go to netfilter queue 0 in its namespace, where
        topology/netdelay.py holds each for `ms` (this kernel has no netem qdisc)."""
        rules = [["INPUT", "-i", self.vn], ["OUTPUT", "-o", self.vn]]
        ipt = ["ip", "netns", "exec", self.ns, "iptables-legacy", "-w"]
        if ms:
            self.delayer = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.ns,
                    sys.executable,
                    "-m",
                    "topology.netdelay",
                    str(ms),
                ],
                stdout=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                cwd=Path(__file__).resolve().parents[1],
            )
            if self.delayer.stdout.readline().strip() != b"ready":
                raise RuntimeError(f"the packet delayer of {self.ns} did not start")
            for chain, *match in rules:
                subprocess.run(
                    [
                        *ipt,
                        "-A",
                        chain,
                        *match,
                        "-j",
                        "NFQUEUE",
                        "--queue-num",
                        "0",
                        "--queue-bypass",
                    ],
                    check=True,
                    capture_output=True,
                )
            return
        for chain, *match in rules:
            subprocess.run(
                [*ipt, "-D", chain, *match, "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"],
                capture_output=True,
            )
        if self.delayer is not None:
            self.delayer.terminate()
            self.delayer.wait(10)
            self.delayer = None

    def down(self):
        if self.delayer is not None:
            self.delay(None)
        self.kill_all()
        subprocess.run(["ip", "link", "del", self.vh], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)
        if self.cgroup is not None:  # empty once its processes are reaped
            for _ in range(50):
                try:
                    self.cgroup.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


class Rig:
    """The bridge, the machines, the master; ``system()`` adds the manager and CEP worker."""

    def __init__(
        self,
        root: Path,
        machines: int = MACHINES,
        java_opts: tuple[str, ...] = (),
        cpu_share: float | None = None,
    ):
        """`java_opts`: Spark settings of the master and the workers (-Dspark.worker.timeout=10:
        a worker is declared dead after 10 s without a heartbeat; it sends one every 1/4);
        `cpu_share`: each machine gets that share of one CPU (Machine.limit_cpu)."""
        self.cpu_share = cpu_share
        self.root = Path(root)
        self.java_opts = tuple(java_opts)
        tag = f"{os.getpid() % 10000}"
        self.bridge = f"ctm{tag}br"
        prefix = free_prefix()
        self.host = f"{prefix}.1"
        self.machines = [Machine(tag, i, prefix, self.bridge) for i in range(machines)]
        self.master = None
        self.master_url = self.ui = None
        self.manager = self.worker = self.server = self.launcher = None
        self._tag, self._prefix = tag, prefix
        self.cep_machines = []  # machines that run a CEP worker process, no Spark worker

    # -- network and Spark cluster ------------------------------------------------------
    def network_up(self) -> "Rig":
        """The bridge and the machines' namespaces, nothing started on them."""
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.host}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for machine in self.machines:
            machine.up(self.host)
            if self.cpu_share:
                machine.limit_cpu(self.cpu_share)
        return self

    def up(self) -> "Rig":
        self.network_up()
        port, ui_port = free_port(self.host), free_port(self.host)
        self.master = _spark_class(
            self.root / "master.log",
            startup_options(load_spark_settings(env={})) + list(self.java_opts),
            "org.apache.spark.deploy.master.Master",
            "--host",
            self.host,
            "--port",
            str(port),
            "--webui-port",
            str(ui_port),
        )
        self.master_url, self.ui = f"spark://{self.host}:{port}", f"http://{self.host}:{ui_port}"
        wait_for(lambda: master_state(self.ui), 60, "the Spark master answers")
        for machine in self.machines:
            self.start_worker(machine)
        wait_for(
            lambda: self.alive_workers() == len(self.machines),
            90,
            f"{len(self.machines)} Spark workers registered (logs in {self.root})",
        )
        return self

    def start_worker(self, machine: Machine):
        machine.start_worker(
            self.master_url, self.root / f"worker-{machine.index}.log", java_opts=self.java_opts
        )

    def alive_workers(self) -> int:
        state = master_state(self.ui) or {}
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def machine_of(self, address: str) -> Machine:
        return next(m for m in self.machines if m.address == address)

    # -- the CEP side: manager and worker on the host --------------------------------------
    def start_system(self, spark: dict | None = None, worker: dict | None = None):
        """The manager (CURVE on: tasks listen beyond loopback; authentication on, with the
        cluster secret of $CEP_CLUSTER_SECRET that the worker presents too) and a CEP worker on
        the host with a file sink; executors run this Python with the project shipped as a zip."""
        from werkzeug.serving import make_server

        from cep.worker.config import load_config
        from cep.worker.node import Worker
        from manager.launcher import SparkLauncher
        from manager.server import Manager
        from manager.settings import load_manager_settings
        from manager.web import create_app

        self.launcher = SparkLauncher(
            {
                "spark.master": self.master_url,
                "spark.master_ui_url": self.ui,
                "spark.host": self.host,
                "spark.state_dir": str(self.root / "state"),
                "topology.code": "ship",
                "topology.executor_python": sys.executable,
                "topology.workers": len(self.machines),
                "topology.kill_wait_secs": 1.0,
                "topology.metrics_interval_s": 0.5,
                "topology.max_restarts": 1000,
                "checkpoint.interval": 1.0,
                **(spark or {}),
            }
        )
        data = self.root / "manager"
        self.manager = Manager(
            load_manager_settings(
                overrides={
                    "manager.data_dir": str(data),
                    "registry.port": 0,
                    "registry.bind_host": self.host,
                    "manager.advertised_host": self.host,
                    "registry.heartbeat_interval": 1.0,
                    "topology.kill_wait_secs": 1.0,
                    "topology.resubmit_interval": 2.0,
                    "security.curve": True,
                },
                env={},
            ),
            launcher=self.launcher,
        ).start()
        # on the bridge address: CEP workers on the rig's machines reach the manager there
        self.server = make_server(
            self.host, 0, create_app({"MANAGER": self.manager}), threaded=True
        )
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        cfg = load_config(
            path=data / "none.yaml",
            env={},
            overrides={
                "worker.id": "host",
                "worker.mode": "distributed",
                "worker.advertised_host": self.host,
                "managers.urls": [self.manager_url],
                "managers.poll_interval": 0.2,
                "managers.timeout": 1.0,
                "receivers.http_host": self.host,
                "receivers.http_port": 0,
                "receivers.zmq_port": -1,
                "transport.reconnect_interval": 0.1,
                "transport.heartbeat_interval": 0.2,
                "worker.state_dir": str(self.root / "worker"),
                # self-undeploy after 10 s without a manager, as an operator would set it (0.2 s x
                # the default 6 retries is 1.2 s: a manager slowed by a loaded host would trip it)
                "managers.max_retries": 50,
                "security.curve": True,
                "security.curve_dir": str(data / "security" / "curve"),
                **(worker or {}),
            },
        )
        self.worker = Worker(cfg).start()
        return self

    @property
    def manager_url(self) -> str:
        return f"http://{self.host}:{self.server.server_port}"

    def sink_file(self, name: str, worker: str = "worker") -> Path:
        """A file sink's file at the host's CEP worker, or (worker=ID) at start_cep_worker's."""
        return self.root / worker / "tenants" / "-1234" / "files" / name

    def add_cep_machine(self) -> Machine:
        """One more machine on the bridge, without a Spark worker: for a CEP worker process
        (start_cep_worker) that dies with the machine (Machine.kill_all)."""
        machine = Machine(
            self._tag, len(self.machines) + len(self.cep_machines), self._prefix, self.bridge
        ).up(self.host)
        self.cep_machines.append(machine)
        return machine

    def start_cep_worker(self, machine: Machine, worker_id: str, port: int = 9090):
        """`cep worker` as a process on `machine` (its own network namespace): it binds and
        advertises the machine's address, reaches the manager on the bridge, uses CURVE with
        the manager's keys and $CEP_CLUSTER_SECRET, keeps its state (write-ahead logs, file
        sinks) under <rig root>/<worker_id>. Returns its HTTP URL once it answers."""
        import urllib.request

        checkout = Path(__file__).resolve().parents[1]
        curve_dir = self.root / "manager" / "security" / "curve"
        settings = {
            "CEP_MANAGERS_POLL_INTERVAL": "0.2",
            "CEP_MANAGERS_TIMEOUT": "1.0",
            "CEP_TRANSPORT_RECONNECT_INTERVAL": "0.1",
            "CEP_TRANSPORT_HEARTBEAT_INTERVAL": "0.2",
            "CEP_WORKER_STATE_DIR": str(self.root / worker_id),
            "PYTHONPATH": str(checkout),
        }
        env = " ".join(f"{k}={v}" for k, v in settings.items())
        script = f"""cd {checkout}
exec env {env} {sys.executable} -m cep.cli.main --log-level INFO worker \
  --manager {self.manager_url} --id {worker_id} --host {machine.address} \
  --advertised-host {machine.address} --http-port {port} --zmq-port -1 --curve-dir {curve_dir}
"""
        machine.proc = start_in_namespace(machine.ns, script, self.root / f"{worker_id}.log")
        url = f"http://{machine.address}:{port}"

        def answers():
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1) as resp:
                    return resp.status == 200
            except OSError:
                return machine.proc.poll() is None and None

        wait_for(
            lambda: answers() or machine.proc.poll() is not None,
            60,
            f"CEP worker {worker_id} answers (log {self.root / f'{worker_id}.log'})",
        )
        if machine.proc.poll() is not None:
            raise AssertionError(
                f"CEP worker {worker_id} exited: see {self.root / f'{worker_id}.log'}"
            )
        return url

    def down(self):
        try:
            if self.worker is not None:
                self.worker.stop()
            if self.manager is not None:
                self.manager.stop(kill_topologies=True)
            if self.launcher is not None:
                from topology.launcher import get_topology, list_topologies

                for status in list_topologies(self.launcher.settings):
                    get_topology(status["name"], self.launcher.settings).kill(
                        wait_secs=0, timeout=20
                    )
            if self.server is not None:
                self.server.shutdown()
        finally:
            for machine in self.machines + self.cep_machines:
                machine.down()
            if self.master is not None:
                _stop_pids((self.master.pid,))
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


def wait_for(check, timeout: float, what: str, every: float = 0.25):
    """check()'s first truthy value within timeout seconds, else AssertionError naming what."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for: {what}")
        time.sleep(every)
