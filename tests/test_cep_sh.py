"""bin/cep.sh, the README's start command, as a user runs it. Its options: --help prints
usage and starts nothing, an unknown option is refused (exit 2). The whole system (slow: the
embedded Spark cluster, a manager, a worker, the sample plan): it comes up with the plan ACTIVE, and when the
manager process dies it starts it again, instead of tearing the worker and Spark down; the
restarted manager adopts the running topology. SIGTERM stops everything."""

import os
import re
import signal
import subprocess
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.conftest import free_port
from tests.manager.manager_helpers import poll

ROOT = Path(__file__).resolve().parent.parent


def run_cep_sh(*args, tmp_path):
    env = {**os.environ, "CEP_RUN_DIR": str(tmp_path / "run")}
    return subprocess.run(
        ["bash", str(ROOT / "bin" / "cep.sh"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_and_starts_nothing(flag, tmp_path):
    done = run_cep_sh(flag, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: bin/cep.sh")
    assert "--offline" in done.stdout and "--setup" in done.stdout
    assert not (tmp_path / "run").exists()  # no run folder, no password file: nothing started


@pytest.mark.parametrize("args", [["--bogus"], ["start"], ["--offline", "extra"]])
def test_unknown_options_print_usage_and_exit_2(args, tmp_path):
    done = run_cep_sh(*args, tmp_path=tmp_path)
    assert done.returncode == 2
    assert "Usage: bin/cep.sh" in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "run").exists()


@pytest.mark.slow  # the script installs the project into .venv first when it is not there yet
def test_worker_script_help_prints_the_worker_options(tmp_path):
    done = subprocess.run(
        ["bash", str(ROOT / "bin" / "cep-worker.sh"), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: cep worker" in done.stdout and "--manager" in done.stdout


def wait_for(cond, timeout, what, log=None):
    """poll(); on a miss the failure shows the end of bin/cep.sh's output (log: a Path)."""
    try:
        return poll(cond, timeout, 0.5, what)
    except pytest.fail.Exception:
        if log is None:
            raise
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no output)"
        pytest.fail(f"{what} not met within {timeout} s; the end of bin/cep.sh's output:\n{tail}")


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the waits below are generous for a loaded machine; they add up
def test_cep_sh_restarts_a_crashed_manager_and_a_sigterm_stops_everything(tmp_path):
    """A kill -9 of the manager: the script starts it again and the system stays up; then
    `kill -TERM` to the script stops everything it started, the new manager's work too."""
    mark = os.urandom(8).hex()
    ports = {
        "CEP_HTTP_PORT": free_port(),
        "CEP_REGISTRY_PORT": free_port(),
        "CEP_WORKER_HTTP_PORT": free_port(),
    }
    env = {
        **os.environ,
        **{k: str(v) for k, v in ports.items()},
        "CEP_SH_TEST_MARK": mark,
        "CEP_RUN_DIR": str(tmp_path / "run"),
        "CEP_SPARK_STATE_DIR": str(tmp_path / "spark"),
        "CEP_ADMIN_PASSWORD": "cep-sh-test-pass",
    }
    env.pop("CEP_CLUSTER_SECRET", None)  # the manager makes its own, as for a user
    env.pop("CEP_TOKEN", None)
    log = open(tmp_path / "cep.log", "w")
    proc = subprocess.Popen(
        ["bash", str(ROOT / "bin" / "cep.sh")],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    text = lambda: (tmp_path / "cep.log").read_text(errors="replace")  # noqa: E731
    url = f"http://127.0.0.1:{ports['CEP_HTTP_PORT']}"
    try:
        # generous: on a loaded machine the cluster, the manager and the plan take minutes
        wait_for(
            lambda: "the local system is up" in text() or proc.poll() is not None,
            600,
            "bin/cep.sh to bring the system up",
            tmp_path / "cep.log",
        )
        assert proc.poll() is None, text()[-3000:]

        def manager_pid():
            for p in psutil.process_iter(["cmdline"]):
                cmd = " ".join(p.info["cmdline"] or [])
                if "cep manager" in cmd and str(tmp_path / "run") in cmd:
                    return p.pid
            return None

        first = manager_pid()
        assert first is not None
        os.kill(first, signal.SIGKILL)
        wait_for(
            lambda: re.search(r"the manager exited \(status 137\); starting it again", text()),
            30,
            "the restart notice",
        )
        wait_for(
            lambda: manager_pid() not in (None, first),
            60,
            "a new manager process",
            tmp_path / "cep.log",
        )

        def login_page():
            try:
                with urllib.request.urlopen(f"{url}/console/login", timeout=3) as resp:
                    return resp.status == 200
            except OSError:
                return False

        wait_for(login_page, 120, "the restarted manager to answer", tmp_path / "cep.log")
        cep = str(ROOT / ".venv" / "bin" / "cep")
        token = subprocess.run(
            [
                cep,
                "login",
                "--manager",
                url,
                "--user",
                "admin",
                "--password-stdin",
                "--print-token",
            ],
            env=env,
            text=True,
            input="cep-sh-test-pass\n",
            capture_output=True,
            check=True,
        )
        env["CEP_TOKEN"] = token.stdout.strip()

        def active():
            try:
                out = subprocess.run(
                    [cep, "plan", "status", "StockAnalysis", "--manager", url],
                    env=env,
                    text=True,
                    capture_output=True,
                    timeout=60,
                )
            except subprocess.TimeoutExpired:
                return False  # the manager is busy: ask again
            return "ACTIVE" in out.stdout and "all established" in out.stdout

        wait_for(
            active, 240, "StockAnalysis ACTIVE under the restarted manager", tmp_path / "cep.log"
        )
        assert proc.poll() is None  # the script, the worker and Spark stayed up
        proc.send_signal(signal.SIGTERM)
        try:  # generous, as for Ctrl-C below
            code = proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            pytest.fail(f"bin/cep.sh still running 600 s after SIGTERM:\n{text()[-3000:]}")
        assert code == 143, text()[-3000:]
        wait_for(lambda: not marked_processes(mark), 60, "every process of bin/cep.sh to end")
    finally:
        left = _kill_marked(mark)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    assert not left, f"left running after SIGTERM: {left}"
    assert "[cep] stopped" in text()


def _kill_marked(mark):
    """SIGKILL what is left of a test's bin/cep.sh (cleaning up after a failure); returns it."""
    left = marked_processes(mark)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


def marked_processes(mark):
    """The live processes whose environment carries CEP_SH_TEST_MARK=mark: everything bin/cep.sh
    started, down to Spark's daemons, drivers and executors (they inherit the environment,
    even those that leave the script's session), as {pid: command line}."""
    found = {}
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.environ().get("CEP_SH_TEST_MARK") == mark and p.status() != psutil.STATUS_ZOMBIE:
                found[p.pid] = " ".join(p.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _sigint_at_default():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.timeout(1500)  # its own deadlines (start, stop) come first, with the script's output
def test_a_ctrl_c_without_a_terminal_stops_everything_cep_sh_started(tmp_path):
    """As `setsid bin/cep.sh < /dev/null > log 2>&1 &`: no terminal, no job control. Stopped
    with SIGINT to its whole process group as a terminal's Ctrl-C sends it (the restart test
    above stops it with `kill -TERM` to the script). After the script exits, none of the
    manager, worker, feed, Spark master and worker, the topology's driver and executors is
    left."""
    mark = os.urandom(8).hex()
    ports = {
        "CEP_HTTP_PORT": free_port(),
        "CEP_REGISTRY_PORT": free_port(),
        "CEP_WORKER_HTTP_PORT": free_port(),
    }
    env = {
        **os.environ,
        **{k: str(v) for k, v in ports.items()},
        "CEP_SH_TEST_MARK": mark,
        "CEP_RUN_DIR": str(tmp_path / "run"),
        "CEP_SPARK_STATE_DIR": str(tmp_path / "spark"),
        "CEP_ADMIN_PASSWORD": "cep-sh-test-pass",
    }
    env.pop("CEP_CLUSTER_SECRET", None)
    env.pop("CEP_TOKEN", None)
    log = open(tmp_path / "cep.log", "w")
    # An interactive shell starts it with SIGINT at its default; this test may itself run
    # with SIGINT ignored (a CI job started in the background), which the script would inherit
    # and could not trap: Ctrl-C would then reach only the children.
    proc = subprocess.Popen(
        ["bash", str(ROOT / "bin" / "cep.sh")],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_sigint_at_default,
    )
    text = lambda: (tmp_path / "cep.log").read_text(errors="replace")  # noqa: E731
    try:
        # generous: on a loaded machine the cluster, the manager and the plan take minutes
        wait_for(
            lambda: "the local system is up" in text() or proc.poll() is not None,
            600,
            "bin/cep.sh to bring the system up",
            tmp_path / "cep.log",
        )
        assert proc.poll() is None, text()[-3000:]
        running = " ".join(marked_processes(mark).values())
        for part in (
            "cep manager",
            "cep worker",
            "cep feed",
            "deploy.master.Master",
            "deploy.worker.Worker",
            "SparkSubmit",
            "executor",
        ):
            assert part.lower() in running.lower(), f"{part} not found among {running[:3000]}"
        os.killpg(proc.pid, signal.SIGINT)
        try:  # generous: stopping drains the topology and stops Spark, slowly on a loaded machine
            code = proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"bin/cep.sh still running 600 s after Ctrl-C:\n{text()[-3000:]}\n"
                f"left: {marked_processes(mark)}"
            )
        assert code == 130, text()[-3000:]
        wait_for(lambda: not marked_processes(mark), 60, "every process of bin/cep.sh to end")
    finally:
        left = _kill_marked(mark)  # clean up after a failure, then report it
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    assert not left, f"left running after Ctrl-C: {left}"
    assert "[cep] stopped" in text()
