"""Shared helpers of the UCB-family / elimination privacy tests (private_ucb, dp_ucb, elimination)."""

import functools
import math

import numpy as np
import pytest
from scipy import stats

from accountants import GDPAccountant, KOVHeterogeneousAccountant, PureAccountant, best_epsilon
from privbandit.engine import simulate
from privbandit.ledger import Ledger
from privbandit.mechanisms.sampling import NoiseSampler

# The accountants the cheap ledger composes per record (pure, KOV heterogeneous, GDP): the cheap
# realized spend must stay below the schedule's certificate under the same accountants.
LEDGER_FAMILY = [PureAccountant, KOVHeterogeneousAccountant, GDPAccountant]
FIVE_ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]


@functools.lru_cache(maxsize=None)
def _cached_best(event, delta):
    return best_epsilon(event, delta).value


@pytest.fixture
def memo_ledger(monkeypatch):
    """Tight-mode realized epsilon = best_epsilon of each record's exact multiset, memoised by multiset."""
    monkeypatch.setattr(Ledger, "_event_epsilon", staticmethod(_cached_best))


def checkpoints(T, points=10):
    return np.unique(np.r_[np.geomspace(1, T, points).round().astype(int), 2 ** np.arange(int(math.log2(T)) + 1), T])


def _track_all(replicates):
    """Per-record tracking for every replicate (the engine may track only a few by default)."""
    import inspect
    return {"ledger_replicates": replicates} if "ledger_replicates" in inspect.signature(simulate).parameters else {}


def assert_realized_below_certified(policy, env, T, seed, replicates=100, tight=False):
    """``replicates`` random runs, every checkpoint (powers of two included).

    Cheap ledger: realized (pure / KOV / GDP per record) <= the schedule's certificate under the same
    accountants, and the live certificate (every accountant) <= that. Tight ledger: realized (every
    accountant on the exact per-record multisets) <= the live certificate itself.
    """
    r = simulate(policy, env, T, replicates, seed=seed, checkpoints=checkpoints(T), realized_points=10**6,
                 ledger="tight" if tight else True, **_track_all(replicates))
    sched = policy.privacy_schedule(T, env.n_arms)
    assert r.realized_epsilon.shape == (r.checkpoints.size, replicates)
    assert np.all(np.isfinite(r.realized_epsilon))  # every replicate, every checkpoint was checked
    assert r.certified_epsilon[-1] == pytest.approx(sched.epsilon(T, r.delta).value, rel=1e-12)
    if tight:
        assert np.all(r.realized_epsilon <= r.certified_epsilon[:, None] * (1 + 1e-9) + 1e-12)
    else:
        family = np.array([sched.epsilon(int(c), r.delta, LEDGER_FAMILY).value for c in r.checkpoints])
        assert np.all(r.realized_epsilon <= family[:, None] * (1 + 1e-9) + 1e-12)
        assert np.all(r.certified_epsilon <= family * (1 + 1e-9) + 1e-12)
    assert np.nanmax(r.realized_epsilon) > 0  # something was released and accounted
    return r


def drive(policy, n_arms, replicates, horizon, arms_fn, reward=0.5, seed=0, ledger=None, rounds=None):
    """Run ``policy`` with forced arms ``arms_fn(t) -> (R,)`` (select is still called every round) and a
    constant reward; returns the run. Forced arms keep the noise independent of the pull counts."""
    run = policy.start(n_arms, replicates, horizon, np.random.default_rng(seed), ledger=ledger)
    for t in range(1, (rounds or horizon) + 1):
        run.select(t)
        run.update(t, np.asarray(arms_fn(t), dtype=np.intp), np.full(replicates, float(reward)))
    return run


@pytest.fixture
def noise_factor(monkeypatch):
    """Set the mechanisms' noise-scale test hook (1 = correct, 0 = noise removed, 0.5 = halved)."""
    def set_factor(factor):
        monkeypatch.setattr(NoiseSampler, "_noise_scale_factor", factor)
    return set_factor


def variance_ratio(residual, variance):
    """mean(residual^2 / variance): 1 under the declared law (rel. sd ~ 2.3/sqrt(n) for Laplace sums)."""
    return float(np.mean(np.asarray(residual) ** 2 / np.asarray(variance)))


def laplace_ks(standardised):
    """KS p-value of ``standardised`` against the standard Laplace law."""
    return stats.kstest(np.ravel(standardised), "laplace").pvalue
