"""The feedback contract: what a learner sees before it chooses (:class:`Offer`) and after (:class:`Feedback`).

Per round t (1-based), for R lock-stepped replicates and K arms (docs/feedback.md):

1. ``offer = env_run.offer(t)``: an :class:`Offer` (contexts per arm, a feedback graph) or None;
2. ``arms = run.select(t)`` -- or ``run.select(t, offer)`` for a policy whose ``requires`` is
   non-empty -- shape (R,);
3. ``feedback = env_run.feedback(t, arms)``: the played arm's reward and, with side observations,
   the mask and values of every revealed (replicate, arm) entry;
4. ``run.update(t, arms, rewards)`` without side observations, ``run.observe(t, feedback)`` with.

The vocabulary of capabilities (``Policy.requires``, ``Environment.offers``) and of neighbouring
relations (``PrivacySchedule.relation``, ``Ledger.realized_epsilon(relation=...)``) lives here too.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from accountants import _validate

#: What an environment can offer before the choice and a policy can require.
CAPABILITIES: frozenset[str] = frozenset({"contexts", "graph"})

#: Neighbouring relations. "entry": neighbours differ in one revealed (round, arm) reward entry.
#: "round": neighbours differ in one round's whole reward vector (and its contexts). With bandit
#: feedback (one revealed entry per round) the two coincide; with side observations a round's
#: entries enter the streams of every arm observed that round, and those releases compose.
RELATIONS: tuple[str, ...] = ("entry", "round")


def check_relation(relation) -> str:
    """``relation`` if it is one of :data:`RELATIONS`, else ValueError naming the valid values."""
    return _validate.choice("relation", relation, RELATIONS)  # (an array is no relation either)


def check_capabilities(name: str, value) -> frozenset[str]:
    """A frozenset subset of :data:`CAPABILITIES`, or ValueError naming ``name``."""
    value = frozenset(value)
    unknown = value - CAPABILITIES
    if unknown:
        raise ValueError(f"{name} must be a subset of {sorted(CAPABILITIES)}, got unknown {sorted(unknown)}")
    return value


@dataclasses.dataclass(frozen=True, eq=False)
class Offer:
    """What every replicate sees in round t before choosing.

    Attributes:
        contexts: float array (R, K, d), one context vector per arm per replicate, or None.
        graph: (K, K) boolean adjacency of the round's feedback graph, shared by all replicates,
            with CLOSED neighbourhoods (diagonal True): playing arm i reveals the rewards of every j
            with ``graph[i, j]``. Symmetric for undirected graphs. An environment with a fixed graph
            returns the same array object every round, so policies may cache by identity.
    """

    contexts: np.ndarray | None = None
    graph: np.ndarray | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class Feedback:
    """What every replicate observes in round t after choosing.

    Attributes:
        arms: (R,) int, the arms played.
        rewards: (R,) float, the played arm's reward (clipped to [0, 1] by the engine before any
            policy sees it).
        observed: (R, K) bool mask of the entries revealed this round (the played arm's included),
            or None for bandit feedback (only the played arm's reward).
        values: (R, K) float rewards of the revealed entries (0 elsewhere; clipped like ``rewards``),
            or None when ``observed`` is None.
    """

    arms: np.ndarray
    rewards: np.ndarray
    observed: np.ndarray | None = None
    values: np.ndarray | None = None

    def __post_init__(self) -> None:
        # The mask is what every side-observation policy adds to its counts and inserts into its
        # mechanisms' streams: an int mask holding 2 (a self-loop counted twice) or a weight 0.5 would
        # be added as such -- a count k that is not the number of records, and Gaussian-TS-N's noise
        # c / (k + 1) calibrated for records it never saw. Checked once per round, here, in O(R).
        if self.observed is None:
            return
        observed, arms = self.observed, np.asarray(self.arms)
        if not isinstance(observed, np.ndarray) or observed.dtype != bool or observed.ndim != 2 \
                or arms.shape != (observed.shape[0],):
            got = f"{observed.dtype} {observed.shape}" if isinstance(observed, np.ndarray) else type(observed).__name__
            raise ValueError(f"feedback.observed must be a bool mask of shape (replicates, n_arms), one row per "
                             f"played arm (arms of shape {arms.shape}), got {got}")
        if np.shape(self.values) != observed.shape:
            raise ValueError(f"feedback.values must have the shape of feedback.observed {observed.shape}, "
                             f"got {np.shape(self.values)}")
        if arms.dtype.kind not in "iu" or not observed[np.arange(arms.size), arms].all():
            raise ValueError("feedback.observed must reveal every played arm's own entry (closed neighbourhoods: "
                             "playing an arm reveals its reward)")

    @property
    def side_observations(self) -> bool:
        """True when entries beyond the played arm's may be revealed (``observed`` is given)."""
        return self.observed is not None
