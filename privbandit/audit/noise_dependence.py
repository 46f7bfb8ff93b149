"""Check 5d (session 13): distinct noise draws are independent of one another.

The privacy contract (DESIGN.md; Dwork & Roth 2014, Def. 3.3 and Thm. 3.6) composes releases as
*independent* mechanisms: each Laplace or Gaussian release draws fresh noise. The noise-law checks
(:func:`privbandit.audit.whitebox._noise_law` and the coincidence tests) look at one residual at a
time, so noise that is right in law but a function of another release's noise -- arm 2j+1's draw
made from arm 2j's uniform shifted by 1/2, a node's noise vector whose entries come from one uniform,
a draw derived from the previous one on the same stream -- passes them all, while the pair of
releases leaks the data exactly: given both, the difference of the statistics is known (no finite
epsilon).

Each traced release's residual (released value - statistic) / declared scale is mapped through the
declared law's CDF to U in (0, 1) (the probability integral transform: Uniform(0, 1) under the
contract, and independent across distinct draws). Releases are then paired three ways, per replicate:

* **within one call** -- consecutive elements of one sampler call (streams, vector entries);
* **across streams** -- the k-th release of a mechanism on stream s with its k-th release on the next
  stream that has one (co-indexed draws: "the same position on another arm");
* **along a stream** -- a mechanism's k-th and (k+1)-th release on one stream (serial dependence).

For n pairs (U, V) of independent Uniform(0, 1) values, four tests of exact level (no asymptotics):
(V - U) mod 1 and (V + U) mod 1 are Uniform(0, 1) (DKW-Massart, as check 5); the mean of
(U - 1/2)(V - 1/2), each term in [-1/4, 1/4] with mean 0, deviates by t with probability at most
2 exp(-8 n t^2) (Hoeffding); and each cell of an m x m grid holds Binomial(n, 1/m^2) pairs (exact
binomial tails, both sides, Bonferroni over the cells). A shift or reflection mod 1 fails the first
two, a shared component the third, any function V = f(U) (a curve: most cells empty, a few
crowded) the fourth. The check spends its own ``alpha``, Bonferroni-split over every test it makes
(the white-box run's statistical budget grows by ``alpha``, as the per-stream law's did in round 12).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from privbandit.audit.false_alarms import spend

MIN_PAIRS = 200
"""Pairings with fewer pairs are not tested (too little power to matter)."""
MAX_CELLS = 8
"""The grid test's m x m cells, at most (fewer when n / m^2 < 8)."""
PAIRINGS = ("within one call", "across streams", "along a stream")
LAGS = tuple(2 ** j for j in range(1, 11))
"""Session 14: the lags L of the far pairings along a stream (the k-th release with the (k + L)-th)."""
FAR_PAIRINGS = ("across replicates",) + tuple(f"along a stream, lag {lag}" for lag in LAGS)
NEAR_LAGS = tuple(range(1, 9))
"""Session 15 (s15/reach2): the small lags L of the pairings across mechanisms of one stream and across streams."""
NEAR_PAIRINGS = (tuple(f"across mechanisms of a stream, lag {lag}, phase {ph}" for lag in NEAR_LAGS for ph in (0, 1))
                 + tuple(f"across streams, lag {lag:+d}, phase {ph}" for ph in (0, 1)
                         for lag in range(-NEAR_LAGS[-1], NEAR_LAGS[-1] + 1) if lag or ph))
"""Session 15 (s15/reach2): the pairings of :func:`near_pairs` (their own ``near_alpha``)."""


