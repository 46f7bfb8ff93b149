"""Compiled kernels of the mechanisms' per-insert bookkeeping (issue 19).

Each kernel here is the ONE implementation of its step: plain Python over scalars and arrays,
compiled by numba when the optional ``fast`` extra is installed (``pip install "privbandit[fast]"``)
and run by CPython otherwise -- same source, same arithmetic, same results bit for bit
(tests/privbandit/mechanisms/test_kernels.py). No mechanism kernel draws random numbers: the caller
draws the noise with the mechanism's :class:`~privbandit.mechanisms.sampling.NoiseSampler` and
reports every release to the ledger, so the privacy path is the same whichever way a kernel runs.
(:func:`call_sampler` is the Thompson-sampling kernels' route to numpy's own Beta sampler, a
post-processing draw: :mod:`privbandit.policies._ts_kernels`.)

Callers pick the way per call with :meth:`Kernel.at`: interpreted below ``JIT_MIN_ROWS`` rows
(one replicate: a kernel call costs ~1-3 us more interpreted, against the 0.3-0.9 s numba's
import and first cache load add to a process -- so a short one-replicate process, a deployment or
a CLI call, never imports numba),
compiled from there on -- and at every size once a kernel has imported numba in this process (a
one-replicate run after a many-replicate one, or DP-UCB's K-row inserts of one replicate): the
import is paid, and loading a further kernel from the disk cache costs milliseconds -- or once the
process has made ``JIT_RENT_CALLS`` interpreted calls (a long one-replicate run: the import has
then been paid for in interpreted time, the ski-rental rule). Compilation is lazy (first use) and
cached on disk across processes.
Set ``PRIVBANDIT_NO_JIT=1`` to run everything interpreted even where numba is installed, and
``PRIVBANDIT_JIT=always`` to run compiled at every size from the first call: for a long-lived
one-replicate process (a deployment, a long single run), which then pays numba's import once and
decides each round in about two thirds of the interpreted time (docs/benchmarks.md).
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import math
import os
import types
import warnings
from pathlib import Path

import numpy as np

JIT_MIN_ROWS = 2
"""Calls over fewer rows run interpreted (see the module docstring) -- until numba is loaded."""

_NO_JIT = os.environ.get("PRIVBANDIT_NO_JIT", "")
if _NO_JIT not in ("", "0", "1"):  # "false" / "no" turned the compiled kernels off, silently
    warnings.warn(f"PRIVBANDIT_NO_JIT must be '1' (interpreted kernels) or '0' / unset (compiled), got {_NO_JIT!r}; "
                  "running interpreted", RuntimeWarning, stacklevel=2)
COMPILED = _NO_JIT in ("", "0") and importlib.util.find_spec("numba") is not None
"""Whether kernels compile (numba installed and not disabled)."""

_JIT_MODE = os.environ.get("PRIVBANDIT_JIT", "")
if _JIT_MODE not in ("", "auto", "always"):  # a typo must not pass for the default silently
    warnings.warn(f"PRIVBANDIT_JIT must be 'always' or 'auto' (the default), got {_JIT_MODE!r}; using 'auto'",
                  RuntimeWarning, stacklevel=2)
_LOADED = COMPILED and _JIT_MODE == "always"
"""Whether every call runs compiled: a kernel of this process imported numba (the import is paid), or
``PRIVBANDIT_JIT=always`` asked for it from the start."""

JIT_RENT_CALLS = 200_000
"""Interpreted calls below ``JIT_MIN_ROWS`` rows after which a process imports numba and runs every
kernel compiled from then on (where numba is installed; a no-op otherwise): the ski-rental rule.
Staying interpreted costs ~1-3 us a call more than compiled (one replicate, measured per round:
DP-UCB-Bound 28 against 15 us over ~5 kernel calls, Private-UCB 17 against 14.6 over ~4, DP-TS 48
against 33), and loading numba costs ~0.3-0.7 s once (its import plus the first kernel's cache
load, loaded machine): a process that has already paid about that much in interpreted calls --
a long one-replicate run (~40,000-70,000 rounds of a tree or hybrid policy), or many short ones --
buys, so it never pays more than about twice what the better of the two ways would have cost it.
Short runs, CLI calls and deployments that make few decisions never import numba. A warm disk cache
does not change the sum: of the ~0.4 s, the import is 0.14-0.19 s and the first kernel's load
0.21-0.26 s of numba's own initialisation; further kernels load in 3-7 ms each (docs/benchmarks.md,
session 14)."""
_RENT = JIT_RENT_CALLS  # interpreted calls left before the switch (may go negative without numba)

_KERNELS: dict[str, "Kernel"] = {}


class Kernel:
    """One kernel: ``py_func`` (interpreted), ``jit`` (compiled on first use, or ``py_func`` when
    numba is unavailable), ``at(n)`` (the way for a call over ``n`` rows); calling the kernel
    itself runs ``jit``. Kernels calling kernels are rebound to the same way (an interpreted kernel
    calls interpreted ones, a compiled kernel compiled ones)."""

    def __init__(self, fn=None, *, inline: bool = False, ieee_division: bool = False) -> None:
        self.fn, self._py, self._jit, self._dispatcher = fn, None, None, None
        # inline: compiled into each compiled kernel calling it, for helpers called once per row
        # (a compiled call per row costs more than the row's arithmetic)
        self.inline = inline
        # ieee_division: compiled without Python's zero-division check (numba's error_model="numpy"),
        # for kernels whose divisors are never zero: the quotients are the same IEEE bits, and a loop
        # of divisions without the check's branch runs in SIMD lanes (measured 4x on 5000 rows)
        self.ieee_division = ieee_division
        # kernels find each other by bare name (see _rebind): a second kernel of the same name from
        # another function would silently take the first one's place in every kernel calling it
        same = _KERNELS.get(fn.__name__)
        if same is not None and (same.fn.__module__, same.fn.__qualname__) != (fn.__module__, fn.__qualname__):
            raise RuntimeError(f"kernel name {fn.__name__!r} is taken by {same.fn.__module__}.{same.fn.__qualname__}; "
                               f"give {fn.__module__}.{fn.__qualname__} a module prefix")
        _KERNELS[fn.__name__] = self

    @property
    def py_func(self):
        if self._py is None:
            self._py = _rebind(self.fn, lambda k: k.py_func)
        return self._py

    @property
    def compiled(self):
        """numba's dispatcher for this kernel (None when numba is unavailable or failed)."""
        if self._dispatcher is None and COMPILED and not _FAILED:
            try:
                import numba
            except Exception as exc:  # installed but unusable (e.g. built for another numpy)
                _fall_back(f"numba could not be imported ({exc})")
                return None
            global _LOADED
            _LOADED = True
            self._dispatcher = cached_njit(numba, _rebind(self.fn, lambda k: k.compiled), nogil=True,
                                           inline="always" if self.inline else "never",
                                           error_model="numpy" if self.ieee_division else "python")
            _key_cache_on_callees(self._dispatcher, self)
        return self._dispatcher

    def source_digest(self) -> str:
        """A digest of this kernel's code and of every kernel it calls, transitively (see
        :func:`_key_cache_on_callees`)."""
        h = hashlib.sha256()
        for k in sorted(_callees(self), key=lambda k: k.fn.__name__):
            h.update(k.fn.__name__.encode())
            k._hash_code(h)
        return h.hexdigest()

    def _hash_code(self, h) -> None:
        _hash_code_object(self.fn.__code__, h)

    @property
    def jit(self):
        if self._jit is None:
            dispatcher = self.compiled
            self._jit = self.py_func if dispatcher is None else self._first_call(dispatcher)
        return self._jit

    def _first_call(self, dispatcher):
        """The dispatcher, behind a guard on its first call: a numba that cannot compile this kernel
        (a version it was not tested with) makes it fall back to the interpreted function, with a
        warning, instead of failing the run. Compilation happens before any state is written."""

        def first(*args):
            try:
                out = dispatcher(*args)
            except Exception as exc:
                if not type(exc).__module__.startswith("numba"):
                    raise  # an error of the computation itself, raised the same way interpreted
                _fall_back(f"numba could not compile {self.fn.__name__} ({type(exc).__name__})")
                self._jit = self.py_func
                return self.py_func(*args)
            self._jit = dispatcher
            return out

        return first

    def at(self, n: int):
        # called several times per insert: the cached functions first, the properties only once
        if n < JIT_MIN_ROWS and not _LOADED:
            global _RENT
            _RENT -= 1  # one interpreted call more (see JIT_RENT_CALLS)
            if _RENT >= 0:
                return self._py or self.py_func
        return self._jit or self.jit

    def __call__(self, *args):
        return self.jit(*args)


