"""Session 16 (s16/acc): "a certificate is never below the truth, at any delta and any count".

* Per-release terms that land among the subnormals (eps^2, mu^2, eps tanh(eps/2), eps (e^eps - 1), a
  Laplace's sensitivity / scale): the accountants' relative margins do not cover an absolute rounding
  there. ``PureDP(1e-200)`` at delta 1e-300 certified 0 by GDP and advanced composition (hence
  ``best_epsilon``) where the exact epsilon is ~1e-200; ``GDP(1e-160)``'s delta(0) was 5.6e-6 below exact.
* ``delta(eps)`` is exactly 0 at and above the pure sum when every release is pure (every accountant).
* ``budget.invert`` on a certificate flat in the parameter returns the least-noise end.
* DP-UCB-Int's calibrated interval is the least one meeting its bound (17 of 520 were longer).
* End to end: live certificates against the exact curve of the releases a run's ledger recorded.
"""

import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from accountants import (GDP, AdvancedCompositionAccountant, ApproxDP, DiscreteLaplace, Gaussian, GDPAccountant,
                         KOVHeterogeneousAccountant, Laplace, OptimalHomogeneousAccountant, PLDAccountant,
                         PureAccountant, PureDP, RDPAccountant, best_delta, best_epsilon)
from accountants.events import Composed
from privbandit import budget

from _exact import event_log_delta_lower, rr_log_delta

SEVEN = (PureAccountant, AdvancedCompositionAccountant, KOVHeterogeneousAccountant, OptimalHomogeneousAccountant,
         RDPAccountant, GDPAccountant, PLDAccountant)
ULP0 = math.ulp(0.0)


def _accountants(event):
    for factory in SEVEN:
        acc = factory()
        if acc.supports(event):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield factory.__name__, acc.compose(event)


# --- 1. subnormal per-release terms ------------------------------------------------------------------------
@pytest.mark.parametrize("eps0", [1e-170, 1e-200, 1e-300])
@pytest.mark.parametrize("k", [1, 10, 1000])
def test_tiny_releases_at_tiny_delta_are_never_certified_below_the_exact_composition(eps0, k):
    """k-fold eps0-DP against its exact curve (KOV Thm 3.3, scipy log-pmfs): before, GDP (mu^2 = 0) and
    advanced composition (eps^2 = 0) answered 0 at delta 1e-300, and best_epsilon took it."""
    event = PureDP(eps0) * k
    delta = 1e-300
    answers = dict(_accountants(event))
    answers = {name: acc.epsilon(delta) for name, acc in answers.items()}
    answers["best"] = best_epsilon(event, delta).value
    for name, eps in answers.items():
        if math.isfinite(eps) and eps < k * eps0:
            assert rr_log_delta(k, eps0, eps) <= math.log(delta), (name, eps)
    assert answers["best"] > 0.0


@mpmath.workdps(400)
def _gdp_delta_exact(mu: float, eps: float) -> mpmath.mpf:
    """Dong, Roth & Su Cor. 2.13 at 400 digits (50 cancel to 0 below mu ~ 1e-50)."""
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    a = -eps / mu + mu / 2
    return mpmath.ncdf(a) - mpmath.exp(eps) * mpmath.ncdf(a - mu)


@pytest.mark.parametrize("mu", [1e-158, 1e-160, 1e-170, 1e-250])
def test_gdp_with_a_subnormal_mu_squared_stays_above_the_exact_delta(mu):
    """mu^2 among the subnormals: before, GDP(1e-160) composed to mu 9.99994e-161 (delta(0) 5.6e-6 relative
    below exact) and GDP(1e-170) to mu 0 (delta 0 at every epsilon, exact 4e-171); best_delta took GDP as exact."""
    exact = _gdp_delta_exact(mu, 0.0)
    assert exact > 0
    acc = GDPAccountant().compose(GDP(mu))
    assert acc.mu() >= mu
    assert acc.delta(0.0) >= exact
    assert best_delta(GDP(mu), 0.0).value >= exact
    assert best_delta(Gaussian(1.0, mu), 0.0).value >= exact  # sensitivity / sigma = mu, rounded up exactly


