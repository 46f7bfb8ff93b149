"""Issue 12's failing cases, each against an exact reference (closed form / mpmath / optimal composition).

Before the fix (numbers from the issue): best_epsilon(Gaussian(100) * 40000, 1e-11) = 14.95081 < exact
14.97437; GDP(0.00158...) * 1e5 at 1e-12: 3.3942 < 3.4491; NaN deltas; mu_for_epsilon_delta failures;
mu_from_pure_epsilon(1e-14) 8e-4 low; RDP of one PureDP release up to 51% above eps0; 1e12 counts never
answering; PLD of identical PureDP up to 142x above exact.
"""

import math

import mpmath
import numpy as np
import pytest

from accountants import (GDP, Gaussian, GDPAccountant, Laplace, PLDAccountant, PureDP, RDPAccountant,
                         best_epsilon, gdp_conversion)
from accountants.optimal import OptimalHomogeneousAccountant

from tests.accountants._exact import gdp_delta, gdp_epsilon, rr_log_delta


def test_gaussian_40000_at_1e_11_not_below_exact_gdp():
    exact = gdp_epsilon(math.sqrt(40000) / 100.0, 1e-11)
    assert exact == pytest.approx(14.97437, abs=1e-5)
    cert = best_epsilon(Gaussian(sigma=100.0) * 40000, 1e-11)
    assert cert.value >= exact and cert.value <= exact * (1 + 1e-11)
    assert cert.by == "gdp" and cert.values["pld"] is None  # no PLD where GDP is exact


def test_gdp_1e5_at_1e_12_not_below_exact():
    mu = 0.0015811388300841895
    exact = gdp_epsilon(mu * math.sqrt(100000), 1e-12)
    assert exact == pytest.approx(3.4491, abs=1e-4)
    assert best_epsilon(GDP(mu) * 100000, 1e-12).value >= exact


@pytest.mark.parametrize("delta", [1e-11, 3e-13, 1e-15])
def test_pld_alone_is_valid_at_small_delta(delta):
    # the PLD used directly: its FFT rounding margin keeps it at or above exact GDP (or inf)
    sigma, k = 300.0, 100000
    acc = PLDAccountant().compose(Gaussian(sigma), k)
    assert acc.epsilon(delta) >= gdp_epsilon(math.sqrt(k) / sigma, delta)


def test_pld_delta_includes_the_rounding_margin():
    acc = PLDAccountant().compose(Gaussian(300.0), 100000)
    eps = gdp_epsilon(math.sqrt(100000) / 300.0, 1e-9)
    assert acc.delta(eps) >= float(gdp_delta(math.sqrt(100000) / 300.0, eps))
    assert acc.rounding_margin() > 0


def test_laplace_small_delta_pld_not_below_optimistic():
    ev = Laplace(10.0) * 100
    floor = PLDAccountant.optimistic(1e-4).compose(ev).epsilon(1e-11)
    assert PLDAccountant().compose(ev).epsilon(1e-11) >= floor
    assert best_epsilon(ev, 1e-11).value >= floor


@pytest.mark.parametrize("event, by", [
    (Laplace(scale=10.0) * 10**12, None),
    (Gaussian(sigma=10.0) * 10**12, "gdp"),
    (PureDP(0.01) * 10**9, "optimal"),
])
def test_huge_counts_answer_without_the_pld(event, by):
    cert = best_epsilon(event, 1e-6)
    assert math.isfinite(cert.value) and cert.values["pld"] is None and "pld" in cert.notes
    if by is not None:
        assert cert.by == by


def test_gaussian_1e12_is_exact_gdp():
    cert = best_epsilon(Gaussian(sigma=10.0) * 10**12, 1e-6)
    assert cert.value >= gdp_epsilon(1e5, 1e-6)
    assert cert.value == pytest.approx(gdp_epsilon(1e5, 1e-6), rel=1e-11)


@pytest.mark.parametrize("eps0, k", [(0.01, 10**8), (0.5, 8_200_000), (1.0, 3)])
def test_identical_pure_dp_is_exact(eps0, k):
    eps = best_epsilon(PureDP(eps0) * k, 1e-6).value
    assert rr_log_delta(k, eps0, eps) <= math.log(1e-6)
    # and tight: a 1e-9 relative smaller eps no longer certifies 1e-6 (unless the answer is k eps0)
    if eps < k * eps0:
        assert rr_log_delta(k, eps0, eps * (1 - 1e-6)) > math.log(1e-6) - 1e-6


