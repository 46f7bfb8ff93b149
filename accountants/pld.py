"""Privacy loss distribution accountant (Koskela et al. 2020; Meiser & Mohammadi 2018; Doroshenko et
al. 2022, "Connect the Dots", PETS): certificates from the lean engine :mod:`accountants.fastpld`,
Google's dp-accounting for the optimistic reference and :meth:`PLDAccountant.pld`.

The composed privacy loss distribution is the exact composition of the releases' dominating pairs;
it is discretised pessimistically (connect-the-dots) and composed by FFT, so its estimates are upper
bounds up to float error (bounded and added, below). Identical releases are grouped and self-composed
(one FFT power instead of k sequential compositions); distinct groups are composed in a balanced
tree. ``compose`` only accumulates the multiset {leaf: count} (O(1)); the PLD is built lazily at
query time and cached until the next ``compose``.

Leaves map to dp-accounting as: Laplace(scale, D) -> ``from_laplace_mechanism(scale, sensitivity=D)``,
Gaussian(sigma, D) -> ``from_gaussian_mechanism(sigma, sensitivity=D)``, GDP(mu) -> Gaussian with
sigma = 1/mu, PureDP(eps) -> binary randomized response (the tight eps-DP pair), ApproxDP(eps, delta)
-> ``from_privacy_parameters``.

``pessimistic=False`` builds dp-accounting's *optimistic* estimate (a lower reference, not a
certificate: used by tests as a floor no valid accountant may go below).

Validity at every delta (issue 12). Three numerical effects could make the PLD optimistic:

* discretisation -- dp-accounting's pessimistic connect-the-dots estimate dominates the true
  curve (Doroshenko et al. 2022, Thm 4.1); binary randomized response (PureDP) is put on a grid
  that contains +-eps0 exactly when one PureDP value is composed (no rounding of eps0 at all);
* tail truncation -- the pessimistic ``self_compose`` moves its truncated mass
  (``tail_mass_truncation``) to the infinite loss and ``compose`` truncates nothing, so truncated
  mass is already part of delta; the initial PLDs put their upper tail there too;
* floating-point FFT rounding -- ``ifft(fft(p)^n)`` has absolute error of order n u log2(N) in total
  mass (relative error u log2 N per transform, multiplied n-fold by the power). It is not covered by
  dp-accounting, and at small deltas it dominates (it is why a Gaussian composition could certify
  below exact GDP at delta 1e-11). ``rounding_margin()`` is added to every delta and subtracted from
  the target delta of ``epsilon``; where it reaches the target delta the PLD answers ``inf`` (the
  exact and closed-form accountants answer there). Every certificate comes from the fast engine
  (:mod:`accountants.fastpld`: Laplace, Gaussian, GDP, PureDP, and since session 11 ApproxDP and
  DiscreteLaplace too), whose margin is a bound on the whole rounding error computed from the spectra,
  proven under the FFT error model stated there (session 10). dp-accounting's own composition, whose
  spectra are not in hand, kept an unproven allowance 8 u log2(N) (sum of counts + groups) for ApproxDP
  and DiscreteLaplace until session 11; it now builds only the optimistic reference and :meth:`pld`.

Bounded cost: :meth:`PLDAccountant.estimated_bins` predicts the grid size; above ``max_bins`` the
accountant declines (``epsilon`` = inf, ``delta`` = 1) instead of running for minutes.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np

from accountants._validate import shown
from accountants import _validate, fastpld
from accountants.base import Accountant
from accountants.events import GDP, ApproxDP, DiscreteLaplace, Gaussian, Laplace, LeafEvent, PureDP

_MAX_DISCRETE_UNITS = 4096  # dp-accounting's discrete Laplace PLD enumerates ~u losses: 2.5 s at u = 2^20

_REL_RESOLUTION = 1e-4  # discretisation interval relative to the spread of the composed loss
_MIN_INTERVAL = 1e-12
_MAX_INTERVAL = 1e-2
_MAX_POINT_EPSILON = 700.0  # PureDP / ApproxDP beyond this are unsupported (float overflow)
_MAX_BINS = 1 << 21  # beyond ~2M grid points a composition costs seconds per FFT: decline
_TAIL_WIDTH = 20.0  # composed grid ~ this many loss spreads wide (measured ~17 with dp-accounting's bounds)
_MANY_GROUPS = 32


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

    def __init__(self, value_discretization_interval: float | None = None, pessimistic: bool = True,
                 max_bins: int = _MAX_BINS) -> None:
        if value_discretization_interval is not None:
            value_discretization_interval = _validate.positive(
                "value_discretization_interval", value_discretization_interval)
        if not isinstance(pessimistic, bool):
            raise ValueError(f"pessimistic must be a bool, got {shown(pessimistic)}")
        self.value_discretization_interval = value_discretization_interval
        self.pessimistic = pessimistic
        self.max_bins = _validate.count("max_bins", max_bins)
        self.groups: dict[LeafEvent, int] = {}
        self._pld = None
        self._dp_pld = None

    @classmethod
    def optimistic(cls, value_discretization_interval: float | None = None) -> "PLDAccountant":
        """dp-accounting's optimistic estimate: a lower reference, not a certificate."""
        return cls(value_discretization_interval=value_discretization_interval, pessimistic=False)

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        if isinstance(leaf, (PureDP, ApproxDP)):
            # dp-accounting evaluates exp(eps) in floats for these; beyond ~700 it overflows
            return leaf.epsilon <= _MAX_POINT_EPSILON
        if isinstance(leaf, DiscreteLaplace):
            return leaf.u <= _MAX_DISCRETE_UNITS
        return isinstance(leaf, (Laplace, Gaussian, GDP))

    def _add(self, leaf: LeafEvent, count: int) -> None:
        self.groups[leaf] = self.groups.get(leaf, 0) + count
        self._pld = None
        self._dp_pld = None

    def copy(self):
        other = super().copy()
        other._pld, other._dp_pld = self._pld, self._dp_pld  # PLDs are immutable; share the caches
        return other

    def __deepcopy__(self, memo):
        other = PLDAccountant(self.value_discretization_interval, self.pessimistic, self.max_bins)
        other.groups = dict(self.groups)
        # delta = 0's record of the releases (Accountant.pure_epsilon): a fresh accountant's "nothing
        # composed" would otherwise answer epsilon 0 for a copy of a composition
        terms = self._pure_terms
        other._pure_terms, other._pure_only = (None if terms is None else copy.copy(terms)), self._pure_only
        other._pure_sum = self._pure_sum
        return other

    # --- construction ---------------------------------------------------------------------------
    def interval(self) -> float:
        """The discretisation interval used: given, or 1e-4 of the composed loss spread
        sqrt(sum count * scale^2) clipped to [1e-12, 1e-2] (connect-the-dots keeps this within ~0.1%)."""
        if self.value_discretization_interval is not None:
            return self.value_discretization_interval
        spread = self._spread()
        # many distinct releases (one transform each): a 10x coarser grid, measured to move epsilon
        # by < 1e-4 relative on 1000 heterogeneous Laplace releases (docs/benchmarks.md)
        rel = _REL_RESOLUTION * (10.0 if len(self.groups) > _MANY_GROUPS else 1.0)
        h = float(np.clip(spread * rel, _MIN_INTERVAL, _MAX_INTERVAL))
        # (an ApproxDP's finite part is randomized response too, fastpld.leaf_pmf)
        pure = {leaf.epsilon for leaf in self.groups if isinstance(leaf, (PureDP, ApproxDP)) and leaf.epsilon > 0}
        # (an eps0 of 1e308 has no grid; one below 1e-290 would make a grid step whose reciprocal
        # overflows (5e-324: an OverflowError): its atoms are rounded up to +-h instead, see
        # fastpld.leaf_pmf, which is pessimistic)
        if len(pure) == 1 and math.isfinite(next(iter(pure)) / h) and next(iter(pure)) >= 1e-290:
            # put +-eps0 on the grid: randomized response is then discretised without rounding
            eps0 = pure.pop()
            h = eps0 / math.ceil(eps0 / h) * (1 + 4 * 2.0 ** -52)  # m h >= eps0 despite rounding
        return h

    def _spread(self) -> float:
        """sqrt(sum count * scale^2); inf (not an OverflowError) for scales past 1e154."""
        return math.sqrt(sum(n * (_loss_scale(leaf) * _loss_scale(leaf)) for leaf, n in self.groups.items()))

    def estimated_bins(self) -> float:
        """A prediction of the composed grid size (number of discretised loss values)."""
        if not self.groups:
            return 0.0
        h = self.interval()
        spread = self._spread()
        single = 0.0
        for leaf in self.groups:
            s = _loss_scale(leaf)
            # a Gaussian's loss is N(mu^2/2, mu^2), truncated ~10 sd out; eps-DP losses lie in [-eps, eps]
            width = 2.0 * (10.0 * s + s * s / 2.0) if isinstance(leaf, (Gaussian, GDP)) else 2.0 * s
            single += width / h
        return _TAIL_WIDTH * spread / h + single

    def feasible(self) -> bool:
        """Whether the composition fits in ``max_bins`` grid points (else the accountant declines)."""
        return self.estimated_bins() <= self.max_bins

    def _uses_fast_engine(self) -> bool:
        return self.pessimistic and all(fastpld.supports(leaf) for leaf in self.groups)

    def _engine(self):
        """The composed PLD used by queries (built once, cached until the next ``compose``):
        :class:`accountants.fastpld.ComposedPLD` for the pessimistic (certifying) accountant, dp-accounting's
        for the optimistic reference; None when it would exceed ``max_bins``."""
        if self._pld is not None:
            return self._pld
        if not self.groups or not self.feasible():
            return None
        if self._uses_fast_engine():
            try:
                self._pld = fastpld.ComposedPLD(self.groups, self.interval(), self.max_bins)
            except OverflowError:
                return None
            return self._pld
        return self.pld()

    def rounding_margin(self) -> float:
        """The delta added for FFT rounding (module doc): the fast engine's proven rounding bound plus
        its Chernoff wrap-around bound; 0 for the optimistic reference (no certificate, no margin)."""
        engine = self._engine()
        return engine.margin if isinstance(engine, fastpld.ComposedPLD) else 0.0

    def _leaf_pld(self, leaf: LeafEvent, interval: float):
        from dp_accounting.pld import common
        from dp_accounting.pld import privacy_loss_distribution as pldm

        pess = self.pessimistic
        kw = dict(value_discretization_interval=interval, pessimistic_estimate=pess)
        if not pess:
            kw["use_connect_dots"] = False  # connect-the-dots is pessimistic-only
        if isinstance(leaf, Laplace):
            return pldm.from_laplace_mechanism(leaf.scale, sensitivity=leaf.sensitivity, **kw)
        if isinstance(leaf, DiscreteLaplace):
            return pldm.from_discrete_laplace_mechanism(1.0 / leaf.t, sensitivity=leaf.u, **kw)
        if isinstance(leaf, Gaussian):
            return pldm.from_gaussian_mechanism(leaf.sigma, sensitivity=leaf.sensitivity, **kw)
        if isinstance(leaf, GDP):
            return pldm.from_gaussian_mechanism(1.0 / leaf.mu, sensitivity=1.0, **kw)
        if isinstance(leaf, PureDP):
            m = leaf.epsilon / interval
            if abs(m - round(m)) <= 1e-9 * m and round(m) >= 1:
                # +-eps0 lie on the grid (interval() arranged it): binary randomized response exactly,
                # losses +-m h with h one ulp above eps0/m, so m h >= eps0 (never optimistic)
                from dp_accounting.pld import pld_pmf

                m, h = int(round(m)), interval
                log_p = -math.log1p(math.exp(-leaf.epsilon))  # e^eps0 / (1 + e^eps0)
                p, q = math.exp(log_p), 1.0 / (1.0 + math.exp(leaf.epsilon))
                return pldm.PrivacyLossDistribution(pld_pmf.create_pmf({m: p, -m: q}, h, 0.0, pess))
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
        if self._dp_pld is not None:
            return self._dp_pld
        if not self.groups or not self.feasible():
            return None
        interval = self.interval()
        parts = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # sorted for determinism (the multiset order must not change the result)
            try:
                for leaf, n in sorted(self.groups.items(), key=lambda kv: repr(kv[0])):
                    p = self._leaf_pld(leaf, interval)
                    parts.append(p.self_compose(n) if n > 1 else p)
                while len(parts) > 1:  # balanced tree: sizes stay balanced, total FFT work small
                    parts = [parts[i].compose(parts[i + 1]) if i + 1 < len(parts) else parts[i]
                             for i in range(0, len(parts), 2)]
            except IndexError:
                # dp-accounting 0.6 truncates every finite loss away when nearly all mass is at +inf
                # (ApproxDP(0.5, 0.999999) * 7: IndexError in _truncate_tails); decline (inf / 1)
                return None
        self._dp_pld = parts[0]
        if not self._uses_fast_engine():
            self._pld = self._dp_pld
        return self._dp_pld

    # --- conversions ----------------------------------------------------------------------------
    def epsilon(self, delta: float) -> float:
        delta = self._zero_delta(delta)
        if delta == 0.0:  # pure DP: exact where finite (session 15)
            return self.pure_epsilon()
        if not self.groups:
            return 0.0
        pld = self._engine()
        if pld is None:  # too large to build within max_bins: decline
            return math.inf
        if isinstance(pld, fastpld.ComposedPLD):
            return pld.epsilon(delta)
        return max(0.0, float(pld.get_epsilon_for_delta(delta)))  # the optimistic reference

    def delta(self, epsilon: float) -> float:
        epsilon = _validate.nonnegative("epsilon", epsilon)
        if not self.groups:
            return 0.0
        pld = self._engine()
        if pld is None:
            return 1.0
        if isinstance(pld, fastpld.ComposedPLD):
            return pld.delta(epsilon)
        return min(1.0, max(0.0, float(pld.get_delta_for_epsilon(epsilon))))  # the optimistic reference
