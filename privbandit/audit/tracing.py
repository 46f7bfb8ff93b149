"""A trace of every mechanism release, for every private policy, with no hook in the hot path.

While a :class:`ReleaseTracer` is active (a ``with`` block, used only by the audit), the toolkit's
noise entry points and the ledger's recording entry points are wrapped at class level:

* draws -- :meth:`NoiseSampler._sum_release`, :meth:`NoiseSampler.laplace_release`,
  :meth:`NoiseSampler.gaussian_release` (the single source of Laplace / Gaussian noise, DESIGN.md's
  "every noise draw goes through a mechanism") and :meth:`GaussianPosteriorRelease.release` (whose
  float path adds ``sigma * z`` itself). Each call logs the statistic it was given, the scale (or
  sigma) it was handed and the value it returned; nested calls (exact mode's ``_sum_release ->
  laplace_release -> laplace``) log once. The posterior's float path takes no sigma: the standard
  normals it draws (:meth:`GaussianPosteriorRelease._standard_normals`) are logged instead, and the
  sigma it used is read off as (released - mean) / z. Overrides of these methods in subclasses are
  wrapped too.
  :meth:`NoiseSampler.laplace` / :meth:`NoiseSampler.gaussian` called directly (noise a caller adds
  to a statistic itself) log as draws of statistic 0;
  -- except the node noise of a :class:`VectorTreeMechanism` insert (the contextual policies' trees),
  whose statistic is the node's exact sum, rebuilt by the tracer from the records the tree was handed
  (:meth:`VectorTreeMechanism.insert` is wrapped too); that release is logged and replayed like a
  scalar one;
* inserts -- :meth:`StreamMechanism.insert` / ``insert_pulled`` of a mechanism reporting to the run's
  ledger: the records handed over, per (replicate, stream) in insertion order (the ledger's record
  numbering), with the number of reports made before the call (``inserts``; the white-box
  ``footprint_position`` check finds the changed record's position from them);
* reports -- :meth:`Ledger._store` (every listed record: ``record_laplace``/``record_gaussian``/
  ``_record_from_mechanism``) and :meth:`Ledger._record_dense` (the prefix recorder of a tight
  ledger). Only reports into the run's own ledger count.

Every report is paired, first in first out, with the oldest unpaired draw of the same size (listed
records; or, for a vector release of :mod:`privbandit.mechanisms.vector_tree`, a draw of shape (m, entries)
for m reports, each report standing for one row) or shape (dense records): the mechanisms of this package draw and then report, element by
element in the same order. The pairing gives, per released value: the statistic handed to the
sampler, the released value, and what the ledger was told (family, scale, sensitivity, footprint,
mechanism, node). A draw left unpaired is a release the ledger never heard of; a report left
unpaired is a release whose noise the audit could not see.

**Replay.** A tracer built with ``replay=`` another tracer's draws returns, at its i-th draw, the
value the other run released at its i-th draw (after drawing its own, so the random stream is
consumed identically). Running a policy on tape D, then on a neighbouring tape D' with the same seed
and D's released values, gives two runs whose releases are identical: a policy that decides only
from its releases (post-processing, Dwork & Roth Prop. 2.1) then acts identically, whatever else
differs. Any difference in the actions proves that the decisions read the data some other way.

Nothing here edits the mechanisms or the ledger: when no tracer is active the wrapped methods are the
original functions, so the engine pays nothing.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from privbandit.ledger import Ledger
from privbandit.mechanisms._base import StreamMechanism
from privbandit.mechanisms.fresh_batch import FreshBatchMean
from privbandit.mechanisms.posterior import GaussianPosteriorRelease
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.mechanisms.vector_tree import VectorTreeMechanism

_KIND_NAMES = {0: "laplace", 1: "gaussian", 2: "zcdp", 3: "laplace"}
"""Ledger kinds by name; 3 is the exact mode's discrete Laplace (the Laplace law on the grid)."""