def cached_njit(numba, fn, **options):
    """``numba.njit(cache=True, **options)(fn)``: compiled once, then loaded from numba's disk cache by
    every later process -- or, where numba finds no writable place for that cache, ``fn`` compiled in
    this process only (same machine code, no disk cache). numba looks for one when the kernel is
    declared (next to the source, then the user's cache directory, ...) and raises RuntimeError
    ("no locator available") if none is writable: a read-only install used from an account without
    a writable cache directory, or a zipped one. Before, that error escaped from the first call
    that compiled (the ski-rental switch, PRIVBANDIT_JIT=always or many replicates) and ended the run
    with a traceback; a declaration raises nothing else (compilation happens at the first call)."""
    try:
        return numba.njit(cache=True, **options)(fn)
    except RuntimeError:
        return numba.njit(cache=False, **options)(fn)


def _callees(root: Kernel) -> set:
    """``root`` and every kernel it calls, transitively (kernels name each other as globals)."""
    seen, todo = set(), [root]
    while todo:
        k = todo.pop()
        if k in seen:
            continue
        seen.add(k)
        todo.extend(_KERNELS[name] for name in _names(k.fn.__code__) if name in _KERNELS)
    return seen


def _names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _hash_code_object(code, h) -> None:
    """Feed ``h`` the parts of ``code`` that decide what it computes, reproducibly across processes
    (marshal's bytes depend on reference counts; a frozenset's repr on the string hash seed)."""
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _hash_code_object(const, h)
        elif isinstance(const, frozenset):
            h.update(repr(sorted(map(repr, const))).encode())
        else:
            h.update(f"{type(const).__name__}:{const!r}".encode())


