"""The policy contract.

A :class:`Policy` is an immutable, validated configuration. It *decides* (through the
:class:`PolicyRun` it starts) and *declares* its privacy schedule; it never computes an epsilon
(DESIGN.md, "Layers"). A run holds state arrays of shape (replicates, arms) and advances all
replicates in lock-step:

* ``select(t)`` returns the arm of every replicate for round ``t`` (1-based), shape (replicates,);
* ``update(t, arms, rewards)`` feeds back the rewards, already clipped to [0, 1] by the engine.
  A run driven directly (``start().update()``) checks them itself: every subclass's ``update`` is
  wrapped once, here, by :func:`check_rewards` (a reward outside [0, 1] or NaN is a ValueError, as
  every sensitivity analysis assumes [0, 1]); the engine, which has already clipped or checked
  them, sets ``rewards_checked`` on the run to skip that work on its hot path.

The feedback contract (privbandit/feedback.py, docs/feedback.md) adds, without changing the above:

* ``requires`` (class attribute): the offers a policy needs, a subset of {"contexts", "graph"}; a
  policy with a non-empty ``requires`` is called as ``select(t, offer)``, every other as ``select(t)``;
* ``observe(t, feedback)``: called instead of ``update`` when the environment reveals side
  observations; the default passes the played arms' rewards to ``update``;
* ``privacy_schedule(horizon, n_arms, **structure)``: structure keywords (``relation=``,
  ``max_degree=``, ...) are passed only to policies that take them;
* :func:`note_rounds`: tells the ledger the round of inserted records (round-level accounting).

Rounds committed ahead (issue 19; docs/feedback.md, "Planned rounds"), optional, for policies whose
arms over a stretch of rounds do not depend on the rewards observed in it:

* ``plan(t, limit)`` -> arms (n, R), 1 <= n <= ``limit``, or None (the default: no commitment). It
  stands for ``select(t), ..., select(t + n - 1)``: the run commits that those calls, interleaved
  with the updates of rounds t .. t + n - 1, would return these rows *whatever those rewards are*,
  and it performs their side effects (an EXP3 batch's arm draw) exactly as they would;
* ``update_block(t, arms, rewards)`` with arms, rewards (n, R): exactly ``update(t + j, arms[j],
  rewards[j])`` for j = 0 .. n - 1 in order -- the same state, the same noise draws in the same
  order, the same ledger records (bit-identical). A planning run keeps ONE implementation: its
  ``update`` is ``update_block`` of one round (or both are built from the same pieces).

The engine plans only on the plain contract (bandit feedback, no per-round regret); whoever drives
a run may always ignore ``plan`` and call ``select``/``update`` round by round instead. What the
engine cannot check is the commitment itself: it cannot know what ``select`` would have returned
after rewards it never fed, so a ``plan`` that lies silently changes the run (tests compare every
planner with its own per-round path, ``tests/privbandit/test_engine_plan.py``). It does check the
block's shape and that n lies in [1, limit].

Every noise draw of a private policy happens inside a mechanism of ``privbandit.mechanisms`` that
reports it to the ledger the run was started with.
"""

from __future__ import annotations

import abc
import functools
import inspect
import weakref
from typing import Any, ClassVar

import numpy as np

from accountants._validate import NOT_NUMBERS, shown
from accountants import _validate
from privbandit.feedback import Feedback, check_relation
from privbandit.schedule import NonPrivateSchedule, PrivacySchedule


def check_rewards(rewards, t=None) -> np.ndarray:
    """``rewards`` as a float array, or ValueError unless every entry lies in [0, 1] (NaN fails).

    The one place a policy run validates its feedback: the sensitivity of every private policy's
    releases is computed for rewards in [0, 1], so a reward of 5 would silently break its privacy.
    """
    # (np.asarray(rewards, dtype=float) read "0.5" as 0.5 and True as 1.0, and a Decimal as a float)
    values = rewards if type(rewards) is np.ndarray and rewards.dtype.kind == "f" else _validate.real_array("rewards", rewards)
    if values.size and not (values.min() >= 0.0 and values.max() <= 1.0):  # NaN fails both
        bad = values[~((values >= 0.0) & (values <= 1.0))].ravel()[0]
        where = "" if t is None else f" in round {t}"
        raise ValueError(f"rewards must lie in [0, 1], got {float(bad)!r}{where} (clip them first, or run the "
                         "policy through privbandit.simulate, which clips)")
    return values


