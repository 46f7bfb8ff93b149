"""UCB-N, UCB-MaxN, TS-N and TS-MaxN: bandits with side observations on a feedback graph.

* UCB-N and UCB-MaxN -- Caron, Kveton, Lelarge & Bhagat, "Leveraging Side Observations in
  Stochastic Bandits", UAI 2012 (ALGORITHMS.md 9 and 12.2): index muhat_i + sqrt(2 ln t / O_i) with
  O_i counting every observation of arm i (own plays and side observations); UCB-N plays the argmax,
  UCB-MaxN plays the arm of the argmax's closed neighbourhood with the best empirical mean.
* TS-N and TS-MaxN -- Tossou, Dimitrakakis & Dubhashi (2017, arXiv 1701.04238; seed 002 section 3.3):
  Beta(1 + S_i, 1 + F_i) posteriors over all observations; TS-N plays argmax theta, TS-MaxN plays the
  best empirical mean in the closed neighbourhood of argmax theta ("playing any arm of N_i reveals
  i anyway").

Every observed arm is updated every round. The graph arrives with each round's offer (a (K, K)
closed-neighbourhood adjacency, ``privbandit.envs.graphs``); the played arm's neighbourhood is
what the environment reveals. The engine refuses them on environments without a graph; a driver
that calls ``select(t)`` without an offer (the auditor's tape runs) gets the edgeless graph: every
neighbourhood is the arm itself, and the policies are their K-armed originals. Decision rules are the pure vectorised functions below, shared with
the private versions in :mod:`privbandit.policies.graph_private`.

Conventions (documented choices where the papers are silent): an arm never observed has index +inf
and empirical mean +inf (it is explored first; ties break toward the lowest arm index, like
``numpy.argmax``). Non-binary rewards in [0, 1] enter the Beta posterior through Agrawal & Goyal's
Bernoulli trick (a success with probability r), as :class:`~privbandit.policies.thompson.BetaTS`.
"""

from __future__ import annotations

import abc
import math

import numpy as np

from privbandit.policies._ts_kernels import beta_argmax
from privbandit.policies.base import Policy, PolicyRun, check_arms, check_rewards


