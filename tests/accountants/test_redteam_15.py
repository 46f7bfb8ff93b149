"""Session 15 (s15/acc): "a certificate is never below the truth, at any delta and any count".

* The fast PLD's Chernoff tail bound at the extremes: ``w = ts * atoms`` overflowed for tiny variances
  (GDP mu 5e-324 x 10^12 releases: "overflow encountered in multiply", an exception under ``-W error``),
  and a nan exponent read as a bound of 1 through ``min(0.0, nan)`` -- valid only by accident. Now
  explicit: non-finite exponents give no bound, the bound is 0 only where no atom combination reaches
  the threshold, and it is at least the least subnormal elsewhere.
* ``budget.ts_frontier`` answers the least feasible lattice c: the (1 + 1e-14) nudges made it
  non-monotone in the target (a larger budget, a noisier c) in 5 of 560 mu ladders.
"""

import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import stats

from accountants import GDP, PLDAccountant, best_delta
from accountants.fastpld import ComposedPLD
from privbandit import budget

from _exact import gdp_delta


# --- 2. the Chernoff tail bound at the extremes -----------------------------------------------------
@pytest.mark.parametrize("mu", [5e-324, 1e-300, 1e-12])
def test_pld_tail_bound_quiet_and_valid_at_tiny_variances(mu):
    """GDP mu x 10^12 releases (composed mu = 10^6 mu): no RuntimeWarning (5e-324 overflowed), every
    delta a valid bound of the exact GDP value and at most 1; best_delta takes exact GDP."""
    n = 10**12
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acc = PLDAccountant()
        acc.compose(GDP(mu), n)
        for eps in (1e-6, 0.1, 1.0):
            d = acc.delta(eps)
            assert _gdp_truth(mu * 10**6, eps) <= d <= 1.0
            assert best_delta(GDP(mu) * n, eps).value >= _gdp_truth(mu * 10**6, eps)


def _gdp_truth(mu, eps):
    """Exact GDP delta; where eps / mu > 1e8 it is below Phi(-1e8) ~ e^(-5e15), under every positive float
    (mpmath's ncdf overflows there), so 0 stands for it and a bound must only be non-negative."""
    return gdp_delta(mu, eps) if eps / mu < 1e8 else mpmath.mpf(0)


def _bernoulli_parts(p, n):
    return [((0, np.array([1.0 - p, p]), 0.0), n)]


def test_chernoff_upper_survives_overflowing_exponents():
    """t* = (a - mean) / var overflows ts (var ~ 1e-300, a ~ 1e9): inf x atom 0 = nan, inf - inf = nan.
    Before: those read as a bound of 1 through min(0.0, nan) (and warned); now no warning and a real bound."""
    p, n = 1e-300, 10**9
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bound = ComposedPLD._chernoff_upper(_bernoulli_parts(p, n), 10**8, n * p, n * p * (1 - p))
    assert 0.0 < bound < 1e-300  # the truth, P(Bin(1e9, 1e-300) >= 1e8), is ~1e-(3e10): below every float


