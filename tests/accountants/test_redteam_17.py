"""Session 17 (s17/exact): realized <= certified EXACTLY, and a certificate never below the truth.

* One Laplace release: the exact profile is an accountant (``laplace-exact``), so Lazy-DP-TS's certificate and
  the tight ledger's realized spend of the same release are one function of one event (before: the ledger read
  the PLD's, 1.55e-10 .. 1.2e-8 relative above the schedule's closed form).
* Pure sums are exact: the least float at or above the exact sum of the releases' exact epsilons (a Laplace's
  sensitivity / scale as a rational). Before: fsum x (1 + 1e-13), so a record in Lap(2) + 6 Lap(12) read
  1 + 1e-13 where its schedule Lap(2) + PureDP(0.5) certified 1 + 4 ulps (DP-UCB, DP-UCB-N, DP-TS, ... at
  tiny deltas).
* Schedules that cover Laplace releases by one PureDP round its epsilon up (a vector tree's node read the
  quotient to nearest, an ulp below the release: the certificate at delta = 0 below the truth).
* The record of pure releases is kept by ``_add``, so a subclass composing by a path of its own is counted.
"""

import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import accountants as A
from accountants import Laplace, PureDP, best_epsilon
from accountants.events import Composed


# --- the exact one-Laplace accountant -------------------------------------------------------------------------
@mpmath.workdps(40)
def _laplace_delta_truth(e0, eps):
    """delta(eps) of Lap(1) vs Lap(1) shifted by e0, as the hockey-stick integral (no closed form used):
    int max(0, p(x) - e^eps q(x)) dx with p, q the two Laplace densities of scale 1."""
    e0, eps = mpmath.mpf(e0), mpmath.mpf(eps)

    def gap(x):
        return max(mpmath.mpf(0), mpmath.exp(-abs(x)) / 2 - mpmath.exp(eps) * mpmath.exp(-abs(x - e0)) / 2)

    # (the integrand's kinks: 0, e0 and where p = e^eps q, (e0 - eps) / 2 for eps < e0)
    kink = (e0 - eps) / 2 if eps < e0 else e0 / 2
    return mpmath.quad(gap, [-mpmath.inf, 0, kink, e0, mpmath.inf])


@pytest.mark.parametrize("e0", [0.05, 1.0, 7.3, 20.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 0.01, 0.1])
def test_laplace_exact_is_the_truth_rounded_up(e0, delta):
    acc = A.LaplaceExactAccountant().compose(Laplace(1.0 / e0, 1.0))
    eps = acc.epsilon(delta)
    truth_at = _laplace_delta_truth(mpmath.mpf(1) / mpmath.mpf(1.0 / e0), eps)
    assert truth_at <= delta  # the certificate holds
    if eps > 0:  # and is the least float that does, to a few ulps (the closed form's rounding)
        below = eps - 8 * math.ulp(eps)
        assert _laplace_delta_truth(mpmath.mpf(1) / mpmath.mpf(1.0 / e0), below) > delta
    d = acc.delta(eps * 0.9)
    assert d >= _laplace_delta_truth(mpmath.mpf(1) / mpmath.mpf(1.0 / e0), eps * 0.9)
    assert d <= _laplace_delta_truth(mpmath.mpf(1) / mpmath.mpf(1.0 / e0), eps * 0.9) * (1 + 1e-12)


def test_laplace_exact_declines_compositions_and_other_leaves():
    assert A.LaplaceExactAccountant().compose(Laplace(2.0) * 2).epsilon(1e-6) == math.inf
    assert A.LaplaceExactAccountant().compose(Laplace(2.0) * 2).delta(0.1) == 1.0
    assert not A.LaplaceExactAccountant().supports(A.DiscreteLaplace(5 * 2.0**-10, 3 * 2.0**-10))
    assert not A.LaplaceExactAccountant().supports(PureDP(0.5))
    assert A.LaplaceExactAccountant().epsilon(1e-6) == 0.0
    # at a tiny delta never above the pure epsilon (it was the closed form's upward ulp above it)
    assert A.LaplaceExactAccountant().compose(Laplace(1.0)).epsilon(1e-300) == 1.0
    cert = best_epsilon(Laplace(1.0), 1e-6)
    assert cert.by == "laplace-exact" and "exact" in cert.notes["pld"]


