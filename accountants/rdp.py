"""Renyi differential privacy accountant (Mironov 2017, "Renyi Differential Privacy", CSF).

Each release contributes its RDP curve (Laplace and Gaussian closed forms, randomized response for a
generic eps-DP release; :mod:`accountants.rdp_curves`); composition adds curves order by order
(Mironov Prop. 1). The conversion to (eps, delta) is the improved one of Canonne, Kamath & Steinke
2020 / Asoodeh et al. 2021:

    eps = min_alpha rdp(alpha) + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1).

The summed curve is kept on a dense order grid (:func:`rdp_curves.default_orders`, compensated
summation, O(grid) per compose) together with the multiset {leaf: count}; a query takes the grid
optimum and refines it by bounded scalar minimisation over continuous alpha. Both are valid bounds,
so their minimum is reported. (eps, delta) releases have no RDP curve and are unsupported.
"""

from __future__ import annotations

import math

import numpy as np

from accountants import _validate, gdp_conversion, rdp_curves
from accountants.base import Accountant
from accountants.events import GDP, Gaussian, Laplace, LeafEvent

_ROUND_UP = 1e-13  # relative margin on curves and results for floating-point rounding
_MAX_REFINE_GROUPS = 5000  # beyond this many distinct leaves only the grid optimum is used
_CACHE_SIZE = 8192
# Leaf curves shared by every RDPAccountant of the process, keyed by (leaf, orders): a live
# certificate composes the same leaves at every checkpoint, each time in a new accountant.
_SHARED_CURVES: dict[tuple[LeafEvent, bytes], np.ndarray | None] = {}


