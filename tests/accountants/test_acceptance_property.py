"""Issue 12 acceptance: >= 1000 random event mixes, delta in [1e-15, 0.1], counts up to 1e7; the best
certificate (and every accountant's value) is never below an exact reference or, where none exists,
dp-accounting's optimistic PLD.

* 640 Gaussian/GDP mixes (counts up to 1e7): exact GDP in mpmath (``gdp_delta`` at the certified eps
  must not exceed delta);
* 300 identical PureDP compositions (k up to 1e7): the exact KOV Thm 3.3 sum with scipy log-pmfs;
* 60 heterogeneous Laplace / PureDP / Gaussian mixes (small counts so that dp-accounting's
  optimistic PLD -- a lower bound -- is cheap): no accountant below it.

Heavier mixes (large counts with Laplace) are run by ``bench/bench_accountants.py --property``.
Hypothesis is derandomized in this suite (tests/conftest.py).
"""

import math

import mpmath
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from accountants import GDP, Composed, Gaussian, Laplace, PLDAccountant, PureDP, SelfComposed, best_epsilon

from accountants.best import exact_accountant
from tests.accountants._exact import gdp_delta, rr_log_delta

deltas = st.floats(1e-15, 0.1)
big_counts = st.integers(1, 10**7)


def _fast(n: int):
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


gaussian_leaf = st.one_of(
    st.builds(Gaussian, sigma=st.floats(0.1, 1e4), sensitivity=st.floats(0.1, 2.0)),
    st.builds(GDP, mu=st.floats(1e-6, 3.0)),
)


@_fast(640)
@given(pairs=st.lists(st.tuples(gaussian_leaf, big_counts), min_size=1, max_size=4), delta=deltas)
def test_gaussian_mixes_never_below_exact_gdp(pairs, delta):
    event = Composed(tuple(SelfComposed(leaf, n) for leaf, n in pairs))
    cert = best_epsilon(event, delta)
    with mpmath.workdps(50):
        mu = mpmath.sqrt(mpmath.fsum(n * mpmath.mpf(leaf.gdp_mu()) ** 2 for leaf, n in pairs))
        for name, value in cert.values.items():
            if value is not None and math.isfinite(value):
                assert gdp_delta(mu, value) <= delta, (name, value)
    assert cert.by == "gdp" and cert.values["pld"] is None


@_fast(300)
@given(eps0=st.floats(1e-3, 2.0), k=big_counts, delta=deltas)
def test_identical_pure_dp_never_below_optimal_composition(eps0, k, delta):
    cert = best_epsilon(PureDP(eps0) * k, delta)
    # the scipy reference sums log-pmfs of magnitude up to ~k; its own rounding is ~1e-16 k in log
    # delta, so a value counts as below the truth only beyond that
    slack = 1e-15 * k + 1e-12
    for name, value in cert.values.items():
        if value is not None and value < k * eps0:
            assert rr_log_delta(k, eps0, value) <= math.log(delta) + slack, (name, value)


mixed_leaf = st.one_of(
    st.builds(Laplace, scale=st.floats(0.5, 50.0), sensitivity=st.floats(0.5, 2.0)),
    st.builds(PureDP, epsilon=st.floats(0.01, 1.0)),
    st.builds(Gaussian, sigma=st.floats(2.0, 50.0)),
)


@_fast(60)
@given(pairs=st.lists(st.tuples(mixed_leaf, st.integers(1, 30)), min_size=1, max_size=3),
       delta=st.floats(1e-10, 0.1))
def test_mixes_never_below_optimistic_pld(pairs, delta):
    event = Composed(tuple(SelfComposed(leaf, n) for leaf, n in pairs))
    # identical PureDP has an exact reference (the test above); there the "optimistic" PLD is exact
    # too and at eps ~ k eps0 float rounding of the loss grid moves it either way
    assume(exact_accountant(event) != "optimal")
    cert = best_epsilon(event, delta)
    floor = PLDAccountant.optimistic(1e-3).compose(event).epsilon(delta)
    for name, value in cert.values.items():
        if value is not None:
            assert value >= floor * (1 - 1e-9), (name, value, floor)
