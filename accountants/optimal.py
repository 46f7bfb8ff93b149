"""Optimal homogeneous composition (Kairouz, Oh & Viswanath 2015, "The Composition Theorem for
Differential Privacy", ICML, Theorem 3.3).

For k adaptive releases that are each eps0-DP (no other assumption), the exact worst case is k-fold
binary randomized response. With p = e^eps0/(1+e^eps0), q = 1 - p:

    delta(eps) = sum_{j=0..k} C(k, j) p^(k-j) q^j max(0, 1 - exp(eps - (k - 2j) eps0)),

and for (eps0, delta0) releases delta_total = 1 - (1 - delta0)^k (1 - delta(eps)).

Evaluation is in log space (``gammaln`` and a log-sum-exp). Only a window of j around the mass that
matters is summed; the omitted terms are each at most the binomial pmf, so their total is bounded
by a Chernoff–Hoeffding tail bound P(J <= a) <= exp(-k KL(a/k || q)) (and the upper analogue), which
is *added*. A relative margin covering the rounding of the log-binomials is added as well, so every
reported delta is an upper bound. k = 1e7 is evaluated in milliseconds.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from accountants import _validate, gdp_conversion
from accountants._sums import log_sum_exp
from accountants.base import Accountant, UnsupportedEventError
from accountants.events import Event, LeafEvent

_U = 2.0 ** -52
_WINDOW_SIGMAS = 40.0
_MAX_WINDOW = 1 << 21  # beyond this many binomial terms per evaluation the accountant declines


def _log_kl(a: float, q: float, log_q: float, log_p: float) -> float:
    """KL(a || q) between Bernoulli(a) and Bernoulli(q), a in [0, 1]."""
    return float(special.xlogy(a, a) - a * log_q + special.xlogy(1 - a, 1 - a) - (1 - a) * log_p)


def window_sigmas(log_floor: float | None) -> float:
    """Half-width of the summed window in binomial standard deviations.

    Terms outside are bounded by Chernoff (added), so any width is valid; a width z makes that bound
    ~exp(-z^2/2): 40 reaches e^-800, and a query at target delta only needs the bound well below it
    (``log_floor`` = log(target) - 40, i.e. < 4e-18 of the target).
    """
    if log_floor is None:
        return _WINDOW_SIGMAS
    return min(_WINDOW_SIGMAS, math.sqrt(2.0 * max(-log_floor, 1.0)) + 2.0)


def window_size(k: int, epsilon0: float, log_floor: float | None = None) -> float:
    """The number of binomial terms one evaluation sums (the cost of one delta evaluation)."""
    log_q = -float(np.logaddexp(0.0, epsilon0))
    q = math.exp(log_q)
    return 2.0 * (window_sigmas(log_floor) * math.sqrt(k * q * (1 - q)) + 64.0)


def log_delta_randomized_response(k: int, epsilon0: float, epsilon: float,
                                  log_floor: float | None = None, lower: bool = False) -> float:
    """log of the Thm 3.3 delta(eps) for k eps0-DP releases (an upper bound, see module docstring).

    ``log_floor``: terms whose total is far below exp(log_floor) may be left to the Chernoff bound
    (a narrower window, still an upper bound).

    ``lower``: a LOWER bound instead (session 16, for :meth:`OptimalHomogeneousAccountant.epsilon_exceeds`):
    the window's terms alone (every term is non-negative, so the tails' bounds are left out), at eps
    shifted up instead of down (each summed factor 1 - e^(eps - loss) then at most its real value), and the
    rounding margin subtracted instead of added."""
    if k == 0 or epsilon0 == 0.0:
        return -math.inf
    if math.isinf(epsilon0):  # p = 1: every release reveals its input, delta(eps) = 1 at any finite eps
        return 0.0 if math.isfinite(epsilon) else -math.inf
    log_p = -float(np.logaddexp(0.0, -epsilon0))
    log_q = -float(np.logaddexp(0.0, epsilon0))
    q = math.exp(log_q)
    # evaluate at a slightly smaller eps (delta is decreasing in eps, so this only raises it): the
    # float losses (k - 2j) eps0 and the quotient eps / eps0 are rounded, and a term whose real loss
    # exceeds eps by less than that rounding was dropped -- PureDP(0.01) * 50 certified 0.5 at
    # delta 1e-100 although its largest loss is 50 x 0.01000000000000000021 > 0.5 (exact delta there:
    # 1.2e-32)
    shift = 8 * _U * (abs(epsilon) + k * epsilon0)
    if not math.isfinite(shift):  # k eps0 past 1e308: near eps only the losses |(k - 2j) eps0| ~ |eps| matter
        shift = 24 * _U * abs(epsilon) + 8 * _U * epsilon0
    epsilon = epsilon + shift if lower else epsilon - shift
    # nonzero terms need (k - 2j) eps0 > eps, i.e. j < (k - eps/eps0)/2
    bound = (k - epsilon / epsilon0) / 2.0
    if not bound > 0:  # also eps / eps0 = inf (a huge eps): no term is nonzero, and ceil(-inf) would raise
        return -math.inf
    jmax = math.ceil(bound) - 1
    if jmax < 0:
        return -math.inf
    jmax = min(jmax, k)
    mean = k * q
    half = window_sigmas(log_floor) * math.sqrt(k * q * (1 - q)) + 64.0
    centre = min(mean, jmax)
    lo = max(0, math.floor(centre - half))
    hi = min(jmax, math.ceil(centre + half))
    j = np.arange(lo, hi + 1, dtype=float)
    with np.errstate(over="ignore"):  # j log q = -inf at eps0 ~ 1e308: a term of mass 0, as it should be
        log_binom = (special.gammaln(k + 1.0) - special.gammaln(j + 1.0) - special.gammaln(k - j + 1.0)
                     + (k - j) * log_p + j * log_q)
    with np.errstate(over="ignore"):  # (k - 2j) eps0 past 1e308 (eps0 ~ 1e308): x = -inf, a factor of 1, or +inf, 0
        x = epsilon - (k - 2.0 * j) * epsilon0  # < 0 on the window
    with np.errstate(divide="ignore"):
        log_factor = np.log(-np.expm1(np.minimum(x, 0.0)))
    parts = [log_sum_exp(log_binom + log_factor)] if len(j) else []
    # omitted terms: each is at most its pmf; bound the tails by Chernoff-Hoeffding
    if lo > 0 and not lower:  # j in [0, lo - 1], lo - 1 < mean
        parts.append(-k * _log_kl((lo - 1) / k, q, log_q, log_p))
    if hi < jmax and not lower:  # j in [hi + 1, jmax], hi + 1 > mean
        parts.append(-k * _log_kl((hi + 1) / k, q, log_q, log_p))
    if not parts:
        return -math.inf
    total = log_sum_exp(parts)
    # rounding margin for the log-binomials: magnitudes ~ gammaln(k+1) + k |log p| + k |log q|
    # (k eps0, not |eps|: every eps reaching here is below k eps0, and a margin growing with eps made delta
    # 2e-16 larger at eps = 0.238 than at 0 near delta = 1 -- session 11)
    magnitude = float(special.gammaln(k + 1.0)) + k * (abs(log_p) + abs(log_q)) + k * epsilon0
    return total - (1e-14 * magnitude + 1e-12) if lower else total + 1e-14 * magnitude + 1e-12


def _exp_capped(log_d: float) -> float:
    """min(1, exp(log_d)) without overflow or underflow: the rounding margins of
    :func:`log_delta_randomized_response` grow with k eps0 and can push log_d far above 0 (a delta of 1, not
    an OverflowError); a finite log_d far below 0 gives the least subnormal, not 0."""
    if log_d >= 0.0:
        return 1.0
    if log_d == -math.inf:  # no term: the exact delta is 0
        return 0.0
    # a finite log delta below -745 is e^-870, not 0: the least subnormal is the upper bound (session 11)
    return max(math.exp(log_d), math.ulp(0.0))


class OptimalHomogeneousAccountant(Accountant):
    """k identical (eps0, delta0) releases, composed exactly (KOV Thm 3.3).

    Any leaf whose :meth:`~accountants.events.LeafEvent.epsilon_delta` is defined is accepted, as long
    as every composed leaf has the same (eps0, delta0); a second distinct value raises
    :class:`UnsupportedEventError` and nothing is added.
    """

    name = "optimal"

    def __init__(self) -> None:
        self.epsilon0: float | None = None
        self.delta0: float = 0.0
        self.k = 0

    def _point(self, leaf: LeafEvent) -> tuple[float, float] | None:
        return leaf.epsilon_delta()

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        point = self._point(leaf)
        if point is None:
            return False
        return self.epsilon0 is None or point == (self.epsilon0, self.delta0)

    def supports(self, event: Event) -> bool:
        points = {self._point(leaf) for leaf, _ in event.leaves()}
        if None in points:
            return False
        if self.epsilon0 is not None:
            points.add((self.epsilon0, self.delta0))
        return len(points) <= 1

    def compose(self, event: Event, count: int = 1):
        if isinstance(event, Event) and not self.supports(event):
            raise UnsupportedEventError(
                f"{self.name} accountant needs identical (eps0, delta0) releases, cannot add {event!r}"
            )
        return super().compose(event, count)

    def _add(self, leaf: LeafEvent, count: int) -> None:
        eps0, delta0 = leaf.epsilon_delta()
        self.epsilon0, self.delta0 = eps0, delta0
        self.k += count

    # --- curves -------------------------------------------------------------------------------
    def _log_keep(self) -> float:
        """log (1 - delta0)^k, rounded down."""
        if self.delta0 == 0.0:
            return 0.0
        v = self.k * math.log1p(-self.delta0)
        return v * (1 + 1e-14)

    def _rr_log_delta(self, epsilon: float, log_floor: float | None = None) -> float:
        if self.k == 0 or self.epsilon0 is None:
            return -math.inf
        return log_delta_randomized_response(self.k, self.epsilon0, epsilon, log_floor)

    def feasible(self, log_floor: float | None = None) -> bool:
        """Whether one evaluation sums at most 2^21 terms (else the accountant declines: inf / 1)."""
        return self.epsilon0 is None or window_size(self.k, self.epsilon0, log_floor) <= _MAX_WINDOW

    def delta(self, epsilon: float) -> float:
        epsilon = _validate.nonnegative("epsilon", epsilon)
        if not self.feasible():
            return 1.0
        return self._delta(epsilon, None)

    def epsilon(self, delta: float) -> float:
        """Smallest eps (bracketed root-finding, safe end, verified) with delta_total(eps) <= ``delta``."""
        # on the delta lattice (session 13: eps(delta) then cannot rise with delta inside a cell; valid)
        delta = self._zero_delta(delta)
        if delta == 0.0:  # pure DP: exact where finite (session 15)
            return self.pure_epsilon()
        delta = gdp_conversion.lattice_down(delta)
        if self.k == 0 or self.epsilon0 is None:
            return 0.0
        log_keep = self._log_keep()
        # need d(eps) <= target = 1 - (1 - delta)/keep; none exists when keep <= 1 - delta (the
        # releases' own deltas already exceed the target; expm1 of a large excess would overflow)
        excess = math.log1p(-delta) - log_keep
        if excess >= 0:
            return math.inf
        target = -math.expm1(excess) * (1 - 1e-12)
        if target <= 0:
            return math.inf
        log_target = math.log(target)
        log_floor = log_target - 40.0
        if not self.feasible(log_floor):
            return math.inf
        if self._delta(0.0, log_floor) <= delta:
            return 0.0
        # d(hi) = 0: the float product k eps0 may be rounded below the real largest loss (1 ulp)
        hi = self.k * self.epsilon0 * (1 + 4 * _U)
        if math.isinf(hi):  # eps0 = inf (a scale below sensitivity / 1.8e308): no finite eps is valid
            return math.inf

        def f(e: float) -> float:
            return max(self._rr_log_delta(e, log_floor), -2000.0) - log_target

        if f(0.0) <= 0.0:  # d(0) is within the target and only _delta's additive 1e-300 margin exceeds
            eps = 0.0       # it (a tiny eps0 at a delta near 1e-300): the verified walk below decides
        elif f(hi) > 0.0:  # within rounding of the largest loss: only hi itself (real delta 0) is safe
            return float(hi)
        else:
            from scipy import optimize  # (on first use: accountants/rdp.py)

            eps = optimize.brentq(f, 0.0, hi, xtol=1e-14 * max(1.0, hi), rtol=4 * np.finfo(float).eps,
                                  maxiter=500)
        step = max(eps, 1e-300) * 2e-16
        while eps < hi and self._delta(eps, log_floor) > delta:
            eps += step
            step *= 2.0
        return float(min(eps, hi))

    def epsilon_exceeds(self, epsilon: float, delta: float) -> bool:
        """Whether :meth:`epsilon` provably exceeds ``epsilon`` (:meth:`Accountant.epsilon_exceeds`), from one
        evaluation of delta instead of the root search's ~20 (session 16).

        Every finite answer e of :meth:`epsilon` other than the top k eps0 (where the real delta is 0) has its
        own upper bound ``_delta(e) <= delta`` on the lattice (the verified walk; 0 where ``_delta(0)`` is), so
        the real delta(e) is within it.
        Where a LOWER bound on the real delta at ``epsilon`` (:func:`log_delta_randomized_response` with
        ``lower``) exceeds that delta, the real delta, non-increasing in eps, puts e above ``epsilon`` -- and
        the top too, where the real delta is 0. No assumption on the computed curve's own monotonicity.
        Pure releases only (delta0 = 0: the composed delta is the randomized-response one)."""
        if not (delta > 0.0 and 0.0 <= epsilon < math.inf) or self.k == 0 or self.epsilon0 is None or self.delta0:
            return False
        delta = gdp_conversion.lattice_down(delta)  # as epsilon() reads it
        # (any window gives a lower bound: the one of a query at delta, whose terms left out are ~e^-40 of it)
        log_floor = math.log(delta) - 40.0
        if not self.feasible(log_floor):  # epsilon() declines there without a search
            return False
        log_lower = log_delta_randomized_response(self.k, self.epsilon0, epsilon, log_floor, lower=True)
        # (exp within an ulp: 4 taken)
        return math.exp(min(log_lower, 0.0)) * (1.0 - 4.0 * _U) > delta

    def _delta(self, epsilon: float, log_floor: float | None) -> float:
        log_d = self._rr_log_delta(epsilon, log_floor)
        d = _exp_capped(log_d)
        # 1 - keep (1 - d) = (1 - keep) + keep d
        log_keep = self._log_keep()
        total = -math.expm1(log_keep) + math.exp(log_keep) * d
        if total > 0:
            # up to the delta lattice, a monotone map (session 13: last-digit rises of delta with eps), then
            # the absolute margin (after it: lattice_up(1e-300) would exceed a 1e-300 target at the largest loss)
            total = gdp_conversion.lattice_up(total * (1 + 1e-14)) + 1e-300
        return min(1.0, total)
