"""Hostile inputs, tenth round (session 13): the rounds a schedule is asked about, the command line's
``--param`` values, the newer families' inputs (graphs, contexts, adversarial tables), inputs the
caller mutates after handing them over, experiment configurations and the audit / deploy argv.

Before the fixes of this round (docs/privacy.md, "Session 13 (s13/hostile)", has the counts):

* **a certificate below the truth** from a public method: ``schedule.live_certificates(rounds,
  delta)`` tightens each entry by the least value at it or any later entry -- valid only for
  increasing rounds (the engine sorts its checkpoints) but unchecked: Gaussian-TS's schedule asked
  at ``[1000, 10]`` certified round 1000 with 11.8, its true certificate is 355.1 (Private-UCB 0.060
  for 0.199);
* a schedule's ``epsilon`` / ``delta`` / ``mu`` / ``events`` read ``rounds`` as given: True
  certified one round, -3 certified nothing, 10.7 was read as 10 by one schedule and refused as an
  inner "n" or "count" by others, "10" and None were TypeErrors naming nothing;
* **odometer under-counts** from arrays the ledger stages uncopied: ``LaplaceRelease.release_records``
  with a reused position buffer (realized 3.0 -> 1.0) and an ``IntervalMean`` scale_fn returning a reused
  buffer (1.0 -> 0.0); ``VectorTreeMechanism`` kept the caller's ``weights``, which scale every node's
  noise (set to 1e-9 afterwards: noise ~1e-9, the ledger still 3.0);
* messages without the valid range or the name given (``--param epsilon=0x10``, an unknown policy
  parameter), numpy's messages (a scipy sparse graph "got shape ()", a context dimension changing per
  round), and options found late or never (a sweep's misspelt simulate option, a 3000 x 3000 grid,
  ``audit --one-run`` past the tape, a deployment horizon of 10^30).
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.policies import make_policy


# ---------------------------------------------------------------- the rounds a schedule is asked about
def _schedule(name="gaussian_ts"):
    policy = make_policy(name) if name == "gaussian_ts" else make_policy(name, epsilon=1.0)
    return policy.privacy_schedule(1000, 5)


@pytest.mark.parametrize("name", ["gaussian_ts", "private_ucb"])
def test_live_certificates_out_of_order_are_refused_not_certified_low(name):
    schedule = _schedule(name)
    honest = schedule.live_certificates([10, 1000], 1e-6)[0]
    assert honest[1] > honest[0]  # the schedule grows: out of order, round 1000 took round 10's value
    with pytest.raises(ValueError, match=r"rounds must be non-decreasing.*1000 before 10"):
        schedule.live_certificates([1000, 10], 1e-6)
    with pytest.raises(ValueError, match="non-decreasing"):
        schedule.live_certificates(np.array([1000, 10], dtype=np.uint16), 1e-6)
    # curve() sorts its rounds itself: any order gives each round its own (valid) value
    assert list(schedule.curve([1000, 10], 1e-6)) == list(schedule.curve([10, 1000], 1e-6))[::-1]


@pytest.mark.parametrize("rounds", [True, -3, 10.7, "10", None, float("inf"), np.float64(2.5)])
@pytest.mark.parametrize("method", ["epsilon", "delta", "mu", "events"])
def test_a_schedule_reads_rounds_as_a_whole_number(method, rounds):
    schedule = _schedule("private_ucb")
    args = {"epsilon": (1e-6,), "delta": (1.0,), "mu": (), "events": ()}[method]
    with pytest.raises(ValueError, match=r"rounds must be a whole number in \[0, inf\)"):
        getattr(schedule, method)(rounds, *args)


def test_a_schedule_takes_whole_numbers_of_any_type():
    schedule = _schedule("gaussian_ts")
    value = schedule.epsilon(10, 1e-6).value
    assert schedule.epsilon(10.0, 1e-6).value == value == schedule.epsilon(np.int64(10), 1e-6).value
    assert schedule.epsilon(0, 1e-6).value == 0.0
    assert list(schedule.live_certificates(np.array([0, 10], dtype=np.uint8), 1e-6)[0]) == [0.0, value]


@pytest.mark.parametrize("rounds", [[10.5], ["5"], [True], [2**70], [[1, 2]], "12", np.ma.masked_array([1, 2], mask=[0, 1])])
@pytest.mark.parametrize("method", ["live_certificates", "curve"])
def test_a_schedule_reads_a_list_of_rounds_as_whole_numbers(method, rounds):
    with pytest.raises(ValueError, match="rounds must"):
        getattr(_schedule("private_ucb"), method)(rounds, 1e-6)


# ---------------------------------------------------------------- --param values and names
def _cli_error(argv, capsys) -> str:
    from privbandit import cli

    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("policy, item, says", [
    ("dp_ucb", "epsilon=0x10", r"epsilon must be a real number in \(0, inf\), got '0x10'"),
    ("dp_ucb", "epsilon=nan", r"epsilon must not be NaN \(a real number in \(0, inf\)\)"),
    ("lin_ucb", "regularization=abc", r"regularization must be a real number in \(0, inf\)"),
    ("private_lin_ucb", "shift=0x1", r"shift must be a real number in \[0, inf\)"),
    ("dp_ucb_int", "delta=0x1", r"delta must be a real number in \(0, 1\)"),
    ("dp_ucb_int", "epsilom=1", r"unknown dp_ucb_int parameter 'epsilom'; did you mean epsilon\?"),
    ("dp_ucb_int", "c=1", r"unknown dp_ucb_int parameter 'c'; known: decay, delta, epsilon, exact, interval, rate, v"),
    ("ucb1", "epsilon=1", r"ucb1 takes no parameters, got 'epsilon'"),
])
def test_a_param_message_names_the_parameter_and_its_range(capsys, policy, item, says):
    import re

    assert re.search(says, _cli_error(["budget", policy, "--horizon", "100", "--param", item], capsys))


def test_budget_names_an_unknown_policy_parameter():
    from privbandit import budget

    # (was the class's TypeError "got an unexpected keyword argument 'epsilom'", a traceback)
    with pytest.raises(ValueError, match="unknown dp_ucb parameter 'epsilom'; did you mean epsilon"):
        budget.epsilon("dp_ucb", 100, 1e-6, epsilom=1.0)
    with pytest.raises(ValueError, match="unknown dp_ucb parameter 'epsilom'"):
        budget.mu("dp_ucb", 100, epsilom=1.0)


# ---------------------------------------------------------------- arrays changed by the caller after handing them over
def test_vector_tree_weights_are_copied():
    """Each node's Laplace noise is drawn times ``weights``: the caller's array, kept as given and set to
    1e-9 after construction, released sums with noise ~1e-9 while the ledger recorded 3.0 (the clean
    run's value) -- the truth is ~1e9 times that."""
    from privbandit.ledger import Ledger
    from privbandit.mechanisms.vector_tree import VectorTreeMechanism

    def released(mutate: bool) -> np.ndarray:
        w = np.array([1.0, 2.0])
        mech = VectorTreeMechanism(1, 1, 2, horizon=8, noise="laplace", scale=1.0, sensitivity=1.0, weights=w,
                                   rng=np.random.default_rng(3), ledger=Ledger(1, 1), name="vt")
        if mutate:
            w[:] = 1e-9
        for _ in range(4):
            mech.insert(np.zeros((1, 2)), np.zeros(1, dtype=int))
        return mech.noisy_sum()[0, 0]

    assert np.array_equal(released(True), released(False))


@pytest.mark.parametrize("weights", [["1", "2"], [True, True]])
def test_vector_tree_weights_are_numbers(weights):
    from privbandit.ledger import Ledger
    from privbandit.mechanisms.vector_tree import VectorTreeMechanism

    with pytest.raises(ValueError, match="weights must be an array of real numbers"):
        VectorTreeMechanism(1, 1, 2, horizon=8, noise="laplace", scale=1.0, sensitivity=1.0, weights=weights,
                            rng=np.random.default_rng(3), ledger=Ledger(1, 1), name="vt")


def _log_arrays():
    rng = np.random.default_rng(0)
    n, d, k = 60, 3, 3
    return rng.random((n, d)) / 2, rng.integers(0, k, n), (rng.random(n) < 0.5).astype(float), np.full(n, 1 / k)


@pytest.mark.parametrize("field, index, value", [("rewards", 2, 5.0), ("actions", 1, 99), ("contexts", 0, 1e6),
                                                 ("propensities", 3, 0.0)])
def test_a_logged_data_set_is_a_copy_the_caller_cannot_change(field, index, value):
    """LoggedData checked the caller's arrays and kept them: changed afterwards, the replay used the
    changed values (an action of 99 matched no arm and was silently never counted)."""
    from privbandit.contextual.replay import LoggedData, replay

    arrays = dict(zip(("contexts", "actions", "rewards", "propensities"), _log_arrays()))
    log = LoggedData(**arrays, n_arms=3)
    clean = replay(make_policy("lin_ucb"), LoggedData(**{k: v.copy() for k, v in arrays.items()}, n_arms=3), seed=1)
    arrays[field][index] = value
    assert replay(make_policy("lin_ucb"), log, seed=1).kept.tolist() == clean.kept.tolist()
    assert not getattr(log, field).flags.writeable


def test_a_logged_data_set_holds_numbers():
    from privbandit.contextual.replay import LoggedData

    x, a, r, p = _log_arrays()
    with pytest.raises(ValueError, match="rewards must be an array of real numbers"):
        LoggedData(x, a, r.astype(str), p, 3)
    assert LoggedData(x, a, r > 0.5, p, 3).rewards.dtype == float  # (clicks as bools: 0 / 1, as before)


def test_a_fixed_linear_rule_is_a_copy():
    from privbandit.policies.linear import FixedLinear

    weights = np.eye(3)
    rule = FixedLinear(weights)
    weights[:] = 0.0
    assert rule.choose(np.eye(3)).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="weights must be an array of real numbers"):
        FixedLinear([["1", "0"], ["0", "1"]])


