"""The lean PLD engine (accountants.fastpld) against dp-accounting's own construction and bounds."""

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pldm

from accountants import Composed, Gaussian, Laplace, PLDAccountant, PureDP
from accountants.fastpld import ComposedPLD, leaf_pmf


@pytest.mark.parametrize("scale, sens, h", [(10.0, 1.0, 1e-3), (3.0, 2.0, 1e-2), (100.0, 1.0, 1e-4)])
def test_laplace_leaf_equals_dp_accounting_connect_the_dots(scale, sens, h):
    lo, masses, inf = leaf_pmf(Laplace(scale, sens), h)
    theirs = pldm.from_laplace_mechanism(scale, sensitivity=sens, value_discretization_interval=h)._pmf_remove
    their = dict(theirs._loss_probs) if hasattr(theirs, "_loss_probs") else {
        theirs._lower_loss + i: p for i, p in enumerate(theirs._probs)}
    ours = {lo + i: p for i, p in enumerate(masses) if p > 0}
    keys = set(ours) | set(their)
    # masses are differences of hockey-stick values divided by e^h - 1 ~ h: both implementations
    # carry ~u/h = 2e-12 (h = 1e-4) absolute rounding there, hence the tolerance 50 u / h
    assert max(abs(ours.get(k, 0.0) - their.get(k, 0.0)) for k in keys) < 50 * 2.2e-16 / h
    assert inf == pytest.approx(theirs._infinity_mass, abs=1e-15)


EVENTS = [
    Laplace(100.0) * 2000,
    Composed(tuple(Laplace(float(s)) for s in range(50, 90))),
    Laplace(10.0) * 100 + Gaussian(20.0) * 10 + PureDP(0.05) * 30,
]


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3])
def test_composed_between_dp_accounting_optimistic_and_pessimistic(event, delta):
    acc = PLDAccountant().compose(event)
    ours = acc.epsilon(delta)
    h = acc.interval()
    floor = PLDAccountant.optimistic(h).compose(event).epsilon(delta)
    # dp-accounting's pessimistic PLD on the same grid, at the delta left after our margins
    google = acc.pld().get_epsilon_for_delta(delta - acc.rounding_margin())
    assert floor <= ours <= google * (1 + 1e-3) + 1e-9
    assert acc.delta(ours) <= delta


def test_margin_holds_the_wrap_around_bound():
    acc = PLDAccountant().compose(Laplace(100.0) * 2000)
    engine = ComposedPLD(acc.groups, acc.interval(), 1 << 22)
    assert 0 < engine.tail_bound <= 1e-20 and engine.margin >= engine.tail_bound
