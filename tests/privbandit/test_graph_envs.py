"""Graph feedback environments (privbandit.envs.graph, privbandit.envs.graphs)."""

import math

import networkx as nx
import numpy as np
import pytest

from privbandit.envs import (BarabasiAlbert, Bernoulli, DisjointCliques, ErdosRenyi, GraphFeedback, PlantedPartition,
                             TruncatedExponential)
from privbandit.envs.graphs import check_adjacency, max_degree

MODELS = [ErdosRenyi(60, 0.1), BarabasiAlbert(60, 2), PlantedPartition(60, 3, 0.5, 0.02), DisjointCliques(60, 6)]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_models_give_closed_symmetric_graphs_deterministic_in_the_seed(model):
    a = model.sample(np.random.default_rng(3))
    assert a.shape == (60, 60) and a.dtype == bool and not a.flags.writeable
    assert np.all(np.diag(a)) and np.array_equal(a, a.T)
    assert np.array_equal(a, model.sample(np.random.default_rng(3)))
    assert not np.array_equal(a, model.sample(np.random.default_rng(4)))
    assert max_degree(a) <= model.max_degree_bound


def test_model_structure():
    cliques = DisjointCliques(60, 6).sample(np.random.default_rng(0))
    assert np.all(cliques.sum(axis=1) == 6)  # closed neighbourhood = the arm's clique
    # a clique's members share one neighbourhood
    assert all(np.array_equal(cliques[i], cliques[j]) for i in range(60) for j in np.flatnonzero(cliques[i]))
    assert DisjointCliques(60, 6).max_degree_bound == 5
    ba = BarabasiAlbert(60, 2).sample(np.random.default_rng(0))
    assert (ba.sum() - 60) // 2 == 2 * (60 - 2)  # m (n - m) edges (networkx's BA starts from a star on m+1)
    pp = PlantedPartition(60, 3, 1.0, 0.0).sample(np.random.default_rng(0))
    block = np.arange(60) // 20
    assert np.array_equal(pp, block[:, None] == block[None, :])
    assert PlantedPartition(60, 3, 1.0, 0.0).max_degree_bound == 19


def test_erdos_renyi_edge_count_matches_gnp():
    # the numpy draw is G(n, p): edges ~ Binomial(n(n-1)/2, p). Over 20 seeds the mean edge count has
    # sd sqrt(N p (1-p) / 20); 5 sd (two-sided p ~ 6e-7) never fails by chance with fixed seeds.
    n, p, reps = 200, 0.05, 20
    pairs = n * (n - 1) // 2
    counts = [(ErdosRenyi(n, p).sample(np.random.default_rng(s)).sum() - n) // 2 for s in range(reps)]
    assert abs(np.mean(counts) - pairs * p) < 5 * math.sqrt(pairs * p * (1 - p) / reps)
    # same law as networkx's generator (same mean to the same tolerance)
    nx_counts = [nx.gnp_random_graph(n, p, seed=s).number_of_edges() for s in range(reps)]
    assert abs(np.mean(counts) - np.mean(nx_counts)) < 5 * math.sqrt(2 * pairs * p * (1 - p) / reps)


def test_check_adjacency_accepts_networkx_and_rejects_bad_graphs():
    g = nx.path_graph(4)
    a = check_adjacency(g)
    assert a.sum() == 4 + 2 * 3 and max_degree(a) == 2
    with pytest.raises(ValueError, match="symmetric"):
        check_adjacency(np.triu(np.ones((3, 3), dtype=bool)))
    with pytest.raises(ValueError, match="square"):
        check_adjacency(np.ones((3, 2), dtype=bool))
    with pytest.raises(ValueError, match="0/1"):
        check_adjacency(np.full((3, 3), 2))
    with pytest.raises(ValueError, match="n_arms"):
        GraphFeedback(Bernoulli([0.1, 0.2, 0.3]), np.eye(4, dtype=bool))
    for bad in (dict(p=1.5), dict(p=-0.1)):
        with pytest.raises(ValueError, match="p must lie in"):
            ErdosRenyi(10, **bad)
    with pytest.raises(ValueError, match="groups"):
        PlantedPartition(10, 3, 0.5, 0.1)
    with pytest.raises(ValueError, match="size"):
        DisjointCliques(10, 4)
    with pytest.raises(ValueError, match="m must be"):
        BarabasiAlbert(10, 10)
    with pytest.raises(ValueError, match="redraw"):
        GraphFeedback(Bernoulli([0.1, 0.2]), np.eye(2, dtype=bool), redraw=True)


def test_reveal_draws_the_closed_neighbourhood_with_the_arms_laws():
    means = np.linspace(0.1, 0.9, 6)
    g = nx.cycle_graph(6)
    env = GraphFeedback(Bernoulli(means), g)
    assert env.max_degree == 2 and env.offers == frozenset({"graph"})
    run = env.start(4000, np.random.default_rng(1))
    arms = np.zeros(4000, dtype=int)
    rewards, observed, values = run.reveal(1, arms)
    assert np.array_equal(observed, np.broadcast_to(env.graph[0], observed.shape))
    assert np.all(values[~observed] == 0) and np.array_equal(rewards, values[:, 0])
    # each revealed column is Bernoulli(mean): 4000 draws, sd <= 0.5/sqrt(4000) = 0.0079; 5 sd
    for j in (0, 1, 5):
        assert abs(values[:, j].mean() - means[j]) < 5 * 0.5 / math.sqrt(4000)
    assert run.graph(1) is run.graph(2)  # a fixed graph is the same object every round


def test_truncated_exponential_arms_and_redrawn_graphs():
    env = GraphFeedback(TruncatedExponential([0.5, 1, 2, 5]), ErdosRenyi(4, 0.5), redraw=True)
    assert env.graph is None and env.max_degree == 3
    run = env.start(3, np.random.default_rng(0))
    graphs = [run.graph(t) for t in range(1, 30)]
    assert run.graph(29) is graphs[-1]  # one graph per round
    assert len({g.tobytes() for g in graphs}) > 1
    _, observed, values = run.reveal(30, np.array([0, 1, 2]))
    assert np.all((values >= 0) & (values <= 1)) and np.all(values[observed] > 0)
