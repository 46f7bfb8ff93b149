"""Hostile inputs, second round (session 4): each test pins a defect found by fuzzing the API and the
command line. Before its fix the call ran into a mechanism's or the ledger's error mid-run, raised an
OverflowError / ZeroDivisionError / AttributeError / LinAlgError, printed a traceback, or silently
coerced its input (a bool read as a round count, a truthy 1 read as True, an empty list as "all")."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from accountants import Laplace, best_delta, best_epsilon
from accountants.pure import PureAccountant
from privbandit import budget
from privbandit.contextual import LinearContextual
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import JointDPLinUCB, PrivateEXP3, PrivateLinUCB, PrivateUCB, make_policy


def _raises(match: str, fn, *args, **kwargs) -> None:
    with pytest.raises(ValueError, match=match):
        fn(*args, **kwargs)


# ---------------------------------------------------------------- epsilon at the floats' edge
@pytest.mark.parametrize("name", ["dp_ts", "dp_ucb", "private_ucb", "dp_ucb_bound", "anytime_lazy_ucb", "lazy_dp_ts",
                                  "dp_se", "dp_exp3_lap", "batched_private_exp3", "private_exp3", "private_ts",
                                  "private_lin_ucb", "private_lin_ts", "joint_dp_lin_ucb", "dp_ucb_n", "lazy_dp_ts_n"])
@pytest.mark.parametrize("epsilon", [1e-308, 5e-324])
def test_an_epsilon_below_the_floor_is_named_at_construction(name, epsilon):
    # was: the run started, then a mechanism's "scale must lie in (0, inf)" or the ledger's
    # "epsilon must lie in (0, inf]" (of 1/scale), or an OverflowError in the PLD, mid-run
    _raises(r"epsilon must lie in \[1e-300, 1e\+100\]", make_policy, name, epsilon=epsilon)


@pytest.mark.parametrize("name", ["dp_ts", "private_ucb", "private_exp3", "private_ts"])
def test_the_floor_itself_runs_and_certifies(name):
    result = simulate(make_policy(name, epsilon=1e-300), Bernoulli([0.7, 0.3]), 40, 1, seed=0, progress=False)
    assert 0 <= result.summary()["certified_epsilon"] <= 1e-290  # 1e-300 per release, a few releases


@pytest.mark.parametrize("epsilon", [1e-300, 1e-200, 1e50, 1e100])  # 1e100: the ceiling (session 7)
def test_private_exp3_rates_at_extreme_epsilon(epsilon):
    # was ZeroDivisionError (eps ** 2 underflowed to 0) and OverflowError (eps ** 2 > the floats)
    gamma, eta = PrivateEXP3(epsilon=epsilon).rates(3, 1000)
    assert 0 < gamma <= 1 and 0 < eta < math.inf


def test_private_exp3_rates_unchanged_in_the_ordinary_range():
    gamma, eta = PrivateEXP3(epsilon=0.5).rates(3, 1000)
    noise = 1.0 + 2.0 * math.log2(3000) / 0.25
    assert eta == math.sqrt(math.log2(3) / (2.0 * 3 * 1000 * noise))
    assert gamma == min(1.0, eta * 3 * math.sqrt(noise))


def test_private_linear_epsilon_too_small_for_the_ridge_is_named_at_start():
    # was numpy's "Singular matrix" mid-run: noise ~1e15 x lambda swallows the eigenvalue shift
    with pytest.raises(ValueError, match=r"epsilon must be at least .* regularization=1 and horizon 40"):
        simulate(PrivateLinUCB(epsilon=1e-16, dim=3), LinearContextual(3, 3, noise=0.1), 40, 1, seed=0, progress=False)


def test_joint_dp_noise_outside_the_floats_and_gdp_calibration_past_its_bracket_are_named():
    with pytest.raises(ValueError, match=r"epsilon=1e-300 with bound=1e\+50.*sigma=inf"):
        simulate(JointDPLinUCB(epsilon=1e-300, bound=1e50, dim=3), LinearContextual(3, 3, model="shared"), 40, 1,
                 seed=0, progress=False)
    # the GDP calibration's bracket once ended at mu = 1e8 (epsilon ~ 5e15); it now reaches mu = 1e300, so
    # epsilon = 1e16 (and 1e100, the ceiling of session 7) calibrate, run and certify within the target
    for epsilon in (1e16, 1e100):
        policy = JointDPLinUCB(epsilon=epsilon, calibration="gdp", dim=3)
        res = simulate(policy, LinearContextual(3, 3, model="shared"), 40, 1, seed=0, progress=False)
        assert res.certified_epsilon[-1] <= epsilon


# ---------------------------------------------------------------- Certificate kinds
def test_a_delta_certificate_is_not_read_as_an_epsilon():
    events = Laplace(scale=1.0) * 10
    d = best_delta(events, 1.0)
    assert d.kind == "delta" and d.delta == d.value
    _raises("value is a delta .* not an epsilon", getattr, d, "epsilon")  # was: the delta, silently
    e = best_epsilon(events, 1e-6)
    assert e.kind == "epsilon" and e.epsilon == e.value
    _raises("value is a epsilon .* not a delta", getattr, e, "delta")
    assert budget.delta("private_ucb", 100, 1.0).kind == "delta"
    assert budget.delta("ucb1", 100, 1.0).delta == 1.0  # the non-private schedule's delta certificate


# ---------------------------------------------------------------- budget
@pytest.mark.parametrize("horizons", [[True, 5], [np.True_, 5], (5, False)])
def test_budget_curve_refuses_bools_as_round_counts(horizons):
    _raises("not bools", budget.curve, "private_ucb", horizons, 1e-6)  # True was read as 1 round


def test_budget_curve_refuses_a_bare_number():
    _raises("1-D sequence", budget.curve, "private_ucb", 100, 1e-6)  # returned a 0-d result


@pytest.mark.parametrize("accountants, match", [([], "at least one"), ("pure", "accountant classes"),
                                                ([1], "accountant classes"), (PureAccountant, "sequence")])
def test_accountants_are_named(accountants, match):
    # [] silently meant "all of them"; "pure" / [1] failed with "'str' object is not callable"
    _raises(match, budget.epsilon, "private_ucb", 100, 1e-6, accountants=accountants)
    _raises(match, best_epsilon, Laplace(scale=1.0), 1e-6, accountants)


def test_budget_flags_are_not_read_by_truthiness():
    _raises("target_mu must be True or False, got 1", budget.affordable_horizon, "private_ucb", 5.0, delta=1e-6,
            target_mu=1)
    _raises("integer must be True or False, got 1", budget.invert, "private_ucb", 1.0, 100, solve_for="epsilon",
            bounds=(0.1, 2.0), delta=1e-6, integer=1)
    _raises("target_mu must be True or False", budget.tune, [PrivateUCB()], Bernoulli([0.5, 0.4]), 100,
            target=1e9, delta=1e-6, replicates=2, target_mu=1)


def test_budget_tune_names_candidates_and_env():
    # were AttributeErrors: 'str' object has no attribute 'privacy_schedule' / 'n_arms'
    _raises("candidates must be configured policies", budget.tune, ["private_ucb"], Bernoulli([0.5, 0.4]), 100,
            target=1.0, delta=1e-6)
    _raises("env must be a simulated environment", budget.tune, [PrivateUCB()], "bernoulli", 100, target=1.0,
            delta=1e-6)


# ---------------------------------------------------------------- sweep and experiments
@pytest.mark.parametrize("policies", [None, PrivateUCB(), "private_ucb"])
def test_sweep_names_a_grid_that_is_not_one(policies):
    from privbandit import sweep

    # None / a lone policy: "'NoneType' object is not iterable"; a name: iterated letter by letter
    _raises("policies must be a sequence of Policy objects", sweep, policies, [Bernoulli([0.6, 0.4])], 20, 2)
    _raises("envs must be a sequence of Environment objects", sweep, [PrivateUCB()], Bernoulli([0.6, 0.4]), 20, 2)


@pytest.mark.parametrize("seed", [-1, math.nan, "a", True, 1.5])
def test_sweep_and_experiment_seeds_are_named(seed):
    from privbandit import sweep
    from privbandit.experiments import run_experiment

    # numpy's "expected non-negative integer" / "SeedSequence expects int ..." / True read as 1
    _raises("seed must be None, a whole number", sweep, [PrivateUCB()], [Bernoulli([0.6, 0.4])], 20, 2, seed=seed)
    _raises("seed must be None, a whole number", run_experiment, "tossou2016-2arm", 20, 2, seed=seed)


# ---------------------------------------------------------------- accountants reached through the CLI
def test_a_subnormal_delta_is_named_not_an_endless_walk():
    # 5e-324: exp(log delta) is too coarse there; the GDP conversion's lattice walk never ended
    # (session 15: 0 is pure DP, answered exactly; the message names it)
    _raises(r"delta must be 0 \(pure DP\) or lie in \[2.2250738585072014e-308, 1\)", best_epsilon,
            Laplace(scale=10.0) * 10, 5e-324)
    assert best_epsilon(Laplace(scale=10.0) * 10, 2.2250738585072014e-308).value <= 1.0 + 1e-9


def test_calibrate_over_six_hundred_decades():
    from accountants.calibrate import calibrate

    # brentq gave up after 200 iterations (an internal RuntimeError); plain bisection then stopped at
    # ~1e240. The boundary is c = 49.5 (mu^2 = 49.5 / c for Gaussian TS b=0 over 100 rounds, 2 arms)
    result = calibrate(lambda c: math.sqrt(49.5 / c), 1.0, 1e-300, 1e300, increasing=False)
    assert result.certificate <= 1.0 and result.parameter == pytest.approx(49.5, rel=1e-9)


# ---------------------------------------------------------------- the command line
def _cli(argv, capsys) -> str:
    from privbandit.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("privbandit: error: ") and "internal error" not in err, err
    return err


@pytest.mark.parametrize("argv, match", [
    (["run", "private_ucb", "--horizon", "30", "--horizon=40"], "argument --horizon: given 2 times"),
    (["deploy", "status", "store.db", "--last", "1", "--last", "2"], "argument --last: given 2 times"),
    # abbreviations argparse accepts count as the option they abbreviate
    (["run", "private_ucb", "--hor", "30", "--horizon", "40"], r"argument --horizon: given 2 times \(--hor and --horizon\)"),
    (["run", "private_ucb", "--horizon=30", "--horiz=40"], "argument --horizon: given 2 times"),
    (["budget", "gaussian_ts_n", "--horizon", "100", "--max-degree", "-1"], r"--max-degree: must be a whole number in \[0"),
    (["certify", "--releases", "10", "--delta", "5e-324"], "delta: must lie in"),
    (["run", "private_ucb", "--epsilon", "1e-308", "--horizon", "20", "--quiet"], r"epsilon must lie in \[1e-300, 1e\+100\]"),
    (["experiment", "tossou2016-2arm", "--dask", ""], "--dask needs a scheduler address"),
])
def test_cli_hostile_values_are_one_line(argv, match, capsys):
    assert re.search(match, _cli(argv, capsys))


def test_cli_out_naming_a_file_is_one_line(tmp_path, capsys):
    existing = tmp_path / "summary"
    existing.write_text("")
    err = _cli(["experiment", "tossou2016-2arm", "--horizon", "10", "--replicates", "1", "--out", str(existing)], capsys)
    assert "is a file, not a directory" in err


def test_cli_invert_over_a_huge_bracket_finds_the_boundary(capsys):
    from privbandit.cli import main

    # was: "internal error RuntimeError: Failed to converge after 200 iterations" (at 1e-300..1e300; c
    # is now bounded to [1e-100, 1e100], where the certificate's mu stays a float, and an end outside
    # that range is named)
    assert main(["invert", "gaussian_ts", "--horizon", "100", "--mu", "1", "--solve-for", "c", "--bounds", "1e-100",
                 "1e100"]) == 0
    assert capsys.readouterr().out.startswith("c = 49.5")
    assert main(["invert", "gaussian_ts", "--horizon", "100", "--mu", "1", "--solve-for", "c", "--bounds", "1e-300",
                 "1e300"]) == 2
    assert "c must lie in [1e-100, 1e+100]" in capsys.readouterr().err


@pytest.mark.parametrize("delta", ["1e-6", True, None, float("nan")], ids=repr)
def test_schedule_epsilon_refuses_a_delta_that_is_not_a_float(delta):
    """The certificate memo keys on delta as given: a string or a bool is refused by the accountants'
    validation, never converted (a float() on the key once made "1e-6" certify silently)."""
    from privbandit.policies import PrivateUCB
    from privbandit.policies.base import schedule_for

    with pytest.raises((ValueError, TypeError), match="delta"):
        schedule_for(PrivateUCB(), 1000, 3).epsilon(500, delta)


def test_one_abbreviated_option_is_still_accepted(capsys):
    """The repeat check resolves abbreviations only to count them: a single ``--hor`` still runs."""
    from privbandit.cli import main

    assert main(["run", "private_ucb", "--hor", "30", "--rep", "2", "--quiet"]) == 0
