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
from accountants.base import Accountant
from accountants.events import LeafEvent


class GDPAccountant(Accountant):
    """Running sum of mu_i^2; O(1) per event."""

    name = "gdp"

    def __init__(self) -> None:
        self.sum_mu_squared = 0.0

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        return leaf.gdp_mu() is not None

    def _add(self, leaf: LeafEvent, count: int) -> None:
        mu = leaf.gdp_mu()
        self.sum_mu_squared += mu * mu * count

    def mu(self) -> float:
        """The composed GDP parameter sqrt(sum mu_i^2)."""
        return math.sqrt(self.sum_mu_squared)

    def epsilon(self, delta: float) -> float:
        delta = _validate.probability("delta", delta)
        mu = self.mu()
        return 0.0 if mu == 0 else gdp_conversion.epsilon_for_delta(mu, delta)

    def delta(self, epsilon: float) -> float:
        epsilon = _validate.nonnegative("epsilon", epsilon)
        mu = self.mu()
        return 0.0 if mu == 0 else gdp_conversion.delta_for_epsilon(mu, epsilon)
