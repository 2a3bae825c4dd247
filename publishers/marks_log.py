"""The duplicate marks of at-least-once output on disk (publishers/delivery.py `Dedup`), so that
a worker process that restarts (killed, then started on the same state dir) still knows which
results it wrote before, and drops them when a restored topology replays them.

One file per plan (`<worker data dir>/marks/<tenant>/<plan>.marks`): a header line, then
records `[u32 length][u32 crc32 of the payload][msgpack payload]`, little-endian:

    ["s", [[publisher, stream, epoch, seq], ...], [[publisher, stream, lane, last, holes], ...]]
        every mark at once (the first record after a compaction)
    ["t", publisher, stream, runs, fresh]   a version 5 frame reaches the sinks: its runs
    ["q", publisher, stream, epoch, first, n, fresh]   a version 3 frame reaches the sinks
    ["c"]                                   the sinks took the frame of the record before
    ["f", publisher]                        the publisher started fresh: its marks go

The order per frame is: the frame's record is written (before the sinks get the frame), the
sinks take it, the confirmation `c` is written, and the publisher service acknowledges the
frame only once the confirmation is durable. Durability `fsync`: a group commit
(receivers/wal/group_commit.py) fdatasyncs everything written since its last round, one
fdatasync for all the frames that arrived meanwhile, and the acknowledgements wait for it
(survives a machine crash); `os`: written to the OS before the acknowledgement (survives a
worker process crash, not the machine's). Records are written with one write() each, so a
killed process leaves whole records behind.

Loading replays the records in order, which repeats the marks' take() calls and so rebuilds
the same marks (holes included). A frame record without its confirmation means the worker
died while its sinks took that frame: the results may be at the sinks already or not, so they
are not marked (a replay writes them again: at-least-once, never a loss), and they are counted
(`uncertain`) and logged. That is the one frame whose results a restart may write twice; a
machine crash may also lose the records of the last group commit (frames not acknowledged
yet, which the publisher bolt sends again).

The file is rewritten (compacted) to one snapshot record when it is opened and whenever what
was appended since the last snapshot outgrows both `compact_bytes` and four times the
snapshot: a temporary file, fsynced, renamed over the old one. A publisher's fresh start
forgets its marks, so the next snapshot no longer holds them. A file that is unreadable from
some record on (torn, bad checksum, not a marks file) keeps what comes before that record; the
rest is logged and the file is moved aside (`.corrupt`) before the rewrite. Write failures
(disk full) are logged and counted, never raised: the marks then stay in memory only, and the
service still acknowledges (a restart may then write those results twice)."""

import logging
import os
import struct
import threading
import time
import zlib
from typing import Any, Optional

import msgpack

from receivers.wal.exceptions import WalError
from receivers.wal.group_commit import GroupCommit

log = logging.getLogger(__name__)

MAGIC = b"CEP duplicate marks 1\n"
HEAD = struct.Struct("<II")  # payload length, crc32
MAX_RECORD = 64 * 1024 * 1024  # a longer length field is damage, not a record
DURABILITIES = ("fsync", "os")


def _record(payload: Any) -> bytes:
    body: bytes = msgpack.packb(payload, use_bin_type=True)
    return HEAD.pack(len(body), zlib.crc32(body)) + body


CONFIRM = _record(["c"])


