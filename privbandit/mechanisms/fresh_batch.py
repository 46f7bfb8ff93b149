"""Fresh-batch ("lazy") private means: each observation is used in exactly one noisy batch sum.

Hu & Hegde (UAI 2022) Lazy-DP-TS (Algorithm 2; doubling batches 1, 2, 4, ...); Sajed & Sheffet
(ICML 2019) DP-SE (epoch batches of R_e fresh samples); Hu, Huang & Mehta (2021) Anytime-Lazy-UCB.
ALGORITHMS.md sections 6.2, 7.1, 7.2.
"""

from __future__ import annotations

import math

import numpy as np

from accountants._validate import shown
from accountants.events import Event
from privbandit.mechanisms._base import StreamMechanism, flat, positive, probability, single_release_schedule, whole
from privbandit.mechanisms._kernels import kernel
from privbandit.mechanisms._split_kernels import hh_batch_close, hh_batch_gather


@kernel
def fresh_batch_append(open_sum: np.ndarray, pending: np.ndarray, count: np.ndarray, n_batches: np.ndarray,
                       target: np.ndarray, rr: np.ndarray, kk: np.ndarray, v: np.ndarray, doubling: bool,
                       full: np.ndarray) -> int:
    """Append ``v[i]`` to the open batch of stream (``rr[i]``, ``kk[i]``) (distinct streams), count
    it, and write into ``full`` the positions i whose batch is now complete: 2^j items for its j-th
    batch (``doubling``), else its positive ``target``. Returns how many are. One add per entry, as
    numpy's fancy-indexed ``+=`` did; the releases are the caller's (through the sampler)."""
    n = 0
    for i in range(rr.size):
        r, k = rr[i], kk[i]
        open_sum[r, k] += v[i]
        p = pending[r, k] + 1
        pending[r, k] = p
        count[r, k] += 1
        if doubling:
            done = p == (1 << n_batches[r, k])
        else:
            done = target[r, k] > 0 and p == target[r, k]
        if done:
            full[n] = i
            n += 1
    return n


