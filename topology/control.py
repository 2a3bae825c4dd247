"""TopologyHandle: the launcher's side of a running topology's control channel.

The driver answers ZeroMQ REQ/REP requests (msgpack dicts) on the endpoint it writes to
``driver.json`` in the run directory; once it ended, ``final.json`` holds the last status.
Every request carries the topology's control secret (``launch.json``, mode 0600, in a run
directory of mode 0700): a local user who finds the port cannot stop another's topology.
"""

import hmac
import json
import os
import secrets
import signal
import time
from pathlib import Path

import zmq

from cep.security import curve
from cep.protocol.frames import pack_message, unpack_message
from topology.exceptions import ControlError, WaitTimeoutError
from topology.metrics import by_component

ENDED = ("KILLED", "FAILED")


def pid_alive(pid):
    """True when the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def _read(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def run_dir_alive(run_dir):
    """True while the spark-submit process recorded in run_dir runs."""
    info = _read(Path(run_dir) / "submit.json")
    if info and info.get("pool") and (Path(run_dir) / "final.json").exists():
        return False  # a topology of a shared application ended; the app runs on
    return bool(info) and pid_alive(info["pid"])


def new_control_secret():
    """A secret for one driver's (or shared application's) control socket: launch.json
    (mode 0600, in a 0700 run dir) carries it to the driver and to the launcher's clients."""
    return secrets.token_hex(16)


def authorized(request, secret):
    """True when a control request carries the socket's secret (always, without one)."""
    if not secret:
        return True
    given = request.get("secret") if isinstance(request, dict) else None
    return isinstance(given, str) and hmac.compare_digest(given, secret)


def private_dir(path):
    """Make `path` (and it only) readable by its owner alone: 0700."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


class TopologyHandle:
    """Status, metrics, activate, deactivate and kill of one submitted topology."""

    def __init__(self, name, run_dir, process=None):
        self.name, self.run_dir, self.process = name, Path(run_dir), process

    def _alive(self):
        if self.process is not None:
            return self.process.poll() is None
        return run_dir_alive(self.run_dir)

    def request(self, message, timeout=5.0):
        """Send one control request to the driver and return its reply."""
        info = _read(self.run_dir / "driver.json")
        if not info or not pid_alive(info["pid"]):
            raise ControlError(f"topology {self.name!r}: no running driver")
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        launch = _read(self.run_dir / "launch.json") or {}
        curve.client(
            sock, curve.LinkSecurity.from_options(launch.get("options", {}).get("security")).curve
        )
        try:
            sock.connect(info["control"])
            sock.send(pack_message({**message, "secret": launch.get("control_secret")}))
            if not sock.poll(int(timeout * 1000)):
                raise ControlError(
                    f"topology {self.name!r}: driver at {info['control']} did not "
                    f"answer {message.get('cmd')!r} within {timeout} s"
                )
            return unpack_message(sock.recv())
        finally:
            sock.close()

    def status(self):
        """{"name", "status", "reason", ...}; status is one of SUBMITTED, WAITING_FOR_SLOTS,
        ACTIVE, INACTIVE, KILLED, FAILED."""
        final = _read(self.run_dir / "final.json")
        if final:
            return final
        if self._alive():
            try:
                return self.request({"cmd": "status"})
            except ControlError as exc:
                return {"name": self.name, "status": "SUBMITTED", "reason": str(exc)}
        return {
            "name": self.name,
            "status": "FAILED",
            "reason": "the driver exited without a final status: " + self.log_tail(),
        }

    def log_tail(self, lines=5):
        """The last lines of the driver log that mention an error (for FAILED reasons)."""
        try:
            text = (self.run_dir / "driver.log").read_text(errors="replace").splitlines()
        except OSError:
            return "(no driver log)"
        errors = [line for line in text if "Error" in line or "Exception" in line]
        return " | ".join((errors or text)[-lines:])

    def metrics(self):
        """{"status": ..., "components": {id: {totals..., "instances": [...]}}}."""
        reply = self.request({"cmd": "metrics"})
        return {"status": reply["status"], "components": by_component(reply["instances"])}

    def activate(self):
        """Resume the spouts."""
        return self.request({"cmd": "activate"})

    def deactivate(self):
        """Pause the spouts (bolts keep draining their inputs)."""
        return self.request({"cmd": "deactivate"})

    def kill(self, wait_secs=None, timeout=60.0):
        """Deactivate, drain for up to wait_secs, stop the application; returns final status."""
        message = {"cmd": "kill"}
        if wait_secs is not None:
            message["wait"] = float(wait_secs)
        deadline = time.monotonic() + (wait_secs or 0) + timeout
        while self._alive() and time.monotonic() < deadline:
            try:  # the driver may still be starting: retry until it answers
                self.request(message)
                break
            except ControlError:
                time.sleep(0.2)
        while self._alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        if self._alive():
            self._terminate()
        return self.status()

    def _terminate(self):
        """Last resort: stop the spark-submit process group this launcher started."""
        info = _read(self.run_dir / "submit.json")
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(info["pid"], sig)
            except OSError:
                return
            end = time.monotonic() + 5
            while self._alive() and time.monotonic() < end:
                time.sleep(0.1)
            if not self._alive():
                return

    def wait_for(self, statuses, timeout=60.0, interval=0.2):
        """Poll until the status is one of ``statuses``; raise WaitTimeoutError otherwise."""
        wanted = {statuses} if isinstance(statuses, str) else set(statuses)
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            if status["status"] in wanted:
                return status
            if status["status"] in ENDED or time.monotonic() >= deadline:
                raise WaitTimeoutError(
                    f"topology {self.name!r} is {status['status']} "
                    f"({status.get('reason', '')}), not {sorted(wanted)} "
                    f"after {timeout} s"
                )
            time.sleep(interval)

    def __repr__(self):
        return f"TopologyHandle({self.name!r})"
