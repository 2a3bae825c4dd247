"""A source's broker position (a JetStream stream sequence, Kafka partition offsets), kept in
a small JSON file under the worker's state folder. It is written (atomically: a temporary
file renamed over the old one) after the ingest router took a batch and before the broker
is acknowledged, so a restarted source skips what it handed on before, even when the broker
redelivers it."""

import json
import os
import re

from receivers.validation import StreamKey


class PositionFile:
    """load() -> the saved value or None; save(value)."""

    def __init__(self, path):
        self.path = path

    @classmethod
    def for_source(cls, state_dir, key: StreamKey, name: str):
        """The file of source `name` (type and its durable name) of stream `key`, or a
        position kept in memory only when there is no state folder."""
        if not state_dir:
            return MemoryPosition()
        parts = [_safe(str(p)) for p in (key.tenant, key.plan, key.stream)]
        folder = os.path.join(state_dir, "sources", *parts)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        return cls(os.path.join(folder, _safe(name) + ".json"))

    def load(self):
        try:
            with open(self.path, encoding="utf-8") as fh:
                return json.load(fh)["position"]
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, OSError):
            return None

    def save(self, value):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"position": value}, fh)
        os.replace(tmp, self.path)


class MemoryPosition:
    def __init__(self):
        self.value = None

    def load(self):
        return self.value

    def save(self, value):
        self.value = value


def _safe(text):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:120] or "_"
