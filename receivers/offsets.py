"""What a receiver spout knows of the workers' write-ahead logs: per receiver id,
the highest offset it has emitted, and the commit/replay requests it sends back.

Version 2 frames (cep/protocol/frames.py) carry (receiver id, first offset, worker URL).
`admit()` keeps each log's events in order and exactly once at the spout:
- the next offset expected: taken;
- offsets already emitted (a replay overlapping what came through): skipped, counted as
  `duplicates`;
- a gap (the worker restarted, or frames died with a spout socket): the frame is dropped,
  counted in `gap_drops`, and a replay after the last emitted offset is requested (at most once
  per `retry_s`); the replay brings the dropped events back in order. Offsets the worker's log
  cannot supply (committed, corrupt) come back in the replay answer as `missing`; the spout
  skips them, logs an error and counts them as `lost`, so it never waits for them forever.
  A gap still open after `gap_timeout_s` (the worker cannot be reached, or refuses the
  request) is given up the same way: logged as an error and counted in `lost`, never a stream
  stalled for good.
- `from_start` (a task started with no checkpoint to restore, e.g. a failure before the first
  checkpoint completed): the first frame of each log is dropped and the whole log (everything
  no checkpoint committed) is requested; frames are admitted from the replay's first offset.

Requests go over HTTP to the worker (cep/worker/wal_api.py) with the cluster secret when
the spout has one."""

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import quote

from cep.security import cluster_secret

log = logging.getLogger(__name__)


def parse_receiver_id(receiver_id):
    """(worker id, tenant, plan, stream) of `<worker>/<tenant>/<plan>/<stream>#<log id>`."""
    worker, tenant, plan, stream = receiver_id.split("#", 1)[0].rsplit("/", 3)
    return worker, tenant, plan, stream


