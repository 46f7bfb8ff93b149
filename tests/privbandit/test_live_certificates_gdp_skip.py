"""The live certificate asks GDP for its epsilon only where GDP can reach the minimum (issue 19, session
15: GDP's root search was the largest part of a fresh one-replicate run's certificate).

``PrivacySchedule.live_certificates`` reports each checkpoint's minimum over the accountants and the
accountant that reached it. Where GDP's delta at the others' best epsilon exceeds delta, GDP's epsilon is
larger (its epsilon is the least point where its own delta is within delta), so it is not computed. These
tests pin that the values and labels are those of ``best_epsilon`` on the same accountants, bit for bit,
on schedules where GDP loses by far, wins, and crosses over, and that the root search is skipped.
"""

import math

import numpy as np
import pytest

import privbandit.schedule as schedule_module
from accountants import gdp_conversion
from accountants.best import default_accountants
from accountants.events import Composed, Gaussian, Laplace, PureDP
from privbandit.ledger import CLOSED_FORM_ACCOUNTANTS
from privbandit.policies import REGISTRY
from privbandit.policies.base import schedule_for
from privbandit.schedule import EventSchedule

ROUNDS = np.array([0, 1, 2, 3, 5, 8, 13, 40, 120, 400, 1500, 6000])


def _mixed(t: int):
    # a Gaussian release per round and a Laplace every 8th: GDP loses early (pure Laplace) and wins late
    gauss, lap = t, t // 8
    parts = [Gaussian(sigma=6.0) * gauss] if gauss else []
    return Composed(tuple(parts + ([Laplace(scale=3.0) * lap] if lap else []))) if lap else parts[0]


SCHEDULES = {
    "laplace": EventSchedule(lambda t: Laplace(scale=40.0) * max(1, int(math.log2(t)) + 1)),
    "mixed": EventSchedule(_mixed),
    "heterogeneous_pure": EventSchedule(lambda t: Composed((PureDP(0.05) * t, PureDP(0.02) * (t // 2 + 1)))),
    "identical_pure": EventSchedule(lambda t: PureDP(0.01) * t),  # the optimal composition is exact here
    "private_ucb": schedule_for(REGISTRY["private_ucb"](epsilon=1.0), 6000, 5),
    "dp_ucb_bound": schedule_for(REGISTRY["dp_ucb_bound"](epsilon=0.5), 6000, 3),
}


def _reference(schedule, rounds, delta, accountants):
    """live_certificates through ``epsilon`` at every entry (best_epsilon, no shortcut): the same schedule
    as a subclass with its own ``epsilon``, which live_certificates asks as it is."""

    class AskEpsilon(type(schedule)):
        def epsilon(self, rounds, delta, accountants=None):
            return super().epsilon(rounds, delta, accountants)

    plain = object.__new__(AskEpsilon)
    plain.__dict__.update(schedule.__dict__)
    return plain.live_certificates(rounds, delta, accountants)


def _cold():
    schedule_module._certified_cached.cache_clear()
    schedule_module._live_entry_cached.cache_clear()


@pytest.mark.parametrize("name", sorted(SCHEDULES))
@pytest.mark.parametrize("delta", [1e-9, 1e-6, 0.01])
@pytest.mark.parametrize("accountants", [None, "closed_form"])
def test_live_certificate_is_best_epsilons_bit_for_bit(name, delta, accountants):
    accountants = CLOSED_FORM_ACCOUNTANTS if accountants == "closed_form" else None
    schedule = SCHEDULES[name]
    _cold()
    values, labels = schedule.live_certificates(ROUNDS, delta, accountants)
    _cold()
    want_values, want_labels = _reference(schedule, ROUNDS, delta, accountants)
    assert [v.hex() for v in values] == [float(v).hex() for v in want_values]
    assert labels == want_labels


def _gdp_searches(monkeypatch):
    calls = []
    search = gdp_conversion.epsilon_for_delta

    def counted(mu, delta):
        calls.append(mu)
        return search(mu, delta)

    monkeypatch.setattr(gdp_conversion, "epsilon_for_delta", counted)
    return calls


def test_gdp_root_search_skipped_where_gdp_cannot_win(monkeypatch):
    """Private-UCB's Laplace tree: GDP's epsilon is 1.3-4.4x the winner's at every checkpoint (measured),
    so the live certificate runs no GDP root search (base b9f3338 ran one per distinct checkpoint)."""
    calls = _gdp_searches(monkeypatch)
    _cold()
    values, labels = SCHEDULES["private_ucb"].live_certificates(ROUNDS, 1e-6)
    assert calls == []
    assert not any(label.startswith("gdp") for label in labels)
    assert np.all(np.isfinite(values)) and values[-1] > 0


def test_gdp_still_searched_and_reported_where_it_wins(monkeypatch):
    """The mixed schedule: GDP wins the late checkpoints, so it must be asked there and named."""
    calls = _gdp_searches(monkeypatch)
    _cold()
    _, labels = SCHEDULES["mixed"].live_certificates(ROUNDS, 1e-6)
    assert calls
    assert "gdp" in labels and any(not label.startswith("gdp") for label in labels[1:])


def test_subclass_epsilon_is_asked_as_it_is():
    """A schedule with its own epsilon() keeps it: the live certificate reads that method's answers."""

    class Halved(EventSchedule):
        def epsilon(self, rounds, delta, accountants=None):
            cert = super().epsilon(rounds, delta, accountants)
            return type(cert)(cert.value / 2, "halved", cert.values)

    base = EventSchedule(lambda t: Laplace(scale=10.0) * t)
    halved = Halved(base.function)
    _cold()
    want, _ = base.live_certificates(ROUNDS, 1e-6)
    got, labels = halved.live_certificates(ROUNDS, 1e-6)
    assert np.array_equal(got[1:], want[1:] / 2)
    assert set(labels[1:]) <= {"halved"} | {f"halved (via round {r})" for r in ROUNDS}