def _key_cache_on_callees(dispatcher, kernel: Kernel) -> None:
    """Make numba's disk cache of ``dispatcher`` (the compiled ``kernel``) miss when any kernel it
    calls has changed.

    numba keys a cached function on its own file's time stamp and its own bytecode only, but a
    compiled kernel holds the machine code of every kernel it calls (inlined or linked in): after
    an edit of a callee in another module (a git pull into an editable install, a developer's
    change), the caller's stale cache still loaded and ran the OLD callee's arithmetic -- a noise
    scale or an index computed by code that no longer exists (measured: a kernel returning
    ``callee(x) + 1`` with ``callee`` edited from ``2 x`` to ``3 x`` kept returning ``2 x + 1``).
    The index key now also holds :meth:`Kernel.source_digest`, so such an edit recompiles.
    """
    from numba.core.caching import FunctionCache, NullCache

    if getattr(dispatcher, "_cache", None) is None or not isinstance(dispatcher._cache, FunctionCache):
        return
    try:
        digest = kernel.source_digest()
    except Exception:  # a callee's source unreadable (e.g. a zipped install): never load what may be stale
        dispatcher._cache = NullCache()
        return

    class _Cache(FunctionCache):
        def _index_key(self, sig, codegen):
            return super()._index_key(sig, codegen) + (digest,)

    dispatcher._cache = _Cache(dispatcher.py_func)


_FAILED = False


def _fall_back(reason: str) -> None:
    """Run interpreted from now on (same results, slower on many replicates); warn once."""
    global _FAILED
    if not _FAILED:
        warnings.warn(f"{reason}; privbandit runs its kernels interpreted (same results, slower)",
                      RuntimeWarning, stacklevel=3)
    _FAILED = True


def _rebind(fn, way):
    """``fn`` with every kernel it names replaced by ``way(kernel)``."""
    names = {name: way(k) for name, k in _KERNELS.items() if name in fn.__code__.co_names}
    if not names:
        return fn
    env = dict(fn.__globals__, **names)
    out = types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__qualname__, out.__module__, out.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    return out


kernel = Kernel


# --- numpy's C samplers, called from kernels -----------------------------------------------------

_SAMPLER_TYPE = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_double, ctypes.c_double)
_SAMPLERS_BY_ADDRESS: dict[int, object] = {}


def sampler_address(fn) -> int:
    """The address of a ctypes function ``double f(bitgen_t *, double, double)`` -- numpy's exported
    samplers such as ``random_beta`` -- as kernels take it (:func:`call_sampler`): an
    integer, which numba's dispatch reads like any integer, where a ctypes function argument is
    typed anew on every call (``beta_argmax`` at 100 x 5: ~1 us of ~25 a call, measured).
    """
    address = ctypes.cast(fn, ctypes.c_void_p).value
    if address not in _SAMPLERS_BY_ADDRESS:
        _SAMPLERS_BY_ADDRESS[address] = _SAMPLER_TYPE(address)
    return address


class _SamplerCall(Kernel):
    """:func:`call_sampler`'s kernel: interpreted, the Python function (a ctypes call); compiled, one
    indirect call of the C function at the address (:mod:`privbandit.mechanisms._native`, inlined
    into the kernels calling it)."""

    @property
    def compiled(self):
        if self._dispatcher is None and COMPILED and not _FAILED:
            try:
                from privbandit.mechanisms._native import call_sampler_compiled
            except Exception as exc:  # numba installed but unusable (e.g. built for another numpy)
                _fall_back(f"numba could not be imported ({exc})")
                return None
            global _LOADED
            _LOADED = True
            self._dispatcher = call_sampler_compiled
        return self._dispatcher

    def _hash_code(self, h) -> None:
        # compiled, this kernel is _native's intrinsic: its source is what the callers inline
        super()._hash_code(h)
        h.update((Path(__file__).with_name("_native.py")).read_bytes())


def call_sampler(fn: int, state: int, a: float, b: float) -> float:
    """``f(state, a, b)`` for the numpy C sampler ``f`` at address ``fn`` (:func:`sampler_address`) on
    the bit generator at address ``state`` (``Generator.bit_generator.ctypes.bit_generator.value``):
    one draw of numpy's own code, advancing that Generator's stream as its method would. The caller
    holds the bit generator's lock (as numpy's methods take it)."""
    return _SAMPLERS_BY_ADDRESS[fn](state, a, b)


