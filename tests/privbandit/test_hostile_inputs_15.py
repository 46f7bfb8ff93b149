"""Hostile inputs, fifteenth round (session 15, s15/fuzz): what ``bench/fuzz_inputs.py`` found.

The fuzzer drives fixed lists of hostile values through every public entry point (the command line's
subcommands and options, policies, simulate / sweep / experiments, budget, accountants, mechanisms,
deployments, environments and graphs); docs/engine.md "Session 15 (s15/fuzz)" has the counts. Its
findings on b9f3338, each fixed at the boundary it crossed and tested here:

* tracebacks: a mechanism's ``epsilon`` / ``v`` of 10**400 (OverflowError: mechanisms kept their own copy
  of the positive-number check), ``IntervalMean(epsilon=1e-320)`` (ceil(inf)), ``Accountant.compose(event,
  10**400)`` in five accountants, ``best_epsilon(np.array(1.0))`` (TypeError), ``run_experiment`` /
  ``sweep`` with 10**400 replicates, ``Deployment.create(budget=Fraction(1, 3))`` (a format error);
* messages naming nothing: ``Deployment.create(on_exhausted=array)`` / ``synchronous=array`` (numpy's
  "truth value of an array is ambiguous");
* silent acceptance: ``budget.epsilon(..., structure={"max_degree": nan})``, ``{"max_degre": 3}`` and
  ``privbandit budget ... --max-degree 1e400`` for a K-armed policy (certified as if not given);
* RuntimeWarnings every round: ``kl_ucb`` with c = 1e308, ``lin_ucb`` / ``lin_ts`` with a ridge of 1e-320;
* ``privbandit audit --out DIR`` wrote its tables and summary through symlinks planted in DIR;
* both PRIVBANDIT_DEPLOY_KEY and PRIVBANDIT_DEPLOY_KEY_FILE set: the first silently won.
"""

from __future__ import annotations

import fractions
import math
import warnings

import numpy as np
import pytest

import accountants as A
from accountants.best import default_accountants
from privbandit.policies import make_policy


# ---------------------------------------------------------------- mechanisms: one shared number check
@pytest.mark.parametrize("cls, params", [
    ("TreeMechanism", dict(epsilon=1.0, horizon=16)), ("HybridMechanism", dict(epsilon=1.0)),
    ("LogarithmicMechanism", dict(epsilon=1.0)), ("SplitMechanism", dict(epsilon=1.0)),
    ("FreshBatchMean", dict(epsilon=1.0)), ("IntervalMean", dict(v=1.5)),
])
@pytest.mark.parametrize("huge", [10**400, -(10**400)], ids=["1e400", "-1e400"])
def test_a_mechanism_parameter_beyond_the_floats_is_named(cls, params, huge):
    from privbandit import mechanisms

    name = "v" if cls == "IntervalMean" else "epsilon"
    with pytest.raises(ValueError, match=rf"^{name} must be a real number .*in \(0, inf\)"):
        getattr(mechanisms, cls)(2, 2, **(params | {name: huge}), rng=np.random.default_rng(0), ledger=None)


def test_an_interval_mean_epsilon_whose_interval_is_not_finite_is_named():
    from privbandit.mechanisms import IntervalMean

    with pytest.raises(ValueError, match=r"epsilon must lie in \[5\.56.*e-309, inf\) \(interval = ceil\(1/epsilon\)"):
        IntervalMean(2, 2, v=1.5, epsilon=1e-320, rng=np.random.default_rng(0), ledger=None)
    assert IntervalMean(2, 2, v=1.5, epsilon=1e-300, rng=np.random.default_rng(0), ledger=None).interval == math.ceil(1 / 1e-300)


# ---------------------------------------------------------------- accountants
@pytest.mark.parametrize("factory", default_accountants(), ids=lambda f: getattr(f, "name", str(f)))
def test_an_accountant_composes_only_counts_it_can_multiply(factory):
    with pytest.raises(ValueError, match=r"count must keep every release's multiplicity below 2\^1000"):
        factory().compose(A.Laplace(scale=1.0), 10**400)