class RDPAccountant(Accountant):
    """Summed RDP curve on a dense order grid plus the grouped multiset of leaves."""

    name = "rdp"

    def __init__(self, orders: np.ndarray | None = None) -> None:
        orders = rdp_curves.default_orders() if orders is None else np.asarray(orders, dtype=float)
        if orders.ndim != 1 or len(orders) == 0 or not np.all(orders > 1) or not np.all(np.isfinite(orders)):
            raise ValueError("orders must be a non-empty 1-d array of finite values in (1, inf)")
        self.orders = np.sort(orders)
        self._sum = np.zeros_like(self.orders)
        self._comp = np.zeros_like(self.orders)  # Neumaier compensation
        self.groups: dict[LeafEvent, int] = {}
        self._orders_key = self.orders.tobytes()

    # --- composition ----------------------------------------------------------------------------
    def _leaf_curve(self, leaf: LeafEvent) -> np.ndarray | None:
        key = (leaf, self._orders_key)
        try:
            return _SHARED_CURVES[key]
        except KeyError:
            pass
        curve = leaf.rdp(self.orders)
        if curve is not None:
            curve = np.array(curve, dtype=float)
            curve.setflags(write=False)  # shared: nobody may change it in place
        if len(_SHARED_CURVES) >= _CACHE_SIZE:
            _SHARED_CURVES.clear()
        _SHARED_CURVES[key] = curve
        return curve

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        return self._leaf_curve(leaf) is not None

    def _add(self, leaf: LeafEvent, count: int) -> None:
        s = self._sum
        with np.errstate(over="ignore"):  # a curve x count, or a sum, past 1e308 is inf: vacuous but valid (kept below)
            x = self._leaf_curve(leaf) * count
            t = s + x
        with np.errstate(invalid="ignore"):
            comp = np.where(np.abs(s) >= np.abs(x), (s - t) + x, (x - t) + s)
        # an infinite order (a Gaussian with mu past 1e154) stays infinite: inf - inf would make it NaN
        self._comp = np.where(np.isfinite(t), self._comp + comp, 0.0)
        self._sum = t
        self.groups[leaf] = self.groups.get(leaf, 0) + count

    # --- curves ---------------------------------------------------------------------------------
    def grid_curve(self) -> np.ndarray:
        """The composed curve on ``self.orders``, rounded up."""
        c = self._sum + self._comp
        return c + np.abs(c) * _ROUND_UP

    def rdp(self, alphas) -> np.ndarray:
        """The composed RDP curve at the given orders (each > 1), rounded up."""
        a = np.atleast_1d(np.asarray(alphas, dtype=float))
        if not np.all(a > 1) or not np.all(np.isfinite(a)):
            raise ValueError("alphas must be finite orders in (1, inf)")
        total = np.zeros_like(a)
        lap_eps, lap_n, other = [], [], []
        gauss_sq = 0.0
        for leaf, n in self.groups.items():
            # vectorise the two closed forms that dominate in practice; everything else asks the leaf
            if type(leaf) is Laplace:
                lap_eps.append(leaf.pure_epsilon())
                lap_n.append(n)
            elif type(leaf) in (Gaussian, GDP):
                mu = leaf.gdp_mu()
                gauss_sq += n * (mu * mu)  # (inf past mu = 1e154, where ** 2 would raise OverflowError)
            else:
                other.append((leaf, n))
        if lap_eps:
            eps = np.asarray(lap_eps)[:, None]
            total = total + np.asarray(lap_n, dtype=float) @ rdp_curves.laplace(a[None, :], eps)
        if gauss_sq:
            total = total + rdp_curves.gaussian(a, math.sqrt(gauss_sq))
        for leaf, n in other:
            total = total + n * np.asarray(leaf.rdp(a), dtype=float)
        total = total + np.abs(total) * (_ROUND_UP + 1e-15 * len(self.groups))
        return total if np.ndim(alphas) else total[0]

    def _refine(self, objective, i: int) -> float:
        """Bounded minimisation of ``objective`` around grid index ``i``; inf if not refinable."""
        if not self.groups or len(self.groups) > _MAX_REFINE_GROUPS:
            return math.inf
        a = self.orders
        lo = a[i - 1] if i > 0 else 1.0 + (a[0] - 1.0) / 16.0
        hi = a[i + 1] if i + 1 < len(a) else a[-1] * 16.0
        # imported on first use: scipy.optimize costs ~0.2 s CPU of import (after scipy.special), which a process that
        # certifies nothing (a non-private run, most one-shot CLI calls) never needs (session 16)
        from scipy import optimize

        with np.errstate(invalid="ignore", over="ignore"):  # inf objectives (mu = inf) end as inf below
            res = optimize.minimize_scalar(objective, bounds=(lo, hi), method="bounded",
                                           options={"xatol": 1e-10 * hi, "maxiter": 200})
        return float(res.fun) if np.isfinite(res.fun) else math.inf

    # --- conversions ----------------------------------------------------------------------------
    def epsilon(self, delta: float) -> float:
        # on the delta lattice (session 13: last-digit monotonicity in delta; a smaller delta, so valid)
        delta = self._zero_delta(delta)
        if delta == 0.0:  # pure DP: exact where finite (session 15)
            return self.pure_epsilon()
        delta = gdp_conversion.lattice_down(delta)
        if not self.groups:
            return 0.0
        eps_grid, alpha = rdp_curves.epsilon_from_rdp(self.orders, self.grid_curve(), delta)
        i = int(np.searchsorted(self.orders, alpha))
        log_delta = math.log(delta)

        def objective(al: float) -> float:
            r = float(self.rdp(al))
            return r + math.log1p(-1.0 / al) - (log_delta + math.log(al)) / (al - 1.0)

        # an infinite curve at every grid order (mu = inf, eps0 = inf) has nothing to refine between them
        refined = max(0.0, self._refine(objective, i)) if math.isfinite(eps_grid) else math.inf
        eps = min(eps_grid, refined, self._pure_total())
        return eps + abs(eps) * _ROUND_UP

    def _pure_total(self) -> float:
        """The order-infinity end of the curve: sum of pure epsilons (inf unless every leaf is pure).

        RDP at alpha = inf is the max-divergence, so pure eps_i-DP leaves compose to (sum eps_i)-DP at
        any delta; the conversion above approaches it only as alpha -> inf, which a finite order grid
        never reaches (one PureDP release would otherwise certify up to 51% above its own eps).
        """
        total = 0.0
        for leaf, n in self.groups.items():
            eps = leaf.pure_epsilon()
            if eps is None:
                return math.inf
            total += n * eps
        return total * (1 + 1e-15 * (1 + len(self.groups)))

    def delta(self, epsilon: float) -> float:
        epsilon = _validate.nonnegative("epsilon", epsilon)
        if not self.groups:
            return 0.0
        if epsilon >= self._pure_total() * (1 + _ROUND_UP):
            return 0.0
        eps_in = epsilon / (1 + _ROUND_UP)  # consistent with the margin epsilon() adds
        log_d_grid, alpha = rdp_curves.log_delta_from_rdp(self.orders, self.grid_curve(), eps_in)
        i = int(np.searchsorted(self.orders, alpha))

        def objective(al: float) -> float:
            r = float(self.rdp(al))
            return (al - 1.0) * (r - eps_in + math.log1p(-1.0 / al)) - math.log(al)

        refined = self._refine(objective, i) if math.isfinite(log_d_grid) else math.inf
        log_d = min(log_d_grid, refined, 0.0)
        # (a finite log delta below -745 is reported as the least subnormal, never as 0: session 11)
        # up to the delta lattice (session 13: the refined order's noise made delta(eps) rise with eps
        # by ~1e-14 relative in 11-21 of ~124 points per composition; a monotone map, only up)
        return min(1.0, gdp_conversion.lattice_up(max(math.exp(log_d) * (1 + 1e-12), math.ulp(0.0))))
