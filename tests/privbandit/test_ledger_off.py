"""A run without a ledger records nothing (docs/engine.md, "Ledger off"; session 11, issue 19).

Until session 11 the mechanisms of a ``ledger=False`` run reported into an internal ledger that still
staged every release and counted draws, so the bench's "ledger off" column understated the ledger's
cost, and policies differed (DP-EXP3-Lap's Laplace releases recorded nothing when off)."""

import numpy as np
import pytest

from privbandit.audit.tracing import ReleaseTracer
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.ledger import Ledger
from privbandit.mechanisms.hybrid import HybridMechanism
from privbandit.mechanisms.tree import TreeMechanism
from privbandit.policies import REGISTRY


def _tree(ledger):
    tree = TreeMechanism(3, 2, epsilon=1.0, horizon=64, rng=np.random.default_rng(0), ledger=ledger)
    rng = np.random.default_rng(1)
    for _ in range(20):
        tree.insert_pulled(rng.integers(0, 2, 3), rng.random(3))
    return tree


def test_a_mechanism_without_a_ledger_stages_and_counts_nothing():
    tree = _tree(None)
    book = tree.ledger
    assert not book._sparse and not book._staged and not book._diff
    assert not book._draws.any()  # nothing counted
    with pytest.raises(ValueError, match="records nothing"):
        book.draws
    with pytest.raises(ValueError, match="records nothing"):
        book.realized_epsilon(1e-6)


def test_the_same_noise_with_and_without_a_ledger():
    recorded, unrecorded = _tree(Ledger(3, 2)), _tree(None)
    assert recorded.ledger.draws.sum() == 60  # every insert completes a node: one release each
    assert np.array_equal(recorded.sampler.rng.random(4), unrecorded.sampler.rng.random(4))


def test_the_tracer_still_sees_the_reports_of_a_run_without_a_ledger():
    """The black-box trace (any_ledger) pairs draws with reports into any ledger: the unrecorded
    ledger's reports still pass through the wrapped Ledger._store."""
    hybrid = HybridMechanism(2, 2, epsilon=1.0, rng=np.random.default_rng(0), ledger=None)
    with ReleaseTracer(None, any_ledger=True) as tr:
        for _ in range(9):
            hybrid.insert_pulled(np.array([0, 1]), np.array([0.5, 0.25]))
    assert tr.reports and not tr.orphans and not tr.unreported()


@pytest.mark.parametrize("name", ["dp_ucb_bound", "private_ucb", "dp_ucb", "dp_ts", "gaussian_ts", "dp_exp3_lap"])
def test_ledger_off_acts_as_ledger_on(name):
    """The same arms with and without the ledger (the ledger only listens); off, no realized spend."""
    on = simulate(REGISTRY[name](), Bernoulli([0.7, 0.5, 0.3]), 300, 4, seed=3, keep_arms=True, progress=False)
    off = simulate(REGISTRY[name](), Bernoulli([0.7, 0.5, 0.3]), 300, 4, seed=3, keep_arms=True, progress=False,
                   ledger=False)
    assert np.array_equal(on.arms, off.arms)
    assert np.array_equal(on.certified_epsilon, off.certified_epsilon)
