"""Budget errors print the numbers a reader compares with every digit they need (session 18).

Session 17 left: ``affordable_horizon`` printed a target one ulp below 1 as "1" (``:g``), next to a
certificate of 1 -- "target 1 is unreachable ... certifies 1" gave no reason. Each test reads a number one
ulp away from the bound it is compared with, so the ``:g`` form of the two is the same text.
"""

from __future__ import annotations

import math
import re

import pytest

from accountants._validate import exact_text
from accountants.calibrate import UnreachableTargetError
from privbandit import budget
from privbandit.deploy import Deployment
from privbandit.deploy.odometer import Odometer
from privbandit.policies import make_policy


def test_exact_text_is_short_where_exact_else_every_digit():
    assert exact_text(1e-6) == "1e-06" and exact_text(1e30) == "1e+30" and exact_text(0.5) == "0.5"
    below = math.nextafter(1.0, 0.0)
    assert exact_text(below) == repr(below) and float(exact_text(below)) == below
    assert exact_text(math.inf) == "inf" and exact_text(-math.inf) == "-inf"


def test_affordable_horizon_target_one_ulp_below_one_is_not_shown_as_one():
    target = math.nextafter(1.0, 0.0)
    with pytest.raises(UnreachableTargetError) as info:
        budget.affordable_horizon("lazy_dp_ts", target, 2, delta=1e-300)
    text = str(info.value)
    assert f"target epsilon at delta=1e-300 {target!r} is unreachable" in text
    assert text.endswith("certifies 1")


def test_affordable_horizon_shows_target_and_certificate_apart():
    cert = budget.epsilon("lazy_dp_ts", 2, 1e-6, epsilon=1.0).value
    target = math.nextafter(cert, 0.0)
    with pytest.raises(UnreachableTargetError) as info:
        budget.affordable_horizon("lazy_dp_ts", target, delta=1e-6, epsilon=1.0)
    shown = re.search(r"delta=1e-06 (\S+) is unreachable.* certifies (\S+)$", str(info.value))
    assert shown and float(shown.group(1)) == target and float(shown.group(2)) == cert


def test_invert_names_its_bounds_and_end_with_every_digit():
    lo = math.nextafter(0.5, 1.0)
    with pytest.raises(UnreachableTargetError) as info:
        budget.invert("lazy_dp_ts", 1e-3, 100, solve_for="epsilon", bounds=(lo, 10.0), delta=1e-6)
    assert f"even epsilon = {lo!r}, the most private end of bounds [{lo!r}, 10]" in str(info.value)


def test_deployment_budget_one_ulp_below_one_round_is_shown_apart(tmp_path):
    first = Odometer(make_policy("dp_ts", epsilon=1.0), 100, 3, 1e-6).epsilon(1)
    budget_eps = math.nextafter(float(first), 0.0)
    with pytest.raises(ValueError) as info:
        Deployment.create(tmp_path / "z.db", "dp_ts", params={"epsilon": 1.0}, n_arms=3, budget=budget_eps,
                          delta=1e-6, horizon=100)
    shown = re.search(r"budget (\S+) affords no policy round: one round certifies epsilon (\S+) at", str(info.value))
    assert shown and float(shown.group(1)) == budget_eps and float(shown.group(2)) == float(first)
