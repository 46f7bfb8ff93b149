"""Footprints and release timing of each mechanism, fresh batches, one-off releases."""

import numpy as np

from accountants.events import Gaussian, Laplace
from privbandit.ledger import Ledger
from privbandit.mechanisms import (FreshBatchMean, GaussianRelease, HybridMechanism, LaplaceRelease,
                                   LogarithmicMechanism, SplitMechanism)

ONE = np.ones((1, 1), dtype=bool)


def _footprints(led, mechanism=None):
    rel = led.releases()
    sel = np.ones(rel["lo"].size, bool) if mechanism is None else rel["mechanism"] == mechanism
    return list(zip(rel["lo"][sel].tolist(), rel["hi"][sel].tolist()))


def _feed(m, n):
    for _ in range(n):
        m.insert(np.ones((m.replicates, m.streams)), np.ones((m.replicates, m.streams), dtype=bool))


def test_logarithmic_releases_increments_at_powers_of_two():
    led = Ledger(1, 1, tight=True)
    m = LogarithmicMechanism(1, 1, epsilon=1.0, rng=np.random.default_rng(0), ledger=led)
    _feed(m, 20)
    assert _footprints(led) == [(0, 1), (1, 2), (2, 4), (4, 8), (8, 16)]
    assert m.released_count[0, 0] == 16


def test_hybrid_footprints():
    led = Ledger(1, 1, tight=True)
    m = HybridMechanism(1, 1, epsilon=1.0, rng=np.random.default_rng(0), ledger=led)
    _feed(m, 8)
    assert _footprints(led, "hybrid/log") == [(0, 1), (1, 2), (2, 4), (4, 8)]
    # block 1 holds count 3 (position 2); block 2 counts 5..7 (positions 4..6): nodes of a 2-level tree
    assert _footprints(led, "hybrid/binary") == [(2, 3), (4, 5), (4, 6), (6, 7)]
    scales = led.releases()["param"][led.releases()["mechanism"] == "hybrid/binary"]
    assert scales.tolist() == [2.0, 4.0, 4.0, 4.0]


def test_split_footprints_and_block_sizes():
    led = Ledger(1, 1, tight=True)
    m = SplitMechanism(1, 1, epsilon=1.0, rng=np.random.default_rng(0), ledger=led)
    _feed(m, 15)
    assert _footprints(led, "dpts_split/log") == [(0, 1), (1, 3), (3, 7), (7, 15)]
    assert _footprints(led, "dpts_split/binary") == [(1, 2), (3, 4), (3, 5), (5, 6), (7, 8), (7, 9), (9, 10),
                                                    (7, 11), (11, 12), (11, 13), (13, 14)]
    assert m.r[0, 0] == 3  # count 15 = 2^(r+1) - 1


def test_fresh_batch_doubling_sizes_and_each_record_once():
    led = Ledger(1, 1, tight=True)
    m = FreshBatchMean(1, 1, epsilon=1.0, rng=np.random.default_rng(0), ledger=led)
    _feed(m, 20)
    assert _footprints(led) == [(0, 1), (1, 3), (3, 7), (7, 15)]
    assert m.pending[0, 0] == 5 and m.batch_size[0, 0] == 8 and m.n_batches[0, 0] == 4
    assert led.worst_record_event(0).grouped() == {Laplace(1.0, 1.0): 1}


def test_fresh_batch_manual_sizes():
    led = Ledger(1, 2, tight=True)
    m = FreshBatchMean(1, 2, epsilon=2.0, rng=np.random.default_rng(0), ledger=led, batches="manual")
    m.set_batch_size(np.array([[3, 0]]))
    _feed(m, 4)
    m.close_batch(np.array([[False, True]]))
    assert m.batch_size.tolist() == [[3, 4]] and m.pending.tolist() == [[1, 0]]
    assert np.isnan(FreshBatchMean(1, 1, epsilon=1.0, rng=np.random.default_rng(0), ledger=Ledger(1, 1),
                                   batches="manual").noisy_mean[0, 0])
    m.close_batch(np.array([[True, True]]))  # stream 1 is empty: nothing released
    assert led.draws.tolist() == [[2, 1]]


def test_one_off_releases_record_their_events():
    led = Ledger(2, 2, tight=True)
    lap = LaplaceRelease(np.random.default_rng(0), led, "mean")
    out = lap.release([0.5, 0.25], [0.1, 0.2], [0.01, 0.02], [0, 1], [1, 0], 0, [100, 50], node=[0, 0])
    assert out.shape == (2,)
    gau = GaussianRelease(np.random.default_rng(0), led, "g")
    gau.release(0.5, 2.0, 1.0, 0, 0, 0, 1)
    assert led.worst_record_event(1).grouped() == {Laplace(0.2, 0.02): 1}
    assert led.worst_record_event(0, delta=1e-6).grouped() in ({Laplace(0.1, 0.01): 1}, {Gaussian(2.0, 1.0): 1})
    assert led.realized_pure_epsilon()[0] == np.inf
