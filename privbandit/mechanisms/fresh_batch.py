"""Fresh-batch ("lazy") private means: each observation is used in exactly one noisy batch sum.

Hu & Hegde (UAI 2022) Lazy-DP-TS (Algorithm 2; doubling batches 1, 2, 4, ...); Sajed & Sheffet
(ICML 2019) DP-SE (epoch batches of R_e fresh samples); Hu, Huang & Mehta (2021) Anytime-Lazy-UCB.
ALGORITHMS.md sections 6.2, 7.1, 7.2.
"""

from __future__ import annotations

import math

import numpy as np

from accountants.events import Event
from privbandit.mechanisms._base import StreamMechanism, positive, probability, single_release_schedule, whole
from privbandit.mechanisms._kernels import kernel


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
            raise ValueError(f"batches must be one of {{'doubling', 'manual'}}, got {batches!r}")
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

    def close_batch(self, mask: np.ndarray) -> None:
        """Manual mode: release the open batch of every masked stream that holds at least one item."""
        if self.batches != "manual":
            raise ValueError("close_batch needs batches='manual' (doubling batches close themselves)")
        mask = np.asarray(mask)
        if mask.shape != self.count.shape or mask.dtype != bool:
            raise ValueError(f"mask must be a bool array of shape {self.count.shape}")
        self._close(np.nonzero(mask & (self.pending > 0)))

    def _close(self, idx) -> None:
        rr, kk = idx
        if rr.size == 0:
            return
        self.version += 1
        self.noisy_sum[rr, kk] = self.sampler._sum_release(self._open_sum[rr, kk], self.scale)
        self._record(rr, kk, self.count[rr, kk] - self.pending[rr, kk], self.count[rr, kk], self.scale,
                     self.name, self.n_batches[rr, kk])
        self.batch_size[rr, kk] = self.pending[rr, kk]
        self.n_batches[rr, kk] += 1
        self.pending[rr, kk] = 0
        self._open_sum[rr, kk] = 0.0
        self._target[rr, kk] = 0

    def privacy_schedule(self, n: int) -> Event:
        """One Lap(1/eps) per record (its batch's release) for any n >= 1; nothing at n = 0."""
        return single_release_schedule(self.sampler, self.scale, n)

    def error_bound(self, n: int, gamma: float) -> float:
        """|noisy batch sum - batch sum| <= ln(1/gamma)/eps w.p. 1 - gamma (exact Laplace tail, float
        mode); divide by the batch size for the mean. ``n`` (the batch size) does not enter."""
        whole("n", n, 0)
        gamma = probability("gamma", gamma)
        return self.scale * math.log(1.0 / gamma)
