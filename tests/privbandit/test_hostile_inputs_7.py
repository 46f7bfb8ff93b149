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
  fuzz cases); it is now a StoreError naming the field and its valid range;
* **privacy**: the engine skipped clipping for any environment declaring ``rewards_in_unit_interval``,
  and a user's subclass of Bernoulli inherits the flag: Gaussian-TS, DP-SE, Anytime-Lazy-UCB and the
  private EXP3s were fed its rewards x 50, -3 or NaN unclipped (sensitivities computed for [0, 1]);
* a user environment's text, bool, scalar or complex rewards were cast or broadcast, its NaN blamed on
  the caller, its writes into the arms went unnoticed; a user policy's float arms were truncated;
* an unknown policy listed all 30 names; Decimals were cast inside arrays while refused as scalars;
  ``ts_frontier`` failed on a Fraction delta; two bench scripts ignored ``--help`` (one overwrote a
  figure of the docs).
"""

from __future__ import annotations

import json
import sqlite3
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from privbandit import budget, simulate
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


# ---------------------------------------------------------------- user environments and policies in the engine
def _loud_bernoulli(transform):
    """A user's subclass of Bernoulli (so rewards_in_unit_interval = True, inherited) whose run draws its
    own rewards: ``transform`` of Bernoulli's."""
    from privbandit.envs import Bernoulli

    class Loud(Bernoulli):
        def start(self, replicates, rng):
            run = super().start(replicates, rng)
            inner, inner_block = run.rewards, run.rewards_block
            run.__class__ = type("LoudRun", (type(run),), {
                "rewards": lambda self, t, arms: transform(inner(t, arms)),
                "rewards_block": lambda self, t, arms: transform(inner_block(t, arms))})
            return run

    return Loud([0.5, 0.4])


@pytest.mark.parametrize("policy", ["gaussian_ts", "dp_se", "anytime_lazy_ucb", "private_exp3", "dp_exp3_lap"])
def test_an_inherited_unit_interval_flag_does_not_let_a_users_rewards_past_the_clipping(policy):
    # privacy: these policies were fed rewards x 50 (and NaN) as they were -- their sensitivities, so their
    # certificates, assume [0, 1]; the engine trusted the Bernoulli flag the user's class inherited
    with pytest.raises(ValueError, match=r"reward 50.0 in round \d+ lies outside \[0, 1\] \(strict_rewards=True; "
                                         r"returned by environment 'bernoulli'\)"):
        simulate(make_policy(policy), _loud_bernoulli(lambda r: r * 50.0 + 50.0 * (r == 0)), 40, 2, seed=0,
                 progress=False, strict_rewards=True)
    with pytest.raises(ValueError, match="environment 'bernoulli' returned reward nan in round 1"):
        simulate(make_policy(policy), _loud_bernoulli(lambda r: r * np.nan), 40, 2, seed=0, progress=False)


def _user_env(rewards, n_arms=2):
    from privbandit.envs.base import Environment, EnvironmentRun

    class Run(EnvironmentRun):
        def __init__(self, replicates):
            self.replicates = replicates

        def rewards(self, t, arms):
            return rewards(t, arms, self.replicates)

    class UserEnv(Environment):
        name = "user_env"

        @property
        def n_arms(self):
            return n_arms

        def start(self, replicates, rng):
            return Run(replicates)

        def expected(self, t, arms):
            return np.where(np.asarray(arms) == 0, 0.5, 0.4)

        def best(self, t):
            return np.full(np.shape(t), 0.5)

    return UserEnv()


@pytest.mark.parametrize("policy", ["ucb1", "dp_se"])  # (dp_se plans: the default rewards_block)
@pytest.mark.parametrize("rewards,message", [
    (lambda t, a, r: np.array(["0.5"] * r), r"returned rewards that are not real numbers in round \d+: got array\(\['0.5'"),
    (lambda t, a, r: np.ones(r, dtype=bool), r"returned rewards that are not real numbers in round \d+: got array\(\[ True"),
    (lambda t, a, r: 0.5, r"returned rewards of shape \(\) in round \d+; expected \(3,\) \(one per replicate\)"),
    (lambda t, a, r: np.full(r, 0.5 + 0j), r"returned rewards that are not real numbers"),
    (lambda t, a, r: (a.__setitem__(0, 1), np.full(r, 0.5))[1], r"wrote into the arms it was given in round 1"),
])
def test_a_user_environment_that_misbehaves_is_named(policy, rewards, message):
    # before: text read as 0.5, bools as 1.0, a scalar broadcast to every replicate, complex cast with a
    # warning, and an environment that rewrote the arms silently changed what the policy's update got
    with pytest.raises(ValueError, match=r"(environment 'user_env'|environment run Run) " + message):
        simulate(make_policy(policy), _user_env(rewards), 40, 3, seed=0, progress=False)


