"""The environment contract: a reward source the engine advances for all replicates in lock-step.

An :class:`Environment` is an immutable, validated configuration; :meth:`Environment.start` gives an
:class:`EnvironmentRun` bound to a number of replicates and a ``numpy.random.Generator``. A run
answers ``rewards(t, arms)`` with one reward per replicate for the arm that replicate pulled in round
``t`` (1-based), and the engine computes pseudo-regret from ``expected(t, arms)`` and ``best(t)``.

The feedback contract (privbandit/feedback.py, docs/feedback.md) extends this without changing it:
``offer(t)`` (contexts, a feedback graph; None by default), ``feedback(t, arms)`` (the played arm's
reward and any side observations; wraps ``rewards`` by default) and ``regret(t, arms)`` (for
environments whose instantaneous regret is not ``best(t) - expected(t, arms)``, e.g. contexts drawn
per run, or an adaptive adversary). The engine calls the defaults' fast path when a run does not
override them, so K-armed environments pay nothing for the extension.
"""

from __future__ import annotations

import abc

import numpy as np

from accountants._validate import real_array, shown

from privbandit.feedback import Feedback, Offer


def library_code(obj, methods: tuple[str, ...]) -> bool:
    """Whether ``obj``'s class is one of privbandit's own and none of ``methods`` is replaced on the
    instance: what :func:`unit_rewards` asks before trusting a class's promise about its rewards."""
    return type(obj).__module__.partition(".")[0] == "privbandit" and \
        not any(name in getattr(obj, "__dict__", {}) for name in methods)


def unit_rewards(env: "Environment", run: "EnvironmentRun") -> bool:
    """Whether the engine may feed ``run``'s rewards to a policy unclipped and unchecked.

    ``rewards_in_unit_interval`` is a promise about the code that draws the rewards, so it is kept
    only when that code is the library's: the environment's class and its run's (``rewards``,
    ``rewards_block``, ``feedback``) defined in privbandit. A user's subclass inherits the flag --
    StationaryEnvironment's True -- while drawing rewards of its own: a subclass of Bernoulli whose
    run returned rewards x 50, NaN or -3 was fed to Gaussian-TS, DP-SE, Anytime-Lazy-UCB and the
    private EXP3s unclipped, their sensitivities (computed for [0, 1]) and so their certificates
    silently wrong (session 10). Such environments are clipped (or checked, ``strict_rewards``) as
    any environment without the flag is; the library's own pay nothing."""
    return bool(env.rewards_in_unit_interval) and library_code(env, ("start",)) and \
        library_code(run, ("rewards", "rewards_block", "feedback"))


def real_values(x, t: int, what: str, source: str, shape: tuple | None) -> np.ndarray:
    """``x`` as a float array of ``shape`` (None: any), or a ValueError naming ``source`` (the
    environment that returned it) and the round: for rewards from code that is not the library's
    (the engine's ``_clip``, the default :meth:`EnvironmentRun.rewards_block`). Ints are read exactly;
    text, bools, None, complex and objects that are not real numbers are refused, as ``real_array``
    refuses them -- numpy's assignment read "0.5" as 0.5 and broadcast a scalar to every replicate."""
    try:
        values = real_array(what, x)
    except ValueError:
        raise ValueError(f"{source} returned {what}s that are not real numbers in round {t}: got {shown(x)}") from None
    if shape is not None and values.shape != shape:
        raise ValueError(f"{source} returned {what}s of shape {values.shape} in round {t}; expected {shape} "
                         "(one per replicate)")
    return values


class EnvironmentRun(abc.ABC):
    """State of one environment across ``replicates`` lock-stepped replicates."""

    #: True when every ``feedback(t, arms).observed`` row provably reveals at most the declared
    #: ``structure()["max_degree"] + 1`` entries (the library's graph environment: rows of the graph
    #: whose degree it declares). Otherwise the engine counts them every round (privbandit.engine).
    reveals_within_structure: bool = False

    @abc.abstractmethod
    def rewards(self, t: int, arms: np.ndarray) -> np.ndarray:
        """Rewards (shape ``(replicates,)``) of ``arms[r]`` in round ``t`` for every replicate r."""

    def rewards_block(self, t: int, arms: np.ndarray) -> np.ndarray:
        """Rewards (n, R) of rounds t .. t + n - 1 for ``arms`` (n, R): exactly ``rewards(t + j,
        arms[j])`` row by row (this default does just that), for the engine's planned rounds
        (policies.base, ``plan``). An override must consume the same random variates in the same
        order, so a run's rewards do not depend on whether its policy plans."""
        out = np.empty(arms.shape)
        source = f"environment run {type(self).__name__}"
        for j in range(arms.shape[0]):
            row = self.rewards(t + j, arms[j])
            if type(row) is not np.ndarray or row.dtype.kind != "f" or row.shape != arms[j].shape:
                row = real_values(row, t + j, "reward", source, arms[j].shape)  # (not cast by the assignment)
            out[j] = row
        return out

    def offer(self, t: int) -> Offer | None:
        """What the learner sees in round ``t`` before choosing; None (the default) for nothing."""
        return None

    def feedback(self, t: int, arms: np.ndarray) -> Feedback:
        """What the learner observes after playing ``arms`` in round ``t``.

        The default is bandit feedback, ``Feedback(arms, self.rewards(t, arms))``: the same calls
        and random streams as ``rewards``. Environments with side observations override it and fill
        ``observed`` / ``values``.
        """
        return Feedback(arms, self.rewards(t, arms))

    def regret(self, t: int, arms: np.ndarray) -> np.ndarray:
        """Instantaneous (pseudo-)regret of round ``t``, shape (replicates,), called after ``feedback``.

        Override it only where regret depends on the run's state (contexts drawn per run, an
        adaptive adversary's memory). A run that does not override it leaves the computation to the
        engine, which evaluates ``env.best(t) - env.expected(t, arms)`` vectorised over blocks of
        rounds (bit-identical to doing it round by round); calling this default raises ValueError.
        """
        raise ValueError(f"{type(self).__name__} does not define a per-round regret: the engine computes "
                         "env.best(t) - env.expected(t, arms) for it")


