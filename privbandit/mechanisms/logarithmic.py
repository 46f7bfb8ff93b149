"""Logarithmic mechanism for unbounded continual counting.

Chan, Shi & Song (2011), "Private and Continual Release of Statistics", ACM TISSEC 14(3), the
Logarithmic Mechanism L(eps) (Section 3.4, Algorithm 3). ALGORITHMS.md section 2.2.
"""

from __future__ import annotations

import numpy as np

from accountants.events import Event
from privbandit.mechanisms._base import (StreamMechanism, exact_log2, flat, positive, probability, single_release_schedule,
                                        subset, whole)
from privbandit.mechanisms.sampling import laplace_sum_bound


class LogarithmicMechanism(StreamMechanism):
    """L(eps): when a stream's count reaches a power of two, fresh Lap(1/eps) is added to the running
    noisy sum together with the items since the previous power of two.

    Each release's footprint is its increment ``[previous power of two, count)`` (``[0, 1)`` for the
    first), so every record is in exactly one release: eps-DP per stream. ``noisy_sum`` is the last
    released value (items inserted since are not yet released); ``released_count`` is its count.

    Parameters: ``replicates``, ``streams``; keyword ``epsilon``, ``rng``, ``ledger``, ``name``,
    ``exact``.
    """

    name = "logarithmic"

    def __init__(self, replicates: int, streams: int, *, epsilon: float, rng: np.random.Generator,
                 ledger, name: str = "logarithmic", exact: bool = False) -> None:
        self.epsilon = positive("epsilon", epsilon)
        super().__init__(replicates, streams, rng=rng, ledger=ledger, name=name, exact=exact)
        self.scale = 1.0 / self.epsilon
        self.noisy_sum = np.zeros((self.replicates, self.streams))
        self.released_count = np.zeros((self.replicates, self.streams), dtype=np.int64)
        self._pending = np.zeros((self.replicates, self.streams))

    def _insert(self, v, f, rr, kk) -> None:
        """``insert`` / ``insert_pulled`` of the validated entries (see StreamMechanism)."""
        pending, count = flat(self._pending), flat(self.count)
        pending[f] += v
        c = count[f] + 1
        count[f] = c
        hit = (c & (c - 1)) == 0
        n_hit = np.count_nonzero(hit)
        if n_hit == 0:
            return
        if n_hit < c.size:
            f, rr, kk, c = subset(f, hit), rr[hit], kk[hit], c[hit]
        released = flat(self.released_count)
        increment = self.sampler._sum_release(pending[f], self.scale)
        flat(self.noisy_sum)[f] += increment
        # a copy: the ledger stages it uncopied and ``released`` is overwritten just below
        self._record(rr, kk, released[f].copy(), c, self.scale, self.name, exact_log2(c))
        released[f] = c
        pending[f] = 0.0

    def privacy_schedule(self, n: int) -> Event:
        """One Lap(1/eps) for any record once a release covers it (n >= 1); nothing at n = 0."""
        return single_release_schedule(self.sampler, self.scale, n)

    def error_bound(self, n: int, gamma: float) -> float:
        """|noisy_sum - true sum of all n items| <= this w.p. >= 1 - gamma (float mode).

        The output at count n carries floor(log2 n) + 1 independent Lap(1/eps) (Chan et al. Cor. 2.9)
        and misses the n - 2^floor(log2 n) items (each in [0, 1]) inserted since the last release.
        """
        n = whole("n", n, 0)
        gamma = probability("gamma", gamma)
        if n == 0:
            return 0.0
        terms = n.bit_length()
        return laplace_sum_bound(np.full(terms, self.scale), gamma) + (n - (1 << (terms - 1)))
