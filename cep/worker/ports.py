"""The worker's port book: the port each plan's publisher service last bound, kept in
`<worker.state_dir>/<worker id>/ports.json`, so that a restarted worker binds the same ports.
Publisher bolts' PUSH sockets then reconnect to it by themselves (ZeroMQ retries the address)
and frames they queued meanwhile are delivered."""

import json
import logging
import os
import threading

log = logging.getLogger(__name__)


class PortBook:
    """{"tenant/plan": port} in a JSON file; a missing or unreadable file is an empty book."""

    def __init__(self, state_dir, worker_id):
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in worker_id)
        self.path = os.path.join(state_dir, safe, "ports.json")
        self._lock = threading.Lock()
        self._ports = self._read()

    def _read(self):
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            return {str(k): int(v) for k, v in data.items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            log.warning("port book %s unreadable (%s); starting empty", self.path, exc)
            return {}

    def get(self, key):
        """The remembered port of `key`, or 0 (any free port)."""
        return self._ports.get(key, 0)

    def put(self, key, port):
        """Remember `port` for `key` (atomic file replace)."""
        with self._lock:
            if self._ports.get(key) == port:
                return
            self._ports[key] = port
            try:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                tmp = self.path + ".tmp"
                with open(tmp, "w", encoding="utf-8") as fh:
                    json.dump(self._ports, fh, indent=1, sort_keys=True)
                os.replace(tmp, self.path)
            except OSError as exc:
                log.warning("cannot save port book %s: %s", self.path, exc)
