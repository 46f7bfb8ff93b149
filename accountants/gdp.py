"""Gaussian differential privacy accountant (Dong, Roth & Su 2022, JRSS-B).

mu_i-GDP releases compose to sqrt(sum mu_i^2)-GDP (Cor. 3.3), exactly for Gaussian mechanisms and
adaptively. Pure eps-DP releases (Laplace, PureDP) enter through the valid conversion
mu = -2 Phi^{-1}(1/(1+e^eps)); that is tight for randomized response but loose for Laplace, where
PLD or RDP usually win. Conversions to (eps, delta) are exact and computed in log space
(:mod:`accountants.gdp_conversion`).
"""

from __future__ import annotations

import math

from accountants import _validate, gdp_conversion
from accountants._sums import CompensatedSum, term_up
from accountants.base import CANNOT_REACH_MARGIN, Accountant
from accountants.events import LeafEvent


_SHARED_MU: dict[LeafEvent, float | None] = {}


class GDPAccountant(Accountant):
    """Running sum of mu_i^2; O(1) per event."""

    name = "gdp"

    def __init__(self) -> None:
        self._sum = CompensatedSum()

    @staticmethod
    def _leaf_mu(leaf: LeafEvent) -> float | None:
        # memoised across accountants: the pure-DP conversion costs a scipy call, and a live
        # certificate composes the same leaves at every checkpoint, each time in a new accountant
        try:
            return _SHARED_MU[leaf]
        except KeyError:
            if len(_SHARED_MU) >= 65536:
                _SHARED_MU.clear()
            mu = _SHARED_MU[leaf] = leaf.gdp_mu()
            return mu

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        return self._leaf_mu(leaf) is not None

    def _add(self, leaf: LeafEvent, count: int) -> None:
        mu = self._leaf_mu(leaf)
        self._sum.add(term_up(mu * mu) * count)

    @property
    def sum_mu_squared(self) -> float:
        """sum mu_i^2, compensated and rounded up so it is never below the exact sum."""
        return self._sum.upper()

    def mu(self) -> float:
        """The composed GDP parameter sqrt(sum mu_i^2)."""
        return math.sqrt(self.sum_mu_squared)

    def epsilon(self, delta: float) -> float:
        # on the delta lattice, like delta() below (session 13): delta(epsilon(d)) <= d stays exact
        delta = self._zero_delta(delta)
        if delta == 0.0:  # pure DP: exact where finite (session 15)
            return self.pure_epsilon()
        delta = gdp_conversion.lattice_down(delta)
        mu = self.mu()
        if not math.isfinite(mu):  # a release with mu past 1e154 (or eps past 1e308): no finite guarantee
            return math.inf
        return 0.0 if mu == 0 else gdp_conversion.epsilon_for_delta(mu, delta)

    def epsilon_exceeds(self, epsilon: float, delta: float) -> bool:
        """Its epsilon at ``delta`` is the least lattice point e with its own delta(e) <= delta, and delta(e) is
        non-increasing (Dong, Roth & Su 2022, Cor. 2.13; :func:`gdp_conversion.epsilon_for_delta`): so its
        delta at ``epsilon`` above ``delta`` (by a margin over rounding) puts its epsilon above ``epsilon``. One
        delta evaluation instead of the root search's ~13 (session 15)."""
        if not (delta > 0.0 and 0.0 <= epsilon < math.inf):
            return False
        return self.delta(epsilon) > delta * (1.0 + CANNOT_REACH_MARGIN)

    def delta(self, epsilon: float) -> float:
        epsilon = _validate.nonnegative("epsilon", epsilon)
        mu = self.mu()
        if not math.isfinite(mu):
            return 1.0
        # up to the delta lattice (session 13: log_ndtr / erfcx rounding made delta rise with eps by an ulp
        # in 1-3 of ~124 points per composition; a monotone map, only up)
        return 0.0 if mu == 0 else gdp_conversion.lattice_up(gdp_conversion.delta_for_epsilon(mu, epsilon))