@dataclasses.dataclass
class Draw:
    """One call of a noise entry point: ``stat`` and ``out`` flattened, ``shape`` as given."""

    index: int
    family: str
    stat: np.ndarray
    out: np.ndarray | None
    shape: tuple
    paired: np.ndarray  # bool per element: a report covers it
    exempt: np.ndarray  # bool per element: a dense report left it out (no record, e.g. an empty arm)
    exact: bool = False  # drawn by an exact-mode (grid) sampler: discrete noise, rounded statistic
    scale: np.ndarray | None = None  # per element, the Laplace scale / Gaussian sigma handed to the sampler
    vector: bool = False  # the node noise of a traced vector-tree insert: ``stat`` is the node's exact sum


@dataclasses.dataclass
class Report:
    """One ledger report, flattened to its m released values."""

    kind: str
    rep: np.ndarray
    st: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    param: np.ndarray
    sens: np.ndarray
    mechanism: str
    node: np.ndarray
    draw: int = -1  # index of the paired draw
    elems: np.ndarray | None = None  # flat element indices into that draw
    width: int = 1  # entries per record: > 1 for a vector release (one report row per (m, width) draw row)


class _Draws(list):
    """A run's draws, carrying ``sums``: the released prefix sums its vector trees handed the policy
    (:func:`_vector_sum_wrapper`), in call order -- what a run replaying this one returns for them."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.sums: list[np.ndarray] = []


class ReleaseTracer:
    """Context manager: logs draws and ledger reports of one run (see the module docstring).

    ``ledger``: the run's ledger (reports into other ledgers are ignored). ``replay``: a list of
    :class:`Draw` of an earlier run whose released values this run returns. ``any_ledger=True``:
    reports into any ledger count (used by :func:`release_trace`).
    """

    _active: "ReleaseTracer | None" = None
    _saved: dict | None = None
    _light_store = None  # a subclass's handler of listed ledger reports, in place of :class:`Report` objects

    def __init__(self, ledger: Ledger | None, replay: list[Draw] | None = None, *, any_ledger: bool = False) -> None:
        if any_ledger:
            ledger = None  # reports into every ledger count (the black-box trace: no ledger of its own)
        elif not isinstance(ledger, Ledger):
            raise ValueError(f"ledger must be a privbandit Ledger, got {type(ledger).__name__}")
        self.ledger = ledger
        self.replay = replay
        self.replay_broken: str | None = None
        self.draws: list[Draw] = _Draws()
        self.reports: list[Report] = []
        self.orphans: list[Report] = []  # reports no draw could be paired with
        self._open: list[int] = []  # indices of draws not yet paired, oldest first
        self._depth = 0
        self._normals: np.ndarray | None = None  # the standard normals of the posterior release in progress
        # records inserted into the stream mechanisms (:meth:`StreamMechanism.insert` / ``insert_pulled``)
        # of the run's ledger, in call order: (mechanism index, rows, cols, values, reports before the call)
        self.inserts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, int]] = []
        self._mechanisms: list = []  # index -> mechanism (kept alive: ids stay unique)
        self._mechanism_ids: dict[int, int] = {}
        self._inserting = False
        # vector trees (:class:`VectorTreeMechanism`) of the run's ledger: the audit's own exact node sums
        # per tree (replicates, streams, levels, entries) and record counts, rebuilt from the records the
        # tree was handed; ``_vector_pending`` is the statistic of the node whose noise is being drawn
        self._vector_state: dict[int, tuple] = {}
        self._vector_pending: np.ndarray | None = None
        self._vector_released: np.ndarray | None = None  # the node value the last traced vector draw released
        # vector-tree outputs that are not the sum of their alive traced node releases:
        # (mechanism, replicate, stream, records held, largest difference, tolerance)
        self.vector_mismatch: list[tuple] = []

    # --- activation ------------------------------------------------------------------------
    def __enter__(self) -> "ReleaseTracer":
        if ReleaseTracer._active is not None:
            raise RuntimeError("a ReleaseTracer is already active (tracers do not nest)")
        ReleaseTracer._active = self
        ReleaseTracer._saved = _install()
        return self

    def __exit__(self, *exc) -> None:
        _uninstall(ReleaseTracer._saved)
        ReleaseTracer._active = None
        ReleaseTracer._saved = None

    # --- events ----------------------------------------------------------------------------
    def _new_draw(self, family: str, stat, exact: bool = False) -> Draw:
        stat = np.array(stat, dtype=float)
        d = Draw(len(self.draws), family, stat.reshape(-1), None, stat.shape,
                 np.zeros(stat.size, dtype=bool), np.zeros(stat.size, dtype=bool), bool(exact))
        self.draws.append(d)
        if stat.size:
            self._open.append(d.index)
        return d

    def _finish(self, d: Draw, out):
        arr = np.asarray(out, dtype=float)
        d.out = arr.reshape(-1).copy()
        if self.replay is None or self.replay_broken:
            return out
        if d.index >= len(self.replay) or self.replay[d.index].out is None \
                or self.replay[d.index].out.size != d.out.size or self.replay[d.index].family != d.family:
            self.replay_broken = f"draw {d.index}: the run's release pattern departed from the recorded run"
            return out
        return self.replay[d.index].out.reshape(arr.shape).copy()

    def _report(self, report: Report, dense_mask: np.ndarray | None) -> None:
        self.reports.append(report)
        for pos, i in enumerate(self._open):  # oldest unpaired first
            d = self.draws[i]
            if dense_mask is not None:
                if d.shape != dense_mask.shape:
                    continue
                elems = np.flatnonzero(dense_mask.reshape(-1))
                d.exempt[:] = ~dense_mask.reshape(-1)
            else:
                m = report.rep.size
                if d.stat.size == m:
                    elems = np.arange(m)
                elif len(d.shape) == 2 and d.shape[0] == m and m:
                    # a vector release (privbandit.mechanisms.vector_tree): one report per node, whose
                    # noise is one draw of shape (m, entries)
                    elems = np.arange(d.stat.size)
                    report.width = int(d.shape[1])
                else:
                    continue
            d.paired[elems] = True
            del self._open[pos]
            report.draw, report.elems = d.index, elems
            return
        self.orphans.append(report)

    def _insert(self, mech, rows, cols, values) -> None:
        idx = self._mechanism_ids.get(id(mech))
        if idx is None:
            idx = self._mechanism_ids[id(mech)] = len(self._mechanisms)
            self._mechanisms.append(mech)
        self.inserts.append((idx, np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64),
                             np.array(values, dtype=float), len(self.reports)))

    # --- summaries -------------------------------------------------------------------------
    def unreported(self) -> list[Draw]:
        """Draws with an element no ledger report covers (and no dense report exempted)."""
        return [d for d in self.draws if d.stat.size and not np.all(d.paired | d.exempt)]

    def released(self) -> dict[str, np.ndarray]:
        """Per paired released value: statistic, released value, and what the ledger was told; also
        what was drawn (``drawn_family``, ``drawn_scale``: the scale or sigma handed to the sampler,
        NaN where the entry point does not take one, e.g. the posterior's float path)."""
        per_report = [(seq, r, self.draws[r.draw]) for seq, r in enumerate(self.reports) if r.draw >= 0]
        if not per_report:
            out = {k: np.zeros(0) for k in ("stat", "out", "rep", "st", "lo", "hi", "param", "sens", "node", "draw",
                                            "seq", "exact", "width", "entry", "drawn_scale", "vector")}
            for k in ("kind", "mechanism", "drawn_family"):
                out[k] = np.zeros(0, dtype=object)
            return out
        cols: dict[str, list] = {k: [] for k in ("stat", "out", "rep", "st", "lo", "hi", "param", "sens", "node",
                                                  "drawn_scale")}
        for seq, r, d in per_report:
            m = r.elems.size
            cols["stat"].append(d.stat[r.elems])
            cols["out"].append(d.out[r.elems] if d.out is not None else np.full(m, np.nan))
            for k in ("rep", "st", "lo", "hi", "param", "sens", "node"):
                cols[k].append(np.repeat(getattr(r, k), r.width))
            cols["drawn_scale"].append(d.scale[r.elems] if d.scale is not None and d.scale.size == d.stat.size
                                       else np.full(m, np.nan))
        out = {k: np.concatenate(v) for k, v in cols.items()}
        # one value per report, repeated over its elements (session 15: np.full per report and column cost ~1 s
        # per 10^6 released values; the same arrays)
        counts = np.array([r.elems.size for _, r, _ in per_report], dtype=np.int64)
        for k, values in (("draw", [r.draw for _, r, _ in per_report]), ("seq", [seq for seq, _, _ in per_report]),
                          ("exact", [d.exact for _, _, d in per_report]),
                          ("vector", [d.vector for _, _, d in per_report]),
                          ("width", [r.width for _, r, _ in per_report])):
            out[k] = np.repeat(np.array(values), counts)
        for k, values in (("drawn_family", [d.family for _, _, d in per_report]),
                          ("kind", [r.kind for _, r, _ in per_report]),
                          ("mechanism", [r.mechanism for _, r, _ in per_report])):
            column = np.empty(len(values), dtype=object)
            column[:] = values
            out[k] = np.repeat(column, counts)
        # entry within a vector release: an element's position in its report modulo the report's width
        first = np.repeat(np.cumsum(counts) - counts, counts)
        out["entry"] = (np.arange(int(counts.sum()), dtype=np.int64) - first) % out["width"]
        return out


# --- wrappers ----------------------------------------------------------------------------------

def _drawn_scale(args, kwargs, shape) -> np.ndarray | None:
    """The scale (Laplace) or sigma (Gaussian) a noise entry point was called with, per element of
    its output (None when it cannot be read)."""
    value = args[0] if args else kwargs.get("scale", kwargs.get("sigma"))
    if value is None:
        return None
    try:
        return np.array(np.broadcast_to(np.asarray(value, dtype=float), shape)).reshape(-1)
    except (TypeError, ValueError):
        return None


def _sampler_wrapper(original, family: str):
    @functools.wraps(original)
    def wrapped(self, statistic, *args, **kwargs):
        tr = ReleaseTracer._active
        if tr is None or tr._depth:
            return original(self, statistic, *args, **kwargs)
        d = tr._new_draw(family, statistic, getattr(self, "exact", False))
        if tr._light_store is None:  # a light tracer reads the reported scale only
            d.scale = _drawn_scale(args, kwargs, np.shape(d.stat.reshape(d.shape)))
        tr._depth += 1
        try:
            out = original(self, statistic, *args, **kwargs)
        finally:
            tr._depth -= 1
        return tr._finish(d, out)

    return wrapped


def _noise_wrapper(original, family: str):
    """``NoiseSampler.laplace`` / ``gaussian`` called directly (not from a release method): the noise
    of a release assembled by hand, logged as a draw of statistic 0. Not replayed: the coupled run
    draws the same noise anyway, and the released value it will be added to is not visible here."""
    @functools.wraps(original)
    def wrapped(self, *args, **kwargs):
        tr = ReleaseTracer._active
        if tr is None or tr._depth:
            return original(self, *args, **kwargs)
        tr._depth += 1
        try:
            out = original(self, *args, **kwargs)
        finally:
            tr._depth -= 1
        stat = tr._vector_pending
        if stat is not None and np.shape(out) == stat.shape:
            # the node noise of a traced vector-tree insert (:func:`_vector_insert_wrapper`): the release
            # is the node's exact sum (in units of the noise) plus this draw, replayed like any other
            tr._vector_pending = None
            d = tr._new_draw(family, stat, getattr(self, "exact", False))
            d.vector = True
            d.scale = _drawn_scale(args, kwargs, np.shape(out))
            released = stat + np.asarray(out, dtype=float)
            res = tr._finish(d, released)
            tr._vector_released = np.asarray(res, dtype=float)
            # not replaying: the draw itself, bit for bit; replaying: the noise that makes this run's
            # node equal the recorded run's released node
            return out if res is released else np.asarray(res, dtype=float) - stat
        d = tr._new_draw(family, np.zeros(np.shape(out)), getattr(self, "exact", False))
        d.out = np.asarray(out, dtype=float).reshape(-1).copy()
        d.scale = _drawn_scale(args, kwargs, np.shape(out))
        return out

    return wrapped


def _posterior_wrapper(original):
    @functools.wraps(original)
    def wrapped(self, sums, counts):
        tr = ReleaseTracer._active
        if tr is None or tr._depth:
            return original(self, sums, counts)
        # registered before the call: the release reports to the ledger before it returns
        d = tr._new_draw("gaussian", np.asarray(sums, dtype=float) / (np.asarray(counts) + 1.0),
                         getattr(getattr(self, "sampler", None), "exact", False))
        tr._depth += 1
        tr._normals = None
        try:
            out = original(self, sums, counts)
        finally:
            tr._depth -= 1
        d.scale = _posterior_sigma(d, out, tr._normals)
        tr._normals = None
        return tr._finish(d, out)

    return wrapped


def _posterior_sigma(d: Draw, out, z) -> np.ndarray | None:
    """The float path adds ``sigma * z`` itself (no sampler call to read sigma from): with the standard
    normals z it drew (logged by :func:`_normals_wrapper`), the sigma it used is (theta - mean) / z,
    exact up to rounding where |z| is not tiny (elsewhere NaN: not compared)."""
    if z is None:
        return None
    z = np.asarray(z, dtype=float).reshape(-1)
    resid = np.asarray(out, dtype=float).reshape(-1) - d.stat
    if z.size != resid.size:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(z) > 1e-3, resid / z, np.nan)


