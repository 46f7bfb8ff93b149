"""Private graph-feedback policies (privbandit.policies.graph_private): certificates under the entry
and round relations against hand-computed footprints, realized <= certified, planted noise bugs,
and a black-box audit under the round relation."""

import math

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from accountants import Gaussian, Laplace, best_epsilon, gdp_conversion
from privbandit import budget
from privbandit.audit import Audit, Budget, Claim
from privbandit.engine import simulate
from privbandit.envs import Bernoulli, ErdosRenyi, GraphFeedback
from privbandit.feedback import Feedback, Offer
from privbandit.ledger import Ledger
from privbandit.mechanisms import HybridMechanism
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import REGISTRY
from privbandit.policies.graph_private import DPUCBN, GaussianTSN, LazyDPTSN, streams_per_record

from _graph_helpers import drive_graph

DELTA = 1e-6
PATH = nx.path_graph(4)  # 0 - 1 - 2 - 3: max degree 2, so a round's vector enters at most 3 streams
PATH_ENV = GraphFeedback(Bernoulli([0.2, 0.4, 0.6, 0.8]), PATH)


# --- certificates against hand-computed footprints -----------------------------------------------
def test_lazy_certificates_by_hand():
    pol = LazyDPTSN(epsilon=0.5)
    entry = pol.privacy_schedule(100, 4, relation="entry", max_degree=2)
    round_ = pol.privacy_schedule(100, 4, relation="round", max_degree=2)
    # entry: one Lap(1/eps) release per record, the exact Laplace profile eps + 2 ln(1 - delta)
    assert entry.epsilon(100, DELTA).value == pytest.approx(0.5 + 2 * math.log1p(-DELTA), rel=1e-12)
    # round: the record is in 3 streams, one Lap(2) release each: 3 x Laplace(scale 2), pure 1.5
    assert round_.events(100) == Laplace(2.0, 1.0) * 3
    cert = round_.epsilon(100, DELTA)
    assert cert.value == pytest.approx(best_epsilon(Laplace(2.0, 1.0) * 3, DELTA).value, rel=1e-12)
    assert 0.5 < cert.value <= 1.5 + 1e-12
    assert entry.relation == "entry" and round_.relation == "round"


def test_gaussian_certificates_by_hand():
    pol = GaussianTSN(b=0, c=4.0)
    T = 50
    # b = 0: a record is in at most T - 1 = 49 draws of its arm, each (1/sqrt(c (k + 1)))-GDP with
    # k >= 1: mu_entry^2 = 49 / (4 * 2); the round relation composes 3 streams: mu_round^2 = 3 * 49 / 8
    mu_entry, mu_round = math.sqrt(49 / 8), math.sqrt(3 * 49 / 8)
    for relation, mu in (("entry", mu_entry), ("round", mu_round)):
        sched = pol.privacy_schedule(T, 4, relation=relation, max_degree=2)
        assert sched.mu(T) == pytest.approx(mu, rel=1e-12)
        assert sched.epsilon(T, DELTA).value == pytest.approx(gdp_conversion.epsilon_for_delta(mu, DELTA), rel=1e-9)
    assert pol.privacy_schedule(T, 4, relation="round", max_degree=2).events(T).grouped() == \
        {Gaussian(math.sqrt(2.0), 0.5): 49 * 3}


def test_hybrid_certificates_by_hand():
    pol = DPUCBN(epsilon=1.0)
    T = 64
    # an arm gains at most one item per round: the hybrid mechanism's own schedule at n = T items
    per_stream = HybridMechanism(1, 1, epsilon=1.0, rng=np.random.default_rng(0), ledger=None).privacy_schedule(T)
    assert pol.privacy_schedule(T, 4, relation="entry", max_degree=2).events(T) == per_stream
    assert pol.privacy_schedule(T, 4, relation="round", max_degree=2).events(T) == per_stream * 3
    e_entry = pol.privacy_schedule(T, 4, relation="entry", max_degree=2).epsilon(T, DELTA).value
    e_round = pol.privacy_schedule(T, 4, relation="round", max_degree=2).epsilon(T, DELTA).value
    assert e_entry <= 1.0 + 1e-9 and e_entry < e_round <= 3.0 + 1e-9


