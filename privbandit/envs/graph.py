"""Stochastic arms with graph feedback: playing arm i also reveals the rewards of its neighbours.

Tossou, Dimitrakakis & Dubhashi (2017, arXiv 1701.04238; seed 002 section 3.3), after Caron,
Kveton, Lelarge & Bhagat (UAI 2012): an undirected graph over the arms, fixed or redrawn every
round; playing I_t yields the reward Y_{t, I_t} and reveals Y_{t, j} for every j in the closed
neighbourhood of I_t. Rewards of different arms (and rounds) are independent draws of the arms'
laws -- any :class:`~privbandit.envs.base.StationaryEnvironment` sampled by inverse CDF
(Bernoulli, truncated exponential, clipped Gaussian).

Only the revealed entries are drawn (one variate per revealed (replicate, arm) entry, in
row-major order), so a round costs O(R (max degree + 1)), not O(R K), at K = 1000 arms.
"""

from __future__ import annotations

import numpy as np

from accountants._validate import shown
from privbandit.envs.base import EnvironmentRun, StationaryEnvironment, library_code
from privbandit.feedback import Feedback, Offer
from privbandit.seeding import check_seed
from privbandit.envs.graphs import GraphModel, check_adjacency, max_degree


class GraphFeedback(StationaryEnvironment):
    """``arms`` (a stationary environment: the reward laws) observed through a feedback ``graph``.

    ``graph``: a (K, K) adjacency matrix or networkx graph (fixed), or a :class:`GraphModel`. A model
    is drawn once from ``graph_seed`` (``redraw=False``: the same graph every round, known before
    the run so budgets can use its max degree) or afresh every round from the run's generator
    (``redraw=True``; certificates then use the model's ``max_degree_bound``).
    """

    name = "graph_feedback"
    offers = frozenset({"graph"})

    def __init__(self, arms: StationaryEnvironment, graph, *, redraw: bool = False, graph_seed: int = 0) -> None:
        if not isinstance(arms, StationaryEnvironment) or not hasattr(arms, "_transform"):
            raise ValueError("arms must be a stationary environment sampled by inverse CDF "
                             f"(Bernoulli, TruncatedExponential, ClippedGaussian), got {type(arms).__name__}")
        if not isinstance(redraw, bool):
            raise ValueError(f"redraw must be True or False, got {shown(redraw)}")
        super().__init__(arms.means)
        self.arms = arms
        self.redraw = redraw
        self.graph_seed = check_seed("graph_seed", graph_seed)
        if isinstance(graph, GraphModel):
            if graph.n != arms.n_arms:
                raise ValueError(f"graph must have n_arms = {arms.n_arms} nodes, got {graph.n}")
            self.model = graph
            self.graph = None if redraw else graph.sample(np.random.default_rng(graph_seed))
        else:
            if redraw:
                raise ValueError("redraw=True needs a GraphModel to draw from, not a fixed graph")
            self.model = None
            self.graph = check_adjacency(graph, arms.n_arms)

    @property
    def rewards_in_unit_interval(self) -> bool:
        """The arms' promise, judged at each look (once per run): it holds for the library's own arm
        environments only (see envs.base.unit_rewards), and only while their attributes keep it -- the
        rewards are drawn by ``arms._transform`` at run time, so a TruncatedExponential whose rates were
        changed after this environment was built must not pass as [0, 1] on a flag read at construction."""
        arms = self.arms
        return bool(arms.rewards_in_unit_interval) and library_code(arms, ("start",)) and self._own_model()

    def _own_model(self) -> bool:
        """Whether the graphs come from the library's code: a fixed (checked) graph, or one of
        privbandit's models. A user's :class:`GraphModel` runs its ``sample`` every round of a redrawn
        run: nothing it draws or changes is taken on trust (see GraphFeedbackRun)."""
        return self.model is None or library_code(self.model, ("sample", "max_degree_bound"))

    @property
    def max_degree(self) -> int:
        """The largest degree of any graph this environment offers (closed neighbourhoods hold at most
        max_degree + 1 arms): the fixed graph's own, or the model's bound when redrawn."""
        return max_degree(self.graph) if self.graph is not None else self.model.max_degree_bound

    def structure(self) -> dict:
        """Schedule keywords (docs/feedback.md): the max degree bounds how many arm streams one
        round's reward vector enters (the "round" relation)."""
        return {"max_degree": self.max_degree}

    def start(self, replicates, rng):
        return GraphFeedbackRun(self, replicates, rng)

    def params(self) -> dict:
        out = {"environment": self.name, "arms": self.arms.params(), "redraw": self.redraw,
               "max_degree": self.max_degree}
        if self.model is not None:
            out["graph"] = self.model.params()
            out["graph_seed"] = self.graph_seed
        return out


class GraphFeedbackRun(EnvironmentRun):
    """One run: the graph of each round and the revealed entries of the played arms' neighbourhoods."""

    def __init__(self, env: GraphFeedback, replicates: int, rng: np.random.Generator) -> None:
        # Rows of a checked graph whose max degree is declared, or of the library's models' draws
        # (within their max_degree_bound by construction), reveal at most max_degree + 1 entries. A
        # user's model is not taken at its word: one whose max_degree_bound said 1 while it drew the
        # complete graph made DP-UCB-N's and Lazy-DP-TS-N's "round" certificates 2.0 for a realized
        # spend of 6.0 (session 11); the engine now counts every round's reveals against the bound.
        self.reveals_within_structure = env._own_model()
        self.env, self.rng = env, rng
        self.rows = np.arange(replicates)
        self._graph, self._graph_round = env.graph, 0
        self._normal = bool(getattr(env.arms, "_normal", False))

    def graph(self, t: int) -> np.ndarray:
        """The (K, K) closed adjacency of round ``t`` (the same read-only array every round when fixed)."""
        if self.env.redraw and self._graph_round != t:
            self._graph, self._graph_round = self.env.model.sample(self.rng), t
        return self._graph

    def reveal(self, t: int, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rewards (R,), observed (R, K) bool, values (R, K)) of round ``t`` when replicate r plays
        ``arms[r]``: every arm of its closed neighbourhood is revealed (0 where not revealed)."""
        observed = self.graph(t)[arms]
        rr, kk = np.nonzero(observed)
        u = self.rng.standard_normal(rr.size) if self._normal else self.rng.random(rr.size)
        values = np.zeros(observed.shape)
        values[rr, kk] = self.env.arms._transform(u, kk)
        return values[self.rows, arms], observed, values

    def rewards(self, t, arms):
        return self.reveal(t, arms)[0]

    def offer(self, t: int) -> Offer:
        return Offer(graph=self.graph(t))

    def feedback(self, t: int, arms: np.ndarray) -> Feedback:
        rewards, observed, values = self.reveal(t, arms)
        return Feedback(arms, rewards, observed, values)


__all__ = ["GraphFeedback", "GraphFeedbackRun"]
