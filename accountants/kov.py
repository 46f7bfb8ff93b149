"""Heterogeneous composition of Kairouz, Oh & Viswanath 2015 ("The Composition Theorem for
Differential Privacy", ICML; Theorem 3.5).

k adaptive releases, the i-th (eps_i, delta_i)-DP, are (eps', 1 - (1 - delta') prod(1 - delta_i))-DP
for every delta' in (0, 1] with eps' the minimum of

    sum eps_i,
    sum eps_i tanh(eps_i/2) + sqrt(2 ln(1/delta') S2),
    sum eps_i tanh(eps_i/2) + sqrt(2 S2 ln(e + sqrt(S2)/delta')),

where S2 = sum eps_i^2 and eps_i tanh(eps_i/2) = eps_i (e^eps_i - 1)/(e^eps_i + 1). It is uniformly
tighter than Dwork–Rothblum–Vadhan advanced composition (:mod:`accountants.advanced`). Running sums
only: O(1) per composed release.
"""

from __future__ import annotations

import math

from accountants import _validate, gdp_conversion
from accountants._sums import ROUND_UP, CompensatedSum, term_up
from accountants.base import Accountant
from accountants.events import LeafEvent


def kov_epsilon(sum_eps: float, sum_sq: float, sum_tanh: float, delta_prime: float) -> float:
    """The Thm 3.5 epsilon for the given running sums and slack ``delta_prime`` in [0, 1].

    ``delta_prime = 0`` gives basic composition (sum eps_i). Rounded up slightly.
    """
    best = sum_eps
    if delta_prime > 0 and sum_sq > 0:
        log_inv = -math.log(delta_prime)
        second = sum_tanh + math.sqrt(2.0 * log_inv * sum_sq)
        # ln(e + sqrt(S2)/delta') = log_inv + ln(sqrt(S2) + e delta'), computed without overflow
        third = sum_tanh + math.sqrt(2.0 * sum_sq * (log_inv + math.log(math.sqrt(sum_sq)
                                                                       + math.e * delta_prime)))
        best = min(best, second, third)
    return best * (1 + ROUND_UP)


class KOVHeterogeneousAccountant(Accountant):
    """Running sums of eps_i, eps_i^2, eps_i tanh(eps_i/2) and log(1 - delta_i); O(1) per event."""

    name = "kov"

    def __init__(self) -> None:
        self._sum_eps = CompensatedSum()
        self._sum_sq = CompensatedSum()
        self._sum_tanh = CompensatedSum()
        self._sum_log1m_delta = CompensatedSum()  # sum log(1 - delta_i) <= 0
        self.count = 0

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        return leaf.epsilon_delta() is not None

    def _add(self, leaf: LeafEvent, count: int) -> None:
        eps, delta = leaf.epsilon_delta()
        self._sum_eps.add(eps * count)
        self._sum_sq.add(term_up(eps * eps) * count)
        self._sum_tanh.add(term_up(eps * math.tanh(eps / 2.0)) * count)
        if delta:
            self._sum_log1m_delta.add(math.log1p(-delta) * count)
        self.count += count

    def _sums(self) -> tuple[float, float, float]:
        return self._sum_eps.upper(), self._sum_sq.upper(), self._sum_tanh.upper()

    def _log_keep(self) -> float:
        """log prod(1 - delta_i), rounded down (more negative = larger total delta)."""
        v = self._sum_log1m_delta.value
        return v - abs(v) * ROUND_UP

    def _total_delta(self, delta_prime: float) -> float:
        # 1 - (1 - delta') prod(1 - delta_i), rounded up
        log_keep = self._log_keep() + math.log1p(-delta_prime) if delta_prime < 1 else -math.inf
        total = -math.expm1(log_keep)
        return min(1.0, total * (1 + ROUND_UP) + (0.0 if total == 0 else 1e-300))

    def epsilon(self, delta: float) -> float:
        """Thm 3.5 with delta' = 1 - (1 - delta)/prod(1 - delta_i); ``inf`` if that is negative."""
        delta = self._zero_delta(delta)
        if delta == 0.0:  # pure DP: exact where finite (session 15)
            return self.pure_epsilon()
        log_keep = self._log_keep()
        if log_keep == 0.0:
            delta_prime = delta
        else:
            excess = math.log1p(-delta) - log_keep
            if excess > 0:  # prod(1 - delta_i) < 1 - delta: no delta' is left (and expm1 could overflow)
                return math.inf
            delta_prime = -math.expm1(excess)
            # log_keep is rounded down, which already makes delta' smaller; round down once more
            # for the expm1/log1p rounding (a smaller delta' gives a larger epsilon)
            delta_prime *= 1 - 1e-12
        if delta_prime < 0:
            return math.inf
        return kov_epsilon(*self._sums(), max(0.0, delta_prime))

    def delta(self, epsilon: float) -> float:
        """Smallest delta' whose Thm 3.5 epsilon is <= ``epsilon`` (closed form per branch, then
        verified and stepped upward), mapped to the total delta."""
        epsilon = _validate.nonnegative("epsilon", epsilon)
        s1, s2, st = self._sums()
        if kov_epsilon(s1, s2, st, 0.0) <= epsilon:
            return self._total_delta(0.0)
        margin = epsilon / (1 + ROUND_UP) - st
        if margin <= 0 or s2 == 0:
            return 1.0
        u = margin * margin / (2.0 * s2)
        log_candidates = [-u]  # second branch: delta' = exp(-u)
        if u > 1.0:  # third branch: ln(e + sqrt(S2)/d) = u  <=>  d = sqrt(S2)/(e^u - e)
            log_candidates.append(0.5 * math.log(s2) - u - math.log(-math.expm1(1.0 - u)))
        delta_prime = min(1.0, math.exp(min(log_candidates)))
        step = 1e-15
        while delta_prime < 1.0 and kov_epsilon(s1, s2, st, delta_prime) > epsilon:
            delta_prime = min(1.0, delta_prime * (1 + step) + 1e-300)
            step *= 2.0
        # on the lattice (verified): where the walk above stopped depended on its start, and a larger epsilon
        # gave a 1-ulp larger delta (session 11)
        delta_prime = gdp_conversion.lattice_up(
            delta_prime, lambda d: d >= 1.0 or kov_epsilon(s1, s2, st, d) <= epsilon)
        return self._total_delta(min(delta_prime, 1.0))
