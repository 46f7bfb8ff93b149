"""Shared plumbing of the counting mechanisms: input validation and the vectorised binary tree core."""

from __future__ import annotations

import math
import numbers

import numpy as np

from privbandit.ledger import Ledger
from privbandit.mechanisms.sampling import NoiseSampler

MAX_LEVELS = 62
"""Levels of an unbounded binary core (streams up to 2**62 items)."""


def whole(name: str, value, minimum: int = 0) -> int:
    """``value`` as an int >= ``minimum``; ValueError naming the parameter and the range otherwise."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise ValueError(f"{name} must be a whole number in [{minimum}, inf), got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be a whole number in [{minimum}, inf), got {value}")
    return int(value)


def positive(name: str, value) -> float:
    """``value`` as a float in (0, inf); ValueError naming the parameter and the range otherwise."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real number in (0, inf), got {value!r}")
    x = float(value)
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"{name} must lie in (0, inf), got {x!r}")
    return x


def probability(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real number in (0, 1), got {value!r}")
    x = float(value)
    if not 0 < x < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {x!r}")
    return x


def check_ledger(ledger, replicates: int, streams: int) -> Ledger:
    """The ledger to record into. ``None`` (a run without a ledger, ``simulate(ledger=False)``) gives
    an internal one that keeps only the draw counts, so mechanisms never branch on it."""
    if ledger is None:
        return Ledger(replicates, streams, track_replicates=0)
    if not isinstance(ledger, Ledger):
        raise ValueError(f"ledger must be a privbandit.ledger.Ledger, got {type(ledger).__name__}")
    if (ledger.replicates, ledger.streams) != (replicates, streams):
        raise ValueError(f"ledger shape (replicates, streams) must be ({replicates}, {streams}), got "
                         f"({ledger.replicates}, {ledger.streams})")
    return ledger


def check_name(name) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    return name


def single_release_schedule(sampler: NoiseSampler, scale: float, n: int):
    """The schedule of mechanisms that put each record in exactly one Laplace release of a sum
    (sensitivity 1): one Lap(scale) once a release covers it, nothing at n = 0. In exact mode the
    grid-rounded scale and sensitivity are reported."""
    from accountants.events import NO_EVENT, Laplace

    if whole("n", n, 0) == 0:
        return NO_EVENT
    return Laplace(float(sampler.effective_scale(scale)), float(sampler.effective_sensitivity(1.0, on_grid=True)))


class StreamMechanism:
    """Common state of a mechanism over (replicates, streams): shape checks, sampler, ledger, count."""

    name = "mechanism"

    def __init__(self, replicates: int, streams: int, *, rng, ledger, name: str, exact: bool) -> None:
        self.replicates = whole("replicates", replicates, 1)
        self.streams = whole("streams", streams, 1)
        self.ledger = check_ledger(ledger, self.replicates, self.streams)
        self.sampler = NoiseSampler(rng, exact=exact)
        self.name = check_name(name)
        self.count = np.zeros((self.replicates, self.streams), dtype=np.int64)

    @property
    def exact(self) -> bool:
        return self.sampler.exact

    def _record(self, rr, kk, lo, hi, scale, mechanism: str, node) -> None:
        """Report Laplace releases on sums of [0, 1] inputs (sensitivity 1; on the grid in exact mode,
        where inputs are quantized, so the certified sensitivity stays exactly 1)."""
        eff = self.sampler.effective_scale(scale) if self.sampler.exact else scale
        self.ledger._record_from_mechanism(rr, kk, lo, hi, eff, 1.0, mechanism, node)

    def _prepare(self, values, mask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validate an insert; return (quantized values of the selected entries, rows, cols)."""
        shape = (self.replicates, self.streams)
        values = np.asarray(values, dtype=float)
        mask = np.asarray(mask)
        if values.shape != shape:
            raise ValueError(f"values must have shape (replicates, streams) = {shape}, got {values.shape}")
        if mask.shape != shape or mask.dtype != bool:
            raise ValueError(f"mask must be a bool array of shape {shape}, got {mask.dtype} {mask.shape}")
        rr, kk = np.nonzero(mask)
        v = values[rr, kk]
        if v.size and (np.any(np.isnan(v)) or v.min() < 0.0 or v.max() > 1.0):
            raise ValueError("values must lie in [0, 1] where mask is True (clip rewards before inserting)")
        return self.sampler.quantize(v), rr, kk


class BinaryCore:
    """Vectorised binary (tree) mechanism state for every stream (Chan, Shi & Song 2011, Alg. 2).

    Each stream holds ``tau`` items of its current block; level ``i`` keeps the exact p-sum and its
    noisy version. Inserting item ``tau`` completes exactly one node, at the lowest set bit ``i`` of
    ``tau``: it merges the lower p-sums (levels < i, all alive since tau - 1 has those bits set) and
    the new value, draws one fresh Laplace for it, and the lower nodes are discarded. The output is
    the sum of the noisy nodes alive (the binary decomposition of ``tau``), kept incrementally in
    ``total``. ``max_levels`` bounds the level array; unbounded users start small and grow.
    """

    def __init__(self, replicates: int, streams: int, levels: int, *, max_levels: int | None = None) -> None:
        self.levels = levels
        self.max_levels = levels if max_levels is None else max_levels
        self.exact_nodes = np.zeros((replicates, streams, levels))
        self.noisy_nodes = np.zeros((replicates, streams, levels))
        self.total = np.zeros((replicates, streams))
        self.tau = np.zeros((replicates, streams), dtype=np.int64)

    def _grow(self, needed: int) -> None:
        if needed > self.max_levels:
            raise ValueError(f"a block would need {needed} levels; at most {self.max_levels} are supported")
        new_levels = min(self.max_levels, max(needed, 2 * self.levels))
        pad = ((0, 0), (0, 0), (0, new_levels - self.levels))
        self.exact_nodes = np.pad(self.exact_nodes, pad)
        self.noisy_nodes = np.pad(self.noisy_nodes, pad)
        self.levels = new_levels

    def reset(self, rr: np.ndarray, kk: np.ndarray) -> None:
        self.exact_nodes[rr, kk] = 0.0
        self.noisy_nodes[rr, kk] = 0.0
        self.total[rr, kk] = 0.0
        self.tau[rr, kk] = 0

    def insert(self, mech: StreamMechanism, rr, kk, v, scale, offset, mechanism: str) -> np.ndarray:
        """Insert ``v`` into streams (rr, kk); nodes noised with Lap(``scale``); footprints shifted by
        ``offset`` (the stream position of the block's first item). Returns the new outputs."""
        if rr.size == 0:
            return np.zeros(0)
        n_rows = self.tau.size
        # One flat row index (or a plain slice when every stream is inserted): much cheaper than
        # two-array fancy indexing on (R, K, levels).
        f = slice(None) if rr.size == n_rows else rr * self.tau.shape[1] + kk
        tau_v, total_v = self.tau.reshape(-1), self.total.reshape(-1)
        ex_v = self.exact_nodes.reshape(n_rows, self.levels)
        nz_v = self.noisy_nodes.reshape(n_rows, self.levels)
        tau = tau_v[f] + 1
        low = tau & -tau
        level = np.log2(low.astype(float)).astype(np.int64)  # exact: low is a power of two
        top = int(level.max()) + 1
        if top > self.levels:
            self._grow(top)
            ex_v = self.exact_nodes.reshape(n_rows, self.levels)
            nz_v = self.noisy_nodes.reshape(n_rows, self.levels)
        if top == 1:  # every completed node is a leaf: nothing to merge
            new, dropped = v, 0.0
        else:
            lower = np.arange(top)[None, :] < level[:, None]
            ex = ex_v[f, :top]
            nz = nz_v[f, :top]
            new = np.where(lower, ex, 0.0).sum(axis=1) + v
            dropped = np.where(lower, nz, 0.0).sum(axis=1)
            ex_v[f, :top] = np.where(lower, 0.0, ex)
            nz_v[f, :top] = np.where(lower, 0.0, nz)
        noisy = mech.sampler.laplace_release(new, scale, on_grid=True)
        rows = np.arange(n_rows) if isinstance(f, slice) else f
        ex_v[rows, level] = new
        nz_v[rows, level] = noisy
        out = total_v[f] + (noisy - dropped)
        total_v[f] = out
        tau_v[f] = tau
        lo = offset + tau - low
        mech._record(rr, kk, lo, offset + tau, scale, mechanism, lo * 64 + level)
        return out


def popcount(n: int) -> int:
    return bin(n).count("1")
