"""Issue 12 items 4-5: discrete Laplace / discrete Gaussian events with their own curves, and interop
that carries dp-accounting's neighbouring relation."""

import math

import mpmath
import numpy as np
import pytest

from accountants import (DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace, PLDAccountant, PureDP,
                         RDPAccountant, ZCDP, best_epsilon, dp_accounting_accountant, from_dp_accounting,
                         neighboring_relation, rdp_curves, to_dp_accounting)
from accountants.optimal import OptimalHomogeneousAccountant


def _brute_rdp(t: int, u: int, alpha: float) -> float:
    """sum_z P(z)^a Q(z)^(1-a) over the integers, in mpmath (the series converges geometrically)."""
    with mpmath.workdps(40):
        r = mpmath.exp(-mpmath.mpf(1) / t)
        c = (1 - r) / (1 + r)
        zmax = int(60 * t) + u
        s = mpmath.fsum((c * r ** abs(z)) ** alpha * (c * r ** abs(z - u)) ** (1 - alpha)
                        for z in range(-zmax, zmax + 1))
        return float(mpmath.log(s) / (alpha - 1))


@pytest.mark.parametrize("t, u", [(3, 1), (10, 1), (10, 3), (40, 7)])
def test_discrete_laplace_rdp_matches_brute_force(t, u):
    alphas = np.array([1.5, 2.0, 8.0, 64.0])
    got = rdp_curves.discrete_laplace(alphas, float(t), u)
    want = [min(_brute_rdp(t, u, a), u / t) for a in alphas]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_discrete_laplace_curve_is_above_the_continuous_one():
    # the reason exact mode must not record discrete releases as continuous Laplace events
    alphas = np.array([2.0, 10.0, 100.0])
    t, u = 3 * 2**20 + 5, 2**20
    disc = rdp_curves.discrete_laplace(alphas, float(t), u)
    cont = rdp_curves.laplace(alphas, u / t)
    assert np.all(disc >= cont)
    g = 2.0 ** -20
    ev = DiscreteLaplace(t * g, u * g)
    assert ev.pure_epsilon() == u / t
    assert RDPAccountant().compose(ev * 1000).epsilon(1e-6) >= RDPAccountant().compose(
        Laplace(t * g, u * g) * 1000).epsilon(1e-6)


def test_discrete_laplace_pld_small_units_and_declines_large():
    ev = DiscreteLaplace(10.0, 3.0, grid=1.0)
    assert PLDAccountant().supports(ev)
    assert PLDAccountant().supports(DiscreteLaplace(2.0 ** -10, 2.0 ** -18))  # u = 4 grid units
    assert not PLDAccountant().supports(DiscreteLaplace(10.0, 1.0))  # u = 2^20 grid units: too costly
    cert = best_epsilon(ev * 50, 1e-6)
    # never below the continuous Laplace PLD of the same eps (the discrete curve is worse)
    assert cert.value >= best_epsilon(Laplace(10.0, 3.0) * 50, 1e-6).value * (1 - 1e-6)


def test_discrete_events_validate_grid_multiples():
    with pytest.raises(ValueError, match="scale"):
        DiscreteLaplace(1.5, 1.0, grid=1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        DiscreteGaussian(2.0, 0.5, grid=1.0)


def test_discrete_gaussian_is_zcdp_only():
    ev = DiscreteGaussian(4.0, 2.0, grid=1.0)
    assert ev.rho == 0.125 and ev.gdp_mu() is None and ev.pure_epsilon() is None
    cert = best_epsilon(ev * 10, 1e-6)
    assert cert.by == "rdp" and cert.value == pytest.approx(best_epsilon(ZCDP(0.125) * 10, 1e-6).value)
    assert cert.value >= best_epsilon(Gaussian(2.0) * 10, 1e-6).value  # never the GDP figure


def test_pure_dp_ledger_round_trips_to_dp_accounting_pld():
    import dp_accounting

    event = PureDP(0.1) * 1000
    back = from_dp_accounting(to_dp_accounting(event))
    assert back.count == 1000 and 0.1 <= back.event.epsilon <= 0.1 * (1 + 1e-13)  # rounded up both ways, never down
    assert neighboring_relation(event) == dp_accounting.NeighboringRelation.REPLACE_ONE
    google = dp_accounting_accountant(event).get_epsilon(1e-6)
    exact = OptimalHomogeneousAccountant().compose(event).epsilon(1e-6)
    # dp-accounting's pessimistic PLD, with the count honoured (its own SelfComposed path ignores it)
    assert exact <= google <= exact * 1.01
    assert dp_accounting_accountant(event, "rdp").get_epsilon(1e-6) >= exact


def test_additive_noise_uses_add_or_remove_and_mixes_are_refused():
    import dp_accounting

    event = Laplace(10.0) * 100 + Gaussian(20.0) * 10
    assert neighboring_relation(event) == dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    ours = best_epsilon(event, 1e-6).value
    theirs = dp_accounting_accountant(event).get_epsilon(1e-6)
    assert ours == pytest.approx(theirs, rel=1e-2)
    with pytest.raises(ValueError, match="neighbouring relation"):
        dp_accounting_accountant(PureDP(0.1) + Laplace(10.0))
