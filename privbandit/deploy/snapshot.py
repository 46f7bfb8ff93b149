"""Data-only deployment snapshots (session 13): encode a live state into plain data, and restore plain
data INTO a fresh instance built from the store's configuration, verified against it field by field.

Why (docs/deploy.md, "Session 13 (s13/deploy)"): a snapshot pickled as objects is rebuilt by calling
the state classes' own code (``__setstate__``, bound methods handed out by name) with whatever the
file holds, and the compiled kernels index the restored arrays without bounds checks -- a forged
snapshot with shortened arrays ran DP-SE and DP-EXP3-Lap 20 more rounds silently (session 12). Here

* the stored form holds only builtins (dict, list, tuple, str, bytes, int, float, bool, None): objects
  are tagged tuples naming their class, ``("\\x00obj", class, id, state)``; a generator is its bit
  generator's state dict; a bound method is its object and name; a module-level singleton its name; an
  array its type code, shape and bytes. Reading it builds no object of ours and calls nothing
  (:class:`DataUnpickler` refuses every name);
* the objects are those of a fresh run started from the configuration (``Policy.start``): the fresh
  instance is the specification. :func:`restore` walks the stored tree and the fresh one together and
  refuses any difference of class, attribute set, method, singleton, scalar type, string, array dtype
  or number of dimensions, an array whose shape differs from the fresh one's except along an axis
  that grows with a counter of its own object (the ledger's record capacity, a binary tree's levels),
  any non-finite float where the fresh state is finite, and any aliasing (two fields holding one array
  or object) that the fresh instance does not have. Only then are the verified values handed to the
  fresh objects (their own ``__setstate__``, as unpickling would, inner objects first).

Invariants that shapes cannot express (a ledger's top record within its capacity and nothing left
staged, a tree's items within its levels) are checked per class (:data:`INVARIANTS`) before any
method of the restored state runs.
"""

from __future__ import annotations

import io
import math
import pickle
import sys
import types

import numpy as np

#: the format marker of a data-only snapshot (the top-level dict's "format" key)
FORMAT = "privbandit-snapshot/2"

OBJ, REF, RNG, METHOD, GLOBAL = "\x00obj", "\x00ref", "\x00rng", "\x00method", "\x00global"
ARR, ARRREF, SCALAR = "\x00arr", "\x00arrref", "\x00scalar"
#: numpy type kinds an array or scalar of a deployment's state may have (booleans, integers, floats)
_KINDS = "biuf"


class SnapshotMismatch(ValueError):
    """A stored snapshot is not shaped like a fresh run of its configuration (the message names the field)."""


