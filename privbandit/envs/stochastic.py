"""Stochastic reward distributions on [0, 1]: Bernoulli, truncated exponential, clipped Gaussian."""

from __future__ import annotations

import numpy as np

from accountants._validate import NOT_NUMBERS, shown
from accountants._validate import real_array

from privbandit.envs.base import BlockedRun, StationaryEnvironment

_BLOCK = 1024


class _InverseCdfRun(BlockedRun):
    def __init__(self, env, replicates, rng):
        super().__init__(replicates, rng, _BLOCK, normal=env._normal)
        self._env = env

    def rewards(self, t, arms):
        return self._env._transform(self._variates(), arms)

    def rewards_block(self, t, arms):
        u = self._variates_block(arms.shape[0])
        if getattr(self._env, "_elementwise_exact", False):  # one call over the block: the same values as row by row
            return self._env._transform(u, arms)
        # transcendental transforms stay row by row, on the same (R,) shapes as ``rewards``: a
        # vectorised libm/SIMD kernel could round a longer array's elements differently
        out = np.empty(arms.shape)
        for j in range(arms.shape[0]):
            out[j] = self._env._transform(u[j], arms[j])
        return out


class Bernoulli(StationaryEnvironment):
    """Bernoulli arms with success probabilities ``means`` in [0, 1] (all five source papers)."""

    name = "bernoulli"
    _normal = False
    _elementwise_exact = True  # a comparison

    def __init__(self, means) -> None:
        super().__init__(means)
        if np.any(~((self.means >= 0) & (self.means <= 1))):  # NaN fails both comparisons
            raise ValueError(f"Bernoulli means must lie in [0, 1], got {self.means.tolist()}")

    def start(self, replicates, rng):
        return _InverseCdfRun(self, replicates, rng)

    def _transform(self, u, arms):
        return (u < self.means[arms]).astype(float)


def truncated_exponential_mean(rates: np.ndarray) -> np.ndarray:
    """1/lambda - e^(-lambda)/(1 - e^(-lambda)), within 1e-13 relative at every rate.

    The difference cancels catastrophically for small lambda (at 1e-12 it was off by 1.2e-4, and at a
    subnormal rate inf - inf): below 1e-2 the Taylor series 1/2 - lambda/12 + lambda^3/720 is used
    (next term lambda^5/30240 < 4e-15 there).
    """
    rates = np.asarray(rates, dtype=float)
    small = rates < 1e-2
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # only where not used
        direct = 1.0 / rates - np.exp(-rates) / -np.expm1(-rates)  # the paper's form (unchanged values)
    x = np.minimum(rates, 1e-2)  # the series is only used below 1e-2
    series = 0.5 - x / 12.0 + x ** 3 / 720.0
    return np.where(small, series, direct)


class TruncatedExponential(StationaryEnvironment):
    """Exponential rewards truncated to [0, 1]: density lambda e^(-lambda x) / (1 - e^(-lambda)).

    Ou, Cummings & Avella Medina's second experiment uses rates [0.1, 1, 2, 5, 10]; the mean of a
    rate-lambda arm is 1/lambda - e^(-lambda)/(1 - e^(-lambda)). Sampled by inverting the CDF.
    """

    name = "truncated_exponential"
    _normal = False
    _elementwise_exact = False  # log1p

    def __init__(self, rates) -> None:
        rates = real_array("rates", rates)
        # below 1e-300 the truncated mass 1 - e^-lambda and the inverse CDF work in subnormals (a few bits)
        if rates.ndim != 1 or rates.size < 2 or np.any(~(rates >= 1e-300)) or np.any(~np.isfinite(rates)):
            raise ValueError(f"rates must be a 1-D sequence of at least 2 values in [1e-300, inf), got {rates.tolist()}")
        self.rates = rates
        super().__init__(truncated_exponential_mean(rates))
        self._mass = -np.expm1(-rates)  # 1 - e^-lambda, the untruncated mass of [0, 1]

    @property
    def rewards_in_unit_interval(self) -> bool:
        """The inverse CDF maps into [0, 1] only for rates in [1e-300, inf) (a negative rate gave
        negative rewards, NaN NaN): checked at each look (once per run, O(K)), so rates changed after
        construction are clipped by the engine, never fed to a policy unclipped."""
        rates, mass = self.rates, self._mass
        return bool(np.all((rates >= 1e-300) & np.isfinite(rates)) and np.all((mass > 0.0) & (mass <= 1.0)))

    def start(self, replicates, rng):
        return _InverseCdfRun(self, replicates, rng)

    def _transform(self, u, arms):
        lam = self.rates[arms]
        return np.minimum(-np.log1p(-u * self._mass[arms]) / lam, 1.0)

    def params(self):
        return {"environment": self.name, "rates": self.rates.tolist()}


