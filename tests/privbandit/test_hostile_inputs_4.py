"""Hostile inputs, fourth round (session 7): the accountant layer and the budget helpers, fed values at
the edges of the numbers (a whole number beyond int64, the largest and a subnormal float, infinities,
NaN, -1, 0, a bool, a string, None, an array).

Every event and every accountant query must either refuse the input with a ValueError naming the
parameter, or answer a valid value -- an epsilon in [0, inf], a delta in [0, 1] -- without any
RuntimeWarning reaching the caller. Before the fixes of this round:

* ``Laplace(scale=5e-324)`` (eps0 = inf): the optimal accountant's solver raised on NaN, so
  ``best_epsilon`` failed instead of answering inf;
* ``Laplace(scale=1e308)`` at delta 1e-300: the optimal accountant's bracket had no sign change
  (its additive 1e-300 margin), a ValueError from scipy;
* ``Laplace(sensitivity=5e-324, scale=2)`` and ``Gaussian(sensitivity=5e-324, sigma=2)``: the ratio
  underflowed to 0 and the accountants refused their own internal epsilon / mu of 0;
* ``PLDAccountant`` on ``PureDP(5e-324)``: an OverflowError (a subnormal grid step);
* overflow / invalid-value RuntimeWarnings from the RDP curves, the PLD's Chernoff tail and the RDP
  refinement at epsilons near 1e308;
* ``best_epsilon(1.0, ...)``, ``advanced_composition_epsilon(1.0, ...)``, ``dp_accounting_accountant(1.0)``,
  ``calibrate(certificate=1.0, ...)``, ``budget.tune(candidates=1.0, ...)`` and ``budget.tune(seed=-1)``
  raised TypeErrors / AttributeErrors or numpy's own messages naming no parameter.
"""

import math
import warnings

import numpy as np
import pytest

import accountants as A
from privbandit import budget
from privbandit.envs import Bernoulli
from privbandit.policies import DPTS, DPUCB

HOSTILE = [2**70, 1e308, 5e-324, math.inf, -math.inf, math.nan, -1, 0, True, "1", None, np.array([1.0, math.nan])]

ACCOUNTANTS = [A.GDPAccountant, A.PureAccountant, A.RDPAccountant, A.PLDAccountant, A.KOVHeterogeneousAccountant,
               A.OptimalHomogeneousAccountant, A.AdvancedCompositionAccountant]

EVENTS = {
    A.Laplace: dict(scale=2.0, sensitivity=1.0),
    A.Gaussian: dict(sigma=2.0, sensitivity=1.0),
    A.PureDP: dict(epsilon=0.5),
    A.GDP: dict(mu=0.5),
    A.ZCDP: dict(rho=0.5),
    A.ApproxDP: dict(epsilon=0.5, delta=1e-6),
}


def _check_valid(event) -> None:
    """Every accountant that takes ``event`` answers valid numbers at ordinary and extreme deltas."""
    for factory in ACCOUNTANTS:
        try:
            acc = factory().compose(event)
        except A.UnsupportedEventError:
            continue
        for delta in (1e-6, 1e-300):
            eps = acc.epsilon(delta)
            assert isinstance(eps, float) and eps >= 0.0, (factory, event, delta, eps)  # NaN fails too
        d = acc.delta(1.0)
        assert 0.0 <= d <= 1.0, (factory, event, d)
    cert = A.best_epsilon(event, 1e-9)
    assert cert.value >= 0.0, (event, cert)


@pytest.mark.parametrize("cls", list(EVENTS), ids=lambda c: c.__name__)
def test_every_event_parameter_at_the_edges_is_named_or_valid(cls):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning reaching the caller is a defect here
        for parameter in EVENTS[cls]:
            for value in HOSTILE:
                try:
                    event = cls(**{**EVENTS[cls], parameter: value})
                except ValueError as exc:
                    assert parameter in str(exc), (cls, parameter, value, str(exc))
                    continue
                _check_valid(event)