class MethodRef:
    """A method named by a legacy (object-pickled) snapshot: its object and name, inert -- not
    callable, so a crafted snapshot cannot call it while it is read (session 12's unpickler handed
    out the bound method itself). :func:`encode` writes it as the method it names."""

    __slots__ = ("obj", "name")

    def __init__(self, obj, name: str) -> None:
        self.obj, self.name = obj, name


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def encode(state, objects: dict | None = None, *, data: bool = False) -> object:
    """``state`` (nested dicts, lists, tuples, scalars, numpy arrays, generators and objects of the
    state modules) as plain data; every object once, later occurrences as ``(REF, id)``. Raises
    ValueError for anything else (e.g. a lambda), as pickling did. ``objects`` (if given) receives
    id -> object for every object encoded (the fresh instance's, for :func:`restore`). ``data``: arrays
    and numpy scalars as tagged tuples of builtins too (the stored form, :func:`dumps`); else kept as
    they are (a template to compare with)."""
    memo: dict[int, int] = {}
    arrays: dict[int, int] = {}
    keep: list = []  # (objects stay alive while their id() is in the memo)

    def enc(o):
        if type(o) is str:
            # one object per distinct string, as the attribute names already are: pickle's memo
            # (keyed by identity) then writes the same bytes for the same state, fresh or reloaded
            return sys.intern(o)
        if o is None or type(o) in (bool, int, float, bytes):
            return o
        if isinstance(o, np.generic):  # (a numpy scalar pickles its dtype object too: see arrays below)
            if not data:
                return o
            if o.dtype.kind not in _KINDS:
                raise ValueError(f"policy state cannot be persisted (a scalar of {o.dtype})")
            return (SCALAR, sys.intern(o.dtype.str), o.tobytes())
        if type(o) is np.ndarray:
            if o.dtype.kind not in _KINDS or o.dtype.fields is not None:
                raise ValueError(f"policy state cannot be persisted (an array of {o.dtype})")
            if not data:
                return o
            # as plain data: (ARR, id, dtype code, shape, bytes); a later field holding the same array
            # (ARRREF, id). No dtype object is pickled: pickle memoizes those by identity, and an
            # unpickled array's dtype is equal to, not the same object as, a fresh one's -- the same
            # state then pickled to different bytes (digests) depending on its history.
            if id(o) in arrays:
                return (ARRREF, arrays[id(o)])
            keep.append(o)
            arrays[id(o)] = len(arrays)
            return (ARR, arrays[id(o)], sys.intern(o.dtype.str), tuple(int(n) for n in o.shape),
                    np.ascontiguousarray(o).tobytes())
        if type(o) is list:
            return [enc(v) for v in o]
        if type(o) is tuple:
            return tuple(enc(v) for v in o)
        if type(o) is dict:
            return {enc(k): enc(v) for k, v in o.items()}
        if id(o) in memo:
            return (REF, memo[id(o)])
        if isinstance(o, types.MethodType):
            return (METHOD, enc(o.__self__), sys.intern(o.__func__.__name__))
        if type(o) is MethodRef:
            return (METHOD, enc(o.obj), sys.intern(o.name))
        ref = memo[id(o)] = len(memo)
        keep.append(o)
        if objects is not None:
            objects[ref] = o
        if isinstance(o, np.random.Generator):
            return (RNG, ref, enc(o.bit_generator.state))
        try:
            reduced = o.__reduce_ex__(5)
        except Exception as exc:
            raise ValueError(f"policy state cannot be persisted ({exc})") from None
        if isinstance(reduced, str):  # a module-level singleton pickled by name (the ledger's layouts)
            return (GLOBAL, sys.intern(f"{type(o).__module__}.{reduced}"))
        func, args, st = (tuple(reduced) + (None, None, None))[:3]
        cls = type(o)
        if not (isinstance(func, type) and func is cls and not args) and not (
                getattr(func, "__name__", "") == "__newobj__" and args == (cls,)):
            raise ValueError(f"policy state cannot be persisted (a {_qualified(cls)} reduces to {func!r})")
        return (OBJ, sys.intern(_qualified(cls)), ref, enc(st))

    return enc(state)


# --- reading -----------------------------------------------------------------------------------
class NotData(pickle.UnpicklingError):
    """The pickle names a class or function: not a data-only snapshot."""


class DataUnpickler(pickle.Unpickler):
    """Builds builtins only (dict, list, tuple, str, bytes, int, float, bool, None: no name needed).
    Any name -- a class of ours, ``getattr``, numpy's helpers -- is refused: a data-only snapshot
    holds none."""

    def find_class(self, module: str, name: str):
        raise NotData(f"a data-only snapshot refers to {module}.{name}")


def loads(raw: bytes):
    """A data-only snapshot's plain data, its tagged arrays and scalars made numpy arrays and scalars
    (two fields tagged with one array id are one array, as when they were stored). ValueError for an
    array tag that is not a builtin numeric type code, a shape of non-negative whole numbers and
    exactly the bytes they need."""
    tree = DataUnpickler(io.BytesIO(raw)).load()
    arrays: dict[int, np.ndarray] = {}

    def dtype(code):
        try:
            dt = np.dtype(code) if type(code) is str else None
        except TypeError:
            dt = None
        if dt is None or dt.kind not in _KINDS or not dt.isbuiltin or dt.str != code:
            raise ValueError(f"a snapshot array of type {code!r}, not a number type")
        return dt

    def dec(o):
        if type(o) is list:
            return [dec(v) for v in o]
        if type(o) is dict:
            return {k: dec(v) for k, v in o.items()}
        if type(o) is not tuple:
            return o
        if o[:1] == (ARR,):
            if len(o) != 5 or type(o[1]) is not int or o[1] in arrays or type(o[3]) is not tuple \
                    or not all(type(n) is int and 0 <= n < 2**62 for n in o[3]) or type(o[4]) is not bytes:
                raise ValueError("a malformed snapshot array")
            dt = dtype(o[2])
            if len(o[4]) != math.prod(o[3]) * dt.itemsize:
                raise ValueError(f"a snapshot array of shape {o[3]} holds {len(o[4])} bytes")
            arrays[o[1]] = np.frombuffer(o[4], dtype=dt).reshape(o[3]).copy()
            return arrays[o[1]]
        if o[:1] == (ARRREF,):
            if len(o) != 2 or o[1] not in arrays:
                raise ValueError("a snapshot refers to an array it does not hold")
            return arrays[o[1]]
        if o[:1] == (SCALAR,):
            if len(o) != 3 or type(o[2]) is not bytes or len(o[2]) != dtype(o[1]).itemsize:
                raise ValueError("a malformed snapshot scalar")
            return np.frombuffer(o[2], dtype=dtype(o[1]))[0]
        return tuple(dec(v) for v in o)

    return dec(tree)