class MarksLog:
    """The marks file of one plan's Dedup: `open(dedup)` loads it into `dedup` and keeps
    appending; `frame_v5`/`frame_v3` before the sinks, `confirm` after; `ticket()` and
    `durable()` (logical byte offsets) tell the service when it may acknowledge."""

    def __init__(
        self,
        path: str,
        durability: str = "fsync",
        label: str = "",
        compact_bytes: int = 1024 * 1024,
    ) -> None:
        if durability not in DURABILITIES:
            raise ValueError(f"marks durability {durability!r} is not one of {DURABILITIES}")
        self.path, self.durability, self.label = path, durability, label or path
        self.compact_bytes = compact_bytes
        self.dedup: Any = None
        self._fd: Optional[int] = None
        self._fd_lock = threading.Lock()  # the syncer's fdatasync against a compaction's swap
        self._commit: Optional[GroupCommit] = None
        self.end = 0  # bytes appended by this process, all files (the acknowledgement ticket)
        self._floor = 0  # everything below it is durable (a snapshot was fsynced)
        self._snapshot_bytes = 0
        self._since_snapshot = 0
        self._open_frame = False  # a frame record written, its confirmation not yet
        self._broken = False  # a write failed: the file may miss records, rewrite it
        self._retry_at = 0.0  # monotonic time of the next rewrite while broken
        self.loaded = 0  # marks restored when opened
        self.uncertain = 0  # results of an unconfirmed frame found when opened
        self.ignored_bytes = 0  # unreadable bytes found when opened
        self.records = self.compactions = self.errors = self.syncs = 0
        self.last_error: Optional[str] = None

    # -- opening --
    def open(self, dedup: Any) -> "MarksLog":
        """Load the file into `dedup` (a publishers.delivery.Dedup), rewrite it as one
        snapshot and keep appending; the Dedup writes here from now on."""
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        try:
            os.unlink(self.path + ".tmp")  # a compaction the last process did not finish
        except FileNotFoundError:
            pass
        report = dedup.lanes.report
        dedup.lanes.report = False  # gaps were logged when they happened
        try:
            self._load(dedup)
        finally:
            dedup.lanes.report = report
            dedup.lanes.gaps = dedup.lanes.filled = 0  # counters of this process
        self.dedup = dedup
        self._compact()
        if self._fd is None:
            raise OSError(f"cannot write the marks file {self.path}: {self.last_error}")
        if self.durability == "fsync":
            name = f"marks {self.label}"
            self._commit = GroupCommit(lambda items: None, self._sync, "fsync", name).start(0)
        dedup.store = self
        return self

    def _load(self, dedup: Any) -> None:
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return
        if not data:  # nothing was ever written to it
            return
        if not data.startswith(MAGIC):
            self._unreadable(0, len(data), "not a marks file (its header is missing)", 0)
            return
        at, pending, count = len(MAGIC), None, 0
        while at < len(data):
            rec, end, why = _read_record(data, at)
            if rec is None:
                self._unreadable(at, len(data) - at, why, count)
                break
            try:
                pending = self._apply(dedup, rec, pending)
            except (ValueError, TypeError, IndexError, KeyError) as exc:
                self._unreadable(at, len(data) - at, f"a malformed record ({exc})", count)
                break
            at, count = end, count + 1
        if pending is not None:
            self._unconfirmed(pending)
        self.loaded = len(dedup.marks) + len(dedup.lanes.last)
        if self.loaded or count:
            log.info(
                "%s: duplicate marks restored from %s: %d mark(s) from %d record(s)",
                self.label,
                self.path,
                self.loaded,
                count,
            )

    def _apply(self, dedup: Any, rec: Any, pending: Any) -> Any:
        """Apply one record; returns the frame record waiting for its confirmation."""
        kind = rec[0]
        if kind == "c":
            if pending is not None:
                _replay(dedup, pending)
            return None
        if pending is not None:  # a frame record without its confirmation (a failed write)
            self._unconfirmed(pending)
        if kind in ("t", "q"):
            _check_frame(rec)
            return rec
        if kind == "f":
            dedup.forget(str(rec[1]))
        elif kind == "s":
            dedup.load_state(rec[1], rec[2])
        else:
            raise ValueError(f"unknown record kind {kind!r}")
        return None

    def _unconfirmed(self, rec: Any) -> None:
        fresh = int(rec[-1])
        self.uncertain += fresh
        log.warning(
            "%s: the worker stopped while its sinks took %d result(s) of %s on stream %s (the "
            "frame's marks were not confirmed): they may be at the sinks already, and a replay "
            "writes them again",
            self.label,
            fresh,
            rec[1],
            rec[2],
        )

    def _unreadable(self, at: int, size: int, why: str, count: int) -> None:
        self.ignored_bytes += size
        log.error(
            "%s: marks file %s is unreadable from byte %d on (%s): kept the %d record(s) "
            "before it, ignored %d byte(s); results those marked may be written again by a "
            "replay. The file is kept as %s.corrupt",
            self.label,
            self.path,
            at,
            why,
            count,
            size,
            self.path,
        )
        try:
            os.replace(self.path, self.path + ".corrupt")
        except OSError as exc:
            log.warning("%s: cannot move %s aside: %s", self.label, self.path, exc)

    # -- writing (the publisher service's thread, under the SinkSet's lock) --
    def frame_v5(self, publisher: str, stream: str, runs: Any, fresh: int) -> None:
        """A version 5 frame with `fresh` new results goes to the sinks."""
        self._frame(_record(["t", publisher, stream, runs, fresh]))

    def frame_v3(
        self, publisher: str, stream: str, epoch: int, first: int, n: int, fresh: int
    ) -> None:
        """A version 3 frame with `fresh` new results goes to the sinks."""
        self._frame(_record(["q", publisher, stream, epoch, first, n, fresh]))

    def _frame(self, rec: bytes) -> None:
        if self._open_frame:  # the last frame's confirmation failed to be written
            self.confirm()
        if self._append(rec):
            self._open_frame = True

    def confirm(self) -> None:
        """The sinks took the frame recorded last: confirm it, and let the acknowledgement
        wait until that is durable. After a failed write, the file is rewritten (at most once
        a second while that fails too)."""
        if self._open_frame:
            self._open_frame = False
            if self._append(CONFIRM) and self._commit is not None:
                self._commit.submit(None, self.end)
        if self._broken:
            if time.monotonic() >= self._retry_at:
                self._retry_at = time.monotonic() + 1.0
                self._compact()
        elif (
            self._since_snapshot > self.compact_bytes
            and self._since_snapshot > 4 * self._snapshot_bytes
        ):
            self._compact()

    def forget(self, publisher: str) -> None:
        """The publisher started fresh (Dedup forgot its marks)."""
        if self._append(_record(["f", publisher])) and self._commit is not None:
            self._commit.submit(None, self.end)

    def _append(self, rec: bytes) -> bool:
        if self._fd is None:
            return False
        try:
            written = os.write(self._fd, rec)
            if written != len(rec):
                raise OSError(f"short write ({written} of {len(rec)} bytes)")
        except OSError as exc:
            self._failed("write", exc)
            self._broken = True
            self._floor = self.end  # nothing waits for what could not be written
            return False
        self.end += len(rec)
        self._since_snapshot += len(rec)
        self.records += 1
        return True

    def _failed(self, what: str, exc: BaseException) -> None:
        self.errors += 1
        self.last_error = f"{what}: {type(exc).__name__}: {exc}"
        if self.errors == 1 or self.errors % 1000 == 0:  # the first, then every thousandth
            log.error(
                "%s: duplicate marks file %s: %s (%d failure(s) so far); the marks stay in "
                "memory, and a restart may write those results twice",
                self.label,
                self.path,
                self.last_error,
                self.errors,
            )

    def _sync(self) -> None:
        """fdatasync (the group commit's round); a failure is logged, counted and the round
        completes anyway (the frames are acknowledged: at-least-once holds)."""
        with self._fd_lock:
            if self._fd is None:
                return
            try:
                os.fdatasync(self._fd)
                self.syncs += 1
            except OSError as exc:
                self._failed("fdatasync", exc)

    def _compact(self) -> None:
        """Rewrite the file as one snapshot of the marks (temporary file, fsync, rename)."""
        v3, lanes = self.dedup.state()
        snapshot = _record(["s", v3, lanes])
        tmp, fd = self.path + ".tmp", None
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            data = MAGIC + snapshot
            if os.write(fd, data) != len(data):
                raise OSError("short write")
            os.fsync(fd)
            with self._fd_lock:
                os.replace(tmp, self.path)
                old, self._fd, fd = self._fd, fd, None
            if old is not None:
                os.close(old)
            _sync_dir(os.path.dirname(os.path.abspath(self.path)))
        except OSError as exc:
            if fd is not None:
                os.close(fd)
            self._failed("compaction", exc)
            self._broken = True
            return
        self._floor = self.end  # the snapshot holds every mark taken so far, fsynced
        self._snapshot_bytes = len(snapshot)
        self._since_snapshot = 0
        self._broken = False
        self.compactions += 1

    # -- acknowledgements --
    def ticket(self) -> int:
        """The offset a frame handled now must be durable up to before it is acknowledged."""
        return self.end

    def durable(self) -> int:
        """Offsets below this are durable (os: written; fsync: synced or in a snapshot)."""
        if self._commit is None:
            return self.end
        return max(self._commit.synced, self._floor)

    def wait(self, ticket: int, timeout: float = 30.0) -> None:
        """Block until `ticket` is durable (the NATS publisher service acknowledges in
        batches); a timeout is logged, not raised."""
        if self._commit is None or self.durable() >= ticket:
            return
        try:
            self._commit.wait(ticket, "fsync", timeout)
        except WalError as exc:
            self._failed("waiting for fdatasync", exc)

    def close(self, remove: bool = False) -> None:
        """Sync and close (the worker stops); `remove`: delete the file (the plan was
        removed, its marks will not be needed)."""
        if self._commit is not None:
            self._commit.close()
            self._commit = None
        with self._fd_lock:
            if self._fd is not None:
                try:
                    os.fdatasync(self._fd)
                except OSError as exc:
                    self._failed("fdatasync", exc)
                os.close(self._fd)
                self._fd = None
        if remove:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.warning("%s: cannot remove %s: %s", self.label, self.path, exc)

    def metrics(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "durability": self.durability,
            "loaded": self.loaded,
            "uncertain": self.uncertain,
            "ignored_bytes": self.ignored_bytes,
            "records": self.records,
            "bytes": self._snapshot_bytes + self._since_snapshot + len(MAGIC),
            "compactions": self.compactions,
            "syncs": self.syncs,
            "errors": self.errors,
            "last_error": self.last_error,
        }