def test_structure_inputs_and_budget():
    assert streams_per_record(4, "entry") == 1
    assert streams_per_record(4, "round") == 4  # no graph given: the complete graph's K - 1
    assert streams_per_record(4, "round", graph=PATH) == 3
    assert PATH_ENV.structure() == {"max_degree": 2}
    pol = LazyDPTSN(epsilon=0.5)
    a = pol.privacy_schedule(100, 4, relation="round", graph=PATH).epsilon(100, DELTA).value
    b = pol.privacy_schedule(100, 4, relation="round", max_degree=2).epsilon(100, DELTA).value
    assert a == b
    for bad, match in [(dict(relation="row"), "relation"), (dict(relation="round", max_degree=4), "max_degree"),
                       (dict(relation="round", max_degree=-1), "max_degree"),
                       (dict(relation="round", max_degree=1, graph=PATH), "not both")]:
        with pytest.raises(ValueError, match=match):
            pol.privacy_schedule(100, 4, **bad)


# --- the ledger shows the footprint --------------------------------------------------------------
def _lazy_round_footprints(masks):
    """Hand count, per replicate, of the most batch releases touching one round's records: record
    positions from the masks, doubling batches [2^j - 1, 2^(j+1) - 1) of each stream, a batch
    released once its stream holds 2^(j+1) - 1 items."""
    pos = np.cumsum(masks, axis=0) - masks
    final = masks.sum(axis=0)
    batch = np.floor(np.log2(pos + 1)).astype(int)
    released = final[None] >= 2 ** (batch + 1) - 1
    return (masks & released).sum(axis=2).max(axis=0)


def test_ledger_footprint_equals_hand_count_under_both_relations():
    R, T = 6, 40
    book = Ledger(R, 4, tight=True, capacity=T)
    pol = LazyDPTSN(epsilon=0.5)
    _, _, _, masks = drive_graph(pol, PATH_ENV, T, R, seed=4, ledger=book)
    hand = _lazy_round_footprints(masks)
    assert hand.max() == 3  # the path's degree-2 arms are played, and their batches close
    for r in range(R):
        leaves, counts = book.record_multisets(r, relation="round")
        assert leaves == [Laplace(2.0, 1.0)] and counts.sum(axis=1).max() == hand[r]
        leaves, counts = book.record_multisets(r, relation="entry")
        assert counts.max() == 1  # every record in exactly one release
    assert np.allclose(book.realized_pure_epsilon(), 0.5)
    # and the round relation's realized epsilon composes the hand count's releases: at least the best
    # accountant's value for h x Lap(2), at most the pure sum 0.5 h (the ledger's closed forms sit between)
    got = book.realized_epsilon(DELTA, relation="round")
    best = np.array([best_epsilon(Laplace(2.0, 1.0) * int(h), DELTA).value for h in hand])
    assert np.all(best - 1e-9 <= got) and np.all(got <= 0.5 * hand + 1e-9)
    assert np.all(book.realized_epsilon(DELTA) <= 0.5 + 1e-9)


def test_gaussian_round_footprint_by_hand():
    R, T, c = 5, 30, 4.0
    book = Ledger(R, 4, capacity=T)
    _, _, _, masks = drive_graph(GaussianTSN(b=0, c=c), PATH_ENV, T, R, seed=2, ledger=book)
    # after round t, every arm holding k >= 1 records releases a draw in each round s = t+1..T of
    # sensitivity 1/(k+1), sigma sqrt(c/(k+1)): mu^2 += 1 / (c (k + 1)) with k its count before s
    before = np.cumsum(masks, axis=0) - masks  # (T, R, K) counts at each round's select
    per_release = np.where(before > 0, 1.0 / (c * (before + 1.0)), 0.0)
    later = np.cumsum(per_release[::-1], axis=0)[::-1]  # sum over s >= t
    later = np.concatenate([later[1:], np.zeros_like(later[:1])])  # s > t
    mu2 = (masks * later).sum(axis=2).max(axis=0)  # the worst round of each replicate
    want = [gdp_conversion.epsilon_for_delta(math.sqrt(m), DELTA) for m in mu2]
    assert book.realized_epsilon(DELTA, relation="round") == pytest.approx(want, rel=1e-9)


