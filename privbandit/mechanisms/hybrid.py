"""Hybrid mechanism for unbounded continual counting.

Chan, Shi & Song (2011), "Private and Continual Release of Statistics", ACM TISSEC 14(3), the Hybrid
Mechanism H(eps) (Section 4); used per arm by Tossou & Dimitrakakis (AAAI 2016) DP-UCB-Bound and
DP-UCB (Algorithms 1 and 2). ALGORITHMS.md sections 2.3 and 4.1.
"""

from __future__ import annotations

import math

import numpy as np

from accountants.events import NO_EVENT, Event, Laplace, PureDP
from privbandit.mechanisms._base import MAX_LEVELS, BinaryCore, StreamMechanism, popcount, positive, probability, whole


def two_part_schedule(log_leaf: Laplace, blocks: list[tuple[Laplace, int, bool]]) -> Event:
    """Schedule of a logarithmic part + one binary mechanism per block.

    ``blocks`` lists, for every block holding items, (binary node leaf, most nodes a record of the
    block is in, whether the block's logarithmic release has happened). Records at block boundaries
    are only in one logarithmic release. With a single block the records' multisets are nested and
    the worst is returned exactly. With several blocks they are incomparable (block k has k nodes of
    eps/(2k) each), so the binary part is covered by ``PureDP(max_k nodes_k * eps_k)``: every
    block's composition is that-eps-DP, and randomized response dominates every eps-DP mechanism
    (Kairouz, Oh & Viswanath 2015), so the schedule upper-bounds every record under every accountant.
    """
    if not blocks:
        return log_leaf * 1
    if len(blocks) == 1:
        leaf, nodes, flushed = blocks[0]
        if leaf == log_leaf:  # the block's worst record contains every other record's multiset
            return log_leaf * (nodes + int(flushed))
        return log_leaf + leaf * nodes  # union of the two incomparable multisets: an upper bound
    eps_bin = max(nodes * leaf.pure_epsilon() for leaf, nodes, _ in blocks)
    return log_leaf + PureDP(eps_bin)


