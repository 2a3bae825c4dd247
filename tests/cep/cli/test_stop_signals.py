"""`cep manager` and `cep worker` stop on SIGTERM always, and on SIGINT unless they started
with SIGINT ignored (nohup, a background job, bin/cep.sh's children)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# prints "ready", then "stopped by <signal>" when the stop event is set, or "still running"
# after the first signal was not a stop
CHILD = r"""
import signal, sys, threading
from cep.cli.stop_signals import stop_on_signals
stop = threading.Event()
stop_on_signals(stop)
print("ready", flush=True)
for line in sys.stdin:
    print("stopped" if stop.wait(float(line)) else "still running", flush=True)
"""


def _child(sigint):
    return subprocess.Popen(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )


def _after(proc, sig, wait_s):
    proc.send_signal(sig)
    proc.stdin.write(f"{wait_s}\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


def test_sigint_stops_a_process_that_started_with_sigint_at_its_default():
    proc = _child(signal.SIG_DFL)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert _after(proc, signal.SIGINT, 60) == "stopped"
    finally:
        proc.kill()
        proc.wait()


def test_sigint_ignored_at_start_stays_ignored_and_sigterm_still_stops():
    proc = _child(signal.SIG_IGN)
    try:
        assert proc.stdout.readline().strip() == "ready"
        # the SIGINT is delivered (and ignored) before the child reads the next line
        assert _after(proc, signal.SIGINT, 0.5) == "still running"
        assert proc.poll() is None
        assert _after(proc, signal.SIGTERM, 60) == "stopped"
    finally:
        proc.kill()
        proc.wait()