def test_laplace_exact_is_below_the_pld_it_replaces():
    """dp-accounting's pessimistic PLD is an upper bound too: the exact value is at or below it."""
    for e0, delta in [(1.0, 1e-6), (20.0, 0.1), (1e-3, 1e-12)]:
        exact = A.LaplaceExactAccountant().compose(Laplace(1.0 / e0)).epsilon(delta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pld = A.PLDAccountant().compose(Laplace(1.0 / e0)).epsilon(delta)
        assert exact <= pld


# --- exact pure sums ------------------------------------------------------------------------------------------
def test_pure_sum_is_the_exact_sum_rounded_up_once():
    acc = A.PureAccountant().compose(Laplace(2.0) + Laplace(12.0) * 6)
    assert acc.pure_epsilon() == 1.0  # 1/2 + 6/12 = 1 exactly; was 1 + 1e-13
    assert acc.epsilon(1e-30) == 1.0
    # Laplace(3): 1/3 rounded to nearest is below 1/3; the exact sum of 7 rounds up past it
    acc = A.PureAccountant().compose(Laplace(3.0) * 7)
    assert Fraction(acc.pure_epsilon()) >= Fraction(7, 3) and Fraction(math.nextafter(acc.pure_epsilon(), 0)) < Fraction(7, 3)
    # the same multiset in any grouping or order: the same number
    for event in (Laplace(3.0) * 3 + Laplace(3.0) * 4, Composed(tuple([Laplace(3.0)] * 7))):
        assert A.PureAccountant().compose(event).pure_epsilon() == acc.pure_epsilon()


def test_a_record_below_its_schedule_is_certified_below_it_at_tiny_delta():
    """DP-UCB's record: Lap(2) + 6 x Lap(12), schedule Lap(2) + PureDP(0.5) (equal sums 1): before, the record's
    best read 1.0000000000001 (pure, 1e-13 margin), the schedule's 1.0000000000000009 (optimal)."""
    for delta in (1e-300, 1e-30):
        realized = best_epsilon(Laplace(2.0) + Laplace(12.0) * 6, delta).value
        certified = best_epsilon(Laplace(2.0) + PureDP(0.5), delta).value
        assert realized <= certified


def test_pure_at_least_rounds_a_quotient_up():
    q = Fraction(1.0) / Fraction(3.0)
    assert Fraction(PureDP.at_least(q).epsilon) >= q > Fraction(1.0 / 3.0)
    assert PureDP.at_least(Fraction(1, 2)).epsilon == 0.5


def test_vector_tree_node_is_never_below_its_laplace_release():
    """PrivateLinUCB's node: PureDP(sensitivity / scale) to nearest was an ulp below the Laplace release the
    ledger records (exact rational), so the certificate at delta = 0 was below that release's epsilon."""
    from privbandit.policies import make_policy

    sched = make_policy("private_lin_ucb").privacy_schedule(4, 3)
    tree = sched.tree
    release = Fraction(tree.sensitivity) / Fraction(tree.scale)  # what the ledger records: Laplace(scale, sensitivity)
    assert Fraction(tree.sensitivity / tree.scale) < release  # the float quotient is below it here
    (leaf, n), = sched.events(4).grouped().items()
    assert Fraction(leaf.epsilon) >= release
    assert Fraction(A.PureAccountant().compose(sched.events(4)).epsilon(0.0)) >= n * release


# --- the pure record is kept by _add ----------------------------------------------------------------------------
class _OwnPath(A.GDPAccountant):
    def add_directly(self, leaf, count):
        self._add(leaf, count)
        return self


class _SuperAdd(A.PureAccountant):
    def _add(self, leaf, count):  # an override that calls its parent's: recorded once
        super()._add(leaf, count)


def test_a_pure_release_added_outside_compose_is_counted():
    """Before: pure_epsilon() 0 and epsilon(0) 0 for a PureDP(1) release added through _add directly."""
    acc = _OwnPath().add_directly(PureDP(1.0), 1)
    assert acc.pure_epsilon() == 1.0 and acc.epsilon(0.0) == 1.0
    assert acc.delta(0.5) > 0.0
    assert _SuperAdd().compose(PureDP(1.0), 3).pure_epsilon() == 3.0
    assert "_adding" not in _SuperAdd().compose(PureDP(1.0)).__dict__


# --- end to end: realized <= certified with no tolerance --------------------------------------------------------
@pytest.mark.parametrize("name, params, n_arms, horizon, delta", [
    ("lazy_dp_ts", {}, 5, 5, 1e-6),
    ("lazy_dp_ts", {"epsilon": 20.0}, 5, 6, 0.1),
    ("lazy_dp_ts", {"epsilon": 1e-3}, 2, 30, 1e-150),
    ("dp_ucb", {}, 2, 60, 1e-300),
    ("dp_ucb", {}, 2, 60, 1e-30),
    ("dp_ts", {}, 3, 30, 1e-165),
    ("private_lin_ucb", {}, 3, 4, 1e-30),
])
def test_realized_never_exceeds_certified_exactly(name, params, n_arms, horizon, delta):
    from privbandit.contextual import LinearContextual
    from privbandit.engine import simulate
    from privbandit.envs import Bernoulli
    from privbandit.policies import make_policy

    pol = make_policy(name, **params)
    env = (LinearContextual(5, n_arms, noise=0.1) if "contexts" in getattr(pol, "requires", ())
           else Bernoulli(np.linspace(0.2, 0.8, n_arms)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = simulate(pol, env, horizon, 2, seed=1, delta=delta, ledger="tight", progress=False,
                       ledger_replicates=None, realized_points=12)
    realized = res.realized_epsilon
    queried = ~np.isnan(realized)
    assert queried.any()
    assert np.all(realized[queried] <= np.broadcast_to(res.certified_epsilon[:, None], realized.shape)[queried])
