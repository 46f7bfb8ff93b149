"""T-bounded binary (tree) mechanism for continual counting.

Chan, Shi & Song (2011), "Private and Continual Release of Statistics", ACM TISSEC 14(3),
Algorithm 2 (the Binary Mechanism B(T, eps)); the same object as the tree-based aggregation of
Mishra & Thakurta (2015, Appendix A). ALGORITHMS.md section 2.1.
"""

from __future__ import annotations

import numpy as np

from accountants.events import NO_EVENT, Event, LeafEvent
from privbandit.mechanisms._base import (BinaryCore, StreamMechanism, laplace_event, popcount, positive,
                                         probability, whole)
from privbandit.mechanisms.sampling import laplace_sum_bound


class TreeMechanism(StreamMechanism):
    """Binary mechanism B(T, eps) on every (replicate, stream), vectorised.

    Levels ``L = floor(log2 T) + 1`` (``T.bit_length()``; ``ceil(log2 T)`` would be one level short
    when T is a power of two). Each node stores a p-sum plus fresh Lap(L/eps) noise; a record enters
    at most L nodes, so the whole output sequence of a stream is eps-DP (Chan et al. Thm 3.5).
    Each insert completes exactly one node -- the dyadic range ``[count - 2^i, count)``, i the lowest
    set bit of the new count -- and draws one Laplace for it; ``noisy_sum`` is the sum of the noisy
    nodes of the binary decomposition of ``count``.

    Parameters: ``replicates``, ``streams``; keyword ``epsilon`` (per-stream budget), ``horizon``
    (T, the most items a stream may hold; inserting more raises ValueError), ``rng``
    (numpy Generator), ``ledger``, ``name`` (ledger label), ``exact`` (floating-point-safe noise,
    see :mod:`privbandit.mechanisms.sampling`).
    """

    name = "tree"

    def __init__(self, replicates: int, streams: int, *, epsilon: float, horizon: int,
                 rng: np.random.Generator, ledger, name: str = "tree", exact: bool = False) -> None:
        self.epsilon = positive("epsilon", epsilon)
        self.horizon = whole("horizon", horizon, 1)
        super().__init__(replicates, streams, rng=rng, ledger=ledger, name=name, exact=exact)
        self.levels = self.horizon.bit_length()
        self.scale = self.levels / self.epsilon
        self._core = BinaryCore(self.replicates, self.streams, self.levels, capacity=self.horizon,
                                full_message=f"horizon: a stream already holds {self.horizon} items; this tree is "
                                             f"bounded by horizon={self.horizon} (range [1, horizon] items per stream)")
        self.noisy_sum = np.zeros((self.replicates, self.streams))
        self._share_core_state()

    def _share_core_state(self) -> None:
        """The tree's count and output ARE its core's ``tau`` and ``total`` (the same arrays, not
        copies kept in step): a T-bounded tree never restarts, so its block is the whole stream and
        the core's insert already counts the item and moves the output. A subclass with its own
        ``_insert`` (Private-TS's offset tree, which counts and sets them itself) keeps its own."""
        if type(self)._insert is TreeMechanism._insert:
            self._core.tau[...] = self.count  # equal values (a state pickled with separate arrays)
            self._core.total[...] = self.noisy_sum
            self.count, self.noisy_sum = self._core.tau, self._core.total

    def __setstate__(self, state: dict) -> None:
        # states pickled when count and noisy_sum were separate arrays (deployments' snapshots) hold
        # the same values: re-link them to the core's
        self.__dict__.update(state)
        self._share_core_state()

    def _insert(self, v, f, rr, kk) -> None:
        """``insert`` / ``insert_pulled`` of the validated entries (see StreamMechanism); a stream
        already holding ``horizon`` items makes the core raise before any state changes."""
        self._core.insert_flat(self, f, rr, kk, v, self.scale, 0, self.name)

    def _leaf(self) -> LeafEvent:
        # built once per scale, as the hybrid's leaves: a live certificate asks for it at each of its ~50
        # checkpoints, and each build validates its scale and sensitivity through the sampler's numpy checks
        # (~0.1 ms; Private-UCB's memoised certificate, paid by every run, 6.9 -> ~2 ms at load ~15, session 17)
        leaves = self._core._scratch.leaves
        leaf = leaves.get(self.scale)
        if leaf is None:
            leaf = leaves[self.scale] = laplace_event(self.sampler, self.scale, 1.0, on_grid=True)
        return leaf

    def privacy_schedule(self, n: int) -> Event:
        """Worst-case releases of one record when the stream holds ``n`` items: the first record is in
        the nodes [0, 2^j) for every 2^j <= n, i.e. ``n.bit_length()`` (<= L) copies of Lap(L/eps)."""
        n = whole("n", n, 0)
        if n > self.horizon:
            raise ValueError(f"n must lie in [0, horizon={self.horizon}], got {n}")
        return NO_EVENT if n == 0 else self._leaf() * n.bit_length()

    def error_bound(self, n: int, gamma: float) -> float:
        """|noisy_sum - true sum| <= this with probability >= 1 - gamma at count ``n`` (float mode):
        the output holds popcount(n) independent Lap(L/eps); Chan et al. Corollary 2.9."""
        n = whole("n", n, 0)
        if n > self.horizon:
            raise ValueError(f"n must lie in [0, horizon={self.horizon}], got {n}")
        gamma = probability("gamma", gamma)
        return laplace_sum_bound(np.full(popcount(n), self.scale), gamma)