def _normals_wrapper(original):
    """:meth:`GaussianPosteriorRelease._standard_normals`: the z of the posterior release in progress."""
    @functools.wraps(original)
    def wrapped(self, *args, **kwargs):
        z = original(self, *args, **kwargs)
        tr = ReleaseTracer._active
        if tr is not None and tr._depth and tr._normals is None:
            # the first completed call: the generator's own normals, before any override rescales them
            tr._normals = np.array(z, dtype=float)
        return z

    return wrapped


def _column(x, m, dtype):
    return np.array(np.broadcast_to(np.asarray(x, dtype=dtype), (m,)))


def _store_wrapper(original):
    @functools.wraps(original)
    def wrapped(self, kind, rep, st, lo_, hi_, p, s, mechanism, nd, *args, **kwargs):
        tr = ReleaseTracer._active
        if tr is not None and (tr.ledger is None or self is tr.ledger) and np.size(rep) and tr._light_store is not None:
            tr._light_store(int(kind), rep, st, lo_, hi_, p, mechanism)  # a tracer that keeps no Report (far_law.py)
        elif tr is not None and (tr.ledger is None or self is tr.ledger) and np.size(rep):
            m = int(np.size(rep))
            tr._report(Report(_KIND_NAMES.get(int(kind), str(kind)), _column(rep, m, np.int64),
                              _column(st, m, np.int64), _column(lo_, m, np.int64), _column(hi_, m, np.int64),
                              _column(p, m, float), _column(s, m, float), str(mechanism),
                              _column(-1 if nd is None else nd, m, np.int64)), None)
        return original(self, kind, rep, st, lo_, hi_, p, s, mechanism, nd, *args, **kwargs)

    return wrapped


