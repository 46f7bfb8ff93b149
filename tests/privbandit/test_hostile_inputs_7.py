"""Hostile inputs, seventh round (session 10): the deployment store's configuration, the leftovers of
round 6 (``status(last=10**400)``, Decimals, the unknown-policy message), the budget helpers with
numpy scalars and 0-d arrays, user policies and environments that misbehave inside the engine, and
the bench scripts' command lines.

Before the fixes of this round:

* **privacy**: the deployment's configuration (policy parameters, horizon, filter stop round) sits in
  the store's meta table, outside the snapshot's digest. One flipped bit in it (``"epsilon": 3.0`` ->
  ``2.0``: the byte 0x33 -> 0x32) was read as it was: the odometer certified a run of the 3.0 policy
  with the 2.0 policy's schedule, below the run's own realized spend. The snapshot now carries the
  configuration's digest and a mismatch is a StoreError;
* a configuration missing a key, holding a list, or a field of the wrong type was a KeyError /
  AttributeError / TypeError / OverflowError traceback from ``Deployment.open`` (41 of 747 store
  fuzz cases); it is now a StoreError naming the field and its valid range.
"""

from __future__ import annotations

import json
import sqlite3
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from privbandit import budget
from privbandit.deploy import Deployment, StoreError
from privbandit.experiments import run_experiment
from privbandit.policies import make_policy
from tests.privbandit.test_hostile_inputs_5 import _one_line_error  # one line, exit 2, no traceback


# ---------------------------------------------------------------- deployment store configuration
def _store(tmp_path, **kw):
    path = str(tmp_path / "d.db")
    Deployment.create(path, "dp_ucb_bound", params={"epsilon": 3.0}, n_arms=3, budget=50.0, delta=1e-6,
                      horizon=500, seed=3, **kw).close()
    return path


def _edit_config(path, edit):
    conn = sqlite3.connect(path)
    (text,) = conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (edit(text),))
    conn.commit()
    conn.close()


def test_one_flipped_bit_in_the_stored_configuration_is_not_a_lower_certificate(tmp_path):
    path = _store(tmp_path)
    with Deployment.open(path) as dep:
        for _ in range(5):
            dep.update(dep.select().decision, 0.5)
        honest = dep.status()["spent_epsilon"]
    flipped = lambda text: text.replace('"epsilon": 3.0', '"epsilon": 2.0')  # 0x33 -> 0x32: one bit
    _edit_config(path, flipped)
    # before: opened, and status() certified the 3.0 run with the 2.0 schedule (about 2/3 of `honest`)
    with pytest.raises(StoreError, match="its configuration does not match the one its snapshot was written with"):
        Deployment.open(path)
    _edit_config(path, lambda text: text.replace('"epsilon": 2.0', '"epsilon": 3.0'))
    with Deployment.open(path) as dep:  # restored: the same store, the same certificate
        assert dep.status()["spent_epsilon"] == honest


@pytest.mark.parametrize("edit,message", [
    (lambda c: {k: v for k, v in c.items() if k != "stop_round"}, "its configuration has no 'stop_round'"),
    (lambda c: {**c, "n_arms": [3]}, "configuration n_arms must be a whole number in [2, 1048576], got [3]"),
    (lambda c: {**c, "n_arms": 2**70}, "configuration n_arms must be a whole number in [2, 1048576]"),
    (lambda c: {**c, "horizon": None}, "configuration horizon must be a whole number in [n_arms, inf), got None"),
    (lambda c: {**c, "stop_round": c["horizon"] + 1}, "configuration stop_round must be a whole number in [0, horizon]"),
    (lambda c: {**c, "delta": "1e-6"}, "configuration delta must be a real number in (0, 1), got '1e-6'"),
    (lambda c: {**c, "budget_epsilon": {}}, "configuration budget_epsilon must be a finite real number in (0, inf)"),
    (lambda c: {**c, "params": 7}, "configuration params must be a JSON object of policy parameters, got 7"),
    (lambda c: {**c, "params": {"epsilon": -1}}, "configuration policy / params: epsilon must lie in"),
    (lambda c: {**c, "policy": "no_such"}, "configuration policy / params: unknown policy"),
    (lambda c: {**c, "synchronous": "off"}, "configuration synchronous must be one of full, normal, got 'off'"),
    (lambda c: [1, 2], "its configuration is a JSON list, not an object"),
])
def test_a_damaged_configuration_is_a_named_store_error(tmp_path, edit, message):
    path = _store(tmp_path)
    _edit_config(path, lambda text: json.dumps(edit(json.loads(text))))
    with pytest.raises(StoreError) as info:  # was KeyError / TypeError / AttributeError / OverflowError
        Deployment.open(path)
    assert message in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------- names
