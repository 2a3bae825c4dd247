"""`#timeseries:kalmanMinMax(value, Q, R, window, 'min'|'max'|'minmax')` and
`#timeseries:kernelMinMax(value, bandwidth, window, 'min'|'max'|'minmax')`: local extrema of a
smoothed series, as Siddhi 3.2's timeseries extrema processors find them.

Each event joins a window of the last `window + 1` values. Once it is full, the series is
smoothed (a fresh scalar Kalman filter over the window, or a Gaussian kernel) and a turning
point of the smoothed series is looked up in the raw values; the raw event there is emitted
with `extremaType` ('min' or 'max') appended, unless it was among the last six reported. The
original's quirks are kept: the maximum search starts from Double.MIN_VALUE (the smallest
positive double), the kernel processor drops the window's oldest event also when it reports
one, and the kernel weights are computed once, for the first window's size."""

import math
import struct

from cep.engine.ext.base import ExtStreamProcessor, constant_value, fail, is_constant
from cep.model import AttrType, Variable

NUMBERS = (AttrType.DOUBLE, AttrType.FLOAT, AttrType.INT, AttrType.LONG)
_MIN_VALUE = 5e-324  # Java's Double.MIN_VALUE
_MAX_VALUE = 1.7976931348623157e308
_ORD = ("1st", "2nd", "3rd", "4th", "5th")


def _same(a, b):
    """Java's Double.equals: the same bits (so 0.0 != -0.0, NaN equals NaN)."""
    return struct.pack(">d", a) == struct.pack(">d", b)


def find_max(values, before, after=None):
    after = before if after is None else after
    for i in range(len(values) - after - 1, before - 1, -1):
        best = _MIN_VALUE
        for j in range(i - before, i + after + 1):
            if values[j] > best:
                best = values[j]
        if _same(values[i], best):
            return i
    return None


def find_min(values, before, after=None):
    after = before if after is None else after
    for i in range(len(values) - after - 1, before - 1, -1):
        best = _MAX_VALUE
        for j in range(i - before, i + after + 1):
            if values[j] < best:
                best = values[j]
        if _same(values[i], best):
            return i
    return None


def kalman_smooth(values, q, r):
    p, x, out = 1.0, 0.0, []
    for v in values:
        k = (p + q) / (p + q + r)
        p = r * (p + q) / (r + p + q)
        x += (v - x) * k
        out.append(x)
    return out


