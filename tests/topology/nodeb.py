"""Machine B for the code-shipping test: a Spark standalone worker in its own network
namespace (a veth pair, its own address) and its own mount namespace, where the project's
checkout, its .venv, the temp dirs and the base Python's site-packages are hidden under
empty tmpfs mounts. Only Java, a bare CPython and a Spark installation (pyspark's, bind
mounted to another path before the checkout is hidden) remain: what a fresh worker machine
with Spark has. Needs root (unshare, ip netns)."""

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from topology.netns import free_prefix, ip, start_in_namespace
from topology.netns import why_not_possible as netns_missing
from topology.cluster import SPARK_HOME

HIDDEN = ("/work", "/tmp", sysconfig.get_paths(vars={"base": sys.base_prefix})["purelib"])


def why_not_possible():
    """None when namespaces and veth pairs can be made here, else the reason."""
    return netns_missing()


class NodeB:
    """A veth pair and a network namespace; start_worker() runs the Spark worker in it."""

    def __init__(self, tag):
        self.tag = tag
        self.ns, self.vh, self.vb = f"cept7-{tag}", f"ct7h{tag}", f"ct7b{tag}"
        prefix = free_prefix()
        self.host_ip, self.node_ip = f"{prefix}.1", f"{prefix}.2"
        self.root = Path(f"/run/cept7-{tag}")
        self.proc = None

    def up(self):
        ip("netns", "add", self.ns)
        ip("link", "add", self.vh, "type", "veth", "peer", "name", self.vb)
        ip("link", "set", self.vb, "netns", self.ns)
        ip("addr", "add", f"{self.host_ip}/30", "dev", self.vh)
        ip("link", "set", self.vh, "up")
        ip("addr", "add", f"{self.node_ip}/30", "dev", self.vb, ns=self.ns)
        ip("link", "set", self.vb, "up", ns=self.ns)
        ip("link", "set", "lo", "up", ns=self.ns)
        ip("route", "add", "default", "via", self.host_ip, ns=self.ns)
        self.root.mkdir(parents=True, exist_ok=True)
        return self

    def worker_script(self, master_url, cores):
        """The shell script that hides the project and execs the Spark worker."""
        node, java_home = self.root, Path(shutil.which("java")).resolve().parent.parent
        hide = "\n".join(f"mount -t tmpfs tmpfs {p}" for p in HIDDEN)
        return f"""set -e
mount -t tmpfs tmpfs {node}
mkdir {node}/spark {node}/work
mount --bind {SPARK_HOME} {node}/spark
{hide}
exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root JAVA_HOME={java_home} \\
  SPARK_HOME={node}/spark SPARK_LOCAL_IP={self.node_ip} SPARK_DAEMON_MEMORY=256m \\
  {node}/spark/bin/spark-class org.apache.spark.deploy.worker.Worker {master_url} \\
  --host {self.node_ip} --cores {cores} --memory 2g --webui-port 0 --work-dir {node}/work
"""

    def start_worker(self, master_url, log_path, cores=4):
        script = self.worker_script(master_url, cores)
        self.proc = start_in_namespace(self.ns, script, log_path)
        return self.proc

    def run(self, *cmd):
        """Run a command in B's namespaces with the same hidden paths (for assertions)."""
        hide = "; ".join(f"mount -t tmpfs tmpfs {p}" for p in HIDDEN)
        return subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                self.ns,
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                f'{hide}; exec "$@"',
                "sh",
                *cmd,
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )

    def down(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        # the executor JVMs and Python workers the worker started are in its session too
        time.sleep(0.5)
        subprocess.run(["ip", "link", "del", self.vh], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)
