"""Exactly-once file sink: output is staged per (epoch, publisher) and appended to
the file only when the checkpoint covering it completes (two-phase: pending, then commit).

Next to `path` (`out.jsonl`) live `.out.jsonl.staging/` (one JSON-lines segment per epoch,
publisher bolt and first sequence number: `<epoch>~<publisher hex>~<first seq>.jsonl`, and
beside a segment of lineage output its `.lanes` file: a JSON line `[lane, last number]` per
staged batch and lane) and `.out.jsonl.delivery.json` (the last committed checkpoint, the
highest committed identity per publisher and per (publisher, lane), and during a commit its
intent). A commit of checkpoint n:

1. writes the intent (checkpoint n, the file size before, the segments of epochs < n);
2. appends those segments to `path` and fsyncs it;
3. writes the state without the intent (n committed, new identity marks), then deletes the
   segments.

After a crash between 1 and 3 the sink, when built again, appends what the intent's segments
hold beyond what already reached the file (its size minus the size before): no row twice,
none lost. Segments of an epoch that never completed stay staged until the publisher bolt
restarts: its `start` notice names the restored checkpoint, staged output from that epoch on
is discarded and the replay writes it again. Readers of `path` see committed rows only.
"""

import json
import logging
import os
import threading

from publishers.delivery import LaneMarks, fresh_events, seen_before
from publishers.exceptions import SinkWriteError
from publishers.file_sink import FileSink

log = logging.getLogger(__name__)


