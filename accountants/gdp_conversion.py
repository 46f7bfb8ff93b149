"""Exact conversions between mu-Gaussian DP and (epsilon, delta)-DP, in log space.

Dong, Roth & Su (2022), "Gaussian Differential Privacy", JRSS-B, Corollary 2.13: a mechanism is
mu-GDP iff it is (eps, delta(eps))-DP for every eps >= 0 with

    delta(eps) = Phi(a) - e^eps Phi(b),   a = -eps/mu + mu/2,  b = a - mu.

(The analytic Gaussian mechanism of Balle & Wang 2018 is the same curve.) We evaluate
``log delta = log Phi(a) + log(1 - exp(inner))`` with ``inner = log(e^eps Phi(b) / Phi(a))``.
Because b^2 - a^2 = 2 eps exactly, ``inner = log m(b) - log m(a)`` with the Mills ratio
m(x) = Phi(x)/phi(x) = sqrt(pi/2) erfcx(-x/sqrt(2)): no large numbers cancel, so the curve stays
finite and accurate for mu in [1e-8, 1e3], eps in [0, 1e4] and delta down to 1e-300:

* mu < 1: ``inner = -int_b^a (x + 1/m(x)) dx`` (d/dx log m = x + 1/m) by 24-point Gauss-Legendre on
  an interval of length mu; the difference of two nearly equal logarithms (which loses mu-relative
  accuracy, 5e-8 at mu = 1e-8) is never formed;
* mu >= 1: the difference of log-erfcx values (a <= 0) or ``-a^2/2 + log(erfcx(-b/sqrt 2)/2) - log Phi(a)``
  (a > 0, where erfcx(-a/sqrt 2) would overflow);
* a < -40: delta <= Phi(a) < 1e-349 is reported as Phi(a) (an upper bound, in log space).

Every reported log delta carries an upward margin of 1e-15 (1 + |log delta| + a^2) covering the
rounding of a (log Phi has slope ~|a| in a) and of the logarithms: about 1e-12 relative at
delta = 1e-300, 1e-14 for ordinary deltas, always on the safe (larger-delta) side.

Inversions find the root in log space and then return the smallest point of a fixed lattice (40
significant bits, 9e-13 relative) on the safe side, so that

* ``epsilon_for_delta`` returns an eps whose reported delta is <= the target (never optimistic) and
  is monotone non-increasing in delta (it is the first lattice point meeting the target, not
  wherever a root-finder stopped);
* ``mu_for_epsilon_delta`` returns a mu whose reported delta at eps is <= the target (never a mu too
  large), monotone in both arguments the same way.
"""

from __future__ import annotations

import math
import struct
import sys

import numpy as np
from scipy import special

from accountants import _validate

_GL_X, _GL_W = np.polynomial.legendre.leggauss(24)
_SQRT_HALF_PI = math.sqrt(math.pi / 2.0)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_FAR_TAIL = -40.0  # below this a, delta <= Phi(a) < e^-800: report Phi(a)
_LATTICE_BITS = 40


def _log_mills(x: np.ndarray) -> np.ndarray:
    """log m(x) = log(Phi(x)/phi(x)) for x <= 0 (erfcx of a non-negative argument: no overflow)."""
    return np.log(_SQRT_HALF_PI * special.erfcx(-x * _INV_SQRT2))