class Environment(abc.ABC):
    """A bandit instance: ``n_arms`` arms and their expected rewards."""

    name: str = "environment"
    #: True when every reward lies in [0, 1] by construction, so the engine need not clip.
    rewards_in_unit_interval: bool = False
    #: What its runs' ``offer`` provides, a subset of ``privbandit.feedback.CAPABILITIES``
    #: ({"contexts", "graph"}); the engine refuses a policy requiring something not offered.
    offers: frozenset = frozenset()

    def structure(self) -> dict:
        """Keywords for ``Policy.privacy_schedule`` describing this instance's feedback structure
        (e.g. ``{"max_degree": 3}`` for a feedback graph); empty for K-armed bandit feedback."""
        return {}

    @property
    @abc.abstractmethod
    def n_arms(self) -> int: ...

    @abc.abstractmethod
    def start(self, replicates: int, rng: np.random.Generator) -> EnvironmentRun: ...

    @abc.abstractmethod
    def expected(self, t: np.ndarray, arms: np.ndarray) -> np.ndarray:
        """Expected reward of ``arms`` in rounds ``t`` (broadcasting), for pseudo-regret."""

    @abc.abstractmethod
    def best(self, t: np.ndarray) -> np.ndarray:
        """Expected reward of the comparator (best arm) in rounds ``t``."""

    def constant_regrets(self) -> np.ndarray | None:
        """The instantaneous pseudo-regret of each arm, ``best(t) - expected(t, k)`` (shape (n_arms,)),
        when it depends on neither the round nor the run; None (the default) otherwise. The engine
        then accumulates regret from it in one compiled pass over each block of rounds, with the
        same values bit for bit (engine.py, ``_RegretAccumulator``)."""
        return None

    def params(self) -> dict:
        return {"environment": self.name}


class StationaryEnvironment(Environment):
    """Arms with fixed reward distributions on [0, 1], described by their ``means``."""

    rewards_in_unit_interval = True

    def __init__(self, means) -> None:
        means = real_array("means", means)
        if means.ndim != 1 or means.size < 2:
            raise ValueError(f"means must be a 1-D sequence of at least 2 arms, got shape {means.shape}")
        self.means = means

    @property
    def n_arms(self) -> int:
        return int(self.means.size)

    def expected(self, t, arms):
        return self.means[arms]

    def best(self, t):
        return np.full(np.shape(t), self.means.max())

    def constant_regrets(self) -> np.ndarray | None:
        # best - expected elementwise, exactly as best(t) - expected(t, k) evaluates it; None where a
        # subclass redefines either (its regret may then depend on the round)
        cls = type(self)
        if cls.best is not StationaryEnvironment.best or cls.expected is not StationaryEnvironment.expected:
            return None
        return self.best(np.arange(self.n_arms)) - self.expected(np.arange(self.n_arms), np.arange(self.n_arms))

    @property
    def gaps(self) -> np.ndarray:
        return self.means.max() - self.means

    def params(self) -> dict:
        return {"environment": self.name, "means": self.means.tolist()}


class BlockedRun(EnvironmentRun):
    """Draws the per-round uniform (or normal) variates in blocks of rounds.

    Drawing ``block`` rounds of variates at once amortises the Generator's call overhead; each round
    still consumes exactly one fresh variate per replicate, so the reward distribution is unchanged.
    """

    #: At most this many variates are buffered: 256 kB, so a block stays in the core's cache until
    #: its rows are used (an 8 MB block of 1024 rounds x 1000 replicates was read back from memory,
    #: ~2-4 us per round); many replicates (10^6, as audits run) draw one round at a time.
    MAX_BUFFERED = 2**15

    def __init__(self, replicates: int, rng: np.random.Generator, block: int, normal: bool = False) -> None:
        self._rng = rng
        self._replicates = replicates
        self._block = max(1, min(block, self.MAX_BUFFERED // max(1, replicates)))
        self._normal = normal
        self._buffer = np.empty((0, replicates))
        self._pos = 0

    def _draw(self, rows: int) -> np.ndarray:
        shape = (rows, self._replicates)
        return self._rng.standard_normal(shape) if self._normal else self._rng.random(shape)

    def _refill(self) -> None:
        self._buffer = self._draw(self._block)
        self._pos = 0

    def _variates(self) -> np.ndarray:
        if self._pos == self._buffer.shape[0]:
            self._refill()
        row = self._buffer[self._pos]
        self._pos += 1
        return row

    def _variates_block(self, n: int) -> np.ndarray:
        """The variates of the next ``n`` rounds, (n, replicates): the rows ``n`` calls of
        :meth:`_variates` would return, in order. Beyond what the buffer holds they are drawn in one
        call, leaving the buffer used up: the Generator's stream is sequential, so one call for m
        rows gives the variates of successive refills (the same values, in the same order)."""
        avail = self._buffer.shape[0] - self._pos
        if n <= avail:
            rows = self._buffer[self._pos:self._pos + n]
            self._pos += n
            return rows
        head = self._buffer[self._pos:]
        self._pos = self._buffer.shape[0]
        rest = self._draw(n - avail)
        return np.concatenate([head, rest]) if avail else rest
