"""Privacy loss distribution accountant through Google's dp-accounting (Koskela et al. 2020;
Meiser & Mohammadi 2018; Doroshenko et al. 2022, "Connect the Dots", PETS).

The composed privacy loss distribution is the exact composition of the releases' dominating pairs;
dp-accounting discretises it pessimistically (connect-the-dots) and composes by FFT, so its
estimates are upper bounds up to float error. Identical releases are grouped and self-composed
(one FFT power instead of k sequential compositions); distinct groups are composed in a balanced
tree. ``compose`` only accumulates the multiset {leaf: count} (O(1)); the PLD is built lazily at
query time and cached until the next ``compose``.

Leaves map to dp-accounting as: Laplace(scale, D) -> ``from_laplace_mechanism(scale, sensitivity=D)``,
Gaussian(sigma, D) -> ``from_gaussian_mechanism(sigma, sensitivity=D)``, GDP(mu) -> Gaussian with
sigma = 1/mu, PureDP(eps) -> binary randomized response (the tight eps-DP pair), ApproxDP(eps, delta)
-> ``from_privacy_parameters``.

``pessimistic=False`` builds dp-accounting's *optimistic* estimate (a lower reference, not a
certificate: used by tests as a floor no valid accountant may go below).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from accountants import _validate
from accountants.base import Accountant
from accountants.events import GDP, ApproxDP, Gaussian, Laplace, LeafEvent, PureDP

_REL_RESOLUTION = 1e-4  # discretisation interval relative to the spread of the composed loss
_MIN_INTERVAL = 1e-12
_MAX_INTERVAL = 1e-2
_MAX_POINT_EPSILON = 700.0  # PureDP / ApproxDP beyond this are unsupported (float overflow)


def _loss_scale(leaf: LeafEvent) -> float:
    """A per-release scale of the privacy loss: eps for eps-DP leaves, mu for Gaussian ones."""
    mu = leaf.gdp_mu() if isinstance(leaf, (Gaussian, GDP)) else None
    if mu is not None:
        return mu
    point = leaf.epsilon_delta()
    if point is not None:
        return point[0]
    mu = leaf.gdp_mu()
    return 0.0 if mu is None else mu


class PLDAccountant(Accountant):
    """Lazily built dp-accounting PLD of the grouped releases."""

    name = "pld"

    def __init__(self, value_discretization_interval: float | None = None, pessimistic: bool = True) -> None:
        if value_discretization_interval is not None:
            value_discretization_interval = _validate.positive(
                "value_discretization_interval", value_discretization_interval)
        if not isinstance(pessimistic, bool):
            raise ValueError(f"pessimistic must be a bool, got {pessimistic!r}")
        self.value_discretization_interval = value_discretization_interval
        self.pessimistic = pessimistic
        self.groups: dict[LeafEvent, int] = {}
        self._pld = None

    @classmethod
    def optimistic(cls, value_discretization_interval: float | None = None) -> "PLDAccountant":
        """dp-accounting's optimistic estimate: a lower reference, not a certificate."""
        return cls(value_discretization_interval=value_discretization_interval, pessimistic=False)

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        if isinstance(leaf, (PureDP, ApproxDP)):
            # dp-accounting evaluates exp(eps) in floats for these; beyond ~700 it overflows
            return leaf.epsilon <= _MAX_POINT_EPSILON
        return isinstance(leaf, (Laplace, Gaussian, GDP))

    def _add(self, leaf: LeafEvent, count: int) -> None:
        self.groups[leaf] = self.groups.get(leaf, 0) + count
        self._pld = None

    def copy(self):
        other = super().copy()
        other._pld = self._pld  # PLDs are immutable; share the cache
        return other

    def __deepcopy__(self, memo):
        other = PLDAccountant(self.value_discretization_interval, self.pessimistic)
        other.groups = dict(self.groups)
        return other

    # --- construction ---------------------------------------------------------------------------
    def interval(self) -> float:
        """The discretisation interval used: given, or 1e-4 of the composed loss spread
        sqrt(sum count * scale^2) clipped to [1e-12, 1e-2] (connect-the-dots keeps this within ~0.1%)."""
        if self.value_discretization_interval is not None:
            return self.value_discretization_interval
        spread = math.sqrt(sum(n * _loss_scale(leaf) ** 2 for leaf, n in self.groups.items()))
        return float(np.clip(spread * _REL_RESOLUTION, _MIN_INTERVAL, _MAX_INTERVAL))

    def _leaf_pld(self, leaf: LeafEvent, interval: float):
        from dp_accounting.pld import common
        from dp_accounting.pld import privacy_loss_distribution as pldm

        pess = self.pessimistic
        kw = dict(value_discretization_interval=interval, pessimistic_estimate=pess)
        if not pess:
            kw["use_connect_dots"] = False  # connect-the-dots is pessimistic-only
        if isinstance(leaf, Laplace):
            return pldm.from_laplace_mechanism(leaf.scale, sensitivity=leaf.sensitivity, **kw)
        if isinstance(leaf, Gaussian):
            return pldm.from_gaussian_mechanism(leaf.sigma, sensitivity=leaf.sensitivity, **kw)
        if isinstance(leaf, GDP):
            return pldm.from_gaussian_mechanism(1.0 / leaf.mu, sensitivity=1.0, **kw)
        if isinstance(leaf, PureDP):
            return pldm.from_randomized_response(2.0 / (1.0 + math.exp(leaf.epsilon)), 2,
                                                 pessimistic_estimate=pess,
                                                 value_discretization_interval=interval)
        if isinstance(leaf, ApproxDP):
            return pldm.from_privacy_parameters(
                common.DifferentialPrivacyParameters(leaf.epsilon, leaf.delta),
                value_discretization_interval=interval)
        raise AssertionError(f"unsupported leaf reached the PLD builder: {leaf!r}")

    def pld(self):
        """The composed dp-accounting ``PrivacyLossDistribution`` (built once, cached)."""
        if self._pld is not None:
            return self._pld
        if not self.groups:
            return None
        interval = self.interval()
        parts = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # sorted for determinism (the multiset order must not change the result)
            for leaf, n in sorted(self.groups.items(), key=lambda kv: repr(kv[0])):
                p = self._leaf_pld(leaf, interval)
                parts.append(p.self_compose(n) if n > 1 else p)
            while len(parts) > 1:  # balanced tree: sizes stay balanced, total FFT work small
                parts = [parts[i].compose(parts[i + 1]) if i + 1 < len(parts) else parts[i]
                         for i in range(0, len(parts), 2)]
        self._pld = parts[0]
        return self._pld

    # --- conversions ----------------------------------------------------------------------------
    def epsilon(self, delta: float) -> float:
        delta = _validate.probability("delta", delta)
        pld = self.pld()
        if pld is None:
            return 0.0
        eps = float(pld.get_epsilon_for_delta(delta))
        return max(0.0, eps)

    def delta(self, epsilon: float) -> float:
        epsilon = _validate.nonnegative("epsilon", epsilon)
        pld = self.pld()
        if pld is None:
            return 0.0
        return min(1.0, max(0.0, float(pld.get_delta_for_epsilon(epsilon))))
