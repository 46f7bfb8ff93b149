"""Shared plumbing of the counting mechanisms: input validation and the vectorised binary tree core."""

from __future__ import annotations

import numpy as np

from accountants import _validate
from accountants._validate import shown
from privbandit.ledger import Ledger, grid_layout, pulled_layout
from privbandit.mechanisms import _kernels, _stream_kernels
from privbandit.mechanisms.sampling import NoiseSampler

MAX_LEVELS = 62
"""Levels of an unbounded binary core (streams up to 2**62 items)."""


whole = _validate.whole  # ``value`` as an int >= ``minimum`` (the one shared check)


def positive(name: str, value) -> float:
    """``value`` as a float in (0, inf); ValueError naming the parameter and the range otherwise
    (``accountants._validate.positive``, the one check of a positive real: this module's own copy
    called float() unguarded, and an epsilon of 10**400 was an OverflowError; session 15)."""
    return _validate.positive(name, value)


def probability(name: str, value) -> float:
    """``value`` as a float in (0, 1) (a failure probability ``gamma``): ``accountants._validate.probability``."""
    return _validate.probability(name, value)


def check_ledger(ledger, replicates: int, streams: int) -> Ledger:
    """The ledger to record into. ``None`` (a run without a ledger, ``simulate(ledger=False)``) gives
    one that records nothing (:meth:`Ledger.unrecorded`), so mechanisms never branch on it and a run
    without a ledger pays for no recording (docs/engine.md, "Ledger off")."""
    if ledger is None:
        return Ledger.unrecorded(replicates, streams)
    if not isinstance(ledger, Ledger):
        raise ValueError(f"ledger must be a privbandit.ledger.Ledger, got {type(ledger).__name__}")
    if (ledger.replicates, ledger.streams) != (replicates, streams):
        raise ValueError(f"ledger shape (replicates, streams) must be ({replicates}, {streams}), got "
                         f"({ledger.replicates}, {ledger.streams})")
    return ledger


def check_name(name) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {shown(name)}")
    return name


def single_release_schedule(sampler: NoiseSampler, scale: float, n: int):
    """The schedule of mechanisms that put each record in exactly one Laplace release of a sum
    (sensitivity 1): one Lap(scale) once a release covers it, nothing at n = 0. In exact mode the
    grid-rounded scale and sensitivity are reported."""
    from accountants.events import NO_EVENT, Laplace

    if whole("n", n, 0) == 0:
        return NO_EVENT
    return laplace_event(sampler, scale, 1.0, on_grid=True)