def test_the_extreme_events_of_this_round_answer_valid_values():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # eps0 = inf: no finite epsilon holds at any delta < 1, and delta(eps) = 1
        opt = A.OptimalHomogeneousAccountant().compose(A.Laplace(5e-324) * 3)
        assert opt.epsilon(1e-6) == math.inf and opt.delta(5.0) == 1.0
        assert A.best_epsilon(A.Laplace(5e-324), 1e-6).value == math.inf
        # eps0 = 1e-308 at delta = 1e-300: valid (>= the truth, 0) and at most k eps0 (rounded up by 4 ulp:
        # the float product k eps0 may lie below the real largest loss, session 9)
        opt = A.OptimalHomogeneousAccountant().compose(A.Laplace(1e308))
        eps = opt.epsilon(1e-300)
        # (session 16: eps0 = 1 / 1e308 is subnormal and now rounded up exactly, one ulp = 4.9e-16 relative above
        # to-nearest, then the 4 ulp: 1.0000000000000014e-308)
        assert 0.0 <= eps <= 1e-308 * (1 + 3e-15) and opt.delta(eps) <= 1e-300
        # a ratio below the least subnormal is that subnormal, never 0
        assert A.Laplace(2.0, 5e-324).pure_epsilon() == 5e-324
        assert A.Gaussian(2.0, 5e-324).gdp_mu() == 5e-324
        assert A.best_epsilon(A.Laplace(2.0, 5e-324), 1e-9).value == 0.0  # delta(0) = TV ~ 1e-324 < 1e-9
        # a subnormal pure epsilon in the PLD: its atoms rounded up to the finest grid, no OverflowError
        pld = A.PLDAccountant().compose(A.PureDP(5e-324) * 4)
        assert pld.epsilon(1e-6) >= 0.0 and 0.0 <= pld.delta(0.0) <= 1e-10
        # eps0 = 1e308: every pure accountant answers at most 1e308 (k eps0), RDP without warnings
        assert A.RDPAccountant().compose(A.PureDP(1e308)).epsilon(1e-6) == pytest.approx(1e308, rel=1e-12)
        assert A.best_epsilon(A.PureDP(1e308), 1e-6).value >= 1e308 * (1 - 1e-12)


@pytest.mark.parametrize("value", [1.0, None, 7, "laplace"])
def test_non_events_are_named(value):
    with pytest.raises(ValueError, match="events must be an Event"):
        A.best_epsilon(value, 1e-6)
    with pytest.raises(ValueError, match="events must be an Event"):
        A.best_delta(value, 1.0)
    with pytest.raises(ValueError, match=r"event must be an Event"):
        A.dp_accounting_accountant(value)
    with pytest.raises(ValueError, match=r"epsilons must be a sequence"):
        A.advanced_composition_epsilon(value, 1e-6)
    with pytest.raises(ValueError, match=r"events\[1\] must be an Event"):
        A.best_epsilon([A.Laplace(1.0), 1.0], 1e-6)


def test_calibrate_names_its_parameters():
    ok = dict(certificate=lambda x: x, target=0.5, lower=0.1, upper=1.0, increasing=True)
    for parameter, value in [("certificate", 1.0), ("lower", "1"), ("lower", None), ("upper", math.nan),
                             ("upper", np.array([1.0, 2.0])), ("increasing", 0), ("increasing", None),
                             ("integer", "yes"), ("xtol", None), ("xtol", -1.0)]:
        with pytest.raises(ValueError, match=parameter):
            A.calibrate(**{**ok, parameter: value})
    assert A.calibrate(**ok).parameter == pytest.approx(0.5, rel=1e-9)


def test_budget_tune_and_frontier_name_their_parameters():
    env = Bernoulli([0.6, 0.4])
    for seed in (-1, 1.5, math.nan, "1", True):
        with pytest.raises(ValueError, match="seed must be"):
            budget.tune([DPUCB(epsilon=1.0)], env, 50, target=5.0, delta=1e-6, replicates=2, seed=seed)
    for candidates in (1.0, DPTS(epsilon=1.0), "dp_ts", np.array([1.0])):
        with pytest.raises(ValueError, match="candidates must be"):
            budget.tune(candidates, env, 50, target=5.0, delta=1e-6, replicates=2)
    with pytest.raises(ValueError, match=r"bs must hold whole numbers"):
        budget.ts_frontier(5.0, 1000, 3, [2, math.nan], delta=1e-6)
    # a generator of candidates is a sequence too
    best, rows = budget.tune((p for p in [DPUCB(epsilon=1.0), DPTS(epsilon=1.0)]), env, 50, target=5.0, delta=1e-6,
                             replicates=2)
    assert len(rows) == 2


