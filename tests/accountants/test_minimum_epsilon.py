"""``minimum_epsilon``: best_epsilon's value and label without the root searches that cannot reach the minimum
(session 16; issue 19: the live certificate of a fresh one-replicate run).

``Accountant.epsilon_exceeds(e, delta)`` may answer True only where ``epsilon(delta) > e`` holds; GDP tests its
own delta at e (session 15), the optimal composition a LOWER bound on the real randomized-response delta at e
(``log_delta_randomized_response(..., lower=True)``). ``accountants.best._best`` asks such accountants after
the others and skips the query where the test is True at the others' minimum. These tests pin: the validity
of both tests at and around each accountant's own answer, the lower bound below the upper one and below the
exact sum, (value, label) equal to best_epsilon's bit for bit over events, deltas and accountant orders, and
that the searches are in fact skipped.
"""

import math
from fractions import Fraction

import pytest

from accountants import best_epsilon
from accountants.best import _best, default_accountants, minimum_epsilon
from accountants.events import GDP, ApproxDP, Composed, Gaussian, Laplace, PureDP
from accountants.gdp import GDPAccountant
from accountants.kov import KOVHeterogeneousAccountant
from accountants.optimal import OptimalHomogeneousAccountant, log_delta_randomized_response
from accountants.pld import PLDAccountant
from accountants.pure import PureAccountant
from accountants.rdp import RDPAccountant

DELTAS = [1e-12, 1e-6, 0.05, 0.5]

EVENTS = {
    "laplace_x1": Laplace(scale=70.0),
    "laplace_x14": Laplace(scale=70.0) * 14,
    "laplace_x300": Laplace(scale=3.0) * 300,
    "pure_identical": PureDP(0.3) * 40,  # the optimal composition is exact: never skipped
    "pure_mixed": Composed((PureDP(0.5), Laplace(scale=2.0))),
    "pure_heterogeneous": Composed((PureDP(0.05) * 30, PureDP(0.02) * 11)),
    "gauss_laplace": Composed((Gaussian(sigma=1.0) * 10, Laplace(scale=20.0))),  # GDP wins the cheap sets, PLD all
    "gaussian_only": Gaussian(sigma=4.0) * 9,
    "gdp_pure": Composed((GDP(1.0) * 3, PureDP(0.5) * 2)),  # GDP, RDP and the PLD each win somewhere
    "approx": ApproxDP(0.2, 1e-9) * 25,  # delta0 > 0: the optimal composition's test declines
    "big_eps0": Laplace(scale=0.1) * 6,
}

ORDERS = {
    "all": None,
    "cheap": [f for f in default_accountants() if f is not PLDAccountant],
    "reversed": [f for f in reversed(default_accountants()) if f is not PLDAccountant],
    "optimal_gdp": [OptimalHomogeneousAccountant, GDPAccountant],
    "gdp_first_twice": [GDPAccountant, RDPAccountant, GDPAccountant, OptimalHomogeneousAccountant],
    "closed_form": [PureAccountant, KOVHeterogeneousAccountant, GDPAccountant],
}


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("name", sorted(EVENTS))
def test_minimum_and_label_are_best_epsilons_bit_for_bit(name, order):
    for delta in DELTAS:
        cert = best_epsilon(EVENTS[name], delta, ORDERS[order])
        value, by = minimum_epsilon(EVENTS[name], delta, ORDERS[order])
        assert (float(value).hex(), by) == (float(cert.value).hex(), cert.by), (name, order, delta)


def _composed(factory, event):
    acc = factory()
    acc.compose(event)
    return acc


@pytest.mark.parametrize("k, eps0", [(1, 0.0143), (14, 1 / 70), (40, 0.3), (300, 1 / 3), (6, 10.0), (2000, 0.01),
                                     (5, 1e-9), (50, 0.01)])
@pytest.mark.parametrize("delta", DELTAS)
def test_optimal_exceeds_only_below_its_answer(k, eps0, delta):
    """Around the accountant's own answer e: True is allowed only strictly below it. Far below it the test must
    answer True (it is what saves the search); at and above it never."""
    acc = _composed(OptimalHomogeneousAccountant, PureDP(eps0) * k)
    answer = acc.epsilon(delta)
    probes = [0.0, answer * 0.5, answer * (1 - 1e-3), answer * (1 - 1e-9), math.nextafter(answer, 0.0), answer,
              math.nextafter(answer, math.inf), answer * (1 + 1e-9), answer * 1.01, answer * 2, k * eps0]
    for e in probes:
        if math.isfinite(e) and acc.epsilon_exceeds(e, delta):
            assert answer > e, (k, eps0, delta, e, answer)
    if 0.0 < answer < math.inf and answer * 0.5 > 0 and acc.delta(0.0) > delta * 10:
        assert acc.epsilon_exceeds(answer * 0.5, delta)