class FreshBatchMean(StreamMechanism):
    """Disjoint batches of a stream, each released once as sum + Lap(1/eps) (sensitivity 1).

    ``batches="doubling"``: the j-th batch (j = 0, 1, ...) closes when it holds 2^j items
    (Lazy-DP-TS, Anytime-Lazy-UCB). ``batches="manual"``: the caller closes the open batch with
    :meth:`close_batch` or declares per-stream target sizes with :meth:`set_batch_size` (DP-SE's
    R_e); a batch closes automatically when it reaches its target.

    Footprint of a release: the batch ``[batch start, count)``. Batches are disjoint, so every
    record is in at most one release: eps-DP per stream (parallel composition + post-processing).

    Attributes: ``count`` (items inserted), ``pending`` (items in the open batch), ``noisy_sum`` /
    ``batch_size`` (noisy sum and size of the last closed batch; 0 before any), ``noisy_mean``,
    ``n_batches``.

    Parameters: ``replicates``, ``streams``; keyword ``epsilon``, ``rng``, ``ledger``, ``batches``,
    ``name``, ``exact``.
    """

    name = "fresh_batch"

    def __init__(self, replicates: int, streams: int, *, epsilon: float, rng: np.random.Generator,
                 ledger, batches: str = "doubling", name: str = "fresh_batch", exact: bool = False) -> None:
        self.epsilon = positive("epsilon", epsilon)
        if batches not in ("doubling", "manual"):
            raise ValueError(f"batches must be one of {{'doubling', 'manual'}}, got {shown(batches)}")
        super().__init__(replicates, streams, rng=rng, ledger=ledger, name=name, exact=exact)
        self.batches = batches
        self.scale = 1.0 / self.epsilon
        shape = (self.replicates, self.streams)
        self.pending = np.zeros(shape, dtype=np.int64)
        self.noisy_sum = np.zeros(shape)
        self.batch_size = np.zeros(shape, dtype=np.int64)
        self.n_batches = np.zeros(shape, dtype=np.int64)
        self._target = np.zeros(shape, dtype=np.int64)  # manual mode; 0 = no automatic close
        self._open_sum = np.zeros(shape)
        #: Number of calls that released a batch: state derived from the released values (a policy's
        #: cached index terms) is stale exactly when this changed.
        self.version = 0

    @property
    def noisy_mean(self) -> np.ndarray:
        """noisy_sum / batch_size of the last closed batch (NaN where no batch has closed)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.batch_size > 0, self.noisy_sum / np.maximum(self.batch_size, 1), np.nan)

    def set_batch_size(self, sizes: np.ndarray) -> None:
        """Manual mode: target size (R, K) ints >= 0 of every stream's open batch (0 = close manually)."""
        if self.batches != "manual":
            raise ValueError("set_batch_size needs batches='manual' (doubling batches have fixed sizes)")
        sizes = np.asarray(sizes)
        if sizes.shape != self.count.shape or not np.issubdtype(sizes.dtype, np.integer):
            raise ValueError(f"sizes must be an integer array of shape {self.count.shape}")
        if np.any(sizes < 0):
            raise ValueError("sizes must lie in [0, inf) (0 = no automatic close)")
        if np.any((sizes > 0) & (sizes < self.pending)):
            raise ValueError("sizes must lie in [pending, inf) where positive: a batch cannot shrink below its items")
        self._target = sizes.astype(np.int64).copy()
        self._close(np.nonzero((self._target > 0) & (self.pending == self._target)))

    def _insert(self, v, f, rr, kk) -> None:
        """``insert`` / ``insert_pulled`` (append to the open batches) of the validated entries."""
        full = np.empty(rr.size, dtype=np.intp)
        n = fresh_batch_append.at(self.replicates)(self._open_sum, self.pending, self.count, self.n_batches,
                                                   self._target, rr, kk, v, self.batches == "doubling", full)
        if n:
            full = full[:n]
            self._close((rr[full], kk[full]))

    def insert_pulled_rounds(self, arms: np.ndarray, values: np.ndarray, replicates: np.ndarray | None = None) -> None:
        """``n`` bandit rounds at once, arms and values (n, R): exactly ``insert_pulled(arms[j],
        values[j])`` for j = 0 .. n - 1 -- the same state, and every batch that fills is released in
        the round it fills, with the rest of that round's filled batches, in the same order (the same
        noise draws and ledger records). ``replicates`` (R,) bool: only those replicates insert, i.e.
        ``insert`` of the one-hot values masked to them, round by round. For rounds a policy planned
        ahead (policies.base, ``plan``). Invalid input is refused before anything is inserted.

        Rounds in which no batch fills are appended in bulk (sequential adds, so every open sum has
        the per-round rounding); a round in which one fills goes through the per-round ``_insert``.
        """
        if replicates is None and np.ndim(arms) == 2 and np.shape(arms)[0] == 1:
            self._insert(*self._select_pulled(np.asarray(arms)[0], np.asarray(values, dtype=float)[0]))
            return  # one round: exactly insert_pulled's path
        f, v, rows = self._rounds_index(arms, values, replicates)
        n, j = f.shape[0], 0
        while j < n:
            stop = first_reaching(f[j:], flat(self.pending), self._fill_target)
            bulk = n if stop < 0 else j + stop
            if bulk > j:
                seg = f[j:bulk].ravel()
                # ufunc.at adds unbuffered, in order: round by round, as ``_insert``'s ``+=`` would
                np.add.at(flat(self._open_sum), seg, v[j:bulk].ravel())
                c = np.bincount(seg, minlength=self.pending.size)
                flat(self.pending)[:] += c
                flat(self.count)[:] += c
            if stop >= 0:  # the round in which a batch fills: the per-round path, which releases it
                self._insert(v[bulk], f[bulk], rows.copy(), f[bulk] - rows * self.streams)
            j = bulk + 1

    def filling_round(self, arms: np.ndarray, replicates: np.ndarray | None = None) -> int:
        """The first row j of ``arms`` (n, R) in which ``insert_pulled_rounds`` of those arms would
        fill (and so release) a batch; -1 when none would. Depends on the arms only, never on values."""
        f, _, _ = self._rounds_index(arms, np.zeros(np.shape(arms)), replicates)
        return first_reaching(f, flat(self.pending), self._fill_target)

    def _rounds_index(self, arms, values, replicates):
        """Validate a block of rounds; return (flat stream index (n, R'), quantized values, rows)."""
        arms = np.asarray(arms)
        values = np.asarray(values, dtype=float)
        if arms.ndim != 2 or arms.shape[1] != self.replicates or arms.dtype.kind not in "iu":
            raise ValueError(f"arms must be an integer array of shape (rounds, {self.replicates}), "
                             f"got {arms.dtype} {arms.shape}")
        if values.shape != arms.shape:
            raise ValueError(f"values must have the shape of arms {arms.shape}, got {values.shape}")
        rows = self._pulled_rows
        if replicates is not None:
            replicates = np.asarray(replicates)
            if replicates.shape != (self.replicates,) or replicates.dtype != bool:
                raise ValueError(f"replicates must be a bool array of shape ({self.replicates},)")
            rows = rows[replicates]
            arms, values = arms[:, replicates], values[:, replicates]
        if arms.size and (arms.min() < 0 or arms.max() >= self.streams):
            raise ValueError(f"arms must lie in [0, {self.streams}) (the streams)")
        if values.size and not (values.min() >= 0.0 and values.max() <= 1.0):  # NaN fails both
            raise ValueError("values must lie in [0, 1] (clip rewards before inserting)")
        return arms.astype(np.intp) + (rows * self.streams)[None, :], self.sampler.quantize(values), rows

    def _fill_target(self, f: np.ndarray) -> np.ndarray:
        """The pending count at which the open batch of flat streams ``f`` closes itself (0: never)."""
        if self.batches == "doubling":
            return np.left_shift(1, flat(self.n_batches)[f])
        return flat(self._target)[f]

    def close_batch(self, mask: np.ndarray) -> None:
        """Manual mode: release the open batch of every masked stream that holds at least one item."""
        if self.batches != "manual":
            raise ValueError("close_batch needs batches='manual' (doubling batches close themselves)")
        mask = np.asarray(mask)
        if mask.shape != self.count.shape or mask.dtype != bool:
            raise ValueError(f"mask must be a bool array of shape {self.count.shape}")
        self._close(np.nonzero(mask & (self.pending > 0)))

    def _close(self, idx) -> None:
        """Release the open batches of streams ``idx`` = (rows, cols) (fresh int arrays, each stream
        once): sum + Lap(1/eps) through the sampler, reported with footprint [count - pending, count)."""
        rr, kk = idx
        n = rr.size
        if n == 0:
            return
        self.version += 1
        # separate arrays: the ledger stages lo, hi and node uncopied (they own their data)
        stat, lo, hi, node = np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), \
            np.empty(n, dtype=np.int64)
        hh_batch_gather.at(n)(self._open_sum, self.pending, self.count, self.n_batches, rr, kk, stat, lo, hi, node)
        noisy = np.ascontiguousarray(self.sampler._sum_release(stat, self.scale), dtype=float)
        self._record(rr, kk, lo, hi, self.scale, self.name, node)
        hh_batch_close.at(n)(self.noisy_sum, self.batch_size, self.n_batches, self.pending, self._open_sum,
                             self._target, rr, kk, noisy)

    def privacy_schedule(self, n: int) -> Event:
        """One Lap(1/eps) per record (its batch's release) for any n >= 1; nothing at n = 0."""
        return single_release_schedule(self.sampler, self.scale, n)

    def error_bound(self, n: int, gamma: float) -> float:
        """|noisy batch sum - batch sum| <= ln(1/gamma)/eps w.p. 1 - gamma (exact Laplace tail, float
        mode); divide by the batch size for the mean. ``n`` (the batch size) does not enter."""
        whole("n", n, 0)
        gamma = probability("gamma", gamma)
        return self.scale * math.log(1.0 / gamma)