class HybridMechanism(StreamMechanism):
    """H(eps): a logarithmic mechanism at eps/2 plus, for each block of counts (2^k, 2^(k+1)), a fresh
    binary mechanism at eps/2; unbounded.

    At count t = 2^k the logarithmic part releases (Lap(2/eps) on the increment, footprint
    ``[2^(k-1), 2^k)``), the output is L(t) and the block's binary mechanism is restarted. Count
    t = 2^k + tau (1 <= tau < 2^k) feeds the block's binary mechanism and outputs
    L(2^k) + B_k(tau). B_k is bounded by 2^k - 1 items -- the number it ever receives; the item at
    2^(k+1) only enters the logarithmic part -- so it has L_k = k levels with node noise
    Lap(2k/eps) (ALGORITHMS.md's "bound 2^k" would add a level that is never completed). Every record
    is in one logarithmic release (eps/2) and at most k nodes of one B_k (eps/2): eps-DP per stream.

    Parameters: ``replicates``, ``streams``; keyword ``epsilon``, ``rng``, ``ledger``, ``name``,
    ``exact``. Ledger labels: ``name + "/log"`` and ``name + "/binary"``.
    """

    name = "hybrid"

    def __init__(self, replicates: int, streams: int, *, epsilon: float, rng: np.random.Generator,
                 ledger, name: str = "hybrid", exact: bool = False) -> None:
        self.epsilon = positive("epsilon", epsilon)
        super().__init__(replicates, streams, rng=rng, ledger=ledger, name=name, exact=exact)
        self.log_scale = 2.0 / self.epsilon
        self.noisy_sum = np.zeros((self.replicates, self.streams))
        self._log_sum = np.zeros((self.replicates, self.streams))
        self._pending = np.zeros((self.replicates, self.streams))
        self._core = BinaryCore(self.replicates, self.streams, 8, max_levels=MAX_LEVELS)

    def block_scale(self, k: int | np.ndarray):
        """Node noise scale of block k's binary mechanism: L_k / (eps/2) with L_k = k."""
        return 2.0 * np.asarray(k, dtype=float) / self.epsilon

    def insert(self, values: np.ndarray, mask: np.ndarray) -> None:
        """Append ``values[r, k]`` to stream (r, k) wherever ``mask`` is True (values in [0, 1])."""
        v, rr, kk = self._prepare(values, mask)
        self.count[rr, kk] += 1
        t = self.count[rr, kk]
        pow2 = (t & (t - 1)) == 0
        # logarithmic release at powers of two
        lr, lk, lt, lv = rr[pow2], kk[pow2], t[pow2], v[pow2]
        if lr.size:
            self._log_sum[lr, lk] += self.sampler.laplace_release(self._pending[lr, lk] + lv, self.log_scale,
                                                                  on_grid=True)
            self._record(lr, lk, lt // 2, lt, self.log_scale, self.name + "/log",
                         np.log2(lt.astype(float)).astype(np.int64))
            self._pending[lr, lk] = 0.0
            self._core.reset(lr, lk)
            self.noisy_sum[lr, lk] = self._log_sum[lr, lk]
        # binary part inside a block
        br, bk, bt, bv = rr[~pow2], kk[~pow2], t[~pow2], v[~pow2]
        if br.size:
            self._pending[br, bk] += bv
            k = np.floor(np.log2(bt.astype(float))).astype(np.int64)
            k -= (np.left_shift(1, k) > bt)  # guard the float log at huge counts
            block_start = np.left_shift(1, k)
            out = self._core.insert(self, br, bk, bv, self.block_scale(k), block_start, self.name + "/binary")
            self.noisy_sum[br, bk] = self._log_sum[br, bk] + out

    def _leaf(self, scale: float) -> Laplace:
        return Laplace(float(self.sampler.effective_scale(scale)),
                       float(self.sampler.effective_sensitivity(1.0, on_grid=True)))

    def privacy_schedule(self, n: int) -> Event:
        """Worst-case releases of one record at count ``n`` (see :func:`two_part_schedule`).

        Records: the logarithmic release Lap(2/eps) once the next power of two is reached; a record of
        block k additionally sits in up to bit_length(min(n, 2^(k+1)-1) - 2^k) nodes of Lap(2k/eps).
        """
        n = whole("n", n, 0)
        if n == 0:
            return NO_EVENT
        blocks = []
        k = 1
        while (1 << k) < n:
            items = min(n, (1 << (k + 1)) - 1) - (1 << k)
            blocks.append((self._leaf(float(self.block_scale(k))), items.bit_length(), n >= (1 << (k + 1))))
            k += 1
        return two_part_schedule(self._leaf(self.log_scale), blocks)

    def error_bound(self, n: int, gamma: float) -> float:
        """ALGORITHMS.md 4.1's bound for the eps/2 split actually implemented, valid for every gamma.

        With k = floor(log2 n), tau = n - 2^k and l = ln(4/gamma) (gamma split equally between the
        parts, each bounded by Chan et al. Cor. 2.9), w.p. >= 1 - gamma:

            |noisy_sum - sum| <= (2 sqrt(8) / eps) * ( max(l, sqrt((k+1) l))
                                                       + [tau > 0] * k * max(l, sqrt(popcount(tau) l)) ).

        When l >= log2(n) + 1 (e.g. gamma = t^-4 as in DP-UCB-Bound) this is exactly 4.1's
        (sqrt(8)/eps) ln(4/gamma) (1 + log2 n) with log = floor(log2) and every term doubled for the
        eps/2 split (and without the log term when n is a power of two).
        """
        n = whole("n", n, 0)
        gamma = probability("gamma", gamma)
        if n == 0:
            return 0.0
        k = n.bit_length() - 1
        tau = n - (1 << k)
        lg = math.log(4.0 / gamma)
        total = max(lg, math.sqrt((k + 1) * lg))
        if tau:
            total += k * max(lg, math.sqrt(popcount(tau) * lg))
        return 2.0 * math.sqrt(8.0) / self.epsilon * total