@pytest.mark.parametrize("mu", [0.05, 0.7, 3.0, 40.0])
@pytest.mark.parametrize("delta", DELTAS)
def test_gdp_exceeds_only_below_its_answer(mu, delta):
    acc = _composed(GDPAccountant, GDP(mu))
    answer = acc.epsilon(delta)
    for e in [0.0, answer * 0.5, answer * (1 - 1e-9), math.nextafter(answer, 0.0), answer, answer * 1.5]:
        if acc.epsilon_exceeds(e, delta):
            assert answer > e, (mu, delta, e, answer)
    if answer > 0:
        assert acc.epsilon_exceeds(answer * 0.5, delta)


def _exact_rr_delta(k: int, eps0: float, eps: float) -> Fraction:
    """KOV Thm 3.3 in exact rationals up to the exponentials (evaluated to ~1e-30 relative with Fraction of
    floats of exp of the exact loss differences) -- a reference for small k."""
    import decimal

    decimal.getcontext().prec = 60
    d0, d = decimal.Decimal(eps0), decimal.Decimal(eps)
    p = d0.exp() / (1 + d0.exp())
    total = decimal.Decimal(0)
    for j in range(k + 1):
        loss = (k - 2 * j) * d0
        if loss > d:
            total += math.comb(k, j) * p ** (k - j) * (1 - p) ** j * (1 - (d - loss).exp())
    return total


@pytest.mark.parametrize("k, eps0", [(14, 1 / 70), (40, 0.3), (9, 1.1), (60, 0.05)])
def test_lower_bound_is_below_the_exact_delta_and_the_upper_bound(k, eps0):
    import decimal

    for frac in [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99]:
        e = frac * k * eps0
        exact = _exact_rr_delta(k, eps0, e)
        low = log_delta_randomized_response(k, eps0, e, None, lower=True)
        high = log_delta_randomized_response(k, eps0, e, None)
        assert low <= high
        if exact > 0:
            assert decimal.Decimal(math.exp(low)) <= exact <= decimal.Decimal(math.exp(high)), (k, eps0, e)
            assert low > math.log(float(exact)) - 1e-9  # tight: it is what decides the skip
        else:
            assert low == -math.inf


def test_optimal_search_skipped_where_it_cannot_win(monkeypatch):
    """Private-UCB's 14 Laplace(70) releases at delta 1e-6: RDP 0.18885 and the PLD 0.18436 are below the
    optimal composition's 0.18506, so its search is not run; at 13 releases the optimal composition wins
    among the cheap accountants (0.17822 against RDP's 0.17858) and is asked."""
    calls, search = [], OptimalHomogeneousAccountant.epsilon
    monkeypatch.setattr(OptimalHomogeneousAccountant, "epsilon", lambda self, delta: calls.append(delta) or search(self, delta))
    assert minimum_epsilon(Laplace(scale=70.0) * 14, 1e-6) == (best_epsilon(Laplace(scale=70.0) * 14, 1e-6).value, "pld")
    assert len(calls) == 1  # best_epsilon's own query above; none from minimum_epsilon
    calls.clear()
    value, by = minimum_epsilon(Laplace(scale=70.0) * 13, 1e-6, ORDERS["cheap"])
    assert by == "optimal" and len(calls) == 1


def test_a_subclass_that_answers_differently_is_asked(monkeypatch):
    """The test is the class's own: a subclass with its own epsilon (here: a tenth of it) but the inherited
    epsilon_exceeds must still be queried -- skipping it on the parent's delta would lose its minimum."""

    class Tenth(OptimalHomogeneousAccountant):
        def epsilon(self, delta):
            return super().epsilon(delta) / 10

    event = Laplace(scale=70.0) * 14
    value, by = minimum_epsilon(event, 1e-6, [RDPAccountant, Tenth])
    assert by == "optimal" and value == best_epsilon(event, 1e-6, [RDPAccountant, Tenth]).value


def test_deferral_refuses_a_time_budget():
    with pytest.raises(ValueError, match="time_budget"):
        _best(Laplace(scale=1.0), lambda a: a.epsilon(1e-6), None, 1.0, exceeds=lambda a, e: False)


def test_delta_zero_and_bad_deltas_as_best_epsilon():
    event = Composed((PureDP(0.1) * 3, Laplace(scale=2.0)))
    cert = best_epsilon(event, 0.0)
    assert minimum_epsilon(event, 0.0) == (cert.value, cert.by)
    for bad in (-1e-3, 1.0, float("nan"), "1e-6"):
        with pytest.raises(ValueError, match="delta"):
            minimum_epsilon(event, bad)
