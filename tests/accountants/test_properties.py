"""Property-based tests: round trips, monotonicity, composition, input validation."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accountants import (
    GDP,
    AdvancedCompositionAccountant,
    ApproxDP,
    Composed,
    GDPAccountant,
    Gaussian,
    KOVHeterogeneousAccountant,
    Laplace,
    OptimalHomogeneousAccountant,
    PLDAccountant,
    PureAccountant,
    PureDP,
    RDPAccountant,
    SelfComposed,
    UnsupportedEventError,
    advanced_composition_epsilon,
    gdp_conversion,
)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

eps_leaf = st.one_of(
    st.builds(Laplace, scale=st.floats(0.5, 500.0), sensitivity=st.floats(0.1, 2.0)),
    st.builds(PureDP, epsilon=st.floats(1e-3, 2.0)),
)
any_leaf = st.one_of(
    eps_leaf,
    st.builds(Gaussian, sigma=st.floats(0.5, 500.0), sensitivity=st.floats(0.1, 2.0)),
    st.builds(GDP, mu=st.floats(1e-3, 2.0)),
)
counts = st.integers(1, 2000)
deltas = st.floats(1e-12, 0.2)

ADDITIVE = [PureAccountant, GDPAccountant, AdvancedCompositionAccountant, KOVHeterogeneousAccountant,
            RDPAccountant]


def _fill(factory, pairs):
    acc = factory()
    for leaf, n in pairs:
        acc.compose(leaf, n)
    return acc


# --- round trips -----------------------------------------------------------------------------------
@SETTINGS
@given(pairs=st.lists(st.tuples(eps_leaf, counts), min_size=1, max_size=4), delta=deltas)
def test_round_trip_eps_accountants(pairs, delta):
    for factory in [AdvancedCompositionAccountant, KOVHeterogeneousAccountant, RDPAccountant]:
        acc = _fill(factory, pairs)
        eps = acc.epsilon(delta)
        assert math.isfinite(eps)
        if eps >= acc.pure_epsilon():  # at or above the pure sum delta is exactly 0 (session 16)
            assert acc.delta(eps) == 0.0
            continue
        if eps == 0.0 or (factory is KOVHeterogeneousAccountant
                          and eps <= acc._sum_eps.value * (1 + 1e-12)):
            continue  # on a flat piece (eps = 0 or KOV's basic-composition branch) delta jumps
        assert acc.delta(eps) == pytest.approx(delta, rel=1e-10)


@SETTINGS
@given(leaf=eps_leaf, k=st.integers(1, 100_000), delta=deltas)
def test_round_trip_optimal(leaf, k, delta):
    acc = OptimalHomogeneousAccountant().compose(leaf, k)
    eps = acc.epsilon(delta)
    if eps == 0.0:
        return
    got = acc.delta(eps)
    assert got <= delta
    assert got == pytest.approx(delta, rel=1e-10)


@SETTINGS
@given(pairs=st.lists(st.tuples(any_leaf, counts), min_size=1, max_size=4), delta=deltas)
def test_round_trip_gdp(pairs, delta):
    acc = _fill(GDPAccountant, pairs)
    eps = acc.epsilon(delta)
    if eps >= acc.pure_epsilon():  # at or above the pure sum delta is exactly 0 (session 16)
        assert acc.delta(eps) == 0.0
    elif eps > 0:
        assert acc.delta(eps) == pytest.approx(delta, rel=1e-10)
        mu_back = gdp_conversion.mu_for_epsilon_delta(eps, acc.delta(eps))
        assert mu_back == pytest.approx(acc.mu(), rel=1e-10)


# --- monotonicity ----------------------------------------------------------------------------------
@SETTINGS
@given(pairs=st.lists(st.tuples(any_leaf, counts), min_size=1, max_size=3), extra=st.integers(1, 500),
       d1=deltas, d2=deltas)
def test_monotone_in_count_and_delta(pairs, extra, d1, d2):
    lo, hi = sorted((d1, d2))
    for factory in ADDITIVE + [OptimalHomogeneousAccountant]:
        try:
            acc = _fill(factory, pairs)
        except UnsupportedEventError:
            continue
        more = acc.copy().compose(pairs[0][0], extra)
        assert more.epsilon(lo) >= acc.epsilon(lo)
        assert acc.epsilon(lo) >= acc.epsilon(hi)
        e = acc.epsilon(hi)
        if math.isfinite(e):
            assert more.delta(e) >= acc.delta(e)


# --- composition -----------------------------------------------------------------------------------
@SETTINGS
@given(a=st.lists(st.tuples(any_leaf, counts), min_size=1, max_size=3),
       b=st.lists(st.tuples(any_leaf, counts), min_size=1, max_size=3), delta=deltas)
def test_sequential_equals_composed(a, b, delta):
    ev_a = Composed(tuple(SelfComposed(l, n) for l, n in a))
    ev_b = Composed(tuple(SelfComposed(l, n) for l, n in b))
    for factory in ADDITIVE + [OptimalHomogeneousAccountant]:
        one = factory()
        try:
            one.compose(ev_a).compose(ev_b)
        except UnsupportedEventError:
            with pytest.raises(UnsupportedEventError):
                factory().compose(Composed((ev_a, ev_b)))
            continue
        two = factory().compose(Composed((ev_a, ev_b)))
        three = factory().compose(ev_a + ev_b, 1)
        assert one.epsilon(delta) == pytest.approx(two.epsilon(delta), rel=1e-12)
        assert three.epsilon(delta) == pytest.approx(two.epsilon(delta), rel=1e-12)


@SETTINGS
@given(leaf=any_leaf, n=st.integers(1, 300), m=st.integers(1, 5), delta=deltas)
def test_count_equals_self_composed(leaf, n, m, delta):
    for factory in ADDITIVE:
        try:
            x = factory().compose(leaf, n * m)
        except UnsupportedEventError:
            continue
        y = factory().compose(SelfComposed(leaf, n), m)
        assert x.epsilon(delta) == pytest.approx(y.epsilon(delta), rel=1e-12)


def test_compose_is_atomic_for_unsupported_mix():
    for factory in [PureAccountant, AdvancedCompositionAccountant, KOVHeterogeneousAccountant]:
        acc = factory().compose(Laplace(scale=3.0), 4)
        before = acc.epsilon(1e-6)
        with pytest.raises(UnsupportedEventError):
            acc.compose(Composed((Laplace(scale=1.0), Gaussian(sigma=1.0))))
        assert acc.epsilon(1e-6) == before


def test_empty_accountants_certify_zero():
    for factory in ADDITIVE + [OptimalHomogeneousAccountant, PLDAccountant]:
        acc = factory()
        assert acc.epsilon(1e-6) == 0.0
        assert acc.delta(0.0) == 0.0


def test_pld_compose_is_lazy_and_cached():
    acc = PLDAccountant().compose(Laplace(scale=10.0), 100)
    assert acc._pld is None
    e1 = acc.epsilon(1e-6)
    cached = acc._pld
    assert cached is not None and acc.epsilon(1e-6) == e1
    acc.compose(Laplace(scale=10.0))
    assert acc._pld is None and acc.epsilon(1e-6) > e1


# --- bad inputs ------------------------------------------------------------------------------------
@pytest.mark.parametrize("factory", ADDITIVE + [OptimalHomogeneousAccountant, PLDAccountant])
def test_bad_query_inputs_name_the_parameter(factory):
    acc = factory().compose(Laplace(scale=10.0), 3)
    for bad in [5e-324, 1.0, -1e-3, 2.0, float("nan")]:  # (0 is pure DP since session 15: 3 x 0.1)
        with pytest.raises(ValueError, match="delta"):
            acc.epsilon(bad)
    assert 0.3 <= acc.epsilon(0.0) <= 0.3 * (1 + 1e-12)
    for bad in [-1.0, float("inf"), float("nan")]:
        with pytest.raises(ValueError, match="epsilon"):
            acc.delta(bad)
    with pytest.raises(ValueError, match="count"):
        acc.compose(Laplace(scale=10.0), -1)


def test_bad_constructor_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="value_discretization_interval"):
        PLDAccountant(value_discretization_interval=0.0)
    with pytest.raises(ValueError, match="pessimistic"):
        PLDAccountant(pessimistic="yes")
    with pytest.raises(ValueError, match="orders"):
        RDPAccountant(orders=[0.5, 2.0])
    with pytest.raises(ValueError, match="delta_prime"):
        advanced_composition_epsilon([0.1], 0.0)
    with pytest.raises(ValueError, match=r"epsilons\[1\]"):
        advanced_composition_epsilon([0.1, -0.2], 1e-6)
    with pytest.raises(ValueError, match="alphas"):
        RDPAccountant().compose(GDP(1.0)).rdp([0.9])
    with pytest.raises(ValueError, match="delta"):
        ApproxDP(0.1, 1.5)


def test_huge_epsilon_releases_stay_valid():
    # e^eps overflows a float: advanced composition becomes vacuous (inf), never NaN or an error
    ev = PureDP(800.0) * 2
    adv = AdvancedCompositionAccountant().compose(ev)
    assert adv.epsilon(1e-6) == math.inf and adv.delta(1e3) == 1.0
    assert adv.delta(1e4) == 0.0  # at or above the pure sum 1600 (session 16; before: 1.0)
    assert KOVHeterogeneousAccountant().compose(ev).epsilon(1e-6) == pytest.approx(1600.0)
    with pytest.raises(UnsupportedEventError):  # dp-accounting overflows on exp(800)
        PLDAccountant().compose(ev)
    assert OptimalHomogeneousAccountant().compose(ev).epsilon(1e-6) <= 1600.0
