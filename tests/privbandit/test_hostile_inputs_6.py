"""Hostile inputs, sixth round (session 9): the deploy subcommands' numbers, feedback graphs (self-loops,
weights, NaN, asymmetry, sizes, node labels, per-round graphs), numbers of thousands of digits in
messages, and a systematic fuzz of the CLI and the Python API (policies, environments, simulate,
budget, accountants, audits, deployments) with numpy scalars, 0-d arrays, bools, Fractions, Decimals,
huge ints, -0.0, NaN/inf, subnormals, strings, None, odd shapes and dtypes.

Before the fixes of this round:

* ``privbandit deploy init --n-arms 1e3`` was refused ("--n-arms must be a whole number") while
  ``run --horizon 1e3`` was accepted: deploy read its numbers with int() / float(); they now use the
  command line's one set of argparse types (``privbandit.cli_checks``); ``audit --one-run 1e1`` too
  (argparse ``type=int``); ``deploy init --n-arms 1e19`` was numpy's "Maximum allowed dimension
  exceeded" (deployments now take at most 2^20 arms, named);
* a whole number beyond 4300 digits in a message (``budget.epsilon(p, 100, d, n_arms=10**5000)``,
  ``checkpoints=[10**5000]``, ``DPUCBInt(interval=10**5000)``, ``max_degree=10**5000``,
  ``_validate.count("n", -10**5000)``) raised Python's own "Exceeds the limit (4300 digits) for integer
  string conversion" instead of the named error; shorter ones (``--epsilon`` of 5000 digits, an
  "invalid choice" of 5000 characters) were echoed in full. One helper, ``accountants._validate.shown``,
  now quotes every validator's value (a 40+-digit int by its magnitude, long text by its start and
  length), and the command line's one-line formatter shortens any longer word;
* the command line's ``probability`` type took a subnormal delta / alpha (``audit --alpha 1e-320``:
  NaN Wilson intervals and RuntimeWarnings on stderr, exit 0), which the accountants refuse.
"""

from __future__ import annotations

import json

import pytest

from accountants import _validate
from privbandit import budget, simulate
from tests.privbandit.test_hostile_inputs_5 import _cli, _one_line_error  # one line, exit 2, no traceback
from privbandit.envs import Bernoulli
from privbandit.policies import UCB1, make_policy


# ---------------------------------------------------------------- deploy numbers
def test_deploy_reads_numbers_like_the_rest_of_the_command_line(tmp_path):
    store = str(tmp_path / "d.db")
    code, out, err = _cli(["deploy", "init", store, "--policy", "dp_ts", "--n-arms", "3e0", "--budget", "1",
                           "--delta", "1e-6", "--seed", "1e1", "--horizon", "1e3"])
    assert code == 0, err
    config = json.loads(out)
    assert (config["n_arms"], config["seed"], config["horizon"]) == (3, 10, 1000)
    assert json.loads(_cli(["deploy", "select", store])[1])["decision"] == 1
    code, out, err = _cli(["deploy", "update", store, "--decision", "1e0", "--reward", "0.5"])
    assert code == 0 and json.loads(out)["applied"], err
    assert _cli(["deploy", "status", store, "--last", "1e0"])[0] == 0
    # the ranges are named at parse time, as for `run` / `budget`
    for argv, message in [(["status", store, "--last", "-1"], "--last: must be a whole number in [0, inf)"),
                          (["update", store, "--decision", "0", "--reward", "1"], "--decision: must be a whole number in [1, inf)"),
                          (["update", store, "--decision", "1", "--reward", "inf"], "--reward: must lie in (-inf, inf)"),
                          (["init", str(tmp_path / "e.db"), "--policy", "dp_ts", "--n-arms", "1e400", "--budget", "1",
                            "--delta", "1e-6"], "n_arms must be a whole number in [2, 1048576], got a whole number of about 10^400")]:
        assert message in _one_line_error(["deploy", *argv]), argv


def test_audit_one_run_counts_are_whole_numbers_like_every_other_option():
    from privbandit.cli import build_parser

    args = build_parser().parse_args(["audit", "dp_ts", "--one-run", "1e1", "--one-run-runs", "2e0"])
    assert (args.one_run, args.one_run_runs) == (10, 2)
    assert "--one-run-runs: must be a whole number in [1, inf)" in _one_line_error(["audit", "dp_ts", "--one-run-runs", "0"])


# ---------------------------------------------------------------- numbers in messages
HUGE = 10**5000  # beyond Python's 4300-digit int -> str limit


@pytest.mark.parametrize("call,message", [
    (lambda: _validate.count("n", -HUGE), "n must be a whole number in [0, inf), got a whole number of about -10^5000"),
    (lambda: budget.epsilon("private_ucb", 100, 1e-6, HUGE), "n_arms must be at most the longest horizon certified"),
    (lambda: simulate(UCB1(), Bernoulli([0.5, 0.4]), 10, 1, checkpoints=[HUGE], progress=False),
     "checkpoints must be whole numbers in [1, 10], got a whole number of about 10^5000"),
    (lambda: make_policy("dp_ucb_int", interval=HUGE), "interval must be a whole number in [1, 1e+18], got a whole number"),
    (lambda: budget.epsilon("lazy_dp_ts_n", 100, 1e-6, 3, structure={"max_degree": HUGE}, relation="round"),
     "max_degree must be a whole number in [0, n_arms - 1 = 2], got a whole number of about 10^5000"),
])
def test_a_number_of_thousands_of_digits_is_named_by_its_magnitude(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value) and len(str(info.value)) < 200


def test_shown_caps_every_kind_of_value():
    assert _validate.shown(2**70) == "1180591620717411303424"  # up to 40 digits: every digit
    assert _validate.shown(10**40) == "a whole number of about 10^40"
    assert _validate.shown("x" * 5000).endswith("...(5002 characters)") and len(_validate.shown("x" * 5000)) < 70
    assert _validate.shown([HUGE]) == "a list"  # repr itself raises beyond 4300 digits
    assert _validate.shown(0.1) == "0.1" and _validate.shown("abc", quote=False) == "abc"


@pytest.mark.parametrize("argv", [
    ["budget", "private_ucb", "--horizon", "100", "--epsilon", "1" * 5000],
    ["budget", "private_ucb", "--horizon", "100", "--relation", "x" * 5000],
    ["deploy", "init", "s.db", "--policy", "1" * 5000, "--n-arms", "3", "--budget", "1", "--delta", "1e-6"],
    ["certify", "--releases", "1" * 5000],
])
def test_the_command_line_never_echoes_thousands_of_characters(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = _one_line_error(argv)
    assert len(line) < 600 and "characters)" in line


def test_probability_options_refuse_subnormals_as_the_accountants_do():
    for argv in (["audit", "dp_ts", "--alpha", "1e-320"], ["certify", "--delta", "5e-324"],
                 ["deploy", "init", "s.db", "--policy", "dp_ts", "--n-arms", "3", "--budget", "1", "--delta", "1e-310"]):
        assert "must lie in [2.2250738585072014e-308, 1)" in _one_line_error(argv)
