"""One write-ahead log: the accepted events of one (tenant, plan, imported stream) at a worker.

    wal = WriteAheadLog(dir, durability="os").open()
    first = wal.append(events)          # offsets first .. first+len-1, durable per the mode
    for first, events in wal.read(after=41): ...   # what follows offset 41, in order
    wal.commit(99)                      # segments wholly at or below 99 are deleted
    wal.metrics(); wal.close()

Offsets are per log, contiguous, 64-bit, and never reused after a restart: open() scans the
last segment for the next offset (a torn tail record is truncated with a warning). A corrupt
record (CRC32) is reported (log, `corrupt_records`, `last_corruption`) and its events are
never returned. Caps (`max_bytes`, `max_age_s` of the oldest uncommitted data; 0 = no cap)
make append() raise LogFullError: back-pressure, the caller answers 503."""

import collections
import fcntl
import logging
import os
import threading
import time
from dataclasses import dataclass

from receivers.wal import segment as seg
from receivers.wal.exceptions import LogFullError, WalConfigError, WalError
from receivers.wal.group_commit import GroupCommit

log = logging.getLogger(__name__)
DURABILITY_MODES = {
    "fsync": "fdatasync before an event is acknowledged (survives a machine crash)",
    "os": "written to the OS before it is acknowledged (survives a process crash)",
    "none": "kept in a memory buffer, written within 0.2 s (fastest; a crash loses the buffer)",
}
COMMIT_FILE = "committed"
ID_FILE = "log-id"  # random id made with the log: a wiped log is a new log to the spouts


@dataclass
class SegmentInfo:
    base: int  # first offset
    path: str
    size: int = 0
    end: int = 0  # offset after its last record
    first_ms: int = 0  # append time of its first record (0: empty)