# ---------------------------------------------------------------- contexts
@pytest.mark.parametrize("name", ["lin_ucb", "lin_ts"])
def test_contexts_that_change_dimension_are_named(name):
    from privbandit.feedback import Offer

    run = make_policy(name).start(3, 2, 10, np.random.default_rng(0))
    run.select(1, Offer(contexts=np.full((2, 3, 3), 0.3)))
    run.update(1, np.zeros(2, dtype=int), np.full(2, 0.5))
    # (was numpy's "operands could not be broadcast together with remapped shapes")
    with pytest.raises(ValueError, match=r"contexts must keep the dimension of the first round's, d=3, got 4 in round 2"):
        run.select(2, Offer(contexts=np.full((2, 3, 4), 0.3)))


# ---------------------------------------------------------------- feedback graphs
def test_a_scipy_sparse_adjacency_is_read_as_its_matrix():
    import networkx as nx
    import scipy.sparse as sp

    from privbandit.envs.graphs import check_adjacency, max_degree

    path = nx.to_numpy_array(nx.path_graph(4))
    for sparse in (sp.csr_matrix(path), sp.csr_array(path), sp.coo_matrix(path), nx.to_scipy_sparse_array(nx.path_graph(4))):
        assert np.array_equal(check_adjacency(sparse, 4), check_adjacency(path, 4))  # (was "got shape ()")
        assert max_degree(sparse) == 2
    twice = sp.coo_matrix((np.ones(4), ([0, 0, 1, 1], [1, 1, 0, 0])), shape=(4, 4))  # a duplicate entry sums to 2
    with pytest.raises(ValueError, match="entries must be 0/1 or bool.*2.0"):
        check_adjacency(twice)
    one_way = path.copy()
    one_way[0, 1] = 0
    with pytest.raises(ValueError, match="symmetric"):
        check_adjacency(sp.csr_matrix(one_way))