def _dense_wrapper(original):
    @functools.wraps(original)
    def wrapped(self, mask, lo, hi, param, sensitivity, mechanism, *args, gaussian, discrete=False, **kwargs):
        tr = ReleaseTracer._active
        if tr is not None and (tr.ledger is None or self is tr.ledger):
            mask_ = np.asarray(mask, dtype=bool)
            rr, ss = np.nonzero(mask_)
            full = mask_.shape

            def pick(x, dtype):
                return np.broadcast_to(np.asarray(x, dtype=dtype), full)[rr, ss].copy()

            kind = "zcdp" if discrete else ("gaussian" if gaussian else "laplace")
            tr._report(Report(kind, rr.astype(np.int64), ss.astype(np.int64), pick(lo, np.int64), pick(hi, np.int64),
                              pick(param, float), pick(sensitivity, float), str(mechanism),
                              np.full(rr.size, -1, np.int64)), mask_)
        return original(self, mask, lo, hi, param, sensitivity, mechanism, *args, gaussian=gaussian,
                        discrete=discrete, **kwargs)

    return wrapped


def _insert_wrapper(original, pulled: bool):
    """``StreamMechanism.insert(values, mask)`` / ``insert_pulled(arms, values)``: the records a
    mechanism of the run's ledger was handed, per (replicate, stream), in insertion order -- the
    ledger's record numbering (a stream's records are numbered 0, 1, ... as they are inserted)."""
    @functools.wraps(original)
    def wrapped(self, a, b, *args, **kwargs):
        tr = ReleaseTracer._active
        if tr is not None and tr.ledger is not None and getattr(self, "ledger", None) is tr.ledger:
            try:
                if pulled:  # (arms, values): stream arms[r] of every replicate r
                    cols = np.asarray(a).reshape(-1)
                    rows, vals = np.arange(cols.size), np.asarray(b, dtype=float).reshape(-1)
                else:  # (values, mask): row-major over the masked entries, as the mechanisms insert them
                    mask = np.asarray(b, dtype=bool)
                    rows, cols = np.nonzero(mask)
                    vals = np.asarray(a, dtype=float)[rows, cols]
            except (TypeError, ValueError, IndexError):
                rows = cols = vals = None  # malformed input: the mechanism itself refuses it
            if rows is not None and rows.size == vals.size == cols.size and not tr._inserting:
                tr._insert(self, rows, cols, vals)
            outer, tr._inserting = not tr._inserting, True  # an override calling super() logs once
            try:
                return original(self, a, b, *args, **kwargs)
            finally:
                if outer:
                    tr._inserting = False
        return original(self, a, b, *args, **kwargs)

    return wrapped