def test_pld_of_identical_pure_dp_puts_eps0_on_the_grid():
    # was up to 142x above exact (eps0 rounded up to the grid k times); now within 1%
    acc = PLDAccountant().compose(PureDP(0.5), 20000)
    exact = OptimalHomogeneousAccountant().compose(PureDP(0.5), 20000).epsilon(1e-6)
    assert exact <= acc.epsilon(1e-6) <= exact * 1.01


def test_delta_never_nan_where_it_underflows():
    for mu, eps in [(1e-4, 50.0), (1e-8, 1e4), (1e-3, 1e4), (2.0, 1e4)]:
        d = gdp_conversion.delta_for_epsilon(mu, eps)
        # (session 11: a finite log delta is reported as a tiny positive delta, no longer as 0 -- the truth is > 0)
        assert 0.0 < d < 1e-300 and not math.isnan(d)
        assert math.isfinite(float(gdp_conversion.log_delta_for_epsilon(mu, eps)))
    acc = GDPAccountant().compose(GDP(1e-4))
    assert 0.0 < acc.delta(50.0) < 1e-300


@pytest.mark.parametrize("mu", [1e-8, 1e-6, 1e-4, 1e-3, 0.1, 0.999, 1.0, 7.0, 1e3])
@pytest.mark.parametrize("ratio", [0.0, 0.3, 1.0, 3.0, 8.0])
def test_gdp_delta_safe_and_accurate_across_mu(mu, ratio):
    eps = ratio * mu if ratio else 0.0
    ref = gdp_delta(mu, eps)
    got = float(gdp_conversion.log_delta_for_epsilon(mu, eps))
    rel = got - float(mpmath.log(ref))  # error of log delta = relative error of delta
    assert 0.0 <= rel <= 5e-12


@pytest.mark.parametrize("mu, delta", [(1e-8, 1e-300), (1e-3, 1e-100), (1.0, 1e-300), (1e3, 1e-300),
                                       (1e3, 0.5), (0.2, 0.2)])
def test_gdp_epsilon_safe_and_accurate_at_extremes(mu, delta):
    eps = gdp_conversion.epsilon_for_delta(mu, delta)
    assert gdp_delta(mu, eps) <= delta
    assert eps <= gdp_epsilon(mu, delta) * (1 + 1e-11) + 1e-300


def test_mu_for_epsilon_delta_edge_cases():
    mu = gdp_conversion.mu_for_epsilon_delta(1e-8, 0.1)
    assert mu == pytest.approx(0.2513, abs=1e-4) and gdp_delta(mu, 1e-8) <= 0.1
    mu = gdp_conversion.mu_for_epsilon_delta(0.0, 1e-15)
    assert mu == pytest.approx(2.5066e-15, rel=1e-4) and gdp_delta(mu, 0.0) <= 1e-15
    assert gdp_delta(mu * (1 + 1e-10), 0.0) > 1e-15  # and tight


@pytest.mark.parametrize("eps", [1e-14, 1e-8, 1e-3, 0.5, 1.0, 1.5, 20.0, 700.0])
def test_mu_from_pure_epsilon_never_low(eps):
    with mpmath.workdps(400):  # 1/(1+e^700) ~ 1e-304: tanh needs ~400 digits
        e = mpmath.mpf(eps)
        exact = -2 * mpmath.sqrt(2) * mpmath.erfinv(-mpmath.tanh(e / 2))  # -2 Phi^-1(1/(1+e^eps))
    got = gdp_conversion.mu_from_pure_epsilon(eps)
    assert exact <= got <= exact * (1 + 1e-13)


@pytest.mark.parametrize("eps0", [1e-3, 0.1, 1.0, 5.0])
def test_rdp_of_one_pure_release_is_at_most_eps0(eps0):
    for delta in [1e-15, 1e-6, 0.1]:
        assert RDPAccountant().compose(PureDP(eps0)).epsilon(delta) <= eps0 * (1 + 1e-12)


def test_gdp_epsilon_monotone_in_delta_at_one_ulp():
    # failed once: epsilon(0.19999999999999998) = 1.2477995012618546 < epsilon(0.2) = 1.247799501261855
    for mu in np.geomspace(0.05, 50.0, 41):
        acc = GDPAccountant().compose(GDP(float(mu)))
        for d in [1e-12, 1e-6, 0.05, 0.2, 0.5]:
            lower = np.nextafter(d, 0.0)
            assert acc.epsilon(float(lower)) >= acc.epsilon(d)
