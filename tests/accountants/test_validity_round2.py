"""Validity round 2 (session 9): certificates never below the truth, where round 1 had no reference.

Defects found by the campaign (docs/accountants.md, "Session 9") are pinned first; then guards: every
accountant against a rigorous LOWER bound on the truth for Laplace compositions of 100..1000
releases and a heterogeneous mix (tests/accountants/_exact.py, ``laplace_log_delta_lower``), and the
fast PLD's FFT rounding against an exact (direct, non-FFT) convolution of the same grid.
"""

import math

import mpmath
import numpy as np
import pytest

from accountants import ApproxDP, Laplace, PLDAccountant, PureDP, best_epsilon, rdp_curves
from accountants.fastpld import ComposedPLD, leaf_pmf

from tests.accountants._exact import laplace_log_delta_lower
from tests.accountants.test_exact_extremes import _every_epsilon, _rr_delta_mp


# --- defects found ----------------------------------------------------------------------------------
@pytest.mark.parametrize("leaf, k, delta", [(PureDP(0.01), 50, 1e-100), (ApproxDP(0.01, 0.0), 300, 1e-300),
                                             (PureDP(0.1), 7, 1e-300)])
def test_optimal_composition_never_below_the_largest_loss(leaf, k, delta):
    # was: 0.5 for 50 x eps0 = 0.01 at delta 1e-100 -- the float product k eps0 = 0.5 lies below the real
    # largest loss 50 x 0.01000000000000000021, and eps / eps0 = 50.0 dropped the one term left there
    # (exact delta at 0.5: 1.2e-32); 300 x 0.01 certified 3.0 at 1e-300 (exact delta there 1.4e-106)
    eps = _every_epsilon(leaf * k, delta)["optimal"]
    assert _rr_delta_mp(k, leaf.epsilon, eps) <= delta


def test_pld_inversion_through_dp_accounting_is_verified():
    # was: 349.9999989999995 for ApproxDP(50, 0) * 7 at delta 1e-6, where the exact delta is
    # 1.0000000091e-6: dp-accounting's get_epsilon_for_delta answered an epsilon whose own delta was
    # 2.3e-14 above the (margin-reduced) target it was given
    eps = PLDAccountant().compose(ApproxDP(50.0, 0.0) * 7).epsilon(1e-6)
    with mpmath.workdps(60):
        exact = 1 - (1 - _rr_delta_mp(7, 50.0, eps))  # delta0 = 0: the randomized-response curve
    assert exact <= 1e-6


@pytest.mark.parametrize("leaf, k", [(ApproxDP(0.5, 0.999999), 7), (ApproxDP(0.0, 0.3), 300)])
def test_pld_declines_when_almost_all_mass_is_at_infinity(leaf, k):
    # was: IndexError (a traceback from dp-accounting's tail truncation) out of best_epsilon
    cert = best_epsilon(leaf * k, 0.5)
    assert cert.values["pld"] == math.inf
    assert PLDAccountant().compose(leaf * k).delta(1.0) == 1.0


def test_randomized_response_curve_never_below_its_exact_value():
    # was: up to 1.4e-16 relative below at eps = 1e-12 (542 of 12338 (order, eps) points): the
    # alpha eps^2 / 2 cap, rounded to nearest, lies within O(eps^4) of the exact curve
    orders = rdp_curves.default_orders()[:40]
    for eps in (1e-12, 3e-9):
        curve = rdp_curves.randomized_response(orders, eps)
        with mpmath.workdps(60):
            e = mpmath.mpf(eps)
            p, q = 1 / (1 + mpmath.exp(-e)), 1 / (1 + mpmath.exp(e))
            for a, v in zip(orders, curve):
                a = mpmath.mpf(float(a))
                assert mpmath.mpf(float(v)) >= mpmath.log(p ** a * q ** (1 - a) + q ** a * p ** (1 - a)) / (a - 1)


# --- guards: no defect found, kept so that one cannot appear unseen ----------------------------------
def test_laplace_lower_bound_is_below_the_closed_form_and_tight():
    # the reference itself: one release, delta(eps) = 1 - e^{(eps - eps0)/2} (never above, within 1e-4)
    for e0, eps in [(0.1, 0.0), (1.0, 0.5), (3.0, 2.9)]:
        exact = math.log(-math.expm1((eps - e0) / 2))
        lower = laplace_log_delta_lower([(e0, 1)], eps, e0 / 1024)
        assert exact - 1e-3 <= lower <= exact


@pytest.mark.parametrize("groups", [[(0.01, 1000)], [(0.125, 100)], [(0.0625, 300), (0.25, 20), (1.0, 3)]])
@pytest.mark.parametrize("delta", [1e-3, 1e-12, 1e-100, 1e-300])
def test_laplace_certificates_above_a_rigorous_lower_bound(groups, delta):
    event = sum((Laplace(1.0, sensitivity=e0) * n for e0, n in groups[1:]), Laplace(1.0, sensitivity=groups[0][0])
                * groups[0][1])
    spread = math.sqrt(sum(n * e0 * e0 for e0, n in groups))
    e0min = min(e0 for e0, _ in groups)
    h = e0min / 2.0 ** max(5, math.ceil(math.log2(e0min * 5e3 / spread)))  # e0 / h a power of two
    log_delta = math.log(delta)
    for name, eps in _every_epsilon(event, delta).items():
        if math.isfinite(eps):
            assert laplace_log_delta_lower(groups, eps, h) <= log_delta, name


def _direct_power(m, n):
    """m convolved with itself n times, directly (exactly for an object array of Python integers)."""
    out, base = np.ones(1, dtype=m.dtype), m
    while n:
        if n & 1:
            out = np.convolve(out, base)
        n >>= 1
        if n:
            base = np.convolve(base, base)
    return out


@pytest.mark.parametrize("e0, k, div", [(1.0, 1000, 8), (20.0, 1000, 16), (0.05, 1000, 4)])
def test_fast_pld_fft_rounding_within_its_margin(e0, k, div):
    # the FFT composition against a direct (non-FFT) convolution of the same grid PMF, whose float error
    # is relative per entry (non-negative terms): the delta it under-states must stay within the proven
    # rounding bound (a skewed leaf, e0 = 20, has an atom of mass 1e-9)
    leaf, h = Laplace(1.0, sensitivity=e0), e0 / div
    eng = ComposedPLD({leaf: k}, h, 1 << 22)
    lo, m, _ = leaf_pmf(leaf, h)
    exact = _direct_power(m, k)
    pos = np.arange(eng.n_fft) + eng.base - k * lo
    ref = np.zeros(eng.n_fft)
    inside = (pos >= 0) & (pos < len(exact))
    ref[inside] = exact[pos[inside]]
    above = exact[np.arange(len(exact)) + k * lo > eng.base + eng.n_fft - 1].sum()
    losses = eng._losses()
    for j in range(0, eng.n_fft, max(1, eng.n_fft // 500)):
        w = -np.expm1(losses[j] - losses[j + 1:])
        under = (float((ref[j + 1:] * w).sum()) + above) - (float((eng.masses[j + 1:] * w).sum()) + eng.tail_bound)
        assert under <= eng.rounding_bound  # the proven bound (session 10)