def _rounds_wrapper(original):
    """``FreshBatchMean.insert_pulled_rounds(arms, values, replicates=None)``: n rounds of
    ``insert_pulled`` at once (planned rounds). Traced, it is run one round at a time (exactly
    equivalent, by its contract), each round's records logged before that round's call, so a
    release inside the block is ordered after exactly the records inserted before it."""
    @functools.wraps(original)
    def wrapped(self, arms, values, replicates=None):
        tr = ReleaseTracer._active
        if tr is None or tr.ledger is None or getattr(self, "ledger", None) is not tr.ledger or tr._inserting:
            return original(self, arms, values, replicates)
        try:
            a, v = np.asarray(arms), np.asarray(values, dtype=float)
            rows = np.arange(a.shape[1]) if replicates is None else np.flatnonzero(np.asarray(replicates, dtype=bool))
            ok = a.ndim == 2 and a.shape == v.shape
        except (TypeError, ValueError, IndexError):
            ok = False
        if not ok:  # malformed input: the mechanism itself refuses it
            return original(self, arms, values, replicates)
        for j in range(a.shape[0]):
            tr._insert(self, rows, a[j, rows], v[j, rows])
            tr._inserting = True
            try:
                original(self, a[j:j + 1], v[j:j + 1], replicates)
            finally:
                tr._inserting = False
        return None

    return wrapped