# --- realized <= certified, both relations, through the engine ------------------------------------
@pytest.mark.parametrize("policy", [LazyDPTSN(epsilon=0.5), DPUCBN(epsilon=1.0), GaussianTSN(b=1, c=2.0)], ids=repr)
@pytest.mark.parametrize("relation", ["entry", "round"])
def test_realized_never_exceeds_certified(policy, relation):
    env = GraphFeedback(Bernoulli(np.linspace(0.1, 0.9, 8)), ErdosRenyi(8, 0.4), graph_seed=3)
    T = 160
    cps = np.unique(np.r_[np.arange(1, T + 1, 9), 2 ** np.arange(8)])
    r = simulate(policy, env, T, 30, seed=7, checkpoints=cps, realized_points=10**6, ledger_replicates=None,
                 relation=relation)
    assert r.relation == relation and np.all(np.isfinite(r.realized_epsilon))
    assert np.all(r.realized_epsilon <= r.certified_closed_form[:, None] + 1e-9)
    assert np.nanmax(r.realized_epsilon) > 0


def test_redrawn_graphs_are_certified_at_the_models_degree_bound():
    # a graph redrawn every round may reach any degree the model allows (K - 1 for Erdos-Renyi)
    env = GraphFeedback(Bernoulli(np.linspace(0.1, 0.9, 6)), ErdosRenyi(6, 0.5), redraw=True)
    assert env.structure() == {"max_degree": 5}
    r = simulate(LazyDPTSN(epsilon=0.5), env, 60, 20, seed=2, realized_points=10**6, ledger_replicates=None,
                 relation="round")
    assert r.certified_epsilon[-1] == pytest.approx(best_epsilon(Laplace(2.0, 1.0) * 6, DELTA).value)
    assert np.all(r.realized_epsilon <= r.certified_closed_form[:, None] + 1e-9)


# --- planted bugs: noise removed or halved on side-observed streams ----------------------------------
def _first_round(policy, n, factor, monkeypatch, graph=nx.star_graph(5)):
    """Round 1 with all rewards 1 on the star graph (arm 0, the centre, is explored first) or the
    complete graph: every arm is revealed, so every stream's first record is released at once."""
    monkeypatch.setattr(NoiseSampler, "_noise_scale_factor", factor)
    env = GraphFeedback(Bernoulli([1.0] * 6), graph)
    run, *_ = drive_graph(policy, env, 10, n, seed=9, rounds=1)
    return run


@pytest.mark.parametrize("make, scale", [(lambda: LazyDPTSN(epsilon=0.5), 2.0), (lambda: DPUCBN(epsilon=0.5), 4.0)],
                         ids=["lazy_dp_ts_n", "dp_ucb_n"])
def test_side_observations_are_noised_with_the_declared_laplace(make, scale, monkeypatch):
    def pvalue(factor):
        run = _first_round(make(), 1500, factor, monkeypatch)
        mech = run.batches if hasattr(run, "batches") else run.hybrid
        assert np.all(mech.count == 1)  # every arm observed once (5 of 6 by side observation)
        return stats.kstest((mech.noisy_sum - 1.0).ravel(), stats.laplace(scale=scale).cdf).pvalue

    assert pvalue(1.0) > 1e-3
    assert pvalue(0.0) < 1e-12  # noise removed
    assert pvalue(0.5) < 1e-12  # scale halved


