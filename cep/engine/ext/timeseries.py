"""`#timeseries:regress|forecast|outlier` and their `lengthTime*` forms: linear regression over
the events seen (the last `batch` of them, or those of the last `time` and at most `length`),
as Siddhi 3.2's timeseries extension computes it.

Each appends `stderr, beta0, beta1, ...` (forecast adds `forecastY`, outlier `outlier`). Every
`interval`-th event gets the result, the others are dropped. A coefficient whose t-test is not
significant at the confidence level is reported as 0; a degenerate fit reports zeros. The
parameter rules (which parameter decides that the options are given, which types are taken)
and their messages are the original's."""

import math
from collections import deque

import numpy as np

from cep.engine.ext.base import ExtStreamProcessor, constant_value, fail, is_constant
from cep.engine.ext.tdist import t_cdf
from cep.model import AttrType

INT, LONG, DOUBLE, BOOL = AttrType.INT, AttrType.LONG, AttrType.DOUBLE, AttrType.BOOL
NUMBERS = (INT, LONG, AttrType.FLOAT, DOUBLE)


def _div(a: float, b: float) -> float:
    """Java's double division (no exception on zero)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _sqrt(a: float) -> float:
    return math.sqrt(a) if a >= 0 else (math.inf if a == math.inf else math.nan)


def _insignificant(t: float, dof: float, alpha: float) -> bool:
    return 2.0 * (1.0 - t_cdf(abs(t), dof)) > alpha


class Calculator:
    """The regression state: the points of the window and the running sums."""

    def __init__(self, x_count, calc_interval, batch, ci, duration=None):
        self.x_count = x_count  # number of x variables
        self.calc_interval, self.batch, self.ci, self.duration = calc_interval, batch, ci, duration
        self.ys, self.xs, self.expiry = deque(), deque(), deque()
        self.count = self.inc = 0
        self.sum_x = self.sum_y = self.sum_xx = 0.0

    def add(self, values, now=None):
        """Add a point; -> the result tuple, or None when this event gets none."""
        self.inc += 1
        self.count += 1
        y = float(values[0])
        xs = tuple(float(v) for v in values[1 : 1 + self.x_count])
        self.ys.append(y)
        self.xs.append(xs)
        if self.x_count == 1:
            self.sum_x += xs[0]
            self.sum_xx += xs[0] * xs[0]
            self.sum_y += y
        if self.duration is None:
            if self.count > self.batch:
                self.count -= 1
                self._drop()
        else:
            expires = now + self.duration
            self.expiry.append(expires)
            while self.expiry and self.expiry[0] <= now:
                self._drop()
                self.count -= 1
            if self.count > self.batch:
                self._drop()
                self.count -= 1
        if self.inc % self.calc_interval != 0:
            return None
        return self._simple() if self.x_count == 1 else self._multiple()

    def _drop(self):
        y, xs = self.ys.popleft(), self.xs.popleft()
        if self.expiry:
            self.expiry.popleft()
        if self.x_count == 1:
            self.sum_x -= xs[0]
            self.sum_xx -= xs[0] * xs[0]
            self.sum_y -= y

    def _simple(self):
        n = self.count
        dof = n - 2
        if dof <= 0:
            return (0.0, 0.0, 0.0)
        mean_x, mean_y = self.sum_x / n, self.sum_y / n
        sxx = sxy = 0.0
        for (x,), y in zip(self.xs, self.ys):
            sxx += (x - mean_x) * (x - mean_x)
            sxy += (x - mean_x) * (y - mean_y)
        slope = _div(sxy, sxx)
        intercept = mean_y - slope * mean_x
        sse = 0.0
        for (x,), y in zip(self.xs, self.ys):
            fit = slope * x + intercept
            sse += (fit - y) * (fit - y)
        stderr = _sqrt(sse / dof)
        slope_err = _div(stderr, _sqrt(sxx))
        t_intercept = _div(intercept, stderr * _sqrt(_div(self.sum_xx, n * sxx)))
        t_slope = _div(slope, slope_err)
        alpha = 1.0 - self.ci
        if _insignificant(t_intercept, dof, alpha):
            intercept = 0.0
        if _insignificant(t_slope, dof, alpha):
            slope = 0.0
        return (stderr, intercept, slope)

    def _multiple(self):
        n, k = self.count, self.x_count
        dof = n - k - 1
        zeros = (0.0,) * (k + 2)
        if dof <= 0:
            return zeros
        x = np.array([(1.0,) + xs for xs in self.xs])
        y = np.array([[v] for v in self.ys])
        try:
            with np.errstate(all="ignore"):
                inverse = np.linalg.inv(x.T @ x)
                beta = inverse @ x.T @ y
                fit = x @ beta
        except np.linalg.LinAlgError:
            return zeros
        sse = 0.0
        for i in range(n):
            sse += (fit[i, 0] - y[i, 0]) * (fit[i, 0] - y[i, 0])
        mse = sse / dof
        out = [_sqrt(mse)]
        alpha = 1.0 - self.ci
        for j in range(k + 1):
            err = _sqrt(float(inverse[j, j]) * mse)
            t = _div(float(beta[j, 0]), err)
            out.append(0.0 if _insignificant(t, dof, alpha) else float(beta[j, 0]))
        return tuple(out)


# -- parameter rules of the originals --


def _int_option(args, types, call, i, message):
    if types[i] is not INT or not is_constant(args[i]):
        fail(call, i, message)
    return constant_value(args[i])


def _ci_option(args, types, call, i, message):
    if types[i] is not DOUBLE or not is_constant(args[i]):
        fail(call, i, message)
    ci = constant_value(args[i])
    if not 0.0 <= ci <= 1.0:
        fail(call, i, "Confidence interval should be a value between 0 and 1")
    return ci


def _numbers(args, types, call, first, least):
    if len(args) - first < least:
        fail(
            call,
            None,
            f"needs {least} or more y and x parameters after the options, not {len(args) - first}",
        )
    for i in range(first, len(args)):
        if types[i] not in NUMBERS:
            fail(
                call,
                i,
                f"parameter {i + 1} must be a number (int, long, float or double), "
                f"not {types[i].value}",
            )


class _Regression(ExtStreamProcessor):
    """Shared parse and processing; subclasses give `layout(args, types, call)` -> (options,
    first y position, number of y/x params, extra kind)."""

    kind = ""  # '', 'forecast' or 'outlier'
    length_time = False

    @classmethod
    def signature(cls, args, types, call):
        opts, first, count = cls.layout(args, types, call)
        attrs = [("stderr", DOUBLE)] + [(f"beta{i}", DOUBLE) for i in range(count)]
        if cls.kind == "forecast":
            attrs.append(("forecastY", DOUBLE))
        elif cls.kind == "outlier":
            attrs.append(("outlier", BOOL))
        return attrs

    @classmethod
    def parse(cls, p):
        from cep.engine.expressions import compile_expression

        types = [compile_expression(a, p.scope).type for a in p.params]
        opts, first, count = cls.layout(p.params, types, p.window)
        getters = [p.getter(i) for i in range(first, len(p))]
        aux = p.getter(first - 1) if cls.kind else None
        return opts, count, getters, aux

    def setup(self, opts, count, getters, aux):
        self.getters, self.aux, self.coefficients = getters, aux, None
        interval, batch, ci, duration = opts
        self.calc = Calculator(count - 1, interval, batch, ci, duration)

    def process(self, batch):
        out = []
        for ts, row, kind in batch:
            values = [g(row) for g in self.getters]
            aux = float(self.aux(row)) if self.aux is not None else None
            now = None
            if self.length_time:
                now = max(self.clock(), ts) if self.env.playback else self.now()
            if self.kind == "outlier":
                flag = False
                if self.coefficients is not None:
                    stderr, b0, b1 = self.coefficients[:3]
                    fit = b0 + b1 * float(values[1])
                    y = float(values[0])
                    flag = y < fit - aux * stderr or y > fit + aux * stderr
            result = self.calc.add(values, now)
            if self.kind == "outlier":
                self.coefficients = result
            if result is None:
                continue
            if self.kind == "forecast":
                result = result + (result[-2] + result[-1] * aux,)
            elif self.kind == "outlier":
                result = result + (flag,)
            out.append((ts, tuple(row) + result, kind))
        self.emit(out)

    def state_items(self):
        return {"calc": self.calc.__dict__.copy(), "coefficients": self.coefficients}

    def load_state_items(self, s):
        self.calc.__dict__.update(s["calc"])
        self.coefficients = s["coefficients"]


_OPTIONS = "Calculation interval, batch size and range should be of type int"


def _batch_options(args, types, call, at):
    """(interval, batch, ci) given as the first three parameters."""
    interval = _int_option(args, types, call, at, _OPTIONS)
    batch = _int_option(args, types, call, at + 1, _OPTIONS)
    ci = _ci_option(args, types, call, at + 2, "Confidence interval should be of type double")
    return interval, batch, ci


class Regress(_Regression):
    @classmethod
    def layout(cls, args, types, call):
        opts, first = (1, 1000000000, 0.95), 0
        if args and is_constant(args[0]):
            if len(args) < 3:
                fail(
                    call,
                    None,
                    "the options are calculation interval, batch size and "
                    "confidence interval: give all three",
                )
            opts, first = _batch_options(args, types, call, 0), 3
        _numbers(args, types, call, first, 2)
        return opts + (None,), first, len(args) - first


class _SimpleOnly(_Regression):
    @classmethod
    def layout(cls, args, types, call):
        opts, first = (1, 1000000000, 0.95), 1
        if len(args) > 1 and is_constant(args[1]):
            if len(args) < 4:
                fail(
                    call,
                    None,
                    "the options are calculation interval, batch size and "
                    "confidence interval: give all three",
                )
            opts, first = _batch_options(args, types, call, 0), 4
        count = len(args) - first
        # the forecast original counts its x.next parameter too when no options are given
        counted = len(args) if cls.kind == "forecast" and first == 1 else count
        if counted > 2:
            fail(
                call,
                None,
                f"{cls.kind.capitalize()} Function is available only for simple "
                f"linear regression (one y and one x parameter)",
            )
        _numbers(args, types, call, first - 1, 3)
        return opts + (None,), first, count


class Forecast(_SimpleOnly):
    kind = "forecast"


class Outlier(_SimpleOnly):
    kind = "outlier"


class _LengthTime(_Regression):
    length_time = True
    lead = 2  # the parameters before the options: time, length (and x.next or range)

    @classmethod
    def layout(cls, args, types, call):
        if len(args) < 2:
            fail(call, None, "needs the time duration and size parameters")
        if not is_constant(args[0]):
            fail(call, 0, "Time duration parameter must be a constant")
        if types[0] not in (INT, LONG):
            fail(
                call,
                0,
                f"Time duration parameter should be either int or long, but found "
                f"{types[0].value.upper()}",
            )
        duration = constant_value(args[0])
        if not is_constant(args[1]):
            fail(call, 1, "Size parameter must be a constant")
        if types[1] is not INT:
            fail(call, 1, f"Size parameter should be int, but found {types[1].value.upper()}")
        size = constant_value(args[1])
        at = cls.lead
        first, interval, ci = at, 1, 0.95
        if len(args) > at and is_constant(args[at]):
            if types[at] is not INT:
                fail(
                    call,
                    at,
                    f"Calculation interval should be int, but found {types[at].value.upper()}",
                )
            interval = constant_value(args[at])
            if len(args) <= at + 1 or not is_constant(args[at + 1]):
                fail(call, min(at + 1, len(args) - 1), "Confidence interval must be a constant")
            if types[at + 1] is not DOUBLE:
                fail(
                    call,
                    at + 1,
                    f"Confidence interval should be double, but found "
                    f"{types[at + 1].value.upper()}",
                )
            ci = constant_value(args[at + 1])
            if not 0.0 <= ci <= 1.0:
                fail(call, at + 1, "Confidence interval should be a value between 0 and 1")
            first = at + 2
        count = len(args) - first
        if cls.kind and count > 2:
            fail(
                call,
                None,
                f"{cls.kind.capitalize()} Function is available only for simple "
                f"linear regression (one y and one x parameter)",
            )
        _numbers(args, types, call, first, 2)
        if cls.kind and types[2] not in NUMBERS:
            fail(call, 2, f"parameter 3 must be a number, not {types[2].value}")
        return (interval, size, ci, duration), first, count

    @classmethod
    def parse(cls, p):
        from cep.engine.expressions import compile_expression

        types = [compile_expression(a, p.scope).type for a in p.params]
        opts, first, count = cls.layout(p.params, types, p.window)
        getters = [p.getter(i) for i in range(first, len(p))]
        aux = p.getter(2) if cls.kind else None
        return opts, count, getters, aux


class LengthTimeRegress(_LengthTime):
    pass


class LengthTimeForecast(_LengthTime):
    kind = "forecast"
    lead = 3


class LengthTimeOutlier(_LengthTime):
    kind = "outlier"
    lead = 3
