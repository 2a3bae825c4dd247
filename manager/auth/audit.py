"""The audit log: one JSON line per security-relevant action in `<data>/audit.jsonl` (0600),
also sent to the logger `manager.audit`. Fields: time, user, tenant, action, target, outcome,
remote (address). Passwords and tokens are never passed here."""

import json
import logging
import os
import threading
import time
from pathlib import Path

log = logging.getLogger("manager.audit")


class AuditLog:
    """Append-only JSON lines; safe across threads of one process."""

    def __init__(self, data_dir):
        self.path = Path(data_dir) / "audit.jsonl"
        self._lock = threading.Lock()

    def record(self, action, outcome="ok", user=None, tenant=None, target=None, remote=None):
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "user": user,
            "tenant": tenant,
            "action": action,
            "target": target,
            "outcome": outcome,
            "remote": remote,
        }
        line = json.dumps(entry, sort_keys=False)
        log.info("%s", line)
        with self._lock:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8") as fh:
                    fh.write(line + "\n")
            except OSError as exc:  # the action itself went through: say so, keep serving
                log.error("cannot write the audit log %s: %s", self.path, exc)
        return entry

    def lines(self):
        """Every entry so far (tests, the console)."""
        try:
            with open(self.path, encoding="utf-8") as fh:
                return [json.loads(line) for line in fh if line.strip()]
        except FileNotFoundError:
            return []