def laplace_event(sampler: NoiseSampler, scale, sensitivity, *, on_grid: bool = False):
    """The accountants event of one Laplace release of ``sampler``: ``Laplace`` in float mode,
    ``DiscreteLaplace`` (its own, slightly worse, RDP/PLD curves) on the grid in exact mode."""
    from accountants.events import DiscreteLaplace, Laplace
    from privbandit.mechanisms.sampling import GRID

    eff_scale = float(sampler.effective_scale(scale))
    eff_sens = float(sampler.effective_sensitivity(sensitivity, on_grid=on_grid))
    return DiscreteLaplace(eff_scale, eff_sens, grid=GRID) if sampler.exact else Laplace(eff_scale, eff_sens)


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
        # insert_pulled: one entry per replicate, rows 0..R-1: the ledger's read-only pulled layout,
        # staged uncopied and recognised by identity (privbandit.ledger.pulled_layout)
        self._pulled_rows = pulled_layout(self.replicates)
        self._row_offsets = self._pulled_rows * self.streams

    def insert(self, values: np.ndarray, mask: np.ndarray) -> None:
        """Append ``values[r, k]`` to stream (r, k) wherever ``mask`` is True (values in [0, 1])."""
        self._insert(*self._select(values, mask))

    def insert_pulled(self, arms: np.ndarray, values: np.ndarray) -> None:
        """Append ``values[r]`` to stream ``arms[r]`` of every replicate r (values in [0, 1]).

        The same as ``insert`` with the one-hot (values, mask) of (arms, values) -- a bandit round,
        where each replicate observes its pulled arm -- without building and scanning the (R, K)
        arrays: the same entries in the same order, so the same releases and noise draws."""
        self._insert(*self._select_pulled(arms, values))

    # Each mechanism defines ``_insert(v, f, rr, kk)``: insert the validated entries (quantized values,
    # flat index into the (R*K,) state views, rows, cols) -- the one implementation behind both
    # ``insert`` and ``insert_pulled``.

    @property
    def exact(self) -> bool:
        return self.sampler.exact

    def _record(self, rr, kk, lo, hi, scale, mechanism: str, node) -> None:
        """Report Laplace releases on sums of [0, 1] inputs (sensitivity 1; on the grid in exact mode,
        where inputs are quantized, so the certified sensitivity stays exactly 1)."""
        sampler = self.sampler
        if sampler.exact:
            self.ledger._record_from_mechanism(rr, kk, lo, hi, sampler.effective_scale(scale), 1.0, mechanism, node,
                                               discrete=True)
        else:
            self.ledger._record_from_mechanism(rr, kk, lo, hi, scale, 1.0, mechanism, node)

    def _prepare(self, values, mask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validate an insert; return (quantized values of the selected entries, rows, cols)."""
        v, _, rr, kk = self._select(values, mask)
        return v, rr, kk

    def _select(self, values, mask) -> tuple[np.ndarray, np.ndarray | slice, np.ndarray, np.ndarray]:
        """Validate an insert; return (quantized values of the selected entries, their flat index into
        the (R*K,) views of the state arrays -- a full slice when every stream is selected --, rows,
        cols). Entries come in row-major order, as ``np.nonzero`` gives them. ``rows`` and ``cols`` are
        fresh arrays, or the ledger's read-only grid layout when every stream is selected: the ledger
        stages them uncopied."""
        shape = (self.replicates, self.streams)
        values = np.asarray(values, dtype=float)
        mask = np.asarray(mask)
        if values.shape != shape:
            raise ValueError(f"values must have shape (replicates, streams) = {shape}, got {values.shape}")
        if mask.shape != shape or mask.dtype != bool:
            raise ValueError(f"mask must be a bool array of shape {shape}, got {mask.dtype} {mask.shape}")
        n = np.count_nonzero(mask)
        if n == mask.size:  # every stream: slices instead of fancy indexing
            f = slice(None)
            # np.nonzero of an all-True mask: the ledger's read-only grid arrays, uncopied (nobody
            # writes them), which it recognises by identity (privbandit.ledger.grid_layout)
            rr, kk = grid_layout(self.replicates, self.streams)
            v = values.reshape(-1)
            bad = _stream_kernels.stream_outside_unit.at(self.replicates)(v)
        else:
            entries = _stream_kernels.stream_masked_entries
            way = entries.at(self.replicates)
            if way is entries.py_func:
                # interpreted (one replicate, or no numba): numpy's vectorised selection, whose cost does
                # not grow with the streams as a Python loop over the cells does (the same entries:
                # tests/privbandit/mechanisms/test_stream_kernels.py)
                rr, kk = np.nonzero(mask)
                f = rr * self.streams + kk
                v = values.reshape(-1)[f]
                bad = v.size and not (v.min() >= 0.0 and v.max() <= 1.0)
            else:
                # np.nonzero's entries (row-major), their flat index and values, range-checked, in one pass
                rr, kk, f, v = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp), \
                    np.empty(n, dtype=np.intp), np.empty(n)
                bad = way(values, mask, rr, kk, f, v)
        if bad:
            raise ValueError("values must lie in [0, 1] where mask is True (clip rewards before inserting)")
        sampler = self.sampler
        return (sampler.quantize(v) if sampler.exact else v), f, rr, kk

    def _select_pulled(self, arms, values) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_select` for one entry per replicate (stream ``arms[r]`` of replicate r): the entries
        np.nonzero would give for the one-hot mask, in the same (row-major) order, at a fraction of
        the numpy calls. ``kk`` is a fresh int copy of ``arms`` (the ledger stages it uncopied)."""
        arms, values = self._pulled_arguments(arms, values)
        R = self.replicates
        # (the dtype positionally: numpy's keyword parsing costs ~70 ns a call, a round's fixed cost at R = 1)
        kk, f = _empty(R, _INTP), _empty(R, _INTP)
        self._pulled_refused(_stream_kernels.stream_pulled_entries.at(R)(arms, values, self.streams, kk, f))
        sampler = self.sampler
        return (sampler.quantize(values) if sampler.exact else values), f, self._pulled_rows, kk

    def _pulled_arguments(self, arms, values) -> tuple[np.ndarray, np.ndarray]:
        """The shape and type checks of :meth:`_select_pulled`: ``arms`` as an integer array and
        ``values`` as a contiguous float array, both of shape (replicates,) (their ranges are checked
        by ``stream_pulled_entries``, see :meth:`_pulled_refused`)."""
        arms = np.asarray(arms)
        # contiguous here, once: every kernel of the insert then reads ``values`` as it is (their
        # compiled forms are typed on C-contiguous arrays; a strided user view is copied)
        values = np.ascontiguousarray(values, dtype=float)
        R = self.replicates
        if arms.shape != (R,) or arms.dtype.kind not in "iu":
            raise ValueError(f"arms must be an integer array of shape {(R,)}, got {arms.dtype} {arms.shape}")
        if values.shape != (R,):
            raise ValueError(f"values must have shape (replicates,) = {(R,)}, got {values.shape}")
        return arms, values

    def _pulled_refused(self, bad: int) -> None:
        """The error of ``stream_pulled_entries``'s code ``bad`` (0: none)."""
        if bad == 1:
            raise ValueError(f"arms must lie in [0, {self.streams}) (the streams)")
        if bad == 2:
            raise ValueError("values must lie in [0, 1] (clip rewards before inserting)")


def flat(a: np.ndarray) -> np.ndarray:
    """A 1-D view of the C-contiguous state array ``a``: writes through it update ``a`` (raises
    rather than silently copying if ``a`` is not contiguous)."""
    out = a.view()
    out.shape = (a.size,)
    return out


def subset(f: np.ndarray | slice, sel: np.ndarray) -> np.ndarray:
    """The flat index of the entries ``sel`` (a bool array over the selected entries) of ``f``."""
    return np.flatnonzero(sel) if isinstance(f, slice) else f[sel]


def partition(hit: np.ndarray, n_hit: int, f: np.ndarray, rr, kk, t, v) -> tuple[tuple, tuple]:
    """The entries (flat index ``f`` as an array, rows, cols, counts, values) with ``hit``, and the
    others, each in order: ``(subset(f, hit), rr[hit], ...)`` and the same for ``~hit``, in one
    kernel. Fresh arrays (the ledger stages rows and cols uncopied)."""
    n = hit.size
    parts = tuple((np.empty(m, dtype=f.dtype), np.empty(m, dtype=rr.dtype), np.empty(m, dtype=kk.dtype),
                   np.empty(m, dtype=t.dtype), np.empty(m, dtype=v.dtype)) for m in (n_hit, n - n_hit))
    _kernels.partition.at(n)(hit, f, rr, kk, t, v, *parts[0], *parts[1])
    return parts


def exact_log2(p: np.ndarray) -> np.ndarray:
    """log2 of int64 powers of two, exact (integer popcount of p - 1, no float log)."""
    return np.bitwise_count(p - 1).astype(np.int64)


class _Scratch:
    """Working arrays by insert size (a binary core's ``new``, ``dropped``, ``level``), a
    mechanism's schedule leaves by scale (frozen events, built once) and its per-block constants by
    block (a node scale and a block's first count, computed once): no state -- arrays rewritten by
    every insert before being read, events and constants functions of the scale or block and the
    mechanism's fixed parameters -- so it pickles empty and equals any other."""

    __slots__ = ("by_size", "leaves", "blocks")

    def __init__(self) -> None:
        self.by_size: dict[int, tuple[np.ndarray, ...]] = {}
        self.leaves: dict[float, object] = {}
        self.blocks: dict[int, tuple] = {}

    def __eq__(self, other) -> bool:
        return isinstance(other, _Scratch)

    __hash__ = object.__hash__

    def __reduce__(self):
        return _Scratch, ()


class BinaryCore:
    """Vectorised binary (tree) mechanism state for every stream (Chan, Shi & Song 2011, Alg. 2).

    Each stream holds ``tau`` items of its current block; level ``i`` keeps the exact p-sum and its
    noisy version. Inserting item ``tau`` completes exactly one node, at the lowest set bit ``i`` of
    ``tau``: it merges the lower p-sums (levels < i, all alive since tau - 1 has those bits set) and
    the new value, draws one fresh Laplace for it, and the lower nodes are discarded. The output is
    the sum of the noisy nodes alive (the binary decomposition of ``tau``), kept incrementally in
    ``total``. ``max_levels`` bounds the level array; unbounded users start small and grow.

    ``levels_major``: the node array is stored level by level -- ``nodes`` and the kernels' row view
    are strided views of (levels, R*K, 2) storage, the same values at the same indices -- for users
    whose streams are all inserted together (lock-step): an insert then reads and writes each level
    as one contiguous run instead of one cache line per stream 256 bytes apart (a quarter of a
    set-associative cache's sets).
    """

    def __init__(self, replicates: int, streams: int, levels: int, *, max_levels: int | None = None,
                 capacity: int | None = None, full_message: str = "", levels_major: bool = False) -> None:
        self.levels = levels
        self.max_levels = levels if max_levels is None else max_levels
        # a bounded user (the T-bounded tree): an insert into a stream already holding ``capacity``
        # items raises ValueError(full_message) before any state changes (checked in the kernel)
        self.capacity = _UNBOUNDED if capacity is None else capacity
        self.full_message = full_message
        # node (r, k, i): [exact p-sum, noisy p-sum] side by side, so an insert touching a stream's
        # low levels reads and writes one cache line for both (the streams are hit at random)
        self.levels_major = levels_major
        self.nodes = self._new_nodes(replicates, streams, levels)
        self.total = np.zeros((replicates, streams))
        self.tau = np.zeros((replicates, streams), dtype=np.int64)
        self._tau_flat, self._total_flat = flat(self.tau), flat(self.total)
        self._all_flat = None  # np.arange over every row, built on the first full insert
        self._scratch = _Scratch()  # the kernels' working arrays, reused from insert to insert
        self._views()

    @property
    def exact_nodes(self) -> np.ndarray:
        """(R, K, levels) view: the exact p-sum of each node."""
        return self.nodes[..., 0]

    @property
    def noisy_nodes(self) -> np.ndarray:
        """(R, K, levels) view: the noisy p-sum of each node."""
        return self.nodes[..., 1]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        # working arrays and views, rebuilt on load: a pickled (or deep-copied) view is a copy of its
        # own, which would no longer write through to ``tau`` / ``total`` (users may share those)
        for key in ("_tau_flat", "_total_flat", "_node_rows"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict) -> None:
        # states pickled before the nodes were interleaved (deployments' snapshots) hold two arrays
        if "nodes" not in state:
            state["nodes"] = np.stack([state.pop("exact_nodes"), state.pop("noisy_nodes")], axis=-1)
            state.pop("_exact_rows", None)
            state.pop("_noisy_rows", None)
        state.setdefault("_all_flat", None)
        state.setdefault("capacity", _UNBOUNDED)
        state.setdefault("full_message", "")
        # the layout of the node arrays this core allocates (a pickled levels-major view comes back
        # stream-major until the nodes next grow: the kernels' row view works on either)
        state.setdefault("levels_major", False)
        state["_scratch"] = _Scratch()
        # states pickled with the flat views: those are what the kernels updated (after an earlier
        # reload the 2-D arrays could be stale copies), so they are the state
        for key, flat_key in (("tau", "_tau_flat"), ("total", "_total_flat")):
            view = state.pop(flat_key, None)
            if view is not None and not np.shares_memory(view, state[key]):
                state[key] = np.array(view).reshape(state[key].shape)
        self.__dict__.update(state)
        self._tau_flat, self._total_flat = flat(self.tau), flat(self.total)
        self._views()

    def _new_nodes(self, replicates: int, streams: int, levels: int) -> np.ndarray:
        """Zero nodes of shape (R, K, levels, 2), stored stream by stream or level by level."""
        if not self.levels_major:
            return np.zeros((replicates, streams, levels, 2))
        return np.zeros((levels, replicates, streams, 2)).transpose(1, 2, 0, 3)

    def _views(self) -> None:
        """(R*K, levels, 2) view of the nodes (renewed when they grow): a view of either layout, never
        a copy (assigning the shape raises where reshape would silently copy)."""
        rows = self.nodes.view()
        rows.shape = (self.tau.size, self.levels, 2)
        self._node_rows = rows

    def _grow(self, needed: int) -> None:
        if needed > self.max_levels:
            raise ValueError(f"a block would need {needed} levels; at most {self.max_levels} are supported")
        new_levels = min(self.max_levels, max(needed, 2 * self.levels))
        nodes = self._new_nodes(*self.nodes.shape[:2], new_levels)
        nodes[:, :, :self.levels] = self.nodes
        self.nodes = nodes
        self.levels = new_levels
        self._views()

    def reset(self, rr: np.ndarray, kk: np.ndarray) -> None:
        self.reset_flat(rr * self.tau.shape[1] + kk)

    def reset_flat(self, f: np.ndarray | slice) -> None:
        """Empty the streams at flat index ``f`` (a new block starts)."""
        f = self.rows(f)
        _kernels.reset_rows.at(f.size)(self._node_rows, self._total_flat, self._tau_flat, f)

    def insert_flat(self, mech: StreamMechanism, f, rr, kk, v, scale, offset, mechanism: str) -> None:
        """Insert ``v`` into streams (rr, kk) at flat index ``f`` (a full slice: every stream, in
        order); nodes noised with Lap(``scale``); footprints shifted by ``offset`` (the stream position
        of the block's first item). The new outputs are in ``total``.

        ``scale`` and ``offset`` are scalars or arrays over the inserted streams, built by the
        calling mechanism (not re-validated). The bookkeeping runs in two kernels
        (:mod:`privbandit.mechanisms._kernels`: read the completed nodes' p-sums, then write the
        new state); between them the nodes are released through the mechanism's sampler, the one
        path every Laplace draw takes."""
        n = rr.size
        if n == 0:
            return
        f = self.rows(f)
        # (``v`` comes from _select / _select_pulled: a contiguous float array already)
        scratch = self._scratch.by_size.get(n)
        if scratch is None:  # working arrays of the kernels, read by no one after the insert
            scratch = self._scratch.by_size[n] = (np.empty(n), np.empty(n), np.empty(n, dtype=np.int64))
        new, dropped, level = scratch
        # fresh arrays: the ledger stages lo, hi and node uncopied (only arrays owning their data); the
        # new outputs are read from ``total`` (the callers' state), not copied out
        lo, hi, node = _empty(n, _INT64), _empty(n, _INT64), _empty(n, _INT64)
        prepare, commit = _kernels.binary_prepare.at(n), _kernels.binary_commit.at(n)
        top = prepare(self._tau_flat, self._node_rows, f, v, new, dropped, level, self.capacity)
        if top > self.levels:
            self._grow(top)
            prepare(self._tau_flat, self._node_rows, f, v, new, dropped, level, self.capacity)
        elif top < 0:
            raise ValueError(self.full_message)
        # ``new`` is scratch, overwritten by the next insert: the sampler reads it during the call only
        # (a tracer that keeps the statistic copies it)
        noisy = np.ascontiguousarray(mech.sampler._sum_release(new, scale), dtype=float)
        # footprints are stream positions in the block: shifted by one offset for all, or one each
        if isinstance(offset, np.ndarray) and offset.ndim:
            base, offsets = 0, np.ascontiguousarray(offset, dtype=np.int64)
        else:
            base, offsets = int(offset), _NO_OFFSETS
        commit(self._tau_flat, self._total_flat, self._node_rows, f, new, noisy, dropped, level, top, base, offsets,
               lo, hi, node)
        mech._record(rr, kk, lo, hi, scale, mechanism, node)

    def rows(self, f: np.ndarray | slice) -> np.ndarray:
        """The flat index ``f`` as an index array (a full slice: every row, in order)."""
        if not isinstance(f, slice):
            return f
        if self._all_flat is None or self._all_flat.size != self.tau.size:
            self._all_flat = np.arange(self.tau.size, dtype=np.intp)
        return self._all_flat


_NO_OFFSETS = np.zeros(0, dtype=np.int64)
_NO_OFFSETS.flags.writeable = False
_empty, _INT64, _INTP = np.empty, np.dtype(np.int64), np.dtype(np.intp)
_UNBOUNDED = 2**62  # the capacity of an unbounded core: more items than a stream can ever hold


def popcount(n: int) -> int:
    return bin(n).count("1")