def _read_record(data: bytes, at: int) -> tuple[Any, int, str]:
    """(payload, end, "") of the record at `at`, or (None, at, why it is unreadable)."""
    if at + HEAD.size > len(data):
        return None, at, "a torn record header (the file ends inside it)"
    size, crc = HEAD.unpack_from(data, at)
    start = at + HEAD.size
    if size > MAX_RECORD:
        return None, at, f"a record length of {size} bytes"
    if start + size > len(data):
        return None, at, "a torn record (the file ends inside it)"
    body = data[start : start + size]
    if zlib.crc32(body) != crc:
        return None, at, "a record whose checksum does not match"
    try:
        rec = msgpack.unpackb(body, raw=False)
    except Exception as exc:  # noqa: BLE001 - any msgpack failure is damage
        return None, at, f"a record that does not decode ({exc})"
    if not isinstance(rec, list) or not rec:
        return None, at, "a record that is not a list"
    return rec, start + size, ""


def _check_frame(rec: Any) -> None:
    if rec[0] == "t" and (len(rec) != 5 or not isinstance(rec[3], list)):
        raise ValueError("a version 5 frame record needs publisher, stream, runs, fresh")
    if rec[0] == "q" and len(rec) != 7:
        raise ValueError("a version 3 frame record needs 6 fields")
    int(rec[-1])


def _replay(dedup: Any, rec: Any) -> None:
    if rec[0] == "t":
        dedup.replay_runs(
            str(rec[1]), str(rec[2]), [(str(a), int(b), int(c)) for a, b, c in rec[3]]
        )
    else:
        dedup.replay_seqs(str(rec[1]), str(rec[2]), int(rec[3]), int(rec[4]), int(rec[5]))


def _sync_dir(path: str) -> None:
    """fsync a folder (a rename in it is durable then); not every platform allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