def dumps(state) -> bytes:
    """The stored form of ``state``: {"format": FORMAT, "state": encode(state, data=True)} pickled
    (protocol 5): builtins only."""
    return pickle.dumps({"format": FORMAT, "state": encode(state, data=True)}, protocol=5)


# --- verification and restoration ---------------------------------------------------------------
def _block_buffer(index: str):
    """A buffer of variates drawn ``block`` rows at a time (fresh: no rows yet) and read at row
    ``index`` (a field of the same object): any number of rows, every other axis as in a fresh run,
    and the index within [0, rows] (a kernel reading row ``index`` must find it)."""

    def check(walk, state, s, f, path):
        walk.array_like(s, f, path, free_axes=(0,))
        pos = state.get(index)
        if type(pos) is not int or not 0 <= pos <= s.shape[0]:
            walk.fail(f"{path[: path.rfind('.')]}.{index}", f"is {pos!r}, outside [0, {s.shape[0]}] (the rows drawn)")
        return s

    return check


def _core_nodes(walk, state, s, f, path):
    """A binary tree's nodes (R, K, levels, 2): levels between the fresh run's and ``max_levels``, and
    equal to the ``levels`` field (the kernels index levels up to it, without bounds checks)."""
    walk.array_like(s, f, path, free_axes=(2,))
    levels, top = state.get("levels"), state.get("max_levels")
    if type(levels) is not int or s.shape[2] != levels or not f.shape[2] <= levels <= (top if type(top) is int else -1):
        walk.fail(path, f"has {s.shape[2]} levels, its tree says {levels!r} (at most {top!r})")
    return s


def _core_all_flat(walk, state, s, f, path):
    """None, or every row index once (np.arange over tau's cells), as BinaryCore builds it."""
    if s is None:
        return None
    tau = state.get("tau")
    if type(s) is not np.ndarray or s.dtype != np.intp or type(tau) is not np.ndarray \
            or not np.array_equal(s, np.arange(tau.size, dtype=np.intp)):
        walk.fail(path, "is not the row index 0 .. cells - 1 of its tree")
    return s


def _ledger_positions(extra_axes):
    """An array over the ledger's record positions: its last axis capacity + 1 (``_marked``, the
    difference arrays) and its leading axes ``extra_axes(state)``."""

    def check(walk, state, s, f, path):
        cap = state.get("_capacity")
        if type(cap) is not int or cap < 1:
            walk.fail(path[: path.rfind(".")] + "._capacity", f"is {cap!r}, not a positive whole number")
        walk.array_like(s, f, path, shape=(*extra_axes(state), cap + 1))
        return s

    return check


def _ledger_diff(walk, state, s, f, path):
    """The ledger's difference arrays: statistic -> (tracked replicates, streams, capacity + 1) floats,
    one for each statistic a release has touched (none in a fresh ledger)."""
    from privbandit.ledger import _N_STATS

    if type(s) is not dict or not all(type(k) is int and 0 <= k < _N_STATS for k in s):
        walk.fail(path, f"is not a map of statistics 0 .. {_N_STATS - 1} to arrays")
    template = np.zeros((1, 1, 1))
    check = _ledger_positions(lambda st: (st.get("_n_tracked"), st.get("streams")))
    for k, v in s.items():
        walk.alias(v, None, f"{path}[{k}]")
    return {k: check(walk, state, v, template, f"{path}[{k}]") for k, v in s.items()}


