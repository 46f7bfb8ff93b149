import math

import numpy as np
import pytest

from accountants import GDPAccountant, Gaussian, gdp_conversion

# ACCOUNTING.md reference values (mpmath, 60 digits): eps at delta = 1e-5.
REFERENCE = [
    (0.5, 1.99309140442),
    (1.0, 4.37717809568),
    (5.0, 33.1037323359),
    (10.0, 91.8172896247),
    (math.sqrt(5000), 2800.60237429),
]


@pytest.mark.parametrize("mu, eps", REFERENCE)
def test_reference_epsilons(mu, eps):
    assert gdp_conversion.epsilon_for_delta(mu, 1e-5) == pytest.approx(eps, rel=1e-9)


def test_reference_delta():
    assert gdp_conversion.delta_for_epsilon(1.0, 1.0) == pytest.approx(0.126936737507, rel=1e-9)


def test_epsilon_is_never_optimistic():
    for mu in [0.01, 0.3, 1.0, 7.0, 300.0]:
        for delta in [1e-12, 1e-6, 1e-2, 0.3]:
            eps = gdp_conversion.epsilon_for_delta(mu, delta)
            assert gdp_conversion.delta_for_epsilon(mu, eps) <= delta


def test_pure_to_mu_at_one():
    assert gdp_conversion.mu_from_pure_epsilon(1.0) == pytest.approx(1.232035, abs=1e-6)
    assert gdp_conversion.mu_from_pure_epsilon(1.0) >= 1.2320353853449


def test_gaussian_composition_closed_form():
    acc = GDPAccountant().compose(Gaussian(sigma=3.0, sensitivity=0.5), count=400)
    assert acc.mu() == pytest.approx(math.sqrt(400) * 0.5 / 3.0, rel=1e-12)


def test_vectorised_delta_matches_scalar():
    mus = np.array([0.5, 1.0, 5.0])
    got = gdp_conversion.delta_for_epsilon(mus, 2.0)
    want = [gdp_conversion.delta_for_epsilon(float(m), 2.0) for m in mus]
    np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), 1.0, 2.0])
def test_bad_delta_names_parameter(bad):
    with pytest.raises(ValueError, match="delta"):
        gdp_conversion.epsilon_for_delta(1.0, bad)