def test_gaussian_side_observations_have_the_declared_posterior_law(monkeypatch):
    def pvalue(factor):
        run = _first_round(GaussianTSN(c=4.0), 1500, factor, monkeypatch, graph=nx.complete_graph(6))
        assert np.all(run.counts == 1)
        theta = run.posterior.release(run.sums, run.counts)  # round 2's draw: k = 1 for every arm
        resid = (theta - 0.5) / math.sqrt(4.0 / 2.0)
        return stats.kstest(resid.ravel(), "norm").pvalue

    assert pvalue(1.0) > 1e-3
    assert pvalue(0.0) < 1e-12
    assert pvalue(0.5) < 1e-12


# --- black-box audit under the round relation -------------------------------------------------------
def _pull_counts(policy, graph, T):
    """mechanism(x, n, rng): n runs on the reward table x (T, K) -- each round's whole vector, of
    which the played arm's closed neighbourhood is revealed -- releasing the pull counts (n, K)."""
    offer = Offer(graph=graph)

    def mechanism(x, n, rng):
        run = policy.start(graph.shape[0], n, T, rng)
        rows = np.arange(n)
        counts = np.zeros((n, graph.shape[0]))
        for t in range(1, T + 1):
            arms = run.select(t, offer)
            observed = graph[arms]
            values = np.where(observed, x[t - 1][None, :], 0.0)
            run.observe(t, Feedback(arms, values[rows, arms], observed, values))
            counts[rows, arms] += 1
        return counts

    return mechanism


# Lazy-DP-TS's optimistic shift 3 log2(t) / (eps O) clips every mean to 1 at small eps and O, which
# hides the data; eps = 16 lets the released batch means show through within T = 6 rounds (and
# DP-UCB-N's hybrid error bound likewise). GaussianTSN's first play is random, so the differing
# entries are revealed only in some runs: still detectable at c = 0.5.
@pytest.mark.parametrize("policy", [LazyDPTSN(epsilon=16.0), DPUCBN(epsilon=16.0), GaussianTSN(b=0, c=0.5)],
                         ids=repr)
@pytest.mark.parametrize("relation", ["round", "entry"])
def test_audit_consistent_under_both_relations(policy, relation):
    T, graph = 6, PATH_ENV.graph
    x = np.full((T, 4), 0.0)
    xp = x.copy()
    if relation == "round":
        xp[0] = 1.0  # the first round's whole reward vector differs
    else:
        xp[0, 1] = 1.0  # one entry differs: arm 1 in round 1 (revealed by the first play, arm 0)
    claim = Claim.from_schedule(policy.privacy_schedule(T, 4, relation=relation, max_degree=2), T)
    res = Audit.mechanism(_pull_counts(policy, graph, T), x, xp, claim, budget=Budget(40_000), seed=3).run()
    assert res.verdict == "CONSISTENT", res.summary()


def test_registered_private_and_validated():
    for name, cls in [("lazy_dp_ts_n", LazyDPTSN), ("dp_ucb_n", DPUCBN), ("gaussian_ts_n", GaussianTSN)]:
        assert REGISTRY[name] is cls and cls.private and cls.requires == frozenset({"graph"})
    with pytest.raises(ValueError, match="epsilon"):
        LazyDPTSN(epsilon=0.0)
    with pytest.raises(ValueError, match="c must"):
        GaussianTSN(c=-1.0)
    cert = budget.epsilon("lazy_dp_ts_n", 1000, DELTA, 4, epsilon=0.5)
    assert cert.value == pytest.approx(0.5 + 2 * math.log1p(-DELTA))