def _ledger_rounds(walk, state, s, f, path):
    """None until rounds are noted, then int32 (capacity, tracked replicates, streams) round tags >= 0."""
    if s is None:
        return None
    walk.array_like(s, np.zeros((1, 1, 1), dtype=np.int32), path,
                    shape=(state.get("_capacity"), state.get("_n_tracked"), state.get("streams")))
    return s


def _float_map(walk, state, s, f, path):
    """A cache keyed by floats (the ledger's mu per epsilon): floats to finite floats."""
    if type(s) is not dict or not all(type(k) is float and type(v) is float and math.isfinite(v) for k, v in s.items()):
        walk.fail(path, "is not a map of numbers to finite numbers")
    return s


def _like(field: str | None):
    """A cache a run creates after its first rounds: an array of the dtype and shape of ``field``
    (None: floats over the run's (replicates, n_arms))."""

    def check(walk, state, s, f, path):
        if field is None:
            shape = (state.get("replicates"), state.get("n_arms"))
            ref = np.zeros(shape) if all(type(n) is int and n >= 0 for n in shape) else None
        else:
            ref = state.get(field)
        if type(ref) is not np.ndarray:
            walk.fail(path, f"is a cache of a run without {field or 'replicates and n_arms'}")
        walk.array_like(s, ref, path)
        return s

    return check


def _flag(walk, state, s, f, path):
    if type(s) is not bool:
        walk.fail(path, f"is {s!r}, not true or false")
    return s


_LEDGER = "privbandit.ledger.Ledger"
_CORE = "privbandit.mechanisms._base.BinaryCore"
#: Fields whose shape, presence or kind legitimately differs from a fresh run's: the state grows (the
#: ledger's record capacity, a tree's levels, a block of variates) or a run adds a cache after its
#: first rounds. Each is checked against the counters of its own object. Keyed by class, not by
#: policy: every policy's state is built from these classes; any other difference is refused.
RULES: dict[tuple[str, str], object] = {
    (_LEDGER, "_marked"): _ledger_positions(lambda st: ()),
    (_LEDGER, "_diff"): _ledger_diff,
    (_LEDGER, "_rounds"): _ledger_rounds,
    (_LEDGER, "_mu_cache"): _float_map,
    (_CORE, "nodes"): _core_nodes,
    (_CORE, "_all_flat"): _core_all_flat,
    ("privbandit.mechanisms.posterior.GaussianPosteriorRelease", "_z"): _block_buffer("_pos"),
    ("privbandit.policies.adversarial._Exp3Core", "uniforms"): _block_buffer("pos"),
    ("privbandit.policies.hu_hegde._LazyDPTSRun", "_o"): _like("_a"),
    ("privbandit.policies.hu_hegde._LazyDPTSRun", "_eps_o"): _like("_a"),
    ("privbandit.policies.hu_hegde._LazyDPTSRun", "_mean"): _like("_a"),
    ("privbandit.policies.elimination._AnytimeLazyUCBRun", "_mean"): _like(None),
    ("privbandit.policies.elimination._AnytimeLazyUCBRun", "_two_o"): _like(None),
    ("privbandit.policies.elimination._AnytimeLazyUCBRun", "_eps_o"): _like(None),
    ("privbandit.policies.private_ts._PrivateTSRun", "_all_ts"): _flag,
}


def _ledger_invariants(walk, state, path):
    """Counts and positions of a ledger: draws (R, K) whole and >= 0 (checked generically), at most
    ``replicates`` tracked, ``_top`` within the capacity, nothing left staged (a deployment drains its
    ledger before every snapshot), every prefix recorder drained."""
    cap, top, tracked = state.get("_capacity"), state.get("_top"), state.get("_n_tracked")
    if not (type(top) is int and type(cap) is int and 0 <= top <= cap):
        walk.fail(f"{path}._top", f"is {top!r}, outside [0, capacity {cap!r}]")
    if not (type(tracked) is int and 0 <= tracked <= state.get("replicates", 0)):
        walk.fail(f"{path}._n_tracked", f"is {tracked!r}, outside [0, replicates]")
    for key in ("_staged", "_sparse", "_pulled"):
        if state.get(key):
            walk.fail(f"{path}.{key}", "holds staged releases; a deployment's snapshot is drained")