call_sampler = _SamplerCall(call_sampler)


def row_helper(fn) -> Kernel:
    """A kernel inlined into the compiled kernels calling it (see :class:`Kernel`)."""
    return Kernel(fn, inline=True)


def dividing_kernel(fn) -> Kernel:
    """A kernel whose divisors are never zero, compiled without the zero-division check (see
    :class:`Kernel`); interpreted, a zero divisor would still raise."""
    return Kernel(fn, ieee_division=True)


@row_helper
def _row_lower_sum(nodes: np.ndarray, r: int, c: int, level: int, top: int) -> float:
    """numpy's sum of ``where(arange(top) < level, nodes[r, :top, c], 0.0)`` bit for bit (``nodes``:
    the (rows, levels, 2) nodes of a core, ``r`` the stream's row, ``c`` = 0 exact, 1 noisy p-sums;
    indexed in place: a per-row view would cost a reference count per call when compiled). A row of
    fewer than 8 elements is summed left to right from 0.0; from 8 to 128 elements numpy keeps 8
    running sums over the first n - n % 8 elements, combines them pairwise and adds the rest in
    order (numpy/_core/src/umath/loops_utils.h, pairwise_sum; masked terms enter as +0.0)."""
    if top < 8:
        # the masked terms add +0.0, the identity on a running sum started at +0.0 (never -0.0)
        s = 0.0
        for j in range(level):
            s += nodes[r, j, c]
        return s
    # eight scalar running sums (no allocation per row)
    r0 = nodes[r, 0, c] if 0 < level else 0.0
    r1 = nodes[r, 1, c] if 1 < level else 0.0
    r2 = nodes[r, 2, c] if 2 < level else 0.0
    r3 = nodes[r, 3, c] if 3 < level else 0.0
    r4 = nodes[r, 4, c] if 4 < level else 0.0
    r5 = nodes[r, 5, c] if 5 < level else 0.0
    r6 = nodes[r, 6, c] if 6 < level else 0.0
    r7 = nodes[r, 7, c] if 7 < level else 0.0
    # Beyond the level every term is +0.0, and adding +0.0 is idempotent (it only turns -0.0 into
    # +0.0): the masked blocks and tail terms are added once each, not term by term, so the cost
    # follows the level, not the top.
    stop = top - top % 8
    i = 8
    while i < stop and i < level:
        r0 += nodes[r, i, c] if i < level else 0.0
        r1 += nodes[r, i + 1, c] if i + 1 < level else 0.0
        r2 += nodes[r, i + 2, c] if i + 2 < level else 0.0
        r3 += nodes[r, i + 3, c] if i + 3 < level else 0.0
        r4 += nodes[r, i + 4, c] if i + 4 < level else 0.0
        r5 += nodes[r, i + 5, c] if i + 5 < level else 0.0
        r6 += nodes[r, i + 6, c] if i + 6 < level else 0.0
        r7 += nodes[r, i + 7, c] if i + 7 < level else 0.0
        i += 8
    if i < stop:  # whole blocks of masked terms remain
        r0 += 0.0
        r1 += 0.0
        r2 += 0.0
        r3 += 0.0
        r4 += 0.0
        r5 += 0.0
        r6 += 0.0
        r7 += 0.0
    s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(stop, min(top, level)):
        s += nodes[r, i, c]
    if top > max(stop, level):  # a masked tail term
        s += 0.0
    return s


@kernel
def binary_prepare(tau: np.ndarray, nodes: np.ndarray, f: np.ndarray, v: np.ndarray, new: np.ndarray,
                   dropped: np.ndarray, level_out: np.ndarray, limit: int) -> int:
    """First half of an insert of ``v[i]`` into row ``f[i]`` of a binary core (Chan, Shi & Song 2011,
    Alg. 2); reads the state only.

    Row r holds ``tau[r]`` items; the insert completes the node at the lowest set bit ``l`` of
    ``tau[r] + 1``: its exact p-sum ``new`` is the sum of the alive lower nodes (levels < l) plus
    ``v``, and the noisy lower nodes it replaces sum to ``dropped``. The arithmetic is that of
    numpy's vectorised expressions over all rows of the call, so the results are the bits
    :class:`~privbandit.mechanisms._base.BinaryCore` always produced: the call's level count
    ``top`` (one more than its highest completed level; the pairwise sums depend on it) is
    returned. With ``top == 1`` every node is a leaf and ``new`` is ``v`` itself (not ``0.0 + v``).
    Writes ``l``, then (only if the node arrays hold ``top`` levels; otherwise the caller grows them
    and calls again) ``new`` and ``dropped``. Returns -1, having written no state (only scratch
    ``level_out``), if a row already holds ``limit`` items (a bounded tree is full: the caller raises).

    Three passes, each its own compiled function: fused into one loop, LLVM compiled the sums
    several times slower (measured 5000 rows: ~90 against ~20 us).
    """
    top = _binary_levels(tau, f, limit, level_out)
    if top < 0 or top > nodes.shape[1]:
        return top
    if top == 1:
        _leaves(v, new, dropped)
    else:
        _lower_sums(nodes, f, level_out, top, new, dropped)
        _add_values(v, new)
    return top


