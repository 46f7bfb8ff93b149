"""The per-record privacy ledger: which records each noise release touched, and what that cost.

Semantics (DESIGN.md, "Privacy semantics"). A *record* is one observed reward; it belongs to one
stream (an arm) of one replicate and is indexed by its 0-based insertion position in that stream.
Every release reports its *footprint*: the half-open range ``[lo, hi)`` of record positions its
value depends on (for cumulative-noise mechanisms, the increment the release adds). The privacy
loss of a record is the composition of exactly the releases whose footprint contains it (releases on
other streams cost it nothing: parallel composition); the realized spend of a transcript is that of
its *worst* record.

Cheap mode (default) keeps, per (replicate, stream), difference arrays over record positions of the
additive statistics of the releases:

* ``sum eps``              (Laplace releases; eps = sensitivity / scale),
* ``sum mu^2``             (Gaussian: (sensitivity/sigma)^2; Laplace: mu_from_pure_epsilon(eps)^2),
* ``sum eps^2`` and ``sum eps tanh(eps/2)`` (Laplace; for the heterogeneous composition bounds),
* the number of Gaussian releases (a record in a Gaussian release has no pure epsilon),
* ``sum rho``              (discrete-Gaussian releases, proven zCDP only).

A release on ``[lo, hi)`` adds at ``lo`` and subtracts at ``hi``; a record's totals are the cumulative
sums over positions. Each statistic has its own array, created when a release first touches it.
Releases are staged and folded in by one vectorised drain every 256 calls (``np.add.at``; draw
counts by ``bincount``; a long listed release, 1024 rows or more, is staged with its rows in tracked
replicates, its first ones as the mechanisms list replicates in order -- checked at the drain against
the draw counts, else the tracked rows are selected one by one -- so that a drain of many replicates
does not flatten the untracked ones; a long entry of every stream of every replicate in row-major
order, as DP-UCB's inserts of all arms make, is marked so when staged, and a drain adds one draw to every
stream for it and takes its first ``R_tracked * K`` rows, never reading the others; an entry listing one
stream of every replicate with the rows of :func:`pulled_layout`, as a round's pulled arms are reported,
is staged apart, and a drain takes the first ``R_tracked`` rows of all of them field by field, as whole
arrays, folding both forms in call order); worst-record
queries cost O(R_tracked K top) for the statistics in use, made only at checkpoints (``realized_epsilon`` O(R_tracked K m), m the positions some footprint
starts or ends at, when they are fewer than half of them: the other records repeat their predecessors'
totals; O(R_tracked K) for Gaussian releases whose footprints all start at record 0, as posterior
draws' do: the first records then hold the largest totals). Capacity doubles as streams grow (the
engine preallocates the horizon).

Memory guard: the difference arrays take at most ``R_tracked * K * (capacity + 1) * 6 * 8`` bytes (the
guard counts all six statistics, whichever are in use). When that
would exceed ``max_tracked_bytes``, only the first replicates that fit keep per-record tracking
(``tracked_replicates``); the ``realized_*`` queries return NaN for the others. ``draws`` is always
kept for every replicate. Growth happens when a footprint reaches past the capacity, so a long run may
drop replicates from tracking at that point (their earlier sums are discarded, never truncated
silently: they become NaN).

Rounds (the feedback contract's record model, docs/feedback.md). A record is one revealed (round,
arm) entry. Policies that insert several records in one round (side observations) tell the ledger
each record's round with :meth:`Ledger.note_rounds`; ``realized_epsilon(delta, relation="round")``
then composes, for each round, every release touching any record of that round (releases are per
stream and a round has at most one record per stream, so the per-record sums of the round's records
add up to exactly that composition). A record never noted is its own round, exact for bandit
feedback. The default ``relation="entry"`` is the per-record accounting above, at the same cost.

Tight mode (``tight=True``) additionally keeps every release (replicate, stream, footprint, kind,
scale, sensitivity, mechanism, node) so that the exact multiset of releases of the worst record can
be returned as an accountants ``Event`` (``worst_record_event``), composed with every accountant
(``best_epsilon``), exported to ``dp_accounting``, and searched for statistics released twice
(``redraws``). Tight mode is for audits and tests: its memory is O(number of releases) and its
queries are slower.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable

import numpy as np

from accountants import _validate
from accountants._validate import shown
from accountants import gdp_conversion
from accountants.best import best_epsilon
from accountants.events import (NO_EVENT, ZCDP, Composed, DiscreteLaplace, Event, Gaussian, Laplace,
                                SelfComposed)

_S_EPS, _S_MU2, _S_EPS2, _S_TANH, _S_GAUSS, _S_RHO = range(6)
_N_STATS = 6
# the largest per-release sensitivity / scale (an epsilon, or a GDP mu) the ledger records: the
# records' squares are summed in difference arrays, where past ~1e154 a square overflows and inf - inf
# would turn the realized spend into NaN (privbandit.policies.base.EPSILON_CEILING is the same 1e100)
_MAX_RATIO = 1e100
# Laplace: pure eps; Gaussian: GDP mu; zCDP: discrete-Gaussian releases, proven only for the
# Gaussian's RDP/zCDP curve (rho = (sensitivity / sigma)^2 / 2), never certified through GDP.
# discrete Laplace (floating-point-safe mode): the same pure eps, its own RDP/PLD curves in tight mode
_KIND_LAPLACE, _KIND_GAUSSIAN, _KIND_ZCDP, _KIND_DLAPLACE = 0, 1, 2, 3
_GRID = 2.0 ** -20  # privbandit.mechanisms.sampling.GRID (not imported: the mechanisms import the ledger)
_STAGE_ROUNDS = 256
# Listed releases of at least this many rows carry their tracked rows (a "head") when staged: below it,
# slicing per call costs more than selecting the tracked rows of a whole drain at once.
_HEAD_MIN_ROWS = 1024
# Pulled entries (one row per replicate) longer than this have their tracked rows sliced entry by entry
# at a drain; shorter ones are concatenated whole and sliced once (measured break-even ~100-150 rows).
_SLICE_MIN_ROWS = 128
# Per-record totals are kept between realized-spend queries (see Ledger._kept_totals) once a query sums
# at least this many positions per stream: below it a stream's few numpy calls cost more than summing
# every stream at once.
_KEEP_MIN_TOP = 512
# ... and while the kept totals of the statistics in use would take at most this many bytes (they hold
# as many values as the difference arrays' written positions, so they at most double the ledger's memory).
_KEEP_MAX_BYTES = 64 * 2 ** 20
_FAR = np.iinfo(np.int64).max  # "no position written" in the per-stream lowest-write marks
# the statistics each kind of release adds to (see _leaf_stats); the others stay zero
_KIND_STATS = {_KIND_LAPLACE: (_S_EPS, _S_MU2, _S_EPS2, _S_TANH), _KIND_GAUSSIAN: (_S_MU2, _S_GAUSS),
               _KIND_ZCDP: (_S_RHO, _S_GAUSS), _KIND_DLAPLACE: (_S_EPS, _S_MU2, _S_EPS2, _S_TANH)}


def _leaf(kind: int, p: float, s: float) -> Event:
    """The accountants event of one recorded release."""
    if kind == _KIND_LAPLACE:
        return Laplace(p, s)
    if kind == _KIND_GAUSSIAN:
        return Gaussian(p, s)
    if kind == _KIND_DLAPLACE:
        return DiscreteLaplace(p, s, grid=_GRID)
    return ZCDP((s / p) ** 2 / 2.0)


def _is_vector(v) -> bool:
    """A staged field given per release (an array of the entry's length), not one value for all of
    them (a Python or numpy scalar, or a 0-d array). Staged arrays are plain ndarrays."""
    return type(v) is np.ndarray and v.ndim > 0


def _flatten(values: tuple, rows: tuple, dtype) -> np.ndarray:
    """Concatenate staged fields, each an array of its entry's length (``rows[i].size``) or a scalar
    for all of it. Arrays are cast as ``np.asarray(v, dtype)`` would (unsafe casting), inside the one
    concatenation. A drain flattens hundreds of entries: the common case, arrays only, is told by
    the set of their types (one C-level pass) before any per-entry Python."""
    if set(map(type, values)) == {np.ndarray}:
        try:
            return np.concatenate(values, dtype=dtype, casting="unsafe")
        except ValueError:  # 0-d arrays among them (one value for their entry): the general path
            pass
    if np.ndarray not in set(map(type, values)) and values.count(values[0]) == len(values):
        # one value for every release (a mechanism's scale, sensitivity 1), most often the very same
        # object, which list.count matches by identity before comparing
        return np.full(sum([r.size for r in rows]), values[0], dtype=dtype)
    lengths = [r.size for r in rows]
    vector = [_is_vector(v) for v in values]
    if not any(vector):
        return np.repeat(np.asarray(values, dtype=dtype), lengths)
    return np.concatenate([v if is_vector else np.full(n, v, dtype=dtype)
                           for v, n, is_vector in zip(values, lengths, vector)], dtype=dtype, casting="unsafe")


def _flatten_at(values: tuple, rows: tuple, dtype, at: np.ndarray) -> np.ndarray:
    """``_flatten(values, rows, dtype)[at]``, without building the whole array when every field is
    a scalar (``at``: sorted positions into the concatenation)."""
    if np.ndarray not in set(map(type, values)):  # scalars only (Python or numpy)
        # one value for every release (the common case: a mechanism's scale, sensitivity 1), most
        # often the very same object, which list.count matches by identity before comparing
        if values.count(values[0]) == len(values):
            return np.full(at.size, values[0], dtype=dtype)
        ends = np.cumsum([r.size for r in rows])
        return np.asarray(values, dtype=dtype)[np.searchsorted(ends, at, side="right")]
    return _flatten(values, rows, dtype)[at]


_DTYPE_OF = operator.attrgetter("dtype")


def _joined(arrays: tuple, dtype) -> np.ndarray:
    """``np.concatenate(arrays, dtype=dtype, casting="unsafe")`` of arrays of one or more dimensions (never
    0-d: a caller checks), flattened, as a fresh writable array. Where every array already has ``dtype``
    and is C-contiguous -- a drain's staged rows and footprints, which the mechanisms build that way --
    their bytes are joined in one copy: the same elements in the same order, with less cost per array
    than concatenate's (one replicate's drain joins ``_STAGE_ROUNDS`` one-element arrays three times:
    256 of them took 23.8 against 32.2 us, and 256 rows of 100 took 38.5 against 67.3 us, thread CPU,
    minimum of 40 alternations at load ~12, session 17). Otherwise (another dtype, a strided view)
    numpy's concatenate casts them as before."""
    dtype = np.dtype(dtype)
    if set(map(_DTYPE_OF, arrays)) == {dtype}:
        try:  # a strided array exports no flat buffer (TypeError from the join): concatenate copies it
            return np.frombuffer(bytearray().join(arrays), dtype=dtype)
        except (TypeError, BufferError, ValueError):
            pass
    return np.concatenate(arrays, dtype=dtype, casting="unsafe").reshape(-1)


def _leading_rows(values: tuple, length: int, n: int, dtype) -> np.ndarray:
    """``_flatten`` of the first ``n`` rows of staged fields of entries of ``length`` rows each (an
    array of that length, or a scalar for all of it): short entries' arrays concatenated and sliced
    at once, long ones' sliced one by one (copying every row of many replicates to keep a few costs
    more than a slice per entry)."""
    types = set(map(type, values))
    if np.ndarray not in types:  # one value per entry (a scale, sensitivity 1): no per-entry Python
        if values.count(values[0]) == len(values):  # (list.count matches the same object by identity first)
            return np.full(len(values) * n, values[0], dtype=dtype)
        return np.repeat(np.asarray(values, dtype=dtype), n)
    if length <= _SLICE_MIN_ROWS and types == {np.ndarray} and all([v.ndim for v in values]):
        return _joined(values, dtype).reshape(len(values), length)[:, :n].reshape(-1)
    vector = [type(v) is np.ndarray and v.ndim > 0 for v in values]
    if all(vector):
        return np.concatenate([v[:n] for v in values], dtype=dtype, casting="unsafe")
    # arrays for some entries, one value for others (DP-UCB-Bound's scales: one per block, an array
    # when the replicates' blocks differ): each kind gathered at once into its rows
    arrays = [i for i, is_vector in enumerate(vector) if is_vector]
    ones = [i for i, is_vector in enumerate(vector) if not is_vector]
    out = np.empty((len(values), n), dtype=dtype)
    out[arrays] = (np.concatenate([values[i] for i in arrays], dtype=dtype, casting="unsafe").reshape(-1, length)[:, :n]
                   if length <= _SLICE_MIN_ROWS else
                   np.concatenate([values[i][:n] for i in arrays], dtype=dtype, casting="unsafe").reshape(-1, n))
    out[ones] = np.asarray([values[i] for i in ones], dtype=dtype)[:, None]
    return out.reshape(-1)


