"""The zero-loss scenario from the outside, with the CLI: a manager and a worker started as
`cep manager` / `cep worker`, the embedded Spark cluster, and a plan whose execution group has
two instances behind a shuffle. For `--duration` s a POST of `--batch` events `[[id, 1.0], ...]`
(ids counting up) goes to the worker every `--every` s; `--kill-at` s in, the last
`pyspark.daemon` child process `ps` lists (a topology task) is killed with SIGKILL. Then the
script waits until the plan's file sink stops growing and counts the ids in it.

Each run redeploys the plan with a new sink file; the system is started once. Prints one line
per run (accepted, distinct ids at the sink, lost, duplicate rows, seconds from the kill until
the sink held every accepted id) and a summary; exits 1 if any run lost or duplicated.

    .venv/bin/python benchmarks/zero_loss_scenario.py --runs 20
"""

import argparse
import collections
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CEP = os.path.join(os.path.dirname(sys.executable), "cep")
PLAN = """@Plan:name('HotRooms')
@Import('Temps:1.0.0')
define stream Temps (room int, temp double);
@Export('Hot:1.0.0') @sink(type='file', path='{path}')
define stream Hot (room int, temp double);
@dist(parallel='2', execGroup='f')
from Temps select room, temp insert into Hot;
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class System:
    """`cep manager` and `cep worker` processes on free ports, in a temporary folder."""

    def __init__(self, root):
        self.root, self.procs = root, []
        self.http, self.registry, self.worker_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.http}"
        self.env = {**os.environ, "CEP_ADMIN_PASSWORD": "scenario-pass-1"}
        self.env.pop("CEP_TOKEN", None)
        self._spawn(
            "manager.log",
            [
                CEP,
                "manager",
                "--data-dir",
                f"{root}/manager",
                "--http-port",
                str(self.http),
                "--registry-port",
                str(self.registry),
                "--advertised-host",
                "127.0.0.1",
                "--kill-on-exit",
            ],
        )
        self._wait(
            lambda: urllib.request.urlopen(f"{self.url}/console/login", timeout=2),
            60,
            "the manager",
        )
        token = subprocess.run(
            [
                CEP,
                "login",
                "--manager",
                self.url,
                "--user",
                "admin",
                "--password-stdin",
                "--print-token",
            ],
            input="scenario-pass-1\n",
            capture_output=True,
            text=True,
            env=self.env,
            check=True,
        )
        self.env["CEP_TOKEN"] = token.stdout.strip()
        self.env["CEP_MANAGER_URL"] = self.url
        self.state = f"{root}/worker"
        self._spawn(
            "worker.log",
            [
                CEP,
                "worker",
                "--manager",
                self.url,
                "--registry",
                f"tcp://127.0.0.1:{self.registry}",
                "--id",
                "w1",
                "--advertised-host",
                "127.0.0.1",
                "--http-port",
                str(self.worker_port),
                "--zmq-port",
                "-1",
                "--cluster-secret-file",
                f"{root}/manager/security/cluster-secret",
            ],
            {"CEP_WORKER_STATE_DIR": self.state},
        )
        self.events = f"http://127.0.0.1:{self.worker_port}/events/-1234/HotRooms/Temps"

    def _spawn(self, log, argv, env=None):
        with open(os.path.join(self.root, log), "w") as out:
            self.procs.append(
                subprocess.Popen(
                    argv,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env={**self.env, **(env or {})},
                    cwd=ROOT,
                )
            )

    @staticmethod
    def _wait(probe, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            try:
                if probe():
                    return
            except (OSError, ValueError, subprocess.CalledProcessError):
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"{what} not ready within {timeout} s")
            time.sleep(0.5)

    def cep(self, *args):
        return subprocess.run(
            [CEP, *args], capture_output=True, text=True, env=self.env, cwd=ROOT, check=True
        ).stdout

    def deploy(self, sink_name):
        plan = os.path.join(self.root, "HotRooms.siddhiql")
        with open(plan, "w") as fh:
            fh.write(PLAN.format(path=sink_name))
        shown = subprocess.run(
            [CEP, "plan", "show", "HotRooms"], capture_output=True, env=self.env, cwd=ROOT
        )
        self.cep(
            "plan",
            "edit" if shown.returncode == 0 else "add",
            *(["HotRooms"] if shown.returncode == 0 else []),
            plan,
        )

        def active():
            st = json.loads(self.cep("plan", "status", "HotRooms", "--json"))
            inflow = st.get("inflow") or {}
            return (
                st.get("state") == "ACTIVE"
                and st["outflow"].get("connected", 0) >= 1
                and any(w.get("connected") for w in inflow.values())
            )

        self._wait(active, 300, "the plan")

    def sink_file(self, name):
        return os.path.join(self.state, "tenants", "-1234", "files", name)

    def close(self):
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def daemon_children():
    """pyspark.daemon children (the Python workers that run the tasks), in pid order."""
    daemons = [
        p
        for p in psutil.process_iter(["cmdline"])
        if "pyspark.daemon" in " ".join(p.info["cmdline"] or [])
    ]
    pids = {p.pid for p in daemons}
    return sorted(p.pid for p in daemons if p.ppid() in pids)


def read_ids(path):
    """Ids of the complete lines of the sink file (not a line still being written)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return []
    return [json.loads(line)["data"][0] for line in text.split("\n")[:-1] if line.strip()]


