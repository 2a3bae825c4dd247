"""Student's t cumulative distribution as Apache commons-math 3.6 computes it (regularized
incomplete beta by its continued fraction, epsilon 1e-14), so the significance tests of the
timeseries extensions decide exactly as the Java originals do near their thresholds."""

import math

_SMALL = 1e-50


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def regularized_beta(x: float, a: float, b: float, eps: float = 1e-14) -> float:
    if math.isnan(x) or math.isnan(a) or math.isnan(b) or x < 0 or x > 1 or a <= 0 or b <= 0:
        return math.nan
    if x > (a + 1) / (2 + b + a) and 1 - x <= (b + 1) / (2 + b + a):
        return 1 - regularized_beta(1 - x, b, a, eps)

    def coef_b(n):
        if n % 2 == 0:
            m = n / 2.0
            return (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m))
        m = (n - 1) / 2.0
        return -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))

    h_prev, d_prev, c_prev = 1.0, 0.0, 1.0
    h_n = h_prev
    n = 1
    while n < 2**31 - 1:
        bn = coef_b(n)
        d_n = 1.0 + bn * d_prev
        if abs(d_n) < _SMALL:
            d_n = _SMALL
        c_n = 1.0 + bn / c_prev
        if abs(c_n) < _SMALL:
            c_n = _SMALL
        d_n = 1 / d_n
        delta = c_n * d_n
        h_n = h_prev * delta
        if math.isinf(h_n) or math.isnan(h_n):
            return math.nan
        if abs(delta - 1.0) < eps:
            break
        d_prev, c_prev, h_prev = d_n, c_n, h_n
        n += 1
    log_x = math.log(x) if x > 0 else -math.inf
    front = a * log_x + b * math.log1p(-x) - math.log(a) - _log_beta(a, b)
    return math.exp(front) / h_n


def t_cdf(x: float, dof: float) -> float:
    """P(T <= x) for Student's t with `dof` degrees of freedom (dof > 0)."""
    if x == 0:
        return 0.5
    if math.isnan(x):
        return math.nan
    t = regularized_beta(dof / (dof + x * x), 0.5 * dof, 0.5)
    return 0.5 * t if x < 0 else 1.0 - 0.5 * t
