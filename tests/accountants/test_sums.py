"""The accountants' summation helpers: compensated sums and the lean log-sum-exp."""

import math

import numpy as np
import pytest
from scipy import special

from accountants._sums import log_sum_exp


@pytest.mark.parametrize("seed", range(5))
def test_log_sum_exp_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=10.0 ** rng.integers(0, 4), size=rng.integers(1, 5000))
    assert log_sum_exp(x) == pytest.approx(float(special.logsumexp(x)), rel=1e-14, abs=1e-14)


def test_log_sum_exp_edge_cases():
    assert log_sum_exp([]) == -math.inf
    assert log_sum_exp([-math.inf, -math.inf]) == -math.inf
    assert log_sum_exp([-1e300, 0.0]) == 0.0
    assert log_sum_exp([math.inf, 0.0]) == math.inf
    assert math.isnan(log_sum_exp([math.nan, 0.0]))
    assert log_sum_exp([800.0, 800.0]) == pytest.approx(800.0 + math.log(2.0), rel=1e-15)  # no overflow
