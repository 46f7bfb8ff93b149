"""Advanced composition (Dwork, Rothblum & Vadhan 2010, "Boosting and Differential Privacy", FOCS,
Theorem III.3), in the heterogeneous form used by DP-UCB-Int (Tossou & Dimitrakakis 2016, Thm 3.4).

k adaptive releases, the i-th (eps_i, delta_i)-DP, are (eps', sum delta_i + delta')-DP for every
delta' in (0, 1) with

    eps' = sqrt(2 ln(1/delta') sum eps_i^2) + sum eps_i (e^eps_i - 1).

The homogeneous statement eps' = sqrt(2 k ln(1/delta')) eps0 + k eps0 (e^eps0 - 1) is the special
case eps_i = eps0. This accountant is kept as the pure formula (no minimum with basic composition:
:func:`accountants.best_epsilon` takes that minimum); :mod:`accountants.kov` is uniformly tighter.
Only three running sums are kept, so composing costs O(1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from accountants._validate import shown
from accountants import _validate, gdp_conversion
from accountants._sums import ROUND_UP, CompensatedSum, term_up
from accountants.base import Accountant
from accountants.events import LeafEvent


def advanced_composition_epsilon(epsilons: Iterable[float], delta_prime: float) -> float:
    """eps' = sqrt(2 ln(1/delta') sum eps_i^2) + sum eps_i (e^eps_i - 1) (DRV 2010 Thm III.3).

    The caller adds ``delta_prime`` to the sum of the releases' deltas. Rounded up slightly.
    """
    delta_prime = _validate.probability("delta_prime", delta_prime)
    if isinstance(epsilons, (str, bytes)) or not hasattr(epsilons, "__iter__"):
        raise ValueError(f"epsilons must be a sequence of per-release epsilons, got {shown(epsilons)}")
    s2, s3 = CompensatedSum(), CompensatedSum()
    for i, e in enumerate(epsilons):
        e = _validate.nonnegative(f"epsilons[{i}]", e)
        s2.add(term_up(e * e))
        s3.add(term_up(_eps_expm1(e)))
    return _closed_form(s2.upper(), s3.upper(), delta_prime)


def advanced_composition_epsilon_homogeneous(epsilon0: float, k: int, delta_prime: float) -> float:
    """Homogeneous case: sqrt(2 k ln(1/delta')) eps0 + k eps0 (e^eps0 - 1)."""
    epsilon0 = _validate.nonnegative("epsilon0", epsilon0)
    k = _validate.count("k", k)
    delta_prime = _validate.probability("delta_prime", delta_prime)
    s2 = k * term_up(epsilon0 * epsilon0)
    s3 = k * term_up(_eps_expm1(epsilon0))
    return _closed_form(s2 * (1 + ROUND_UP), s3 * (1 + ROUND_UP), delta_prime)


def _eps_expm1(e: float) -> float:
    """eps (e^eps - 1), ``inf`` once it overflows a float (the bound is then vacuous)."""
    return e * math.expm1(e) if e < 709.0 else math.inf


def _closed_form(sum_sq: float, sum_expm1: float, delta_prime: float) -> float:
    eps = math.sqrt(2.0 * -math.log(delta_prime) * sum_sq) + sum_expm1
    return eps * (1 + ROUND_UP)


class AdvancedCompositionAccountant(Accountant):
    """Running sums of eps_i^2, eps_i (e^eps_i - 1) and delta_i; O(1) per event."""

    name = "advanced"

    def __init__(self) -> None:
        self._sum_sq = CompensatedSum()
        self._sum_expm1 = CompensatedSum()
        self._sum_delta = CompensatedSum()
        self.count = 0

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        return leaf.epsilon_delta() is not None

    def _add(self, leaf: LeafEvent, count: int) -> None:
        eps, delta = leaf.epsilon_delta()
        self._sum_sq.add(term_up(eps * eps) * count)
        self._sum_expm1.add(term_up(_eps_expm1(eps)) * count)
        self._sum_delta.add(delta * count)
        self.count += count

    @property
    def sum_delta(self) -> float:
        """sum delta_i of the composed releases (rounded up)."""
        return self._sum_delta.upper()

    def epsilon(self, delta: float) -> float:
        """eps' at delta' = ``delta`` - sum delta_i; ``inf`` if ``delta`` <= sum delta_i."""
        delta = self._zero_delta(delta)
        if delta == 0.0:  # pure DP: exact where finite (session 15)
            return self.pure_epsilon()
        delta_prime = delta - self.sum_delta
        if delta_prime <= 0:
            return math.inf
        return _closed_form(self._sum_sq.upper(), self._sum_expm1.upper(), delta_prime)

    def delta(self, epsilon: float) -> float:
        """Closed-form inversion: sum delta_i + exp(-(eps - S3)^2 / (2 S2)), capped at 1."""
        epsilon = _validate.nonnegative("epsilon", epsilon)
        s2, s3, d0 = self._sum_sq.upper(), self._sum_expm1.upper(), self.sum_delta
        if s2 == 0.0:
            return min(1.0, d0)
        # the formula is rounded up by (1 + ROUND_UP); invert that too
        margin = epsilon / (1 + ROUND_UP) - s3
        if not margin > 0:
            return 1.0
        # an underflow to 0 would put log(0) in the forward formula: the least positive float is
        # larger than the root, so it certifies epsilon too (verified below like any candidate)
        delta_prime = max(math.exp(-margin * margin / (2.0 * s2)), math.ulp(0.0))
        # verify and step up until the forward formula certifies epsilon (guards float rounding)
        step = 1e-15
        while delta_prime < 1.0 and _closed_form(s2, s3, delta_prime) > epsilon:
            delta_prime = min(1.0, delta_prime * (1 + step) + 1e-300)
            step *= 2.0
        # on the lattice (verified): the walk's end was not monotone in epsilon (session 11)
        delta_prime = gdp_conversion.lattice_up(delta_prime, lambda d: d >= 1.0 or _closed_form(s2, s3, d) <= epsilon)
        return min(1.0, d0 + delta_prime)