def _vector_insert_wrapper(original):
    """:meth:`VectorTreeMechanism.insert(values, streams, mask)` of a tree reporting to the run's
    ledger: the node this insert completes covers the stream's records [n - 2^l, n) (l the lowest set
    bit of the new count n, Chan, Shi & Song 2011, Alg. 2), i.e. the record handed now plus the alive
    nodes below level l. The audit keeps its own exact node sums from the records the tree was
    handed (not from the tree's state) and hands the node's sum -- divided by the tree's per-entry
    weights for Laplace noise, the units in which its scale and sensitivity are declared -- to the
    noise draw that follows (:func:`_noise_wrapper`), which logs it as the release's statistic."""
    @functools.wraps(original)
    def wrapped(self, values, streams, mask=None, *args, **kwargs):
        tr = ReleaseTracer._active
        if tr is None or tr.ledger is None or getattr(self, "ledger", None) is not tr.ledger \
                or tr._vector_pending is not None:
            return original(self, values, streams, mask, *args, **kwargs)
        try:
            R, S, L, size = self.replicates, self.streams, self.levels, self.size
            v = np.asarray(values, dtype=float)
            st_all = np.asarray(streams)
            rows = np.arange(R) if mask is None else np.flatnonzero(np.asarray(mask, dtype=bool))
            st = st_all[rows].astype(np.int64)
            ok = v.shape == (R, size) and st_all.shape == (R,) and rows.size > 0 \
                and st.min() >= 0 and st.max() < S and np.isfinite(v[rows]).all()
        except (TypeError, ValueError, IndexError, AttributeError):
            ok = False
        if not ok:  # malformed input (the tree refuses it) or nothing inserted
            return original(self, values, streams, mask, *args, **kwargs)
        state = tr._vector_state.get(id(self))
        if state is None:
            state = tr._vector_state[id(self)] = (self, np.zeros((R, S, L, size)), np.zeros((R, S), np.int64),
                                                  np.zeros((R, S, L, size)), np.ones((R, S), dtype=bool))
        _, nodes, count, out_nodes, known = state
        n = count[rows, st] + 1
        low = n & -n
        level = np.bitwise_count(low - 1).astype(np.int64)
        if int(level.max()) >= L:  # past the horizon: the tree refuses it
            return original(self, values, streams, mask, *args, **kwargs)
        held = nodes[rows, st]  # (m, L, size)
        lower = np.arange(L)[None, :] < level[:, None]
        node = v[rows] + np.where(lower[:, :, None], held, 0.0).sum(axis=1)
        held[lower] = 0.0
        held[np.arange(rows.size), level] = node
        nodes[rows, st] = held
        count[rows, st] = n
        weights = np.asarray(getattr(self, "weights", 1.0), dtype=float)
        laplace = getattr(self, "noise", "") == "laplace"
        tr._vector_pending = node / weights if laplace else node
        tr._vector_released = None
        try:
            result = original(self, values, streams, mask, *args, **kwargs)
        finally:
            tr._vector_pending = None
        # The tree's output must be the sum of its alive nodes' releases (Chan, Shi & Song 2011: the
        # prefix sum is post-processing of the nodes): a value altered after the draw, stale or
        # dropped node noise, an output that reads the exact sums some other way, all break it.
        rel = tr._vector_released
        tr._vector_released = None
        held = out_nodes[rows, st]
        held[lower] = 0.0
        if rel is None or rel.shape != node.shape:
            known[rows, st] = False  # this node's noise was not traced: its output cannot be checked
        else:
            held[np.arange(rows.size), level] = rel * weights if laplace else rel
        out_nodes[rows, st] = held
        try:
            actual = np.asarray(self.noisy_sum(rows, st), dtype=float)
        except Exception:  # an output the audit cannot read is not compared here
            return result
        check = known[rows, st]
        if actual.shape == node.shape and check.any():
            expected = held.sum(axis=1)
            scale = np.abs(held).sum(axis=1) + np.abs(nodes[rows, st]).sum(axis=1) + 1.0
            diff = np.abs(actual - expected)
            bad = check[:, None] & ~(diff <= 1e-8 * scale)  # NaN counts as a difference
            if bad.any():
                i = int(np.flatnonzero(bad.any(axis=1))[0])
                tr.vector_mismatch.append((str(getattr(self, "name", "?")), int(rows[i]), int(st[i]), int(n[i]),
                                           float(np.nanmax(np.where(bad[i], diff[i], 0.0))),
                                           float(1e-8 * scale[i].max()), int(bad.any(axis=1).sum())))
        return result

    return wrapped