def _first_rows(fields: tuple, m: int) -> tuple:
    """The first ``m`` rows of a staged entry's fields (rep, st, lo, hi, param, sens): arrays sliced
    (views), scalars as they are. Spelled out field by field (rep and st are always 1-D arrays): a
    drain takes the heads of hundreds of entries, and a generator costs a frame per field."""
    rep, st, lo, hi, p, s = fields
    return (rep[:m], st[:m], lo[:m] if type(lo) is np.ndarray and lo.ndim else lo,
            hi[:m] if type(hi) is np.ndarray and hi.ndim else hi, p[:m] if type(p) is np.ndarray and p.ndim else p,
            s[:m] if type(s) is np.ndarray and s.ndim else s)


@functools.lru_cache(maxsize=8)
def _grid_layout(replicates: int, streams: int) -> tuple:
    """Read-only (rows, cols) of every stream in row-major order (``np.nonzero`` of an all-True
    (R, K) mask, as the mechanisms list an insert of every stream)."""
    return tuple(_immutable(a) for a in np.nonzero(np.ones((replicates, streams), dtype=bool)))


def _immutable(a: np.ndarray) -> np.ndarray:
    """``a``'s values in an array no one can write: numpy lets any caller set an owning array's
    writeable flag back to True (``setflags(write=True)``), and these layouts are shared by every
    ledger of the process -- zeroing the grid's rows made one replicate's realized epsilon 4.0 and
    the others' 0.0 (DP-UCB, 4 replicates, certificate 1.0). An array over a ``bytes`` buffer cannot
    be made writeable. (One copy when a layout is first built; cached.)"""
    return np.frombuffer(np.ascontiguousarray(a).tobytes(), dtype=a.dtype).reshape(a.shape)


class _Layout:
    """A known layout of a staged entry's rows, in place of its head (a module-level singleton:
    pickled by name, so an unpickled entry holds the very same object)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


_LAYOUT_GRID = _Layout("_LAYOUT_GRID")
"""The head of a staged entry listing every stream of every replicate once, in row-major order."""
# Whether staged entries are marked by their layout (tests switch it off for the reference path).
_KNOWN_LAYOUTS = True


def grid_layout(replicates: int, streams: int) -> tuple[np.ndarray, np.ndarray]:
    """The read-only (rows, cols) listing every stream of every replicate once, in row-major order
    (``np.nonzero`` of an all-True (R, K) mask). A mechanism inserting into every stream passes these
    very arrays as its releases' rows and columns: staged uncopied (nobody can write them), and
    recognised as the grid by identity, at no cost per call (see :meth:`Ledger._store`)."""
    return _grid_layout(replicates, streams)


_LAYOUT_PULLED = _Layout("_LAYOUT_PULLED")
"""The head of an entry of the pulled layout as ledgers pickled before session 12 staged it (one
stream of every replicate, replicate r in row r): such entries are moved to the pulled entries,
staged apart, on unpickling (:meth:`Ledger.__setstate__`); entries are no longer staged with it."""


@functools.lru_cache(maxsize=8)
def _pulled_layout(replicates: int) -> np.ndarray:
    return _immutable(np.arange(replicates, dtype=np.intp))


def pulled_layout(replicates: int) -> np.ndarray:
    """The read-only rows 0..R-1 of a release entry with one row per replicate, in order (one stream
    of each replicate: a round's pulled arms). A mechanism or policy reporting such entries passes
    this very array as their replicates: staged uncopied and recognised by identity, so that a drain
    takes each entry's tracked rows as its first ones without selecting them row by row (see
    :meth:`Ledger._store`)."""
    return _pulled_layout(replicates)


def _is_grid(rep: np.ndarray, st: np.ndarray, replicates: int, streams: int) -> bool:
    """Whether (rep, st) list every stream of every replicate once, in row-major order."""
    rows, cols = _grid_layout(replicates, streams)
    return rep.shape == rows.shape and st.shape == cols.shape and bool((st == cols).all()) and bool((rep == rows).all())


def _grid_heads(sparse: list[tuple], replicates: int, streams: int, n: int) -> list:
    """Each entry's head (its fields restricted to its rows in the first ``n`` replicates, in order):
    the stored head, or, for an entry marked ``_LAYOUT_GRID``, its first ``n * K`` rows (the
    replicate and stream columns those of the grid)."""
    rows, cols = _grid_layout(replicates, streams)
    m = n * streams
    g_rows, g_cols = rows[:m], cols[:m]
    heads = []
    for entry in sparse:
        _, _, _, lo, hi, p, s, head = entry
        if head is not _LAYOUT_GRID:
            heads.append(head)
            continue
        if type(lo) is np.ndarray and lo.ndim:
            lo = lo[:m]
        if type(hi) is np.ndarray and hi.ndim:
            hi = hi[:m]
        if type(p) is np.ndarray and p.ndim:
            p = p[:m]
        if type(s) is np.ndarray and s.ndim:
            s = s[:m]
        heads.append((g_rows, g_cols, lo, hi, p, s))
    return heads


@functools.lru_cache(maxsize=4096)
def _gdp_epsilon(mu: float, delta: float) -> float:
    """gdp_conversion.epsilon_for_delta, memoised: a deterministic function of (mu, delta), and the
    worst records of different replicates and checkpoints often share their mu (the same release
    structure), so realized-epsilon queries repeat it (each evaluation is a root search, ~1 ms)."""
    return gdp_conversion.epsilon_for_delta(mu, delta)


def _closed_form_accountants():
    from accountants.gdp import GDPAccountant
    from accountants.kov import KOVHeterogeneousAccountant
    from accountants.pure import PureAccountant

    return [PureAccountant, KOVHeterogeneousAccountant, GDPAccountant]


CLOSED_FORM_ACCOUNTANTS = _closed_form_accountants()
"""The accountants the cheap ledger's per-record figures correspond to (pure, KOV, GDP)."""

REALIZED_ROUND_UP = 1e-12
"""Relative upward rounding of the per-record closed forms (the difference arrays' summation); the
certificate in the same currency is rounded up by it too (engine, deployment status), so a record
spending exactly the schedule never reads above it (session 13)."""


_whole = _validate.whole  # (one shared check of a whole-number parameter)