#: ClippedGaussian's scale range: beyond it loc + scale z overflows (1e308) or (1 - loc) / scale does
#: (a subnormal scale), and far inside it the clipped rewards are already coin flips / constants.
SCALE_RANGE = (1e-100, 1e100)


class ClippedGaussian(StationaryEnvironment):
    """Gaussian rewards N(loc_k, scale^2) clipped to [0, 1]; ``means`` are the clipped means."""

    name = "clipped_gaussian"
    _normal = True
    _elementwise_exact = True  # +, *, clip: correctly rounded whatever the array's length

    def __init__(self, locs, scale: float = 0.1) -> None:
        from scipy import stats

        locs = real_array("locs", locs)
        if (isinstance(scale, NOT_NUMBERS) or not isinstance(scale, (int, float, np.integer, np.floating))
                # (a numpy scalar compared as a float: a float16 against 1e100 cast 1e100 to float16, with an
                # "overflow encountered in cast" RuntimeWarning; a Python int compares exactly, whatever its size)
                or not SCALE_RANGE[0] <= (float(scale) if isinstance(scale, np.generic) else scale) <= SCALE_RANGE[1]):
            raise ValueError(f"scale must lie in [{SCALE_RANGE[0]:g}, {SCALE_RANGE[1]:g}], got {shown(scale)}")
        if locs.ndim != 1 or locs.size < 2 or np.any(~np.isfinite(locs)):
            raise ValueError("locs must be a 1-D sequence of at least 2 finite values")
        # (the float, not the scale as given: a float16 scale overflowed in the float16 arithmetic below, a
        # longdouble one reached scipy's ndtr, which has no longdouble loop: a TypeError)
        self.locs, self.scale = locs, scale = locs, float(scale)
        # E[clip(X, 0, 1)] = E[X; 0<X<1] + P(X >= 1) for X ~ N(loc, scale^2).
        # |a| beyond ~1e154 (a loc of 1e300 at scale 1e100): the pdf's a^2 overflows to inf and the
        # pdf is 0, which is its value; the RuntimeWarning reached the caller of every simulate. A loc
        # near the largest float over a small scale overflows a and b themselves to -inf: the cdfs and
        # pdfs at -inf (0) are their values, the mean 1
        with np.errstate(over="ignore"):
            a, b = (0 - locs) / scale, (1 - locs) / scale
            inside = locs * (stats.norm.cdf(b) - stats.norm.cdf(a)) + scale * (stats.norm.pdf(a) - stats.norm.pdf(b))
        super().__init__(inside + stats.norm.sf(b))

    def start(self, replicates, rng):
        return _InverseCdfRun(self, replicates, rng)

    @property
    def rewards_in_unit_interval(self) -> bool:
        """The clip maps into [0, 1] except NaN: locs or a scale set to NaN / inf after construction
        (inf x 0 is NaN) must not pass for the promise (judged at each run's start, O(K))."""
        return bool(np.all(np.isfinite(self.locs)) and np.isfinite(self.scale))

    def _transform(self, z, arms):
        return np.clip(self.locs[arms] + self.scale * z, 0.0, 1.0)

    def params(self):
        return {"environment": self.name, "locs": self.locs.tolist(), "scale": self.scale}
