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

import numpy as np
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


# ---------------------------------------------------------------- feedback graphs
def test_max_degree_reads_any_graph_through_check_adjacency():
    from privbandit.envs.graphs import max_degree

    path = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=bool)  # an open adjacency: no diagonal
    assert max_degree(path) == 2  # was 1: row sums one short, a "round" certificate over 2 streams, not 3
    assert max_degree(path | np.eye(3, dtype=bool)) == 2  # a self-loop on every arm changes nothing
    with pytest.raises(ValueError, match="entries must be 0/1 or bool, got dtype float64 with entry 0.5"):
        max_degree(np.array([[1, 0.5], [0.5, 1]]))  # was 0: weights summed
    assert budget.epsilon("lazy_dp_ts_n", 100, 1e-6, 3, structure={"graph": path}, relation="round").value == \
        budget.epsilon("lazy_dp_ts_n", 100, 1e-6, 3, structure={"max_degree": 2}, relation="round").value


def test_networkx_graphs_are_refused_unless_plain_undirected_on_whole_number_nodes():
    nx = pytest.importorskip("networkx")
    from privbandit.envs.graphs import check_adjacency

    loops = nx.Graph([(0, 0), (0, 1), (1, 2)])
    assert check_adjacency(loops).sum() == 7  # the self-loop is the diagonal every arm has anyway
    assert check_adjacency(nx.MultiGraph([(0, 1), (0, 1), (1, 2)])).sum() == 7  # was a reshape error
    for graph, message in [(nx.DiGraph([(0, 1), (1, 2)]), "must be undirected"),  # was silently symmetrised
                           (nx.Graph([(0.0, 1.0), (1.0, 2.0)]), "whole-number nodes 0..K-1, got \\[0.0, 1.0, 2.0\\]"),
                           (nx.Graph([(False, True), (True, 2)]), "whole-number nodes"),
                           (nx.Graph([(0, 1, {"weight": 0.3}), (1, 2, {"weight": 1})]), "unweighted")]:
        with pytest.raises(ValueError, match=message):
            check_adjacency(graph)
    with pytest.raises(ValueError, match=r"square \(K, K\) adjacency matrix"):
        check_adjacency([[1, 0], [1]])  # ragged: was numpy's "inhomogeneous shape"


def _graph_run(name):
    from privbandit.envs.graphs import check_adjacency
    from privbandit.feedback import Offer

    policy = make_policy(name) if name in ("ucb_n", "ts_n", "gaussian_ts_n") else make_policy(name, epsilon=1.0)
    run = policy.start(3, 1, 50, np.random.default_rng(0))
    arms = run.select(1, Offer(graph=check_adjacency(np.ones((3, 3)))))
    return run, arms


@pytest.mark.parametrize("name", ["gaussian_ts_n", "dp_ucb_n", "lazy_dp_ts_n", "ucb_n", "ts_n"])
def test_a_side_observation_mask_must_be_bool_and_reveal_the_played_arm(name):
    from privbandit.feedback import Feedback

    run, arms = _graph_run(name)
    values = np.full((1, 3), 0.5)
    # a weight 0.5 made Gaussian-TS-N's count k = 0.5 for one record: noise c / 1.5 where the
    # certificate assumes c / 2 (mu 1/sqrt(1.5 c) > 1/sqrt(2 c)); a 2 (a self-loop counted twice) k = 2
    for mask in (np.array([[0.5, 0.5, 0.5]]), np.array([[2, 1, 1]])):
        with pytest.raises(ValueError, match="feedback.observed must be a bool mask"):
            run.observe(1, Feedback(arms, np.array([0.5]), mask, values))
    unplayed = np.ones((1, 3), dtype=bool)
    unplayed[0, arms[0]] = False
    with pytest.raises(ValueError, match="must reveal every played arm's own entry"):
        Feedback(arms, np.array([0.5]), unplayed, values)
    with pytest.raises(ValueError, match="offer.graph must hold closed neighbourhoods"):
        from privbandit.feedback import Offer

        run.select(2, Offer(graph=np.zeros((3, 3), dtype=bool)))