def _core_invariants(walk, state, path):
    """A binary tree's items per stream: 0 <= tau < 2^levels (the alive nodes are tau's set bits, one
    per level) and tau <= capacity."""
    tau, levels, cap = state.get("tau"), state.get("levels"), state.get("capacity")
    if type(tau) is np.ndarray and type(levels) is int and tau.size and (
            tau.min() < 0 or tau.max() >= 2 ** min(levels, 62) or (type(cap) is int and tau.max() > cap)):
        walk.fail(f"{path}.tau", f"holds {int(tau.max())} items, more than {levels} levels (or capacity {cap}) hold")


def _recorder_invariants(walk, state, path):
    if state.get("pending") != 0:
        walk.fail(f"{path}.pending", f"is {state.get('pending')!r}; a deployment's snapshot is drained")


#: Dimensions an object is built with and never changes (every class that holds them sets them in its
#: constructor only): a stored value must equal the fresh run's -- kernels size their loops with them.
#: Other scalars (a scale, a cursor, a counter) are checked for type, finiteness and sign, not value.
STRUCTURAL = frozenset({"n_arms", "replicates", "streams", "arms", "k", "max_levels", "block", "_block", "horizon",
                        "capacity"})

def _same_float(s, f) -> bool:
    """``s`` is the same float as ``f``, bit for bit (NaN equal to NaN, -0.0 not equal to 0.0).

    Session 14: every float scalar of a snapshot (a Python float or a numpy floating scalar: the
    mechanisms' noise scales and epsilons, the policies' confidence parameters) must equal the value a
    fresh run of the store's configuration holds at the same place -- the fresh instance is the
    reference, not a list of expected values. A survey of every deployable policy (15 policies x
    realized tracking on / off, 3000 rounds, horizon 5000, checkpoints 1, 2, 5, ..., 3000;
    docs/deploy.md "Session 14") found no float scalar that a run ever changes: these mechanisms'
    scales depend on the configuration, not on the round. One that legitimately changes needs a rule in
    :data:`RULES` (which takes precedence, as for the ledger's query cache). Whole numbers (cursors,
    versions, capacities, levels: a run moves them) stay checked for type and sign, the dimensions in
    :data:`STRUCTURAL` for value."""
    return np.asarray(s, dtype=np.float64).tobytes() == np.asarray(f, dtype=np.float64).tobytes()


#: Whole-object invariants, checked after the object's fields (class -> check).
INVARIANTS = {_LEDGER: _ledger_invariants, _CORE: _core_invariants,
              "privbandit.ledger._PrefixRecorder": _recorder_invariants}