def test_best_epsilon_names_a_zero_dimensional_array():
    with pytest.raises(ValueError, match=r"events must be an Event or a sequence of Events, got array\(1\.\)"):
        A.best_epsilon(np.array(1.0), 1e-6)


# ---------------------------------------------------------------- structure: checked for every policy
@pytest.mark.parametrize("structure, says", [
    ({"max_degree": math.nan}, r"max_degree must be a whole number in \[0, n_arms - 1 = 1\], got nan"),
    ({"max_degree": -1}, r"max_degree must be a whole number in \[0, n_arms - 1 = 1\], got -1"),
    ({"max_degre": 1}, r"structure takes the keywords max_degree, graph, contexts .*got 'max_degre'"),
    ({"contexts": "yes"}, r"structure's contexts must be True or False"),
])
def test_a_structure_is_checked_also_where_the_schedule_ignores_it(structure, says):
    from privbandit import budget

    with pytest.raises(ValueError, match=says):
        budget.epsilon(make_policy("dp_ucb"), 100, 1e-6, 2, structure=structure)


def test_a_valid_structure_still_certifies_a_k_armed_policy_as_on_bandit_feedback():
    from privbandit import budget

    pol = make_policy("dp_ucb")
    plain = budget.epsilon(pol, 100, 1e-6, 2).value
    assert budget.epsilon(pol, 100, 1e-6, 2, structure={"max_degree": 1}, relation="round").value == plain


