"""Private bandits with graph feedback: every arm's observation stream through an instrumented mechanism.

No paper has these (issue 15); each is a known private algorithm whose per-arm stream now holds
the arm's own pulls AND its side observations (every revealed entry of its closed neighbourhood):

* :class:`LazyDPTSN` -- Hu & Hegde's Lazy-DP-TS (UAI 2022, Algorithm 2; ALGORITHMS.md 6.2): fresh
  doubling batches, one Lap(1/eps) per batch sum (:class:`~privbandit.mechanisms.FreshBatchMean`),
  optimistic shift 3 log2(t)/(eps O) on the last closed batch's noisy mean, Beta posterior.
* :class:`DPUCBN` -- Tossou & Dimitrakakis's DP-UCB-Bound (AAAI 2016, Algorithm 1; ALGORITHMS.md
  4.2): one hybrid mechanism per arm (:class:`~privbandit.mechanisms.HybridMechanism`), index
  s_a/N_a + sqrt(2 ln t / N_a) + nu_a/N_a with nu_a the hybrid error bound at gamma = t^-4.
* :class:`GaussianTSN` -- Ou, Cummings & Avella Medina's (Modified) Gaussian TS (arXiv 2407.14879;
  ALGORITHMS.md 5.1-5.2): theta_i ~ N(S_i/(k_i+1), c/(k_i+1)) with k_i all observations of i,
  released by :class:`~privbandit.mechanisms.posterior.GaussianPosteriorRelease`.

Exploration before an arm has a private statistic (documented choice): the lowest-indexed arm
without one is played. Which arms have one depends only on past actions and the public graph, never
on rewards, so this rule is post-processing.

Privacy under the two neighbouring relations (DESIGN.md "Beyond K-armed stochastic feedback";
docs/policies_graph.md):

* ``relation="entry"``: neighbours differ in one revealed (round, arm) entry. It enters one arm's
  stream, exactly as a pulled reward does in the K-armed algorithm, and releases on other arms'
  streams are independent of it (parallel composition): the certificate is the K-armed
  algorithm's per-record schedule, with each stream holding at most t items after t rounds.
* ``relation="round"``: neighbours differ in one round's whole reward vector. The round reveals the
  entries of the played arm's closed neighbourhood: at most max_degree + 1 arms, chosen before the
  vector is drawn (so the same set under both neighbours). Its record therefore enters up to
  max_degree + 1 streams and their releases compose: the per-stream schedule, composed
  max_degree + 1 times. (Unrevealed entries influence nothing.)

``max_degree`` comes from the environment (``GraphFeedback.max_degree``) or the caller; without it
the worst case K - 1 (the complete graph) is used, valid for every graph.
"""

from __future__ import annotations

import math

import numpy as np

from accountants._validate import shown
from accountants import Certificate, _validate
from accountants.events import NO_EVENT, Event
from privbandit.mechanisms import FreshBatchMean, HybridMechanism
from privbandit.mechanisms.posterior import GaussianPosteriorRelease
from privbandit.feedback import check_relation
from privbandit.policies.base import Policy, PureEpsilonPolicy, check_arms, note_rounds
from privbandit.policies.dp_ucb import HybridSchedule, hybrid_error_bound
from privbandit.policies.gaussian_ts import GaussianTS, GaussianTSSchedule
from privbandit.policies.graph import GraphPolicyRun
from privbandit.policies.hu_hegde import LAZY_SHIFT, LazyDPTSSchedule, beta_draw
from privbandit.schedule import UNHASHABLE, PrivacySchedule, accountants_key

from privbandit.feedback import RELATIONS  # noqa: E402  (re-exported: the one list of relations)


def streams_per_record(n_arms: int, relation: str = "entry", max_degree: int | None = None, graph=None) -> int:
    """How many arm streams one record enters: 1 for "entry", max_degree + 1 for "round".

    ``graph`` (a closed adjacency or networkx graph) gives its own max degree; with neither it is the
    worst case n_arms - 1. ValueError names the parameter and its range.
    """
    check_relation(relation)  # (``not in`` alone: an array was numpy's "truth value ... is ambiguous")
    if graph is not None:
        from privbandit.envs.graphs import check_adjacency, max_degree as degree_of

        if max_degree is not None:
            raise ValueError("give max_degree or graph, not both")
        max_degree = degree_of(check_adjacency(graph, n_arms))
    if max_degree is None:
        max_degree = n_arms - 1
    try:  # a whole number (2.0 is fine; NaN and inf are not, and int() of them would raise unnamed)
        whole = _validate.count("max_degree", max_degree)
    except ValueError:
        whole = -1
    if not 0 <= whole <= n_arms - 1:
        raise ValueError(f"max_degree must be a whole number in [0, n_arms - 1 = {n_arms - 1}], got {shown(max_degree)}")
    return 1 if relation == "entry" else whole + 1