def first_reaching(f: np.ndarray, counts: np.ndarray, target) -> int:
    """The first row of ``f`` (m, R) -- flat stream indices, one entry per replicate per round, in
    round order -- in which some stream's running count (``counts[f]`` before the first row, + 1 per
    entry) reaches ``target(f)`` (an int array over ``f``; 0 = never); -1 when no row does.

    For rounds planned ahead: a fresh batch that fills releases in the round it fills (FreshBatchMean,
    DP-SE's epochs), so block inserts stop there.
    """
    ravel = f.ravel()
    if ravel.size == 0:
        return -1
    goal = target(ravel)
    live = goal > 0
    if not live.any():
        return -1
    m = f.shape[0]
    if m == 1:  # one round: every entry is its stream's first (one entry per replicate)
        return 0 if np.any(live & (counts[ravel] + 1 == goal)) else -1
    if m <= 8:  # a few rounds: occurrence = 1 + earlier rounds of the same stream (a replicate's
        # streams are its own, so only its column can repeat a stream), without sorting
        earlier = np.tril(np.ones((m, m), dtype=bool), -1)[:, :, None]
        occurrence = 1 + np.count_nonzero((f[:, None, :] == f[None, :, :]) & earlier, axis=1).ravel()
        hit = np.flatnonzero(live & (counts[ravel] + occurrence == goal))
        return int(hit[0] // f.shape[1]) if hit.size else -1
    # the occurrence number of each entry in its stream (a stable sort keeps rounds in order)
    order = np.argsort(ravel, kind="stable")
    ordered = ravel[order]
    new = np.empty(ordered.size, dtype=bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    first = np.repeat(starts, np.diff(np.append(starts, ordered.size)))
    occurrence = np.empty(ordered.size, dtype=np.int64)
    occurrence[order] = np.arange(1, ordered.size + 1) - first
    hit = np.flatnonzero(live & (counts[ravel] + occurrence == goal))
    return int(hit[0] // f.shape[1]) if hit.size else -1