def one_run(system, run, args, first_id):
    sink = f"hot-{run}.jsonl"
    system.deploy(sink)
    path = system.sink_file(sink)
    accepted, next_id, killed = [], first_id, {}
    start = time.monotonic()

    def kill():
        children = daemon_children()
        if children:
            killed["pid"], killed["at"] = children[-1], time.monotonic()
            os.kill(children[-1], 9)

    timer = threading.Timer(args.kill_at, kill)
    timer.start()
    tick = start
    while time.monotonic() - start < args.duration:
        ids = list(range(next_id, next_id + args.batch))
        next_id += args.batch
        req = urllib.request.Request(
            system.events,
            json.dumps([[i, 1.0] for i in ids]).encode(),
            {"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                if json.loads(resp.read()).get("accepted") == len(ids):
                    accepted.extend(ids)
        except (urllib.error.URLError, OSError, ValueError):
            pass
        tick += args.every
        time.sleep(max(0.0, tick - time.monotonic()))
    timer.join()
    ended = time.monotonic()
    want, complete, last, stable_since = set(accepted), None, -1, time.monotonic()
    while time.monotonic() - stable_since < args.settle:
        ids = read_ids(path)
        if complete is None and want <= set(ids):
            complete = time.monotonic()
        if len(ids) != last:
            last, stable_since = len(ids), time.monotonic()
        time.sleep(0.5)
    ids = read_ids(path)
    got = collections.Counter(ids)
    lost = len(want - set(got))
    dups = sum(c - 1 for c in got.values() if c > 1)
    return {
        "run": run,
        "accepted": len(accepted),
        "distinct": len(got),
        "lost": lost,
        "duplicates": dups,
        "extra": len(set(got) - want),
        "killed_pid": killed.get("pid"),
        "sink_complete_after_send_end_s": None if complete is None else round(complete - ended, 1),
    }, next_id


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--kill-at", type=float, default=20.0)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--every", type=float, default=0.05)
    ap.add_argument(
        "--settle",
        type=float,
        default=10.0,
        help="seconds without growth after which the sink counts as done",
    )
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="zero-loss-")
    subprocess.run([CEP, "topology", "cluster", "start"], cwd=ROOT, check=True, capture_output=True)
    system = System(root)
    results, next_id = [], 0
    try:
        for run in range(1, args.runs + 1):
            result, next_id = one_run(system, run, args, next_id)
            results.append(result)
            print(json.dumps(result), flush=True)
    finally:
        system.close()
    bad = [r for r in results if r["lost"] or r["duplicates"] or r["extra"]]
    took = sorted(
        r["sink_complete_after_send_end_s"]
        for r in results
        if r["sink_complete_after_send_end_s"] is not None
    )
    print(
        f"{len(results) - len(bad)} of {len(results)} runs lost nothing and wrote nothing "
        f"twice; {sum(r['accepted'] for r in results)} events accepted in all; every "
        f"accepted id at the sink a median {took[len(took) // 2] if took else '?'} s after "
        f"the sending ended (logs in {root}; the topology's driver.log names each task "
        f"killed)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
