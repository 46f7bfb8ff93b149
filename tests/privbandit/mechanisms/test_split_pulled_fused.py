"""The split mechanism's bandit-round insert (session 17, issue 19 item 1): ``SplitMechanism.insert_pulled``
checks the entries and runs the count / binary prepare in one kernel (``hh_split_pulled_prepare``), the
two kernels ``StreamMechanism.insert_pulled`` ran one after the other -- the same state, releases,
draws and ledger, bit for bit, the same refusals -- and takes the generic path wherever that path is
the seam (exact mode, an ``_insert`` replaced on the instance or overridden in a subclass)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.ledger import Ledger
from privbandit.mechanisms import SplitMechanism, _kernels
from privbandit.mechanisms._base import StreamMechanism
from privbandit.mechanisms._split_kernels import hh_split_pulled_prepare

STATE = ("count", "noisy_sum", "c", "r", "_pending")


def _rounds(insert, replicates, rounds, exact=False):
    """State after each round and the tight ledger of ``rounds`` one-hot inserts made by ``insert``."""
    data = np.random.default_rng(8)
    book = Ledger(replicates, 3, tight=True)
    mech = SplitMechanism(replicates, 3, epsilon=0.5, rng=np.random.default_rng(7), ledger=book, exact=exact)
    outs = []
    for _ in range(rounds):
        insert(mech, data.integers(0, 3, replicates), data.random(replicates))
        outs.append(np.concatenate([getattr(mech, k).astype(float).ravel() for k in STATE]))
    return np.array(outs), book.releases(), mech.sampler.rng.bit_generator.state


def _same(x, y):
    assert np.array_equal(x[0].view(np.int64), y[0].view(np.int64)) and x[2] == y[2]
    assert set(x[1]) == set(y[1])
    for key in x[1]:
        assert np.array_equal(np.asarray(x[1][key]), np.asarray(y[1][key]))


@pytest.mark.parametrize("replicates, rounds", [(1, 700), (6, 500)])  # 700: ~230 items an arm, a flush of 127
@pytest.mark.parametrize("jit_rows", [0, 10**9])  # compiled at every size / interpreted at every size
def test_fused_insert_is_the_generic_insert_bit_for_bit(monkeypatch, replicates, rounds, jit_rows):
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", jit_rows)
    if jit_rows:
        monkeypatch.setattr(_kernels, "_LOADED", False)
    fused = _rounds(SplitMechanism.insert_pulled, replicates, rounds)
    _same(fused, _rounds(StreamMechanism.insert_pulled, replicates, rounds))


def test_fused_insert_does_not_go_through_the_generic_selection(monkeypatch):
    # one crossing into compiled code before the draw: the generic selection (its own kernel) is not run
    def refuse(*args):
        raise AssertionError("insert_pulled took the generic path")

    monkeypatch.setattr(StreamMechanism, "_select_pulled", refuse)
    mech = SplitMechanism(4, 3, epsilon=1.0, rng=np.random.default_rng(1), ledger=None)
    mech.insert_pulled(np.array([0, 2, 1, 2]), np.array([0.5, 1.0, 0.0, 0.25]))
    assert mech.count.tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]]


@pytest.mark.parametrize("replicates", [1, 5])
def test_fused_insert_refuses_what_the_generic_one_refuses_writing_nothing(replicates):
    mech = SplitMechanism(replicates, 3, epsilon=1.0, rng=np.random.default_rng(1), ledger=None)
    state = mech.sampler.rng.bit_generator.state
    ok_arms, ok_vals = np.zeros(replicates, dtype=int), np.full(replicates, 0.5)
    bad = [(np.full(replicates, 3), ok_vals, r"arms must lie in \[0, 3\)"),
           (np.full(replicates, -1), ok_vals, r"arms must lie in \[0, 3\)"),
           (ok_arms, np.full(replicates, 1.5), r"values must lie in \[0, 1\]"),
           (ok_arms, np.full(replicates, np.nan), r"values must lie in \[0, 1\]"),
           (ok_arms.astype(float), ok_vals, "arms must be an integer array"),
           (ok_arms, np.zeros(replicates + 1), "values must have shape")]
    for arms, vals, message in bad:
        with pytest.raises(ValueError, match=message):
            mech.insert_pulled(arms, vals)
        assert not mech.count.any() and mech.sampler.rng.bit_generator.state == state


def test_a_replaced_or_overridden_insert_and_exact_mode_take_the_generic_path(monkeypatch):
    # an audit's planted bug replaces the instance's _insert (the seam of every reward-value bug): it is honoured
    mech = SplitMechanism(2, 3, epsilon=1.0, rng=np.random.default_rng(1), ledger=None)
    seen = []
    mech._insert = lambda v, f, rr, kk: seen.append(v.copy())
    mech.insert_pulled(np.array([1, 2]), np.array([0.5, 0.75]))
    assert len(seen) == 1 and seen[0].tolist() == [0.5, 0.75] and not mech.count.any()

    class Doubling(SplitMechanism):
        def _insert(self, v, f, rr, kk):
            super()._insert(np.minimum(2.0 * v, 1.0), f, rr, kk)

    sub = Doubling(2, 3, epsilon=1.0, rng=np.random.default_rng(1), ledger=None)
    sub.sampler._noise_scale_factor = 0.0  # the exact sums, to read the doubling
    sub.insert_pulled(np.array([1, 2]), np.array([0.25, 0.5]))
    assert sub.noisy_sum.tolist() == [[0.0, 0.5, 0.0], [0.0, 0.0, 1.0]]

    calls = []
    monkeypatch.setattr(hh_split_pulled_prepare, "at", lambda n: calls.append(n) or pytest.fail("fused in exact mode"))
    exact = SplitMechanism(2, 3, epsilon=1.0, rng=np.random.default_rng(1), ledger=None, exact=True)
    exact.insert_pulled(np.array([1, 2]), np.array([0.5, 0.75]))
    assert exact.count.sum() == 2 and not calls
