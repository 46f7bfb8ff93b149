"""Planted bugs are caught by the ledger checks: a re-draw of an already released node, and a noise
draw that is never recorded."""

import numpy as np
import pytest

from privbandit.ledger import Ledger
from privbandit.mechanisms import IntervalMean, TreeMechanism


class RedrawingTree(TreeMechanism):
    """Bug: after every even insert, re-draws fresh noise for the node just completed."""

    def insert(self, values, mask):
        super().insert(values, mask)
        rr, kk = np.nonzero(mask & (self.count % 2 == 0))
        if rr.size == 0:
            return
        tau = self._core.tau[rr, kk]
        low = tau & -tau
        level = np.log2(low.astype(float)).astype(np.int64)
        exact = self._core.exact_nodes[rr, kk, level]
        scale = np.full(rr.size, self.scale)
        self._core.noisy_nodes[rr, kk, level] = exact + self.sampler.laplace(scale)
        self.ledger.record_laplace(rr, kk, tau - low, tau, scale, 1.0, mechanism=self.name,
                                   node=(tau - low) * 64 + level)


class SilentTree(TreeMechanism):
    """Bug: level-0 node draws are not reported to the ledger (a forgotten ledger call)."""

    def _record(self, rr, kk, lo, hi, scale, mechanism, node):
        keep = (np.asarray(hi) - np.asarray(lo)) > 1
        super()._record(rr[keep], kk[keep], np.asarray(lo)[keep], np.asarray(hi)[keep], scale, mechanism,
                        np.asarray(node)[keep])


def _run(cls, n=16):
    led = Ledger(2, 2, tight=True)
    m = cls(2, 2, epsilon=1.0, horizon=32, rng=np.random.default_rng(0), ledger=led)
    for _ in range(n):
        m.insert(np.ones((2, 2)), np.ones((2, 2), dtype=bool))
    return m, led


def test_correct_tree_passes_all_checks():
    m, led = _run(TreeMechanism)
    assert led.redraws() == []
    assert np.array_equal(led.draws, m.count)
    sched = sum(leaf.pure_epsilon() * c for leaf, c in m.privacy_schedule(16).grouped().items())
    assert sched == pytest.approx(5 / 6)  # 5 nodes of Lap(6/eps): horizon 32 has 6 levels
    assert np.allclose(led.realized_pure_epsilon(), sched)


def test_redraw_is_detected():
    m, led = _run(RedrawingTree)
    assert led.redraws(), "re-drawn nodes must show up"
    assert np.any(led.draws != m.count)
    sched = sum(leaf.pure_epsilon() * c for leaf, c in m.privacy_schedule(16).grouped().items())
    assert np.all(led.realized_pure_epsilon() > sched)  # realized exceeds the schedule


def test_unrecorded_draw_is_detected():
    m, led = _run(SilentTree)
    assert led.redraws() == []
    assert np.all(led.draws < m.count)  # one draw per insert is the tree's structure
    sched = sum(leaf.pure_epsilon() * c for leaf, c in m.privacy_schedule(16).grouped().items())
    # every record lost its level-0 node: the schedule, attained by a correct tree, is not reached
    assert np.all(led.realized_pure_epsilon() < sched - 1e-9)


def test_interval_mean_never_redraws_a_cached_statistic():
    led = Ledger(1, 2, tight=True)
    m = IntervalMean(1, 2, v=1.2, rng=np.random.default_rng(0), ledger=led)
    for _ in range(5):
        m.insert(np.ones((1, 2)), np.ones((1, 2), dtype=bool))
        first = m.release(np.ones((1, 2), dtype=bool)).copy()
        second = m.release(np.ones((1, 2), dtype=bool))
        assert np.array_equal(first, second)
    assert led.redraws() == [] and np.all(led.draws == 5)


def test_interval_with_fixed_interval_refuses_off_schedule_release():
    m = IntervalMean(1, 1, v=1.2, interval=3, rng=np.random.default_rng(0), ledger=Ledger(1, 1))
    m.insert(np.ones((1, 1)), np.ones((1, 1), dtype=bool))
    with pytest.raises(ValueError, match="multiples of interval"):
        m.release(np.ones((1, 1), dtype=bool))