#: (replicates, arms) of every run started through ``Policy.start`` (wrapped by ``Policy.__init_subclass__``),
#: kept beside the run rather than on it: a deployment's snapshot compares a run's attributes with a fresh
#: run's, and stores written before session 18 hold runs without such an attribute
_RUN_SHAPES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def check_pulls(run, arms, rewards: np.ndarray, block: bool = False) -> np.ndarray:
    """``arms`` as an integer array matching ``rewards`` -- shape (replicates,), or (n, replicates) for a
    block -- with every arm in [0, arms), or ValueError naming ``arms`` / ``rewards`` and the valid shape
    and range (session 18, s18/fuzz). Driven directly, a run took an arm of 5 (of 2) or -1 silently (numpy
    indexing wraps -1 to the last arm: a reward credited to another arm), hung on one (DP-TS), failed
    half-way through a shorter array (Beta-TS: its counts updated, its sums not -- every later round then
    differed from a run never given the bad call), or raised numba's TypingError for 2-d rewards. Checked
    up front, so a refused call changes nothing. Runs not started through ``Policy.start`` (unknown shape)
    are not checked here."""
    try:
        shape = _RUN_SHAPES.get(run)
    except TypeError:  # (a run type that cannot be weakly referenced or hashed)
        shape = None
    if shape is None:
        return arms
    replicates, n_arms = shape
    want = "(n, {0})".format(replicates) if block else f"({replicates},)"
    if (rewards.ndim != 2 or rewards.shape[1] != replicates) if block else rewards.shape != (replicates,):
        raise ValueError(f"rewards must have shape {want} (one per replicate), got shape {rewards.shape}")
    values = np.asarray(arms)
    if values.shape != rewards.shape or values.dtype.kind not in "iu":
        raise ValueError(f"arms must be an integer array of shape {rewards.shape} (one arm per replicate), got "
                         f"{values.dtype} of shape {values.shape}")
    if values.size and (values.min() < 0 or values.max() >= n_arms):
        raise ValueError(f"arms must lie in [0, {n_arms}) (the arms), got {int(values.min())}..{int(values.max())}")
    return values


def _validating(update, block: bool = False):
    @functools.wraps(update)
    def checked_update(self, t, arms, rewards, *args, **kwargs):
        # extra arguments (e.g. the contextual runs' replay ``mask``) pass through unchanged; every
        # replicate's reward is still checked, which is stricter than checking the masked ones only
        if not self.rewards_checked:
            rewards = check_rewards(rewards, t)
            arms = check_pulls(self, arms, rewards, block)
        return update(self, t, arms, rewards, *args, **kwargs)

    checked_update.validates_rewards = True
    return checked_update


def _recording_shape(start):
    """``Policy.start`` recording the run's (replicates, arms) for :func:`check_pulls`."""

    @functools.wraps(start)
    def recorded_start(self, n_arms, replicates, *args, **kwargs):
        run = start(self, n_arms, replicates, *args, **kwargs)
        try:
            _RUN_SHAPES[run] = (int(replicates), int(n_arms))
        except TypeError:
            pass
        return run

    recorded_start.records_shape = True
    return recorded_start