def _user_policy(arms):
    from privbandit.policies.base import Policy, PolicyRun
    from privbandit.schedule import NonPrivateSchedule

    class Run(PolicyRun):
        def select(self, t):
            return arms

        def update(self, t, played, rewards):
            pass

    class UserPolicy(Policy):
        name, private = "user_policy", False

        def start(self, n_arms, replicates, horizon, rng, ledger=None):
            return Run()

        def privacy_schedule(self, horizon, n_arms):
            return NonPrivateSchedule()

    return UserPolicy()


def test_arms_a_user_policy_returns_are_named_whatever_the_environment():
    from privbandit.envs import Bernoulli

    ok = lambda t, a, r: np.full(r, 0.5)
    with pytest.raises(ValueError, match=r"select must return an integer array of shape \(3,\) .* got float64 \(3,\) in round 1"):
        simulate(_user_policy(np.full(3, 0.7)), _user_env(ok), 10, 3, seed=0, progress=False)  # was: arm 0, silently
    with pytest.raises(ValueError, match=r"select must return an integer array of shape \(3,\) .* got tuple in round 1"):
        simulate(_user_policy((0, 1, 0)), Bernoulli([0.5, 0.4]), 10, 3, seed=0, progress=False)  # was numpy's IndexError


def test_a_policy_run_driven_directly_refuses_text_and_bools_as_rewards():
    from privbandit.policies import UCB1

    for rewards in (np.array(["0.5"]), np.array([True]), [Decimal("0.5")]):
        run = UCB1().start(2, 1, 100, np.random.default_rng(0))
        run.select(1)
        with pytest.raises(ValueError, match="rewards must be an array of real numbers"):  # was read as 0.5 / 1.0
            run.update(1, np.array([0]), rewards)


# ---------------------------------------------------------------- bench scripts' command lines
def test_every_runnable_bench_script_parses_its_command_line_with_argparse():
    # `python bench/plot_accountants.py --help` ignored its argv and overwrote docs/figures/accountants_vs_k.png;
    # bench_accountants.py read sys.argv by hand and ran the whole benchmark for `--help` (identity_digests.py
    # took `--help` as its output path before 4a5d28b). A script run as a program must answer --help.
    import ast
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench"
    missing = []
    for script in sorted(bench.glob("*.py")):
        tree = ast.parse(script.read_text())
        runnable = any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body)
        imports = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                   for alias in node.names} | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        if runnable and "argparse" not in imports:
            missing.append(script.name)
    assert not missing, missing