# --- decision rules: pure functions of the state ---------------------------------------------
def empirical_means(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """S_i / O_i, and +inf where O_i = 0 (an unobserved arm is the most attractive to play)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.inf)


def ucb_n_index(sums: np.ndarray, counts: np.ndarray, t: int) -> np.ndarray:
    """Caron et al. (2012) UCB-N index muhat_i + sqrt(2 ln t / O_i); +inf where O_i = 0."""
    safe = np.maximum(counts, 1)
    return np.where(counts > 0, sums / safe + np.sqrt(2.0 * math.log(t) / safe), np.inf)


def best_in_neighbourhood(graph: np.ndarray, leaders: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Per replicate r, argmax of ``scores[r, j]`` over j in the closed neighbourhood of ``leaders[r]``.

    The "MaxN" step (Caron et al. 2012; seed 002 section 3.3): the leader is always a candidate, so
    the result is a neighbour of it (or itself) and playing it reveals the leader anyway.
    """
    return np.where(graph[leaders], scores, -np.inf).argmax(axis=1)


def graph_of(offer, n_arms: int, edgeless: np.ndarray) -> np.ndarray:
    """The round's (K, K) bool adjacency from ``offer.graph``; ``edgeless`` (the identity) without one.

    Without an offered graph no side observation exists: every arm's closed neighbourhood is itself
    and these policies are their K-armed originals (UCB-N is UCB1's index, TS-N is Beta-TS).
    """
    graph = None if offer is None else getattr(offer, "graph", None)
    if graph is None:
        return edgeless
    if not isinstance(graph, np.ndarray) or graph.shape != (n_arms, n_arms) or graph.dtype != bool:
        got = f"{graph.dtype} {graph.shape}" if isinstance(graph, np.ndarray) else type(graph).__name__
        raise ValueError(f"offer.graph must be a bool ({n_arms}, {n_arms}) adjacency, got {got}")
    if not graph.diagonal().all():  # O(K): the MaxN step's candidates always include the leader
        raise ValueError("offer.graph must hold closed neighbourhoods (a True diagonal: playing an arm reveals "
                         "its own reward), as privbandit.envs.graphs.check_adjacency returns them")
    return graph


def observed_entries(feedback, replicates: int, n_arms: int) -> tuple[np.ndarray, np.ndarray]:
    """(observed (R, K) bool, values (R, K)) of a feedback; the played arm only without side observations."""
    observed = getattr(feedback, "observed", None)
    if observed is None:
        rows = np.arange(replicates)
        observed = np.zeros((replicates, n_arms), dtype=bool)
        observed[rows, feedback.arms] = True
        values = np.zeros((replicates, n_arms))
        values[rows, feedback.arms] = feedback.rewards
        return observed, values
    return observed, np.where(observed, feedback.values, 0.0)


class GraphPolicyRun(PolicyRun):
    """Shared plumbing: the round's graph from the offer, observations as (R, K) masks."""

    def __init__(self, n_arms: int, replicates: int) -> None:
        self.n_arms, self.replicates = n_arms, replicates
        self.rows = np.arange(replicates)
        self.edgeless = np.eye(n_arms, dtype=bool)
        self.graph = self.edgeless

    def select(self, t: int, offer=None) -> np.ndarray:
        self.graph = graph_of(offer, self.n_arms, self.edgeless)
        return self.choose(t, self.graph)

    @abc.abstractmethod
    def choose(self, t: int, graph: np.ndarray) -> np.ndarray:
        """The arms of round ``t`` given the round's ``graph``."""

    def update(self, t, arms, rewards):
        """Bandit feedback only (no side observations): the played arm alone is observed."""
        observed = np.zeros((self.replicates, self.n_arms), dtype=bool)
        observed[self.rows, arms] = True
        values = np.zeros((self.replicates, self.n_arms))
        values[self.rows, arms] = rewards
        self.learn(t, observed, values)

    def observe(self, t, feedback) -> None:
        observed, values = observed_entries(feedback, self.replicates, self.n_arms)
        if not self.rewards_checked:
            # the side-observation path bypasses the validating update(): every revealed entry is a
            # record whose sensitivity assumes [0, 1] (unrevealed entries are zeroed, not records)
            check_rewards(values, t)
        self.learn(t, observed, values)

    @abc.abstractmethod
    def learn(self, t: int, observed: np.ndarray, values: np.ndarray) -> None:
        """Take in the revealed entries (``values`` is 0 where not ``observed``)."""


class _CountingRun(GraphPolicyRun):
    def __init__(self, n_arms, replicates, maxn: bool):
        super().__init__(n_arms, replicates)
        self.maxn = maxn
        self.sums = np.zeros((replicates, n_arms))
        self.counts = np.zeros((replicates, n_arms))

    def learn(self, t, observed, values):
        self.sums += values
        self.counts += observed


class _UCBNRun(_CountingRun):
    def choose(self, t, graph):
        leaders = ucb_n_index(self.sums, self.counts, t).argmax(axis=1)
        if not self.maxn:
            return leaders
        return best_in_neighbourhood(graph, leaders, empirical_means(self.sums, self.counts))


class _TSNRun(_CountingRun):
    def __init__(self, n_arms, replicates, maxn, rng):
        super().__init__(n_arms, replicates, maxn)
        self.rng = rng
        self.alpha = np.ones((replicates, n_arms))
        self.beta = np.ones((replicates, n_arms))

    def choose(self, t, graph):
        # rng.beta(alpha, beta).argmax(axis=1): the same draws on the same stream, from one compiled
        # kernel where the kernels run compiled (privbandit.policies._ts_kernels.beta_argmax)
        leaders = beta_argmax(self.rng, self.alpha, self.beta)
        if not self.maxn:
            return leaders
        return best_in_neighbourhood(graph, leaders, empirical_means(self.sums, self.counts))

    def learn(self, t, observed, values):
        super().learn(t, observed, values)
        rr, kk = np.nonzero(observed)
        # Bernoulli trick (Agrawal & Goyal 2012): the identity for {0, 1} rewards
        success = self.rng.random(rr.size) < values[rr, kk]
        self.alpha[rr, kk] += success
        self.beta[rr, kk] += ~success


class _GraphPolicy(Policy):
    requires = frozenset({"graph"})

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        """Non-private under every relation and graph structure (no finite certificate)."""
        return super().privacy_schedule(horizon, n_arms)

    def params(self):
        return {"policy": self.name}


class UCBN(_GraphPolicy):
    """UCB-N (Caron et al., UAI 2012): argmax muhat_i + sqrt(2 ln t / O_i) over all observations. Non-private."""

    name = "ucb_n"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _UCBNRun(n_arms, replicates, maxn=False)


class UCBMaxN(_GraphPolicy):
    """UCB-MaxN (Caron et al., UAI 2012): the best empirical mean in the closed neighbourhood of
    UCB-N's choice. Non-private."""

    name = "ucb_maxn"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _UCBNRun(n_arms, replicates, maxn=True)


class TSN(_GraphPolicy):
    """TS-N (Tossou, Dimitrakakis & Dubhashi 2017): Beta-Bernoulli Thompson sampling updating every
    observed arm. Non-private."""

    name = "ts_n"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _TSNRun(n_arms, replicates, False, rng)


class TSMaxN(_GraphPolicy):
    """TS-MaxN (Tossou, Dimitrakakis & Dubhashi 2017): the best empirical mean in the closed
    neighbourhood of the Thompson choice. Non-private."""

    name = "ts_maxn"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _TSNRun(n_arms, replicates, True, rng)


__all__ = ["UCBN", "UCBMaxN", "TSN", "TSMaxN", "empirical_means", "ucb_n_index", "best_in_neighbourhood",
           "GraphPolicyRun"]