class WriteAheadLog:
    """A segmented log in `directory` with a group-commit writer thread."""

    def __init__(
        self,
        directory,
        durability="os",
        segment_bytes=64 << 20,
        max_bytes=1 << 30,
        max_age_s=3600.0,
        name=None,
    ):
        if durability not in DURABILITY_MODES:
            raise WalConfigError(
                f"wal.durability {durability!r}: must be one of {', '.join(DURABILITY_MODES)}"
            )
        if segment_bytes < 1 or max_bytes < 0 or max_age_s < 0:
            raise WalConfigError(
                "wal.segment_bytes must be >= 1, wal.max_bytes and wal.max_age_s >= 0"
            )
        self.directory, self.durability = directory, durability
        self.segment_bytes, self.max_bytes, self.max_age_s = segment_bytes, max_bytes, max_age_s
        self.name = name or directory
        self._lock = threading.RLock()  # offsets, segment list, caps (and os-mode writes)
        self._segments, self._fh, self._dir_lock = [], None, None
        self.next_offset, self.committed, self.log_id = 0, -1, None
        self.corrupt_records, self.truncated_bytes, self.full_refusals = 0, 0, 0
        self.last_corruption, self._reported = None, set()
        self._times = collections.deque()  # (offset, append ms), at most one a second
        self._tail_times = []
        self._writer = GroupCommit(self._write, self._sync, durability, self.name)

    # -- open / close --
    def open(self):
        os.makedirs(self.directory, exist_ok=True)
        self._lock_directory()
        self.log_id = self._log_id()
        self.committed = self._read_committed()
        found = seg.list_segments(self.directory)
        for (base, path), nxt in zip(found, found[1:] + [(None, None)]):
            info = SegmentInfo(base, path, os.path.getsize(path), nxt[0] or base)
            info.first_ms = _first_ms(path)
            self._segments.append(info)
        if self._segments:
            self._recover_tail(self._segments[-1])
        else:
            self._segments.append(self._new_segment(max(0, self.committed + 1)))
        self.next_offset = self._segments[-1].end
        for s in self._segments[:-1]:
            self._note_time(s.base, s.first_ms)
        for offset, ms in self._tail_times:  # the last segment's records, scanned above
            self._note_time(offset, ms)
        self._trim_times()
        self._fh = open(self._segments[-1].path, "ab")
        self._writer.start(self.next_offset)
        return self

    def _recover_tail(self, info):
        found = seg.scan(info.path)
        for pos, why in found.corrupt:
            self._report(info.path, pos, why)
        if found.valid_end < found.size:
            log.warning(
                "write-ahead log %s: torn tail of %d bytes at byte %d of %s truncated "
                "(a write the crash interrupted; never acknowledged)",
                self.name,
                found.size - found.valid_end,
                found.valid_end,
                info.path,
            )
            self.truncated_bytes += found.size - found.valid_end
            seg.truncate(info.path, found.valid_end)
        info.size = found.valid_end
        info.end = found.records[-1].end_offset if found.records else info.base
        info.first_ms = found.records[0].append_ms if found.records else 0
        self._tail_times = [(r.first_offset, r.append_ms) for r in found.records]

    def close(self):
        self._writer.close()
        with self._lock:
            if self._fh is not None:
                self._fh.flush()
                self._fh.close()
                self._fh = None
            if self._dir_lock is not None:
                self._dir_lock.close()  # releases the flock
                self._dir_lock = None

    # -- append --
    def append(self, events):
        """Log `events` ([ts, values] pairs); returns the first offset once they are as durable
        as the mode says. LogFullError when over a cap (nothing is logged then)."""
        first, end = self.append_nowait(events)
        self._writer.wait(end)
        return first

    def append_nowait(self, events):
        """Assign offsets and queue the record; returns (first, end). Call wait(end) before
        acknowledging (the inflow queues the events between the two, in offset order)."""
        now_ms = int(time.time() * 1000)
        with self._lock:
            self._check_caps(now_ms)
            first = self.next_offset
            data = seg.encode_record(first, events, now_ms)  # may raise: no offset used then
            end = first + len(events)
            self._note_time(first, now_ms)
            if self.durability == "os":  # a write() is cheap: no hand-off to the writer thread
                self._write_now((data, first, end, now_ms))
            else:
                self._writer.submit((data, first, end, now_ms), end)
            self.next_offset = end
            self._segments[-1].size += len(data)  # counted now, so caps see pending bytes
        return first, end

    def _write_now(self, item):
        """durability os: write in the caller's thread (under the log lock); a failed write
        is cut off the file again and raised, so no offset is used by it."""
        pos = self._fh.tell()
        try:
            self._write([item])
        except OSError as exc:
            self._writer.errors += 1
            self._writer.last_error = f"{type(exc).__name__}: {exc}"
            try:
                self._fh.truncate(pos)
            except (OSError, ValueError):
                pass
            raise WalError(f"write-ahead log {self.name}: write failed: {exc}") from None
        self._writer.mark_written(item[2])

    def wait(self, end):
        self._writer.wait(end)

    def _check_caps(self, now_ms):
        reason = None
        size = self._uncommitted_bytes()
        if self.max_bytes and size >= self.max_bytes:
            reason = f"holds {size} bytes of uncommitted events (wal.max_bytes {self.max_bytes})"
        age = self._age_s(now_ms)
        if self.max_age_s and age >= self.max_age_s:
            reason = (
                f"oldest uncommitted events are {age:.0f} s old (wal.max_age_s {self.max_age_s:g})"
            )
        if reason:
            self.full_refusals += 1
            raise LogFullError(
                f"write-ahead log of {self.name} {reason}; retry later "
                f"(back-pressure, nothing was lost)"
            )

    def _uncommitted_bytes(self):
        """Bytes of the segments holding offsets no commit covers (segment granularity: a
        partly committed segment counts whole; the disk holds at most one segment more)."""
        *done, active = self._segments
        size = sum(s.size for s in done if s.end - 1 > self.committed)
        return size + (active.size if self.next_offset - 1 > self.committed else 0)

    def _note_time(self, offset, ms):
        """Sample (offset, append time) at most once a second: the age of the oldest
        uncommitted event is known within a second, in little memory."""
        if ms and (not self._times or ms - self._times[-1][1] >= 1000):
            self._times.append((offset, ms))

    def _trim_times(self):
        """Keep the last sample at or before the first uncommitted offset, and later ones."""
        while len(self._times) > 1 and self._times[1][0] <= self.committed + 1:
            self._times.popleft()

    def _age_s(self, now_ms):
        if self.next_offset - 1 <= self.committed or not self._times:
            return 0.0
        self._trim_times()
        return max(0.0, (now_ms - self._times[0][1]) / 1000.0)

    # -- writer thread callbacks --
    def _write(self, items):
        chunk, size = [], self._fh.tell()  # size: the active file plus the chunk
        for data, first, end, ms in items:
            active = self._segments[-1]
            if active.end > active.base and size >= self.segment_bytes:
                self._flush_chunk(chunk)
                chunk, size = [], 0
                self._roll(first)
                active = self._segments[-1]
            chunk.append(data)
            size += len(data)
            active.end = end
            active.first_ms = active.first_ms or ms
        self._flush_chunk(chunk)

    def _flush_chunk(self, chunk):
        if chunk:
            self._fh.write(b"".join(chunk))
            self._fh.flush()

    def _roll(self, base):
        if self.durability == "fsync":
            os.fdatasync(self._fh.fileno())
        self._fh.close()
        with self._lock:
            new = self._new_segment(base)
            self._segments.append(new)
        self._fh = open(new.path, "ab")
        self._resize()

    def _sync(self):
        os.fdatasync(self._fh.fileno())

    def _new_segment(self, base):
        path = os.path.join(self.directory, seg.segment_name(base))
        open(path, "ab").close()
        return SegmentInfo(base, path, 0, base)

    def _resize(self):
        """After a roll, sizes come from the files (pending bytes are in the active one)."""
        with self._lock:
            for s in self._segments[:-1]:
                s.size = os.path.getsize(s.path)
            pending = self._writer_pending_bytes()
            self._segments[-1].size = os.path.getsize(self._segments[-1].path) + pending

    def _writer_pending_bytes(self):
        return sum(len(item[0]) for item, _ in list(self._writer._pending))

    # -- read / commit --
    def read(self, after=-1, before=None):
        """Yield (first offset, events) for the events with offsets in (after, before), in
        order, from the files (pending writes are flushed first). Corrupt records are skipped
        and reported."""
        self._writer.flush()
        with self._lock:
            segments = [s for s in self._segments if s.end > after + 1 or s is self._segments[-1]]
        for info in segments:
            if before is not None and info.base >= before:
                return
            yield from self._read_segment(info, after, before)

    def _read_segment(self, info, after, before):
        try:
            found = seg.scan(info.path)
        except FileNotFoundError:  # committed and deleted meanwhile
            return
        for pos, why in found.corrupt:
            self._report(info.path, pos, why)
        for rec in found.records:
            lo, hi = max(rec.first_offset, after + 1), rec.end_offset
            if before is not None:
                hi = min(hi, before)
            if lo < hi:
                events = rec.events()
                yield lo, events[lo - rec.first_offset : hi - rec.first_offset]

    def commit(self, offset):
        """Events up to `offset` are safe downstream: delete segments wholly at or below it
        (never the active one); the committed offset survives restarts."""
        with self._lock:
            if offset <= self.committed:
                return 0
            self.committed = min(offset, self.next_offset - 1)
            self._trim_times()
            gone = [s for s in self._segments[:-1] if s.end - 1 <= self.committed]
            self._segments = [s for s in self._segments if s not in gone]
            self._write_committed()
        for s in gone:
            os.unlink(s.path)
        if gone:
            log.info(
                "write-ahead log %s: committed %d, deleted %d segment(s)",
                self.name,
                self.committed,
                len(gone),
            )
        return len(gone)

    def _lock_directory(self):
        """One writer per log: a second worker (or plan instance) on the same folder fails."""
        self._dir_lock = open(os.path.join(self.directory, "lock"), "a")
        try:
            fcntl.flock(self._dir_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._dir_lock.close()
            self._dir_lock = None
            raise WalError(
                f"write-ahead log {self.name} is in use by another worker or plan "
                f"(give each worker its own worker.data_dir)"
            ) from None

    def _log_id(self):
        path = os.path.join(self.directory, ID_FILE)
        try:
            with open(path) as fh:
                found = fh.read().strip()
            if found:
                return found
        except FileNotFoundError:
            pass
        new = os.urandom(6).hex()
        with open(path + ".tmp", "w") as fh:
            fh.write(new + "\n")
        os.replace(path + ".tmp", path)
        return new

    def save_mark(self, name, offset):
        """Keep a small named offset next to the log (atomic replace; e.g. `sent`)."""
        path = os.path.join(self.directory, f"mark-{name}")
        with open(path + ".tmp", "w") as fh:
            fh.write(f"{offset}\n")
        os.replace(path + ".tmp", path)

    def load_mark(self, name):
        """A mark saved by save_mark, or None."""
        try:
            with open(os.path.join(self.directory, f"mark-{name}")) as fh:
                return int(fh.read().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _read_committed(self):
        try:
            with open(os.path.join(self.directory, COMMIT_FILE)) as fh:
                return int(fh.read().strip() or -1)
        except (FileNotFoundError, ValueError):
            return -1

    def _write_committed(self):
        path = os.path.join(self.directory, COMMIT_FILE)
        with open(path + ".tmp", "w") as fh:
            fh.write(f"{self.committed}\n")
        os.replace(path + ".tmp", path)

    def _report(self, path, pos, why):
        if (path, pos) in self._reported:  # a replay reads it again: counted once
            return
        self._reported.add((path, pos))
        self.corrupt_records += 1
        self.last_corruption = f"{os.path.basename(path)}: {why}"
        log.error(
            "write-ahead log %s: corrupt record skipped (never replayed): %s",
            self.name,
            self.last_corruption,
        )

    def metrics(self):
        now_ms = int(time.time() * 1000)
        with self._lock:
            return {
                "durability": self.durability,
                "size_bytes": sum(s.size for s in self._segments),
                "uncommitted_bytes": self._uncommitted_bytes(),
                "segments": len(self._segments),
                "oldest_uncommitted_age_s": round(self._age_s(now_ms), 3),
                "appended_offset": self.next_offset - 1,
                "committed_offset": self.committed,
                "corrupt_records": self.corrupt_records,
                "last_corruption": self.last_corruption,
                "truncated_bytes": self.truncated_bytes,
                "full_refusals": self.full_refusals,
                "write_errors": self._writer.errors,
                "last_error": self._writer.last_error,
            }


def _first_ms(path):
    with open(path, "rb") as fh:
        head = fh.read(seg.HEADER.size)
    return seg.HEADER.unpack(head)[4] if len(head) == seg.HEADER.size else 0
