"""The t distribution the regression extensions test coefficients with (commons-math's
algorithm): checked against table values and the normal limit."""

import math

from cep.engine.ext.tdist import regularized_beta, t_cdf


def test_table_values():
    assert math.isclose(t_cdf(2.228138851986, 10), 0.975, abs_tol=1e-9)
    assert math.isclose(t_cdf(1.812461122811, 10), 0.95, abs_tol=1e-9)
    assert math.isclose(t_cdf(12.7062047361747, 1), 0.975, abs_tol=1e-9)
    assert t_cdf(0.0, 3) == 0.5
    assert math.isclose(t_cdf(-2.228138851986, 10), 0.025, abs_tol=1e-9)


def test_large_dof_approaches_the_normal():
    assert math.isclose(t_cdf(1.959963984540, 1e7), 0.975, abs_tol=1e-6)


def test_degenerate_inputs_follow_java():
    assert t_cdf(math.inf, 5) == 1.0
    assert math.isnan(t_cdf(math.nan, 5))
    assert math.isnan(regularized_beta(-0.1, 1.0, 1.0))