def test_a_masked_or_bool_weighted_graph_is_refused():
    import networkx as nx

    from privbandit.envs.graphs import check_adjacency

    path = nx.to_numpy_array(nx.path_graph(4))
    with pytest.raises(ValueError, match="graph must not hold masked entries"):
        check_adjacency(np.ma.masked_array(path, mask=path == 1))  # (the edges under the mask were read)
    g = nx.path_graph(4)
    g.add_edge(0, 1, weight=True)
    with pytest.raises(ValueError, match=r"unweighted \(weight 1\), got weights \[True\]"):
        check_adjacency(g)
    with pytest.raises(ValueError, match=r"square \(K, K\) adjacency matrix with K >= 2, got \{0: \[1\]\}"):
        check_adjacency({0: [1]})


# ---------------------------------------------------------------- sweeps and experiments
@pytest.mark.parametrize("option, close", [("chekpoints", "checkpoints"), ("strict_reward", "strict_rewards"),
                                           ("deltta", "delta")])
def test_a_sweep_names_an_unknown_simulate_option(option, close):
    from privbandit import envs as E
    from privbandit.experiments import run_experiment
    from privbandit.policies import UCB1
    from privbandit.sweep import sweep

    # (was simulate's TypeError from the first cell -- or from a worker, once every cell was submitted)
    with pytest.raises(ValueError, match=f"unknown simulate option '{option}'; did you mean {close}"):
        sweep([UCB1()], [E.Bernoulli([0.5, 0.6])], 10, 1, **{option: 1})
    with pytest.raises(ValueError, match=f"unknown simulate option '{option}'"):
        run_experiment("tossou2016-2arm", 50, 2, **{option: 1})


def test_an_enormous_grid_is_refused_before_it_runs(monkeypatch):
    import importlib

    from privbandit import envs as E
    from privbandit.policies import UCB1

    S = importlib.import_module("privbandit.sweep")  # (privbandit.sweep is also the function's name)
    monkeypatch.setattr(S, "physical_memory", lambda: 10 * 2**20)  # 10 MiB: 100 x 100 cells of ~4 KB do not fit
    ran = []
    monkeypatch.setattr(S, "simulate", lambda *a, **k: ran.append(1))
    env = E.Bernoulli([0.5, 0.6])
    with pytest.raises(ValueError, match=r"policies x envs = 100 x 100 = 10000 cells need about 0.0384 GiB .* at most 2540 cells"):
        S.sweep({str(i): UCB1() for i in range(100)}, {str(i): env for i in range(100)}, 10, 1)
    assert not ran


