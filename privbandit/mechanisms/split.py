"""DP-TS's split mechanism: a modified logarithmic part on the first m items and a bounded binary
mechanism on the rest.

Hu & Hegde (UAI 2022), "Near-Optimal Thompson Sampling-based Algorithms for Differentially Private
Stochastic Bandits", Algorithm 1 (DP-TS), with Remark (a)/(b); the parts are Chan, Shi & Song
(2011)'s Logarithmic and Binary mechanisms. ALGORITHMS.md section 6.1.
"""

from __future__ import annotations

import math

import numpy as np

from accountants.events import NO_EVENT, Event, LeafEvent
from privbandit.mechanisms import _kernels
from privbandit.mechanisms._base import (_NO_OFFSETS, MAX_LEVELS, BinaryCore, StreamMechanism, _Scratch, laplace_event,
                                         partition, popcount, positive, probability, whole)
from privbandit.mechanisms._split_kernels import (hh_split_binary_commit, hh_split_binary_prepare, hh_split_count_prepare,
                                                  hh_split_log_commit, hh_split_pulled_prepare)
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
        self._scratch = _Scratch()  # the inserts' working arrays by size (see _scratch_for)

    def block_scale(self, r):
        """Node noise scale of block r's binary mechanism: (r + 1) / (eps / 2) (a float for an int r,
        an array for an array)."""
        return 2.0 * ((r if isinstance(r, int) else np.asarray(r, dtype=float)) + 1.0) / self.epsilon

    def insert_pulled(self, arms: np.ndarray, values: np.ndarray) -> None:
        """``StreamMechanism.insert_pulled`` (the same checks, entries, releases and draws), its two
        kernels before the first draw -- the entries' checks and the count / binary prepare of
        :meth:`_insert` -- in one call (``hh_split_pulled_prepare``). The generic path where exact mode
        quantizes the values between them, and where ``_insert`` is not this class's (replaced on the
        instance or overridden: the seam every insert goes through, which audits' planted bugs hook)."""
        if self.sampler.exact or getattr(self._insert, "__func__", None) is not SplitMechanism._insert:
            return super().insert_pulled(arms, values)
        arms, v = self._pulled_arguments(arms, values)
        n, rr = self.replicates, self._pulled_rows
        core = self._core
        kk, f = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)  # fresh: the ledger stages kk uncopied
        o, flush, scratch = self._scratch_for(n)
        r, m, new, dropped, level = scratch
        scale = np.empty(n)  # fresh: the ledger stages an array of scales uncopied
        bad, n_flush, top, r_min, r_max = hh_split_pulled_prepare.at(n)(
            arms, v, self.streams, kk, f, self.count, rr, o, flush, self._pending, self.r, self.epsilon,
            core._tau_flat, core._node_rows, r, m, scale, new, dropped, level, core.capacity)
        self._pulled_refused(bad)
        self._route(f, rr, kk, v, o, flush, n_flush, scratch, scale, top, r_min, r_max)

    def _insert(self, v, f, rr, kk) -> None:
        """``insert`` / ``insert_pulled`` of the validated entries (see StreamMechanism)."""
        n = rr.size
        core = self._core
        f = core.rows(f)
        v = np.ascontiguousarray(v, dtype=float)
        o, flush, scratch = self._scratch_for(n)
        r, m, new, dropped, level = scratch
        scale = np.empty(n)  # fresh: the ledger stages an array of scales uncopied
        # count the items (flush at o = 2^j - 1); when none flushes -- most rounds -- the binary part's
        # first kernel runs in the same call
        n_flush, top, r_min, r_max = hh_split_count_prepare.at(n)(
            self.count, rr, kk, o, flush, self._pending, self.r, v, self.epsilon, core._tau_flat, core._node_rows, f,
            r, m, scale, new, dropped, level, core.capacity)
        self._route(f, rr, kk, v, o, flush, n_flush, scratch, scale, top, r_min, r_max)

    def _route(self, f, rr, kk, v, o, flush, n_flush, scratch, scale, top, r_min, r_max) -> None:
        """The rest of an insert after ``hh_split_count_prepare`` counted its ``n_flush`` flushing
        entries (and, when none flushes, prepared the binary part: ``scratch``, ``scale``, (top,
        min r, max r)): each part's release."""
        n = rr.size
        # Lock-stepped streams all flush or none does: skip the empty part's masking.
        if n_flush == n:
            self._flush(f, rr, kk, o.copy(), v)  # a fresh copy: the ledger stages the counts uncopied
        elif n_flush == 0:
            self._binary_release(f, rr, kk, v, scratch, scale, top, r_min, r_max)
        else:
            (f1, rr1, kk1, o1, v1), (f2, rr2, kk2, _, v2) = partition(flush, n_flush, f, rr, kk, o, v)
            self._flush(f1, rr1, kk1, o1, v1)
            self._binary_insert(f2, rr2, kk2, v2)

    def _scratch_for(self, n: int) -> tuple:
        """Working arrays of an insert of ``n`` entries, reused from insert to insert: rewritten by the
        kernels before being read, and never handed to the ledger or the caller (which stage or keep
        fresh arrays). Rebuilt after a reload (scratch, not state)."""
        scratch = self.__dict__.get("_scratch")
        if scratch is None:  # a state pickled before the scratch space existed
            scratch = self._scratch = _Scratch()
        got = scratch.by_size.get(n)
        if got is None:
            # the counts o and flush flags, then the binary part's r, m, new, dropped, level (the new
            # binary totals are read from the core's, not copied out)
            got = scratch.by_size[n] = (np.empty(n, dtype=np.int64), np.empty(n, dtype=bool),
                                        (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n),
                                         np.empty(n), np.empty(n, dtype=np.int64)))
        return got

    def _flush(self, f, rr, kk, o, v) -> None:
        """Logarithmic release at count o = 2^(r+1) - 1 (flat index ``f``); the binary part restarts.
        r counts the flushes after the first: count 1 -> r = 0, count 3 -> r = 1, ..."""
        n = rr.size
        stat, lo, node = np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        _kernels.release_statistic.at(n)(self._pending, rr, kk, v, stat)
        noisy = self.sampler._sum_release(stat, self.log_scale)
        core = self._core
        hh_split_log_commit.at(n)(self.c, self._pending, self.noisy_sum, self.r, rr, kk, o,
                                  np.ascontiguousarray(noisy, dtype=float), lo, node, core._node_rows,
                                  core._total_flat, core._tau_flat, core.rows(f))
        self._record(rr, kk, lo, o, self.log_scale, self.name + "/log", node)  # footprint [2^r - 1, 2^(r+1) - 1)

    def _binary_insert(self, f, rr, kk, v) -> None:
        """An item after the first m = 2^(r+1) - 1: feed block r's binary mechanism (one binary core
        for all blocks, Chan, Shi & Song's Algorithm 2 on each stream's current block; the same
        steps as ``BinaryCore.insert_flat``, fused with the routing in two kernels)."""
        n = rr.size
        core = self._core
        f = core.rows(f)
        v = np.ascontiguousarray(v, dtype=float)
        scratch = self._scratch_for(n)[2]
        r, m, new, dropped, level = scratch
        scale = np.empty(n)  # fresh: the ledger stages an array of scales uncopied
        top, r_min, r_max = hh_split_binary_prepare.at(n)(self._pending, self.r, rr, kk, v, self.epsilon,
                                                          core._tau_flat, core._node_rows, f, r, m, scale, new,
                                                          dropped, level, core.capacity)
        self._binary_release(f, rr, kk, v, scratch, scale, top, r_min, r_max)

    def _binary_release(self, f, rr, kk, v, scratch, scale, top, r_min, r_max) -> None:
        """The rest of :meth:`_binary_insert` after its first kernel (``hh_split_binary_prepare``, whose
        results are ``scratch``, ``scale`` and (top, min r, max r)): the nodes' release and commit."""
        n = rr.size
        core = self._core
        r, m, new, dropped, level = scratch
        if top > core.levels:  # nothing written but the levels: grow, then the same call
            core._grow(top)
            top, r_min, r_max = hh_split_binary_prepare.at(n)(self._pending, self.r, rr, kk, v, self.epsilon,
                                                              core._tau_flat, core._node_rows, f, r, m, scale, new,
                                                              dropped, level, core.capacity)
        elif top < 0:  # only a bounded core can be full (the split's is not)
            raise ValueError(core.full_message)
        # separate fresh arrays: the ledger stages lo, hi and node uncopied (they own their data)
        lo, hi, node = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        if r_min == r_max:  # one block for all (lock-step): a scalar scale, drawn as the same values
            scale, base, offsets = self.block_scale(int(r_min)), (1 << (int(r_min) + 1)) - 1, _NO_OFFSETS
        else:
            base, offsets = 0, m
        noisy = np.ascontiguousarray(self.sampler._sum_release(new, scale), dtype=float)
        hh_split_binary_commit.at(n)(core._tau_flat, core._total_flat, core._node_rows, f, new, noisy, dropped,
                                     level, top, base, offsets, lo, hi, node, self.noisy_sum, self.c)
        self._record(rr, kk, lo, hi, scale, self.name + "/binary", node)

    def _leaf(self, scale: float) -> LeafEvent:
        return laplace_event(self.sampler, scale, 1.0, on_grid=True)

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