class Ledger:
    """Per-record accounting of every noise release, vectorised over (replicates, streams).

    Parameters
    ----------
    replicates, streams:
        Shape (R, K) of the simulation; every record belongs to one (replicate, stream).
    tight:
        Keep the full list of releases (exact per-record event multisets, re-draw detection).
    max_tracked_bytes:
        Memory guard for the per-record difference arrays (see the module docstring).
    track_replicates:
        At most this many (the first) replicates keep per-record tracking (default: all that fit
        the memory guard). Recording costs time in proportion to the tracked streams, and the
        certificate is data-independent, so a simulation needs only a few tracked replicates to
        report realized spend; ``draws`` is always kept for every replicate.
    capacity:
        Record positions per stream to allocate at once (default 64; the arrays double as streams
        grow past it). The memory guard applies to it as to any growth.
    """

    # False only for the ledgers of runs without one (:meth:`unrecorded`). A class attribute, so that
    # a recording ledger's pickled state is what it was before the flag existed (deployments compare
    # snapshot digests, privbandit.deploy).
    _recording = True

    @classmethod
    def unrecorded(cls, replicates: int, streams: int) -> "Ledger":
        """What a mechanism reports to in a run without a ledger (``simulate(ledger=False)``,
        ``policy.start(..., ledger=None)``): every report is accepted and dropped -- nothing is
        staged, counted or summed -- so "ledger off" costs only the calls (docs/engine.md, "Ledger
        off"). The run's certificate never needs the ledger: it is the policy's static schedule.
        The reports still pass through :meth:`_store` / :meth:`_record_dense`, where the audit's
        tracer sees them (privbandit.audit.tracing). Its queries (``draws``, ``realized_*``, ...)
        raise a ValueError: it has nothing to answer from."""
        book = cls(replicates, streams, track_replicates=0, capacity=1)
        book._recording = False
        return book

    def __init__(self, replicates: int, streams: int, *, tight: bool = False,
                 max_tracked_bytes: int = 256 * 2 ** 20, track_replicates: int | None = None,
                 capacity: int = 64) -> None:
        self.replicates = _whole("replicates", replicates, 1)
        self.streams = _whole("streams", streams, 1)
        if not isinstance(tight, (bool, np.bool_)):
            raise ValueError(f"tight must be True or False, got {shown(tight)}")
        self.tight = bool(tight)
        self.max_tracked_bytes = _whole("max_tracked_bytes", max_tracked_bytes, 0)
        _validate.check_bytes(f"a ledger of replicates x streams = {self.replicates} x {self.streams}",
                              8 * self.replicates * self.streams, "bring replicates or streams down")
        self._draws = np.zeros((self.replicates, self.streams), dtype=np.int64)
        self._rows = _pulled_layout(self.replicates)  # (not pickled: the shared read-only array, see _store)
        # Initial record positions per stream. A caller that knows the most records a stream can
        # hold (the engine: the horizon) passes it: the zeroed arrays cost nothing until written,
        # and no growth copies them later.
        self._capacity = _whole("capacity", capacity, 1)
        self._top = 0  # highest footprint end folded in: every record at or above it has zero totals
        # Whether every footprint folded in starts at record 0 (prefix releases, e.g. posterior draws):
        # then position 0 of a difference array only ever gains and later positions only lose, so
        # each stream's first record has the largest totals, bit for bit (see realized_epsilon).
        self._from_zero = True
        limit = self.replicates if track_replicates is None else min(
            self.replicates, _whole("track_replicates", track_replicates, 0))
        self._n_tracked = self._fit(self._capacity, limit)
        # One difference array per statistic, (replicate, stream, position): stream-major, so that a
        # stream's records are contiguous -- a query's per-record sums run along memory, and a drain's
        # additions for one stream (its new records, and the nodes reaching back a few records) land
        # on a few cache lines of that stream (session 11; the (position, replicate, stream) layout of
        # sessions 1-10 is migrated on unpickling, see __setstate__). Allocated when a release first
        # touches that statistic: a Gaussian-only run writes two of the six.
        self._diff: dict[int, np.ndarray] = {}
        self._stream_major = True  # pickled: a ledger pickled without it holds the old layout
        # The positions some folded-in footprint starts or ends at (capacity + 1,): at every other
        # position every difference array is exactly +0.0, so each record there has the totals of
        # the record before it, and a worst-record query need only evaluate the marked positions
        # (an interval mechanism releases at a few counts: ~100 of 20000 positions).
        self._marked = np.zeros(self._capacity + 1, dtype=bool)
        # Releases wait in these lists and are folded into the difference arrays by one vectorised
        # scatter every _STAGE_ROUNDS calls, before growth of tracking and before any query: a call
        # then costs a few array copies instead of a dozen small numpy operations.
        self._staged: list[tuple] = []  # dense calls: (kind, mask, lo, hi, param, sens), (R_t, K) each
        # listed releases, every replicate's (the draw counts are derived from them at the drain)
        # (kind, rep, st, lo, hi, param, sens, head): rep/st 1-D, others 1-D or scalar; ``head`` the
        # same six fields for the entry's rows in tracked replicates only (None: not kept, see
        # _head_of), so a drain folds in the tracked releases without flattening every replicate's
        self._sparse: list[tuple] = []
        # Listed releases of the pulled layout (one row per replicate, replicate r in row r: a round's
        # pulled arms, see pulled_layout) are staged apart, in the order of the calls, as
        # (kind, position, st, lo, hi, param, sens): ``position`` how many entries of _sparse were staged
        # before it (a drain folds both forms in call order, so every position of the difference
        # arrays takes its additions in the order of the row-by-row path, bit for bit). A drain takes
        # their tracked rows, every entry's first ones, field by field as whole arrays (see
        # _drain_sparse), with no per-entry Python between the two forms (session 12).
        self._pulled: list[tuple] = []
        self._prefix: list[_PrefixRecorder] = []  # recorders of every-stream prefix releases
        self._mech_ids: dict[str, int] = {}
        self._chunks: list[dict[str, np.ndarray]] = []
        self._mu_cache: dict[float, float] = {}
        # Round of each tracked record, (capacity, R_tracked, K) int32, 0 = never noted; created by
        # the first note_rounds (zeroed, so only the pages written cost memory; tight mode also keeps
        # every noted record in _round_chunks).
        self._rounds: np.ndarray | None = None
        self._round_chunks: list[np.ndarray] = []
        self._unkept()
        self._columns_cache: dict[float, tuple[float, float]] = {}  # see _distinct_columns; not pickled
        # Per tracked stream (cell r * K + k): one past the highest position any release wrote its
        # difference at (0: none), so that kept totals are summed only where a stream has records in
        # releases; None when unknown (an unpickled ledger: the query then sums up to top).
        self._end: np.ndarray | None = np.zeros(self._n_tracked * self.streams, dtype=np.int64)

    def _unkept(self) -> None:
        """Drop the per-record totals kept between queries (see :meth:`_kept_totals`): derived
        state, rebuilt by the next query, never pickled."""
        # statistic -> (R_tracked * K, capacity) per-record totals, each stream's a contiguous row
        self._kept: dict[int, np.ndarray] = {}
        # statistic -> (R_tracked * K,) how many leading positions of each stream's row are current
        self._kept_ok: dict[int, np.ndarray] = {}
        # (R_tracked * K,) the lowest position written since the kept rows were last brought up to
        # date (_FAR: none); None while nothing is kept (then there is nothing to invalidate)
        self._low: np.ndarray | None = None

    def __getstate__(self) -> dict:
        # the kept totals and the per-stream marks are derived from the difference arrays (a query
        # rebuilds them): a pickled ledger stays a function of its releases alone, as before they
        # existed (deployments compare snapshot digests, privbandit.deploy)
        state = dict(self.__dict__)
        for key in ("_kept", "_kept_ok", "_low", "_end", "_columns_cache", "_rows"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._rows = _pulled_layout(self.replicates)
        self._unkept()
        self._end = None  # (not pickled) unknown: queries sum every stream up to top
        self._columns_cache = {}
        # Unpickled arrays carry an equal but distinct dtype object, which sends np.add.at down
        # numpy's generic path (measured ~30x slower on the difference arrays): views with the
        # canonical float64 dtype hold the same values, bit for bit.
        self._diff = {stat: diff.view(np.float64) for stat, diff in self._diff.items()}
        if not state.get("_stream_major", False):
            # pickled before session 11 (deployment snapshots among them): the difference arrays were
            # (position, replicate, stream); the same values, moved to (replicate, stream, position)
            self._diff = {stat: np.array(np.moveaxis(diff, 0, 2), order="C") for stat, diff in self._diff.items()}
            self._stream_major = True
        if any(len(entry) == 7 for entry in self._sparse):  # staged before entries carried their head
            self._sparse = [entry if len(entry) == 8 else (*entry, self._head_of(*entry[1:], exact=True))
                            for entry in self._sparse]
        if "_pulled" not in state:  # pickled before session 12: pulled entries were staged among the others
            sparse, self._sparse, self._pulled = self._sparse, [], []
            for entry in sparse:
                if entry[7] is _LAYOUT_PULLED:
                    self._pulled.append((entry[0], len(self._sparse), *entry[2:7]))
                else:
                    self._sparse.append(entry)
        if "_from_zero" not in state:  # pickled before it was kept: assume footprints start anywhere
            self._from_zero = False
        if "_marked" not in state:  # pickled before positions were marked: every nonzero difference
            marked = np.zeros(self._capacity + 1, dtype=bool)
            for diff in self._diff.values():
                marked |= (diff != 0).reshape(-1, diff.shape[-1]).any(axis=0)
            self._marked = marked

    # --- bookkeeping --------------------------------------------------------------------------
    @property
    def draws(self) -> np.ndarray:
        """(R, K) number of releases per (replicate, stream), kept for every replicate (a read-only
        view: ``ledger.draws[:] = 0`` wrote into the counts a deployment logs and reports)."""
        self._settle()
        view = self._draws.view()
        view.flags.writeable = False
        return view

    def _fit(self, capacity: int, at_most: int) -> int:
        per_rep = self.streams * (capacity + 1) * _N_STATS * 8
        return int(min(at_most, self.max_tracked_bytes // per_rep))

    @property
    def tracked_replicates(self) -> np.ndarray:
        """Indices of the replicates with per-record tracking (always the first ones)."""
        self._settle()
        return np.arange(self._n_tracked)

    @property
    def capacity(self) -> int:
        """Number of record positions currently covered by the difference arrays."""
        self._settle()
        return self._capacity

    def _grow(self, needed: int) -> None:
        cap = self._capacity
        while cap < needed:
            cap *= 2
        n_tracked = self._fit(cap, self._n_tracked)
        for stat, old in self._diff.items():
            new = np.zeros((n_tracked, self.streams, cap + 1))
            # positions 0..capacity (the old terminal slot holds subtractions at hi == capacity)
            new[:, :, : self._capacity + 1] = old[:n_tracked]
            self._diff[stat] = new
        marked = np.zeros(cap + 1, dtype=bool)
        marked[: self._capacity + 1] = self._marked
        self._marked = marked
        if self._rounds is not None:
            tags = np.zeros((cap, n_tracked, self.streams), dtype=np.int32)
            tags[: self._capacity] = self._rounds[:, :n_tracked]
            self._rounds = tags
        self._unkept()  # rows of the old capacity (rebuilt by the next query)
        if self._end is not None:  # the first cells are the first replicates' streams: kept as they are
            self._end = self._end[: n_tracked * self.streams]
        self._capacity = cap
        self._n_tracked = n_tracked

    def _validate(self, replicate, stream, lo, hi, param, sensitivity, param_name, mechanism, node):
        if not isinstance(mechanism, str) or not mechanism:
            raise ValueError(f"mechanism must be a non-empty string, got {shown(mechanism)}")
        arrays = [np.asarray(a) for a in (replicate, stream, lo, hi, param, sensitivity)]
        if node is not None:
            arrays.append(np.asarray(node))
        if any(a.ndim > 1 for a in arrays):
            raise ValueError("replicate, stream, lo, hi, scale/sigma, sensitivity and node must be 1-D or scalars")
        try:
            arrays = np.broadcast_arrays(*[np.atleast_1d(a) for a in arrays])
        except ValueError as exc:
            raise ValueError(f"release arrays must have equal length (or be scalars): {exc}") from None
        rep, st, lo_, hi_ = (np.asarray(a) for a in arrays[:4])
        names = ("replicate", "stream", "lo", "hi") + (("node",) if node is not None else ())
        int_arrays = [rep, st, lo_, hi_] + ([arrays[6]] if node is not None else [])
        for name, a in zip(names, int_arrays):
            if a.size and not np.issubdtype(a.dtype, np.integer):
                raise ValueError(f"{name} must be an integer array, got dtype {a.dtype}")
        rep, st, lo_, hi_ = (a.astype(np.int64) for a in (rep, st, lo_, hi_))
        nd = arrays[6].astype(np.int64) if node is not None else np.full(rep.shape, -1, dtype=np.int64)
        p = np.asarray(arrays[4], dtype=float)
        s = np.asarray(arrays[5], dtype=float)
        if rep.size:
            if rep.min() < 0 or rep.max() >= self.replicates:
                raise ValueError(f"replicate must lie in [0, {self.replicates}), got range "
                                 f"[{rep.min()}, {rep.max()}]")
            if st.min() < 0 or st.max() >= self.streams:
                raise ValueError(f"stream must lie in [0, {self.streams}), got range [{st.min()}, {st.max()}]")
            if lo_.min() < 0:
                raise ValueError(f"lo must lie in [0, inf), got {lo_.min()}")
            if np.any(hi_ < lo_):
                raise ValueError("hi must lie in [lo, inf) for every release (footprint [lo, hi))")
            if np.any(~(p > 0)) or np.any(~np.isfinite(p)):
                raise ValueError(f"{param_name} must lie in (0, inf) elementwise")
            if np.any(~(s > 0)) or np.any(~np.isfinite(s)):
                raise ValueError("sensitivity must lie in (0, inf) elementwise")
            if np.any(s > p * _MAX_RATIO):  # its square, summed over records, would overflow to inf - inf
                raise ValueError(f"sensitivity / {param_name} must be at most {_MAX_RATIO:g} elementwise "
                                 f"(a per-release epsilon or mu whose square the ledger can sum)")
        return rep, st, lo_, hi_, p, s, nd

    def _record(self, kind, replicate, stream, lo, hi, param, sensitivity, mechanism, node, param_name):
        rep, st, lo_, hi_, p, s, nd = self._validate(replicate, stream, lo, hi, param, sensitivity,
                                                     param_name, mechanism, node)
        self._store(kind, rep, st, lo_, hi_, p, s, mechanism, nd)

    def _leaf_stats(self, kind: int, p: np.ndarray, s: np.ndarray) -> np.ndarray:
        """(n, _N_STATS) statistics of n releases (``_leaf_columns`` as one array, zeros elsewhere)."""
        vals = np.zeros((p.size, _N_STATS))
        for stat, column in self._leaf_columns(kind, p, s).items():
            vals[:, stat] = column
        return vals

    def _leaf_columns(self, kind: int, p: np.ndarray, s: np.ndarray, count: int | None = None) -> dict:
        """The statistics of n releases (``p``, ``s``: (n,) arrays) that their kind adds to
        (_KIND_STATS), each a contiguous (n,) array -- or one Python float for all of them, when
        every release has the same epsilon (the common case: one scale per call): ``np.add.at``
        adds that float at each index exactly as it would add an array of copies, and a scalar
        skips building and gathering the array (a strided column costs add.at ~4x a contiguous one).
        ``count``: the releases ``p`` and ``s`` stand for (default their size; more when each value is
        repeated over several releases, see :meth:`_scatter`): the choices below are made on it, so
        every release gets the values it would get listed one by one."""
        if kind in (_KIND_LAPLACE, _KIND_DLAPLACE):
            eps = s / p
            n = eps.size if count is None else count
            if n > 1 and eps.min() == eps.max():  # the common case: one scale per call
                e = float(eps[0])
                mu = self._mu_cache.get(e)
                if mu is None:
                    if len(self._mu_cache) > 4096:  # e.g. interval releases: one eps per count
                        self._mu_cache.clear()
                    mu = self._mu_cache.setdefault(e, float(gdp_conversion.mu_from_pure_epsilon(e)))
                return {_S_EPS: e, _S_MU2: mu * mu, _S_EPS2: e * e, _S_TANH: e * math.tanh(e / 2.0)}
            # A drain holds releases of a few scales (one per call, a few per mechanism): the
            # conversions are evaluated on the distinct epsilons and gathered. They are elementwise
            # (numpy's and scipy's loops give each element the same bits wherever it sits in the
            # array: tests/privbandit/test_ledger_paths.py), so every release gets the same values.
            # (the inverse by bisection: np.unique's own return_inverse costs ~5x the sort here)
            u = np.unique(eps)
            if 4 * u.size > n:  # mostly distinct: the gather would cost more than it saves
                mu2, tanh = np.asarray(gdp_conversion.mu_from_pure_epsilon(eps)) ** 2, eps * np.tanh(eps / 2.0)
            else:
                inverse = np.searchsorted(u, eps)
                mu2, tanh = self._distinct_columns(u)
                mu2, tanh = mu2[inverse], tanh[inverse]
            return {_S_EPS: eps, _S_MU2: mu2, _S_EPS2: eps ** 2, _S_TANH: tanh}
        if kind == _KIND_GAUSSIAN:
            return {_S_MU2: (s / p) ** 2, _S_GAUSS: 1.0}
        # zCDP: no pure epsilon and no GDP mu, only rho
        return {_S_RHO: (s / p) ** 2 / 2.0, _S_GAUSS: 1.0}

    def _distinct_columns(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mu^2, eps tanh(eps/2)) of the distinct epsilons ``u`` as :meth:`_leaf_columns` evaluates
        them on arrays, each epsilon's pair evaluated once per ledger and kept: a run's drains
        see the same few epsilons again and again (DP-UCB-Bound: one scale per block), and the GDP
        conversion's special functions cost ~0.1-0.2 ms a drain. The functions are elementwise, so
        a pair evaluated among other epsilons has the bits it has here (the test of
        _leaf_columns' gather)."""
        cache = self._columns_cache
        keys = u.tolist()
        missing = [x for x in keys if x not in cache]
        if missing:
            if len(cache) + len(missing) > 4096:  # e.g. interval releases: one eps per count
                cache.clear()
                missing = keys
            m = np.array(missing)
            mu2, tanh = np.asarray(gdp_conversion.mu_from_pure_epsilon(m)) ** 2, m * np.tanh(m / 2.0)
            cache.update(zip(missing, zip(mu2.tolist(), tanh.tolist())))
        mu2, tanh = np.array([cache[x] for x in keys]).T
        return mu2, tanh

    def _store(self, kind, rep, st, lo_, hi_, p, s, mechanism, nd, *, fresh: bool = False) -> None:
        """Record validated releases: ``rep``, ``st`` 1-D int arrays; ``lo_``, ``hi_``, ``p``, ``s``
        arrays of that length or scalars (``nd`` likewise, used in tight mode only). ``fresh``: the
        caller never touches these arrays again, so they are staged as they are, uncopied."""
        if rep.size == 0 or not self._recording:
            return
        if self.tight:
            m = rep.size
            mech = self._mech_ids.setdefault(mechanism, len(self._mech_ids))

            def column(x, dtype):
                return np.array(np.broadcast_to(np.asarray(x, dtype=dtype), (m,)))

            self._chunks.append(dict(rep=np.array(rep, dtype=np.int64), st=np.array(st, dtype=np.int64),
                                     lo=column(lo_, np.int64), hi=column(hi_, np.int64),
                                     kind=np.full(m, kind, np.int8), param=column(p, float),
                                     sens=column(s, float), mech=np.full(m, mech, np.int32),
                                     node=column(nd, np.int64)))

        # The caller may reuse its arrays: copy now, fold in at the next drain. "Fresh" arrays are
        # staged as they are, except views (a slice of some state array would change under us):
        # an array whose ``base`` is None owns its memory. The test is spelled out field by field
        # for the mechanisms' path (fresh arrays and scalars), which runs once per release call.
        # (the layout is looked up only for a read-only entry of every stream: building it for a
        # ledger whose entries never cover the grid would allocate R * K rows for nothing)
        if rep is self._rows and not rep.flags.writeable and _KNOWN_LAYOUTS and st.shape == rep.shape:
            # the pulled layout's own read-only rows (one row per replicate, in order; see
            # pulled_layout): staged apart, the other fields as for fresh arrays
            if not (fresh and st.base is None and (not isinstance(lo_, np.ndarray) or lo_.base is None)
                    and (not isinstance(hi_, np.ndarray) or hi_.base is None)
                    and (not isinstance(p, np.ndarray) or p.base is None)
                    and (not isinstance(s, np.ndarray) or s.base is None)):  # (spelled out: once per release call)
                st, lo_, hi_, p, s = (np.array(x) if isinstance(x, np.ndarray) and x.ndim and not (fresh and x.base is None)
                                      else x for x in (st, lo_, hi_, p, s))
            self._pulled.append((kind, len(self._sparse), st, lo_, hi_, p, s))
        elif (not rep.flags.writeable and rep.size == self._draws.size and _KNOWN_LAYOUTS
                and rep is _grid_layout(self.replicates, self.streams)[0]
                and st is _grid_layout(self.replicates, self.streams)[1]):
            # the grid layout's own read-only arrays (a mechanism's insert of every stream, see
            # grid_layout): marked by identity whatever the size (below _HEAD_MIN_ROWS a value check
            # would cost more than it saves; identity costs nothing), the fields as for fresh arrays
            fields = [np.array(x) if isinstance(x, np.ndarray) and x.ndim and not (fresh and x.base is None) else x
                      for x in (lo_, hi_, p, s)]
            self._sparse.append((kind, rep, st, *fields, _LAYOUT_GRID))
        elif (fresh and rep.base is None and st.base is None
                and (not isinstance(lo_, np.ndarray) or lo_.base is None)
                and (not isinstance(hi_, np.ndarray) or hi_.base is None)
                and (not isinstance(p, np.ndarray) or p.base is None)
                and (not isinstance(s, np.ndarray) or s.base is None)):
            # An entry of every stream in row-major order is marked as such (checked now, while the
            # caller's fresh arrays are still in cache: a drain reads its few tracked rows only).
            # Below _HEAD_MIN_ROWS rows the check costs more than the flattening it saves.
            if (rep.size == self._draws.size and rep.size >= _HEAD_MIN_ROWS and _KNOWN_LAYOUTS
                    and _is_grid(rep, st, self.replicates, self.streams)):
                head = _LAYOUT_GRID
            elif rep.size >= _HEAD_MIN_ROWS:
                head = self._head_of(rep, st, lo_, hi_, p, s)
            else:
                head = None
            self._sparse.append((kind, rep, st, lo_, hi_, p, s, head))
        else:
            fields = [np.array(x) if isinstance(x, np.ndarray) and x.ndim and not (fresh and x.base is None) else x
                      for x in (rep, st, lo_, hi_, p, s)]
            # public calls may list replicates in any order: their head is selected row by row
            self._sparse.append((kind, *fields, self._head_of(*fields, exact=not fresh)))
        if len(self._sparse) + len(self._pulled) >= _STAGE_ROUNDS:
            self._drain()

    def _head_of(self, rep, st, lo, hi, p, s, *, exact: bool = False) -> tuple | None:
        """The fields of a staged entry restricted to its rows in tracked replicates, in order: its
        first m rows, m found by bisection (the mechanisms list replicates in ascending order), or
        with ``exact`` selected row by row. None when every replicate or none is tracked, and for a
        short entry (fewer than _HEAD_MIN_ROWS rows) unless ``exact``. A drain uses the heads only
        when every entry has one and they hold every tracked row (:meth:`_heads_valid`)."""
        n = self._n_tracked
        # no head when no replicate is tracked, or every one is (the entry is its own head)
        if n == 0 or n >= self.replicates or (rep.size < _HEAD_MIN_ROWS and not exact):
            return None
        if exact:
            keep = np.asarray(rep) < n
            return tuple(x[keep] if type(x) is np.ndarray and x.ndim else x for x in (rep, st, lo, hi, p, s))
        return _first_rows((rep, st, lo, hi, p, s), rep.searchsorted(n))

    def _record_dense(self, mask: np.ndarray, lo, hi: np.ndarray, param: np.ndarray,
                      sensitivity: np.ndarray, mechanism: str, *, gaussian: bool, discrete: bool = False) -> None:
        """Fast path for mechanisms that release once for every (replicate, stream) in ``mask``.

        All arguments have shape (replicates, streams) (``lo`` may be a scalar); entries outside
        ``mask`` are ignored. Equivalent to recording the masked entries one release each. The
        tracked rows are staged and folded into the difference arrays every ``_STAGE_ROUNDS`` calls
        (and before any query or growth) by one vectorised scatter, so a call costs a few array
        copies instead of a dozen small numpy operations.
        """
        if not self._recording:
            return
        self._draws += mask
        kind = (_KIND_ZCDP if discrete else _KIND_GAUSSIAN) if gaussian else _KIND_LAPLACE
        lo = np.broadcast_to(np.asarray(lo, dtype=np.int64), mask.shape)
        if self.tight:
            rr, ss = np.nonzero(mask)
            mech = self._mech_ids.setdefault(mechanism, len(self._mech_ids))
            self._chunks.append(dict(rep=rr, st=ss, lo=lo[rr, ss], hi=hi[rr, ss].astype(np.int64),
                                     kind=np.full(rr.size, kind, np.int8), param=param[rr, ss].astype(float),
                                     sens=sensitivity[rr, ss].astype(float), mech=np.full(rr.size, mech, np.int32),
                                     node=np.full(rr.size, -1, np.int64)))
        n = self._n_tracked
        if n == 0:
            return
        self._staged.append((kind, mask[:n].copy(), lo[:n].copy(), np.array(hi[:n], dtype=np.int64),
                             np.array(param[:n], dtype=float), np.array(sensitivity[:n], dtype=float)))
        if len(self._staged) >= _STAGE_ROUNDS:
            self._drain()

    def _settle(self) -> None:
        """Fold any staged releases in (before a query or a look at capacity / tracking)."""
        if not self._recording:
            raise ValueError("this ledger records nothing (a run without a ledger, Ledger.unrecorded): "
                             "run with ledger=True to query draws or realized spend")
        if self._staged or self._sparse or self._pulled or any(rec.pending for rec in self._prefix):
            self._drain()

    def prefix_recorder(self, parameters: Callable[[np.ndarray], tuple], mechanism: str, *,
                        gaussian: bool = True, discrete: bool = False) -> Callable[[np.ndarray], None]:
        """A recorder for mechanisms that release, at every call, one statistic of every (replicate,
        stream) holding k >= 1 records, computed over all of them: footprint [0, k).

        ``parameters(k)`` maps an int64 array of counts to (scale or sigma, sensitivity) arrays of its
        shape; it must depend on k alone (e.g. Gaussian posterior draws: sigma = sqrt(c/(k+1)),
        sensitivity 1/(k+1)). The returned ``record(counts)`` takes the (R, K) counts of one call and
        is equivalent to recording those releases one by one; it only copies the counts into a
        staging buffer, and :meth:`_drain` derives everything else in bulk. Tight mode and discrete
        (zCDP) releases take the general dense path, which keeps every release.
        """
        if not callable(parameters):
            raise ValueError(f"parameters must be callable as parameters(k) -> (param, sensitivity), got {shown(parameters)}")
        if not isinstance(mechanism, str) or not mechanism:
            raise ValueError(f"mechanism must be a non-empty string, got {shown(mechanism)}")
        kind = (_KIND_ZCDP if discrete else _KIND_GAUSSIAN) if gaussian else _KIND_LAPLACE
        if self.tight or discrete or not self._recording:  # (unrecorded: _record_dense drops them)
            def record(counts: np.ndarray) -> None:
                k = np.asarray(counts).astype(np.int64)
                param, sens = parameters(k)
                self._record_dense(k >= 1, 0, k, np.asarray(param, dtype=float), np.asarray(sens, dtype=float),
                                   mechanism, gaussian=gaussian, discrete=discrete)
            return record
        recorder = _PrefixRecorder(self, kind, parameters)
        self._prefix.append(recorder)
        return recorder.record

    def _drain(self) -> None:
        """Fold staged releases into the draw counts and the difference arrays (one scatter per kind
        and staging form)."""
        for recorder in self._prefix:
            if recorder.pending:
                calls, recorder.pending = recorder.pending, 0
                counts = recorder.buffer[:calls].reshape(calls, -1, self.streams)  # (calls, rows, K)
                self._drain_prefix(recorder.kind, recorder.parameters, counts, count_draws=not recorder.counts_draws)
        sparse, self._sparse = self._sparse, []
        pulled, self._pulled = self._pulled, []
        if sparse or pulled:
            self._drain_sparse(sparse, pulled)
        staged, self._staged = self._staged, []
        for kind in {entry[0] for entry in staged}:
            rows = [e for e in staged if e[0] == kind]
            mask, lo, hi, par, sen = (np.stack([e[i] for e in rows]) for i in range(1, 6))
            top = int(hi.max())
            if top > self._capacity:
                self._grow(top)  # may shrink the tracked rows: drop the ones no longer tracked
            n = self._n_tracked
            mask, lo, hi, par, sen = mask[:, :n], lo[:, :n], hi[:, :n], par[:, :n], sen[:, :n]
            live = mask & (hi > lo)
            if not live.any():
                continue
            _, r_idx, s_idx = np.nonzero(live)
            self._scatter(kind, r_idx * self.streams + s_idx, lo[live], hi[live], par[live], sen[live])

    def _drain_sparse(self, sparse: list[tuple], pulled: list[tuple] = ()) -> None:
        """Fold in listed releases (staged ``(kind, rep, st, lo, hi, param, sens, head)`` entries): the
        draw counts of every replicate by one bincount, then the tracked releases, one scatter per
        kind, from the entries' heads when those hold every tracked row (else row by row).

        An entry marked ``_LAYOUT_GRID`` when staged (every stream of every replicate once, in
        row-major order: DP-UCB's inserts of all arms) adds one draw to every stream, and its
        tracked rows are its first ``n_tracked * K``: its rows are neither flattened nor counted.

        ``pulled``: the entries of the pulled layout, staged apart (see __init__) as (kind, position
        among ``sparse``, st, lo, hi, param, sens). Their draws are one bincount; their tracked rows,
        each entry's first ones, are gathered field by field (``_leading_rows``: whole arrays), and
        merged with the listed entries' rows of the same kind in call order (a stable sort on the
        entries' positions) when both hold some.

        The rows a drain folds in, and their order, are those of the row-by-row selection of every
        entry in call order, so the sums are the same bit for bit."""
        R, K = self.replicates, self.streams
        n_start = self._n_tracked
        p_kinds = ()
        if pulled:
            p_kinds, p_seq, p_sts, *p_fields = zip(*pulled)
            offsets = _pulled_layout(R) * K
            p_st = _joined(p_sts, np.int64).reshape(len(pulled), R)
            p_st += offsets  # the cells r * K + st, in place: at R = 1000 a drain's streams are 2 MB
            self._draws += np.bincount(p_st.reshape(-1), minlength=self._draws.size).reshape(R, K)
        kinds, listed = (), False  # listed: whether the listed entries hold tracked rows
        if sparse:
            kinds, reps, sts, *_, heads = zip(*sparse)
            n_grid = 0
            if _LAYOUT_GRID in heads:  # identity (a head is a tuple or None otherwise)
                generic = [i for i, head in enumerate(heads) if head is not _LAYOUT_GRID]
                n_grid = len(sparse) - len(generic)
                self._draws += n_grid
                reps, sts = tuple(reps[i] for i in generic), tuple(sts[i] for i in generic)
            cells = counted = None
            if reps:
                cells = np.concatenate(reps, dtype=np.int64, casting="unsafe") * K + np.concatenate(sts)
                counted = np.bincount(cells, minlength=self._draws.size)
                self._draws += counted.reshape(self._draws.shape)
            n_tracked_rows = int(counted[: n_start * K].sum()) if reps else 0
            listed = n_tracked_rows > 0 or bool(n_grid and n_start)
            if listed and not p_kinds and n_grid == len(sparse) and n_start:
                _, _, _, los, his, ps, ss, _ = zip(*sparse)
                if not any(np.ndarray in set(map(type, field)) for field in (los, his, ps, ss)):
                    self._drain_grid_scalars(kinds, los, his, ps, ss, n_start)
                    return
            if listed:
                # where each entry's tracked rows are: all of it, its head, or to be selected row by row
                whole = n_start >= R
                use_heads = whole or not reps or self._heads_valid(
                    tuple(h for h in heads if h is not _LAYOUT_GRID) if n_grid else heads, n_tracked_rows)
                if n_grid and not whole:
                    if use_heads:
                        heads = _grid_heads(sparse, R, K, n_start)
                    else:  # row by row: the cells of every entry, in order
                        cells = (np.concatenate([e[1] for e in sparse], dtype=np.int64, casting="unsafe") * K
                                 + np.concatenate([e[2] for e in sparse]))
        if not listed and not p_kinds:
            return
        listed_kinds, pulled_kinds = set(kinds) if listed else set(), set(p_kinds)
        for kind in listed_kinds | pulled_kinds:  # (small ints: ascending, as the row-by-row path's set)
            rows = []  # (cells, lo, hi, scale, sensitivity, the rows' sort keys: call order) per staging form
            if kind in listed_kinds:
                idx = range(len(sparse)) if len(listed_kinds) == 1 else [i for i, k in enumerate(kinds) if k == kind]
                if use_heads:
                    # the tracked rows of each entry, in order: the releases the row-by-row selection
                    # below keeps, in the same order (so the same sums, bit for bit)
                    h_reps, h_sts, *fields = (zip(*(sparse[i][1:7] for i in idx)) if whole
                                              else zip(*(heads[i] for i in idx)))
                    t_cells = (np.concatenate(h_reps, dtype=np.int64, casting="unsafe") * K
                               + np.concatenate(h_sts, dtype=np.int64, casting="unsafe"))
                    keep = None
                    if self._n_tracked < n_start:  # an earlier kind's growth dropped replicates from tracking
                        keep = np.flatnonzero(t_cells < self._n_tracked * K)
                        lo, hi, par, sen = (_flatten_at(field, h_reps, dtype, keep)
                                            for field, dtype in zip(fields, (np.int64, np.int64, float, float)))
                        t_cells = t_cells[keep]
                    else:
                        lo, hi, par, sen = (_flatten(field, h_reps, dtype)
                                            for field, dtype in zip(fields, (np.int64, np.int64, float, float)))
                else:
                    # the staged fields column by column: (kind, rep, st, lo, hi, param, sens, head) per entry
                    _, h_reps, k_sts, *fields, _ = zip(*(sparse[i] for i in idx))
                    k_cells = cells if len(listed_kinds) == 1 else (
                        np.concatenate(h_reps, dtype=np.int64, casting="unsafe") * K + np.concatenate(k_sts))
                    # Only the tracked rows go further: the fields are flattened for those alone (on a
                    # run of many replicates with a few tracked, the others are most of the entries).
                    keep = np.flatnonzero(k_cells < self._n_tracked * K)
                    lo, hi, par, sen = (_flatten_at(field, h_reps, dtype, keep)
                                        for field, dtype in zip(fields, (np.int64, np.int64, float, float)))
                    t_cells = k_cells[keep]
                if t_cells.size:
                    keys = None
                    if kind in pulled_kinds:  # entry j of sparse sorts as 2 j + 1
                        keys = np.repeat(2 * np.asarray(idx, dtype=np.int64) + 1, [r.size for r in h_reps])
                        keys = keys if keep is None else keys[keep]
                    rows.append((t_cells, lo, hi, par, sen, keys))
            n = min(self._n_tracked, R) if kind in pulled_kinds else 0
            if n:
                # the pulled entries' rows of this kind in replicates 0..n-1 (still tracked): their first n
                if len(pulled_kinds) == 1:
                    sel, fields = slice(None), p_fields
                else:
                    sel = [i for i, k in enumerate(p_kinds) if k == kind]
                    fields = [tuple(field[i] for i in sel) for field in p_fields]
                t_cells = p_st[sel, :n].reshape(-1)
                lo, hi, par, sen = (_leading_rows(field, R, n, dtype)
                                    for field, dtype in zip(fields, (np.int64, np.int64, float, float)))
                # a pulled entry staged after j listed ones sorts as 2 j: before entry j of sparse
                keys = np.repeat(2 * np.asarray(p_seq, dtype=np.int64)[sel], n) if len(rows) else None
                rows.append((t_cells, lo, hi, par, sen, keys))
            if len(rows) == 2:  # both forms: in call order (stable: each form's rows keep theirs)
                order = np.argsort(np.concatenate((rows[0][5], rows[1][5])), kind="stable")
                rows = [tuple(np.concatenate((a, b))[order] for a, b in zip(rows[0][:5], rows[1][:5]))]
            if rows:
                self._fold_rows(kind, *rows[0][:5])

    def _fold_rows(self, kind, t_cells, lo, hi, par, sen) -> None:
        """Scatter a drain's selected rows of one kind (tracked ``t_cells``, in order), growing the
        arrays first if a footprint reaches past them (growth may drop replicates from tracking:
        their rows are left out) and skipping empty footprints."""
        top = int(hi.max())
        if top > self._capacity:
            self._grow(top)  # may shrink the tracked rows: drop the ones no longer tracked
        live = (t_cells < self._n_tracked * self.streams) & (hi > lo)
        if live.any():
            self._scatter(kind, t_cells[live], lo[live], hi[live], par[live], sen[live])

    def _drain_grid_scalars(self, kinds: tuple, los: tuple, his: tuple, ps: tuple, ss: tuple, n_start: int) -> None:
        """The tracked part of :meth:`_drain_sparse` when every entry is marked ``_LAYOUT_GRID`` and
        has one footprint, scale and sensitivity for all its rows (DP-UCB's lock-stepped inserts of
        every arm): an entry's tracked rows are cells 0..m-1 (m = tracked replicates * K), so the
        scatter takes one value per entry and repeats it over those cells -- the rows, in the order,
        and the values of the row-by-row selection, so the same sums bit for bit."""
        kind_set = set(kinds)
        for kind in kind_set:  # the order of _drain_sparse's loop (growth of one kind may drop tracking)
            idx = None if len(kind_set) == 1 else [i for i, k in enumerate(kinds) if k == kind]
            lo, hi = (np.asarray(f if idx is None else tuple(f[i] for i in idx), dtype=np.int64) for f in (los, his))
            par, sen = (np.asarray(f if idx is None else tuple(f[i] for i in idx), dtype=float) for f in (ps, ss))
            if min(n_start, self._n_tracked) == 0:
                return
            top = int(hi.max())
            if top > self._capacity:
                self._grow(top)  # may shrink the tracked rows: drop the ones no longer tracked
            m = min(n_start, self._n_tracked) * self.streams
            if m == 0:
                return
            live = hi > lo
            if not live.any():
                continue
            if not live.all():
                lo, hi, par, sen = lo[live], hi[live], par[live], sen[live]
            self._scatter(kind, np.arange(m), lo, hi, par, sen, repeat=m)

    def _heads_valid(self, heads: tuple, n_tracked_rows: int) -> bool:
        """Whether the staged heads hold exactly the rows in tracked replicates (checked, not assumed:
        a caller listing replicates out of order would give a prefix that is not): every head row is
        in a tracked replicate, and the heads hold as many rows as the draw counts of the tracked
        replicates, ``n_tracked_rows`` (so, being subsets of their entries' tracked rows, each is
        all of them)."""
        if None in heads:  # some entry kept no head
            return False
        h_reps = [h[0] for h in heads]
        if sum(map(len, h_reps)) != n_tracked_rows:
            return False
        return int(np.concatenate(h_reps).max()) < self._n_tracked

    def _drain_prefix(self, kind: int, parameters, counts: np.ndarray, *, count_draws: bool = False) -> None:
        """Fold in staged prefix releases: ``counts`` (calls, rows, K) of the first ``rows`` >= the
        tracked replicates, one release per entry k >= 1 with footprint [0, k) and (param,
        sensitivity) = ``parameters(k)``. ``count_draws``: the counts hold every replicate and their
        draws are not counted yet (a recorder pickled before draws were counted at each call)."""
        if count_draws:
            if counts.min() >= 1:  # every stream holds a record (the common case): each call released all
                self._draws += counts.shape[0]
            else:
                self._draws += np.count_nonzero(counts >= 1, axis=0)
        if self._n_tracked and (top := int(counts[:, : self._n_tracked].max())) > self._capacity:
            self._grow(top)  # may shrink the tracked rows
        calls, n_cells = counts.shape[0], self._n_tracked * self.streams
        if n_cells == 0:
            return
        # Runs of equal counts of one stream over consecutive calls are identical releases: fold each
        # run in once, weighted by its length (a lock-stepped policy changes a few counts per call).
        k = counts[:, : self._n_tracked].reshape(calls, n_cells).T  # (cell, call)
        starts_run = np.empty(k.shape, dtype=bool)
        starts_run[:, 0] = True
        np.not_equal(k[:, 1:], k[:, :-1], out=starts_run[:, 1:])
        starts = np.flatnonzero(starts_run)  # row-major over (cell, call): a cell's runs are contiguous
        # run lengths: the gaps between run starts, and the last run to the end (exact in float)
        lengths = np.empty(starts.size)
        np.subtract(starts[1:], starts[:-1], out=lengths[:-1])
        lengths[-1] = starts_run.size - starts[-1]
        hi = k.reshape(-1)[starts]
        live = hi >= 1  # streams holding no record released nothing
        if not live.all():
            if not live.any():
                return
            starts, hi, lengths = starts[live], hi[live], lengths[live]
        cells, hi = starts // calls, hi.astype(np.int64)
        param, sens = (np.asarray(a, dtype=float) for a in parameters(hi))
        if param.shape != hi.shape or sens.shape != hi.shape:
            param, sens = np.broadcast_to(param, hi.shape), np.broadcast_to(sens, hi.shape)
        # min and max propagate NaN, which fails both comparisons
        if not (param.min() > 0 and param.max() < math.inf and sens.min() > 0 and sens.max() < math.inf):
            raise ValueError("parameters(k) must return scale/sigma and sensitivity in (0, inf) for every k >= 1")
        if kind == _KIND_GAUSSIAN:
            # _leaf_stats' two Gaussian columns, weighted: (s / p)^2 * length, and 1.0 * length == length
            weighted = {_S_MU2: (sens / param) ** 2 * lengths, _S_GAUSS: lengths}
        else:
            weighted = {stat: column * lengths for stat, column in self._leaf_columns(kind, param, sens).items()}
        width = self._capacity + 1
        at = cells * width + hi
        for stat in _KIND_STATS[kind]:
            flat = self._stat_diff(stat).reshape(-1)  # index = cell * (capacity + 1) + position
            # every footprint starts at record 0: the additions are one weighted bincount per cell
            flat[::width] += np.bincount(cells, weights=weighted[stat], minlength=n_cells)
            np.subtract.at(flat, at, weighted[stat])
        self._marked[0] = True
        self._marked[hi] = True
        self._top = max(self._top, int(hi.max()))
        if self._end is not None:
            np.maximum.at(self._end, cells, hi + 1)
        if self._low is not None:  # every cell's position 0 took its bincount (zeros included)
            self._low[:] = 0

    def _scatter(self, kind, cells, lo, hi, par, sen, repeat: int = 1) -> None:
        """Add the releases' statistics at ``lo`` and subtract them at ``hi`` for tracked ``cells``
        (replicate * K + stream); duplicates are summed (``np.add.at``). ``repeat`` > 1: ``lo``,
        ``hi``, ``par``, ``sen`` hold one value per entry of ``repeat`` releases, on ``cells`` each
        (the same as passing every release, entry after entry)."""
        columns = self._leaf_columns(kind, par, sen, count=lo.size * repeat)
        starts = cells * (self._capacity + 1)  # stream-major flat indices: cell * (capacity + 1) + position
        if repeat == 1:
            add_at, subtract_at = starts + lo, starts + hi
        else:  # entry by entry, each over every cell (the order np.repeat gives the columns below)
            add_at, subtract_at = ((x[:, None] + starts).reshape(-1) for x in (lo, hi))
        for stat in _KIND_STATS[kind]:
            flat = self._stat_diff(stat).reshape(-1)
            column = columns[stat]
            if repeat > 1 and type(column) is np.ndarray:
                column = np.repeat(column, repeat)
            np.add.at(flat, add_at, column)
            np.subtract.at(flat, subtract_at, column)
        self._marked[lo] = True
        self._marked[hi] = True
        self._top = max(self._top, int(hi.max()))
        if self._from_zero and lo.any():
            self._from_zero = False
        # the streams' written extents, for the kept totals (repeat > 1: every entry covers all cells)
        if self._end is not None:
            np.maximum.at(self._end, cells, hi + 1 if repeat == 1 else int(hi.max()) + 1)
        if self._low is not None:
            np.minimum.at(self._low, cells, lo if repeat == 1 else int(lo.min()))

    def _stat_diff(self, stat: int) -> np.ndarray:
        """The difference array of one statistic, (R_tracked, K, capacity + 1), created on first use."""
        diff = self._diff.get(stat)
        if diff is None:
            diff = self._diff[stat] = np.zeros((self._n_tracked, self.streams, self._capacity + 1))
        return diff

    def _record_from_mechanism(self, rep, st, lo, hi, scale, sensitivity, mechanism: str, node,
                               gaussian: bool = False, discrete: bool = False) -> None:
        """Fast path for this package's mechanisms: ``rep``, ``st`` int arrays; ``lo``, ``hi``,
        ``scale`` (sigma with ``gaussian=True``), ``sensitivity`` and ``node`` arrays of that length
        or scalars; validity guaranteed by construction. The arrays must be fresh (the mechanisms
        build them per call by arithmetic or fancy indexing): arrays owning their data are staged
        uncopied until the next drain (views are copied, as a guard). Nothing is broadcast per
        call: scalars stay scalars until the drain."""
        kind = _KIND_GAUSSIAN if gaussian else _KIND_DLAPLACE if discrete else _KIND_LAPLACE
        self._store(kind, rep, st, lo, hi, scale, sensitivity, mechanism, -1 if node is None else node, fresh=True)

    # --- recording ----------------------------------------------------------------------------
    def record_laplace(self, replicate, stream, lo, hi, scale, sensitivity, *, mechanism: str,
                       node=None, discrete: bool = False) -> None:
        """Record Laplace releases (one per element): Lap(scale) on a statistic of L1 ``sensitivity``.

        ``replicate``, ``stream``, ``lo``, ``hi`` (and ``node``) are 1-D int arrays or scalars that
        broadcast to a common length m; the footprint of release i is records [lo[i], hi[i]) of
        stream ``stream[i]`` in replicate ``replicate[i]``.
        """
        self._record(_KIND_DLAPLACE if discrete else _KIND_LAPLACE, replicate, stream, lo, hi, scale, sensitivity,
                     mechanism, node, "scale")

    def record_discrete_gaussian(self, replicate, stream, lo, hi, sigma, sensitivity, *, mechanism: str,
                                 node=None) -> None:
        """Record discrete-Gaussian releases (floating-point-safe mode): (sensitivity/sigma)^2/2-zCDP
        (Canonne, Kamath & Steinke 2020, Thm 4), composed as ``accountants.ZCDP`` events -- never
        through GDP, which is not proven for the discrete Gaussian."""
        self._record(_KIND_ZCDP, replicate, stream, lo, hi, sigma, sensitivity, mechanism, node, "sigma")

    def record_gaussian(self, replicate, stream, lo, hi, sigma, sensitivity, *, mechanism: str,
                        node=None) -> None:
        """Record Gaussian releases: N(0, sigma^2) on a statistic of L2 ``sensitivity`` (see record_laplace)."""
        self._record(_KIND_GAUSSIAN, replicate, stream, lo, hi, sigma, sensitivity, mechanism, node, "sigma")

    def note_rounds(self, replicate, stream, position, t: int) -> None:
        """Tag records with their round: record ``position[i]`` of stream ``stream[i]`` in replicate
        ``replicate[i]`` was revealed in round ``t`` (1-D int arrays or scalars that broadcast).

        Only needed when a round inserts more than one record (side observations); see the module
        docstring. Positions beyond the current capacity grow it (as a release would).
        """
        t = _whole("t", t, 1)
        if t >= 2**31:
            raise ValueError(f"t must lie in [1, 2^31), got {t}")
        rep, st, pos = (np.atleast_1d(np.asarray(a)) for a in (replicate, stream, position))
        if any(a.ndim > 1 or (a.size and not np.issubdtype(a.dtype, np.integer)) for a in (rep, st, pos)):
            raise ValueError("replicate, stream and position must be 1-D integer arrays or scalars")
        rep, st, pos = (a.astype(np.int64) for a in np.broadcast_arrays(rep, st, pos))
        if rep.size == 0:
            return
        if rep.min() < 0 or rep.max() >= self.replicates:
            raise ValueError(f"replicate must lie in [0, {self.replicates})")
        if st.min() < 0 or st.max() >= self.streams:
            raise ValueError(f"stream must lie in [0, {self.streams})")
        if pos.min() < 0:
            raise ValueError(f"position must lie in [0, inf), got {pos.min()}")
        if not self._recording:
            return
        if self.tight:
            self._round_chunks.append(np.stack([rep, st, pos, np.full(rep.size, t, np.int64)]))
        if int(pos.max()) >= self._capacity:
            # staged releases are folded in before the arrays grow (growing may track fewer
            # replicates); otherwise tags and releases are independent and the staging stands
            self._settle()
            self._grow(int(pos.max()) + 1)
        if self._n_tracked == 0:
            return
        if self._rounds is None:
            self._rounds = np.zeros((self._capacity, self._n_tracked, self.streams), dtype=np.int32)
        keep = rep < self._n_tracked
        self._rounds[pos[keep], rep[keep], st[keep]] = t

    def note_observed(self, observed: np.ndarray, positions: np.ndarray, t: int) -> None:
        """:meth:`note_rounds` for one round of a policy's internal path: ``observed`` the (R, K)
        bool mask of the entries inserted in round ``t``, ``positions`` the (R, K) int positions
        they were inserted at (valid by construction: the mechanisms' counts). Equivalent to
        ``note_rounds(rows, cols, positions[rows, cols], t)`` over ``np.nonzero(observed)``, but it
        looks at the tracked replicates' rows only (the others' tags are never kept)."""
        if not self._recording:
            return
        if self.tight:  # the full list of notes is kept: the public path
            rows, cols = np.nonzero(observed)
            if rows.size:
                self.note_rounds(rows, cols, positions[rows, cols], t)
            return
        if t >= 2**31:
            raise ValueError(f"t must lie in [1, 2^31), got {t}")
        # every position is below the capacity (the common case: one unmasked max) or the observed
        # ones' max decides, as in note_rounds (a masked max costs ~10x a plain one)
        if positions.size and int(positions.max()) >= self._capacity:
            top = int(np.max(positions, where=observed, initial=-1))
            if top >= self._capacity:  # as note_rounds: fold the staging in, then grow
                self._settle()
                self._grow(top + 1)
        n = self._n_tracked
        if n == 0:
            return
        if self._rounds is None:
            self._rounds = np.zeros((self._capacity, n, self.streams), dtype=np.int32)
        rows, cols = np.nonzero(observed[:n])
        self._rounds[positions[:n][rows, cols], rows, cols] = t

    def _round_units(self, n_pos: int) -> np.ndarray:
        """(R_tracked, K, n_pos) privacy unit of every tracked record under relation "round": its
        noted round, or a unique id above every round for a record never noted (its own round)."""
        shape = (self._n_tracked, self.streams, n_pos)
        if self._rounds is None:
            return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        tags = np.moveaxis(self._rounds[:n_pos], 0, 2).astype(np.int64)
        own = tags.max(initial=0) + 1 + np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        return np.where(tags > 0, tags, own)

    def _by_round(self, totals: list[np.ndarray]) -> list[np.ndarray]:
        """Sum per-record totals (each (R_tracked, K, top)) over the records of each round, per
        replicate: a list of (R_tracked, U) arrays (U units; absent units of a replicate are 0)."""
        top = totals[0].shape[2]
        units = self._round_units(top).reshape(self._n_tracked, -1)
        _, inverse = np.unique(units, return_inverse=True)
        inverse = inverse.reshape(units.shape)
        n_units = int(inverse.max()) + 1 if inverse.size else 0
        offset = (np.arange(self._n_tracked)[:, None] * n_units + inverse).ravel()
        return [np.bincount(offset, weights=x.reshape(-1), minlength=self._n_tracked * n_units)
                .reshape(self._n_tracked, n_units) for x in totals]

    # --- cheap-mode queries -------------------------------------------------------------------
    def _totals(self, *stats: int, distinct: bool = False) -> list[np.ndarray]:
        """Per-record totals of ``stats``, each of shape (R_tracked, K, top).

        Only records below the highest footprint end folded in (``top``; every record above has
        zero totals) and only statistics some release touched are summed (the others are zeros):
        a query's cost follows what was recorded, not the capacity or every statistic.

        ``distinct``: only the records at the marked positions (a footprint starts or ends there),
        shape (R_tracked, K, marked): every other record repeats the totals of the one before it
        (its differences are all +0.0, and x + 0.0 == x for these sums of positive terms), so these
        are every distinct per-record total, bit for bit, for queries taking a maximum over records.
        """
        self._settle()
        rows = self._distinct_rows() if distinct else None
        n_rows = self._top if rows is None else rows.size
        if rows is None and self._keeps():
            return [self._kept_totals(stat) if stat in self._diff else np.zeros((self._n_tracked, self.streams, n_rows))
                    for stat in stats]
        out = []
        for stat in stats:
            if stat in self._diff:
                # each stream's positions are contiguous: summed along them (sequential sums, np.cumsum
                # over positions, bit for bit) straight from the difference array's first ``top``
                # positions into a fresh array -- one pass, where a copy summed in place made two
                # (2.5-4x the time, session 17) -- or, for the distinct rows, in place in their
                # fancy-indexed copy (a fresh array already). The difference arrays are never written.
                if rows is None:
                    out.append(np.cumsum(self._diff[stat][:, :, : self._top], axis=2))
                else:
                    totals = self._diff[stat][:, :, rows]
                    out.append(np.cumsum(totals, axis=2, out=totals))
            else:
                out.append(np.zeros((self._n_tracked, self.streams, n_rows)))
        return out

    def _keeps(self) -> bool:
        """Whether :meth:`_totals` answers from kept per-record totals (see :meth:`_kept_totals`):
        long enough streams, and kept rows within _KEEP_MAX_BYTES; otherwise nothing is kept."""
        if self._top >= _KEEP_MIN_TOP and self._n_tracked * self.streams * self._top * 8 * len(self._diff) <= _KEEP_MAX_BYTES:
            return True
        if self._kept:
            self._unkept()
        return False

    def _kept_totals(self, stat: int) -> np.ndarray:
        """``_totals(stat)``, (R_tracked, K, top), from per-record totals kept between queries: each
        stream's row is brought up to date from the lowest position written since the last query
        (earlier totals are unchanged: a record's total is the sequential sum of the differences up to
        it), and summed only up to the stream's last written position -- beyond it every difference is
        +0.0, so every later record holds that total + 0.0 (the same bits as the sequential sum, which
        adds those zeros one by one; + 0.0 only turns -0.0 into +0.0, once). A stream's row is
        recomputed as ``cumsum([total[start - 1] + d[start], d[start + 1], ...])``, the very additions
        of ``np.cumsum`` over the whole column, in the same order: the same totals, bit for bit
        (tests/privbandit/test_ledger_paths.py). The checkpoints' queries of a run then cost what was
        released since the previous one, not every record again (the last of 8 read every tracked
        record: 5-10% of a DP-UCB run, docs/benchmarks.md session 9).

        Returns a read-only view of the kept rows."""
        n_cells, top = self._n_tracked * self.streams, self._top
        if self._low is None:
            self._low = np.full(n_cells, _FAR, dtype=np.int64)
        elif self._low.min() < _FAR:  # writes since the rows were last brought up to date
            for ok in self._kept_ok.values():
                np.minimum(ok, self._low, out=ok)
            self._low.fill(_FAR)
        kept = self._kept.get(stat)
        ok = self._kept_ok.get(stat)
        if ok is None:
            ok = self._kept_ok[stat] = np.zeros(n_cells, dtype=np.int64)
        if 2 * int((top - ok).sum()) > n_cells * top:
            # most records to write again (the engine's geometric checkpoints: the last query of a run
            # follows the one before at a tenth of its round or less; the first query keeping them):
            # the whole columns at once, as the plain sums do, straight into rows of width top that
            # are then kept as they are. Decided on the records to write, top - ok per stream -- a
            # stream's records past its last written position are written too, as its total + 0.0 --
            # not on the records to sum: the first kept query of a DP-UCB-Bound run (streams of
            # uneven lengths) went stream by stream, 40 Python passes writing as much as one numpy
            # pass. (The whole columns were also copied into rows of the capacity's width: a second
            # pass over megabytes, most of it first-touch pages. Session 17.)
            totals = np.cumsum(self._diff[stat][:, :, :top], axis=2)  # (fresh: see _totals)
            self._kept[stat] = totals.reshape(n_cells, top)
            ok[:] = top
            out = totals.view()
            out.flags.writeable = False
            return out
        if kept is None or kept.shape[1] < top:
            # rows of the capacity's width, the kept ones' totals copied in (zeros: pages are committed
            # only where rows are written, up to top)
            rows = np.zeros((n_cells, self._capacity))
            if kept is not None:
                rows[:, : kept.shape[1]] = kept
            kept = self._kept[stat] = rows
        end = np.full(n_cells, top, dtype=np.int64) if self._end is None else np.minimum(self._end, top)
        diff = self._diff[stat].reshape(n_cells, self._capacity + 1)  # a view: (cell, position)
        for c in np.flatnonzero(ok < top).tolist():
            start, stop, row = int(ok[c]), int(end[c]), kept[c]
            if start < stop:
                seg = row[start:stop]
                seg[:] = diff[c, start:stop]
                if start:
                    seg[0] += row[start - 1]
                np.cumsum(seg, out=seg)
            if stop < top:  # the tail: the last written position's total + 0.0 (0.0: none written)
                row[max(start, stop):top] = (float(row[stop - 1]) if stop else 0.0) + 0.0
        ok[ok < top] = top
        out = kept.reshape(self._n_tracked, self.streams, kept.shape[1])[:, :, :top]
        out.flags.writeable = False
        return out

    def _distinct_rows(self) -> np.ndarray | None:
        """The positions ``_totals(..., distinct=True)`` sums over (None: every position below top)."""
        rows = np.flatnonzero(self._marked[: self._top])
        return None if 2 * rows.size > self._top else rows  # few unmarked positions: the plain sums cost less

    def _totals_at(self, stats: tuple, reps: np.ndarray, streams: np.ndarray, records: np.ndarray) -> list:
        """``_totals(stat, distinct=True)[0][reps, streams, records]`` for each stat, summing only the
        picked streams' columns: the same sequential sums (a cumsum along positions), bit for bit."""
        rows = self._distinct_rows()
        out = []
        for stat in stats:
            values = np.zeros(reps.size)
            if stat in self._diff and reps.size:
                diff = self._diff[stat]
                # the picked streams up to the last record any of them needs (fancy indexing: a fresh
                # (pick, position) array), each accumulated along its positions: sequential sums, the same bits
                end = int(records.max()) + 1
                columns = (diff[reps, streams, : min(self._top, end)] if rows is None
                           else diff[reps[:, None], streams[:, None], rows[None, :end]])
                np.cumsum(columns, axis=1, out=columns)
                values = columns[np.arange(reps.size), records]
            out.append(values)
        return out

    def _per_replicate(self, values: np.ndarray) -> np.ndarray:
        out = np.full(self.replicates, np.nan)
        out[: self._n_tracked] = values
        return out

    def realized_pure_epsilon(self) -> np.ndarray:
        """(R,) worst record's sum of eps (inf if that record is in a Gaussian release; NaN if untracked)."""
        self._settle()
        if self._n_tracked == 0:
            return np.full(self.replicates, np.nan)
        gauss, eps = self._totals(_S_GAUSS, _S_EPS)
        eps = np.where(gauss > 0.5, np.inf, np.maximum(eps, 0.0))
        return self._per_replicate(eps.reshape(self._n_tracked, -1).max(axis=1, initial=0.0))

    def realized_mu(self) -> np.ndarray:
        """(R,) worst record's GDP mu: sqrt of the largest per-record sum of mu_i^2 (NaN if untracked)."""
        self._settle()
        if self._n_tracked == 0:
            return np.full(self.replicates, np.nan)
        rho, mu2 = self._totals(_S_RHO, _S_MU2)
        mu2 = np.where(rho > 0, np.inf, np.maximum(mu2, 0.0))
        return self._per_replicate(np.sqrt(mu2.reshape(self._n_tracked, -1).max(axis=1, initial=0.0)))

    def _closed_form_epsilon(self, mu2: np.ndarray, rho: np.ndarray | None, delta: float, more=None,
                             distinct: bool = False) -> np.ndarray:
        """Per-record min of pure and KOV heterogeneous composition (inf where a Gaussian is involved).

        Kairouz, Oh & Viswanath (2017, Thm 3.5) with delta_l = 0: for every delta in (0, 1],
        eps = min{ sum eps, S + sqrt(2 Q ln(e + sqrt(Q)/delta)), S + sqrt(2 Q ln(1/delta)) }, where
        S = sum eps tanh(eps/2) and Q = sum eps^2. It dominates Dwork-Rothblum-Vadhan's
        sqrt(2 Q ln(1/delta)) + sum eps (e^eps - 1), since tanh(x/2) <= e^x - 1.

        ``more``: the (sum eps, Q, S, Gaussian count) totals matching ``mu2`` and ``rho`` (default:
        the per-record totals). ``rho`` None, or a Gaussian count None: no release of that kind was
        recorded, so those totals are zero everywhere and the terms they switch on are skipped
        (the same values: a query then costs only the statistics in use). ``distinct``: ``mu2`` and
        ``rho`` are the distinct records' totals (``_totals(..., distinct=True)``), and so are these.
        """
        if _S_EPS not in self._diff and _S_RHO not in self._diff:
            return np.full(mu2.shape, np.inf)  # only Gaussian releases: GDP alone applies
        if more is None:
            gauss = self._totals(_S_GAUSS, distinct=distinct)[0] if _S_GAUSS in self._diff else None
            s_eps, q, s = self._totals(_S_EPS, _S_EPS2, _S_TANH, distinct=distinct)
        else:
            s_eps, q, s, gauss = more
        s_eps, q, s = np.maximum(s_eps, 0.0), np.maximum(q, 0.0), np.maximum(s, 0.0)
        kov1 = s + np.sqrt(2.0 * q * np.log(math.e + np.sqrt(q) / delta))
        kov2 = s + np.sqrt(2.0 * q * math.log(1.0 / delta))
        # Summation error in the difference arrays is ~1e-16 relative; round up so that this audit
        # figure is never optimistic about the records it reports.
        c = np.minimum(s_eps, np.minimum(kov1, kov2)) * (1.0 + REALIZED_ROUND_UP)
        if gauss is not None:
            c = np.where(gauss > 0.5, np.inf, c)
        if rho is None:
            return c
        # A record in a zCDP (discrete Gaussian) release: every other release it is in is mu-GDP
        # (Laplace through the pure-DP conversion), hence (mu^2/2)-zCDP, so the record is
        # (rho + sum mu^2 / 2)-zCDP: eps = rho + 2 sqrt(rho ln(1/delta)) (Bun & Steinke 2016, Prop 1.3).
        rho = np.maximum(rho, 0.0)
        rho_total = rho + np.maximum(mu2, 0.0) / 2.0
        zcdp = (rho_total + 2.0 * np.sqrt(rho_total * math.log(1.0 / delta))) * (1.0 + REALIZED_ROUND_UP)
        return np.where(rho > 0, zcdp, c)

    def realized_epsilon(self, delta: float, relation: str = "entry") -> np.ndarray:
        """(R,) worst record's epsilon at ``delta`` (NaN for untracked replicates).

        ``relation="round"``: the worst round's, composing every release touching any of its
        records (see the module docstring); "entry" (default): the worst record's.

        Cheap mode: per record, the minimum of the accountants computable from the tracked sums --
        pure (sum eps), KOV heterogeneous advanced composition (which dominates DRV's), and GDP
        (mu from the sum of mu_i^2, converted exactly); the worst record is the maximum over records.
        Tight mode: the maximum over the record's exact event multisets of
        ``accountants.best_epsilon`` (every accountant available) over the maximal per-record
        multisets.
        """
        self._settle()
        if not (isinstance(delta, (int, float, np.floating)) and 0 < delta < 1):
            raise ValueError(f"delta must lie in (0, 1), got {shown(delta)}")
        delta = float(delta)
        if not isinstance(relation, str) or relation not in ("entry", "round"):
            raise ValueError(f"relation must be 'entry' or 'round', got {shown(relation)}")
        if self.tight:
            out = np.full(self.replicates, np.nan)
            for r in range(self.replicates):
                multisets = self.maximal_record_events(r, relation=relation)
                out[r] = max((self._event_epsilon(ev, delta) for ev in multisets), default=0.0)
            return out
        out = np.full(self.replicates, np.nan)
        if self._n_tracked == 0:
            return out
        if relation == "round" and self._rounds is not None:
            return self._realized_by_round(delta, out)
        if not {_S_EPS, _S_RHO} & self._diff.keys():  # Gaussian releases only: GDP, worst = largest mu
            if self._from_zero:
                # Every footprint starts at record 0: a stream's totals are diff[0] at its first record
                # and never grow after it (later positions hold only subtractions, and x + y <= x in
                # floating point for y <= 0), so the first records' totals hold the maximum, exactly.
                mu2 = (self._diff[_S_MU2][:, :, :1] if self._top and _S_MU2 in self._diff
                       else np.zeros((self._n_tracked, self.streams, 0)))
                worst = np.maximum(mu2.reshape(self._n_tracked, -1).max(axis=1, initial=0.0), 0.0)
            else:
                (mu2,) = self._totals(_S_MU2)
                worst = np.maximum(mu2.reshape(self._n_tracked, -1).max(axis=1, initial=0.0), 0.0)
            out[: self._n_tracked] = [self._gdp_eps(math.sqrt(m), delta) for m in worst]
            return out
        # the worst record is a maximum over records: the distinct records' totals suffice
        n = self._n_tracked
        (mu2,) = self._totals(_S_MU2, distinct=True)
        rho = self._totals(_S_RHO, distinct=True)[0] if _S_RHO in self._diff else None  # None: no zCDP release
        gauss = self._totals(_S_GAUSS, distinct=True)[0] if _S_GAUSS in self._diff else None
        (s_eps,) = self._totals(_S_EPS, distinct=True)
        # GDP does not apply to a record in a zCDP release: mu = inf there (its closed form is zCDP's)
        mu = np.maximum(mu2, 0.0)
        np.sqrt(mu, out=mu)  # (in place: a query of a long run allocates megabytes per pass)
        if rho is not None:
            mu = np.where(rho > 0, np.inf, mu)
        # (n, K, records) views, not copies: a replicate's records in (stream, position) order
        totals = [mu2, rho, s_eps, None, None, gauss]  # Q and S (every record's) only when needed
        mu = np.ascontiguousarray(mu).reshape(n, -1)
        per_stream = mu2.shape[2]
        if mu.shape[1] == 0:  # no record yet
            out[:n] = 0.0
            return out
        # The closed forms (a log and two square roots per record) are evaluated only on the records
        # that can decide _worst_min's answer. Its first record j (largest mu) gives either the
        # answer, eps_gdp(mu_j), or the bar closed_j that every other record must pass (or tie mu_j)
        # to stay in its front; a record's closed form is at most (its pure sum) * (1 + 1e-12), so a
        # record whose rounded-up pure sum does not exceed the bar -- and which is in no Gaussian or
        # zCDP release, where the closed form is another -- is dropped there anyway. _worst_min thus
        # sees the same front, in the same order: the same answer, bit for bit (the closed forms are
        # elementwise: each record's value does not depend on which others are evaluated with it).
        first = np.argmax(mu, axis=1)
        pick = (np.arange(n), first // per_stream, first % per_stream)
        q_first, s_first = self._totals_at((_S_EPS2, _S_TANH), *pick)
        closed_first = self._closed_form_epsilon(*(None if x is None else x[pick] for x in totals[:2]), delta,
                                                 more=(s_eps[pick], q_first, s_first,
                                                       None if gauss is None else gauss[pick]))
        for r in range(n):
            j = int(first[r])
            if not mu[r, j] > 0:
                out[r] = 0.0
                continue
            if closed_first[r] >= self._gdp_eps(float(mu[r, j]), delta):
                out[r] = self._gdp_eps(float(mu[r, j]), delta)
                continue
            if totals[3] is None:
                totals[3:5] = self._totals(_S_EPS2, _S_TANH, distinct=True)
            mu_r = mu[r].reshape(self.streams, per_stream)
            keep = (np.maximum(totals[2][r], 0.0) * (1.0 + REALIZED_ROUND_UP) > closed_first[r]) | (mu_r == mu[r, j])
            if gauss is not None:
                keep |= totals[5][r] > 0.5
            if rho is not None:
                keep |= totals[1][r] > 0
            closed = self._closed_form_epsilon(*(None if x is None else x[r][keep] for x in totals[:2]), delta,
                                               more=tuple(None if x is None else x[r][keep] for x in totals[2:]))
            out[r] = self._worst_min(closed, mu_r[keep], delta)
        return out

    def _realized_by_round(self, delta: float, out: np.ndarray) -> np.ndarray:
        """realized_epsilon for relation "round": the closed forms on per-round sums of the records'
        additive statistics (exact composition: a round has at most one record per stream)."""
        if self._top == 0:
            out[: self._n_tracked] = 0.0
            return out
        mu2, rho, s_eps, q, s, gauss = self._by_round(self._totals(_S_MU2, _S_RHO, _S_EPS, _S_EPS2, _S_TANH, _S_GAUSS))
        closed = self._closed_form_epsilon(mu2, rho, delta, more=(s_eps, q, s, gauss))
        mu = np.where(rho > 0, np.inf, np.sqrt(np.maximum(mu2, 0.0)))
        for r in range(self._n_tracked):
            out[r] = self._worst_min(closed[r], mu[r], delta)
        return out

    @staticmethod
    def _gdp_eps(mu: float, delta: float) -> float:
        if not math.isfinite(mu):
            return math.inf
        return 0.0 if mu <= 0 else _gdp_epsilon(float(mu), float(delta))

    def _worst_min(self, closed: np.ndarray, mu: np.ndarray, delta: float) -> float:
        """max over records of min(closed, eps_gdp(mu)), evaluating eps_gdp only on the Pareto front."""
        used = mu > 0
        if not np.any(used):
            return 0.0
        # The record of largest mu bounds every record by eps_gdp(mu_max); when its closed form does
        # not undercut that, it is the answer (always so when only Gaussian releases were made).
        j = int(np.argmax(mu))
        top = self._gdp_eps(float(mu[j]), delta)
        if closed[j] >= top:
            return top
        # The first record in the order below has mu = mu_max and closed >= closed[j]: a record with
        # closed <= closed[j] and a smaller mu is dominated by it, off the front, and never changes
        # its running maximum. Dropping those first leaves the front and its order (so the result,
        # bit for bit) unchanged; most records go (closed and mu grow together), so little is sorted.
        used &= (closed > closed[j]) | (mu == mu[j])
        c, m = closed[used], mu[used]
        order = np.lexsort((-c, -m))  # mu descending, then closed descending
        c, m = c[order], m[order]
        prev_max = np.concatenate(([-np.inf], np.maximum.accumulate(c)[:-1]))
        front = c > prev_max  # not dominated by a record with larger-or-equal mu
        best = 0.0
        for ci, mi in zip(c[front], m[front]):
            if ci <= best:
                continue
            best = max(best, min(ci, self._gdp_eps(mi, delta)))
        return best

    # --- tight-mode queries -------------------------------------------------------------------
    def _require_tight(self, what: str) -> None:
        if not self.tight:
            raise ValueError(f"{what} needs the full release list: construct the Ledger with tight=True")

    def _releases(self) -> dict[str, np.ndarray]:
        keys = ("rep", "st", "lo", "hi", "kind", "param", "sens", "mech", "node")
        if not self._chunks:
            return {k: np.zeros(0) for k in keys}
        if len(self._chunks) > 1:
            self._chunks = [{k: np.concatenate([c[k] for c in self._chunks]) for k in keys}]
        return self._chunks[0]

    def releases(self) -> dict[str, np.ndarray]:
        """Tight mode: every recorded release as arrays (replicate, stream, lo, hi, kind 0=Laplace
        1=Gaussian 2=discrete Gaussian (zCDP) 3=discrete Laplace, scale/sigma, sensitivity, mechanism
        name, node; node -1 = not given)."""
        self._require_tight("releases()")
        rel = self._releases()
        names = {v: k for k, v in self._mech_ids.items()}
        return dict(replicate=rel["rep"], stream=rel["st"], lo=rel["lo"], hi=rel["hi"], kind=rel["kind"],
                    param=rel["param"], sensitivity=rel["sens"],
                    mechanism=np.array([names[int(m)] for m in rel["mech"]], dtype=object),
                    node=rel["node"])

    def noted_rounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Tight mode: every ``note_rounds`` tag as arrays (replicate, stream, position, round), in the
        order noted -- what ``relation="round"`` composes by (an auditor compares it with the records
        each round really entered)."""
        self._require_tight("noted_rounds()")
        if not self._round_chunks:
            return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
        rep, st, pos, t = np.concatenate(self._round_chunks, axis=1)
        return rep, st, pos, t

    def record_multisets(self, replicate: int, relation: str = "entry") -> tuple[list, np.ndarray]:
        """Tight mode: (leaves, counts) with counts[j, i] = copies of leaves[i] in the j-th distinct
        per-record multiset of ``replicate`` (records that no release touched are omitted).
        ``relation="round"``: per-round multisets, the union of the releases of a round's records."""
        self._require_tight("record_multisets()")
        replicate = _whole("replicate", replicate, 0)
        if replicate >= self.replicates:
            raise ValueError(f"replicate must lie in [0, {self.replicates}), got {replicate}")
        rel = self._releases()
        sel = (rel["rep"] == replicate) & (rel["hi"] > rel["lo"]) if rel["rep"].size else np.zeros(0, bool)
        if not np.any(sel):
            return [], np.zeros((0, 0), dtype=np.int64)
        kind, param, sens = rel["kind"][sel], rel["param"][sel], rel["sens"][sel]
        st, lo, hi = rel["st"][sel], rel["lo"][sel], rel["hi"][sel]
        keys = np.stack([kind.astype(float), param, sens], axis=1)
        uniq, leaf_idx = np.unique(keys, axis=0, return_inverse=True)
        leaf_idx = leaf_idx.ravel()
        leaves = [_leaf(int(k), p, s) for k, p, s in uniq]
        n_pos = int(hi.max()) + 1
        diff = np.zeros((self.streams, n_pos, len(leaves)), dtype=np.int64)
        np.add.at(diff, (st, lo, leaf_idx), 1)
        np.add.at(diff, (st, hi, leaf_idx), -1)
        counts = np.cumsum(diff, axis=1)[:, :-1, :].reshape(-1, len(leaves))
        if relation == "round":
            counts = self._tight_by_round(replicate, counts, n_pos - 1)
        counts = counts[counts.sum(axis=1) > 0]
        return leaves, np.unique(counts, axis=0)

    def _tight_by_round(self, replicate: int, counts: np.ndarray, n_pos: int) -> np.ndarray:
        """Sum per-record counts ((K * n_pos, L), stream-major) over the records of each noted round."""
        units = np.arange(counts.shape[0], dtype=np.int64) + 1  # own unit per record, ids > 0 ...
        if self._round_chunks:
            rep, st, pos, t = np.concatenate(self._round_chunks, axis=1)
            sel = (rep == replicate) & (pos < n_pos)
            units[st[sel] * n_pos + pos[sel]] = -t[sel]  # ... noted rounds map to ids <= -1
        _, inverse = np.unique(units, return_inverse=True)
        out = np.zeros((int(inverse.max()) + 1, counts.shape[1]), dtype=np.int64)
        np.add.at(out, inverse.ravel(), counts)
        return out

    def maximal_record_events(self, replicate: int, relation: str = "entry") -> list[Event]:
        """Tight mode: the per-record (``relation="round"``: per-round) release multisets of
        ``replicate`` not contained in another's, as events -- the candidates for the worst record
        (round) under any accountant."""
        leaves, counts = self.record_multisets(replicate, relation)
        if counts.shape[0] == 0:
            return []
        keep = []
        for j in range(counts.shape[0]):
            dominated = np.all(counts >= counts[j], axis=1) & np.any(counts > counts[j], axis=1)
            if not np.any(dominated):
                keep.append(j)
        return [Composed(tuple(SelfComposed(leaves[i], int(c)) for i, c in enumerate(counts[j]) if c))
                for j in keep]

    @staticmethod
    def _event_epsilon(event: Event, delta: float) -> float:
        return best_epsilon(event, delta).value

    def worst_record_event(self, replicate: int, *, delta: float = 1e-6, relation: str = "entry") -> Event:
        """Tight mode: the exact multiset of releases of the worst record of ``replicate``.

        Records whose multiset is contained in another's are never worse; among the maximal ones
        (often a single one) the worst is the one with the largest ``best_epsilon`` at ``delta``.
        Returns ``NO_EVENT`` when no release touched the replicate. Cheap mode raises ValueError.
        """
        self._require_tight("worst_record_event()")
        events = self.maximal_record_events(replicate, relation)
        if not events:
            return NO_EVENT
        if len(events) == 1:
            return events[0]
        return max(events, key=lambda ev: self._event_epsilon(ev, delta))

    def to_dp_accounting(self, replicate: int, *, delta: float = 1e-6):
        """Tight mode: the worst record's releases as a ``dp_accounting.ComposedDpEvent``."""
        import dp_accounting

        event = self.worst_record_event(replicate, delta=delta)
        return dp_accounting.ComposedDpEvent([
            dp_accounting.SelfComposedDpEvent(leaf.to_dp_accounting(), n)
            for leaf, n in event.grouped().items()
        ])

    def redraws(self) -> list[tuple]:
        """Tight mode: (replicate, stream, mechanism, node) for every statistic released more than once."""
        self._require_tight("redraws()")
        rel = self._releases()
        if rel["rep"].size == 0:
            return []
        has = rel["node"] >= 0
        rows = np.stack([rel["rep"][has], rel["st"][has], rel["mech"][has].astype(np.int64), rel["node"][has]],
                        axis=1)
        if rows.shape[0] == 0:
            return []
        uniq, counts = np.unique(rows, axis=0, return_counts=True)
        names = {v: k for k, v in self._mech_ids.items()}
        return [(int(r), int(s), names[int(m)], int(n)) for (r, s, m, n) in uniq[counts > 1]]


_STAGE_PASS_ENTRIES = 2048
"""From this many (replicate, stream) entries on, a prefix recorder counts draws at each call and
stages only the tracked rows (see :class:`_PrefixRecorder`)."""
_PREFIX_STAGE = []  # [privbandit.mechanisms._kernels.prefix_stage], imported on first use (the mechanisms import the ledger)


class _PrefixRecorder:
    """Staging buffer of one :meth:`Ledger.prefix_recorder`: the tracked replicates' counts of up to
    ``_STAGE_ROUNDS`` calls. The draw counts of every replicate are added at each call, in the same
    compiled pass that stages the tracked rows: a Gaussian TS round at 1000 replicates with 8 tracked
    copied all 5000 counts into a 10 MB buffer that every drain scanned again (measured in the
    round loop: docs/benchmarks.md "Session 10 (s10/gts)")."""

    # Below this many (replicate, stream) entries a call stages every replicate's counts and the
    # drain counts their draws: one array copy is cheaper than the compiled pass's call (measured,
    # loaded machine, per call: 1.2-1.5 against 2.2 us at 100 x 5, and 1 replicate paid ~2 us more
    # a round); above it the pass wins (4.2-4.6 against 5.0-6.0 us at 1000 x 5) and the staging
    # buffer stays small (256 calls x 5000 entries were 10 MB). Recorders pickled before session 10
    # lack the attribute and keep the old layout too.
    counts_draws = False

    def __init__(self, ledger: Ledger, kind: int, parameters) -> None:
        self.ledger, self.kind, self.parameters = ledger, kind, parameters
        # zeros, not empty: rows past ``pending`` are then deterministic, so a pickled ledger is a
        # function of its state alone (deployments compare snapshot digests, privbandit.deploy).
        # Per call, the tracked replicates' counts as one flat row (row-major; the tracked rows only
        # ever shrink, Ledger._grow, so a staged call's first rows are theirs), or in the old layout
        # every replicate's (R, K) counts.
        self.counts_draws = ledger.replicates * ledger.streams >= _STAGE_PASS_ENTRIES
        self.buffer = np.zeros((_STAGE_ROUNDS, ledger._n_tracked * ledger.streams) if self.counts_draws
                               else (_STAGE_ROUNDS, ledger.replicates, ledger.streams))
        self.pending = 0

    def record(self, counts: np.ndarray) -> None:
        if not self.counts_draws:
            self.buffer[self.pending] = counts
        else:
            led = self.ledger
            draws, row = led._draws, self.buffer[self.pending]
            counts = np.asarray(counts, dtype=float)
            if not _PREFIX_STAGE:
                from privbandit.mechanisms._kernels import prefix_stage
                _PREFIX_STAGE.append(prefix_stage)
            kern = _PREFIX_STAGE[0]
            way = kern.at(led.replicates)  # looked up at each call, not kept: a ledger must pickle
            if counts.shape == draws.shape and counts.flags.c_contiguous and way is not kern._py:
                way(counts.reshape(-1), draws.reshape(-1), row)
            else:  # interpreted (numpy's passes are the faster ones there), or counts to broadcast
                full = np.broadcast_to(counts, draws.shape)  # ValueError on a shape that does not broadcast
                draws += full >= 1
                row[:] = full[: row.size // led.streams].reshape(-1)
        self.pending += 1
        if self.pending == _STAGE_ROUNDS:
            self.ledger._drain()