def test_bench_scripts_numeric_options_use_the_cli_range_checks():
    # `bench_adversarial.py --repeats -1` failed with "max() arg is an empty sequence", `bench_deploy.py
    # --decisions -1` with an AssertionError, `bench_memory.py` with a child's CalledProcessError, and several
    # scripts started running on -1: a bare `type=int` / `type=float` accepts any sign. Numeric options take
    # privbandit.cli_checks' types (whole / real / positive), which refuse out-of-range values by name.
    import ast
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench"
    bare = []
    for script in sorted(bench.glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                for kw in node.keywords:
                    if kw.arg == "type" and isinstance(kw.value, ast.Name) and kw.value.id in ("int", "float"):
                        bare.append(f"{script.name}: {ast.unparse(node.args[0]) if node.args else '?'}")
    assert not bare, bare


def test_library_environments_changed_after_construction_lose_the_unit_interval_promise():
    # OneMemoryAdversary declared rewards_in_unit_interval = True for the class, and TruncatedExponential
    # inherited StationaryEnvironment's True, while both draw from attributes a user can change after
    # construction: `env.table[:] = 7` or `env.rates[0] = -5` then reached the policies unclipped (the engine
    # skips clipping for the library's own environments), outside the [0, 1] range every sensitivity assumes.
    # The promise is now judged from the attributes at each run's start.
    import numpy as np
    from privbandit import simulate
    from privbandit.envs import TruncatedExponential
    from privbandit.envs.adversarial import OneMemoryAdversary
    from privbandit.policies import make_policy

    adversary = OneMemoryAdversary(np.full((40, 3), 0.5))
    assert adversary.rewards_in_unit_interval
    adversary.table[:, :] = 7.0
    assert not adversary.rewards_in_unit_interval
    with pytest.raises(ValueError, match=r"outside \[0, 1\].*one_memory_adversary"):
        simulate(make_policy("dp_exp3_lap"), adversary, 40, 2, seed=0, progress=False, strict_rewards=True)
    adversary = OneMemoryAdversary(np.full((40, 3), 0.5))
    adversary.cost = 3.0  # x (1 - cost) < 0 after every switch
    assert not adversary.rewards_in_unit_interval

    exponential = TruncatedExponential([0.1, 1.0, 2.0])
    assert exponential.rewards_in_unit_interval
    exponential.rates[:] = -5.0
    assert not exponential.rewards_in_unit_interval
    with pytest.raises(ValueError, match=r"outside \[0, 1\].*truncated_exponential"):
        simulate(make_policy("gaussian_ts"), exponential, 40, 2, seed=0, progress=False, strict_rewards=True)

    # GraphFeedback draws through its arms' _transform at run time: its promise is the arms' one, judged then
    from privbandit.envs.graph import GraphFeedback
    exponential = TruncatedExponential([0.1, 1.0, 2.0])
    graph = GraphFeedback(exponential, np.ones((3, 3), dtype=bool))
    assert graph.rewards_in_unit_interval
    exponential.rates[:] = -5.0
    assert not graph.rewards_in_unit_interval
    with pytest.raises(ValueError, match=r"outside \[0, 1\].*graph_feedback"):
        simulate(make_policy("gaussian_ts_n"), graph, 40, 2, seed=0, progress=False, strict_rewards=True)


def test_noise_free_linear_contexts_and_nan_attributes_keep_rewards_in_the_unit_interval():
    # LinearContextual(noise=0) returned theta . z unclipped: (1 + w.u) / 2 rounds outside [0, 1] (a context
    # opposite to theta gave -5.6e-17), fed to the private policies under the [0, 1] promise. And the
    # library's clipping lets NaN through: ClippedGaussian / LinearContextual attributes set to NaN after
    # construction gave NaN rewards that the engine (trusting the promise) did not check.
    import numpy as np
    from privbandit import simulate
    from privbandit.contextual.envs import LinearContextual
    from privbandit.envs import ClippedGaussian
    from privbandit.policies import make_policy

    w = np.random.default_rng(0).standard_normal(4)
    w /= np.linalg.norm(w)
    theta = np.concatenate([[1.0], w]) / np.sqrt(2.0)
    env = LinearContextual(5, 2, noise=0.0, theta=np.stack([theta, theta]))
    run = env.start(1, np.random.default_rng(0))
    run.offer(1)
    run._means = env.means(np.broadcast_to(np.concatenate([[1.0], -w]) / np.sqrt(2.0), (1, 2, 5)))
    assert run._means.min() < 0.0  # the rounding this test is about
    assert run.rewards(1, np.array([0])).min() >= 0.0

    env = LinearContextual(5, 2, noise=0.1)
    assert env.rewards_in_unit_interval
    env.noise = float("nan")
    assert not env.rewards_in_unit_interval
    with pytest.raises(ValueError, match="nan"):
        simulate(make_policy("private_lin_ucb"), env, 20, 2, seed=0, progress=False)

    gauss = ClippedGaussian([0.2, 0.8])
    assert gauss.rewards_in_unit_interval
    gauss.scale = float("nan")
    assert not gauss.rewards_in_unit_interval
    with pytest.raises(ValueError, match="nan"):
        simulate(make_policy("gaussian_ts"), gauss, 20, 2, seed=0, progress=False)
