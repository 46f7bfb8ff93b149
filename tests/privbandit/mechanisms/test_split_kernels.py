"""The split mechanism's and the fresh batches' fused kernels (privbandit.mechanisms._split_kernels)
give the same bits compiled and interpreted, through whole insert sequences and their tight ledgers.

The golden digests (test_bit_identical.py) pin the results against the code before the kernels;
here every way of inserting (one-hot rounds, masks, every stream, manual batch closes and targets)
is repeated with the kernels interpreted and compared bit for bit, past the split core's initial 8
levels (a core that grows between a kernel's retry)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.ledger import Ledger
from privbandit.mechanisms import FreshBatchMean, SplitMechanism, _kernels
from privbandit.mechanisms._split_kernels import hh_split_binary_prepare


def _run(make, replicates, rounds, manual=False):
    data = np.random.default_rng(8)
    book = Ledger(replicates, 3, tight=True)
    mech = make(replicates, book)
    outs = []
    for i in range(rounds):
        if manual and i % 7 == 3:
            mech.close_batch(data.random((replicates, 3)) < 0.5)
        if manual and i % 11 == 5:
            mech.set_batch_size(np.where(data.random((replicates, 3)) < 0.5, mech.pending + data.integers(0, 4), 0))
        if i % 3 == 2:  # every stream, or a random subset of them: the insert(values, mask) routes
            vals = data.random((replicates, 3))
            mask = np.ones((replicates, 3), dtype=bool) if i % 2 else data.random((replicates, 3)) < 0.5
            mech.insert(vals, mask)
        else:
            arms = data.integers(0, 3, replicates)
            mech.insert_pulled(arms, data.random(replicates))
        outs.append(mech.noisy_sum.copy())
    return np.array(outs), book.releases()


MAKERS = {
    "split": lambda R, book: SplitMechanism(R, 3, epsilon=0.5, rng=np.random.default_rng(7), ledger=book),
    "split_exact": lambda R, book: SplitMechanism(R, 3, epsilon=0.5, rng=np.random.default_rng(7), ledger=book,
                                                  exact=True),
    "doubling": lambda R, book: FreshBatchMean(R, 3, epsilon=0.5, rng=np.random.default_rng(7), ledger=book),
    "manual": lambda R, book: FreshBatchMean(R, 3, epsilon=0.5, rng=np.random.default_rng(7), ledger=book,
                                             batches="manual"),
}


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the interpreted path exists")
@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("replicates", [1, 6])
def test_compiled_and_interpreted_agree_bit_for_bit(monkeypatch, name, replicates):
    rounds = 2000 if name == "split" and replicates == 1 else 400  # 2000: ~950 items, a 9-level block (growth)
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 0)  # compiled even for one row
    compiled = _run(MAKERS[name], replicates, rounds, manual=name == "manual")
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 10**9)  # interpreted at every size ...
    monkeypatch.setattr(_kernels, "_LOADED", False)  # ... although this process has imported numba
    assert hh_split_binary_prepare.at(6) is hh_split_binary_prepare.py_func
    interpreted = _run(MAKERS[name], replicates, rounds, manual=name == "manual")
    assert np.array_equal(compiled[0].view(np.int64), interpreted[0].view(np.int64))
    assert set(compiled[1]) == set(interpreted[1])
    for key in compiled[1]:
        assert np.array_equal(np.asarray(compiled[1][key]), np.asarray(interpreted[1][key]))