class PolicyRun(abc.ABC):
    """The state of one policy across lock-stepped replicates.

    Every subclass's ``update`` validates its rewards through :func:`check_rewards` (wrapped in by
    ``__init_subclass__``) unless ``rewards_checked`` is set -- by the engine, which clips them.
    """

    #: True when whoever drives the run guarantees rewards in [0, 1] (the engine sets it)
    rewards_checked: bool = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        update = cls.__dict__.get("update")
        if update is not None and not getattr(update, "__isabstractmethod__", False) \
                and not getattr(update, "validates_rewards", False):
            cls.update = _validating(update)
        block = cls.__dict__.get("update_block")
        if block is not None and not getattr(block, "validates_rewards", False):
            cls.update_block = _validating(block, block=True)

    @abc.abstractmethod
    def select(self, t: int) -> np.ndarray:
        """Arms of every replicate for round ``t``, shape (R,). Policies with a non-empty
        ``requires`` define ``select(self, t, offer)`` and receive the round's ``Offer``."""

    @abc.abstractmethod
    def update(self, t: int, arms: np.ndarray, rewards: np.ndarray) -> None: ...

    def plan(self, t: int, limit: int) -> np.ndarray | None:
        """The arms (n, R) of rounds t .. t + n - 1, 1 <= n <= ``limit``, that this run commits to
        whatever the rewards of those rounds (it then stands for their ``select`` calls), or None:
        no commitment (the default): the caller selects round by round (the engine to the end of its
        current stretch of rounds, then asks again). See the module docstring."""
        return None

    def update_block(self, t: int, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Rounds t .. t + n - 1 at once, arms and rewards (n, R): exactly ``update(t + j, arms[j],
        rewards[j])`` for j = 0 .. n - 1 (this default does just that). A run that plans overrides it
        as its one implementation (its ``update`` being the block of one round). Rewards are checked
        as ``update`` checks them unless ``rewards_checked``."""
        for j in range(arms.shape[0]):
            self.update(t + j, arms[j], rewards[j])

    def observe(self, t: int, feedback: Feedback) -> None:
        """Learn from a round with side observations (``feedback.observed`` is not None).

        The default ignores the side observations and learns from the played arms only, so
        policies that have no use for them need not change.
        """
        self.update(t, feedback.arms, feedback.rewards)


HORIZON_MAX = 10**30
"""The longest horizon a schedule is laid out for (privbandit.budget certifies up to it too): more than
10^12 rounds a second for the age of the universe; beyond it some schedules' closed forms leave the
floats (a 400-digit horizon raised OverflowError converting it to float)."""


def _bounded_horizon(privacy_schedule):
    """``privacy_schedule`` refusing, with a ValueError naming ``horizon``, a horizon beyond
    :data:`HORIZON_MAX` (every other value passes through to the policy's own handling)."""

    @functools.wraps(privacy_schedule)
    def bounded(self, horizon, *args, **kwargs):
        if isinstance(horizon, (int, float, np.integer, np.floating)) and not isinstance(horizon, NOT_NUMBERS) \
                and horizon > HORIZON_MAX:
            raise ValueError(f"horizon must be a whole number in [1, {HORIZON_MAX:.0e}], got {_validate.shown(horizon)}")
        return privacy_schedule(self, horizon, *args, **kwargs)

    bounded.bounds_horizon = True
    return bounded


class Policy(abc.ABC):
    """A bandit algorithm's configuration; subclasses document their source (paper, algorithm, eq.).

    Every subclass's ``privacy_schedule`` refuses horizons beyond :data:`HORIZON_MAX` (wrapped in by
    ``__init_subclass__``), so the public method fails with a named ValueError, never an overflow.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        schedule = cls.__dict__.get("privacy_schedule")
        if schedule is not None and not getattr(schedule, "bounds_horizon", False):
            cls.privacy_schedule = _bounded_horizon(schedule)
        start = cls.__dict__.get("start")
        if start is not None and not getattr(start, "__isabstractmethod__", False) \
                and not getattr(start, "records_shape", False):
            cls.start = _recording_shape(start)

    name: ClassVar[str] = "policy"
    private: ClassVar[bool] = False
    #: False for private policies whose randomness is not noise draws (e.g. EXP3's arm sampling):
    #: their certificate is a proof about the sampling, and the engine keeps no ledger for them.
    records_releases: ClassVar[bool] = True
    #: Offers this policy needs from the environment (subset of {"contexts", "graph"}).
    requires: ClassVar[frozenset] = frozenset()

    @abc.abstractmethod
    def start(self, n_arms: int, replicates: int, horizon: int, rng: np.random.Generator,
              ledger=None) -> PolicyRun:
        """A fresh run; ``ledger`` (a ``privbandit.ledger.Ledger`` or None) receives every noise draw."""

    @_bounded_horizon
    def privacy_schedule(self, horizon: int, n_arms: int) -> PrivacySchedule:
        """The worst-case per-record releases over ``horizon`` rounds; non-private by default.

        Policies for structured feedback extend the signature with keywords (``relation="entry"``
        or ``"round"``, ``max_degree=`` for graphs, ...); :func:`schedule_for` passes them only
        when the environment has structure.
        """
        return NonPrivateSchedule()

    def claimed_epsilon(self, horizon: int, n_arms: int, delta: float) -> float | None:
        """The epsilon the source paper claims for this configuration (None if it claims none)."""
        return None

    def params(self) -> dict[str, Any]:
        """The configuration, for result records."""
        return {"policy": self.name}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items() if k != "policy")
        return f"{type(self).__name__}({args})"


class PureEpsilonPolicy(Policy):
    """A private policy parameterized by the pure epsilon its paper proves (``claim_source``), plus
    the floating-point-safe noise flag ``exact``. Subclasses add parameters by extending
    ``__init__`` (calling this one) and :meth:`extra_params`."""

    private = True
    claim_source: ClassVar[str] = "the source paper"

    def __init__(self, epsilon: float = 1.0, exact: bool = False):
        self.epsilon = check_epsilon(epsilon)
        self.exact = check_flag("exact", exact)

    def claimed_epsilon(self, horizon, n_arms, delta):
        """The paper's theorem (``claim_source``): pure epsilon-DP, the same at every delta."""
        return self.epsilon

    def extra_params(self) -> dict[str, Any]:
        """Parameters beyond epsilon and exact, for :meth:`params`."""
        return {}

    def params(self) -> dict[str, Any]:
        return {"policy": self.name, "epsilon": self.epsilon, **self.extra_params(), "exact": self.exact}


def check_positive(name: str, value) -> float:
    """A real number in (0, inf), or ValueError naming ``name`` and the range (epsilons, constants)."""
    return _validate.positive(name, value)


#: the least epsilon a private policy accepts. Below it a noise scale ``c / epsilon`` (c up to a few
#: thousand: log factors of 2^63 rounds, d^2 streams) overflows the floats, or the per-release
#: epsilon ``1 / scale`` the ledger records underflows to 0; both used to surface mid-run as a
#: mechanism's "scale" or the ledger's error. 1e-300 leaves a factor 1e8 of headroom for c.
EPSILON_FLOOR = 1e-300

#: the largest epsilon a private policy accepts. The ledger composes per-record sums of eps^2 (KOV,
#: Kairouz et al. 2015 Thm 3.5) in difference arrays: past eps ~ 1e154 the square overflows, inf - inf
#: turns the realized spend into NaN, and a record that spent 1e200 was reported as spending 0. 1e100
#: keeps eps^2 summed over 1e18 records finite (an epsilon this large protects nothing anyway).
EPSILON_CEILING = 1e100


def check_epsilon(value, floor: float = EPSILON_FLOOR) -> float:
    """A private policy's ``epsilon``: a real number in [floor, EPSILON_CEILING], or ValueError naming
    ``epsilon`` and that range (an epsilon below ``floor`` is not representable as a noise scale, one
    above the ceiling not as a sum of squares in the ledger)."""
    epsilon = check_positive("epsilon", value)
    if epsilon < floor:
        raise ValueError(f"epsilon must lie in [{floor:g}, {EPSILON_CEILING:g}]: below {floor:g} the noise scale "
                         f"it calibrates leaves the floating-point range; got {shown(epsilon)}")
    if epsilon > EPSILON_CEILING:
        raise ValueError(f"epsilon must lie in [{floor:g}, {EPSILON_CEILING:g}]: above {EPSILON_CEILING:g} the "
                         f"ledger's sums of squared epsilons leave the floating-point range; got {shown(epsilon)}")
    return epsilon


def check_unit(name: str, value) -> float:
    """A real number in (0, 1), or ValueError naming ``name`` and the range (failure probabilities)."""
    return _validate.probability(name, value)


def check_flag(name: str, value) -> bool:
    """True or False exactly (no truthiness coercion), or ValueError naming ``name``."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {shown(value)}")
    return bool(value)


def check_arms(n_arms: int, horizon: int) -> None:
    """Shared validation: at least two arms and a horizon of at least one round per arm."""
    if n_arms < 2:
        raise ValueError(f"n_arms must be >= 2, got {n_arms}")
    if horizon < n_arms:
        raise ValueError(f"horizon must be >= n_arms ({n_arms}), got {horizon}")


def note_rounds(ledger, t: int, observed: np.ndarray, positions: np.ndarray) -> None:
    """Tell ``ledger`` (or nothing, when it is None) that the records inserted in round ``t`` at
    ``positions[r, k]`` of stream k for every ``observed[r, k]`` belong to that round.

    Needed only by policies that insert more than one record per round (side observations): the
    ledger then composes, for ``relation="round"``, every release touching any record of a round.
    A record never noted is its own round (exact for bandit feedback).
    """
    if ledger is None:
        return
    ledger.note_observed(np.asarray(observed, dtype=bool), np.asarray(positions), t)


STRUCTURE_KEYS = ("max_degree", "graph", "contexts")
"""The schedule keywords of a feedback structure (docs/feedback.md): the graph policies' ``privacy_schedule``'s
(``GraphFeedback.structure()``) and the contextual environments' ``{"contexts": True}``."""


def check_structure(structure: dict, n_arms: int, relation: str) -> None:
    """ValueError unless ``structure`` holds only :data:`STRUCTURE_KEYS` with valid values (a max degree in
    [0, n_arms - 1], an adjacency of n_arms nodes). Checked for every policy, also one whose schedule does not
    read them (a K-armed policy is certified as on bandit feedback): ``budget.epsilon(..., structure=
    {"max_degree": nan})`` or a mistyped ``{"max_degre": 3}`` was certified silently (session 15)."""
    from privbandit.policies.graph_private import streams_per_record

    unknown = sorted(set(structure) - set(STRUCTURE_KEYS), key=repr)
    if unknown:
        raise ValueError(f"structure takes the keywords {', '.join(STRUCTURE_KEYS)} (docs/feedback.md), got "
                         f"{shown(unknown[0])}")
    graph = {k: structure[k] for k in ("max_degree", "graph") if k in structure}
    if graph:
        streams_per_record(n_arms, relation, **graph)
    if "contexts" in structure and not isinstance(structure["contexts"], bool):
        raise ValueError(f"structure's contexts must be True or False, got {shown(structure['contexts'])}")


def schedule_for(policy: Policy, horizon: int, n_arms: int, structure: dict | None = None,
                 relation: str = "entry") -> PrivacySchedule:
    """``policy``'s schedule for an environment with ``structure`` under ``relation``.

    Without structure (K-armed bandit feedback: one revealed entry per round) entry- and
    round-level neighbours coincide (the round's only record is its revealed entry), so the plain
    ``privacy_schedule(horizon, n_arms)`` serves both. With structure the keywords and the relation
    are passed on; a policy whose schedule does not take them gets a ValueError naming them.
    """
    check_relation(relation)
    if not structure:
        return policy.privacy_schedule(horizon, n_arms)
    check_structure(structure, n_arms, relation)
    takes_relation = "relation" in inspect.signature(policy.privacy_schedule).parameters
    if not takes_relation and not policy.private:  # no certificate under any relation
        return policy.privacy_schedule(horizon, n_arms)
    if not takes_relation and not policy.requires:
        # A policy that requires nothing is driven as on bandit feedback: select(t) without the offer
        # and observe() -> update(t, arms, rewards) with the played arm's reward only (the contract's
        # default; a policy that learns from side observations or contexts must declare them in
        # ``requires``). Each round's record then enters one stream, as on K-armed feedback, so its
        # plain schedule bounds both relations.
        return policy.privacy_schedule(horizon, n_arms)
    try:
        return policy.privacy_schedule(horizon, n_arms, relation=relation, **structure)
    except TypeError as exc:
        raise ValueError(f"policy {policy.name!r} has no privacy schedule for the structure "
                         f"{ {**structure, 'relation': relation} } ({exc})") from None
