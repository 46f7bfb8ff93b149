"""DP-TS's split mechanism: a modified logarithmic part on the first m items and a bounded binary
mechanism on the rest.

Hu & Hegde (UAI 2022), "Near-Optimal Thompson Sampling-based Algorithms for Differentially Private
Stochastic Bandits", Algorithm 1 (DP-TS), with Remark (a)/(b); the parts are Chan, Shi & Song
(2011)'s Logarithmic and Binary mechanisms. ALGORITHMS.md section 6.1.
"""

from __future__ import annotations

import math

import numpy as np

from accountants.events import NO_EVENT, Event, Laplace
from privbandit.mechanisms._base import MAX_LEVELS, BinaryCore, StreamMechanism, popcount, positive, probability, whole
from privbandit.mechanisms.hybrid import two_part_schedule


class SplitMechanism(StreamMechanism):
    """DP-TS split: n items = first m = 2^floor(log2(n+1)) - 1 items + the rest (n - m <= m).

    * Modified logarithmic part at eps/2: when the count reaches 2^(r+1) - 1 (1, 3, 7, 15, ...),
      C += (items since the previous such count) + Lap(2/eps); footprint ``[2^r - 1, 2^(r+1) - 1)``.
    * Binary part at eps/2: the items after m (at most 2^(r+1) - 1 of them before the next flush)
      go to a fresh binary mechanism bounded by 2^(r+1) - 1 items, i.e. r + 1 levels with node noise
      Lap(2(r+1)/eps) -- Remark (b)'s depth r + 1. (A 2^(r+1) bound would add a level that the
      flush always pre-empts.) At the flush the binary mechanism restarts (B := 0).

    ``noisy_sum`` = C + B (the private mean of DP-TS is noisy_sum / count). Every record is in one
    C release and at most r + 1 binary nodes of one block: eps-DP per stream (Hu & Hegde Thm 1).

    Parameters: ``replicates``, ``streams``; keyword ``epsilon``, ``rng``, ``ledger``, ``name``,
    ``exact``. Ledger labels: ``name + "/log"`` and ``name + "/binary"``.
    """

    name = "dpts_split"

    def __init__(self, replicates: int, streams: int, *, epsilon: float, rng: np.random.Generator,
                 ledger, name: str = "dpts_split", exact: bool = False) -> None:
        self.epsilon = positive("epsilon", epsilon)
        super().__init__(replicates, streams, rng=rng, ledger=ledger, name=name, exact=exact)
        self.log_scale = 2.0 / self.epsilon
        self.noisy_sum = np.zeros((self.replicates, self.streams))
        self.c = np.zeros((self.replicates, self.streams))
        self.r = np.zeros((self.replicates, self.streams), dtype=np.int64)
        self._pending = np.zeros((self.replicates, self.streams))
        self._core = BinaryCore(self.replicates, self.streams, 8, max_levels=MAX_LEVELS)

    def block_scale(self, r):
        """Node noise scale of block r's binary mechanism: (r + 1) / (eps / 2)."""
        return 2.0 * (np.asarray(r, dtype=float) + 1.0) / self.epsilon

    def insert(self, values: np.ndarray, mask: np.ndarray) -> None:
        """Append ``values[r, k]`` to stream (r, k) wherever ``mask`` is True (values in [0, 1])."""
        v, rr, kk = self._prepare(values, mask)
        self.count[rr, kk] += 1
        o = self.count[rr, kk]
        flush = ((o + 1) & o) == 0  # o == 2^j - 1
        fr, fk, fo, fv = rr[flush], kk[flush], o[flush], v[flush]
        if fr.size:
            self.c[fr, fk] += self.sampler.laplace_release(self._pending[fr, fk] + fv, self.log_scale, on_grid=True)
            self._record(fr, fk, (fo + 1) // 2 - 1, fo, self.log_scale, self.name + "/log",
                         np.log2((fo + 1).astype(float)).astype(np.int64))
            self._pending[fr, fk] = 0.0
            self._core.reset(fr, fk)
            # r counts the flushes after the first: count 1 -> r = 0, count 3 -> r = 1, ...
            self.r[fr, fk] = np.log2((fo + 1).astype(float)).astype(np.int64) - 1
            self.noisy_sum[fr, fk] = self.c[fr, fk]
        br, bk, bv = rr[~flush], kk[~flush], v[~flush]
        if br.size:
            self._pending[br, bk] += bv
            r = self.r[br, bk]
            m = np.left_shift(1, r + 1) - 1
            out = self._core.insert(self, br, bk, bv, self.block_scale(r), m, self.name + "/binary")
            self.noisy_sum[br, bk] = self.c[br, bk] + out

    def _leaf(self, scale: float) -> Laplace:
        return Laplace(float(self.sampler.effective_scale(scale)),
                       float(self.sampler.effective_sensitivity(1.0, on_grid=True)))

    def privacy_schedule(self, n: int) -> Event:
        """Worst-case releases of one record at count ``n``: one Lap(2/eps) from C once flushed, plus up
        to r + 1 binary nodes Lap(2(r+1)/eps) of block r (see hybrid.two_part_schedule)."""
        n = whole("n", n, 0)
        if n == 0:
            return NO_EVENT
        blocks = []
        r = 0
        while (1 << (r + 1)) <= n:  # block r holds counts 2^(r+1) .. 2^(r+2) - 2
            m = (1 << (r + 1)) - 1
            items = min(n, (1 << (r + 2)) - 2) - m
            blocks.append((self._leaf(float(self.block_scale(r))), items.bit_length(),
                           n >= (1 << (r + 2)) - 1))
            r += 1
        return two_part_schedule(self._leaf(self.log_scale), blocks)

    def error_bound(self, n: int, gamma: float) -> float:
        """|noisy_sum - sum| <= this w.p. >= 1 - gamma (float mode), as in HybridMechanism.error_bound.

        With c = floor(log2(n + 1)) log releases (Lap(2/eps) each), tau = n - (2^c - 1) items in a
        binary mechanism of c levels (popcount(tau) nodes of Lap(2c/eps)) and l = ln(4/gamma):
        (2 sqrt(8)/eps) (max(l, sqrt(c l)) + [tau > 0] c max(l, sqrt(popcount(tau) l))).
        """
        n = whole("n", n, 0)
        gamma = probability("gamma", gamma)
        if n == 0:
            return 0.0
        c = (n + 1).bit_length() - 1
        tau = n - ((1 << c) - 1)
        lg = math.log(4.0 / gamma)
        total = max(lg, math.sqrt(c * lg))
        if tau:
            total += c * max(lg, math.sqrt(popcount(tau) * lg))
        return 2.0 * math.sqrt(8.0) / self.epsilon * total