def test_an_epsilon_past_the_ledgers_floats_is_refused_and_the_ceiling_itself_is_realized():
    """DPUCB(epsilon=1e200) ran, but its records' eps^2 overflowed the ledger's difference arrays
    (inf - inf = NaN) and the CLI reported 'worst tracked record 0 against 1e+200 certified ... ok'."""
    from privbandit.engine import simulate
    from privbandit.policies import PrivateUCB

    for cls in (DPUCB, PrivateUCB, DPTS):
        with pytest.raises(ValueError, match=r"epsilon must lie in \[1e-300, 1e\+100\]"):
            cls(epsilon=1e200)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = simulate(cls(epsilon=1e100), Bernoulli([0.6, 0.4]), 60, 2, seed=0, progress=False)
        realized = np.asarray(res.realized_epsilon, dtype=float)
        # rows: checkpoints (only realized_points of them are queried, the others hold NaN); columns:
        # the tracked replicates
        tracked = realized[~np.isnan(realized).all(axis=1)]
        assert len(tracked) >= 2 and not np.isnan(tracked).any()
        # every one of these policies has released by round 60; each release spends a positive share
        # of 1e100 (at least 1e100 / the number of tree levels), so the worst record is far above 0
        assert np.nanmax(tracked) >= 1e99 / 8, (cls, np.nanmax(tracked))
        assert np.nanmax(tracked) <= res.certified_epsilon[-1] * (1 + 1e-9)


def test_run_level_inputs_of_this_round_are_named_before_anything_runs():
    from privbandit.engine import simulate
    from privbandit.envs import BarabasiAlbert, ClippedGaussian, DisjointCliques, GraphFeedback, PlantedPartition
    from privbandit.ledger import Ledger
    from privbandit.policies import UCB1

    # a subnormal delta ran the whole simulation, warned an overflow in the ledger, then failed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"delta must lie in \[2.2250738585072014e-308, 1\)"):
            simulate(DPUCB(epsilon=1.0), Bernoulli([0.6, 0.4]), 50, 2, delta=5e-324, progress=False)
    # np.isfinite(2**70) was a TypeError; 1e308 / 5e-324 overflowed with RuntimeWarnings
    assert ClippedGaussian([0.6, 0.4], scale=2**70).scale == 2.0**70  # within range: a valid (coin-flip) scale
    for scale in (1e308, 5e-324, "1", None, math.nan, True):
        with pytest.raises(ValueError, match=r"scale must lie in \[1e-100, 1e\+100\]"):
            ClippedGaussian([0.6, 0.4], scale=scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate(UCB1(), ClippedGaussian([0.6, 0.4], scale=1e100), 30, 2, seed=0, progress=False)
    for make, name in ((lambda v: BarabasiAlbert(4, v), "m"), (lambda v: PlantedPartition(4, v, 0.9, 0.1), "groups"),
                       (lambda v: DisjointCliques(4, v), "size")):
        with pytest.raises(ValueError, match=f"{name} must be a whole number"):
            GraphFeedback(Bernoulli([0.5] * 4), make(2**70))
    # the ledger's public API refuses a per-release ratio whose square it cannot sum
    ledger = Ledger(1, 2)
    with pytest.raises(ValueError, match=r"sensitivity / scale must be at most 1e\+100"):
        ledger.record_laplace(0, 0, 0, 1, 1e-200, 1.0, mechanism="m")
    with pytest.raises(ValueError, match=r"sensitivity / sigma must be at most 1e\+100"):
        ledger.record_gaussian(0, 0, 0, 1, 1e-200, 1.0, mechanism="m")