class StreamsSchedule(PrivacySchedule):
    """A per-stream schedule composed over ``streams`` arm streams (the "round" relation).

    Each of the record's streams gets the worst per-stream multiset (a valid upper bound for every
    stream), so the composition of ``streams`` copies bounds the record's true multiset. With one
    stream ("entry") it is the base schedule itself, closed forms included.
    """

    def __init__(self, base: PrivacySchedule, streams: int, relation: str) -> None:
        self.base, self.streams, self.relation = base, streams, relation
        self._cache: dict = {}

    def events(self, rounds: int) -> Event:
        ev = self.base.events(rounds)
        if ev == NO_EVENT or self.streams == 1:
            return ev
        return ev * self.streams

    def epsilon(self, rounds: int, delta: float, accountants=None) -> Certificate:
        if self.streams == 1:
            return self.base.epsilon(rounds, delta, accountants)
        if rounds <= 0:
            return Certificate(0.0, "none", {})
        # memoised by event: the engine asks at every checkpoint and the Laplace and hybrid schedules
        # take few distinct events over a run
        acc_key = accountants_key(accountants)
        if acc_key is UNHASHABLE:
            return PrivacySchedule.epsilon(self, rounds, delta, accountants)
        key = (self.events(rounds), float(delta), acc_key)
        cert = self._cache.get(key)
        if cert is None:
            cert = self._cache[key] = PrivacySchedule.epsilon(self, rounds, delta, accountants)
        return cert

    def mu(self, rounds: int) -> float:
        return math.sqrt(self.streams) * self.base.mu(rounds)


def _explore_first(has_stat: np.ndarray, choice: np.ndarray) -> np.ndarray:
    """The lowest arm without a private statistic where there is one, else ``choice``."""
    missing = ~has_stat
    return np.where(missing.any(axis=1), missing.argmax(axis=1), choice)


# --- Lazy-DP-TS-N --------------------------------------------------------------------------------
class _LazyDPTSNRun(GraphPolicyRun):
    def __init__(self, policy, n_arms, replicates, rng, ledger):
        super().__init__(n_arms, replicates)
        self.eps, self.rng, self.ledger = policy.epsilon, rng, ledger
        self.batches = FreshBatchMean(replicates, n_arms, epsilon=policy.epsilon, rng=rng, ledger=ledger,
                                      batches="doubling", name="lazy_dp_ts_n/batch", exact=policy.exact)

    def choose(self, t, graph):
        o = np.maximum(self.batches.batch_size, 1).astype(float)
        shift = LAZY_SHIFT * math.log2(t) / (self.eps * o)
        mubar = np.clip(self.batches.noisy_sum / o + shift, 0.0, 1.0)
        theta = beta_draw(self.rng, mubar, o)
        return _explore_first(self.batches.batch_size > 0, theta.argmax(axis=1))

    def learn(self, t, observed, values):
        positions = self.batches.count.copy()
        self.batches.insert(values, observed)
        note_rounds(self.ledger, t, observed, positions)


class LazyDPTSN(PureEpsilonPolicy):
    """Lazy-DP-TS with side observations (Hu & Hegde 2022, Alg. 2, on every observed arm's stream).

    Parameters: ``epsilon`` in (0, inf) (each record in one Lap(1/eps) batch release); ``exact``.
    Certificate: one Laplace release per record ("entry": eps + 2 ln(1 - delta) exactly) or
    max_degree + 1 of them ("round"); see the module docstring.
    """

    name = "lazy_dp_ts_n"
    requires = frozenset({"graph"})
    claim_source = "Hu & Hegde (2022), Theorem 3, per observed entry (no paper covers side observations)"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _LazyDPTSNRun(self, n_arms, replicates, rng, ledger)

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        streams = streams_per_record(n_arms, relation, max_degree, graph)
        return StreamsSchedule(LazyDPTSSchedule(self.epsilon, self.exact), streams, relation)


