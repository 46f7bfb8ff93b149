"""The bad-input matrix (issue 17): every bad input a user can type or pass.

CLI: one line on stderr, ``privbandit: error: ...``, exit status 2, no traceback, and nothing
computed first (output paths, extras and numbers are checked before any run). API: a ValueError
whose message names the parameter (and its valid range where it has one).
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from privbandit import budget
from privbandit.cli import main

POLICY_ARGS = ["--param", "b=1", "--param", "c=4"]

# (argv, a fragment the one-line message must contain)
CLI_CASES = [
    # the list
    (["run", "no_such_policy", "--horizon", "100"], "unknown policy"),
    (["invert", "nope", "--epsilon", "1", "--horizon", "1000", "--solve-for", "v", "--bounds", "1.01", "1.99"], "unknown policy"),
    (["invert", "dp_ucb_int", "--epsilon", "1", "--horizon", "1000", "--solve-for", "nope", "--bounds", "1.01", "1.99"], "solve_for"),
    (["invert", "dp_ucb_int", "--epsilon", "1", "--horizon", "1000", "--solve-for", "v", "--bounds", "1.01", "1.99",
      "--param", "nope=1"], "nope"),
    (["invert", "private_ucb", "--epsilon", "1", "--horizon", "1000", "--solve-for", "epsilon", "--bounds", "-1", "1"], "bounds"),
    (["invert", "private_ucb", "--epsilon", "1", "--horizon", "1000", "--solve-for", "epsilon", "--bounds", "0", "10"], "bounds"),
    (["run", "ucb1", "--horizon", "100", "--replicates", "2", "--quiet", "--save", ""], "--save"),
    (["run", "ucb1", "--arms", "nan", "0.5", "--horizon", "100", "--quiet"], "--arms"),
    (["run", "ucb1", "--horizon", "1000000000000", "--quiet"], "horizon"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--alpha", "1.5", "--tier", "smoke"], "--alpha"),
    (["experiment", "mishra2015", "--horizon", "100", "--replicates", "2", "--out", "/proc/nope"], "--out"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--tier", "smoke", "--out", "/proc/nope"], "--out"),
    (["certify", "--epsilon", "0"], "--epsilon"),
    (["run", "private_ucb", "--param", "epsilon=0.5", "--epsilon", "2", "--horizon", "100", "--quiet"], "epsilon given twice"),
    (["budget", "private_ucb", "--param", "epsilon=0.5", "--epsilon", "2", "--horizon", "100"], "epsilon given twice"),
    # their kin: numbers out of range, on every subcommand
    (["run", "ucb1", "--horizon", "0"], "--horizon"),
    (["run", "ucb1", "--horizon", "1.5"], "--horizon"),
    (["run", "ucb1", "--horizon", "abc"], "--horizon"),
    (["run", "ucb1", "--horizon", "3", "--arms", "0.1", "0.2", "0.3", "0.4", "--quiet"], "horizon"),
    (["run", "ucb1", "--replicates", "0"], "--replicates"),
    (["run", "ucb1", "--seed", "-1"], "--seed"),
    (["run", "ucb1", "--delta", "0"], "--delta"),
    (["run", "ucb1", "--delta", "1"], "--delta"),
    (["run", "private_ucb", "--epsilon", "-1"], "--epsilon"),
    (["run", "private_ucb", "--epsilon", "nan"], "--epsilon"),
    (["run", "private_ucb", "--epsilon", "inf"], "--epsilon"),
    (["run", "ucb1", "--arms", "1.5", "0.5", "--quiet"], "means"),
    (["run", "ucb1", "--arms", "0.5", "--quiet"], "means"),
    (["run", "ucb1", "--env", "truncated-exponential", "--arms", "-1", "2", "--quiet"], "rates"),
    (["run", "ucb1", "--env", "nope"], "--env"),
    (["run", "private_ucb", "--param", "epsilon", "--quiet"], "NAME=VALUE"),
    (["run", "private_ucb", "--param", "=1", "--quiet"], "NAME=VALUE"),
    (["run", "private_ucb", "--param", "nope=1", "--quiet"], "nope"),
    (["run", "private_ucb", "--param", "epsilon=nan", "--quiet"], "epsilon"),
    (["run", "private_ucb", "--param", "epsilon=abc", "--quiet"], "epsilon"),
    (["run", "private_ucb", "--param", "exact=maybe", "--quiet"], "exact"),
    (["run", "private_ucb", "--param", "epsilon=1", "--param", "epsilon=2", "--quiet"], "twice"),
    (["run", "dp_ucb_int", "--epsilon", "1", "--param", "rate=1", "--quiet"], "one of epsilon"),
    # output paths and extras: checked before computing
    (["run", "ucb1", "--horizon", "100", "--quiet", "--save", "r.txt"], ".parquet or .csv"),
    (["run", "ucb1", "--horizon", "100", "--quiet", "--save", "/proc/nope/r.csv"], "--save"),
    (["run", "ucb1", "--horizon", "100", "--quiet", "--save", "/"], "--save"),
    (["run", "ucb1", "--horizon", "100", "--quiet", "--plot", "/proc/nope/r.png"], "--plot"),
    (["run", "ucb1", "--horizon", "100", "--quiet", "--plot", "r.gif"], "--plot"),
    (["run", "ucb1", "--horizon", "100", "--quiet", "--plot", ""], "--plot"),
    (["experiment", "nope"], "unknown experiment"),
    (["experiment", "mishra2015", "--horizon", "0"], "--horizon"),
    (["experiment", "mishra2015", "--replicates", "0"], "--replicates"),
    (["experiment", "mishra2015", "--out", ""], "--out"),
    (["experiment", "mishra2015", "--horizon", "1000000000000"], "horizon"),
    (["run", "ucb1", "--replicates", "1000000000", "--quiet"], "replicates"),
    # budget / invert / certify
    (["budget", "nope", "--horizon", "100"], "unknown policy"),
    (["budget", "private_ucb", "--horizon", "100", "--n-arms", "1"], "--n-arms"),
    (["budget", "private_ucb", "--horizon", "1"], "--horizon"),
    (["budget", "private_ucb", "--horizon", "inf"], "--horizon"),
    (["budget", "private_ucb", "--horizon", "100", "--delta", "2"], "--delta"),
    (["budget", "gaussian_ts", "--horizon", "100", "--param", "b=1.5", "--param", "c=1"], "b"),
    (["budget", "gaussian_ts", "--horizon", "100", "--param", "c=0"], "c"),
    (["budget", "private_ucb"], "--horizon"),
    (["invert", "private_ucb", "--horizon", "1000", "--solve-for", "epsilon", "--bounds", "0.1", "1"], "exactly one target"),
    (["invert", "private_ucb", "--horizon", "1000", "--epsilon", "1", "--mu", "1"], "exactly one target"),
    (["invert", "private_ucb", "--horizon", "1000", "--epsilon", "1"], "--solve-for"),
    (["invert", "private_ucb", "--horizon", "1000", "--epsilon", "1", "--solve-for", "epsilon", "--bounds", "1", "0.1"], "bounds"),
    (["invert", "private_ucb", "--horizon", "1000", "--epsilon", "1", "--solve-for", "epsilon", "--bounds", "nan", "1"], "--bounds"),
    (["invert", "private_ucb", "--horizon", "1000", "--epsilon", "0", "--solve-for", "epsilon", "--bounds", "0.1", "1"], "--epsilon"),
    (["invert", "private_ucb", "--horizon", "1000", "--epsilon", "1", "--solve-for", "epsilon", "--bounds", "0.1", "1",
      "--param", "epsilon=1"], "epsilon"),
    (["invert", "gaussian_ts", "--horizon", "1000", "--mu", "1", "--frontier", "2.7"], "--frontier"),
    (["invert", "gaussian_ts", "--horizon", "1000", "--mu", "1", "--frontier", "a,b"], "--frontier"),
    (["invert", "gaussian_ts", "--horizon", "1000", "--mu", "1", "--frontier", "600"], "b"),
    (["invert", "private_ucb", "--horizon", "1000", "--mu", "1", "--frontier", "0,1"], "--frontier"),
    (["certify", "--epsilon", "-1"], "--epsilon"),
    (["certify", "--releases", "0"], "--releases"),
    (["certify", "--delta", "1.5"], "--delta"),
    # audit (bad numbers fail at parse time, before any run)
    (["audit", "nope"], "unknown policy"),
    (["audit", "ucb1"], "not private"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--arms", "1"], "--arms"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--seconds", "0"], "--seconds"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--delta", "0"], "--delta"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--alpha", "0"], "--alpha"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--one-run", "-1"], "--one-run"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--one-run-runs", "0"], "--one-run-runs"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--tier", "nope"], "--tier"),
    (["audit", "gaussian_ts", "--param", "b=-1", "--param", "c=4"], "b"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--horizon", "1000000000000"], "horizon"),
    (["audit", "gaussian_ts", *POLICY_ARGS, "--horizon", "0"], "--horizon"),
    # the command itself
    ([], "required"),
    (["nope"], "invalid choice"),
    (["run"], "policy"),
]


def _one_line_error(capsys, fragment: str) -> None:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("privbandit: error: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    assert fragment.lower() in lines[0].lower(), (fragment, err)


@pytest.mark.parametrize("argv, fragment", CLI_CASES, ids=[" ".join(a)[:60] or "<none>" for a, _ in CLI_CASES])
def test_cli_bad_input_is_one_line_and_exit_2(argv, fragment, capsys, tmp_path, monkeypatch):
    import privbandit.audit
    import privbandit.engine
    import privbandit.experiments

    # checked before computing: none of these may start a simulation, an experiment or an audit
    def computing(*args, **kwargs):
        pytest.fail(f"computed before rejecting {argv}")

    monkeypatch.setattr(privbandit.engine, "simulate", computing)
    monkeypatch.setattr(privbandit.experiments, "run_experiment", computing)
    monkeypatch.setattr(privbandit.audit, "ledger_audit", computing)
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    _one_line_error(capsys, fragment)
    assert not any(tmp_path.iterdir())  # and nothing was written


def test_unreachable_dask_scheduler_fails_before_computing(capsys):
    pytest.importorskip("distributed")  # the dask extra is in the test extra; skip only if absent
    assert main(["experiment", "mishra2015", "--horizon", "100000", "--dask", "127.0.0.1:1"]) == 2
    _one_line_error(capsys, "--dask")


def test_missing_extra_is_reported_before_computing(monkeypatch, capsys, tmp_path):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError(f"No module named '{name}'", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    import privbandit.engine as engine

    monkeypatch.setattr(engine, "simulate", lambda *a, **k: pytest.fail("simulated before checking the extra"))
    assert main(["run", "ucb1", "--horizon", "100", "--quiet", "--save", str(tmp_path / "r.parquet")]) == 2
    _one_line_error(capsys, "privbandit[frames]")


def test_no_traceback_in_a_real_process():
    """The installed entry point's behaviour: argparse errors and ValueErrors alike are one line."""
    for argv in (["run", "ucb1", "--horizon", "x"], ["certify", "--epsilon", "0"], ["invert", "nope", "--horizon", "9",
                                                                                      "--epsilon", "1"]):
        proc = subprocess.run([sys.executable, "-m", "privbandit", *argv], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("privbandit: error: "), proc.stderr
        assert proc.stdout == ""


def test_huge_but_valid_requests_are_answered_not_a_memory_error_or_a_hang(capsys):
    # 10^12 rounds of DP-UCB-Int at f = 1: the grouped (dominating) event, not 10^12 Laplace objects
    assert main(["budget", "dp_ucb_int", "--param", "rate=1", "--horizon", "1000000000000"]) == 0
    assert "GDP mu" in capsys.readouterr().out
    # 10^12 Laplace releases: the accountants whose cost grows with N are skipped, and said to be
    assert main(["certify", "--releases", "1000000000000"]) == 0
    out = capsys.readouterr().out
    assert "pld, optimal skipped" in out and "best:" in out


# ---------------------------------------------------------------- API
def _raises(match: str, fn, *args, **kwargs) -> None:
    with pytest.raises(ValueError, match=match):
        fn(*args, **kwargs)


@pytest.mark.parametrize("horizon", [math.inf, math.nan, None, 1.5, -1, 1, "100", True])
def test_budget_horizon_is_named(horizon):
    _raises(r"horizon must be a whole number in \[n_arms = 2, 1e\+30\]", budget.epsilon, "private_ucb", horizon, 1e-6)
    _raises("horizon", budget.mu, "private_ucb", horizon)
    _raises("horizon", budget.delta, "private_ucb", horizon, 1.0)


def test_budget_api_bad_inputs():
    _raises(r"n_arms must be a whole number in \[2, inf\)", budget.epsilon, "private_ucb", 100, 1e-6, 1)
    # (session 15: delta = 0 is pure DP, answered exactly; a subnormal or negative delta names the range)
    _raises(r"delta must be 0 \(pure DP\) or lie in \[2.2250738585072014e-308, 1\)", budget.epsilon, "private_ucb", 100, -1e-3)
    assert 0.5 <= budget.epsilon("private_ucb", 100, 0.0).value <= 0.5 * (1 + 1e-12)
    _raises("delta", budget.epsilon, "private_ucb", 100, math.nan)
    _raises("unknown policy", budget.epsilon, "nope", 100, 1e-6)
    _raises(r"horizons must be whole numbers in \[0, inf\)", budget.curve, "private_ucb", [1.5, 100], 1e-6)
    _raises("horizons", budget.curve, "private_ucb", [math.nan, 100], 1e-6)
    _raises("horizons", budget.curve, "private_ucb", [-1, 100], 1e-6)
    _raises("horizons", budget.curve, "private_ucb", ["a"], 1e-6)
    _raises(r"bs must hold whole numbers in \[0", budget.ts_frontier, 5.0, 1000, 2, [2.7])
    _raises("b", budget.ts_frontier, 5.0, 1000, 2, [-1])
    _raises("b", budget.ts_frontier, 5.0, 1000, 2, [600])
    _raises("bs", budget.ts_frontier, 5.0, 1000, 2, [])
    _raises(r"target must lie in \(0, inf\)", budget.ts_frontier, 0.0, 1000, 2, [1])
    _raises("target", budget.affordable_horizon, "private_ucb", -1.0, delta=1e-6)
    _raises("max_horizon", budget.affordable_horizon, "private_ucb", 1.0, delta=1e-6, max_horizon=math.inf)


def test_invert_api_bad_inputs():
    inv = dict(solve_for="epsilon", bounds=(0.1, 1.0), delta=1e-6)
    _raises("unknown policy", budget.invert, "nope", 1.0, 1000, **inv)
    _raises("solve_for must name a parameter of PrivateUCB", budget.invert, "private_ucb", 1.0, 1000,
            **(inv | {"solve_for": "nope"}))
    _raises("unknown parameter", budget.invert, "private_ucb", 1.0, 1000, **inv, nope=1)
    _raises("both solved for and fixed", budget.invert, "private_ucb", 1.0, 1000, **inv, epsilon=1.0)
    _raises(r"bounds: epsilon=-1 is outside the parameter's valid range \(epsilon must lie in \(0, inf\)",
            budget.invert, "private_ucb", 1.0, 1000, **(inv | {"bounds": (-1, 1)}))
    _raises("bounds: epsilon=0", budget.invert, "private_ucb", 1.0, 1000, **(inv | {"bounds": (0, 10)}))
    _raises("lower < upper", budget.invert, "private_ucb", 1.0, 1000, **(inv | {"bounds": (1, 0.1)}))
    _raises("bounds", budget.invert, "private_ucb", 1.0, 1000, **(inv | {"bounds": (math.nan, 1)}))
    _raises("target", budget.invert, "private_ucb", 0.0, 1000, **inv)
    _raises("delta", budget.invert, "private_ucb", 1.0, 1000, **(inv | {"delta": 2.0}))
    _raises("delta is required", budget.invert, "private_ucb", 1.0, 1000, **(inv | {"delta": None}))
    _raises("mu target", budget.invert, "private_ucb", 1.0, 1000, **inv, target_mu=True)


def test_invert_with_valid_bounds_finds_the_right_direction():
    # the issue's --bounds 0 10 used to flip the direction; valid bounds of both kinds now agree
    a = budget.invert("private_ucb", 1.0, 1000, solve_for="epsilon", bounds=(0.01, 10), delta=1e-6)
    assert a.certificate <= 1.0 and a.value > 1.0  # eps/k per record: more than 1 is affordable


def test_simulate_api_bad_inputs():
    from privbandit import simulate
    from privbandit.envs import Bernoulli
    from privbandit.policies import UCB1

    env = Bernoulli([0.5, 0.4])
    for horizon in (math.inf, math.nan, None, 1.5, 1):
        _raises("horizon", simulate, UCB1(), env, horizon, 2)
    _raises(r"horizon x replicates .* the horizon must lie in \[n_arms", simulate, UCB1(), env, 10**12, 100)
    _raises("replicates", simulate, UCB1(), env, 10, 0)
    _raises(r"delta must lie in \(0, 1\)", simulate, UCB1(), env, 10, 2, delta=1.0)
    _raises(r"Bernoulli means must lie in \[0, 1\]", Bernoulli, [math.nan, 0.5])
    _raises("means", Bernoulli, [1.5, 0.5])


def test_make_policy_and_dp_ucb_int_bad_inputs():
    from privbandit.policies import DPUCBInt, make_policy

    _raises("unknown policy", make_policy, "nope")
    _raises("unknown private_ucb parameter .nope.; known: epsilon, exact, gamma", make_policy, "private_ucb", nope=1)
    _raises("give one of epsilon", DPUCBInt, epsilon=1.0, rate=1.0)
    _raises("give one of epsilon", DPUCBInt, epsilon=1.0, interval=3)
    _raises(r"rate must lie in \[1e-18, 1\]", DPUCBInt, rate=-1.0)
    _raises(r"delta must lie in \(0, 1\)", DPUCBInt, delta=0.0)


def _every_policy():
    from privbandit.policies import REGISTRY

    return [(name, (cls(b=1, c=4.0) if name == "gaussian_ts" else cls())) for name, cls in sorted(REGISTRY.items())]


@pytest.mark.parametrize("bad", [5.0, -0.5, math.nan, math.inf])
@pytest.mark.parametrize("name, policy", _every_policy(), ids=[n for n, _ in _every_policy()])
def test_policy_driven_directly_refuses_rewards_outside_the_unit_interval(name, policy, bad):
    """Every policy validates its rewards itself (policies.base.check_rewards), not only through the
    engine: PrivateTS (gap phase) and GaussianTS used to publish noisy means near 5."""
    run = policy.start(2, 3, 200, np.random.default_rng(0))
    if "contexts" in policy.requires:  # contextual policies choose from the round's contexts
        from privbandit.feedback import Offer

        arms = run.select(1, Offer(contexts=np.full((3, 2, getattr(policy, "dim", None) or 5), 0.1)))
    else:
        arms = run.select(1)
    with pytest.raises(ValueError, match=r"rewards must lie in \[0, 1\]"):
        run.update(1, arms, np.array([0.5, bad, 0.5]))
    run.update(1, arms, np.array([0.0, 1.0, 0.5]))  # in range: accepted


def test_engine_skips_the_runs_check_only_when_it_guarantees_the_range():
    from privbandit import simulate
    from privbandit.envs import Bernoulli, RewardTable
    from privbandit.policies import UCB1

    seen = []
    real_start = UCB1.start

    def spy(self, *args, **kwargs):
        run = real_start(self, *args, **kwargs)
        seen.append(run)
        return run

    UCB1.start = spy
    try:
        simulate(UCB1(), Bernoulli([0.5, 0.4]), 20, 2, seed=0, ledger=False)
        simulate(UCB1(), RewardTable(np.full((20, 2), 3.0)), 20, 2, seed=0, ledger=False)  # clipped
    finally:
        UCB1.start = real_start
    # both guaranteed by the engine: in range by construction, or clipped -- and since session 10 the
    # clipping path refuses NaN itself, naming the environment (np.clip lets NaN through, so the run's
    # own check used to stay on there)
    assert seen[0].rewards_checked is True and seen[1].rewards_checked is True
