"""`#reorder:kslack(timestamp[, timeout[, max.k[, discard.late]]])`: K-slack reordering of an
out-of-order stream, as Siddhi 3.2's KSlackExtension.

Events wait in a buffer ordered by their timestamp attribute. K grows to the largest lag seen
(capped by max.k); when an event raises the greatest timestamp, every buffered event with
`ts + K <= greatest` is released in timestamp order. With a timeout, a timer releases the whole
buffer every `timeout` ms; like the original, the timer stops for good the first time it finds
the buffer empty. With discard.late, events older than the last released timestamp are
dropped. The appended attributes (beta0.. as the original declares them) stay null."""

from cep.engine.events import CURRENT
from cep.engine.ext.base import ExtStreamProcessor, constant_value, fail, is_constant
from cep.model import AttrType

LONG, BOOL = AttrType.LONG, AttrType.BOOL
_ORDINAL = ("first", "second", "third", "fourth")


class KSlack(ExtStreamProcessor):
    @classmethod
    def signature(cls, args, types, call):
        n = len(args)
        if n == 0 or n > 4:
            fail(
                call,
                None,
                f"takes 1 to 4 parameters (timestamp long, timeout long, max.k "
                f"long, discard.late bool), not {n}",
            )
        out = []
        for i, t in enumerate(types):
            want = BOOL if i == 3 else LONG
            if t is not want:
                fail(
                    call,
                    i,
                    f"the {_ORDINAL[i]} parameter must be of type {want.value}, not {t.value}",
                )
            if i > 0 and not is_constant(args[i]):
                fail(call, i, f"the {_ORDINAL[i]} parameter must be a constant")
            out.append((f"beta{i}", want))
        return out

    @classmethod
    def parse(cls, p):
        n = len(p)
        get = p.getter(0)
        timeout = constant_value(p.params[1]) if n > 1 else -1
        max_k = constant_value(p.params[2]) if n > 2 else (1 << 63) - 1
        discard = bool(constant_value(p.params[3])) if n > 3 else False
        return get, timeout, max_k, discard

    def setup(self, get, timeout, max_k, discard):
        self.get, self.timeout, self.max_k, self.discard = get, timeout, max_k, discard
        self.k = 0
        self.greatest = 0
        self.pending = {}  # timestamp -> events, not yet past the greatest timestamp
        self.held = {}  # timestamp -> events waiting for K
        self.last_sent = -1
        self.next_timer = None
        if timeout != -1:  # the first timer is due `timeout` after the query starts
            clock = self.env.scheduler.clock if self.env.playback else self.now()
            self.next_timer = (0 if clock is None else clock) + timeout
            self._schedule(self.next_timer, owned=False)

    def process(self, batch):
        out = []
        pad = (None,) * self.extra
        for ts, row, kind in batch:
            t = self.get(row)
            if self.discard and t < self.last_sent:
                continue
            event = (ts, tuple(row) + pad, CURRENT)
            self.pending.setdefault(t, []).append(event)
            if t <= self.greatest:
                continue
            self.greatest = t
            lag = t - min(self.pending)
            if lag > self.k:
                self.k = lag if lag < self.max_k else self.max_k
            for key, events in self.pending.items():
                self.held.setdefault(key, []).extend(events)
            self.pending = {}
            for key in sorted(self.held):
                if key + self.k <= self.greatest:
                    self.last_sent = key
                    out.extend(self.held.pop(key))
        self.emit(out)

    def on_timer(self, now):
        if not self.held:
            return  # the original's timer stops when it finds nothing to release
        held, self.held = self.held, {}
        out = [e for key in sorted(held) for e in held[key]]
        self.next_timer += self.timeout
        self._schedule(self.next_timer, owned=False)
        self.emit(out)

    def state_items(self):
        return {
            "k": self.k,
            "greatest": self.greatest,
            "pending": self.pending,
            "held": self.held,
            "last_sent": self.last_sent,
            "next": self.next_timer,
        }

    def load_state_items(self, s):
        self.k, self.greatest, self.last_sent = s["k"], s["greatest"], s["last_sent"]
        self.pending, self.held = dict(s["pending"]), dict(s["held"])
        self.next_timer = s["next"]