class StagedFileSink(FileSink):
    """`@sink(type='file', path='out.jsonl', delivery='exactly-once')`."""

    delivery = "exactly-once"

    def __init__(self, stream, options, roots=None):
        super().__init__(stream, options, roots)
        self.append = True  # a commit appends; the file is never truncated
        full = os.path.abspath(self.path)
        folder, name = os.path.split(full)
        self.out_path = full
        self.staging = os.path.join(folder, f".{name}.staging")
        self.state_path = os.path.join(folder, f".{name}.delivery.json")
        self.committed, self.marks, self.committed_marks = 0, {}, {}
        # lineage output (frames v5): numbers per (publisher, lane), staged and committed
        self.lanes, self.committed_lanes = LaneMarks(self.path, report=False), {}
        self.staged = {}  # (epoch, publisher) -> [[first seq, count, file name], ...]
        self._open = {}  # segment file name -> file open for appending
        self.duplicates = self.commits = self.discarded = 0
        self._lock = threading.RLock()
        try:
            self._recover()
        except (OSError, ValueError) as exc:
            raise SinkWriteError(
                f"file sink {self.path}: cannot recover staged output: {exc}"
            ) from None

    # -- recovery --
    def _recover(self):
        os.makedirs(self.staging, exist_ok=True)
        state = {}
        if os.path.exists(self.state_path):
            with open(self.state_path, encoding="utf-8") as fh:
                state = json.load(fh)
        self.committed = int(state.get("committed", 0))
        self.committed_marks = {p: tuple(m) for p, m in state.get("marks", {}).items()}
        self.committed_lanes = {(p, lane): int(last) for p, lane, last in state.get("lanes", ())}
        if state.get("intent"):
            log.warning(
                "file sink %s: finishing the commit of checkpoint %s a crash cut",
                self.path,
                state["intent"]["checkpoint"],
            )
            self._finish(state["intent"])
        self.marks = dict(self.committed_marks)
        self.lanes.last = dict(self.committed_lanes)
        for fname in sorted(os.listdir(self.staging)):
            if not fname.endswith(".lanes"):
                self._load_segment(fname)

    def _load_segment(self, fname):
        try:
            epoch, pub_hex, first = fname[: -len(".jsonl")].split("~")
            epoch, pub, first = int(epoch), bytes.fromhex(pub_hex).decode(), int(first)
        except ValueError:
            log.warning("file sink %s: ignoring stray staging file %s", self.path, fname)
            return
        count = _complete_lines(os.path.join(self.staging, fname))
        self.staged.setdefault((epoch, pub), []).append([first, count, fname])
        self._raise_mark(pub, (epoch, first + count - 1))
        for lane, last in _segment_lanes(os.path.join(self.staging, fname)).items():
            if last > self.lanes.last.get((pub, lane), -1):
                self.lanes.last[(pub, lane)] = last

    def _raise_mark(self, pub, mark):
        if mark[1] >= 0 and mark > self.marks.get(pub, (-2, -1)):
            self.marks[pub] = mark

    # -- phase 1: stage --
    def stage(self, events, ident):
        """Stage a batch of publisher `ident.publisher`; leading events it sent before are
        dropped (counted in `duplicates`). Output of an epoch already committed (frames a
        restored bolt re-sends, or its replay beyond what was committed) waits for the next
        commit notice like any other."""
        with self._lock:
            if ident.runs is not None:
                self._stage_lineage(events, ident)
                return
            skip = self._skip(ident, len(events))
            self.duplicates += skip
            if skip == len(events):
                return
            first = ident.first_seq + skip
            self._append_segment(ident.epoch, ident.publisher, first, events[skip:])

    def _stage_lineage(self, events, ident):
        """Stage what a version 5 batch holds that no staged or committed output had (per
        lane), and note each lane's new last number beside the segment."""
        fresh, dups = fresh_events(self.lanes, (ident.publisher,), ident, events)
        self.duplicates += dups
        if not fresh:
            return
        seg = self._append_segment(
            ident.epoch, ident.publisher, ident.first_seq, fresh, contiguous=False
        )
        lanes = {}
        for lane, first, n in ident.runs:
            lanes[lane] = first + n - 1
        try:
            with open(os.path.join(self.staging, seg[2] + ".lanes"), "a", encoding="utf-8") as fh:
                fh.write("".join(json.dumps([lane, last]) + "\n" for lane, last in lanes.items()))
        except OSError as exc:
            raise SinkWriteError(f"file sink {self.path}: staging failed: {exc}") from None

    def _skip(self, ident, n):
        return seen_before(self.marks.get(ident.publisher), ident, n)

    def _append_segment(self, epoch, pub, first, events, contiguous=True):
        segs = self.staged.setdefault((epoch, pub), [])
        if segs and (segs[-1][0] + segs[-1][1] == first or not contiguous):
            seg = segs[-1]
        else:
            seg = [first, 0, f"{epoch}~{pub.encode().hex()}~{first}.jsonl"]
            segs.append(seg)
        try:
            fh = self._handle(seg[2])
            fh.write(self.render_lines(events))
            fh.flush()  # to the OS: a worker crash keeps it (a commit fsyncs the output)
        except OSError as exc:
            raise SinkWriteError(f"file sink {self.path}: staging failed: {exc}") from None
        seg[1] += len(events)
        if contiguous:
            self._raise_mark(pub, (epoch, first + len(events) - 1))
        return seg

    def _handle(self, fname):
        """The open segment file `fname` (one per publisher stays open between batches)."""
        fh = self._open.get(fname)
        if fh is None:
            if len(self._open) >= 16:
                self._close_segments()
            fh = self._open[fname] = open(os.path.join(self.staging, fname), "a", encoding="utf-8")
        return fh

    def _close_segments(self, names=None):
        for fname in list(self._open) if names is None else names:
            fh = self._open.pop(fname, None)
            if fh is not None:
                fh.close()

    # -- phase 2: commit --
    def commit(self, checkpoint):
        """Checkpoint `checkpoint` is complete: append the output of every epoch before it."""
        with self._lock:
            self._commit(checkpoint)

    def _commit(self, checkpoint):
        keys = sorted(k for k in self.staged if k[0] < checkpoint)
        if not keys and checkpoint <= self.committed:
            return
        segments = [[e, p, *seg] for e, p in keys for seg in self.staged[(e, p)]]
        self._close_segments([seg[4] for seg in segments])
        try:
            if segments:
                intent = {
                    "checkpoint": checkpoint,
                    "size": _size(self.out_path),
                    "segments": segments,
                }
                self._write_state(intent)
                self._finish(intent)
            else:
                self.committed = max(self.committed, checkpoint)
                self._write_state(None)
        except OSError as exc:
            raise SinkWriteError(
                f"file sink {self.path}: commit of checkpoint {checkpoint} "
                f"failed (retried at the next one): {exc}"
            ) from None
        for key in keys:
            del self.staged[key]
        self.commits += 1

    def _finish(self, intent):
        """Append what the intent's segments hold beyond what reached the file, then record."""
        done = _size(self.out_path) - intent["size"]
        fd = os.open(self.out_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            for _, _, _, _, fname in intent["segments"]:
                with open(os.path.join(self.staging, fname), "rb") as fh:
                    data = fh.read()
                if done >= len(data):
                    done -= len(data)
                    continue
                os.write(fd, data[done:])
                done = 0
            os.fsync(fd)
        finally:
            os.close(fd)
        for epoch, pub, first, count, fname in intent["segments"]:
            lanes = _segment_lanes(os.path.join(self.staging, fname))
            if not lanes:
                mark = (epoch, first + count - 1)
                if count and mark > self.committed_marks.get(pub, (-2, -1)):
                    self.committed_marks[pub] = mark
            for lane, last in lanes.items():
                if last > self.committed_lanes.get((pub, lane), -1):
                    self.committed_lanes[(pub, lane)] = last
            self.written += count
        self.committed = max(self.committed, intent["checkpoint"])
        self._write_state(None)
        for *_, fname in intent["segments"]:
            _remove(os.path.join(self.staging, fname))
            _remove(os.path.join(self.staging, fname + ".lanes"))

    def _write_state(self, intent):
        state = {
            "committed": self.committed,
            "intent": intent,
            "marks": {p: list(m) for p, m in self.committed_marks.items()},
            "lanes": [[p, lane, last] for (p, lane), last in self.committed_lanes.items()],
        }
        tmp = self.state_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.state_path)

    # -- abort --
    def restart(self, publisher, restored):
        """Publisher bolt `publisher` started from checkpoint `restored` (None: fresh state):
        that checkpoint is complete, so commit it; the bolt's later staged output is discarded
        (the replay regenerates it)."""
        with self._lock:
            if restored is not None:
                self._commit(restored)
            for key in [k for k in self.staged if k[1] == publisher]:
                for seg in self.staged.pop(key):
                    self.discarded += seg[1]
                    self._close_segments([seg[2]])
                    _remove(os.path.join(self.staging, seg[2]))
                    _remove(os.path.join(self.staging, seg[2] + ".lanes"))
            if restored is None:
                self.committed_marks.pop(publisher, None)
                for key in [k for k in self.committed_lanes if k[0] == publisher]:
                    del self.committed_lanes[key]
                self._write_state(None)
            self.marks[publisher] = self.committed_marks.get(publisher, (-2, -1))
            self.lanes.forget(lambda k: k[0] == publisher)
            self.lanes.last.update(
                {k: v for k, v in self.committed_lanes.items() if k[0] == publisher}
            )

    def close(self):
        with self._lock:
            self._close_segments()
        super().close()

    def pending_events(self):
        return sum(seg[1] for segs in self.staged.values() for seg in segs)

    def describe(self):
        return {
            **super().describe(),
            "delivery": self.delivery,
            "committed": self.committed,
            "pending": self.pending_events(),
            "duplicates": self.duplicates,
            "commits": self.commits,
            "discarded": self.discarded,
        }


def _size(path):
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _segment_lanes(path):
    """{lane: last number} a segment's `.lanes` file records ({} for output without lineage);
    a torn last line is ignored (that batch's rows are cut off the segment too)."""
    lanes = {}
    try:
        with open(path + ".lanes", encoding="utf-8") as fh:
            for line in fh:
                try:
                    lane, last = json.loads(line)
                except ValueError:
                    continue
                lanes[lane] = max(lanes.get(lane, -1), int(last))
    except FileNotFoundError:
        pass
    return lanes


def _complete_lines(path):
    """Lines in a staging segment; a torn last line (a write a crash cut) is cut off."""
    with open(path, "rb+") as fh:
        data = fh.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            fh.truncate(end)
    return data.count(b"\n", 0, end)
