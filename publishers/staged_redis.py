"""Exactly-once Redis sink: output is staged in Redis lists per (epoch, publisher)
and moved into the Redis stream by one Lua script when the checkpoint covering it completes.

Keys next to the stream key K: `K:eo:s:<epoch>:<publisher hex>` (staged entries
`"<ts>\\t<data json>"`), the set `K:eo:staged` of those lists, the hash `K:eo:smark` (highest
staged sequence number per list), the hash `K:eo:slanes` (lineage output: the last staged
number per `<epoch>:<publisher hex>:<lane hex>`) and the hash `K:eo:state` (`committed`: the
last committed checkpoint; `m:<publisher hex>`: the highest committed identity `epoch:seq`;
`l:<publisher hex>:<lane hex>`: the highest committed number of a lane). Redis runs a
script atomically, so a reader of K sees a checkpoint's output all at once or not at all, and a
worker that dies mid-commit leaves either nothing done or everything done. Staged output
survives a worker restart (it is in Redis). Not for Redis Cluster (the script touches keys it
does not declare).
"""

import logging

import redis

from publishers.delivery import LaneMarks, fresh_events, seen_before
from publishers.exceptions import SinkWriteError
from publishers.redis_sink import RedisSink, _row_json

log = logging.getLogger(__name__)

_COMMIT = """
local cid = tonumber(ARGV[1])
local moved = 0
for _, lk in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local e, ph = string.match(lk, ':eo:s:(%-?%d+):(%x+)$')
  e = tonumber(e)
  if e ~= nil and e < cid then
    for _, it in ipairs(redis.call('LRANGE', lk, 0, -1)) do
      local tab = string.find(it, '\\t', 1, true)
      local ts, data = string.sub(it, 1, tab - 1), string.sub(it, tab + 1)
      if ARGV[3] ~= '' then
        redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'stream', ARGV[2],
                   'timestamp', ts, 'data', data)
      else
        redis.call('XADD', KEYS[1], '*', 'stream', ARGV[2], 'timestamp', ts, 'data', data)
      end
      moved = moved + 1
    end
    local field = e .. ':' .. ph
    local last = redis.call('HGET', KEYS[4], field)
    if last then
      local better = true
      local cur = redis.call('HGET', KEYS[2], 'm:' .. ph)
      if cur then
        local ce, cs = string.match(cur, '^(%-?%d+):(%-?%d+)$')
        ce, cs = tonumber(ce), tonumber(cs)
        if ce > e or (ce == e and cs >= tonumber(last)) then better = false end
      end
      if better then redis.call('HSET', KEYS[2], 'm:' .. ph, e .. ':' .. last) end
      redis.call('HDEL', KEYS[4], field)
    end
    redis.call('DEL', lk)
    redis.call('SREM', KEYS[3], lk)
  end
end
for _, f in ipairs(redis.call('HKEYS', KEYS[5])) do
  local e, ph, lh = string.match(f, '^(%-?%d+):(%x+):(%x+)$')
  if e ~= nil and tonumber(e) < cid then
    local last = tonumber(redis.call('HGET', KEYS[5], f))
    local field = 'l:' .. ph .. ':' .. lh
    local cur = tonumber(redis.call('HGET', KEYS[2], field) or '-1')
    if last > cur then redis.call('HSET', KEYS[2], field, last) end
    redis.call('HDEL', KEYS[5], f)
  end
end
local c = tonumber(redis.call('HGET', KEYS[2], 'committed') or '0')
if cid > c then redis.call('HSET', KEYS[2], 'committed', cid) end
return moved
"""

_DISCARD = """
local dropped = 0
for _, lk in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local e, ph = string.match(lk, ':eo:s:(%-?%d+):(%x+)$')
  if ph == ARGV[1] then
    dropped = dropped + redis.call('LLEN', lk)
    redis.call('DEL', lk)
    redis.call('SREM', KEYS[2], lk)
    redis.call('HDEL', KEYS[3], e .. ':' .. ph)
  end
end
for _, f in ipairs(redis.call('HKEYS', KEYS[4])) do
  local e, ph = string.match(f, '^(%-?%d+):(%x+):%x+$')
  if ph == ARGV[1] then redis.call('HDEL', KEYS[4], f) end
end
if ARGV[2] == '1' then
  redis.call('HDEL', KEYS[1], 'm:' .. ARGV[1])
  for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(f, 1, 3 + #ARGV[1]) == 'l:' .. ARGV[1] .. ':' then
      redis.call('HDEL', KEYS[1], f)
    end
  end
end
return dropped
"""