SUM_RTOL = 1e-9
"""How close (relative to the magnitudes summed) a replaying run's vector-tree prefix sum must be to the recorded
one to be returned as recorded; the tree's own rounding is ~1e-16 a term."""


def _vector_sum_wrapper(original):
    """:meth:`VectorTreeMechanism.noisy_sum` of a tree reporting to the run's ledger: the released prefix sums the
    policy reads. Logged in call order; a run replaying another returns, at its i-th call, the recorded run's i-th
    sums, bit for bit, when its own are equal to them within the rounding of the terms summed (``SUM_RTOL``), and
    its own otherwise. The tree keeps its sums incrementally (exact sum + noise sum, each updated per insert), so a
    run on D' whose node releases equal D's reaches D's sums only to ~1e-13: indices tied to that precision (round
    16's control ``joint_contexts_to_sphere``: contexts scaled to one sphere) then split differently on D and D', a
    false witness of the decisions check (session 14, lead). Sums that differ by more are not hidden: they are a
    real difference of the releases."""
    @functools.wraps(original)
    def wrapped(self, rows=None, streams=None):
        out = original(self, rows, streams)
        tr = ReleaseTracer._active
        if tr is None or tr.ledger is None or getattr(self, "ledger", None) is not tr.ledger:
            return out
        arr = np.asarray(out, dtype=float)
        sums = getattr(tr.draws, "sums", None)
        if sums is None:
            return out
        i = len(sums)
        sums.append(arr.copy())
        recorded = getattr(tr.replay, "sums", None)
        if tr.replay_broken or recorded is None or i >= len(recorded) or recorded[i].shape != arr.shape:
            return out
        if rows is None:
            terms = np.abs(self.exact_sum) + np.abs(self.noise_sum)
        else:
            terms = np.abs(self.exact_sum[rows, streams]) + np.abs(self.noise_sum[rows, streams])
        if np.all(np.abs(arr - recorded[i]) <= SUM_RTOL * (terms + np.abs(arr) + 1.0)):  # (NaN: as computed)
            return recorded[i].copy()
        return out

    return wrapped