@kernel
def _binary_levels(tau: np.ndarray, f: np.ndarray, limit: int, level_out: np.ndarray) -> int:
    """Level of the node each insert completes (the lowest set bit of ``tau[f[i]] + 1``); returns
    one more than the highest, or -1 if a row already holds ``limit`` items."""
    top = 0
    for i in range(f.size):
        t = int(tau[f[i]]) + 1  # Python ints interpreted (numpy scalars' arithmetic costs more); no-op compiled
        if t > limit:
            return -1
        low = t & -t
        level = 0
        while (low >> level) > 1:
            level += 1
        level_out[i] = level
        if level + 1 > top:
            top = level + 1
    return top


@kernel
def _leaves(v: np.ndarray, new: np.ndarray, dropped: np.ndarray) -> None:
    for i in range(v.size):
        new[i] = v[i]
        dropped[i] = 0.0


@kernel
def _lower_sums(nodes: np.ndarray, f: np.ndarray, level: np.ndarray, top: int, new: np.ndarray,
                dropped: np.ndarray) -> None:
    for i in range(f.size):
        # plain locals as the arguments: numba's inlining of item expressions measured 7x slower
        r, lv = f[i], level[i]
        new[i] = _row_lower_sum(nodes, r, 0, lv, top)
        dropped[i] = _row_lower_sum(nodes, r, 1, lv, top)


@kernel
def _add_values(v: np.ndarray, new: np.ndarray) -> None:
    for i in range(v.size):
        new[i] = new[i] + v[i]


@kernel
def binary_commit(tau: np.ndarray, total: np.ndarray, nodes: np.ndarray, f: np.ndarray, new: np.ndarray,
                  noisy: np.ndarray, dropped: np.ndarray, level: np.ndarray, top: int, base: int,
                  offsets: np.ndarray, lo: np.ndarray, hi: np.ndarray, node: np.ndarray) -> None:
    """Second half of the insert (after the caller released ``noisy`` = ``new`` + Laplace noise
    through the mechanism's sampler): discard the lower nodes, store the completed node, move the
    output ``total`` by ``noisy - dropped`` (by ``noisy`` alone for leaves, as the vectorised path
    did; the callers read the new outputs from ``total``, no copy is written: one array argument
    fewer for numba's dispatch, ~0.1 us a call) and count the item. Writes each release's footprint:
    records [``lo``, ``hi``) of the stream and ledger node id ``lo * 64 + l``, positions in the
    block shifted by the stream position of the block's first item: ``base`` plus, unless
    ``offsets`` is empty, ``offsets[i]``; with ``lo`` empty, no footprint is written (a caller whose
    inserts all share one footprint computes it once, see :func:`hybrid_binary_commit`). Three
    passes, as in :func:`binary_prepare`."""
    _store_nodes(nodes, f, level, new, noisy)
    _move_totals(total, f, noisy, dropped, top)
    _footprints(tau, f, level, base, offsets, lo, hi, node)


@kernel
def _store_nodes(nodes: np.ndarray, f: np.ndarray, level: np.ndarray, new: np.ndarray, noisy: np.ndarray) -> None:
    for i in range(f.size):
        r, lv = f[i], level[i]
        for j in range(lv):  # nodes indexed in place: no per-row view (see _row_lower_sum)
            nodes[r, j, 0] = 0.0
            nodes[r, j, 1] = 0.0
        nodes[r, lv, 0] = new[i]
        nodes[r, lv, 1] = noisy[i]


@kernel
def _move_totals(total: np.ndarray, f: np.ndarray, noisy: np.ndarray, dropped: np.ndarray, top: int) -> None:
    for i in range(f.size):
        r = f[i]
        total[r] = total[r] + noisy[i] if top == 1 else total[r] + (noisy[i] - dropped[i])


@kernel
def _footprints(tau: np.ndarray, f: np.ndarray, level: np.ndarray, base: int, offsets: np.ndarray,
                lo: np.ndarray, hi: np.ndarray, node: np.ndarray) -> None:
    each = offsets.size > 0
    if lo.size == 0:  # the caller needs no footprint per row: count the items only
        for i in range(f.size):
            r = f[i]
            tau[r] = tau[r] + 1
        return
    for i in range(f.size):
        r, lv = f[i], int(level[i])
        t = int(tau[r]) + 1  # Python ints interpreted, as in _binary_levels
        tau[r] = t
        start = (base + offsets[i] if each else base) + t - (1 << lv)
        lo[i] = start
        hi[i] = start + (1 << lv)
        node[i] = start * 64 + lv