@pytest.mark.parametrize("p, n, a", [(1e-300, 10**12, 24), (1e-12, 10**12, 30), (0.01, 1000, 40)])
def test_chernoff_upper_is_a_bound_and_not_vacuous(p, n, a):
    """P(Bin(n, p) >= a) exactly (scipy) is below the bound; the bound is not 1 where the tail is tiny
    (before: 1.0 at p = 1e-300, the Gaussian t* ~ 1e289 only; the binomial optimum is near log t*)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bound = ComposedPLD._chernoff_upper(_bernoulli_parts(p, n), a, n * p, n * p * (1 - p))
    truth = stats.binom.sf(a - 1, n, p)
    assert truth <= bound
    assert bound < 1e-6


def test_chernoff_upper_zero_only_where_truly_zero():
    """Exactly 0 above the largest reachable sum (n x the highest atom carrying mass); positive at it."""
    parts = _bernoulli_parts(0.5, 7) + [((-2, np.array([0.25, 0.0, 0.75, 0.0]), 0.0), 3)]  # atoms -2 and 0
    reach = 7 * 1 + 3 * 0
    assert ComposedPLD._chernoff_upper(parts, reach + 1, 3.5 - 1.5, 2.0) == 0.0
    assert ComposedPLD._chernoff_upper(parts, reach, 3.5 - 1.5, 2.0) >= 0.5 ** 7 * 0.75 ** 3


# --- 4. ts_frontier monotone in the target -------------------------------------------------------------
@pytest.mark.parametrize("n_arms, horizon, b, target", [
    (2, 2, 0, 10.0),           # before: 0x1.47ae147ae147bp-8 at t, ...ae14b2p-8 at nextafter(t)
    (1000, 10**4, 5, 0.1),     # before: 0x1.4585555555554p+16 at t, ...558cp+16 at nextafter(t)
    (2, 10**9, 250_000_000, 10.0),
])
def test_ts_frontier_c_never_grows_with_the_target(n_arms, horizon, b, target):
    ladder = (target, math.nextafter(target, math.inf), target * (1 + 1e-12), target * (1 + 1e-9))
    cs = []
    for t in ladder:
        inv = budget.ts_frontier(t, horizon, n_arms, [b])[0]
        assert inv.certificate <= t
        assert budget.mu("gaussian_ts", horizon, n_arms, b=b, c=inv.value) <= t
        cs.append(inv.value)
    assert cs == sorted(cs, reverse=True), [c.hex() for c in cs]
    # within a lattice cell or two of the closed form c = n / (mu^2 (max(b, 1) + 1)), never below it
    n = horizon - n_arms * b if b else horizon - 1
    exact = n / (mpmath.mpf(target) ** 2 * (max(b, 1) + 1))
    assert exact <= cs[0] <= exact * (1 + 4e-12)


# --- 3. delta = 0 -------------------------------------------------------------------------------------
from fractions import Fraction  # noqa: E402

from accountants import (AdvancedCompositionAccountant, ApproxDP, Gaussian, GDPAccountant,  # noqa: E402
                         KOVHeterogeneousAccountant, Laplace, OptimalHomogeneousAccountant, PureAccountant, PureDP,
                         RDPAccountant, UnreachableTargetError, ZCDP, best_epsilon)
from accountants.events import Composed  # noqa: E402

from _exact import rr_log_delta  # noqa: E402

SEVEN = (PureAccountant, AdvancedCompositionAccountant, KOVHeterogeneousAccountant, OptimalHomogeneousAccountant,
         RDPAccountant, GDPAccountant, PLDAccountant)


@pytest.mark.parametrize("event, exact", [
    (PureDP(0.1) * 1000, Fraction(0.1) * 1000),
    (Laplace(3.0, 0.7) * 50, Fraction(0.7) / Fraction(3.0) * 50),
    (Composed((Laplace(1.0, 3.0) * 100, PureDP(0.2) * 10, ApproxDP(0.5, 0.0) * 3)),
     Fraction(3.0) * 100 + Fraction(0.2) * 10 + Fraction(0.5) * 3),
], ids=["pure", "laplace", "mix"])
def test_delta_zero_answers_the_exact_pure_sum_in_every_accountant(event, exact):
    """dp-accounting answers delta = 0 (RDP: inf unless every order is 0; PLD: the largest finite loss);
    ours answer sum eps_i -- never below the exact sum, within 1e-12 of it -- in every accountant that
    supports the events, and best_epsilon with them. Before: "delta must lie in (0, 1), got 0.0"."""
    answered = 0
    for factory in SEVEN:
        acc = factory()
        if not acc.supports(event):
            continue
        acc.compose(event)
        eps = acc.epsilon(0.0)
        assert exact <= Fraction(eps) <= exact * (1 + Fraction(1, 10**12)), factory.__name__
        answered += 1
    assert answered >= 4  # (optimal needs identical releases; rdp and gdp no ApproxDP)
    assert exact <= Fraction(best_epsilon(event, 0).value) <= exact * (1 + Fraction(1, 10**12))


def test_delta_zero_is_tight_for_pure_releases():
    """No smaller epsilon has delta 0: 1000 x eps0 = 0.1 at eps just below 100 has exact delta > 0 (KOV Thm 3.3)."""
    assert rr_log_delta(1000, 0.1, 100.0 * (1 - 1e-9)) > -math.inf
    assert best_epsilon(PureDP(0.1) * 1000, 0.0).value >= 100.0


@pytest.mark.parametrize("event", [Gaussian(1.0, 5.0) * 3, ApproxDP(0.5, 1e-8) * 10, GDP(0.3), ZCDP(0.01),
                                   Composed((PureDP(0.1) * 5, Gaussian(1.0, 50.0)))])
def test_delta_zero_is_inf_with_a_release_that_is_not_pure(event):
    for factory in SEVEN:
        acc = factory()
        if acc.supports(event):
            assert acc.compose(event).epsilon(0.0) == math.inf, factory.__name__
    assert best_epsilon(event, 0.0).value == math.inf


@pytest.mark.parametrize("bad", [5e-324, -1e-300, 1.0, float("nan")])
def test_delta_zero_or_a_normal_float_else_a_clear_error(bad):
    for factory in SEVEN:
        with pytest.raises(ValueError, match=r"delta must be 0 \(pure DP\) or lie in \[2.2250738585072014e-308, 1\)"
                                             if bad == bad else "delta"):
            factory().compose(PureDP(0.1)).epsilon(bad)


def test_delta_zero_through_budget_and_the_cli(capsys):
    from privbandit.cli import main

    assert budget.epsilon("lazy_dp_ts", 100, 0.0, 2, epsilon=0.5).value == pytest.approx(0.5, rel=1e-12)
    assert budget.epsilon("lazy_dp_ts", 100, 0.0, 2, epsilon=0.5).value >= 0.5
    assert budget.epsilon("gaussian_ts", 100, 0.0, 2).value == math.inf
    inv = budget.invert("lazy_dp_ts", 1.0, 100, solve_for="epsilon", bounds=(1e-6, 10.0), delta=0.0)
    assert inv.certificate <= 1.0 and inv.value >= 1.0 * (1 - 2e-12)
    with pytest.raises(UnreachableTargetError, match="delta = 0 .* no finite epsilon at delta 0"):
        budget.ts_frontier(1.0, 100, 2, [1], delta=0.0)
    assert main(["budget", "gaussian_ts", "--horizon", "100", "--delta", "0"]) == 0
    assert "best: inf" in capsys.readouterr().out
    assert main(["certify", "--delta", "0", "--releases", "10", "--epsilon", "0.25"]) == 0
    assert "best: 2.5 " in capsys.readouterr().out


# --- 1. unreachable inversions name the parameter and its range ------------------------------------------
def test_unreachable_inversions_name_the_parameter_and_range():
    """Before: calibrate's "even the most private parameter 2 certifies 1.0000000000000002" (a horizon, unnamed)."""
    # exact Laplace at 1e-300: 1.0 since session 17 (one Lap(1) release is (1, 0)-DP; it read 1 + 1 ulp, the
    # closed form's upward ulp, and target 1.0 was this test's unreachable one): one ulp below it is unreachable
    with pytest.raises(UnreachableTargetError, match=r"even the shortest horizon, n_arms = 2 \(horizons lie in "
                                                     r"\[n_arms, max_horizon = 1e\+09\]\), certifies 1$"):
        budget.affordable_horizon("lazy_dp_ts", math.nextafter(1.0, 0.0), 2, delta=1e-300)
    with pytest.raises(UnreachableTargetError, match=r"even epsilon = 0.5, the most private end of bounds \[0.5, 10\]"):
        budget.invert("lazy_dp_ts", 1e-3, 100, solve_for="epsilon", bounds=(0.5, 10.0), delta=1e-6)
