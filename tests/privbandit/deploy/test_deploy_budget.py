"""Acceptance: a budget below the schedule's total stops releases exactly when the next one would
exceed it; the odometer and the realized spend stay within the certificate."""

from __future__ import annotations

import pytest

from privbandit.deploy import BudgetExhausted, Deployment
from privbandit.deploy.odometer import Odometer
from privbandit.policies import make_policy

# dp_ucb_int releases at update time (interval releases), gaussian_ts at select time (posterior draws)
CASES = [("dp_ucb_int", {"rate": 0.5}, 5.0), ("gaussian_ts", {"b": 2, "c": 50.0}, 2.0)]


@pytest.mark.parametrize("policy,params,budget", CASES)
@pytest.mark.parametrize("on_exhausted", ["exploit", "stop"])
def test_budget_stops_releases_exactly_at_the_next_round_that_would_exceed_it(tmp_path, policy, params, budget,
                                                                             on_exhausted):
    horizon, delta = 200, 1e-6
    odo = Odometer(make_policy(policy, **params), horizon, 3, delta)
    assert odo.epsilon(horizon) > budget  # the schedule's total exceeds the budget
    dep = Deployment.create(tmp_path / "b.db", policy, params=params, n_arms=3, budget=budget, delta=delta,
                            horizon=horizon, seed=3, on_exhausted=on_exhausted)
    stop = dep.stop_round
    assert odo.epsilon(stop) <= budget < odo.epsilon(stop + 1)
    assert 3 < stop < horizon
    releases = []
    for i in range(stop):
        d = dep.select()
        assert (d.kind, d.round) == ("policy", i + 1)
        dep.update(d.decision, 1.0 if d.arm == 2 else 0.0)
        releases.append(sum(dep.status(last=0)["releases_per_arm"]))
        status = dep.status(last=0)
        assert status["spent_epsilon"] == pytest.approx(odo.epsilon(i + 1))
        assert status["spent_epsilon"] <= budget
    assert releases[-1] > 0
    status = dep.status(last=0)
    assert status["filter"]["exhausted"] and status["remaining_epsilon"] >= 0
    # realized (ledger, worst record of this transcript) <= certified in the same currency
    assert status["realized_epsilon"] <= status["certified_closed_form_epsilon"]
    if on_exhausted == "stop":
        with pytest.raises(BudgetExhausted, match="budget exhausted"):
            dep.select()
    else:
        arms = [r["arm"] for r in dep.decisions() if r["kind"] == "policy"]
        best = max(range(3), key=lambda a: (arms.count(a), -a))
        for _ in range(5):
            d = dep.select()
            assert (d.kind, d.round, d.arm) == ("exploit", None, best)
            assert dep.update(d.decision, 0.5).applied is False
    after = dep.status(last=0)
    assert sum(after["releases_per_arm"]) == releases[-1]  # no release after the filter closed
    assert after["spent_epsilon"] == status["spent_epsilon"] and after["policy_rounds"] == stop
    dep.close()


def test_anytime_horizon_is_the_longest_the_budget_affords(tmp_path):
    dep = Deployment.create(tmp_path / "a.db", "dp_ucb_int", params={"rate": 0.5}, n_arms=3, budget=5.0,
                            delta=1e-6, seed=1)
    T = dep.horizon
    policy = make_policy("dp_ucb_int", rate=0.5)
    assert dep.config["anytime"] and dep.stop_round == T
    assert Odometer(policy, T, 3, 1e-6).epsilon(T) <= 5.0 < Odometer(policy, T + 1, 3, 1e-6).epsilon(T + 1)
    dep.close()


def test_budget_affording_no_round_is_refused(tmp_path):
    with pytest.raises(ValueError, match="affords no policy round"):
        Deployment.create(tmp_path / "z.db", "dp_ts", params={"epsilon": 1.0}, n_arms=3, budget=0.01, delta=1e-6,
                          horizon=100)
    assert not (tmp_path / "z.db").exists()


def test_odometer_names_its_theorem(tmp_path):
    with Deployment.create(tmp_path / "o.db", "lazy_dp_ts", n_arms=3, budget=2.0, delta=1e-6, horizon=100,
                           seed=0) as dep:
        d = dep.select()
        dep.update(d.decision, 1.0)
        odo = dep.status()["odometer"]
    assert "data-independent privacy schedule LazyDPTSSchedule" in odo["theorem"]
    assert odo["accountant"] in odo["theorem"] and odo["policy_rounds"] == 1
