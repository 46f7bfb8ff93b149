"""Compiled per-round steps of the Thompson-sampling policies (issue 19).

Each kernel is the ONE implementation of its step, in the style of
:mod:`privbandit.mechanisms._kernels`: plain Python over arrays, compiled by numba when it is
installed (``Kernel.at(rows)``: interpreted for one replicate, compiled from ``JIT_MIN_ROWS`` rows
on), same arithmetic and same results bit for bit either way
(tests/privbandit/policies/test_ts_kernels.py). No kernel draws noise (the releases' draws stay
with the mechanisms' samplers) or touches noisy statistics' arithmetic beyond what numpy did
elementwise; the posterior draws and the transcendental functions (np.log2, whose SIMD results may
differ from libm's in the last bit) stay in numpy, in the policies. Beta variates, a post-processing
draw, are taken with numpy's own code: :func:`beta_argmax_rows` calls numpy's C sampler
``random_beta`` on the Generator's bit generator, element by element as ``Generator.beta`` does, so
the values and the stream are numpy's (through ``call_sampler`` at the function's integer address:
a ctypes function passed as a kernel argument cost ~1 us of numba's typing per call). The arg max over arms (:func:`argmax_rows`, through
:func:`row_argmax`) is numpy's ``argmax(axis=1)``, first maximum and first NaN alike (Gaussian TS: at
1000 rows of 5 arms numpy's axis-1 reduction spends most of its time in per-row setup).
"""

from __future__ import annotations

import ctypes

import numpy as np

from privbandit.mechanisms._kernels import call_sampler, kernel, sampler_address