def noise_dependence(rel: dict, alpha: float, usable: np.ndarray, far_alpha: float | None = None,
                     near_alpha: float | None = None) -> list[str]:
    """Findings (messages) of check 5d on the traced releases ``rel`` (``ReleaseTracer.released()``)
    restricted to the boolean mask ``usable`` (float-mode releases whose residual is in the declared
    law's units). Family-wise false-alarm rate at most ``alpha`` for session 13's three pairings, plus
    ``far_alpha`` (default ``alpha``: a budget of its own) for session 14's :data:`FAR_PAIRINGS`: the k-th
    release of a mechanism on a stream paired with its k-th on the same stream of the *next replicate*
    (noise shared or derived across replicates: a generator reseeded per replicate, a draw re-used by
    index), and with its (k + L)-th on the same stream for L = 2, 4, ..., 1024 (a draw derived from one made
    L releases earlier: a noise buffer of period L, a cursor that wraps, a counter-based generator keyed on
    the wrong counter) -- L counted in releases: a vector node's j-th entry is paired with the j-th entry of
    the node L releases later. Disjoint pairs as before: under the contract each pairing's n pairs are independent,
    and each test's level holds exactly. ``near_alpha`` (default ``alpha``: a third budget of its own, session 15
    s15/reach2) for :data:`NEAR_PAIRINGS` (:func:`near_pairs`): one draw used by two mechanisms of a stream, or
    by two streams a few releases apart."""
    idx = np.flatnonzero(usable)
    if idx.size < MIN_PAIRS + 1:
        return []
    z = (rel["out"][idx] - rel["stat"][idx]) / rel["param"][idx]
    laplace = rel["kind"][idx] == "laplace"
    u = np.where(laplace, sps.laplace.cdf(z), sps.norm.cdf(z))
    rep = rel["rep"][idx].astype(np.int64)
    st = rel["st"][idx].astype(np.int64)
    draw = rel["draw"][idx].astype(np.int64)
    seq = rel["seq"][idx].astype(np.int64)
    entry = (rel["entry"][idx] if len(rel.get("entry", ())) == len(rel["rep"]) else np.zeros(idx.size)).astype(np.int64)
    from privbandit.audit.whitebox import _codes  # (whitebox imports this module: bound at call time)

    # integer codes per run of equal names (np.unique over the name strings cost ~1 s per 10^6 releases)
    mech = _codes(rel["mechanism"][idx], {})
    # a release's rank among its mechanism's releases on its (replicate, stream), in call order
    rank = _rank(np.stack([mech, rep, st], axis=1), np.stack([seq, entry], axis=1))
    pairs = {
        "within one call": _adjacent(np.stack([draw, rep], axis=1), np.stack([st, entry], axis=1)),
        "across streams": _adjacent(np.stack([mech, rep, rank], axis=1), st[:, None]),
        "along a stream": _adjacent(np.stack([mech, rep, st], axis=1), rank[:, None]),
    }
    out = _tested(pairs, u, alpha, rel, idx, rep, st, "noise dependence, session 13's pairings (check 5d)")
    far = {"across replicates": _adjacent(np.stack([mech, st, rank], axis=1), rep[:, None])}
    # lags counted in releases of one entry (a vector node's j-th entry with the j-th entry of the node L releases
    # later; for scalar releases, entry 0: the stream's k-th and (k + L)-th)
    along = np.stack([mech, rep, st, entry], axis=1)
    along_rank = _rank(along, seq[:, None])
    far.update(zip(FAR_PAIRINGS[1:], _lagged(along, along_rank, LAGS)))
    out += _tested(far, u, alpha if far_alpha is None else far_alpha, rel, idx, rep, st,
                   "noise dependence, far pairings (check 5d)")
    near = near_pairs(mech, rep, st, entry, seq, along_rank)
    return out + _tested(near, u, alpha if near_alpha is None else near_alpha, rel, idx, rep, st,
                         "noise dependence, near pairings (check 5d)")


