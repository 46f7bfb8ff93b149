"""Accountants at extreme parameters (issue: hostile outside testing, session 4).

Every accountant answers every valid query with a number -- never an OverflowError, a
``math domain error`` or a ``ceil(-inf)`` -- at counts up to 1e12, per-release epsilons up to 1e8
and deltas down to 1e-300; and the answer stays an upper bound (monotone in delta / epsilon).
Each case below failed before the fix it names.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from accountants import GDP, ApproxDP, Composed, Gaussian, Laplace, PureDP, SelfComposed, best_delta, best_epsilon
from accountants.advanced import AdvancedCompositionAccountant
from accountants.best import default_accountants
from accountants.kov import KOVHeterogeneousAccountant
from accountants.optimal import OptimalHomogeneousAccountant
from accountants.pld import PLDAccountant


def _composed(factory, event):
    acc = factory()
    acc.compose(event)
    return acc


@pytest.mark.parametrize("event", [SelfComposed(PureDP(1e8), 10**9), SelfComposed(Laplace(1e-8, 1.0), 10**12),
                                   PureDP(800.0)])
def test_optimal_composition_of_huge_epsilons_is_a_number(event):
    # was: OverflowError (math.exp of a log-delta pushed past 709 by the rounding margin)
    acc = _composed(OptimalHomogeneousAccountant, event)
    for delta in (1e-300, 1e-6, 0.5):
        eps = acc.epsilon(delta)
        assert not math.isnan(eps) and eps > 0
    assert acc.delta(1.0) == 1.0  # far below the releases' own epsilon: no guarantee


@pytest.mark.parametrize("factory", [KOVHeterogeneousAccountant, OptimalHomogeneousAccountant])
def test_releases_whose_deltas_exceed_the_target_certify_infinity(factory):
    # 1e6 releases of (1, 0.5)-DP: prod (1 - delta_i) underflows; was OverflowError in expm1
    acc = _composed(factory, SelfComposed(ApproxDP(1.0, 0.5), 10**6))
    for delta in (1e-15, 0.5, 0.999):
        assert acc.epsilon(delta) == math.inf


@pytest.mark.parametrize("event", [ApproxDP(1e-6, 1e-15), PureDP(10.0), ApproxDP(1.0, 1e-300)])
def test_advanced_composition_delta_when_the_tail_underflows(event):
    # exp(-margin^2 / (2 S2)) underflows to 0: was log(0) -> "math domain error"
    acc = _composed(AdvancedCompositionAccountant, event)
    for eps in (0.5, 700.0, 1e300):
        d = acc.delta(eps)
        assert 0.0 <= d <= 1.0
        lower = event.epsilon_delta()[1]
        assert d >= lower  # the releases' own delta is always paid


def test_optimal_delta_at_an_epsilon_beyond_every_release():
    # eps / eps0 = inf: was ceil(-inf) -> OverflowError; no term of the sum is positive
    acc = _composed(OptimalHomogeneousAccountant, SelfComposed(PureDP(1e-10), 1000))
    assert acc.delta(1e300) == 0.0


def test_pld_of_a_gigantic_pure_epsilon_declines_instead_of_overflowing():
    # scale ** 2 overflowed while sizing the grid; the PLD now reports an infeasible grid
    acc = _composed(PLDAccountant, Laplace(1e-200, 1.0))  # eps = 1e200 per release
    assert not acc.feasible()


EXTREME_LEAVES = [Laplace(1e-8, 1.0), Laplace(1e8, 1.0), PureDP(1e-10), PureDP(710.0), ApproxDP(1.0, 1e-300),
                  ApproxDP(800.0, 1e-10)]


@pytest.mark.parametrize("leaf", EXTREME_LEAVES, ids=repr)
@pytest.mark.parametrize("count", [1, 10**6, 10**12])
def test_every_accountant_answers_with_a_monotone_number(leaf, count):
    """A deterministic slice of the session's fuzz: no exception, no NaN, eps non-increasing in
    delta and delta non-increasing in eps, for every closed-form accountant."""
    event = leaf if count == 1 else SelfComposed(leaf, count)
    for factory in default_accountants():
        if factory is PLDAccountant:
            continue  # its FFT cost grows with the count; covered by the PLD test above
        acc = factory()
        try:
            acc.compose(event)
        except Exception as exc:  # only "unsupported" may refuse
            assert type(exc).__name__ == "UnsupportedEventError", exc
            continue
        previous = math.inf
        for delta in (1e-300, 1e-15, 1e-6, 0.1, 0.5, 0.999):
            eps = acc.epsilon(delta)
            assert not math.isnan(eps) and eps >= 0
            assert eps <= previous * (1 + 1e-12) + 1e-15, (factory.__name__, delta)
            previous = eps
        previous = 1.0
        for eps in (0.0, 1e-6, 1.0, 700.0, 1e300):
            d = acc.delta(eps)
            assert 0.0 <= d <= 1.0
            assert d <= previous * (1 + 1e-12) + 1e-300, (factory.__name__, eps)
            previous = d


@pytest.mark.parametrize("event", [Gaussian(1e-308, 1.0), Gaussian(1.0, 1e308), GDP(1e308),
                                   SelfComposed(Gaussian(1e-200, 1.0), 10)], ids=repr)
def test_a_gaussian_past_mu_1e154_certifies_infinity_not_an_error(event):
    # mu^2 overflowed: the GDP accountant raised "mu must lie in (0, inf), got inf", the RDP one
    # turned inf - inf into a NaN curve ("All-NaN slice") or raised OverflowError in mu ** 2
    assert best_epsilon(event, 1e-6).value == math.inf
    assert best_delta(event, 1.0).value == 1.0


def test_a_finite_rdp_curve_is_unchanged_by_the_infinite_guard():
    from accountants.rdp import RDPAccountant

    acc = RDPAccountant()
    acc.compose(Composed((Gaussian(1.0, 1.0), Laplace(2.0, 1.0))))
    assert np.all(np.isfinite(acc.grid_curve()))
    assert best_epsilon(Gaussian(1.0, 1.0), 1e-6).value == pytest.approx(4.886554117467313, rel=1e-12)


@pytest.mark.parametrize("curve", ["laplace", "randomized_response", "discrete_laplace"])
@pytest.mark.parametrize("eps", [1e-6, 1e-9, 1e-12, 1e-15])
def test_rdp_curves_of_tiny_epsilons_are_not_lost_to_rounding(curve, eps):
    """The log-sums cancel to ~alpha eps^2 / 2; float rounding made the curves negative (eps 1e-9:
    -1e-15) or 12% low (randomized response at 1e-6). Every eps-DP release has RDP <= alpha eps^2/2
    (Bun & Steinke 2016, Prop. 3.3), and these three are within O(alpha eps) of it relatively:
    (1 - alpha eps) alpha eps^2 / 2 <= curve <= alpha eps^2 / 2 (alpha eps <= 0.017 here)."""
    from accountants import rdp_curves

    a = rdp_curves.default_orders()
    values = (rdp_curves.discrete_laplace(a, 1.0 / eps, 1) if curve == "discrete_laplace"
              else getattr(rdp_curves, curve)(a, eps))
    zcdp = a * eps * eps / 2.0
    assert np.all(values <= zcdp * (1 + 1e-12)) and np.all(values >= (1.0 - a * eps) * zcdp)


def test_rdp_of_1e17_tiny_laplace_releases_matches_their_gaussian_limit():
    # 1e17 releases of eps = 1e-9: the composed curve went negative and certified epsilon 0;
    # their sum is ~ N(n eps^2 / 2, n eps^2): the RDP certificate is at least that Gaussian's exact one
    from accountants import gdp_conversion
    from accountants.rdp import RDPAccountant

    acc = RDPAccountant()
    acc.compose(SelfComposed(Laplace(1e9, 1.0), 10**17))
    assert np.all(acc.grid_curve() > 0)
    gaussian_limit = gdp_conversion.epsilon_for_delta(math.sqrt(1e17) * 1e-9, 1e-6)
    assert gaussian_limit <= acc.epsilon(1e-6) <= 1.15 * gaussian_limit  # RDP conversion: ~8% loose here


def test_dp_ucb_int_certificate_keeps_growing_at_astronomic_horizons():
    from privbandit import budget

    values = [budget.epsilon("dp_ucb_int", h, 1e-6, 3).value for h in (10**12, 2**62, 2**70)]
    assert values == sorted(values)  # was 0.734, 0.410, 0.0 (RDP of 6e18 tiny releases)


def test_laplace_rdp_curve_at_a_huge_epsilon_is_quiet_and_capped():
    """At eps = 1e300 the zCDP cap alpha eps^2 / 2 overflows: it must act as no cap (the curve is
    eps, the pure-DP bound) without a RuntimeWarning reaching the caller (the CLI printed one)."""
    import warnings

    from accountants import rdp_curves

    alphas = np.array([1.5, 2.0, 64.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        curve = rdp_curves.laplace(alphas, 1e300)
    assert np.all(curve <= 1e300) and np.all(np.isfinite(curve))


@pytest.mark.parametrize("epsilon", [1e9, 1e200, 1e300, 1e308])
def test_mu_for_a_huge_epsilon_is_found_and_valid(epsilon):
    """Was: no upper bracket below mu = 1e8 (ValueError naming the function) and, at eps ~ 1e308,
    brentq's RuntimeError. mu ~ sqrt(2 eps): the calibrated mu must still satisfy the target by the
    exact curve (mu^2 / 2 <= eps to the floats' precision: the true eps(mu) is mu^2/2 + O(mu))."""
    from accountants import gdp_conversion

    mu = gdp_conversion.mu_for_epsilon_delta(epsilon, 1e-6)
    assert gdp_conversion.delta_for_epsilon(mu, epsilon) <= 1e-6
    # and not far below the largest: delta(eps) < Phi(mu/2 - eps/mu), which is delta at
    # mu0 = sqrt(z^2 + 2 eps) - z with z = Phi^-1(1 - delta), so the largest valid mu is >= mu0
    z = 4.753424308822899
    mu0 = math.sqrt(2.0) * math.sqrt(epsilon + z * z / 2.0) - z  # no overflow at eps = 1e308
    assert mu * (mu / 2.0) <= epsilon * (1 + 1e-12) and mu >= mu0 * (1 - 1e-9)


@pytest.mark.parametrize("mu", [1.3e154, 1.4e154, 1e200, 1e300])
def test_epsilon_for_a_huge_mu_is_an_upper_bound_or_inf(mu):
    """Was: brentq's RuntimeError, then an OverflowError in the lattice rounding. eps ~ mu^2 / 2
    leaves the floats above mu ~ 1.34e154: inf is then the (valid) certificate."""
    from accountants import gdp_conversion

    eps = gdp_conversion.epsilon_for_delta(mu, 1e-6)
    half_square = mu * (mu / 2.0)
    assert eps >= half_square  # inf when half_square overflows
    if half_square < 1e307:  # below the bracket's overflow, a finite bound
        assert math.isfinite(eps)