class StagedRedisSink(RedisSink):
    """`@sink(type='redis', connection='main', key='alerts', delivery='exactly-once')`."""

    delivery = "exactly-once"

    def __init__(self, stream, options, client=None, connections=None):
        super().__init__(stream, options, client=client, connections=connections)
        k = self.key
        self.k_state, self.k_staged, self.k_smark = (
            f"{k}:eo:state",
            f"{k}:eo:staged",
            f"{k}:eo:smark",
        )
        self.k_slanes = f"{k}:eo:slanes"
        self.lanes = LaneMarks(f"redis {k}", report=False)
        self._commit_script = self.client.register_script(_COMMIT)
        self._discard_script = self.client.register_script(_DISCARD)
        self.duplicates = self.commits = self.discarded = 0
        self.committed, self.marks = 0, {}
        try:
            self._load()
        except redis.RedisError as exc:
            raise SinkWriteError(
                f"redis sink {self.url} key {k}: cannot read the staged output: {exc}"
            ) from None

    def _load(self):
        state = {_s(f): _s(v) for f, v in self.client.hgetall(self.k_state).items()}
        self.committed = int(state.get("committed", 0))
        self.marks, self.lanes.last = {}, {}
        for field, value in state.items():
            if field.startswith("m:"):
                self._raise(bytes.fromhex(field[2:]).decode(), _mark(value))
            elif field.startswith("l:"):
                pub_hex, lane_hex = field[2:].split(":")
                self._raise_lane(pub_hex, lane_hex, int(value))
        for field, last in self.client.hgetall(self.k_smark).items():
            epoch, pub_hex = _s(field).split(":", 1)
            self._raise(bytes.fromhex(pub_hex).decode(), (int(epoch), int(last)))
        for field, last in self.client.hgetall(self.k_slanes).items():
            _, pub_hex, lane_hex = _s(field).split(":")
            self._raise_lane(pub_hex, lane_hex, int(last))

    def _raise_lane(self, pub_hex, lane_hex, last):
        key = (bytes.fromhex(pub_hex).decode(), bytes.fromhex(lane_hex).decode())
        if last > self.lanes.last.get(key, -1):
            self.lanes.last[key] = last

    def _raise(self, pub, mark):
        if mark > self.marks.get(pub, (-2, -1)):
            self.marks[pub] = mark

    def stage(self, events, ident):
        """Stage a batch in Redis (one MULTI/EXEC); duplicates of what the publisher sent
        before are dropped and counted; output of an already committed epoch waits for the
        next commit. Lineage output (version 5) is checked per lane."""
        if ident.runs is not None:
            self._stage_lineage(events, ident)
            return
        skip = self._skip(ident, len(events))
        self.duplicates += skip
        if skip == len(events):
            return
        events = events[skip:]
        last = ident.first_seq + skip + len(events) - 1
        pub_hex = ident.publisher.encode().hex()
        lk = f"{self.key}:eo:s:{ident.epoch}:{pub_hex}"
        pipe = self.client.pipeline(transaction=True)
        pipe.rpush(lk, *[f"{ts}\t{_row_json(row)}" for ts, row in events])
        pipe.sadd(self.k_staged, lk)
        pipe.hset(self.k_smark, f"{ident.epoch}:{pub_hex}", last)
        try:
            pipe.execute()
        except redis.RedisError as exc:
            raise SinkWriteError(
                f"redis sink {self.url} key {self.key}: staging failed: {exc}"
            ) from None
        self._raise(ident.publisher, (ident.epoch, last))

    def _skip(self, ident, n):
        return seen_before(self.marks.get(ident.publisher), ident, n)

    def _stage_lineage(self, events, ident):
        before = dict(self.lanes.last)
        fresh, dups = fresh_events(self.lanes, (ident.publisher,), ident, events)
        self.duplicates += dups
        if not fresh:
            return
        pub_hex = ident.publisher.encode().hex()
        lk = f"{self.key}:eo:s:{ident.epoch}:{pub_hex}"
        pipe = self.client.pipeline(transaction=True)
        pipe.rpush(lk, *[f"{ts}\t{_row_json(row)}" for ts, row in fresh])
        pipe.sadd(self.k_staged, lk)
        for lane, first, n in ident.runs:
            pipe.hset(
                self.k_slanes,
                f"{ident.epoch}:{pub_hex}:{lane.encode().hex()}",
                self.lanes.last.get((ident.publisher, lane), first + n - 1),
            )
        try:
            pipe.execute()
        except redis.RedisError as exc:
            self.lanes.last = before  # not staged: a resend must not be taken as a duplicate
            raise SinkWriteError(
                f"redis sink {self.url} key {self.key}: staging failed: {exc}"
            ) from None

    def commit(self, checkpoint):
        """Checkpoint `checkpoint` is complete: move every staged epoch before it, atomically."""
        try:
            moved = self._commit_script(
                keys=[self.key, self.k_state, self.k_staged, self.k_smark, self.k_slanes],
                args=[checkpoint, self.stream, "" if self.maxlen is None else self.maxlen],
            )
        except redis.RedisError as exc:
            raise SinkWriteError(
                f"redis sink {self.url} key {self.key}: commit of checkpoint "
                f"{checkpoint} failed (retried at the next one): {exc}"
            ) from None
        self.committed = max(self.committed, checkpoint)
        self.written += int(moved)
        self.commits += 1

    def restart(self, publisher, restored):
        """Publisher bolt `publisher` started from `restored` (None: fresh state): commit that
        checkpoint, discard the bolt's later staged output (the replay regenerates it)."""
        if restored is not None:
            self.commit(restored)
        try:
            self.discarded += int(
                self._discard_script(
                    keys=[self.k_state, self.k_staged, self.k_smark, self.k_slanes],
                    args=[publisher.encode().hex(), "1" if restored is None else "0"],
                )
            )
            self._load()
        except redis.RedisError as exc:
            raise SinkWriteError(
                f"redis sink {self.url} key {self.key}: discarding staged output failed: {exc}"
            ) from None

    def pending_events(self):
        try:
            return sum(self.client.llen(_s(lk)) for lk in self.client.smembers(self.k_staged))
        except redis.RedisError:
            return None

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


def _s(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _mark(text):
    epoch, seq = text.split(":")
    return int(epoch), int(seq)