def near_pairs(mech: np.ndarray, rep: np.ndarray, st: np.ndarray, entry: np.ndarray, seq: np.ndarray,
               rank: np.ndarray) -> dict:
    """Session 15 (s15/reach2): the pairings :data:`NEAR_PAIRINGS`, index pairs of rows (one replicate each):

    * **across mechanisms of a stream, lag L** (L = 1..8) -- all releases of one (replicate, stream, entry), every
      mechanism together, in call order; the k-th with the (k + L)-th where the two come from *different*
      mechanisms (parts of one split or hybrid mechanism, a posterior and a gap release, ...): one draw used in
      two mechanisms of a stream (a flush re-using the binary node's noise);
    * **across streams, lag L** (L = -8..8) -- a mechanism's k-th release (per entry, ``rank``) on stream s with
      its (k + L)-th on stream s + 1 (the stream numbers as the run reports them): a draw of one stream derived
      from another stream's a few releases earlier or later (arm 2j + 1's k-th from arm 2j's (k - 3)-th).

    Each pairing comes in two phases so that a tie at any offset is in one of them while each pairing's pairs
    stay disjoint (each row in one pair at most: under the contract its n pairs are independent and the tests'
    levels hold exactly): along the combined order, phase 0 pairs the k-th with the (k + L)-th for floor(k / L)
    even, phase 1 for it odd; across streams, phase 0 pairs even streams s with s + 1, phase 1 odd ones (lag 0
    of phase 0 is session 13's "across streams")."""
    lags = NEAR_LAGS
    group = np.stack([rep, st, entry], axis=1)
    pairs = {}
    combined = _rank(group, np.stack([seq, mech], axis=1)) if len(mech) and mech.min() != mech.max() else None
    if len(mech) and mech.min() != mech.max():  # one mechanism only: no pair across mechanisms
        lagged = _lagged(group, combined, lags, (0, 1))
        for (phase, lag), (i, j) in zip([(ph, lag) for ph in (0, 1) for lag in lags], lagged):
            keep = mech[i] != mech[j]
            pairs[f"across mechanisms of a stream, lag {lag}, phase {phase}"] = (i[keep], j[keep])
    names = [n for n in NEAR_PAIRINGS if n.startswith("across streams")]
    # one packed key per row, (mech, rep, entry, st, rank): within a (mech, rep, entry, st) group the ranks are
    # 0 .. n - 1, so in key order a stream's rows are contiguous and the row of rank k + L on the next stream sits
    # at that stream's first row + k + L -- two searches in all, not one per lag
    spans = [int(c.max()) + 1 for c in (mech, rep, entry)] + [int(st.max() - st.min()) + 2, int(rank.max()) + 1] \
        if len(rank) else []
    if not len(rank) or math.prod(spans) >= 2 ** 62:
        pairs.update((n, (np.zeros(0, dtype=np.int64),) * 2) for n in names)
        return _capped(pairs)
    key = np.zeros(len(rank), dtype=np.int64)
    for col, span in zip((mech, rep, entry, st - st.min(), rank), spans):
        key = key * span + col
    order = np.argsort(key, kind="stable")
    sorted_keys = key[order]
    head = key - rank + spans[-1]  # the key of rank 0 on stream st + 1 of the row's group
    first = np.searchsorted(sorted_keys, head)
    size = np.searchsorted(sorted_keys, head + spans[-1]) - first  # that stream's rows (0: none)
    has = np.flatnonzero(size > 0)  # rows whose next stream has releases (computed once: the loop is per lag)
    r_has, size_has, first_has = rank[has], size[has], first[has]
    parity = (st[has] - st.min()) % 2
    for name in names:
        lag, phase = int(name.split("lag ")[1].split(",")[0]), int(name[-1])
        at = r_has + lag
        hit = np.flatnonzero((parity == phase) & (at >= 0) & (at < size_has))
        pairs[name] = (has[hit], order[first_has[hit] + at[hit]])
    return _capped(pairs)


MAX_NEAR_PAIRS = 20_000
"""A near pairing with more pairs is thinned to this many, evenly spaced in row order (a subset fixed before any
value is read: its pairs stay disjoint and independent under the contract, the levels exact). A tie shared by a
fraction f of the releases still leaves ~f x 20,000 identical pairs; the cost of the 49 pairings stays a fraction
of the run's on the contextual runs' ~10^6 traced values."""


def _capped(pairs: dict) -> dict:
    out = {}
    for name, (i, j) in pairs.items():
        if i.size > MAX_NEAR_PAIRS:
            keep = np.linspace(0, i.size - 1, MAX_NEAR_PAIRS).astype(np.int64)
            i, j = i[keep], j[keep]
        out[name] = (i, j)
    return out

    def key(s_off: int, r_off: int) -> np.ndarray:
        k = np.zeros(len(rank), dtype=np.int64)
        for col, span in zip((mech, rep, entry, st - st.min() + s_off, rank + lags[-1] + r_off), spans):
            k = k * span + col
        return k

    base = key(0, 0)
    order = np.argsort(base, kind="stable")
    sorted_keys = base[order]
    for name in names:
        lag, phase = int(name.split("lag ")[1].split(",")[0]), int(name[-1])
        left = np.flatnonzero((st - st.min()) % 2 == phase)
        want = key(1, lag)[left]
        at = np.minimum(np.searchsorted(sorted_keys, want), len(order) - 1)
        hit = (sorted_keys[at] == want) & (rank[left] + lag >= 0)
        pairs[name] = (left[hit], order[at[hit]])
    return pairs


def _tested(pairs: dict, u: np.ndarray, alpha: float, rel: dict, idx: np.ndarray, rep: np.ndarray,
            st: np.ndarray, family: str) -> list[str]:
    """The findings of the four tests on every pairing with at least :data:`MIN_PAIRS` pairs, Bonferroni over
    them all at family-wise ``alpha`` (tallied as ``family``'s spend, :mod:`privbandit.audit.false_alarms`)."""
    tested = {name: p for name, p in pairs.items() if p[0].size >= MIN_PAIRS}
    if not tested:
        return []
    spend(family, alpha)
    a = alpha / (4.0 * len(tested))
    out = []
    for name, (i, j) in tested.items():
        failed = _tests(u[i], u[j], a)
        if failed:
            k = i[0]
            out.append(f"the noise of distinct releases is dependent ({name}: n={i.size} pairs, e.g. "
                       f"{rel['mechanism'][idx[k]]} replicate {rep[k]}, stream {st[k]}): {failed} (each test at "
                       f"level {a:.3g}, family-wise alpha {alpha:g}) -- noise right in law but derived from "
                       f"another release's noise; given both releases the data is exposed")
    return out