@kernel
def pulled_index(arms: np.ndarray, values: np.ndarray, streams: int, f: np.ndarray) -> int:
    """Validate one bandit round's entries and write their flat index ``f[r] = r * streams +
    arms[r]``. Returns 0, or 1 if an arm lies outside [0, streams), or 2 if a value lies outside
    [0, 1] or is NaN (a NaN fails both comparisons)."""
    for r in range(arms.size):
        a, x = int(arms[r]), float(values[r])  # Python scalars interpreted, as in _binary_levels
        if not (0 <= a < streams):
            return 1
        if not (x >= 0.0 and x <= 1.0):
            return 2
        f[r] = r * streams + a
    return 0


# --- the counters' own state around their binary cores -----------------------------------------------
# (rows, cols) index their (R, K) state arrays; an insert never holds a stream twice.


# --- routing of the two-part counters (hybrid.HybridMechanism, split.SplitMechanism) -----------------


@kernel
def count_items_flat(count: np.ndarray, f: np.ndarray, shift: int, t: np.ndarray, hit: np.ndarray,
                     copy: bool) -> int:
    """Count one item into each stream at flat index ``f`` of the C-contiguous (R, K) ``count``:
    ``t[i]`` is its new count, ``hit[i]`` whether ``t[i] + shift`` is a power of two (the streams
    whose logarithmic part releases); returns how many are. (One index per stream, not a (row,
    column) pair: measured 14 against 7 us on 5000 rows.) Without ``copy`` the counts and flags are
    not written, only counted (see :func:`_new_counts`; a flag, not empty slices of ``t`` and
    ``hit``: interpreted, at one replicate, two slices a round cost ~0.25 us)."""
    c = count.ravel()  # a view of the C-contiguous state (see _add_parts_flat)
    n_hit = 0
    for i in range(f.size):
        r = f[i]
        n = int(c[r]) + 1  # Python ints interpreted, as in _binary_levels
        c[r] = n
        m = n + shift
        h = (m & (m - 1)) == 0
        if copy:
            t[i] = n
            hit[i] = h
        if h:
            n_hit += 1
    return n_hit


@row_helper
def _floor_log2(x: int) -> int:
    """floor(log2 x) of a positive integer, exactly: below 2^53 the binary exponent of the float
    x, which holds x exactly (one call, against a loop of shifts interpreted), above it integer
    shifts."""
    if x < 9007199254740992:  # 2^53: every integer below it is a float exactly
        return math.frexp(float(x))[1] - 1
    k = 0
    while x > 1:
        x >>= 1
        k += 1
    return k


@kernel
def hybrid_blocks(pending: np.ndarray, count: np.ndarray, f: np.ndarray, v: np.ndarray, k: np.ndarray,
                  start: np.ndarray) -> tuple[int, int]:
    """Counts 2^k + tau inside block k of a hybrid mechanism (streams at flat index ``f`` of the
    C-contiguous (R, K) state; ``count`` already holds the new counts): add ``v[i]`` to the items
    pending for the next logarithmic release; return (min k, max k). Only when these differ (the
    streams lie in several blocks) are each stream's block ``k[i]`` and its first count ``start[i]``
    = 2^k written: lock-stepped streams share one block, which the caller takes from min k."""
    p, c = pending.ravel(), count.ravel()  # views of the C-contiguous state (see _add_parts_flat)
    k_min, k_max = 63, 0
    last, b = -1, 0
    for i in range(f.size):
        r = f[i]
        p[r] += v[i]
        n = int(c[r])  # Python ints interpreted, as in _binary_levels
        if n != last:  # lock-stepped streams share their count: one floor_log2 for all of them
            last = n
            b = _floor_log2(n)
            if b < k_min:  # (comparisons, not min/max: two builtin calls less a row interpreted)
                k_min = b
            if b > k_max:
                k_max = b
    if k_min != k_max:
        last = -1
        for i in range(f.size):
            n = int(c[f[i]])
            if n != last:
                last = n
                b = _floor_log2(n)
            k[i] = b
            start[i] = 1 << b
    return k_min, k_max