# --- DP-UCB-N --------------------------------------------------------------------------------------
class _DPUCBNRun(GraphPolicyRun):
    def __init__(self, policy, n_arms, replicates, rng, ledger):
        super().__init__(n_arms, replicates)
        self.epsilon, self.ledger = policy.epsilon, ledger
        self.counts = np.zeros((replicates, n_arms), dtype=np.int64)
        self.hybrid = HybridMechanism(replicates, n_arms, epsilon=policy.epsilon, rng=rng, ledger=ledger,
                                      name="dp_ucb_n/hybrid", exact=policy.exact)

    def choose(self, t, graph):
        n = np.maximum(self.counts, 1)
        # gamma = t^-4: ln(4 / gamma) = ln 4 + 4 ln t (ALGORITHMS.md 4.1-4.2)
        nu = hybrid_error_bound(self.counts, math.log(4.0) + 4.0 * math.log(t), self.epsilon)
        index = (self.hybrid.noisy_sum + nu) / n + np.sqrt(2.0 * math.log(t) / n)
        return _explore_first(self.counts > 0, index.argmax(axis=1))

    def learn(self, t, observed, values):
        positions = self.counts.copy()
        self.hybrid.insert(values, observed)
        self.counts += observed
        note_rounds(self.ledger, t, observed, positions)


class DPUCBN(PureEpsilonPolicy):
    """DP-UCB-Bound with side observations (Tossou & Dimitrakakis 2016, Alg. 1, on every observed
    arm's stream): one hybrid mechanism per arm at ``epsilon``.

    Certificate: the hybrid mechanism's schedule at n(t) = t items (an arm gains at most one item per
    round), once per record ("entry") or max_degree + 1 times ("round").
    """

    name = "dp_ucb_n"
    requires = frozenset({"graph"})
    claim_source = "Tossou & Dimitrakakis (2016), Theorem 3.1, per observed entry (no paper covers side observations)"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _DPUCBNRun(self, n_arms, replicates, rng, ledger)

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        streams = streams_per_record(n_arms, relation, max_degree, graph)
        return StreamsSchedule(HybridSchedule(self.epsilon, lambda t: t, self.exact), streams, relation)


# --- Gaussian-TS-N ---------------------------------------------------------------------------------
class _GaussianTSNRun(GraphPolicyRun):
    def __init__(self, policy, n_arms, replicates, horizon, rng, ledger):
        super().__init__(n_arms, replicates)
        self.b, self.ledger = policy.b, ledger
        self.sums = np.zeros((replicates, n_arms))
        self.counts = np.zeros((replicates, n_arms))
        releasing = max(1, horizon - n_arms * policy.b)
        self.posterior = GaussianPosteriorRelease(replicates, n_arms, c=policy.c, rng=rng, ledger=ledger,
                                                  name="gaussian_ts_n/posterior", block=min(256, releasing))

    def choose(self, t, graph):
        if t <= self.n_arms * self.b:  # pre-pull phase: arm i is played b times in a row
            return np.full(self.replicates, (t - 1) // self.b, dtype=np.intp)
        return self.posterior.release(self.sums, self.counts).argmax(axis=1)

    def learn(self, t, observed, values):
        positions = self.counts.astype(np.int64)
        self.sums += values
        self.counts += observed
        note_rounds(self.ledger, t, observed, positions)


class GaussianTSN(GaussianTS):
    """Gaussian-prior TS with side observations (Ou et al. 2024, Alg. 1/2, with k_i counting all
    observations of arm i): ``b`` pre-pulls per arm, variance factor ``c``.

    Certificate (GDP-exact): each round every arm holding k >= max(b, 1) records releases a
    1/sqrt(c (k + 1))-GDP draw, n(t) = t - 1 (b = 0) or t - K b releases after a record is observed
    (as :class:`GaussianTS`: side observations only raise k). "entry": mu = sqrt(n(t) / (c (max(b,1)+1)));
    "round": sqrt(max_degree + 1) times that.
    """

    name = "gaussian_ts_n"
    requires = frozenset({"graph"})

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        if horizon < n_arms * self.b:
            raise ValueError(f"horizon must be >= n_arms * b = {shown(n_arms * self.b)} (the pre-pull phase), got {shown(horizon)}")
        return _GaussianTSNRun(self, n_arms, replicates, horizon, rng, ledger)

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        streams = streams_per_record(n_arms, relation, max_degree, graph)
        return StreamsSchedule(GaussianTSSchedule(self.b, self.c, n_arms), streams, relation)

    def claimed_epsilon(self, horizon, n_arms, delta):
        return None  # no paper covers side observations


PRIVATE_GRAPH_POLICIES: tuple[type[Policy], ...] = (LazyDPTSN, DPUCBN, GaussianTSN)

__all__ = ["LazyDPTSN", "DPUCBN", "GaussianTSN", "StreamsSchedule", "streams_per_record", "RELATIONS",
           "PRIVATE_GRAPH_POLICIES"]