def test_a_subnormal_laplace_ratio_is_rounded_up_exactly():
    """2026 ulps / 3 = 675.33 ulps was 675 ulps (to nearest): epsilon at delta = 0 below the exact sum."""
    sensitivity = 2026 * ULP0
    leaf = Laplace(3.0, sensitivity)
    exact = Fraction(sensitivity) / 3
    assert Fraction(leaf.pure_epsilon()) >= exact
    assert Fraction(leaf.pure_epsilon()) - exact < Fraction(ULP0)
    for name, acc in _accountants(leaf * 7):
        assert Fraction(acc.epsilon(0.0)) >= 7 * exact, name
    assert Fraction(best_epsilon(leaf * 7, 0.0).value) >= 7 * exact
    # a normal ratio is unchanged (to nearest: the accountants' relative margins cover it)
    assert Laplace(3.0, 0.7).pure_epsilon() == 0.7 / 3.0


# --- 2(d). delta(eps) = 0 at and above the pure sum ---------------------------------------------------------
PURE_EVENTS = [PureDP(0.1) * 1000, Laplace(3.0, 0.7) * 50, ApproxDP(0.3, 0.0) * 7,
               DiscreteLaplace(5 * 2.0**-10, 3 * 2.0**-10) * 4,
               Composed((Laplace(1.0, 3.0) * 100, PureDP(0.2) * 10, ApproxDP(0.5, 0.0) * 3))]


@pytest.mark.parametrize("event", PURE_EVENTS, ids=["pure", "laplace", "approx0", "discrete", "mix"])
def test_delta_is_exactly_zero_at_and_above_the_pure_sum(event):
    """(sum eps_i, 0)-DP (Dwork & Roth Thm 3.16): before, GDP, advanced, RDP and the PLD answered positive
    deltas there (PureDP(0.1) x 1000 at 100.00000000001: 9.3e-121, 1.3e-174, 1.9e-286, 4.6e-9)."""
    for name, acc in _accountants(event):
        top = acc.pure_epsilon()
        assert math.isfinite(top)
        for eps in (top, top * 1.01, top * 100):
            assert acc.delta(eps) == 0.0, (name, eps)
        assert acc.delta(top * 0.999) >= 0.0


@pytest.mark.parametrize("event", [Gaussian(1.0, 5.0) * 3, ApproxDP(0.5, 1e-8) * 10,
                                   Composed((PureDP(0.1) * 5, Gaussian(1.0, 50.0)))])
def test_delta_stays_positive_where_a_release_is_not_pure(event):
    for name, acc in _accountants(event):
        assert acc.delta(1e3) > 0.0, name


def test_delta_zero_rule_keeps_the_argument_checks():
    for factory in SEVEN:
        with pytest.raises(ValueError, match="epsilon"):
            factory().compose(PureDP(0.1)).delta(-1.0)


# --- 2(c). invert on a flat certificate ------------------------------------------------------------------------
def test_invert_on_a_flat_certificate_returns_the_least_noise_end():
    """DP-UCB-Int at T = 2: one release at pull 1 with eps 1^(-v/2) = 1 for every v -- before, the tie read as
    "increasing" and the noisiest v (the upper end) came back; a larger v adds noise (the certificate falls
    with v at every longer horizon), so the least-noise answer is the lower end."""
    inv = budget.invert("dp_ucb_int", 1.0, 2, solve_for="v", bounds=(1.1, 1.9999), delta=1e-6, interval=1)
    assert inv.value == 1.1 and inv.certificate <= 1.0
    longer = [budget.epsilon("dp_ucb_int", 8, 1e-6, v=v, interval=1).value for v in (1.1, 1.9999)]
    assert longer[0] > longer[1]
    # no release by T = 10^4 at K = 100, interval 5000; at delta 0.1 every horizon to 2^20 T certifies 0 too,
    # so the direction is read at delta 1e-10
    inv = budget.invert("dp_ucb_int", 10.0, 10**4, solve_for="v", bounds=(1.01, 1.9999), n_arms=100, delta=0.1,
                        interval=5000)
    assert inv.value == 1.01 and inv.certificate == 0.0
    # Gaussian TS at T = K with b = 1: no release, every c certifies 0; c is the posterior's variance factor
    inv = budget.invert("gaussian_ts", 1.0, 2, solve_for="c", bounds=(1e-3, 1e3), delta=1e-6, b=1)
    assert inv.value == 1e-3 and inv.certificate == 0.0
    inv = budget.invert("gaussian_ts", 1.0, 2, solve_for="c", bounds=(1e-3, 1e3), target_mu=True, b=1)
    assert inv.value == 1e-3


