"""insert_pulled(arms, values) is insert(one-hot values, one-hot mask): same outputs, noise and ledger.

It is the bandit-round entry point of every stream mechanism (each replicate observes its pulled
arm) and shares the one ``_insert`` implementation with ``insert``; these tests pin the equivalence
on every mechanism, float and exact, with a tight ledger, and its input validation.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.ledger import Ledger
from privbandit.mechanisms import (FreshBatchMean, HybridMechanism, IntervalMean, LogarithmicMechanism,
                                   SplitMechanism, TreeMechanism)

R, K, STEPS = 6, 4, 300


def _make(kind, led, exact):
    kw = dict(rng=np.random.default_rng(7), ledger=led, exact=exact)
    return {
        "tree": lambda: TreeMechanism(R, K, epsilon=0.9, horizon=STEPS, **kw),
        "logarithmic": lambda: LogarithmicMechanism(R, K, epsilon=0.9, **kw),
        "hybrid": lambda: HybridMechanism(R, K, epsilon=0.9, **kw),
        "split": lambda: SplitMechanism(R, K, epsilon=0.9, **kw),
        "fresh_batch": lambda: FreshBatchMean(R, K, epsilon=0.9, **kw),
        "interval": lambda: IntervalMean(R, K, v=1.1, interval=2, **kw),
    }[kind]()


def _run(kind, exact, pulled):
    led = Ledger(R, K, tight=True)
    m = _make(kind, led, exact)
    g = np.random.default_rng(11)
    outputs = []
    for _ in range(STEPS):
        arms = g.integers(0, K, R)
        values = g.random(R)
        values[g.random(R) < 0.1] = 1.0
        if pulled:
            m.insert_pulled(arms, values)
        else:
            full = np.zeros((R, K))
            mask = np.zeros((R, K), dtype=bool)
            full[np.arange(R), arms] = values
            mask[np.arange(R), arms] = True
            m.insert(full, mask)
        outputs.append(np.array(m.noisy_mean if kind == "interval" else m.noisy_sum))
    return np.array(outputs), m.count.copy(), led.draws.copy(), led.releases()


@pytest.mark.parametrize("kind", ["tree", "logarithmic", "hybrid", "split", "fresh_batch", "interval"])
@pytest.mark.parametrize("exact", [False, True])
def test_insert_pulled_equals_one_hot_insert(kind, exact):
    out_a, count_a, draws_a, rel_a = _run(kind, exact, pulled=True)
    out_b, count_b, draws_b, rel_b = _run(kind, exact, pulled=False)
    assert np.array_equal(out_a, out_b, equal_nan=True)
    assert np.array_equal(count_a, count_b) and np.array_equal(draws_a, draws_b)
    assert rel_a.keys() == rel_b.keys()
    for key in rel_a:
        assert np.array_equal(rel_a[key], rel_b[key]), key


@pytest.mark.parametrize("arms, values, match", [
    (np.array([0, 1, 2, 3, 0, 4]), np.full(6, 0.5), "arms must lie in"),
    (np.array([0, 1, 2, 3, 0, -1]), np.full(6, 0.5), "arms must lie in"),
    (np.array([0, 1, 2, 3, 0, 1]), np.array([0.5, 0.5, 0.5, 0.5, 0.5, 1.5]), "values must lie in"),
    (np.array([0, 1, 2, 3, 0, 1]), np.array([0.5, 0.5, 0.5, 0.5, 0.5, np.nan]), "values must lie in"),
    (np.array([0, 1, 2]), np.full(3, 0.5), "arms must be an integer array of shape"),
    (np.array([0.0, 1, 2, 3, 0, 1]), np.full(6, 0.5), "arms must be an integer array"),
    (np.array([0, 1, 2, 3, 0, 1]), np.full(5, 0.5), "values must have shape"),
])
def test_insert_pulled_validates(arms, values, match):
    m = TreeMechanism(R, K, epsilon=1.0, horizon=10, rng=np.random.default_rng(0), ledger=None)
    with pytest.raises(ValueError, match=match):
        m.insert_pulled(arms, values)
    assert not m.count.any()  # nothing was inserted
