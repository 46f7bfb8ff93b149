"""DP-UCB-Int's release counts as arithmetic runs, so a schedule never lays out one entry per release.

Tossou & Dimitrakakis 2016, Algorithm 3 (ALGORITHMS.md 4.4): an arm's mean is released at the pull
counts c_j = f_1 + ... + f_j, with intervals f_j = max(1, ceil(f j^-decay)). The intervals take each
value on a contiguous range of j (they never increase), so the counts are a few arithmetic runs: one
run for the fixed interval (decay = 0), at most one per distinct interval value and then an endless run
of step 1 for decay > 0. A certificate at 10^12 rounds needs counts only at a few thousand places
(how many releases lie at or below a count, the count of the j-th release): session 17 measured
146-485 s and ~7 GB per certificate at 10^8 rounds for the per-release arrays of decay > 0.

The run boundaries are found with the very expression :func:`interval_step` (a closed-form guess, then
checked and corrected by evaluating it), so the counts are those of the per-release definition bit for
bit -- the run and its schedule read the same releases.
"""

from __future__ import annotations

import bisect
import math

import numpy as np


def interval_step(first: int, decay: float, j: int) -> int:
    """f_j = max(1, ceil(first j^-decay)) for release j >= 1 (the 1e-12 absorbs j^-decay's rounding where
    first j^-decay is a whole number)."""
    return max(1, math.ceil(first * j ** -decay - 1e-12))


class ReleasePlan:
    """The release counts of one arm for a first interval ``first`` and ``decay`` >= 0, laid out lazily as
    runs (index of the run's first release, its count, step, length; ``None``: endless)."""

    def __init__(self, first: int, decay: float) -> None:
        self.first, self.decay = int(first), float(decay)
        self._j: list[int] = []
        self._c: list[int] = []
        self._s: list[int] = []
        self._n: list[int | None] = []
        self._next_j, self._last_c, self._done = 1, 0, False
        if self.decay == 0.0:
            self._append(1, self.first, self.first, None)

    def _append(self, j: int, c: int, s: int, n: int | None) -> None:
        self._j.append(j), self._c.append(c), self._s.append(s), self._n.append(n)
        self._done = n is None

    def _step(self, j: int) -> int:
        return interval_step(self.first, self.decay, j)

    def _run_end(self, j: int, s: int, cap: int) -> int:
        """The last release index in [j, cap] whose interval is still ``s`` (intervals never increase, so
        a boundary search on "interval >= s" is exact)."""
        try:  # the closed form of first x^-decay - 1e-12 > s - 1: usually within a release of the boundary
            guess = math.floor((self.first / (s - 1 + 1e-12)) ** (1.0 / self.decay))
        except OverflowError:
            guess = cap
        lo, hi = j, None  # step(lo) >= s; step(hi) < s once known
        guess = min(max(guess, j), cap)
        if self._step(guess) >= s:
            lo = guess
        else:
            hi = guess
        gap = 1
        while hi is None:  # gallop up from a guess that was short
            if lo >= cap:
                return cap
            x = min(lo + gap, cap)
            if self._step(x) >= s:
                lo, gap = x, 2 * gap
            else:
                hi = x
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._step(mid) >= s:
                lo = mid
            else:
                hi = mid
        return lo

    def _extend(self, limit: int) -> None:
        """Lay out runs until every release at a count <= ``limit`` is in one."""
        while not self._done and self._last_c < limit:
            j, s = self._next_j, self._step(self._next_j)
            if s == 1:  # every count from here on
                self._append(j, self._last_c + 1, 1, None)
                return
            cap = j - 1 + max(1, -(-(limit - self._last_c) // s))  # no further than the first count >= limit
            end = self._run_end(j, s, cap)
            n = end - j + 1
            self._append(j, self._last_c + s, s, n)
            self._next_j, self._last_c = end + 1, self._last_c + s * n

    def releases_upto(self, count: int) -> int:
        """How many releases happen at pull counts <= ``count``."""
        if count <= 0:
            return 0
        self._extend(count)
        k = bisect.bisect_right(self._c, count) - 1
        if k < 0:
            return 0
        n = (count - self._c[k]) // self._s[k] + 1
        if self._n[k] is not None:
            n = min(n, self._n[k])
        return self._j[k] - 1 + n

    def count(self, j: int) -> int:
        """The pull count of release ``j`` (1-based; laid out by a :meth:`releases_upto` that counted it)."""
        k = bisect.bisect_right(self._j, j) - 1
        return self._c[k] + (j - self._j[k]) * self._s[k]

    def counts(self, limit: int) -> np.ndarray:
        """Every release count <= ``limit``, in order (int64; float past 2^63): one entry per release, for
        short horizons and for the run's own table of due counts."""
        m = self.releases_upto(limit)
        # int64 as the run's pull counts; floats where a count passes 2^63 (a schedule's horizon up to 10^30,
        # which no run reaches)
        dtype = np.int64 if m == 0 or self.count(m) < 2**63 else float
        parts = []
        for j, c, s, n in zip(self._j, self._c, self._s, self._n):
            if j > m:
                break
            take = m - j + 1 if n is None else min(n, m - j + 1)
            parts.append(np.arange(take, dtype=dtype) * s + c)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