def _tests(u: np.ndarray, v: np.ndarray, a: float) -> str:
    """The first of the four exact-level tests (module docstring) that rejects at level ``a``, or ''."""
    n = u.size
    crit = math.sqrt(math.log(2.0 / a) / (2.0 * n))
    for label, w in (("(V - U) mod 1", np.mod(v - u, 1.0)), ("(V + U) mod 1", np.mod(v + u, 1.0))):
        d = _dkw(w)
        if d > crit:
            return f"{label} is not uniform, sup|F_n - F| = {d:.4f} > {crit:.4f}"
    mean = float(np.mean((u - 0.5) * (v - 0.5)))
    t = math.sqrt(math.log(2.0 / a) / (8.0 * n))
    if abs(mean) > t:
        return f"mean of (U - 1/2)(V - 1/2) = {mean:.4f}, |.| > {t:.4f} (0 for independent U, V)"
    m = max(2, min(MAX_CELLS, int(math.isqrt(n // 8))))
    cell = np.minimum((u * m).astype(np.int64), m - 1) * m + np.minimum((v * m).astype(np.int64), m - 1)
    counts = np.bincount(cell, minlength=m * m)
    p = 1.0 / (m * m)
    hi, lo = int(counts.max()), int(counts.min())
    p_hi = float(sps.binom.sf(hi - 1, n, p))  # P(count >= hi)
    p_lo = float(sps.binom.cdf(lo, n, p))  # P(count <= lo)
    if min(p_hi, p_lo) * 2 * m * m <= a:
        return (f"the {m}x{m} grid of (U, V) holds {lo}..{hi} pairs per cell where Binomial({n}, 1/{m * m}) "
                f"expects {n * p:.1f} (tail {min(p_hi, p_lo):.3g})")
    return ""


def _dkw(w: np.ndarray) -> float:
    """sup |F_n - F| of ``w`` against Uniform(0, 1)."""
    s = np.sort(w)
    n = s.size
    grid = np.arange(1, n + 1) / n
    return float(max(np.max(grid - s), np.max(s - (grid - 1.0 / n))))


def _sorted_groups(group: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows sorted by (``group``, ``order``): the permutation, whether each sorted row starts a new group,
    and its 0-based position within its group."""
    from privbandit.audit.whitebox import _lex_key, _lex_order  # (whitebox imports this module)

    perm, _ = _lex_order(np.concatenate([group, order], axis=1))
    new = np.ones(len(perm), dtype=bool)
    key = _lex_key(group)
    if key is None:
        g = group[perm]
        new[1:] = np.any(g[1:] != g[:-1], axis=1)
    else:
        g = key[perm]
        new[1:] = g[1:] != g[:-1]
    start = np.maximum.accumulate(np.where(new, np.arange(len(perm)), 0))
    return perm, new, np.arange(len(perm)) - start


def _rank(group: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per row, its 0-based position among the rows of its ``group`` when sorted by ``order``."""
    perm, _, pos = _sorted_groups(group, order)
    rank = np.empty(len(perm), dtype=np.int64)
    rank[perm] = pos
    return rank


def _lagged(group: np.ndarray, rank: np.ndarray, lags, phases=(0,)) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per phase in ``phases`` and per lag L (phase-major), index pairs (i, j) of rows of one ``group`` whose ranks
    are k and k + L, for the k with floor(k / L) even (phase 0) or odd (phase 1): each row in one pair at most
    (disjoint), as :func:`_adjacent` for L = 1. One sort for all."""
    if not len(group):
        return [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)) for _ in phases for _ in lags]
    perm, new, pos = _sorted_groups(group, rank[:, None])
    start = np.flatnonzero(new)
    size = np.diff(np.append(start, len(perm)))
    left = np.repeat(size, size) - pos  # rows from this one to its group's end, itself included
    out = []
    for phase in phases:
        for lag in lags:
            first = np.flatnonzero(((pos // lag) % 2 == phase) & (left > lag))
            out.append((perm[first], perm[first + lag]))
    return out


def _adjacent(group: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j) of rows next to each other within a ``group`` sorted by ``order``, each row
    in one pair at most (pairs (0, 1), (2, 3), ... of a group: disjoint, so that under the contract the
    n pairs are independent and the tests' levels hold exactly)."""
    if not len(group):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    perm, new, pos = _sorted_groups(group, order)
    first = np.flatnonzero((pos % 2 == 0)[:-1] & ~new[1:])  # an even position with a next row in its group
    return perm[first], perm[first + 1]
