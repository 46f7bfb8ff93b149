"""Mechanism-level audit targets built on the toolkit's own noise primitive.

Every noise draw of the toolkit goes through :class:`privbandit.mechanisms.sampling.NoiseSampler`, so
auditing a release made through it audits the code the policies use. Each factory returns
``mechanism(x, n, rng) -> (n,) noisy values`` for :meth:`privbandit.audit.Audit.mechanism`, together
with the claim the toolkit makes for it.
"""

from __future__ import annotations

import math

import numpy as np

from accountants._validate import shown
from privbandit.audit.certify import Claim
from privbandit.mechanisms.sampling import NoiseSampler


def _positive(name, value):
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must lie in (0, inf), got {shown(value)}")
    return float(value)


def laplace_release(epsilon: float, sensitivity: float = 1.0, *, exact: bool = False):
    """``x + Lap(sensitivity / epsilon)`` through NoiseSampler; claim: pure epsilon-DP."""
    epsilon = _positive("epsilon", epsilon)
    sensitivity = _positive("sensitivity", sensitivity)
    scale = sensitivity / epsilon

    def mechanism(x, n, rng):
        return NoiseSampler(rng, exact=exact).laplace_release(np.full(n, float(x)), np.full(n, scale))

    return mechanism, Claim.pure(epsilon, label=f"Laplace release, scale {scale:g}")


def gaussian_release(sigma: float, sensitivity: float = 1.0, *, exact: bool = False):
    """``x + N(0, sigma^2)`` through NoiseSampler; claim: (sensitivity/sigma)-GDP."""
    sigma = _positive("sigma", sigma)
    sensitivity = _positive("sensitivity", sensitivity)

    def mechanism(x, n, rng):
        return NoiseSampler(rng, exact=exact).gaussian_release(np.full(n, float(x)), np.full(n, sigma))

    return mechanism, Claim.gdp(sensitivity / sigma, label=f"Gaussian release, sigma {sigma:g}")


def clipped_sum_laplace(epsilon: float, *, clip: bool = True):
    """Sum of rewards clipped to [0, 1] plus Lap(1/epsilon): x is a vector of rewards.

    ``clip=False`` plants the unclipped-rewards bug (the sensitivity is then unbounded)."""
    epsilon = _positive("epsilon", epsilon)

    def mechanism(x, n, rng):
        r = np.asarray(x, dtype=float)
        stat = float((np.clip(r, 0.0, 1.0) if clip else r).sum())
        return NoiseSampler(rng).laplace_release(np.full(n, stat), np.full(n, 1.0 / epsilon))

    return mechanism, Claim.pure(epsilon, label="clipped reward sum + Laplace")