def test_the_command_line_refuses_a_max_degree_beyond_the_arms(capsys):
    from privbandit.cli import main

    assert main(["budget", "private_ucb", "--horizon", "100", "--max-degree", "1e400"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privbandit: error: max_degree must be a whole number in [0, n_arms - 1 = 1]")


# ---------------------------------------------------------------- policies: no warnings from valid-looking numbers
def test_kl_ucb_c_is_bounded():
    with pytest.raises(ValueError, match=r"c must lie in \[0, 1e\+250\], got 1e\+308"):
        make_policy("kl_ucb", c=1e308)


@pytest.mark.parametrize("name", ["lin_ucb", "lin_ts"])
def test_a_ridge_too_small_for_the_context_bound_is_named(name):
    with pytest.raises(ValueError, match=r"regularization must be at least bound / 1e\+150 = 1e-150 .*got 1e-320"):
        make_policy(name, regularization=1e-320)
    with pytest.raises(ValueError, match=r"regularization must be at least bound / 1e\+150 = 1e-140"):
        make_policy(name, regularization=1e-145, bound=1e10)


@pytest.mark.parametrize("name, params", [("kl_ucb", dict(c=1e250)), ("lin_ucb", dict(regularization=1e-150))])
def test_the_extremes_still_allowed_run_without_a_warning(name, params):
    from privbandit import simulate
    from privbandit.contextual import LinearContextual
    from privbandit.envs import Bernoulli

    pol = make_policy(name, **params)
    env = LinearContextual(dim=3, n_arms=2) if name == "lin_ucb" else Bernoulli([0.3, 0.999999999])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate(pol, env, 60, 2, seed=0, progress=False)


# ---------------------------------------------------------------- experiments and sweeps
@pytest.mark.parametrize("replicates", [10**400, 10**5000], ids=["1e400", "1e5000"])
def test_replicates_beyond_memory_are_named_not_an_overflow(replicates):
    from privbandit.experiments import run_experiment

    with pytest.raises(ValueError, match=r"replicates must be a whole number in \[1, \d+\] on this machine"):
        run_experiment("tossou2016-2arm", 10, replicates)


# ---------------------------------------------------------------- deployments
def _create(tmp_path, **over):
    from privbandit.deploy import Deployment

    return Deployment.create(tmp_path / "s.db", **(dict(policy="dp_ucb", n_arms=2, budget=5.0, delta=1e-6, seed=1) | over))


@pytest.mark.parametrize("name", ["on_exhausted", "synchronous"])
def test_a_deployment_option_that_is_an_array_is_named(tmp_path, name):
    with pytest.raises(ValueError, match=rf"^{name} must be one of '"):
        _create(tmp_path, **{name: np.array(["stop", "full"])})


def test_a_fraction_budget_that_affords_nothing_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"budget 0\.001 affords no policy round: .* at delta 1e-06"):
        _create(tmp_path, budget=fractions.Fraction(1, 1000))


def test_a_key_in_the_environment_authenticates_the_store_it_creates(tmp_path, monkeypatch):
    # session 15's decision: create() keeps reading the environment, as open() does (a store created
    # without it would be refused by every later open in the same environment: "a key given for a store
    # without a tag"); `deploy init` and status() report "authenticated" so the choice is visible
    from privbandit.deploy import Deployment, StoreError
    from privbandit.deploy.store import KEY_ENV, KEY_FILE_ENV

    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    monkeypatch.setenv(KEY_ENV, "0123456789abcdef-session-15-key")
    with _create(tmp_path) as dep:
        assert dep.authenticated and dep.status()["authenticated"]
    with Deployment.open(tmp_path / "s.db") as dep:
        dep.select()
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(StoreError, match="no key was given"):
        Deployment.open(tmp_path / "s.db")


def test_two_key_variables_at_once_are_refused(tmp_path, monkeypatch):
    from privbandit.deploy.store import KEY_ENV, KEY_FILE_ENV

    key_file = tmp_path / "key"
    key_file.write_text("f" * 32)
    monkeypatch.setenv(KEY_ENV, "k" * 32)
    monkeypatch.setenv(KEY_FILE_ENV, str(key_file))
    with pytest.raises(ValueError, match=rf"the environment sets both {KEY_ENV} and {KEY_FILE_ENV}: set one"):
        _create(tmp_path)
    assert not (tmp_path / "s.db").exists()


# ---------------------------------------------------------------- audit --out: staged, never written through
class _FakeAudit:
    def table(self, kind="md"):
        return "| a |\n" if kind == "md" else "a\n1\n"

    def plot(self, path):
        with open(path, "w") as fh:
            fh.write("png")


def test_the_audit_outputs_replace_symlinks_planted_in_out(tmp_path):
    from privbandit.audit.cli import _write_black_box, _write_summary

    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.write_text("precious\n")
    names = ("summary.json", "audit_actions.md", "audit_actions.csv", "audit_actions.png")
    for name in names:
        (out / name).symlink_to(victim)
    _write_black_box(str(out), "actions", _FakeAudit())
    _write_summary(str(out), {"verdict": "CONSISTENT"})
    assert victim.read_text() == "precious\n"
    assert not any((out / name).is_symlink() for name in names)
    assert (out / "summary.json").read_text().startswith('{\n  "verdict": "CONSISTENT"')
    assert (out / "audit_actions.md").read_text() == "| a |\n\n"
    assert sorted(p.name for p in out.iterdir()) == sorted(names)  # no staging directory left behind


# ---------------------------------------------------------------- deploy replay: a log without its header
@pytest.mark.parametrize("text", ["0.5,0.2\n0.1,0.9\n", "nan,0.2\n"])
def test_a_replay_log_without_a_header_is_named_not_short_one_round(tmp_path, capsys, text):
    # the first line was read as two column names: a headerless log lost its first round silently
    from privbandit.cli import main

    store, log = tmp_path / "s.db", tmp_path / "log.csv"
    assert main(["deploy", "init", str(store), "--policy", "dp_ucb", "--n-arms", "2", "--budget", "5",
                 "--delta", "1e-6", "--seed", "1"]) == 0
    log.write_text(text)
    capsys.readouterr()
    assert main(["deploy", "replay", str(store), str(log)]) == 2
    assert "is a row of rewards, not a header; the first line must name the 2 arm columns" in capsys.readouterr().err


def test_whole_number_column_names_stay_a_header(tmp_path):
    from privbandit.deploy.replay import read_log

    log = tmp_path / "log.csv"
    log.write_text("0,1\n0.5,0.2\n")  # (pandas' labels of a reward table's columns)
    assert read_log(log, 2) == [[0.5, 0.2]]