@kernel
def hybrid_binary_prepare(pending: np.ndarray, v: np.ndarray, count: np.ndarray, tau: np.ndarray,
                          nodes: np.ndarray, f: np.ndarray, k: np.ndarray, start: np.ndarray, new: np.ndarray,
                          dropped: np.ndarray, level: np.ndarray, limit: int) -> tuple[int, int, int, bool]:
    """Counts 2^k + tau (already in the (R, K) ``count``) inside block k of a hybrid mechanism (flat
    rows ``f`` of its binary core ``tau`` / ``nodes``): read the node each insert completes
    (:func:`binary_prepare`); then, only if the core holds enough levels, add ``v`` to the items
    pending for the next logarithmic release and, for streams in several blocks, write each one's
    block ``k`` and its first count ``start`` = 2^k (:func:`hybrid_blocks`; ``f`` indexes the (R, K)
    ``pending`` and ``count`` too). Returns (top, min k, max k,
    uniform): ``top`` as binary_prepare's (above the core's levels nothing but ``level`` was
    written: the caller grows the core and calls again); ``uniform`` whether every insert lies in
    one block at one position of it (lock-stepped streams), so that all releases share one
    footprint."""
    top = binary_prepare(tau, nodes, f, v, new, dropped, level, limit)
    if top < 0 or top > nodes.shape[1]:
        return top, 0, 0, False
    k_min, k_max = hybrid_blocks(pending, count, f, v, k, start)
    uniform = k_min == k_max
    if uniform and f.size > 1:  # (one insert is at one position of its block: no loop to set up)
        first = tau[f[0]]
        for i in range(1, f.size):
            if tau[f[i]] != first:
                uniform = False
                break
    return top, k_min, k_max, uniform


@kernel
def hybrid_count_prepare(count: np.ndarray, f: np.ndarray, t: np.ndarray, pow2: np.ndarray, pending: np.ndarray,
                         v: np.ndarray, tau: np.ndarray, nodes: np.ndarray, k: np.ndarray, start: np.ndarray,
                         new: np.ndarray, dropped: np.ndarray, level: np.ndarray,
                         limit: int) -> tuple[int, int, int, int, bool]:
    """A hybrid insert's first step: count one item into each stream at flat index ``f``
    (:func:`count_items_flat`; only when some new count is a power of two -- the logarithmic part's
    release -- are the counts ``t`` and their flags ``pow2`` written, for the caller to route); when no count is a power of two (most inserts: a stream reaches one log2 of
    its count times), every item goes to the binary part, whose first kernel
    (:func:`hybrid_binary_prepare`) runs in the same call. Returns (how many counts are powers of
    two, then hybrid_binary_prepare's (top, min k, max k, uniform), or zeros when some count is a
    power of two and the caller routes the items itself)."""
    n_log = count_items_flat(count, f, 0, t, pow2, False)
    if n_log:
        _new_counts(count, f, t, pow2)
        return n_log, 0, 0, 0, False
    top, k_min, k_max, uniform = hybrid_binary_prepare(pending, v, count, tau, nodes, f, k, start, new, dropped,
                                                       level, limit)
    return 0, top, k_min, k_max, uniform


@kernel
def _new_counts(count: np.ndarray, f: np.ndarray, t: np.ndarray, pow2: np.ndarray) -> None:
    """``t[i]`` = the count of the stream at flat index ``f[i]``, ``pow2[i]`` whether it is a power of two."""
    c = count.ravel()
    for i in range(f.size):
        n = int(c[f[i]])
        t[i] = n
        pow2[i] = (n & (n - 1)) == 0


@kernel
def hybrid_binary_commit(tau: np.ndarray, total: np.ndarray, nodes: np.ndarray, f: np.ndarray, new: np.ndarray,
                         noisy: np.ndarray, dropped: np.ndarray, level: np.ndarray, top: int, base: int,
                         offsets: np.ndarray, lo: np.ndarray, hi: np.ndarray, node: np.ndarray,
                         noisy_sum: np.ndarray, log_sum: np.ndarray) -> tuple[int, int, int]:
    """After the nodes' release ``noisy``: the binary core's commit (:func:`binary_commit`: new nodes,
    totals, footprints ``lo``, ``hi``, ``node`` unless ``lo``
    is empty), then each stream's output ``noisy_sum`` = its logarithmic part + its binary total
    (:func:`_add_parts_flat`: ``f`` indexes the (R, K) ``noisy_sum`` and ``log_sum`` too). Returns the
    footprint (lo, hi, node) shared by every insert when ``lo`` is empty (offsets empty and all
    inserts at one level and one count of their block), zeros otherwise (each footprint is in ``lo``,
    ``hi``, ``node``)."""
    binary_commit(tau, total, nodes, f, new, noisy, dropped, level, top, base, offsets, lo, hi, node)
    _add_parts_flat(noisy_sum, log_sum, total, f)
    if lo.size > 0:  # every insert's own footprint is written: no shared one to work out (~0.4 us interpreted)
        return 0, 0, 0
    lv = int(level[0])
    first = base + int(tau[f[0]]) - (1 << lv)
    return first, first + (1 << lv), first * 64 + lv


@kernel
def _add_parts_flat(out: np.ndarray, base: np.ndarray, x: np.ndarray, f: np.ndarray) -> None:
    """out[r] = base[r] + x[r] at the flat index r = ``f[i]`` of the C-contiguous (R, K) ``out`` and
    ``base`` and the flat ``x`` (a hybrid's output: its logarithmic part plus its binary total)."""
    # ravel: of a C-contiguous array a view, as reshape(-1) is (numpy and numba alike), at half its
    # cost interpreted (~0.1 us a call at one replicate: a round's fixed cost). The mechanisms' state
    # arrays are their own np.zeros, C-contiguous by construction.
    o, b = out.ravel(), base.ravel()
    for i in range(f.size):
        r = f[i]
        o[r] = b[r] + x[r]


