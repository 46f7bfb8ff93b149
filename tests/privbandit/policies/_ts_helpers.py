"""Shared helpers of the TS-family privacy tests (Hu & Hegde, Mishra & Thakurta)."""

import functools
import math

import numpy as np
import pytest

from accountants import best_epsilon
from privbandit.engine import simulate
from privbandit.ledger import Ledger


@functools.lru_cache(maxsize=None)
def _cached_best(event, delta):
    return best_epsilon(event, delta).value


@pytest.fixture
def memo_ledger(monkeypatch):
    """Tight-mode realized epsilon = best_epsilon of each record's exact multiset, memoised by
    multiset (a pure function of its arguments), so 100 replicates x every checkpoint stay cheap."""
    monkeypatch.setattr(Ledger, "_event_epsilon", staticmethod(_cached_best))


def checkpoints(T):
    return np.unique(np.r_[np.linspace(1, T, 9).astype(int), 2 ** np.arange(int(math.log2(T)) + 1)])


def assert_realized_below_certified(policy, env, T, seed, replicates=100):
    """``replicates`` random runs; the exact per-record realized epsilon (tight ledger, every
    accountant) never exceeds the live certificate at any checkpoint."""
    r = simulate(policy, env, T, replicates, seed=seed, checkpoints=checkpoints(T), realized_points=10**6,
                 ledger="tight", ledger_replicates=None)
    assert r.realized_epsilon.shape[1] == replicates and np.all(np.isfinite(r.realized_epsilon))
    assert np.all(r.realized_epsilon <= r.certified_epsilon[:, None] + 1e-9)
    return r


def run_manual(policy, n_arms, replicates, horizon, reward=0.5, rounds=None, seed=0, ledger=None):
    """Drive a policy run with a constant reward; returns the run."""
    run = policy.start(n_arms, replicates, horizon, np.random.default_rng(seed), ledger=ledger)
    for t in range(1, (rounds or horizon) + 1):
        arms = run.select(t)
        run.update(t, arms, np.full(replicates, reward))
    return run


def hh_selects(monkeypatch, policy, fused: bool, rounds: int, replicates: int, pickled_at: int | None = None):
    """A Hu & Hegde run's arms over ``rounds`` (3 Bernoulli arms), compiled, with the policy's fused select or
    with its two-step one (``beta_argmax``), and the stream's state after them; ``pickled_at``: the round at
    which the run is pickled without its draw buffer (an older snapshot) and resumed."""
    import pickle

    from privbandit.mechanisms import _kernels
    from privbandit.policies import hu_hegde

    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 0)
    if not fused:
        monkeypatch.setattr(hu_hegde, "native_beta", lambda rng, way, kernel: None)
    run = policy.start(3, replicates, rounds, np.random.default_rng(5))
    data = np.random.default_rng(6)
    seen = []
    for t in range(1, rounds + 1):
        if t == pickled_at:
            del run._theta
            run = pickle.loads(pickle.dumps(run))
        arms = run.select(t)
        run.update(t, arms, (data.random(replicates) < np.array([0.7, 0.5, 0.4])[arms]).astype(float))
        seen.append(arms.copy())
    monkeypatch.undo()
    return np.array(seen), run.rng.bit_generator.state


class CountingBeta(np.random.Generator):
    """A Generator subclass overriding ``beta`` (counted in ``calls``): the policies must draw through it."""

    calls = 0

    def beta(self, a, b, size=None):
        type(self).calls += 1
        return super().beta(a, b, size)