class _Walk:
    """One parallel walk of a stored tree and a fresh run's tree (encoded from its live objects)."""

    def __init__(self, fresh_objects: dict[int, object]) -> None:
        self.fresh_objects = fresh_objects  # ref id in the fresh encoding -> live fresh object
        self.refs: dict[int, int] = {}  # stored ref id -> fresh ref id
        self.fresh_refs: dict[int, int] = {}
        self.arrays: dict[int, int] = {}  # id(stored array) -> id(fresh array)
        self.fresh_arrays: dict[int, int] = {}
        self.keep: list = []  # (arrays stay alive while their id() is a key)
        self.builds: list[tuple[object, object]] = []  # (fresh object, verified state), inner objects first

    @staticmethod
    def fail(path: str, what: str):
        raise SnapshotMismatch(f"{path} {what}")

    def pair_ref(self, path: str, stored_ref, fresh_ref) -> bool:
        """Pair a stored object id with the fresh one; True if it was walked before."""
        if type(stored_ref) is not int:
            self.fail(path, f"has the object id {stored_ref!r}, not a whole number")
        if stored_ref in self.refs or fresh_ref in self.fresh_refs:
            if self.refs.get(stored_ref) != fresh_ref or self.fresh_refs.get(fresh_ref) != stored_ref:
                self.fail(path, "shares an object with another field differently from a fresh run")
            return True
        self.refs[stored_ref], self.fresh_refs[fresh_ref] = fresh_ref, stored_ref
        return False

    def value(self, s, f, path: str):
        """The verified value of stored ``s`` against fresh ``f`` (the fresh run's objects for objects)."""
        if type(f) is tuple and f and type(f[0]) is str and f[0].startswith("\x00"):
            return self.tagged(s, f, path)
        if type(s) is tuple and s and type(s[0]) is str and s[0].startswith("\x00"):
            self.fail(path, f"is an object where a fresh run holds a {type(f).__name__}")
        if type(f) is np.ndarray:
            if type(s) is not np.ndarray:
                self.fail(path, f"is a {type(s).__name__}, a fresh run has an array")
            self.array_like(s, f, path, shape=f.shape)
            self.alias(s, f, path)
            if not f.flags.writeable:  # a shared read-only layout (the ledger's pulled rows): keep the fresh one
                if not np.array_equal(s, f):
                    self.fail(path, "differs from the fixed layout a fresh run holds")
                return f
            return s
        if f is None or type(f) in (bool, int, float, str, bytes) or isinstance(f, np.generic):
            return self.scalar(s, f, path)
        if type(f) in (list, tuple):
            if type(s) is not type(f):
                self.fail(path, f"is a {type(s).__name__}, a fresh run has a {type(f).__name__}")
            if len(s) != len(f):
                self.fail(path, f"has {len(s)} entries, a fresh run {len(f)}")
            return type(f)(self.value(a, b, f"{path}[{i}]") for i, (a, b) in enumerate(zip(s, f)))
        if type(f) is dict:
            return self.fields(s, f, path, None)
        self.fail(path, f"holds a {type(f).__name__} no snapshot holds")  # pragma: no cover

    def fields(self, s, f, path: str, cls: str | None):
        """A dict (an object's state when ``cls`` names its class): the fresh run's keys, plus the
        caches :data:`RULES` allows for that class."""
        if type(s) is not dict:
            self.fail(path, f"is a {type(s).__name__}, a fresh run has a dict")
        extra = [k for k in s if k not in f and (cls, k) not in RULES]
        missing = [k for k in f if k not in s]
        if extra or missing:
            self.fail(path, f"has fields unlike a fresh run's (extra: {', '.join(map(repr, extra)) or 'none'}; "
                            f"missing: {', '.join(map(repr, missing)) or 'none'})")
        out = {}
        for k, v in s.items():
            rule = RULES.get((cls, k))
            sub = f"{path}.{k}"
            if rule is None:
                out[k] = self.value(v, f[k], sub)
                if k in STRUCTURAL and type(f[k]) is int and v != f[k]:
                    self.fail(sub, f"is {v!r}, a run of this configuration has {f[k]!r}")
            else:
                if type(v) is np.ndarray:
                    self.alias(v, None, sub)
                out[k] = rule(self, s, v, f.get(k), sub)
        check = INVARIANTS.get(cls)
        if check is not None:
            check(self, s, path)
        return out

    def alias(self, s, f, path: str) -> None:
        """One stored array per fresh array and vice versa (``f`` None: an array a fresh run lacks,
        which must be an array of its own)."""
        want = None if f is None else id(f)
        self.keep.append(s)
        if id(s) in self.arrays and (want is None or self.arrays[id(s)] != want) \
                or want is not None and self.fresh_arrays.get(want, id(s)) != id(s):
            self.fail(path, "shares its array with another field differently from a fresh run")
        self.arrays[id(s)] = want
        if want is not None:
            self.fresh_arrays[want] = id(s)

    def array_like(self, s, f, path: str, *, shape=None, free_axes=()):
        """``s`` an array of ``f``'s dtype and dimensions; of ``shape`` (or ``f``'s shape except along
        ``free_axes``); finite where ``f`` is a float array; >= 0 where ``f`` holds counts."""
        if type(s) is not np.ndarray:
            self.fail(path, f"is a {type(s).__name__}, not an array")
        if s.dtype != f.dtype or s.dtype.hasobject:
            self.fail(path, f"has dtype {s.dtype}, a fresh run {f.dtype}")
        if s.ndim != f.ndim:
            self.fail(path, f"has {s.ndim} dimensions, a fresh run {f.ndim}")
        if shape is None:
            shape = tuple(s.shape[i] if i in free_axes else n for i, n in enumerate(f.shape))
        if s.shape != tuple(shape):
            self.fail(path, f"has shape {s.shape}, a run of this configuration {tuple(shape)}")
        if s.dtype.kind == "f" and (not f.size or np.isfinite(f).all()) and not np.isfinite(s).all():
            self.fail(path, "holds a value that is not a finite number")
        if s.dtype.kind in "iu" and s.size and (not f.size or f.min() >= 0) and s.min() < 0:
            self.fail(path, f"holds a negative count ({s.min()})")

    def scalar(self, s, f, path):
        if type(s) is not type(f):
            self.fail(path, f"is a {type(s).__name__}, a fresh run has a {type(f).__name__}")
        if type(f) in (str, bytes) and s != f:  # names and messages: fixed by the configuration
            self.fail(path, f"is {s!r}, a fresh run of this configuration has {f!r}")
        if isinstance(f, (float, np.floating)) and math.isfinite(f) and not math.isfinite(s):
            self.fail(path, f"is {s!r}, not a finite number")
        if isinstance(f, (float, np.floating)) and not _same_float(s, f):
            # a smaller stored noise scale would draw less noise than the certificate -- computed from
            # the configuration -- pays for; the audit's replay saw it only against the log
            self.fail(path, f"is {s!r}, a run of this configuration has {f!r} (a scale or parameter its "
                            "configuration fixes)")
        if isinstance(f, (int, np.integer)) and not isinstance(f, (bool, np.bool_)) and f >= 0 and s < 0:
            self.fail(path, f"is {s!r}, a negative count")
        return s

    def tagged(self, s, f, path):
        tag = f[0]
        if type(s) is not tuple or len(s) != len(f) or s[0] != tag:
            self.fail(path, f"is not the {tag[1:]} a fresh run holds here")
        if tag == REF:
            if type(s[1]) is not int or self.refs.get(s[1]) != f[1]:
                self.fail(path, "refers to another object than a fresh run does here")
            return self.fresh_objects[f[1]]
        if tag == GLOBAL:
            if s[1] != f[1]:
                self.fail(path, f"names {s[1]!r}, a fresh run {f[1]!r}")
            import sys

            module, _, name = f[1].rpartition(".")
            return getattr(sys.modules[module], name)
        if tag == METHOD:
            owner = self.value(s[1], f[1], f"{path}.__self__")
            if s[2] != f[2]:
                self.fail(path, f"is the method {s[2]!r}, a fresh run's is {f[2]!r}")
            return getattr(owner, f[2])
        if tag == RNG:
            if self.pair_ref(path, s[1], f[1]):
                return self.fresh_objects[f[1]]
            st, fs = s[2], f[2]
            if type(st) is not dict or set(st) != set(fs) or st["bit_generator"] != fs["bit_generator"] \
                    or any(type(st[k]) is not type(fs[k]) for k in fs) or set(st["state"]) != set(fs["state"]) \
                    or any(type(st["state"][k]) is not type(fs["state"][k]) for k in fs["state"]):
                self.fail(path, f"is not a {fs['bit_generator']} generator state")
            gen = self.fresh_objects[f[1]]
            self.builds.append((gen, ("rng", st)))
            return gen
        if s[1] != f[1]:  # OBJ
            self.fail(path, f"is a {s[1]}, a fresh run has a {f[1]}")
        if self.pair_ref(path, s[2], f[2]):
            return self.fresh_objects[f[2]]
        if (s[3] is None) != (f[3] is None):
            self.fail(path, f"has {'no' if s[3] is None else 'a'} state, unlike a fresh run's {f[1]}")
        state = None if f[3] is None else (
            self.fields(s[3], f[3], path, f[1]) if type(f[3]) is dict else self.value(s[3], f[3], path))
        self.builds.append((self.fresh_objects[f[2]], state))
        return self.fresh_objects[f[2]]


def restore(stored, fresh: dict) -> dict:
    """The fresh state ``fresh`` (a dict of live objects: a run started from the configuration)
    carrying the stored data ``stored`` (as :func:`encode` wrote it), after verifying it against the
    fresh state field by field (module docstring); SnapshotMismatch naming the first field that
    differs. The fresh objects are filled in place, inner objects first, each by its own
    ``__setstate__`` as unpickling would; a generator takes its stored bit generator state."""
    objects: dict[int, object] = {}
    template = encode(fresh, objects)
    walk = _Walk(objects)
    out = walk.fields(stored, template, "snapshot", None)
    for obj, state in walk.builds:
        if type(state) is tuple and state[0] == "rng":
            obj.bit_generator.state = state[1]
        elif state is not None:
            setstate = getattr(type(obj), "__setstate__", None)
            if setstate is not None:
                obj.__setstate__(state)
            else:
                obj.__dict__.update(state)
    return out