def _parse_double(value):
    """Java's Double.parseDouble(String.valueOf(value)), or None when it fails."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def _parse_int(value):
    if isinstance(value, bool) or isinstance(value, float):
        return None
    if isinstance(value, int):
        return value if -(2**31) <= value < 2**31 else None
    text = str(value)
    if text[:1] in "+-":
        sign, digits = text[0], text[1:]
    else:
        sign, digits = "", text
    return int(sign + digits) if digits.isdigit() else None


class _Extrema(ExtStreamProcessor):
    name = ""
    arity = 0

    @classmethod
    def signature(cls, args, types, call):
        if len(args) != cls.arity:
            fail(
                call,
                None,
                f"Invalid no of arguments passed to {cls.name}, required "
                f"{cls.arity}, but found {len(args)}",
            )
        if types[0] not in NUMBERS:
            fail(
                call,
                0,
                f"Invalid parameter type found for the 1st argument of {cls.name}, "
                f"required DOUBLE or FLOAT or INT or LONG but found "
                f"{types[0].value.upper()}",
            )
        if not isinstance(args[0], Variable):
            fail(call, 0, f"the 1st argument of {cls.name} must be an attribute")
        cls.options(args, types, call)
        return [("extremaType", AttrType.STRING)]

    @classmethod
    def _double(cls, args, types, call, i):
        value = constant_value(args[i]) if is_constant(args[i]) else None
        parsed = _parse_double(value) if value is not None else None
        if parsed is None:
            fail(
                call,
                i,
                f"Invalid parameter type found for the {_ORD[i]} argument of "
                f"{cls.name} required DOUBLE constant, but found "
                f"{types[i].value.upper()}",
            )
        return parsed

    @classmethod
    def _kind(cls, args, types, call, i):
        if not is_constant(args[i]) or types[i] is not AttrType.STRING:
            fail(
                call,
                i,
                f"Invalid parameter type found for the {_ORD[i]} argument of "
                f"{cls.name}, required STRING constant, but found "
                f"{types[i].value.upper()}",
            )
        kind = constant_value(args[i]).lower()
        return kind if kind in ("min", "max") else "minmax"

    @classmethod
    def parse(cls, p):
        from cep.engine.expressions import compile_expression

        types = [compile_expression(a, p.scope).type for a in p.params]
        return (p.getter(0),) + cls.options(p.params, types, p.window)

    def setup(self, get, *options):
        self.get = get
        self.configure(*options)
        self.events, self.values, self.recent = [], [], []
        self.min_pos = self.max_pos = 0

    def _unique(self, event):
        if any(e is event for e in self.recent):
            return False
        if len(self.recent) > 5:
            self.recent.pop(0)
        self.recent.append(event)
        return True

    def process(self, batch):
        out = []
        for ts, row, kind in batch:
            value = self.get(row)
            self.events.append((ts, tuple(row), kind))
            self.values.append(None if value is None else float(value))
            if len(self.events) > self.window:
                smoothed = self.smooth()
                if self.kind == "minmax":
                    high, low = self._max(smoothed), self._min(smoothed)
                    if high is not None and low is not None:
                        out.extend((low, high) if self.max_pos > self.min_pos else (high, low))
                    elif high is not None or low is not None:
                        out.append(high if high is not None else low)
                else:
                    found = self._min(smoothed) if self.kind == "min" else self._max(smoothed)
                    if found is not None:
                        out.append(found)
                self.events.pop(0)
                self.values.pop(0)
        self.emit(out)

    @staticmethod
    def _tag(event, label):
        ts, row, kind = event
        return (ts, row + (label,), kind)

    def state_items(self):
        return {
            "events": self.events,
            "values": self.values,
            "recent": self.recent,
            "pos": (self.min_pos, self.max_pos),
        }

    def load_state_items(self, s):
        self.events, self.values = list(s["events"]), list(s["values"])
        self.recent = list(s["recent"])
        self.min_pos, self.max_pos = s["pos"]


class KalmanMinMax(_Extrema):
    name, arity = "KalmanMinMaxStreamProcessor", 5

    @classmethod
    def options(cls, args, types, call):
        q = cls._double(args, types, call, 1)
        r = cls._double(args, types, call, 2)
        value = constant_value(args[3]) if is_constant(args[3]) else None
        window = _parse_int(value) if value is not None else None
        if window is None:
            fail(
                call,
                3,
                f"Invalid parameter type found for the 4th argument of {cls.name} "
                f"required INT constant, but found {types[3].value.upper()}",
            )
        return q, r, window, cls._kind(args, types, call, 4)

    def configure(self, q, r, window, kind):
        self.q, self.r, self.window, self.kind = q, r, window, kind

    def smooth(self):
        return kalman_smooth(self.values, self.q, self.r)

    def _max(self, smoothed):
        if find_max(smoothed, 2) is None:
            return None
        i = find_max(self.values, 10)
        if i is None or not self._unique(self.events[i]):
            return None
        self.max_pos = i
        return self._tag(self.events[i], "max")

    def _min(self, smoothed):
        if find_min(smoothed, 2) is None:
            return None
        i = find_min(self.values, 10)
        if i is None or not self._unique(self.events[i]):
            return None
        self.min_pos = i
        return self._tag(self.events[i], "min")


class KernelMinMax(_Extrema):
    name, arity = "KernelMinMaxStreamProcessor", 4

    @classmethod
    def options(cls, args, types, call):
        bw = cls._double(args, types, call, 1)
        if not is_constant(args[2]) or types[2] is not AttrType.INT:
            fail(
                call,
                2,
                f"Invalid parameter type found for the 3rd argument of {cls.name}, "
                f"required INT constant, but found {types[2].value.upper()}",
            )
        return bw, constant_value(args[2]), cls._kind(args, types, call, 3)

    def configure(self, bw, window, kind):
        self.bw, self.window, self.kind = bw, window, kind
        self.kernel = None

    def _gaussian(self, n):
        with_bw = -n * n / (2.0 * self.bw * self.bw) if self.bw else -math.inf
        try:
            top = math.pow(2.718281828459045, with_bw)
        except OverflowError:
            top = math.inf
        bottom = self.bw * math.sqrt(6.283185307179586)
        return top / bottom if bottom else (math.nan if top == 0 else math.inf)

    def smooth(self):
        values = self.values
        if self.kernel is None:
            self.kernel = [self._gaussian(i) for i in range(len(values) + 1)]
        out = []
        for j in range(len(values)):
            total = weight = 0.0
            for n, v in enumerate(values):
                w = self.kernel[j - n] if j - n >= 0 else self.kernel[n - j]
                total += w * v
                weight += w
            out.append(total / weight if weight else math.nan)
        return out

    def _pick(self, turn, raw, label):
        if turn is None:
            return None
        if raw is None or not (raw - turn <= self.window // 5 and turn - raw <= self.window // 2):
            return None
        event = self.events[raw]
        if not self._unique(event):
            return None
        self.events.pop(0)
        self.values.pop(0)
        return self._tag(event, label)

    def _max(self, smoothed):
        turn = find_max(smoothed, 1)
        if turn is None:
            return None
        raw = find_max(self.values, self.window // 5, self.window // 3)
        found = self._pick(turn, raw, "max")
        if found is not None:
            self.max_pos = raw
        return found

    def _min(self, smoothed):
        turn = find_min(smoothed, 1)
        if turn is None:
            return None
        raw = find_min(self.values, self.window // 5, self.window // 3)
        found = self._pick(turn, raw, "min")
        if found is not None:
            self.min_pos = raw
        return found
