"""Cross-checks against dp-accounting's privacy loss distributions on random event mixes."""

import math

import mpmath
import numpy as np
import pytest

from accountants import (
    GDPAccountant,
    Gaussian,
    Laplace,
    OptimalHomogeneousAccountant,
    PLDAccountant,
    RDPAccountant,
    SelfComposed,
    Composed,
    UnsupportedEventError,
    best_epsilon,
)
from accountants.best import default_accountants, exact_accountant

DELTA = 1e-6


def random_mix(seed: int, kinds: str):
    """1 to 1e4 events in 1-4 groups; the composed loss spread sqrt(sum eps_i^2) lies in [0.2, 4]."""
    rng = np.random.default_rng(seed)
    total = int(10 ** rng.uniform(0, 4))
    n_groups = int(rng.integers(1, 5))
    cuts = np.sort(rng.integers(0, total + 1, n_groups - 1))
    counts = np.diff(np.concatenate([[0], cuts, [total]])).astype(int)
    counts[0] += total - counts.sum()
    spread = 10 ** rng.uniform(math.log10(0.2), math.log10(4.0))
    rel = rng.uniform(0.3, 3.0, n_groups)
    scale0 = spread / math.sqrt(max(1.0, float(np.sum(counts * rel ** 2))))
    leaves = []
    for i in range(n_groups):
        kind = kinds[i % len(kinds)] if kinds != "mixed" else rng.choice(["L", "G"])
        per = scale0 * rel[i]  # per-release eps (Laplace) or mu (Gaussian)
        sens = float(rng.uniform(0.5, 2.0))
        leaves.append(Laplace(scale=sens / per, sensitivity=sens) if kind == "L"
                      else Gaussian(sigma=sens / per, sensitivity=sens))
    return Composed(tuple(SelfComposed(l, int(c)) for l, c in zip(leaves, counts) if c > 0))


def optimistic_pld_epsilon(event) -> float:
    """dp-accounting's optimistic estimate (a lower bound), discretised finely enough to be useful."""
    pess = PLDAccountant().compose(event)
    n = sum(event.grouped().values())
    interval = min(pess.interval(), max(2e-6, 0.02 * max(pess.epsilon(DELTA), 0.01) / n))
    return PLDAccountant.optimistic(interval).compose(event).epsilon(DELTA)


CASES = [(seed, kinds) for seed, kinds in zip(range(100, 112), ["L", "G", "mixed", "L", "LG", "G"] * 2)]


@pytest.mark.parametrize("seed, kinds", CASES)
def test_nothing_certifies_below_optimistic_pld(seed, kinds):
    event = random_mix(seed, kinds)
    floor = optimistic_pld_epsilon(event)
    pld = PLDAccountant().compose(event).epsilon(DELTA)
    assert pld >= floor * (1 - 1e-9)
    certificate = best_epsilon(event, DELTA)
    for name, value in certificate.values.items():
        if value is not None:
            assert value >= floor * (1 - 1e-9) - 1e-12, (name, value, floor)
    if exact_accountant(event) is None:
        assert certificate.values["pld"] is not None
    else:  # issue 12: the PLD is not run where an exact accountant (GDP here) answers
        assert certificate.values["pld"] is None and "exact" in certificate.notes["pld"]
    # best is within 1% of PLD's pessimistic estimate: no accountant is far below PLD
    assert certificate.value >= 0.99 * pld
    assert certificate.value <= pld


@pytest.mark.parametrize("seed", range(200, 208))
def test_gaussian_mixes_gdp_closed_form(seed):
    event = random_mix(seed, "G")
    mu2 = sum(n * (leaf.sensitivity / leaf.sigma) ** 2 for leaf, n in event.grouped().items())
    gdp = GDPAccountant().compose(event)
    assert gdp.mu() == pytest.approx(math.sqrt(mu2), rel=1e-9)
    eps = gdp.epsilon(DELTA)
    with mpmath.workdps(40):
        mu = mpmath.sqrt(mpmath.mpf(mu2))
        exact_delta = (mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2))
    assert gdp.delta(eps) == pytest.approx(float(exact_delta), rel=1e-9)
    assert float(exact_delta) <= DELTA * (1 + 1e-9)
    # GDP is exact for Gaussians: it is a lower reference for every other accountant, and PLD is
    # within 1% of it
    for factory in default_accountants():
        try:
            value = factory().compose(event).epsilon(DELTA)
        except UnsupportedEventError:
            continue
        assert value >= eps * (1 - 1e-9)
    assert PLDAccountant().compose(event).epsilon(DELTA) <= eps * 1.01


def test_optimal_between_pld_and_rdp_at_1e5():
    event = Laplace(scale=100.0)  # eps0 = 0.01
    k = 100_000
    opt = OptimalHomogeneousAccountant().compose(event, k).epsilon(DELTA)
    pld = PLDAccountant().compose(event, k).epsilon(DELTA)
    rdp = RDPAccountant().compose(event, k).epsilon(DELTA)
    assert pld <= opt <= rdp


def test_heterogeneous_laplace_matches_dp_accounting():
    from dp_accounting.pld import PLDAccountant as GooglePLD

    from accountants import to_dp_accounting
    event = Composed(tuple(Laplace(scale=i ** 0.6) for i in range(1, 41)))
    ours = PLDAccountant().compose(event).epsilon(DELTA)
    theirs = GooglePLD(value_discretization_interval=1e-4).compose(to_dp_accounting(event)).get_epsilon(DELTA)
    assert ours == pytest.approx(theirs, rel=2e-3)
