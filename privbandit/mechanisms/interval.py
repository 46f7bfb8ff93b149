"""Interval releases of a running mean (DP-UCB-Int).

Tossou & Dimitrakakis (AAAI 2016, arXiv 1511.08681), Algorithm 3 (DP-UCB-Int), Lemma 3.1 and
Theorem 3.4; the per-release scale n^(v/2 - 1) (eps_n = n^(-v/2)) is ALGORITHMS.md 4.4's
reconstruction.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np

from accountants.events import NO_EVENT, Composed, Event, LeafEvent
from privbandit.mechanisms._base import StreamMechanism, flat, laplace_event, positive, probability, whole


#: Per exponent, pow(k, e) for whole counts k = 0, 1, ..., len - 1 (entry 0 unused), each entry computed by
#: ``math.pow`` itself: a lookup returns the very bits the element-wise loop returns. Grown by doubling as
#: counts grow (a run's counts reach the horizon), at most ``_TABLE_CAP`` entries (8 MiB); at most
#: ``_TABLES`` exponents are kept (a sweep over v drops the oldest).
_POW_TABLES: dict[float, np.ndarray] = {}
_TABLE_CAP = 1 << 20
_TABLES = 8
_LOOP_MAX = 16


def _pow_table(e: float, top: int) -> np.ndarray:
    """The table of ``math.pow(float(k), e)`` for k < at least ``top + 1`` (``top < _TABLE_CAP``)."""
    table = _POW_TABLES.get(e)
    if table is not None and top < table.size:
        return table
    old = 0 if table is None else table.size
    size = min(max(2 * old, 2 * top + 2, 1024), _TABLE_CAP)
    # k = 0 is never looked up (pow(0, e) is a domain error for e < 0): 1.0 only fills the slot
    grown = np.fromiter((math.pow(float(k), e) if k else 1.0 for k in range(old, size)), dtype=float,
                        count=size - old)
    table = grown if table is None else np.concatenate((table, grown))
    # a new array replaces the old whole (a concurrent reader keeps a complete one); oldest exponent dropped
    if e not in _POW_TABLES and len(_POW_TABLES) >= _TABLES:
        del _POW_TABLES[next(iter(_POW_TABLES))]
    _POW_TABLES[e] = table
    return table


def interval_scales(counts, v: float) -> np.ndarray:
    """The default scales n^(v/2 - 1) of releases at counts ``counts``, the same bits on every CPU.

    Element by element with ``math.pow`` (the C library's pow), not numpy's array power: numpy takes a SIMD
    path for float64 power on CPUs with AVX-512 whose last bit differs from pow's for some n, so one seed drew
    its noise at scales an ulp apart on two machines -- the golden digests of the interval mechanism
    (tests/privbandit/mechanisms/test_bit_identical.py), recorded on one, failed on an AVX2 machine (session
    17). The schedule (privbandit.policies.dp_ucb) calls this function too, so the certified releases are
    the recorded ones bit for bit on every machine.

    Whole counts in [1, 2^20) are looked up in a table of ``math.pow`` values built once per exponent
    (session 18: the Python loop cost ~200 us per 1,000 releases, i.e. per round of DP-UCB-Int with
    interval 1 at 1,000 replicates); any other count (fractional, < 1, larger) takes the loop itself, and so
    do a few counts (up to ``_LOOP_MAX``: the table's checks cost more than pow there, ~5 against ~3 us for one).
    """
    n = np.asarray(counts)
    e = v / 2.0 - 1.0
    if n.size > _LOOP_MAX and n.dtype.kind in "iuf":
        lo, hi = n.min(), n.max()
        if 1 <= lo and hi < _TABLE_CAP:  # (a NaN fails both: never cast to an integer)
            whole_counts = n.astype(np.int64, copy=False)
            if n.dtype.kind != "f" or np.array_equal(whole_counts, n):
                # fancy indexing copies: the ledger may hold the returned scales, never the table
                return _pow_table(e, int(hi))[whole_counts.ravel()].reshape(n.shape)
    n = np.asarray(n, dtype=float)
    return np.fromiter((math.pow(x, e) for x in n.ravel().tolist()), dtype=float, count=n.size).reshape(n.shape)


class IntervalMean(StreamMechanism):
    """The mean of all n items of a stream, released with Lap(scale(n)) when a release is due.

    The mean over n items in [0, 1] has sensitivity 1/n; the default scale n^(v/2 - 1) makes each
    release eps_n = n^(-v/2)-DP. The statistic "mean of the first n items" is released at most once
    per stream: a second :meth:`release` at the same count returns the cached value and draws
    nothing (Ralami's re-draw leak, ALGORITHMS.md 4.4, cannot happen). Footprint ``[0, n)``.

    Releases are due where the caller says so (:meth:`release`), and additionally automatically
    every ``interval`` items if ``interval`` is given (``epsilon`` sets ``interval = ceil(1/eps)``,
    the fixed interval f of ALGORITHMS.md 4.4).

    Attributes: ``count``, ``sum`` (exact running sums, never published), ``noisy_mean`` (last
    release; NaN before any), ``released_count`` (count at the last release).

    Parameters: ``replicates``, ``streams``; keyword ``v`` (> 0; 1 < v < 2 in the paper), ``rng``,
    ``ledger``, ``interval`` or ``epsilon`` (optional), ``scale_fn`` (count array -> scale array,
    overrides v), ``name``, ``exact``.
    """

    name = "interval_mean"

    def __init__(self, replicates: int, streams: int, *, v: float | None = None, rng: np.random.Generator,
                 ledger, interval: int | None = None, epsilon: float | None = None,
                 scale_fn: Callable[[np.ndarray], np.ndarray] | None = None,
                 name: str = "interval_mean", exact: bool = False) -> None:
        super().__init__(replicates, streams, rng=rng, ledger=ledger, name=name, exact=exact)
        if scale_fn is None:
            if v is None:
                raise ValueError("v must be given (a real number in (0, inf)) unless scale_fn is")
            self.v = positive("v", v)
            # a bound method, not a lambda: the mechanism's state can then be pickled (deployments
            # persist it, privbandit.deploy)
            self.scale_fn = self._default_scale
        else:
            if not callable(scale_fn):
                raise ValueError("scale_fn must be callable: counts (int array) -> scales in (0, inf)")
            self.v = None if v is None else positive("v", v)
            self.scale_fn = scale_fn
        self._default = scale_fn is None
        if interval is not None and epsilon is not None:
            raise ValueError("give at most one of interval and epsilon (epsilon sets interval = ceil(1/epsilon))")
        if epsilon is not None:
            inverse = 1.0 / positive("epsilon", epsilon)
            if not math.isfinite(inverse):  # (a subnormal epsilon: ceil(inf) was an OverflowError)
                raise ValueError(f"epsilon must lie in [{1 / sys.float_info.max!r}, inf) (interval = ceil(1/epsilon) "
                                 f"must be a finite whole number), got {epsilon!r}")
            interval = math.ceil(inverse)
        self.interval = None if interval is None else whole("interval", interval, 1)
        shape = (self.replicates, self.streams)
        self.sum = np.zeros(shape)
        self.noisy_mean = np.full(shape, np.nan)
        self.released_count = np.zeros(shape, dtype=np.int64)
        #: Number of calls that released something (cached derived state is stale when it changed).
        self.version = 0

    def _default_scale(self, n: np.ndarray) -> np.ndarray:
        """n^(v/2 - 1): eps_n = n^(-v/2) for a mean of sensitivity 1/n (ALGORITHMS.md 4.4)."""
        return interval_scales(n, self.v)

    def _scales(self, n: np.ndarray) -> np.ndarray:
        # a copy (session 13): the ledger stages the scales uncopied until its next drain, and a scale_fn returning
        # a buffer it reuses turned the scales already recorded into the next call's (a larger scale recorded
        # than the noise drawn: an under-count)
        s = np.array(self.scale_fn(np.asarray(n, dtype=np.int64)), dtype=float)
        if s.shape != np.shape(n) or np.any(~(s > 0)) or np.any(~np.isfinite(s)):
            raise ValueError("scale_fn must return finite scales in (0, inf), one per count")
        return s

    def _insert(self, v, f, rr, kk) -> None:
        """``insert`` / ``insert_pulled`` of the validated entries; release where the interval is reached."""
        flat(self.sum)[f] += v
        count = flat(self.count)
        n = count[f] + 1
        count[f] = n
        if self.interval is not None:
            due = n % self.interval == 0
            if due.all():
                self._release(rr, kk)
            elif due.any():
                self._release(rr[due], kk[due])

    def release(self, mask: np.ndarray) -> np.ndarray:
        """Release (or return the cached release of) the current mean of every masked stream with
        count >= 1; returns ``noisy_mean``. With ``interval`` set, only counts that are multiples of it
        may be released (already done automatically, so this returns the cached values)."""
        mask = np.asarray(mask)
        if mask.shape != self.count.shape or mask.dtype != bool:
            raise ValueError(f"mask must be a bool array of shape {self.count.shape}")
        rr, kk = np.nonzero(mask & (self.count > 0))
        if self.interval is not None and np.any(self.count[rr, kk] % self.interval):
            raise ValueError(f"release: with interval={self.interval} a mean may only be released at counts "
                             f"that are multiples of interval (the schedule counts only those); "
                             f"construct with interval=None for caller-timed releases")
        self._release(rr, kk)
        return self.noisy_mean

    def _release(self, rr: np.ndarray, kk: np.ndarray) -> None:
        if rr.size == 0:
            return
        g = rr * self.streams + kk
        count, released = flat(self.count), flat(self.released_count)
        n = count[g]
        fresh = n != released[g]  # once per statistic: cached otherwise
        if not fresh.all():
            rr, kk, g, n = rr[fresh], kk[fresh], g[fresh], n[fresh]
            if rr.size == 0:
                return
        self.version += 1
        # the default scale n^(v/2 - 1) is finite and positive for every count n >= 1: no re-validation
        scale = self._default_scale(n) if self._default else self._scales(n)
        sens = 1.0 / n
        flat(self.noisy_mean)[g] = self.sampler._sum_release(flat(self.sum)[g] / n, scale, on_grid=False)
        if self.sampler.exact:
            scale, sens = self.sampler.effective_scale(scale), self.sampler.effective_sensitivity(sens)
        self.ledger._record_from_mechanism(rr, kk, 0, n, scale, sens, self.name, n,
                                           discrete=self.sampler.exact)
        released[g] = n

    def release_leaf(self, n: int) -> LeafEvent:
        """The event of the release of the mean of n items: Lap(scale(n)) with sensitivity 1/n."""
        n = whole("n", n, 1)
        scale = self._scales(np.array([n]))
        return laplace_event(self.sampler, float(scale[0]), 1.0 / n)

    def privacy_schedule(self, n: int) -> Event:
        """Worst-case releases of one record at count ``n``: the first record is in every release.

        With ``interval`` f: the releases at f, 2f, ..., <= n. Without: a release at every count
        1..n (each statistic is released at most once, whatever the caller asks), an upper bound
        for any release pattern.
        """
        n = whole("n", n, 0)
        counts = range(self.interval, n + 1, self.interval) if self.interval else range(1, n + 1)
        leaves = [self.release_leaf(c) for c in counts]
        return Composed(tuple(leaves)) if leaves else NO_EVENT

    def error_bound(self, n: int, gamma: float) -> float:
        """|released mean - true mean| <= scale(n) ln(1/gamma) w.p. 1 - gamma (float mode)."""
        n = whole("n", n, 1)
        gamma = probability("gamma", gamma)
        return float(self._scales(np.array([n]))[0]) * math.log(1.0 / gamma)
