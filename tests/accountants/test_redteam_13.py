"""Session 13 (s13/acc): "a certificate is never below the truth, at any delta and any count".

* The fast PLD's leaf masses: connect-the-dots masses were formed in floats as differences of two terms
  ~|slope|/h, so a leaf's float PMF could put less mass at or above a grid point than the exact
  connect-the-dots PMF (the proof's object) -- the float PMF was not a dominating pair. The masses are now
  built from an upward-rounded bound on the suffix sums (``fastpld._connect_dots``).
"""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from accountants import Gaussian, Laplace
from accountants.fastpld import leaf_pmf


# --- 1. the fast PLD's leaf masses -----------------------------------------------------------------------
def _mp(x: float):
    f = Fraction(x)
    return mpmath.mpf(f.numerator) / f.denominator


def _laplace_curve(eps0: float):
    e0 = _mp(eps0)

    def curve(x):
        if x >= e0:
            return mpmath.mpf(0)
        return -mpmath.expm1((x - e0) / 2) if x >= -e0 else -mpmath.expm1(x)
    return curve


def _gaussian_curve(mu: float):
    m = _mp(mu)

    def gdp(e):  # Dong, Roth & Su 2022, Cor 2.13, e >= 0
        return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)

    return lambda x: gdp(x) if x >= 0 else 1 - mpmath.exp(x) * (1 - gdp(-x))


@pytest.mark.parametrize("leaf, curve, h", [
    (Laplace(3.0, 0.7), _laplace_curve(Laplace(3.0, 0.7).pure_epsilon()), 0.001),
    (Laplace(100.0), _laplace_curve(Laplace(100.0).pure_epsilon()), 0.01 / 31.0),
    (Laplace(1.0, 1.0), _laplace_curve(1.0), 0.0123),
    (Laplace(1.0, 1000.0), _laplace_curve(1000.0), 0.7),
    (Gaussian(1.0, 1.0), _gaussian_curve(1.0), 0.05),
])
@mpmath.workdps(50)
def test_leaf_pmf_puts_at_least_the_exact_connect_the_dots_mass_above_every_point(leaf, curve, h):
    """The exact connect-the-dots PMF (Doroshenko et al. 2022, Alg. 1) of the exact curve at the real
    grid points j h has finite mass F_i = (d_{i-1} - d_n) + (d_{i-1} - d_i)/(e^h - 1) at or above point i
    (F_1 = 1 - d_n) and d_n at +infinity. The float PMF must put at least that much at or above every
    point (its own suffix sums computed exactly, in Fractions): then it is stochastically larger and its
    composition dominates. No tolerance. Before the fix (float masses as differences of ~|slope|/h terms):
    446 of 469, 49/63, 33/165, 50/2859 and 87/561 points short, by up to 8e-14 relative."""
    lo, m, inf = leaf_pmf(leaf, h)
    hh, n = _mp(h), len(m)
    d = [curve((lo + i) * hh) for i in range(n)]
    b = 1 / mpmath.expm1(hh)
    exact = [1 - d[-1]] + [(d[i - 1] - d[-1]) + b * (d[i - 1] - d[i]) for i in range(1, n)]
    assert _mp(inf) >= d[-1]
    suffix, short = Fraction(0), []
    for i in range(n - 1, -1, -1):
        suffix += Fraction(float(m[i]))
        if _mp(suffix) < exact[i]:
            short.append((i, float((exact[i] - _mp(suffix)) / exact[i])))
    assert not short, (len(short), short[:3])