def _inner_small_mu(a: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """-int_{a-mu}^{a} (x + 1/m(x)) dx by Gauss-Legendre (x + 1/m(x) is smooth and positive)."""
    mid = a - mu / 2.0
    x = mid[..., None] + (mu / 2.0)[..., None] * _GL_X
    with np.errstate(over="ignore"):
        g = x + 1.0 / (_SQRT_HALF_PI * special.erfcx(-x * _INV_SQRT2))
    return -(mu / 2.0) * (g @ _GL_W)


def _log_delta_raw(mu: np.ndarray, epsilon: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log delta without margin, a) -- broadcast arrays."""
    mu, epsilon = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(epsilon, dtype=float))
    with np.errstate(over="ignore"):  # eps / mu -> inf at a tiny mu: a = -inf, delta = 0 (exact)
        a = -epsilon / mu + mu / 2.0
    b = a - mu
    log_pa = special.log_ndtr(a)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # mu >= 1, a <= 0: difference of log Mills ratios (both arguments <= 0)
        inner_neg = _log_mills(np.minimum(b, 0.0)) - _log_mills(np.minimum(a, 0.0))
        # mu >= 1, a > 0: log(e^eps Phi(b)) = -a^2/2 + log(erfcx(-b/sqrt2)/2) since eps - b^2/2 = -a^2/2
        inner_pos = -a * a / 2.0 + np.log(0.5 * special.erfcx(-b * _INV_SQRT2)) - log_pa
        inner = np.where(a <= 0.0, inner_neg, inner_pos)
        small = mu < 1.0
        if np.any(small):
            inner = np.where(small, _inner_small_mu(np.where(small, a, 0.0), np.where(small, mu, 0.5)),
                             inner)
        inner = np.minimum(inner, 0.0)  # the exact value is < 0; rounding cannot make delta exceed Phi(a)
        # log(1 - e^inner): log(-expm1) near 0, log1p(-exp) below -ln 2
        tail = np.where(inner > -math.log(2.0), np.log(-np.expm1(inner)), np.log1p(-np.exp(inner)))
    tail = np.where(a < _FAR_TAIL, 0.0, tail)  # Phi(a) alone: an upper bound, far below 1e-300
    return log_pa + tail, a


def _log_delta_and_margin(mu, epsilon) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log delta without margin, its error margin (0 where not finite), a)."""
    log_d, a = _log_delta_raw(mu, epsilon)
    with np.errstate(invalid="ignore", over="ignore"):  # an infinite margin is dropped just below
        margin = 1e-15 * (1.0 + np.abs(log_d) + a * a)
    return log_d, np.where(np.isfinite(margin), margin, 0.0), a


def log_delta_for_epsilon(mu: float | np.ndarray, epsilon: float | np.ndarray) -> np.ndarray:
    """Natural log of the GDP delta(eps) curve, rounded up; vectorised over ``mu`` and ``epsilon``.

    ``mu`` must be > 0 and ``epsilon`` >= 0 (not re-validated here: the public wrappers do it).
    """
    log_d, margin, _ = _log_delta_and_margin(mu, epsilon)
    return np.minimum(log_d + margin, 0.0)


def delta_bounds_for_epsilon(mu: float, epsilon: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds on the exact GDP delta(eps) at each ``epsilon`` >= 0 (arrays; not validated).

    The upper one is :func:`delta_for_epsilon`; the lower one takes the same margin off instead of adding
    it (the margin bounds the raw log's error on either side), and exp's own rounding (1 ulp) off again.
    Where a < -40 the reported value is Phi(a), an upper bound only: the lower bound there is 0. (The fast
    PLD's connect-the-dots masses need both sides: a mass is a difference of curve values, session 13.)
    """
    log_d, margin, a = _log_delta_and_margin(mu, epsilon)
    upper = _exp_up(np.minimum(log_d + margin, 0.0))
    with np.errstate(under="ignore", invalid="ignore"):
        lower = np.exp(np.minimum(log_d - margin, 0.0)) * (1.0 - 4.0 * 2.0 ** -52)
    lower = np.where((a < _FAR_TAIL) | ~(lower >= 0.0), 0.0, lower)
    return np.minimum(lower, upper), upper


def delta_for_epsilon(mu: float | np.ndarray, epsilon: float | np.ndarray) -> float | np.ndarray:
    """The smallest delta such that mu-GDP implies (epsilon, delta)-DP (exact, Dong et al. Cor 2.13),
    rounded up by ~1e-14 relative. Where the exact delta is below the least subnormal it is 5e-324 (0.0 only
    where it is exactly 0: eps / mu infinite).

    Vectorised: arrays broadcast; a scalar input gives a float.
    """
    if np.ndim(mu) == 0 and np.ndim(epsilon) == 0:
        _validate.positive("mu", mu)
        _validate.nonnegative("epsilon", epsilon)
        return float(_exp_up(log_delta_for_epsilon(mu, epsilon)))
    mu_arr = np.asarray(mu, dtype=float)
    eps_arr = np.asarray(epsilon, dtype=float)
    if np.any(~(mu_arr > 0)) or np.any(~np.isfinite(mu_arr)):
        raise ValueError("mu must lie in (0, inf) elementwise")
    if np.any(~(eps_arr >= 0)) or np.any(~np.isfinite(eps_arr)):
        raise ValueError("epsilon must lie in [0, inf) elementwise")
    return _exp_up(log_delta_for_epsilon(mu_arr, eps_arr))


def _exp_up(log_d):
    """exp(log_d), but never 0 where log_d is finite: a delta below the least subnormal is reported as
    5e-324, not 0 -- an (eps, 0) claim where the truth is e^-870 was below the truth (session 11:
    Laplace(10) * 10^4 at eps = 900; mu = 1 at eps = 40)."""
    with np.errstate(under="ignore"):
        return np.where(np.isfinite(log_d), np.maximum(np.exp(log_d), math.ulp(0.0)), np.exp(log_d))


_LOW_BITS = 52 - (_LATTICE_BITS - 1)  # low mantissa bits a lattice point has zero (40 significant bits)
_TOP_INDEX = struct.unpack("<q", struct.pack("<d", sys.float_info.max))[0] >> _LOW_BITS  # largest finite
_LINEAR_STEPS = 64  # lattice steps walked one by one before galloping (the usual case needs a few)


def _index_up(x: float) -> int:
    """Index of the smallest lattice point >= x >= 0: the lattice points (floats with at most 40
    significant bits, 9e-13 relative apart) are the non-negative floats whose low 13 mantissa bits are
    zero, and positive floats are ordered like their bit patterns, so index i is the float of bits
    i << 13 (exact for every float, subnormals included; no rounding can put it below x)."""
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return -(-bits >> _LOW_BITS)


def _value(i: int) -> float:
    return struct.unpack("<d", struct.pack("<q", i << _LOW_BITS))[0]


def _boundary(i: int, ok, inside: int) -> int:
    """From index i with ok(i) true, the last index with ok going in direction ``inside`` (+1 or -1)
    before ok fails (or the end of [0, _TOP_INDEX]): a few single steps, then galloping and bisection,
    so a starting point far from the boundary (a root-finder stopped early) costs O(log) evaluations,
    not one evaluation per lattice step (mu_for_epsilon_delta(0, 1e-300) walked ~1e11 of them)."""
    end = _TOP_INDEX if inside > 0 else 0
    for _ in range(_LINEAR_STEPS):
        if i == end or not ok(i + inside):
            return i
        i += inside
    good, step = i, 1
    while True:  # gallop: ok(good) holds; find a failing index beyond it
        nxt = good + inside * step
        if (nxt - end) * inside >= 0:
            if ok(end):
                return end
            bad = end
            break
        if not ok(nxt):
            bad = nxt
            break
        good, step = nxt, step * 2
    while abs(bad - good) > 1:  # bisect between good (ok) and bad (not ok)
        mid = (good + bad) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def lattice_down(x: float) -> float:
    """The largest lattice point (40 significant bits) <= x >= 0: a monotone map, only ever down.

    The accountants' eps(delta) reads its delta here first (session 13): a smaller delta gives a larger,
    still valid eps, and every delta of one lattice cell (1.8e-12 relative wide) gets the same answer, so
    the answer's last-digit noise can no longer make eps(delta) rise with delta inside a cell; across cells
    eps falls by the curve's slope over a cell, which exceeded the noise at every point measured. Paired
    with :func:`lattice_up` on delta(eps), the round trip stays ordered: delta(eps(d)) <= lattice_down(d)."""
    if not (x > 0 and math.isfinite(x)):
        return x
    return _value(struct.unpack("<q", struct.pack("<d", x))[0] >> _LOW_BITS)


def lattice_up(x: float, ok=None) -> float:
    """The smallest lattice point (40 significant bits, 1.8e-12 relative apart) >= x >= 0 -- with ``ok``
    (true at x), the smallest one >= x at which ``ok`` holds (within 64 steps, else x itself).

    A monotone map: an answer that rounding noise moves by an ulp or two lands on the same lattice point
    unless the noise straddles one (odds ~1e-4 per ulp of noise), so answers rounded up with it keep their
    order in their inputs (session 11: KOV's delta was 1 ulp larger at a larger eps in 15 of 112 nextafter
    walks). Only ever moves up."""
    if not (x > 0 and math.isfinite(x)):
        return x
    i = _index_up(x)
    if ok is None:
        return _value(i)
    for _ in range(64):
        if ok(_value(i)):
            return _value(i)
        i += 1
    return x


def _first_lattice_point(x: float, ok, *, increasing_ok: bool) -> float:
    """Starting from x (near the boundary of ``ok``), the lattice point at the boundary of ``ok``.

    ``increasing_ok=True``: ok(y) holds for y >= boundary; returns the smallest lattice point with ok
    (``inf`` if not even the largest finite lattice point is ok).
    ``increasing_ok=False``: ok holds for y <= boundary; returns the largest lattice point with ok
    (0.0 if none above 0 is ok).
    """
    at = lambda i: ok(_value(i))  # noqa: E731
    i = _index_up(max(x, 0.0))
    if increasing_ok:
        i = min(i, _TOP_INDEX)
        if not at(i):  # rounding of the root: move up to the first ok point
            if not at(_TOP_INDEX):
                return math.inf
            # the first ok index above i: the last failing one, found from i going up, plus one
            i = _boundary(i, lambda k: not at(k), +1) + 1
        if i == 0:
            return 0.0
        return _value(_boundary(i, at, -1))
    i = min(i, _TOP_INDEX)
    if not at(i):  # the root rounded up past the boundary: move down to the last ok point
        i = _boundary(i, lambda k: not at(k), -1) - 1
        if i <= 0:
            return 0.0
    return _value(_boundary(i, at, +1))


def epsilon_for_delta(mu: float, delta: float) -> float:
    """The smallest eps >= 0 with delta(eps) <= ``delta`` for mu-GDP, rounded up (never optimistic).

    Monotone non-increasing in ``delta`` and non-decreasing in ``mu`` (see the module docstring).
    Reference (ACCOUNTING.md): mu = 1, delta = 1e-5 gives 4.37717809568.
    """
    mu = _validate.positive("mu", mu)
    delta = _validate.probability("delta", delta)
    log_target = math.log(delta)

    def log_d(e: float) -> float:
        return float(log_delta_for_epsilon(mu, e))

    def ok(e: float) -> bool:
        return float(np.exp(log_d(e))) <= delta

    if ok(0.0):
        return 0.0
    # Upper bracket: delta(eps) <= Phi(a), and Phi(a) = delta at eps = mu (mu/2 - Phi^-1(delta)).
    hi = max(mu * (mu / 2.0 - float(special.ndtri(delta))), 1e-300)
    while math.isfinite(hi) and log_d(hi) > log_target:  # guard against rounding in ndtri
        hi *= 2.0
    if not math.isfinite(hi):  # mu above ~1.3e154: eps ~ mu^2 / 2 is beyond the floats; inf is the bound
        return math.inf
    from scipy import optimize  # (on first use: accountants/rdp.py)

    try:
        eps = optimize.brentq(lambda e: log_d(e) - log_target, 0.0, hi, xtol=5e-324,
                              rtol=4 * np.finfo(float).eps, maxiter=500)
    except RuntimeError:  # no convergence (log_d is flat in rounding at mu ~ 1e154): bisect
        lo = 0.0
        for _ in range(2200):  # from [0, ~1e308] to one ulp: ~1100 halvings of the exponent and mantissa
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            lo, hi = (lo, mid) if log_d(mid) <= log_target else (mid, hi)
        eps = hi  # log_d(hi) <= log_target throughout: an upper bound
    return float(_first_lattice_point(eps, ok, increasing_ok=True))


def mu_for_epsilon_delta(epsilon: float, delta: float) -> float:
    """The largest mu such that mu-GDP implies (epsilon, delta)-DP, rounded down (safe for calibration)."""
    epsilon = _validate.nonnegative("epsilon", epsilon)
    delta = _validate.probability("delta", delta)
    log_target = math.log(delta)

    def f(mu: float) -> float:
        return float(log_delta_for_epsilon(mu, epsilon)) - log_target

    def ok(mu: float) -> bool:
        return mu > 0.0 and float(np.exp(log_delta_for_epsilon(mu, epsilon))) <= delta

    lo, hi = 1e-12, 1.0
    while f(lo) > 0:  # delta(0; mu) ~ mu/sqrt(2 pi): tiny deltas at eps = 0 need tiny mu
        # (down to the subnormals: delta = 2.3e-308 at eps = 0 needs mu = 5.8e-308, and every delta
        # the validation accepts has a mu above 1e-320; stopping at 1e-300 refused deltas below ~4e-301)
        lo /= 1e4
        if lo < 1e-320:
            raise ValueError(
                f"no mu > 1e-320 satisfies (epsilon={epsilon}, delta={delta}); delta is too small for this epsilon"
            )
    while f(hi) <= 0:  # delta(eps; mu) increases with mu; mu ~ sqrt(2 eps) for a large eps
        lo, hi = hi, hi * 2.0
        if hi > 1e300:
            raise ValueError(f"epsilon must be finite and below the floats' reach of mu: every mu up to 1e300 "
                             f"satisfies (epsilon={epsilon}, delta={delta})")
    from scipy import optimize  # (on first use: accountants/rdp.py)

    try:
        mu = optimize.brentq(f, lo, hi, xtol=5e-324, rtol=4 * np.finfo(float).eps, maxiter=500)
    except RuntimeError:  # no convergence (f is flat in rounding at mu ~ 1e154): bisect the bracket
        for _ in range(200):  # [lo, hi] = [m, 2m] at worst: 60 halvings reach one ulp
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            lo, hi = (mid, hi) if f(mid) <= 0 else (lo, mid)
        mu = lo  # f(lo) <= 0 throughout: a valid mu
    if not ok(mu):
        step = mu * 2e-16
        while not ok(mu):
            mu -= step
            step *= 2.0
    mu = float(_first_lattice_point(mu, ok, increasing_ok=False))
    # The forward certificate of the answer must not exceed epsilon either (session 12): it is rounded UP
    # to the lattice, so the largest valid lattice mu certified up to one lattice step above epsilon
    # (eps 0.1 at 1e-6: mu 0.027544650243811475 certified 0.10000000000002274; 7 of 42 targets). Both
    # conditions are monotone in mu (the forward map is non-decreasing in mu), so the largest lattice point
    # meeting both is found by walking down from the first one (one or two steps in every case measured),
    # and the answer stays monotone in epsilon and delta. Above mu ~ 1.34e154 the forward map answers inf
    # (mu^2 / 2 is past the floats: it declines rather than certifies); there the exact check alone holds.
    def forward_fails(i: int) -> bool:
        value = epsilon_for_delta(_value(i), delta)
        return math.isfinite(value) and value > epsilon

    if mu > 0.0 and math.isfinite(mu):
        i = _index_up(mu)
        if forward_fails(i):
            i = _boundary(i, forward_fails, -1) - 1
            mu = _value(i) if i > 0 else 0.0
    return mu


def mu_from_pure_epsilon(epsilon: float | np.ndarray) -> float | np.ndarray:
    """mu such that every pure eps-DP mechanism is mu-GDP: mu = -2 Phi^{-1}(1 / (1 + e^eps)).

    Dong, Roth & Su (2022): the eps-DP trade-off curve is two chords through the symmetric point
    1/(1+e^eps); the convex Gaussian curve G_mu through that point lies below them. eps = 1 gives
    mu = 1.232035... Since 1/(1+e^eps) = (1 - tanh(eps/2))/2, mu = 2 sqrt(2) erfinv(tanh(eps/2)),
    which keeps full relative accuracy for tiny eps (eps <= 1); above, -2 Phi^{-1}(expit(-eps)) via
    ``ndtri_exp`` keeps large eps finite. Rounded up by 1e-15 relative (both forms are accurate to a
    few ulps) so that numerical error never makes the bound optimistic.
    """
    eps = np.asarray(epsilon, dtype=float)
    if np.any(~(eps > 0)) or np.any(np.isnan(eps)):
        raise ValueError("epsilon must lie in (0, inf]")
    with np.errstate(over="ignore"):
        small = 2.0 * math.sqrt(2.0) * special.erfinv(np.tanh(np.minimum(eps, 1.0) / 2.0))
        # log(1/(1+e^eps)) = -log1p(e^eps) = -logaddexp(0, eps); ndtri_exp takes the log-probability.
        large = -2.0 * special.ndtri_exp(-np.logaddexp(0.0, eps))
    mu = np.where(eps <= 1.0, small, large)
    mu = mu * (1.0 + 1e-15)
    return float(mu) if np.ndim(epsilon) == 0 else mu