@pytest.mark.parametrize("call,message", [
    (lambda: make_policy("dp_ucv"), "unknown policy 'dp_ucv'; did you mean dp_ucb, dp_ucb_n, dp_ucb_int? "
                                    "(30 names in privbandit.policies.REGISTRY)"),
    (lambda: budget.epsilon("Lazy", 100, 1e-6), "unknown policy 'Lazy'; did you mean anytime_lazy_ucb, lazy_dp_ts, lazy_dp_ts_n?"),
    (lambda: budget.invert("dp-ucb-bounds", 1.0, 100, solve_for="epsilon", bounds=(0.1, 1), delta=1e-6),
     "unknown policy 'dp-ucb-bounds'; did you mean dp_ucb_bound"),
    (lambda: run_experiment("tossou", 10, 1), "unknown experiment 'tossou'; did you mean tossou2016-10arm, tossou2016-2arm,"),
    (lambda: run_experiment(3, 10, 1),
     "experiment name must be a str, one of the 9 names in privbandit.experiments.EXPERIMENTS; got 3"),
])
def test_an_unknown_name_suggests_the_close_ones(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value) and len(str(info.value)) < 200  # was every name: ~400 characters for a policy


def test_a_name_near_nothing_still_lists_every_name_and_long_text_is_shortened():
    with pytest.raises(ValueError) as info:
        make_policy("zzz")
    assert "known: anytime_lazy_ucb, batched_private_exp3," in str(info.value)  # what else would help
    with pytest.raises(ValueError) as info:
        run_experiment("x" * 5000, 10, 1)
    assert "...(5002 characters)" in str(info.value) and len(str(info.value)) < 600  # was 5183 characters
    assert "did you mean tossou2016-2arm" in _one_line_error(["experiment", "tossou2016-2"])


# ---------------------------------------------------------------- budget helpers
def test_ts_frontier_takes_any_real_delta_the_other_helpers_take():
    (point,) = budget.ts_frontier(1.0, 100, 2, [1], delta=Fraction(1, 10**6))  # was a TypeError in a label's :g
    assert point.currency == "epsilon at delta=1e-06" and point.certificate <= 1.0
    assert budget.ts_frontier(1.0, 100, 2, [1], delta=1e-6)[0].parameter == point.parameter


# ---------------------------------------------------------------- Decimals: refused everywhere, saying so
def test_a_decimal_is_refused_in_arrays_as_it_is_in_scalars_and_the_message_says_what_to_pass():
    from privbandit.envs import Bernoulli

    with pytest.raises(ValueError, match=r"means must be an array of real numbers"):
        Bernoulli([Decimal("0.5"), 0.4])  # was accepted (cast to 0.5) while Bernoulli(...) scalars refused it
    with pytest.raises(ValueError, match=r"means must be an array of real numbers"):
        Bernoulli(np.array([Decimal("NaN"), 0.4], dtype=object))
    assert len(Bernoulli([Fraction(1, 2), 0.4]).means) == 2  # a Fraction is a numbers.Real: taken, as a scalar is
    for call in (lambda: make_policy("dp_ucb", epsilon=Decimal("0.5")), lambda: budget.epsilon("dp_ucb", 100, Decimal("1e-6")),
                 lambda: budget.epsilon("dp_ucb", Decimal(100), 1e-6)):
        with pytest.raises(ValueError, match=r"got Decimal\('[^']*'\) \(a Decimal is not converted: pass float\(x\) or int\(x\)\)"):
            call()


def test_status_last_is_a_count_without_upper_limit(tmp_path):
    with Deployment.open(_store(tmp_path)) as dep:
        for _ in range(3):
            dep.update(dep.select().decision, 0.5)
        assert len(dep.status(last=10**400)["last_releases"]) == 3  # "all", documented (round 6 left it open)
