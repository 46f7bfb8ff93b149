"""Compositions whose curves pass the largest float answer inf (vacuous, valid) without RuntimeWarnings: numpy's
"overflow encountered in multiply / add" from the RDP sum, the discrete Laplace curve and the optimal
composition's window became errors under ``-W error`` (session 14, lead's fuzzer)."""

from __future__ import annotations

import math
import warnings

import pytest

from accountants import (ApproxDP, DiscreteLaplace, OptimalHomogeneousAccountant, PureDP, RDPAccountant, ZCDP,
                         best_delta, best_epsilon)
from accountants.events import Composed, Laplace


@pytest.mark.parametrize("event", [
    PureDP(1e308) * 2,
    Composed((PureDP(1e300) * 10**9, ZCDP(1e-12))),
    Composed((Laplace(1e308, 750.0), ZCDP(1e300) * 10**9)),
    DiscreteLaplace(1.0, 1e300, grid=2.0 ** -20) * 2,
    ApproxDP(1e308, 0.1) * 10**12,
], ids=["pure-1e308", "pure-1e300-count", "zcdp-1e300", "discrete-laplace-1e300", "approx-1e308"])
def test_overflowing_curves_answer_without_warnings(event):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eps = best_epsilon(event, 1e-6).value
        delta = best_delta(event, 1.0).value
        for factory in (RDPAccountant, OptimalHomogeneousAccountant):
            acc = factory()
            if acc.supports(event):
                acc.compose(event)
                assert acc.epsilon(1e-6) >= 0 and 0 <= acc.delta(1.0) <= 1
    assert eps == math.inf or eps > 1e6
    assert 0.0 <= delta <= 1.0