def test_budget_and_invert_take_the_graph_or_its_max_degree():
    by_degree = budget.epsilon("lazy_dp_ts_n", 1000, DELTA, 4, epsilon=0.5, structure={"max_degree": 2},
                               relation="round")
    by_graph = budget.epsilon(LazyDPTSN(epsilon=0.5), 1000, DELTA, 4, structure={"graph": PATH}, relation="round")
    assert by_degree.value == by_graph.value == pytest.approx(best_epsilon(Laplace(2.0, 1.0) * 3, DELTA).value)
    assert budget.mu("gaussian_ts_n", 50, 4, c=4.0, structure={"max_degree": 2}, relation="round") == \
        pytest.approx(math.sqrt(3 * 49 / 8))
    # invert: Gaussian-TS-N's least c for 1-GDP over the round relation on the path graph, verified
    inv = budget.invert("gaussian_ts_n", 1.0, 50, solve_for="c", bounds=(0.1, 1e4), n_arms=4, target_mu=True,
                        structure={"max_degree": 2}, relation="round")
    assert inv.certificate <= 1.0 and inv.value == pytest.approx(3 * 49 / 2, rel=1e-6)  # mu^2 = 3 * 49 / (2c)
    inv = budget.invert("lazy_dp_ts_n", 1.0, 1000, solve_for="epsilon", bounds=(1e-3, 5.0), n_arms=4, delta=DELTA,
                        structure={"graph": PATH}, relation="round")
    assert inv.certificate <= 1.0 and 1.0 / 3 <= inv.value < 1.0  # 3 releases: more than 1/3 each, less than 1
    # affordable horizon under the round relation: 3 (h - 1) / (2 c) <= mu^2 = 4 at c = 4 -> h <= 11
    assert budget.affordable_horizon("gaussian_ts_n", 2.0, 4, target_mu=True, c=4.0, structure={"max_degree": 2},
                                     relation="round") == 11
    curve = budget.curve("gaussian_ts_n", [10, 50], DELTA, 4, c=4.0, structure={"max_degree": 2}, relation="round")
    assert curve[-1] == pytest.approx(gdp_conversion.epsilon_for_delta(math.sqrt(3 * 49 / 8), DELTA), rel=1e-9)
    with pytest.raises(ValueError, match="structure"):
        budget.epsilon("lazy_dp_ts_n", 1000, DELTA, 4, structure=3)
    with pytest.raises(ValueError, match="max_degree"):
        budget.epsilon("lazy_dp_ts_n", 1000, DELTA, 4, structure={"max_degree": 9}, relation="round")


def test_cli_budget_takes_the_max_degree_and_relation(capsys):
    from privbandit.cli import main

    argv = ["budget", "lazy_dp_ts_n", "--epsilon", "0.5", "--horizon", "100", "--n-arms", "4"]
    assert main(argv + ["--max-degree", "2", "--relation", "round"]) == 0
    out = capsys.readouterr().out
    assert "round relation, max degree 2" in out
    want = best_epsilon(Laplace(2.0, 1.0) * 3, DELTA)
    assert f"best: {want.value:.6g}" in out
    assert main(argv + ["--max-degree", "9", "--relation", "round"]) == 2
    assert "max_degree" in capsys.readouterr().err


@pytest.mark.parametrize("make", [lambda: LazyDPTSN(epsilon=1.0), lambda: DPUCBN(epsilon=1.0), lambda: GaussianTSN()])
def test_side_observations_outside_the_unit_interval_are_refused(make):
    # a run driven directly (not by the engine, which clips) must refuse a side observation of 5:
    # every certificate assumes records in [0, 1] (Gaussian-TS-N's posterior sum took it unchecked)
    policy = make()
    run = policy.start(2, 1, 10, np.random.default_rng(0), Ledger(1, 2))
    arms = run.select(1, Offer(graph=np.ones((2, 2), dtype=bool)))
    bad = Feedback(arms, np.array([0.5]), np.ones((1, 2), dtype=bool), np.array([[0.5, 5.0]]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        run.observe(1, bad)
    # an unobserved entry's value is ignored (it is not a record)
    unobserved = Feedback(arms, np.array([0.5]), np.array([[True, False]]), np.array([[0.5, 5.0]]))
    run.observe(1, unobserved)
