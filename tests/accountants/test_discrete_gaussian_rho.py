"""DiscreteGaussian's zCDP rho (u/s)^2/2: a float never below the exact value, inf past the largest
float (Python's ``** 2`` raised OverflowError from every RDP query; session 14, lead's fuzzer)."""

from __future__ import annotations

import fractions
import math

import pytest

from accountants import DiscreteGaussian, RDPAccountant, best_delta, best_epsilon
from accountants.events import Composed, Gaussian, SelfComposed


def test_huge_sensitivity_is_a_vacuous_certificate_not_an_overflow_error():
    ev = Composed([SelfComposed(Gaussian(1e-12), 10**9), SelfComposed(DiscreteGaussian(1.0, 1e300), 5)])
    assert DiscreteGaussian(1.0, 1e300).rho == math.inf
    acc = RDPAccountant()
    acc.compose(ev, 1)
    assert acc.epsilon(1e-6) == math.inf and acc.delta(10.0) == 1.0
    assert best_epsilon(ev, 1e-6).value == math.inf and best_delta(ev, 1e300).value == 1.0


@pytest.mark.parametrize("sigma_units, sens_units", [(7, 3), (3, 1), (49, 5), (1000003, 999983), (4, 2), (1, 1)])
def test_rho_is_the_least_float_not_below_the_exact_value(sigma_units, sens_units):
    grid = 2.0 ** -20
    ev = DiscreteGaussian(sigma_units * grid, sens_units * grid)
    exact = fractions.Fraction(sens_units, sigma_units) ** 2 / 2
    assert fractions.Fraction(ev.rho) >= exact
    assert fractions.Fraction(math.nextafter(ev.rho, 0.0)) < exact  # and one step down is below: the least such
