"""Hybrid mechanism for unbounded continual counting.

Chan, Shi & Song (2011), "Private and Continual Release of Statistics", ACM TISSEC 14(3), the Hybrid
Mechanism H(eps) (Section 4); used per arm by Tossou & Dimitrakakis (AAAI 2016) DP-UCB-Bound and
DP-UCB (Algorithms 1 and 2). ALGORITHMS.md sections 2.3 and 4.1.
"""

from __future__ import annotations

import math

import numpy as np

from accountants.events import NO_EVENT, Event, LeafEvent, PureDP, exact_pure_epsilon
from privbandit.mechanisms import _kernels
from privbandit.mechanisms._base import (_NO_OFFSETS, MAX_LEVELS, BinaryCore, StreamMechanism, _Scratch,
                                         _empty, _INT64, laplace_event, partition, popcount, positive, probability, whole)


def two_part_schedule(log_leaf: LeafEvent, blocks: list[tuple[LeafEvent, int, bool]]) -> Event:
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
    # exact rationals, rounded up once (session 17: nodes x a rounded quotient could be an ulp below)
    eps_bin = max(nodes * exact_pure_epsilon(leaf) for leaf, nodes, _ in blocks)
    return log_leaf + PureDP.at_least(eps_bin)


_NO_BLOCKS = np.zeros((0, 0), dtype=np.int64)  # log_commit: the hybrid keeps no block per stream
_NO_FOOTPRINTS = np.zeros(0, dtype=np.int64)  # binary_commit: one footprint shared by every insert (never written)
# Inserts of at least this many streams that share one footprint report it as scalars: three fresh
# int64 arrays per insert, held by the ledger until it drains, cost their first touch of new memory
# (measured ~20 of 57 us per 5000-row commit). Smaller inserts keep arrays: the ledger folds a drain
# of array entries in one concatenation, while mixing scalar entries with the logarithmic part's
# arrays costs it a numpy call per entry (measured ~7 us per round at one replicate).
_SHARED_FOOTPRINT_MIN_ROWS = 64


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
    _scratch = None  # the block kernels' working arrays (see _binary_insert); an instance's own

    def __init__(self, replicates: int, streams: int, *, epsilon: float, rng: np.random.Generator,
                 ledger, name: str = "hybrid", exact: bool = False) -> None:
        self.epsilon = positive("epsilon", epsilon)
        super().__init__(replicates, streams, rng=rng, ledger=ledger, name=name, exact=exact)
        self.log_scale = 2.0 / self.epsilon
        self.noisy_sum = np.zeros((self.replicates, self.streams))
        self._log_sum = np.zeros((self.replicates, self.streams))
        self._pending = np.zeros((self.replicates, self.streams))
        # levels-major: DP-UCB inserts into every stream every round (at 1000 x 5 streams its count+prepare
        # kernel measured ~25% cheaper in a full run, loaded machine; DP-UCB-Bound's one stream per
        # replicate unchanged either way: docs/benchmarks.md, session 9)
        self._core = BinaryCore(self.replicates, self.streams, 8, max_levels=MAX_LEVELS, levels_major=True)
        self._scratch = _Scratch()

    def block_scale(self, k: int | np.ndarray):
        """Node noise scale of block k's binary mechanism: L_k / (eps/2) with L_k = k (a float for an
        int k, an array for an array)."""
        return 2.0 * (k if isinstance(k, int) else np.asarray(k, dtype=float)) / self.epsilon

    def _insert(self, v, f, rr, kk) -> None:
        """``insert`` / ``insert_pulled`` of the validated entries (see StreamMechanism)."""
        n = rr.size
        if n == 0:  # nothing to count or release (an empty logarithmic release, as always)
            self._log_release(f, rr, kk, np.empty(0, dtype=np.int64), v)
            return
        core = self._core
        rows = core.rows(f)
        # (``v`` comes from _select / _select_pulled: a contiguous float array already)
        t, pow2, work = self._scratch_for(n)
        k, block_start, new, dropped, level = work
        # count the items (a logarithmic release at t = 2^j); when none is at a power of two -- most
        # rounds -- the binary part's first kernel runs in the same call
        n_log, top, k_min, k_max, uniform = _kernels.hybrid_count_prepare.at(n)(
            self.count, rows, t, pow2, self._pending, v, core._tau_flat, core._node_rows, k, block_start, new,
            dropped, level, core.capacity)
        # Lock-stepped streams are all at a power of two or none is: skip the empty part's masking.
        if n_log == n:
            self._log_release(f, rr, kk, t.copy(), v)  # a fresh copy: the ledger stages the counts uncopied
        elif n_log == 0:
            self._binary_release(rows, rr, kk, t, v, work, top, k_min, k_max, uniform)
        else:
            log_part, bin_part = partition(pow2, n_log, rows, rr, kk, t, v)
            self._log_release(*log_part)
            self._binary_insert(*bin_part)

    def _scratch_for(self, n: int) -> tuple:
        """Working arrays of an insert of ``n`` entries, reused from insert to insert: rewritten by the
        kernels before being read, and never handed to the ledger or the caller (which stage or keep
        fresh arrays). Rebuilt after a reload (scratch, not state)."""
        scratch = self._scratch
        if scratch is None:  # a state pickled before the scratch existed
            scratch = self._scratch = _Scratch()
        got = scratch.by_size.get(n)
        if got is None:
            # the counts t and their power-of-two flags, then the binary part's block k, block start,
            # new, dropped and level
            got = scratch.by_size[n] = (np.empty(n, dtype=np.int64), np.empty(n, dtype=bool),
                                        (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n),
                                         np.empty(n), np.empty(n, dtype=np.int64)))
        return got

    def _log_release(self, f, rr, kk, t, v) -> None:
        """Logarithmic release at count t = 2^k (flat index ``f``); block k's binary mechanism restarts."""
        n = rr.size
        stat, lo, node = np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        _kernels.release_statistic.at(n)(self._pending, rr, kk, v, stat)
        noisy = self.sampler._sum_release(stat, self.log_scale)
        _kernels.log_commit.at(n)(self._log_sum, self._pending, self.noisy_sum, _NO_BLOCKS, rr, kk, t, 0,
                                  np.ascontiguousarray(noisy, dtype=float), lo, node)
        self._record(rr, kk, lo, t, self.log_scale, self.name + "/log", node)  # footprint [2^(k-1), 2^k)
        self._core.reset_flat(f)

    def _binary_insert(self, f, rr, kk, t, v) -> None:
        """Count t = 2^k + tau inside block k: feed block k's binary mechanism (one binary core for all
        blocks, Chan, Shi & Song's Algorithm 2 on each stream's current block: the steps of
        ``BinaryCore.insert_flat``, fused with the routing in two kernels around the release). A
        mixed round's binary part; an insert with no logarithmic release runs the first kernel in
        its counting call (:meth:`_insert`) and goes on in :meth:`_binary_release`."""
        n = rr.size
        if n == 0:
            return
        core = self._core
        f = core.rows(f)
        v = np.ascontiguousarray(v, dtype=float)
        work = self._scratch_for(n)[2]
        k, block_start, new, dropped, level = work
        top, k_min, k_max, uniform = _kernels.hybrid_binary_prepare.at(n)(
            self._pending, v, self.count, core._tau_flat, core._node_rows, f, k, block_start, new, dropped, level,
            core.capacity)
        self._binary_release(f, rr, kk, t, v, work, top, k_min, k_max, uniform)

    def _binary_release(self, f, rr, kk, t, v, work, top, k_min, k_max, uniform) -> None:
        """The rest of :meth:`_binary_insert` after its first kernel (``hybrid_binary_prepare``, whose
        results are ``work`` and (top, min k, max k, uniform)): the nodes' release and commit."""
        n = rr.size
        core = self._core
        k, block_start, new, dropped, level = work
        if top > core.levels:  # nothing written but the levels: grow, then the same call
            core._grow(top)
            top, k_min, k_max, uniform = _kernels.hybrid_binary_prepare.at(n)(
                self._pending, v, self.count, core._tau_flat, core._node_rows, f, k, block_start, new, dropped,
                level, core.capacity)
        elif top < 0:  # only a bounded core can be full (the hybrid's is not)
            raise ValueError(core.full_message)
        if k_min == k_max:  # one block for all (lock-step): a scalar scale, drawn as the same values
            # (block k's scale and first count, worked out once per block: at one replicate every
            # round lands here, and the method call, type test and two float operations cost ~0.35 us)
            got = self._scratch.blocks.get(k_min)
            if got is None:
                got = self._scratch.blocks[k_min] = (self.block_scale(int(k_min)), 1 << int(k_min))
            scale, base = got
            offsets = _NO_OFFSETS
        else:
            scale, base, offsets = self.block_scale(k), 0, block_start
        # ``new`` is scratch, overwritten by the next insert: the sampler reads it during the call only
        # (a tracer that keeps the statistic copies it)
        noisy = np.ascontiguousarray(self.sampler._sum_release(new, scale), dtype=float)
        # fresh footprint arrays (the ledger stages them uncopied), unless every insert shares one
        uniform = uniform and n >= _SHARED_FOOTPRINT_MIN_ROWS
        lo, hi, node = ((_NO_FOOTPRINTS,) * 3 if uniform else (_empty(n, _INT64), _empty(n, _INT64), _empty(n, _INT64)))
        first = _kernels.hybrid_binary_commit.at(n)(core._tau_flat, core._total_flat, core._node_rows, f, new, noisy,
                                                    dropped, level, top, base, offsets, lo, hi, node,
                                                    self.noisy_sum, self._log_sum)
        if uniform:
            lo, hi, node = first
        self._record(rr, kk, lo, hi, scale, self.name + "/binary", node)

    def _leaf(self, scale: float) -> LeafEvent:
        # A live certificate asks for the same few scales at each of its dozens of checkpoints (one
        # per block k): each event is built once (~0.1 ms each through the sampler's checks: most of
        # a one-replicate run's time outside its rounds, measured 35-55 of ~530 ms at T = 1e4)
        scratch = self._scratch
        if scratch is None:  # a state pickled before the scratch existed
            scratch = self._scratch = _Scratch()
        leaf = scratch.leaves.get(scale)
        if leaf is None:
            leaf = scratch.leaves[scale] = laplace_event(self.sampler, scale, 1.0, on_grid=True)
        return leaf

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
