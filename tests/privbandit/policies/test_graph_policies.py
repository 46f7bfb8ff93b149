"""UCB-N, UCB-MaxN, TS-N, TS-MaxN (privbandit.policies.graph)."""

import math

import networkx as nx
import numpy as np
import pytest

from privbandit.audit import run_policy
from privbandit.engine import simulate
from privbandit.envs import Bernoulli, ErdosRenyi, GraphFeedback, TruncatedExponential
from privbandit.policies import REGISTRY, UCB1
from privbandit.policies.graph import (TSN, UCBN, TSMaxN, UCBMaxN, best_in_neighbourhood, empirical_means,
                                       ucb_n_index)

from _graph_helpers import drive_graph


def test_decision_rules_by_hand():
    sums = np.array([[1.0, 0.0, 3.0, 0.0]])
    counts = np.array([[2.0, 0.0, 4.0, 1.0]])
    means = empirical_means(sums, counts)
    assert means.tolist() == [[0.5, math.inf, 0.75, 0.0]]
    idx = ucb_n_index(sums, counts, 10)
    assert idx[0, 1] == math.inf
    assert idx[0, 0] == pytest.approx(0.5 + math.sqrt(2 * math.log(10) / 2))
    assert idx[0, 3] == pytest.approx(math.sqrt(2 * math.log(10)))
    g = np.eye(4, dtype=bool)
    g[0, 2] = g[2, 0] = g[0, 3] = g[3, 0] = True
    scores = np.array([[0.1, 0.9, 0.5, 0.7], [0.1, 0.9, 0.5, 0.7], [0.1, 0.9, 0.5, 0.7]])
    # leader 0: neighbours {0, 2, 3} -> 3; leader 1: only itself; leader 2: {0, 2} -> 2
    assert best_in_neighbourhood(g, np.array([0, 1, 2]), scores).tolist() == [3, 1, 2]


def test_every_observed_arm_is_updated():
    star = nx.star_graph(4)  # arm 0 is the centre
    env = GraphFeedback(Bernoulli([0.5, 0.2, 0.2, 0.2, 0.2]), star)
    for pol in (UCBN(), UCBMaxN(), TSN(), TSMaxN()):
        run, _, arms, masks = drive_graph(pol, env, 10, 3, rounds=1)
        assert np.array_equal(run.counts, masks[0].astype(float))
        assert np.array_equal(run.counts.sum(axis=1), env.graph[arms[0]].sum(axis=1))
    run, *_ = drive_graph(UCBN(), env, 10, 2, rounds=1)
    assert np.all(run.counts == 1)  # UCB-N plays arm 0 first (ties -> lowest), which reveals all


def test_without_an_offered_graph_ucb_n_is_ucb1():
    # drivers that call select(t) without an offer (the auditor's tape runs) get the edgeless graph
    tape = np.random.default_rng(3).random((4, 400)) < np.array([[0.3], [0.5], [0.45], [0.6]])
    a = run_policy(UCBN(), tape, 400, 5, np.random.default_rng(0))["actions"]
    b = run_policy(UCB1(), tape, 400, 5, np.random.default_rng(0))["actions"]
    assert np.array_equal(a, b)


def test_engine_runs_graph_policies_and_refuses_them_without_a_graph():
    env = GraphFeedback(Bernoulli(np.linspace(0.1, 0.9, 20)), ErdosRenyi(20, 0.2))
    r = simulate(TSN(), env, 300, 4, seed=1, keep_arms=True)
    _, regret, arms, _ = drive_graph(TSN(), env, 300, 4, seed=1)
    assert np.array_equal(r.arms, arms)  # the engine and this loop agree bit for bit
    assert np.allclose(r.final_regret, regret)
    with pytest.raises(ValueError, match="graph"):
        simulate(TSN(), Bernoulli([0.2, 0.4]), 10, 2)


def test_maxn_plays_in_the_leaders_closed_neighbourhood():
    env = GraphFeedback(Bernoulli(np.linspace(0.1, 0.9, 30)), ErdosRenyi(30, 0.2))
    for pol in (UCBMaxN(), TSMaxN()):
        run, _, arms, masks = drive_graph(pol, env, 200, 4, seed=1)
        # the leader is observed in every round: for MaxN, the played arm is adjacent to it, so the
        # number of observed arms equals the played arm's closed-neighbourhood size
        assert np.array_equal(masks.sum(axis=2), env.graph.sum(axis=1)[arms])


def test_truncated_exponential_rewards_enter_the_beta_posterior_by_the_bernoulli_trick():
    env = GraphFeedback(TruncatedExponential([0.5, 1, 2, 5]), nx.complete_graph(4))
    run, *_ = drive_graph(TSN(), env, 50, 3)
    assert np.all(run.alpha + run.beta - 2 == run.counts)
    assert np.all(run.counts == 50)  # the complete graph reveals every arm every round


def test_ts_n_beats_ucb_maxn_on_erdos_renyi():
    # The paper's observation (seed 002 section 3.3), cheap version of the acceptance run (K = 100,
    # p = 0.1; bench/bench_graph.py measures T = 1e4): T = 2000, 20 replicates, fixed seeds. The
    # test asks the mean regret gap to exceed 5 standard errors of the difference of the two means
    # (each se from its replicates' spread): a gap that large is not noise.
    K, T, R = 100, 2000, 20
    env = GraphFeedback(Bernoulli(np.random.default_rng(5).uniform(0, 1, K)), ErdosRenyi(K, 0.1))
    _, ts, *_ = drive_graph(TSN(), env, T, R, seed=11)
    _, ucb, *_ = drive_graph(UCBMaxN(), env, T, R, seed=12)
    se = math.sqrt(ts.var(ddof=1) / R + ucb.var(ddof=1) / R)
    assert ucb.mean() - ts.mean() > 5 * se, (ts.mean(), ucb.mean(), se)


def test_registered_and_non_private():
    for name, cls in [("ucb_n", UCBN), ("ucb_maxn", UCBMaxN), ("ts_n", TSN), ("ts_maxn", TSMaxN)]:
        assert REGISTRY[name] is cls and not cls.private
        with pytest.raises(ValueError, match="n_arms"):
            cls().start(1, 2, 10, np.random.default_rng(0))


def test_a_malformed_offered_graph_is_rejected():
    run = UCBN().start(3, 2, 10, np.random.default_rng(0))

    class Offer:
        graph = np.eye(4, dtype=bool)

    with pytest.raises(ValueError, match="offer.graph"):
        run.select(1, Offer())


@pytest.mark.parametrize("replicates", [1, 60])
def test_ts_n_draws_exactly_numpy_beta_on_its_stream(replicates):
    """TS-N's leaders are ``rng.beta(alpha, beta).argmax(axis=1)`` on the run's own generator, through
    the compiled Beta kernel where it runs (privbandit.policies._ts_kernels.beta_argmax): the same
    leaders and the same stream afterwards as numpy's array call, at states of a real run."""
    env = GraphFeedback(Bernoulli(np.linspace(0.1, 0.9, 12)), ErdosRenyi(12, 0.3))
    run, *_ = drive_graph(TSN(), env, 80, replicates, seed=5)
    graph = env.graph
    for seed in range(3):
        run.rng, ref = np.random.default_rng(seed), np.random.default_rng(seed)
        assert np.array_equal(run.choose(81, graph), ref.beta(run.alpha, run.beta).argmax(axis=1))
        assert run.rng.bit_generator.state == ref.bit_generator.state