_TARGETS = (
    (VectorTreeMechanism, "insert", _vector_insert_wrapper),
    (VectorTreeMechanism, "noisy_sum", _vector_sum_wrapper),
    (FreshBatchMean, "insert_pulled_rounds", _rounds_wrapper),
    (StreamMechanism, "insert", lambda f: _insert_wrapper(f, False)),
    (StreamMechanism, "insert_pulled", lambda f: _insert_wrapper(f, True)),
    (NoiseSampler, "_sum_release", lambda f: _sampler_wrapper(f, "laplace")),
    (NoiseSampler, "laplace_release", lambda f: _sampler_wrapper(f, "laplace")),
    (NoiseSampler, "gaussian_release", lambda f: _sampler_wrapper(f, "gaussian")),
    (NoiseSampler, "laplace", lambda f: _noise_wrapper(f, "laplace")),
    (NoiseSampler, "gaussian", lambda f: _noise_wrapper(f, "gaussian")),
    (GaussianPosteriorRelease, "release", _posterior_wrapper),
    (GaussianPosteriorRelease, "_standard_normals", _normals_wrapper),
    (Ledger, "_store", _store_wrapper),
    (Ledger, "_record_dense", _dense_wrapper),
)


def _subclasses(cls) -> list[type]:
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


def _install() -> dict:
    """Wrap every target, and every override of a draw entry point in a subclass (a mechanism that
    subclasses the sampler or the posterior and rewrites a release method is traced like the original)."""
    saved = {}
    for cls, name, make in _TARGETS:
        # the draw entry points guard against nesting (an override calling super() logs once); the
        # ledger's recording entry points do not, so only the Ledger class itself is wrapped
        for sub in (_subclasses(cls) if cls is not Ledger else [cls]):
            if name in sub.__dict__ and (sub, name) not in saved:
                original = sub.__dict__[name]
                saved[(sub, name)] = original
                setattr(sub, name, make(original))
    return saved


def _uninstall(saved: dict | None) -> None:
    for (cls, name), original in (saved or {}).items():
        setattr(cls, name, original)


def release_trace(run):
    """Black-box trace instrument (see :mod:`privbandit.audit.runner`): after every select, the values
    the policy decides from -- per (replicate, stream), the sum over the run's mechanisms of each one's
    latest released value (a counter's noisy nodes, a hybrid's logarithmic and binary parts, a batch
    mean, a posterior draw). Works for every policy whose mechanisms draw through the toolkit's
    sampler and report to a ledger; :func:`~privbandit.audit.runner.run_policy` gives the run a
    draw-count-only ledger when tracing so that every mechanism reports. Released values are kept
    only until the next collect."""
    ledger = getattr(run, "_audit_ledger", None)
    shape = (ledger.replicates, ledger.streams) if ledger is not None else None
    tracer = ReleaseTracer(None, any_ledger=True)
    tracer.__enter__()
    latest: dict = {}

    def collect(t):
        for r in tracer.reports:
            if r.draw < 0:
                continue
            d = tracer.draws[r.draw]
            vals = d.out[r.elems] if d.out is not None else None
            if vals is None:
                continue
            key = r.mechanism
            if key not in latest:
                latest[key] = np.zeros(shape)
            latest[key][r.rep, r.st] = vals
        for i in list(tracer._open):  # unreported whole-state draws (a posterior without a ledger)
            d = tracer.draws[i]
            if shape is not None and d.shape == shape and d.out is not None:
                latest[("draw", d.family)] = d.out.reshape(shape)
                tracer._open.remove(i)
        for d in tracer.draws:  # free the arrays: only the latest values are kept
            if d.out is not None and not tracer._open.count(d.index):
                d.stat = d.out = np.zeros(0)
        tracer.reports.clear()
        if not latest:
            return np.zeros((shape[0], shape[1])) if shape is not None else None
        return sum(latest.values())

    def close():
        tracer.__exit__(None, None, None)

    collect.close = close
    return collect


release_trace.description = "trace (every release)"