# --- 2(a). DP-UCB-Int's calibrated interval is the least one ---------------------------------------------------
@pytest.mark.parametrize("target, delta, v", [(1e-5, 1e-10, 1.01), (1e-5, 1e-6, 1.1), (1e-4, 1e-300, 1.1),
                                              (1e-5, 1e-300, 1.5), (1e-6, 1e-300, 1.01), (1.0, 1e-6, 1.1)])
def test_dp_ucb_int_calibrated_interval_is_the_least_meeting_the_bound(target, delta, v):
    """Before: sqrt(S) cancelled (-sqrt(ln) + sqrt(ln + 8 t)) and the walk only stepped up: f ~ 3.4e13 was
    ~1.5e5 pulls too long at (1e-5, 1e-10, 1.01); 17 of 520 swept were not the least."""
    from privbandit.policies import DPUCBInt
    from privbandit.policies.dp_ucb import _paper_series_bound

    f = DPUCBInt(epsilon=target, delta=delta, v=v).interval
    assert _paper_series_bound(f, v, delta) <= target
    assert f == 1 or _paper_series_bound(f - 1, v, delta) > target


def test_dp_ucb_int_default_interval_unchanged():
    from privbandit.policies import DPUCBInt

    assert DPUCBInt().interval == 197


# --- 1. end to end: live certificates against the releases a run recorded ------------------------------------
def _record_events(book, replicate):
    """Per-record multisets of the run's releases, built from the raw release list (not the ledger's own
    grouping): {(kind, scale, sensitivity): copies} for each record a release touched."""
    rel = book.releases()
    sel = (rel["replicate"] == replicate) & (rel["hi"] > rel["lo"])
    per_record: dict = {}
    for kind, p, s, st, lo, hi in zip(rel["kind"][sel], rel["param"][sel], rel["sensitivity"][sel],
                                      rel["stream"][sel], rel["lo"][sel], rel["hi"][sel]):
        for record in range(int(lo), int(hi)):
            bag = per_record.setdefault((int(st), record), {})
            bag[(int(kind), float(p), float(s))] = bag.get((int(kind), float(p), float(s)), 0) + 1
    events = []
    for bag in {tuple(sorted(b.items())) for b in per_record.values()}:
        leaves = [(Laplace(p, s) if kind == 0 else Gaussian(p, s)) * n for (kind, p, s), n in bag if kind in (0, 1)]
        if leaves:
            events.append(Composed(tuple(leaves)))
    return events


@pytest.mark.parametrize("name, n_arms, horizon", [("dp_ucb", 3, 4), ("dp_exp3_lap", 2, 3), ("gaussian_ts", 2, 40),
                                                    ("dp_ucb_int", 2, 30), ("private_ucb", 2, 40)])
def test_live_certificates_at_tiny_deltas_cover_the_recorded_releases(name, n_arms, horizon):
    """T = K + 1 and short runs, deltas down to 1e-300: the exact curve (rigorous Laplace lower bound, exact
    GDP) of every record's recorded releases has delta <= d at the live certificate of every checkpoint."""
    import privbandit.ledger as ledger_module
    from privbandit.engine import simulate
    from privbandit.envs import Bernoulli
    from privbandit.policies import make_policy
    from privbandit.policies.base import schedule_for

    books = []

    class Capturing(ledger_module.Ledger):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            books.append(self)

    params = {"interval": 1} if name == "dp_ucb_int" else {}
    env = Bernoulli(np.linspace(0.2, 0.8, n_arms))
    original, ledger_module.Ledger = ledger_module.Ledger, Capturing
    try:
        res = simulate(make_policy(name, **params), env, horizon, 2, seed=5, ledger="tight", progress=False,
                       ledger_replicates=None, realized_points=1)
    finally:
        ledger_module.Ledger = original
    sched = schedule_for(make_policy(name, **params), horizon, n_arms, env.structure(), "entry")
    events = [ev for r in range(2) for ev in _record_events(books[0], r)]
    assert events
    for delta in (1e-300, 1e-100, 1e-12, 0.1):
        cert = sched.live_certificates(res.checkpoints, delta)[0][-1]
        for ev in events:
            assert event_log_delta_lower(ev, cert) <= math.log(delta), (delta, cert, ev)