@kernel
def add_pulled(sums: np.ndarray, counts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> int:
    """One bandit round's conjugate update: ``sums[r, arms[r]] += rewards[r]`` and
    ``counts[r, arms[r]] += 1`` for every replicate r (one add per entry, as numpy's fancy-indexed
    ``+=`` did). Returns 0, or 1 (and writes nothing) if an arm lies outside [0, arms)."""
    k = sums.shape[1]
    for r in range(arms.shape[0]):
        if not (0 <= arms[r] < k):
            return 1
    for r in range(arms.shape[0]):
        a = arms[r]
        sums[r, a] += rewards[r]
        counts[r, a] += 1.0
    return 0


def pulled_arrays(arms, rewards, replicates: int, n_arms: int) -> tuple[np.ndarray, np.ndarray]:
    """``arms`` (integers, shape (replicates,)) and ``rewards`` (floats, same shape) as the kernels
    take them, or ValueError naming the parameter (a compiled kernel has no bounds checks)."""
    arms = np.asarray(arms)
    rewards = np.asarray(rewards, dtype=float)
    if arms.shape != (replicates,) or arms.dtype.kind not in "iu":
        raise ValueError(f"arms must be an integer array of shape ({replicates},), got {arms.dtype} {arms.shape}")
    if rewards.shape != (replicates,):
        raise ValueError(f"rewards must have shape ({replicates},), got {rewards.shape}")
    return arms, rewards



@kernel
def route_pulled(phase: np.ndarray, gap_phase: int, arms: np.ndarray, rewards: np.ndarray,
                 batch_sum: np.ndarray, mask: np.ndarray, values: np.ndarray) -> int:
    """Private-TS's routing of one round's rewards (Mishra & Thakurta 2015, Algorithm 2): a replicate
    in gap estimation (``phase[r] == gap_phase``) adds its reward to its pulled arm's batch sum (one
    add, as numpy's fancy-indexed ``+=``); every other replicate's reward is marked in ``mask`` /
    ``values`` (cleared here first) for its arm's tree. Returns how many rewards go to a tree, or -1
    (and writes nothing) if an arm lies outside [0, arms)."""
    k = batch_sum.shape[1]
    for r in range(arms.shape[0]):
        if not (0 <= arms[r] < k):
            return -1
    n = 0
    for r in range(arms.shape[0]):
        for j in range(k):
            mask[r, j] = False
        a = arms[r]
        if phase[r] == gap_phase:
            batch_sum[r, a] += rewards[r]
        else:
            mask[r, a] = True
            values[r, a] = rewards[r]
            n += 1
    return n


@kernel
def phase_ends(phase: np.ndarray, phase_start: np.ndarray, m: np.ndarray, n_random: np.ndarray, t: int,
               k: int, gap_phase: int, random_phase: int, closing: np.ndarray, done: np.ndarray):
    """Private-TS's phase clocks after round ``t``: the replicates whose gap-estimation batch is
    complete (k m rounds played in it: ``closing``) and those whose k n_r random pulls are
    (``done``), each in row order (as ``np.nonzero`` lists them). Returns (how many close, how many
    are done)."""
    n_close, n_done = 0, 0
    for r in range(phase.shape[0]):
        played = t - phase_start[r]
        if phase[r] == gap_phase:
            if played == k * m[r]:
                closing[n_close] = r
                n_close += 1
        elif phase[r] == random_phase:
            if played == k * n_random[r]:
                done[n_done] = r
                n_done += 1
    return n_close, n_done


@kernel
def pts_route_round(phase: np.ndarray, phase_start: np.ndarray, m: np.ndarray, n_random: np.ndarray, t: int, k: int,
                    gap_phase: int, random_phase: int, arms: np.ndarray, rewards: np.ndarray, batch_sum: np.ndarray,
                    mask: np.ndarray, values: np.ndarray, closing: np.ndarray, done: np.ndarray) -> tuple[int, int, int]:
    """Private-TS's round bookkeeping in one call: :func:`route_pulled` (the rewards of round ``t``),
    then :func:`phase_ends` (the clocks after it). Returns (how many rewards go to a tree, how many
    replicates' gap batches close, how many finish their random pulls); (-1, 0, 0), having written
    nothing, if an arm lies outside [0, arms)."""
    n = route_pulled(phase, gap_phase, arms, rewards, batch_sum, mask, values)
    if n < 0:
        return n, 0, 0
    n_close, n_done = phase_ends(phase, phase_start, m, n_random, t, k, gap_phase, random_phase, closing, done)
    return n, n_close, n_done


@kernel
def beta_parameters(phase: np.ndarray, ts_phase: int, count: np.ndarray, noisy_sum: np.ndarray,
                    a: np.ndarray, b: np.ndarray) -> int:
    """Private-TS line 15's Beta parameters for the replicates in Thompson sampling (``phase[r] ==
    ts_phase``), in row order, into the first rows of ``a`` and ``b``: r = the tree total clipped to
    [0, n] (n = the tree's count as a float), a = r + 1, b = n - r + 1 -- numpy's
    ``np.minimum(np.maximum(x, 0), n)`` elementwise (a NaN stays NaN; +-0 give the same a and b).
    Returns how many rows were written."""
    j = 0
    for r in range(phase.shape[0]):
        if phase[r] == ts_phase:
            for c in range(count.shape[1]):
                n = float(count[r, c])
                x = noisy_sum[r, c]
                x = 0.0 if x < 0.0 else x
                x = n if x > n else x
                a[j, c] = x + 1.0
                b[j, c] = n - x + 1.0
            j += 1
    return j


@kernel
def private_ts_arms(phase: np.ndarray, phase_start: np.ndarray, t: int, k: int, ts_phase: int,
                    best: np.ndarray, arms: np.ndarray) -> None:
    """Private-TS's arms for round ``t``: ``best`` (the arg max of each Thompson-sampling replicate's
    Beta draws, in replicate order) for the replicates in Thompson sampling, the round robin
    ``(t - 1 - phase_start) % k`` for the others (the first two phases)."""
    j = 0
    for r in range(phase.shape[0]):
        if phase[r] == ts_phase:
            arms[r] = best[j]
            j += 1
        else:
            arms[r] = (t - 1 - phase_start[r]) % k


@kernel
def argmax_rows(x: np.ndarray, out: np.ndarray) -> None:
    """``out[r] = x[r].argmax()`` for every row: the first maximal entry, or the first NaN if the row
    holds one (numpy's rule for floats: a NaN is the maximum). (As a row helper inlined into its
    callers, LLVM compiled this loop ~1.7x slower: a kernel of its own.)"""
    for r in range(x.shape[0]):
        best = 0
        top = x[r, 0]
        if top == top:  # else: the first entry is a NaN, numpy's answer
            for j in range(1, x.shape[1]):
                v = x[r, j]
                if v > top:
                    best, top = j, v
                elif v != v:
                    best = j
                    break
        out[r] = best

ARGMAX_MIN_ROWS = 400
"""From this many rows on :func:`row_argmax` runs the kernel (measured, 5 arms: numpy's axis-1
reduction 0.85 us at 100 rows against the kernel's 1.2 with its call overhead; 6.8 against 5.4 us
at 1000 rows)."""


def row_argmax(x: np.ndarray) -> np.ndarray:
    """``x.argmax(axis=1)`` (intp): :func:`argmax_rows` where it runs compiled over at least
    ``ARGMAX_MIN_ROWS`` rows, numpy's own otherwise (fewer rows, or no numba: a Python loop per row
    is slower than numpy's reduction); both give the same indices
    (tests/privbandit/policies/test_ts_kernels.py)."""
    rows = x.shape[0]
    way = argmax_rows.at(rows)
    if rows < ARGMAX_MIN_ROWS or way is argmax_rows.py_func:
        return x.argmax(axis=1)
    out = np.empty(rows, dtype=np.intp)
    way(x, out)
    return out


# --- Beta draws with numpy's own sampler, from compiled code ---------------------------------------
_NUMPY_BETA: list = []  # [the ctypes function, or None], resolved on first use
_BETA_ADDRESS: list = []  # [its address for the kernels (``sampler_address``), or None]


def numpy_beta():
    """numpy's C Beta sampler ``random_beta(bitgen_t *, a, b)`` -- the function ``Generator.beta``
    calls once per element, in row-major order, after its argument checks -- as a ctypes function
    a compiled kernel can call (:func:`beta_argmax_rows`), or None where this numpy does not export it.

    Resolved once per process and checked before first use: 64 draws through it must equal
    ``Generator.beta``'s on the same stream, bit for bit, and leave the stream in the same state;
    otherwise (another numpy's ABI) None, and the callers draw with ``Generator.beta``."""
    if not _NUMPY_BETA:
        fn = _load_numpy_beta()
        _BETA_ADDRESS.append(None if fn is None else sampler_address(fn))
        _NUMPY_BETA.append(fn)
    return _NUMPY_BETA[0]


def _load_numpy_beta():
    try:
        import numpy.random._generator as generator

        fn = ctypes.CDLL(generator.__file__).random_beta
    except (ImportError, OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_double, ctypes.c_double)
    fn.restype = ctypes.c_double
    # parameters on both of numpy's branches (Johnk's for a, b <= 1; gamma ratios otherwise)
    a = np.array([0.5, 0.3, 1.0, 2.0, 1.0, 700.0, 3.5, 0.9] * 8)
    b = np.array([0.7, 1.0, 1.0, 1.0, 5.0, 2.0, 0.4, 60.0] * 8)
    mine, ref = np.random.default_rng(2024), np.random.default_rng(2024)
    state = mine.bit_generator.ctypes.bit_generator.value
    got = np.array([fn(state, x, y) for x, y in zip(a.tolist(), b.tolist())])
    if not (np.array_equal(got, ref.beta(a, b)) and mine.bit_generator.state == ref.bit_generator.state):
        return None
    return fn


@kernel
def beta_argmax_rows(beta: int, state: int, a: np.ndarray, b: np.ndarray, theta: np.ndarray, out: np.ndarray) -> int:
    """``out = Generator.beta(a, b).argmax(axis=1)`` for (R, K) parameters, drawn by numpy's
    ``random_beta`` (:func:`numpy_beta`) at address ``beta`` (``sampler_address``; through
    ``call_sampler``) on the bit generator at address ``state``: the same sampler
    on the same stream in the same (row-major) order, so the same values (into ``theta``) and the same
    stream afterwards, without the array call's two argument checks and broadcasting iterator (~10 us
    of ~30 at 100 x 5). The arg max is :func:`argmax_rows`, numpy's rule.

    Returns 0, or 1 (having drawn nothing) where a parameter is <= 0 -- the values ``Generator.beta``
    refuses (the caller lets it raise its own error); a NaN is drawn as it would draw it."""
    R, K = a.shape
    for r in range(R):
        for k in range(K):
            if a[r, k] <= 0.0 or b[r, k] <= 0.0:
                return 1
    for r in range(R):
        for k in range(K):
            theta[r, k] = call_sampler(beta, state, a[r, k], b[r, k])
    argmax_rows(theta, out)
    return 0


SCALAR_BETA_MAX = 8
"""Up to this many Beta draws per round (one replicate of a few arms) are drawn one call each."""


def native_beta(rng: np.random.Generator, way, kernel) -> int | None:
    """The address of numpy's ``random_beta`` (:func:`numpy_beta`, through ``call_sampler``) where
    ``way`` -- ``kernel.at(rows)``, a kernel drawing Beta variates as :func:`beta_argmax_rows` does --
    runs compiled for ``rng``: a plain ``numpy.random.Generator`` (a subclass may override ``beta``)
    and a numpy whose sampler passed its check; None otherwise (the caller draws with ``rng.beta``).
    The caller then calls ``way`` under the bit generator's lock, as ``Generator.beta`` holds it."""
    if way is kernel.py_func or type(rng) is not np.random.Generator or numpy_beta() is None:
        return None
    return _BETA_ADDRESS[0]


def beta_argmax(rng: np.random.Generator, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmax over arms of theta ~ Beta(a, b) (R, K float arrays), the draws in row-major order:
    ``rng.beta(a, b).argmax(axis=1)``. Where the kernels run compiled, one kernel draws them with
    numpy's own sampler (:func:`privbandit.policies._ts_kernels.beta_argmax_rows`, under the bit
    generator's lock as ``Generator.beta`` takes it) and takes the arg max; for at most
    ``SCALAR_BETA_MAX`` draws interpreted, one ``rng.beta(a_i, b_i)`` call per entry in the same order.
    Each is the same sampler (numpy's random_beta) on the same stream, so the same values, without the
    array call's broadcasting and argument checks (~8 against ~3 us for five arms; ~30 against ~20 us
    at 100 x 5). A Generator subclass (which may override ``beta``) is drawn through its ``beta``."""
    rows = a.shape[0]
    way = beta_argmax_rows.at(rows)
    if a.ndim == 2 and a.shape == b.shape and a.dtype == b.dtype == np.float64:
        address = native_beta(rng, way, beta_argmax_rows)
        if address is not None:
            out = np.empty(rows, dtype=np.intp)
            bits = rng.bit_generator
            with bits.lock:
                refused = way(address, bits.ctypes.bit_generator.value, a, b, np.empty(a.shape), out)
            if not refused:
                return out
    if a.size > SCALAR_BETA_MAX:
        return rng.beta(a, b).argmax(axis=1)
    beta = rng.beta
    theta = np.array([beta(x, y) for x, y in zip(a.ravel().tolist(), b.ravel().tolist())])
    return theta.reshape(a.shape).argmax(axis=1)