def test_an_environment_revealing_beyond_its_declared_degree_is_stopped():
    from privbandit.envs.base import EnvironmentRun, StationaryEnvironment
    from privbandit.feedback import Feedback, Offer

    class Liar(StationaryEnvironment):  # declares degree 0 (bandit feedback) but reveals every arm
        name = "liar"
        offers = frozenset({"graph"})

        def structure(self):
            return {"max_degree": 0}

        def start(self, replicates, rng):
            env = self

            class Run(EnvironmentRun):
                def rewards(self, t, arms):
                    return np.full(arms.shape, 0.5)

                def offer(self, t):
                    return Offer(graph=np.ones((env.n_arms, env.n_arms), dtype=bool))

                def feedback(self, t, arms):
                    return Feedback(arms, self.rewards(t, arms), np.ones((arms.size, env.n_arms), bool),
                                    np.full((arms.size, env.n_arms), 0.5))

            return Run()

    with pytest.raises(ValueError, match=r"revealed 3 entries in round 1, more than the max_degree \+ 1 = 1"):
        simulate(make_policy("lazy_dp_ts_n", epsilon=1.0), Liar([0.5, 0.4, 0.3]), 10, 2, relation="round",
                 progress=False)


# ---------------------------------------------------------------- arms returned to the engine
@pytest.mark.parametrize("arms,message", [
    (lambda r: np.full(r, -1), "must return arms in \\[0, 2\\], got arm -1"),  # was numpy's "no negative elements"
    (lambda r: np.full(r, 3), "must return arms in \\[0, 2\\], got arm 3"),  # was an IndexError
    (lambda r: np.full(r, 1.0), "integer array of shape \\(2,\\) .* got float64 \\(2,\\)"),
    (lambda r: np.zeros((r, 1), dtype=int), "got int64 \\(2, 1\\)"),
    (lambda r: None, "got NoneType"),
])
def test_bad_arms_from_a_policy_run_are_named(arms, message):
    from privbandit.policies.base import Policy, PolicyRun

    class Bad(Policy):
        name = "bad"

        def start(self, n_arms, replicates, horizon, rng, ledger=None):
            class Run(PolicyRun):
                def select(self, t):
                    return arms(replicates)

                def update(self, t, arms, rewards):
                    pass

            return Run()

    with pytest.raises(ValueError, match=message):
        simulate(Bad(), Bernoulli([0.5, 0.4, 0.3]), 6, 2, progress=False)


# ---------------------------------------------------------------- the Python surface, fuzzed
@pytest.mark.parametrize("make,message", [
    (lambda: make_policy("dp_ucb_int", decay=HUGE), "decay must be a real number in \\[0, inf\\), got a whole number"),
    (lambda: make_policy("anytime_lazy_ucb", alpha=HUGE), "alpha must be a real number in \\(3, inf\\), got a whole number"),
])
def test_constructor_numbers_beyond_the_floats_are_named(make, message):
    with pytest.raises(ValueError, match=message):  # were OverflowErrors from math.isfinite
        make()


def test_complex_checkpoints_are_refused_not_cast():
    with pytest.raises(ValueError, match="checkpoints must be whole numbers"):
        simulate(UCB1(), Bernoulli([0.5, 0.4]), 10, 1, checkpoints=[np.complex64(5)], progress=False)


def test_contexts_are_real_numbers_and_clip_onto_the_ball_even_past_1e154():
    from privbandit.contextual.linalg import bound_contexts, check_contexts

    for bad in (np.full((1, 2, 3), 0.1 + 0j), np.full((1, 2, 3), "0.5"), np.ones((1, 2, 3), dtype=bool)):
        with pytest.raises(ValueError, match="contexts must be an array of real numbers"):
            check_contexts(bad, 3)  # were cast (a ComplexWarning) or read as numbers
    huge = np.array([[[1e200, 1e200, 0.0], [0.3, 0.4, 0.0]]])
    clipped = bound_contexts(check_contexts(huge, 3), 1.0, "clip")
    # the sum of squares overflowed to inf and the "projection" made the context 0
    assert np.allclose(clipped[0, 0], [2**-0.5, 2**-0.5, 0.0]) and np.allclose(clipped[0, 1], [0.3, 0.4, 0.0])
