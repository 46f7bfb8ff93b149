"""Basic sequential composition (Dwork & Roth 2014, Thm 3.16).

k releases that are (eps_i, delta_i)-DP compose to (sum eps_i, sum delta_i)-DP. Exact for pure DP
in the worst case over mechanisms; the right tool for few, large releases. Parallel composition
(releases on disjoint records) is the ledger's job: it hands this accountant only the releases that
touch one record.
"""

from __future__ import annotations

import math

from accountants import _validate
from accountants._sums import CompensatedSum
from accountants.base import Accountant
from accountants.events import LeafEvent


class PureAccountant(Accountant):
    """Running sums of eps_i and delta_i; O(1) per event."""

    name = "pure"

    def __init__(self) -> None:
        self._eps = CompensatedSum()
        self._delta = CompensatedSum()

    @property
    def total_epsilon(self) -> float:
        """sum eps_i, compensated and rounded up (never below the exact sum)."""
        return self._eps.upper()

    @property
    def total_delta(self) -> float:
        """sum delta_i, compensated and rounded up."""
        return self._delta.upper()

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        return leaf.epsilon_delta() is not None

    def _add(self, leaf: LeafEvent, count: int) -> None:
        eps, delta = leaf.epsilon_delta()
        self._eps.add(eps * count)
        self._delta.add(delta * count)

    def epsilon(self, delta: float) -> float:
        """sum eps_i if ``delta`` >= sum delta_i, else ``inf`` (basic composition says nothing)."""
        delta = self._zero_delta(delta)
        if delta == 0.0 or self._pure_only:  # pure DP: exact where finite (session 15), at every delta (session 17)
            return self.pure_epsilon()
        return self.total_epsilon if delta >= self.total_delta else math.inf

    def delta(self, epsilon: float) -> float:
        """sum delta_i (capped at 1) if ``epsilon`` >= sum eps_i, else 1."""
        epsilon = _validate.nonnegative("epsilon", epsilon)
        return min(1.0, self.total_delta) if epsilon >= self.total_epsilon else 1.0