@kernel
def split_blocks(pending: np.ndarray, block: np.ndarray, rr: np.ndarray, kk: np.ndarray, v: np.ndarray,
                 k: np.ndarray, start: np.ndarray) -> tuple[int, int]:
    """Items after the first m = 2^(r+1) - 1 of a split mechanism's stream: add ``v[i]`` to the items
    pending for the next logarithmic release, write the stream's block ``k[i]`` = r and the block's
    offset ``start[i]`` = m; return (min r, max r)."""
    k_min, k_max = 63, 0
    for i in range(rr.size):
        r, c = rr[i], kk[i]
        pending[r, c] += v[i]
        b = block[r, c]
        k[i] = b
        start[i] = (1 << (b + 1)) - 1
        k_min = min(k_min, b)
        k_max = max(k_max, b)
    return k_min, k_max


@kernel
def release_statistic(pending: np.ndarray, rr: np.ndarray, kk: np.ndarray, v: np.ndarray, stat: np.ndarray) -> None:
    """stat[i] = the items pending for stream (rr[i], kk[i])'s logarithmic release plus ``v[i]``."""
    for i in range(rr.size):
        stat[i] = pending[rr[i], kk[i]] + v[i]


@kernel
def log_commit(log_sum: np.ndarray, pending: np.ndarray, noisy_sum: np.ndarray, block: np.ndarray, rr: np.ndarray,
               kk: np.ndarray, t: np.ndarray, shift: int, noisy: np.ndarray, lo: np.ndarray, node: np.ndarray) -> None:
    """After the logarithmic releases ``noisy`` at counts with ``t[i] + shift`` = 2^j: add them to the
    logarithmic part, empty the pending items, set the output to the logarithmic part, write the
    release's first record ``lo[i]`` = 2^(j-1) - shift and ledger node ``j``; and, unless ``block``
    is empty (the hybrid mechanism), the stream's new block ``block`` = j - 1 (the split mechanism)."""
    blocks = block.size > 0
    for i in range(rr.size):
        r, c = rr[i], kk[i]
        s = log_sum[r, c] + noisy[i]
        log_sum[r, c] = s
        pending[r, c] = 0.0
        noisy_sum[r, c] = s
        m = t[i] + shift
        j = _floor_log2(m)
        lo[i] = m // 2 - shift
        node[i] = j
        if blocks:
            block[r, c] = j - 1


@kernel
def reset_rows(nodes: np.ndarray, total: np.ndarray, tau: np.ndarray, f: np.ndarray) -> None:
    """Empty rows ``f`` of a binary core (a new block starts)."""
    for i in range(f.size):
        r = f[i]
        for j in range(nodes.shape[1]):
            nodes[r, j, 0] = 0.0
            nodes[r, j, 1] = 0.0
        total[r] = 0.0
        tau[r] = 0


@kernel
def partition(hit: np.ndarray, f: np.ndarray, rr: np.ndarray, kk: np.ndarray, t: np.ndarray, v: np.ndarray,
              f1: np.ndarray, rr1: np.ndarray, kk1: np.ndarray, t1: np.ndarray, v1: np.ndarray,
              f2: np.ndarray, rr2: np.ndarray, kk2: np.ndarray, t2: np.ndarray, v2: np.ndarray) -> None:
    """The entries (f, rr, kk, t, v)[i] with ``hit[i]`` into the arrays ending in 1, the others into
    those ending in 2, each in their order (as boolean indexing selects them)."""
    i1 = 0
    i2 = 0
    for i in range(hit.size):
        if hit[i]:
            f1[i1], rr1[i1], kk1[i1], t1[i1], v1[i1] = f[i], rr[i], kk[i], t[i], v[i]
            i1 += 1
        else:
            f2[i2], rr2[i2], kk2[i2], t2[i2], v2[i2] = f[i], rr[i], kk[i], t[i], v[i]
            i2 += 1


@kernel
def prefix_stage(counts: np.ndarray, draws: np.ndarray, row: np.ndarray) -> None:
    """One call of a ledger's prefix recorder (:meth:`privbandit.ledger.Ledger.prefix_recorder`), over
    flat row-major arrays: ``draws[i] += 1`` wherever ``counts[i] >= 1`` (a NaN count is no release; the
    same integers as numpy's ``draws += counts >= 1``), and the first ``row.size`` counts (the tracked
    replicates') copied into the staging row. The comparison's 0 or 1 is added without a branch, so
    the loop runs in SIMD lanes (measured ~1 us at 5000 entries, against ~9 for a 2-D loop with a branch)."""
    for i in range(draws.shape[0]):
        draws[i] += counts[i] >= 1.0
    for i in range(row.shape[0]):
        row[i] = counts[i]
