"""`#markov:markovChain(id, state, duration, alert.threshold, hold.limit|matrix.file[, train])`,
as Siddhi 3.2's MarkovChainStreamProcessor: learns state-transition counts per id and appends
(lastState, transitionProbability, notify) to each event once more than `hold.limit` events
were seen (before that, events are dropped). `notify` is true when the probability of the
transition from the id's last state is at most the threshold.

A string fifth parameter names a CSV file holding a predefined matrix (a header row of state
names, then one row of counts per state), read when the plan starts. As in the original, an
id's last state is forgotten `duration` after its latest event, counted on the wall clock,
checked by a timer on the plan's clock."""

import time

from cep.engine.events import CURRENT
from cep.engine.ext.base import ExtStreamProcessor, constant_value, fail, is_constant
from cep.errors import InvalidQueryError
from cep.model import AttrType

STRING, DOUBLE, BOOL = AttrType.STRING, AttrType.DOUBLE, AttrType.BOOL


class MarkovChain(ExtStreamProcessor):
    @classmethod
    def signature(cls, args, types, call):
        if len(args) not in (5, 6):
            fail(
                call,
                None,
                f"Markov chain function has to have exactly 5 or 6 parameters, "
                f"currently {len(args)} parameters provided",
            )
        for i in (0, 1):
            if types[i] is not STRING:
                fail(
                    call,
                    i,
                    f"the {('id', 'state')[i]} must be of type string, not {types[i].value}",
                )
        for i, what in (
            (2, "Duration"),
            (3, "Alert threshold probability value"),
            (4, "Training batch size"),
        ):
            if not is_constant(args[i]):
                fail(call, i, f"{what} has to be a constant")
        if types[2] not in (AttrType.INT, AttrType.LONG):
            fail(call, 2, f"Duration should be of type int or long. But found {types[2].value}")
        if types[3] is not DOUBLE:
            fail(
                call,
                3,
                f"Alert threshold probability should be of type double. But found {types[3].value}",
            )
        if types[4] not in (AttrType.INT, AttrType.LONG, STRING):
            fail(
                call,
                4,
                f"5th parameter should be the Training batch size or Markov matrix "
                f"storage location. They should be of types int/long or String. But "
                f"found {types[4].value}",
            )
        if len(args) == 6 and types[5] is not BOOL:
            fail(call, 5, f"Training option should be of type boolean. But found {types[5].value}")
        return [("lastState", STRING), ("transitionProbability", DOUBLE), ("notify", BOOL)]

    @classmethod
    def parse(cls, p):
        fifth = constant_value(p.params[4])
        matrix = None
        if isinstance(fifth, str):
            matrix = _read_matrix(fifth, p.params[4])
            fifth = 0
        train = True
        get_train = None
        if len(p) == 6:
            if is_constant(p.params[5]):
                train = bool(constant_value(p.params[5]))
            else:
                get_train = p.getter(5)
        return (
            p.getter(0),
            p.getter(1),
            int(constant_value(p.params[2])),
            float(constant_value(p.params[3])),
            int(fifth),
            matrix,
            train,
            get_train,
        )

    def setup(self, get_id, get_state, duration, threshold, hold, matrix, train, get_train):
        self.get_id, self.get_state, self.get_train = get_id, get_state, get_train
        self.duration, self.threshold, self.hold, self.train = duration, threshold, hold, train
        self.count = 0
        self.last = {}  # id -> last state
        self.expiry = {}  # id -> wall-clock expiry, in first-insertion order
        self.starts = dict(matrix[0]) if matrix else {}  # state -> transitions out of it
        self.transitions = dict(matrix[1]) if matrix else {}  # "a%%b" -> count

    def process(self, batch):
        out = []
        for ts, row, kind in batch:
            if kind != CURRENT:
                continue
            self._schedule_expiry()
            train = self.train if self.get_train is None else self.get_train(row)
            alert = self._process(self.get_id(row), self.get_state(row), train)
            if alert is not None:
                out.append((ts, tuple(row) + alert, kind))
        self.emit(out)

    def _schedule_expiry(self):
        clock = self.env.scheduler.clock if self.env.playback else self.now()
        due = (0 if clock is None else clock) + self.duration
        self.env.scheduler.notify_at(due, self._expire)

    def _expire(self, now):
        for key, due in self.expiry.items():
            if due <= now:
                self.last.pop(key, None)
            else:
                break

    def _process(self, id_, state, train):
        self.count += 1
        last = self.last.get(id_)
        self.last[id_] = state
        self.expiry[id_] = int(time.time() * 1000) + self.duration
        alert = self._alert(last, state) if self.count > self.hold else None
        if train and last is not None:
            self.starts[last] = self.starts.get(last, 0.0) + 1
            key = _key(last, state)
            self.transitions[key] = self.transitions.get(key, 0.0) + 1
        return alert

    def _alert(self, last, state):
        probability, notify = 0.0, False
        if last is not None:
            total = self.starts.get(last)
            count = self.transitions.get(_key(last, state))
            if total is not None and count is not None:
                probability = (
                    count / total if total else (float("nan") if count == 0 else float("inf"))
                )
            notify = probability <= self.threshold
        return (last, probability, notify)

    def state_items(self):
        return {
            "count": self.count,
            "last": self.last,
            "expiry": self.expiry,
            "starts": self.starts,
            "transitions": self.transitions,
        }

    def load_state_items(self, s):
        self.count = s["count"]
        self.last, self.expiry = dict(s["last"]), dict(s["expiry"])
        self.starts, self.transitions = dict(s["starts"]), dict(s["transitions"])


def _key(a, b):
    return f"{a}%%{b}"


def _read_matrix(path, param):
    """(start-state totals, transition counts) from a CSV matrix file."""
    try:
        with open(path) as f:
            rows = [line.rstrip("\n") for line in f]
    except FileNotFoundError:
        raise InvalidQueryError(
            f"{path} does not exist. Please provide a valid file path.", param.span
        ) from None
    except IsADirectoryError:
        raise InvalidQueryError(
            f"{path} is not a file. Please provide a valid csv file.", param.span
        ) from None
    if not rows:
        return {}, {}
    names = rows[0].split(",")
    starts, transitions = {}, {}
    for number, row in enumerate(rows[1:]):
        size = f"{len(names)} x {len(names)}"
        if number >= len(names):
            raise InvalidQueryError(
                f"Number of rows in the matrix should be equal to number "
                f"of states. please provide a {size} matrix",
                param.span,
            )
        values = row.split(",")
        if len(values) != len(names):
            raise InvalidQueryError(
                f"Number of columns in the matrix should be equal to "
                f"number of states. please provide a {size} matrix",
                param.span,
            )
        counts = [float(v) for v in values]
        starts[names[number]] = sum(counts)
        for end, c in zip(names, counts):
            transitions[_key(names[number], end)] = c
    return starts, transitions
