"""File sink: JSON lines `{"stream","timestamp","data"}` appended to `path`, flushed per batch."""
import os
import threading

from publishers.base import Sink, batch_json_lines
from publishers.exceptions import SinkWriteError


class FileSink(Sink):
    """`@sink(type='file', path='/var/out/alerts.jsonl', append='true')`."""
    type = "file"

    def __init__(self, stream, options):
        super().__init__(stream, options)
        self.path = str(self.option("path", required=True))
        self.append = str(self.option("append", "true")).lower() != "false"
        self._fh = None
        self._lock = threading.Lock()

    def _file(self):
        if self._fh is None:
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
            self._fh = open(self.path, "a" if self.append else "w", encoding="utf-8")
        return self._fh

    def write_batch(self, events):
        text = batch_json_lines(self.stream, events)
        with self._lock:
            try:
                fh = self._file()
                fh.write(text)
                fh.flush()
            except OSError as exc:
                raise SinkWriteError(f"file sink {self.path}: {exc}") from None
        self.written += len(events)

    def close(self):
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def describe(self):
        return {**super().describe(), "path": self.path}