class ReceiverOffsets:
    """Per receiver id: last emitted offset, worker URL; admit(), replay and commit."""

    def __init__(self, label="", secret=None, timeout=5.0, retry_s=1.0, gap_timeout_s=30.0):
        self.label, self.timeout, self.retry_s = label, timeout, retry_s
        self.gap_timeout_s, self._gap_since = gap_timeout_s, {}
        self.secret = secret or cluster_secret.read()  # none given: $CEP_CLUSTER_SECRET
        self.last, self.control = {}, {}
        self.duplicates = self.gap_drops = self.lost = self.request_errors = 0
        self._holes = {}  # receiver id -> [[a, b)] the worker's log cannot supply
        self._asked = {}  # receiver id -> monotonic time of the last replay request
        self._lock = threading.Lock()
        self._to_commit, self._committer = {}, None
        # restarted without a checkpoint (a failure before the first one completed): each
        # log is replayed from its start, so nothing accepted before the failure is lost
        self.from_start = False
        self._start_seen = {}  # receiver id -> highest offset dropped while asking for it

    def admit(self, pos, count):
        """How many leading events of a frame at `pos` (LogPosition) to skip, or None to drop
        it all (duplicates, or a gap waiting for its replay)."""
        rid, first = pos.receiver_id, pos.first_offset
        if pos.control:
            self.control[rid] = pos.control
        last = self.last.get(rid)
        if last is not None:
            expect = self._skip_holes(rid, last + 1)
            if first > expect:
                if not self._give_up(rid, expect, first):
                    self.gap_drops += count
                    self._ask_replay(rid, expect - 1)
                    return None
                expect = first
            self._gap_since.pop(rid, None)
            skip = expect - first
            if skip >= count:
                self.duplicates += count
                return None
            self.duplicates += skip
        elif self.from_start and not self._start_given_up(rid):
            self.gap_drops += count  # no checkpoint holds this log: take it from its start
            self._start_seen[rid] = max(self._start_seen.get(rid, -1), first + count - 1)
            self._ask_start(rid)
            return None
        else:
            skip = 0
        self.last[rid] = first + count - 1
        return skip

    def _start_given_up(self, rid):
        since = self._gap_since.setdefault(rid, time.monotonic())
        if time.monotonic() - since < self.gap_timeout_s:
            return False
        log.error(
            "%s: the worker of %s did not replay its log from the start within %.0f s; "
            "taking its frames from offset %s on",
            self.label,
            rid,
            self.gap_timeout_s,
            "the next frame's",
        )
        self._gap_since.pop(rid, None)
        return True

    def _ask_start(self, rid):
        now = time.monotonic()
        if now - self._asked.get(rid, -1e9) < self.retry_s or rid not in self.control:
            return
        self._asked[rid] = now
        threading.Thread(
            target=self.replay_from_start, args=(rid,), daemon=True, name=f"replay {rid}"
        ).start()

    def replay_from_start(self, rid):
        """Ask the worker of `rid` to re-send its whole log (what no checkpoint committed);
        from the answer's first offset on, frames are admitted. A leading hole from offset 0
        is what earlier checkpoints committed (deleted segments), not a loss."""
        answer = self._post(rid, "replay", {"receiver_id": rid, "after": -1})
        if not answer:
            return None
        missing = [list(h) for h in answer.get("missing", ())]
        if missing and missing[0][0] == 0:
            missing.pop(0)
        with self._lock:
            self._holes[rid] = missing
            if rid not in self.last:
                self.last[rid] = int(answer.get("first", 0)) - 1
            # frames (the replay's too) dropped before this answer came: ask for them again
            behind = self._start_seen.pop(rid, -1) > self.last[rid]
        if behind:
            self.replay_one(rid, self.last[rid])
        log.info(
            "%s: no checkpoint to restore; %s replays its log from offset %s (%s events)",
            self.label,
            rid,
            answer.get("first"),
            answer.get("events"),
        )
        return answer

    def _give_up(self, rid, expect, first):
        """True once a gap stayed open for gap_timeout_s: its offsets are counted lost."""
        since = self._gap_since.setdefault(rid, time.monotonic())
        if time.monotonic() - since < self.gap_timeout_s:
            return False
        self.lost += first - expect
        log.error(
            "%s: offsets %d..%d of %s never came back (replay requests failed for %.0f "
            "s); counted lost",
            self.label,
            expect,
            first - 1,
            rid,
            self.gap_timeout_s,
        )
        return True

    def _skip_holes(self, rid, expect):
        with self._lock:
            holes = self._holes.get(rid, [])
            for hole in list(holes):
                if hole[0] <= expect < hole[1]:
                    self.lost += hole[1] - expect
                    log.error(
                        "%s: offsets %d..%d of %s are not in the worker's log "
                        "(committed or corrupt); skipped",
                        self.label,
                        expect,
                        hole[1] - 1,
                        rid,
                    )
                    expect = hole[1]
                if hole[1] <= expect:
                    holes.remove(hole)
        if expect - 1 != self.last.get(rid):
            self.last[rid] = expect - 1
        return expect

    def _ask_replay(self, rid, after):
        now = time.monotonic()
        if now - self._asked.get(rid, -1e9) < self.retry_s or rid not in self.control:
            return
        self._asked[rid] = now
        threading.Thread(
            target=self.replay_one, args=(rid, after), daemon=True, name=f"replay {rid}"
        ).start()

    # -- requests to the workers --
    def replay_one(self, rid, after):
        """Ask the worker of `rid` to re-send what follows `after`; its answer or None."""
        answer = self._post(rid, "replay", {"receiver_id": rid, "after": after})
        if answer and answer.get("missing"):
            with self._lock:
                self._holes[rid] = [list(h) for h in answer["missing"]]
        return answer

    def request_replay(self, offsets=None):
        """Replay every log after the given {receiver id: offset} (default: the offsets
        emitted so far); frames are admitted from there on. Returns {rid: answer or None}."""
        offsets = dict(self.last if offsets is None else offsets)
        self.last.update(offsets)
        return {rid: self.replay_one(rid, off) for rid, off in offsets.items()}

    def commit(self, offsets, wait=False):
        """Tell each worker its log is covered up to the offset. By default in a background
        thread (a checkpoint completion must not stall the spout on a slow worker; a newer
        commit replaces one not sent yet); `wait=True` returns {rid: answer or None}."""
        if wait:
            return {
                rid: self._post(rid, "commit", {"receiver_id": rid, "offset": off})
                for rid, off in offsets.items()
            }
        with self._lock:
            self._to_commit.update(offsets)
            if self._committer is None or not self._committer.is_alive():
                self._committer = threading.Thread(
                    target=self._commit_pending, daemon=True, name=f"commit {self.label}"
                )
                self._committer.start()
        return None

    def _commit_pending(self):
        while True:
            with self._lock:
                if not self._to_commit:
                    self._committer = None
                    return
                rid, off = self._to_commit.popitem()
            self._post(rid, "commit", {"receiver_id": rid, "offset": off})

    def _post(self, rid, op, body):
        url = self.control.get(rid)
        if not url:
            self.request_errors += 1
            log.warning("%s: no worker address known for %s; %s not sent", self.label, rid, op)
            return None
        _, tenant, plan, stream = parse_receiver_id(rid)
        path = "/".join(quote(x, safe="") for x in (tenant, plan, stream))
        req = urllib.request.Request(
            f"{url}/wal/{path}/{op}",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
            method="POST",
        )
        if self.secret:
            req.add_header(cluster_secret.HEADER, self.secret)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            self.request_errors += 1
            log.warning("%s: %s of %s at %s failed: %s", self.label, op, rid, url, exc)
            return None

    # -- checkpoint state --
    def snapshot(self):
        return {"offsets": dict(self.last), "control": dict(self.control)}

    def restore(self, state):
        self.last = dict((state or {}).get("offsets", {}))
        self.control.update((state or {}).get("control", {}))
        self.from_start = True  # a log the checkpoint does not know is taken from its start

    def metrics(self):
        return {
            "receivers": len(self.last),
            "duplicates": self.duplicates,
            "gap_drops": self.gap_drops,
            "lost": self.lost,
            "request_errors": self.request_errors,
        }