# ---------------------------------------------------------------- the audit command line
@pytest.mark.parametrize("argv, says", [
    (["--arms", "1000"], r"--arms 1000 needs --horizon >= 1000: the default horizon \(the policy's pre-pull rounds \+ 20\) is 20"),
    (["--one-run", "41"], r"--one-run must be a whole number in \[0, 40\] with --arms 2 and horizon 20"),
    (["--one-run", str(10**18)], r"--one-run must be a whole number in \[0, 40\]"),
    (["--one-run", "4", "--one-run-runs", str(10**18)], r"--one-run-runs = 1000000000000000000 needs more than"),
])
def test_the_audit_refuses_one_run_options_before_auditing(monkeypatch, capsys, argv, says):
    """These were found only after the white-box and black-box audits (a minute or more: --one-run past the
    tape's room), or never (--one-run-runs 10^18 allocated as it went); a default horizon below --arms was
    refused as "horizon must be a whole number >= the number of arms (1000), got 20"."""
    import re

    import privbandit.audit as A

    def reached(*args, **kwargs):
        raise AssertionError("the audits started")

    monkeypatch.setattr(A, "ledger_audit", reached)
    assert re.search(says, _cli_error(["audit", "dp_ucb", *argv], capsys))


# ---------------------------------------------------------------- the deployment's inputs
def test_a_deployment_horizon_lies_below_2_to_the_63(tmp_path):
    from privbandit.deploy import Deployment

    # (10^30 reached Private-UCB's compiled kernel as a Python object: numba's TypingError)
    with pytest.raises(ValueError, match=r"horizon must be a whole number in \[3, 9223372036854775807\], got 1(0){30}$"):
        Deployment.create(tmp_path / "s.db", "private_ucb", n_arms=3, budget=5.0, delta=1e-6, horizon=10**30, seed=1)
    with Deployment.create(tmp_path / "t.db", "private_ucb", n_arms=3, budget=5.0, delta=1e-6, horizon=2**63 - 1,
                           seed=1) as dep:
        dep.update(dep.select().decision, 0.5)


def test_a_replay_log_that_is_a_directory_is_named(tmp_path, capsys):
    from privbandit.deploy import Deployment

    with Deployment.create(tmp_path / "s.db", "dp_ucb", n_arms=3, budget=5.0, delta=1e-6, seed=1):
        pass
    (tmp_path / "log.csv").mkdir()
    assert "log.csv': a directory, not a file (expected a CSV file)" in _cli_error(
        ["deploy", "replay", str(tmp_path / "s.db"), str(tmp_path / "log.csv")], capsys)


# ---------------------------------------------------------------- arrays the ledger stages uncopied
def test_release_records_copies_its_index_arrays():
    """The ledger stages arrays that own their data until its next drain: a caller reusing its position
    buffer after three releases of record 0 made the realized spend 1.0 instead of 3.0."""
    from privbandit.ledger import Ledger
    from privbandit.mechanisms.laplace import LaplaceRelease

    def realized(reuse: bool) -> float:
        ledger = Ledger(1, 1)
        mech = LaplaceRelease(np.random.default_rng(0), ledger, "lap")
        rows, arms, pos = np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64)
        end = pos + 2
        mech.release_records(np.zeros(3), 1.0, rows, arms, pos, end)
        if reuse:
            pos[:], end[:] = [0, 2, 4], [1, 3, 5]
        return float(ledger.realized_epsilon(1e-6)[0])

    assert realized(True) == realized(False) == pytest.approx(3.0)


def test_an_interval_mean_copies_the_scales_of_its_scale_fn():
    """A scale_fn returning a buffer it overwrites on its next call: the scales already staged became the
    next call's (1e9), the realized spend 0.0 for a release drawn at scale 1 (1.0)."""
    from privbandit.ledger import Ledger
    from privbandit.mechanisms import IntervalMean

    def realized(reuse: bool) -> float:
        buffer = np.empty(0)

        def scale_fn(n):
            nonlocal buffer
            if reuse and buffer.shape == n.shape:
                buffer[:] = 1e9
                return buffer
            buffer = np.ones(n.shape)
            return buffer

        ledger = Ledger(1, 2)
        mech = IntervalMean(1, 2, rng=np.random.default_rng(0), ledger=ledger, interval=1, scale_fn=scale_fn)
        mech.insert(np.array([[0.5, 0.5]]), np.array([[True, False]]))
        mech.insert(np.array([[0.5, 0.5]]), np.array([[False, True]]))
        return float(ledger.realized_epsilon(1e-6)[0])

    assert realized(True) == realized(False) == pytest.approx(1.0)
