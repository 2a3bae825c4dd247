"""The state of one `kf:kalmanFilter` call site, computed as Siddhi 3.2's KalmanFilter: a static
filter for one or two arguments, a constant-velocity (2x2) filter for four."""

from cep.errors import EventFailure

_ORDINAL = ("First", "Second", "Third", "Fourth")


def _mul(a, b):
    return [
        [a[i][0] * b[0][j] + a[i][1] * b[1][j] for j in range(len(b[0]))] for i in range(len(a))
    ]


def _add(a, b, sign=1.0):
    return [[a[i][j] + sign * b[i][j] for j in range(len(a[0]))] for i in range(len(a))]


def _t(a):
    return [[a[0][0], a[1][0]], [a[0][1], a[1][1]]]


def _inverse(s):
    """The inverse of a 2x2 matrix by LU with partial pivoting (what commons-math does)."""
    (a, b), (c, d) = s
    if abs(c) > abs(a):  # pivot rows
        (a, b), (c, d) = (c, d), (a, b)
        swap = True
    else:
        swap = False
    if a == 0:
        raise EventFailure("kf:kalmanFilter(): the noise matrix is singular")
    l21 = c / a
    u22 = d - l21 * b
    if u22 == 0:
        raise EventFailure("kf:kalmanFilter(): the noise matrix is singular")
    # solve LU x = P e_k for k = 0, 1
    cols = []
    for e in ((1.0, 0.0), (0.0, 1.0)):
        y0, y1 = (e[1], e[0]) if swap else e
        y1 = y1 - l21 * y0
        x1 = y1 / u22
        x0 = (y0 - b * x1) / a
        cols.append((x0, x1))
    return [[cols[0][0], cols[1][0]], [cols[0][1], cols[1][1]]]


class KalmanFilter:
    """Callable with the call's arguments; keeps the filter's state between calls. A
    partition's per-key copy of the query gets a `fresh()` one (cep.engine.call_state)."""

    call_state = True

    def fresh(self) -> "KalmanFilter":
        return KalmanFilter(self.arity)

    def __init__(self, arity: int):
        self.arity = arity
        self.transition = 0.0
        self.noise = 0.0
        self.estimate = 0.0
        self.variance = 0.0
        self.h = None  # dynamic filter: measurement matrix, variance, state, previous time
        self.p = None
        self.x = None
        self.prev_ts = 0

    def __call__(self, *data):
        for i, v in enumerate(data[:2] if len(data) > 1 else data):
            if v is None:
                self._null(i, len(data))
        if len(data) == 1:
            return self._static(float(data[0]), None)
        if len(data) == 2:
            return self._static(float(data[0]), float(data[1]))
        for i in (2, 3):
            if data[i] is None:
                self._null(i, len(data))
        return self._dynamic(float(data[0]), float(data[1]), float(data[2]), int(data[3]))

    @staticmethod
    def _null(i, n):
        what = "Argument" if n == 1 else f"{_ORDINAL[i]} argument"
        kind = "a long" if i == 3 else "a double"
        raise EventFailure(
            f"Invalid input given to kf:kalmanFilter() function. {what} should be {kind}"
        )

    def _static(self, measured, noise_sd):
        if noise_sd is None:  # one argument: initialised once
            if self.transition == 0:
                self.transition, self.variance, self.noise = 1.0, 1000.0, 0.001
                self.estimate = measured
        elif self.estimate == 0:  # two arguments: (re)initialised while the estimate is 0
            self.transition, self.variance, self.noise = 1.0, 1000.0, noise_sd
            self.estimate = measured
        self.estimate = self.transition * self.estimate
        gain = self.variance / (self.variance + self.noise)
        self.estimate = self.estimate + gain * (measured - self.estimate)
        self.variance = (1 - gain) * self.variance
        return self.estimate

    def _dynamic(self, value, rate, noise_sd, ts):
        measured = [[value], [rate]]
        if self.h is None:
            dt = 1
            self.h = [[1.0, 0.0], [0.0, 1.0]]
            self.p = [[1000.0, 0.0], [0.0, 1000.0]]
            self.x = measured
        else:
            dt = ts - self.prev_ts
        r = [[noise_sd, 0.0], [0.0, noise_sd]]
        a = [[1.0, float(dt)], [0.0, 1.0]]
        self.x = _mul(a, self.x)
        self.p = _mul(_mul(a, self.p), _t(a))
        s = _add(_mul(_mul(self.h, self.p), _t(self.h)), r)
        gain = _mul(_mul(self.p, _t(self.h)), _inverse(s))
        self.x = _add(self.x, _mul(gain, _add(measured, _mul(self.h, self.x), -1.0)))
        self.p = _add(self.p, _mul(_mul(gain, self.h), self.p), -1.0)
        self.prev_ts = ts
        return self.x[0][0]
