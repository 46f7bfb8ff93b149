"""Bad input raises ValueError naming the parameter and its range."""

import math

import numpy as np
import pytest

from privbandit.ledger import Ledger
from privbandit.mechanisms import (FreshBatchMean, GaussianRelease, HybridMechanism, IntervalMean,
                                   LaplaceRelease, LogarithmicMechanism, SplitMechanism, TreeMechanism)

RNG = np.random.default_rng(0)
COUNTERS = [
    lambda **kw: TreeMechanism(2, 2, horizon=kw.pop("horizon", 8), rng=kw.pop("rng", RNG),
                               ledger=kw.pop("ledger", Ledger(2, 2)), **kw),
    lambda **kw: LogarithmicMechanism(2, 2, rng=kw.pop("rng", RNG), ledger=kw.pop("ledger", Ledger(2, 2)), **kw),
    lambda **kw: HybridMechanism(2, 2, rng=kw.pop("rng", RNG), ledger=kw.pop("ledger", Ledger(2, 2)), **kw),
    lambda **kw: SplitMechanism(2, 2, rng=kw.pop("rng", RNG), ledger=kw.pop("ledger", Ledger(2, 2)), **kw),
    lambda **kw: FreshBatchMean(2, 2, rng=kw.pop("rng", RNG), ledger=kw.pop("ledger", Ledger(2, 2)), **kw),
]


@pytest.mark.parametrize("factory", COUNTERS)
@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf, "1"])
def test_epsilon_range(factory, eps):
    with pytest.raises(ValueError, match=r"epsilon must .*\(0, inf\)"):
        factory(epsilon=eps)


@pytest.mark.parametrize("factory", COUNTERS)
def test_insert_and_query_inputs(factory):
    m = factory(epsilon=1.0)
    ok = np.ones((2, 2), dtype=bool)
    with pytest.raises(ValueError, match=r"values must lie in \[0, 1\]"):
        m.insert(np.full((2, 2), 1.5), ok)
    with pytest.raises(ValueError, match=r"values must lie in \[0, 1\]"):
        m.insert(np.full((2, 2), np.nan), ok)
    with pytest.raises(ValueError, match=r"values must have shape \(replicates, streams\) = \(2, 2\)"):
        m.insert(np.ones((2, 3)), ok)
    with pytest.raises(ValueError, match=r"mask must be a bool array of shape \(2, 2\)"):
        m.insert(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"n must be a whole number in \[0, inf\)"):
        m.privacy_schedule(-1)
    with pytest.raises(ValueError, match=r"gamma must lie in \(0, 1\)"):
        m.error_bound(4, 1.0)
    with pytest.raises(ValueError, match=r"ledger shape \(replicates, streams\) must be \(2, 2\)"):
        factory(epsilon=1.0, ledger=Ledger(3, 2))
    with pytest.raises(ValueError, match=r"rng must be a numpy.random.Generator"):
        factory(epsilon=1.0, rng=np.random.RandomState(0))


def test_tree_specific():
    with pytest.raises(ValueError, match=r"horizon must be a whole number in \[1, inf\)"):
        TreeMechanism(1, 1, epsilon=1.0, horizon=0, rng=RNG, ledger=Ledger(1, 1))
    m = TreeMechanism(1, 1, epsilon=1.0, horizon=4, rng=RNG, ledger=Ledger(1, 1))
    with pytest.raises(ValueError, match=r"n must lie in \[0, horizon=4\]"):
        m.privacy_schedule(5)


def test_fresh_batch_and_interval_specific():
    with pytest.raises(ValueError, match=r"batches must be one of"):
        FreshBatchMean(1, 1, epsilon=1.0, rng=RNG, ledger=Ledger(1, 1), batches="weekly")
    m = FreshBatchMean(1, 1, epsilon=1.0, rng=RNG, ledger=Ledger(1, 1))
    with pytest.raises(ValueError, match="batches='manual'"):
        m.close_batch(np.ones((1, 1), dtype=bool))
    with pytest.raises(ValueError, match=r"v must be given"):
        IntervalMean(1, 1, rng=RNG, ledger=Ledger(1, 1))
    with pytest.raises(ValueError, match=r"v must lie in \(0, inf\)"):
        IntervalMean(1, 1, v=-1.0, rng=RNG, ledger=Ledger(1, 1))
    with pytest.raises(ValueError, match=r"interval must be a whole number in \[1, inf\)"):
        IntervalMean(1, 1, v=1.1, interval=0, rng=RNG, ledger=Ledger(1, 1))
    with pytest.raises(ValueError, match=r"scale_fn must return finite scales"):
        im = IntervalMean(1, 1, scale_fn=lambda n: -np.ones(np.shape(n)), rng=RNG, ledger=Ledger(1, 1))
        im.insert(np.ones((1, 1)), np.ones((1, 1), dtype=bool))
        im.release(np.ones((1, 1), dtype=bool))


def test_one_off_release_inputs():
    led = Ledger(1, 1)
    lap = LaplaceRelease(RNG, led, "x")
    with pytest.raises(ValueError, match=r"scale must lie in \(0, inf\)"):
        lap.release([1.0], 0.0, 1.0, 0, 0, 0, 1)
    with pytest.raises(ValueError, match=r"sensitivity must lie in \(0, inf\)"):
        lap.release([1.0], 1.0, -1.0, 0, 0, 0, 1)
    with pytest.raises(ValueError, match=r"sigma must lie in \(0, inf\)"):
        GaussianRelease(RNG, led, "g").release([1.0], math.inf, 1.0, 0, 0, 0, 1)
    with pytest.raises(ValueError, match=r"name must be a non-empty string"):
        LaplaceRelease(RNG, led, "")
    with pytest.raises(ValueError, match=r"replicate must lie in \[0, 1\)"):
        lap.release([1.0], 1.0, 1.0, 3, 0, 0, 1)


def test_exact_gaussian_releases_are_recorded_as_zcdp_not_gdp():
    """The discrete Gaussian is proven for zCDP only: exact releases become ZCDP events (RDP bounds
    them), never Gaussian/GDP ones; the cheap ledger uses the zCDP conversion for those records."""
    from accountants import ZCDP, best_epsilon
    from privbandit.mechanisms.gaussian import GaussianRelease
    from privbandit.mechanisms.sampling import GRID

    led = Ledger(1, 1, tight=True)
    rel = GaussianRelease(np.random.default_rng(0), led, "g", exact=True)
    rel.release([0.5], 2.0, 1.0, 0, 0, 0, 1)
    event = led.worst_record_event(0)
    leaves = event.grouped()
    assert len(leaves) == 1 and isinstance(next(iter(leaves)), ZCDP)
    rho = next(iter(leaves)).rho
    sens = (math.floor(1.0 / GRID * (1 + 1e-12)) + 1) * GRID
    assert rho == pytest.approx((sens / 2.0) ** 2 / 2, rel=1e-12)
    cert = best_epsilon(event, 1e-6)
    assert cert.by == "rdp" and cert.values["gdp"] is None
    cheap = Ledger(1, 1)
    GaussianRelease(np.random.default_rng(0), cheap, "g", exact=True).release([0.5], 2.0, 1.0, 0, 0, 0, 1)
    assert np.isinf(cheap.realized_mu()[0])
    want = rho + 2 * math.sqrt(rho * math.log(1e6))
    assert cheap.realized_epsilon(1e-6)[0] == pytest.approx(want, rel=1e-9)
    assert cheap.realized_epsilon(1e-6)[0] >= cert.value  # the closed form is the looser bound
