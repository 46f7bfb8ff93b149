"""Adversarial reward sequences: oblivious tables and a 1-memory adaptive adversary.

Oblivious sequences are :class:`~privbandit.envs.table.RewardTable` s (regret against the best fixed
arm in hindsight), built from a seed so they are reproducible:

* :func:`switching_best_arm` -- the best arm changes every T/m rounds (cyclically), a standard hard
  sequence for stochastic algorithms;
* :func:`shifted_stochastic` -- Bernoulli arms whose means change once, at round ``shift_at``;
* :func:`auer_lower_bound` -- the construction of Auer, Cesa-Bianchi, Freund & Schapire (2002),
  Thm 5.1: every arm Bernoulli(1/2) except one, drawn uniformly, Bernoulli(1/2 + gap), with
  gap = (1/4) sqrt(K/T) (the constant as in Bubeck & Cesa-Bianchi 2012, Thm 3.5; capped at 1/4).

:class:`OneMemoryAdversary` is adaptive with memory 1 (Dekel, Tewari & Arora, ICML 2012): the reward
of round t depends on the arm played and on the previous one, f_t(a_{t-1}, a_t) = x_t(a_t) (1 - c
[a_t != a_{t-1}]) -- an oblivious table ``x`` with a multiplicative switching cost c. Its regret is
Dekel et al.'s *policy regret*: the reward of the best constant action sequence,
max_a sum_t f_t(a, a) = max_a sum_t x_t(a), minus sum_t f_t(a_{t-1}, a_t); per round,
x_t(a*) - f_t(a_{t-1}, a_t).
"""

from __future__ import annotations

import math

import numpy as np

from accountants import _validate
from accountants._validate import shown
from accountants._validate import real_array

from privbandit.envs.base import Environment, EnvironmentRun
from privbandit.envs.table import RewardTable
from privbandit.seeding import check_seed


_whole = _validate.whole  # (one shared check of a whole-number parameter)


def _unit(name: str, value, *, open_low: bool = False) -> float:
    ok = isinstance(value, (int, float, np.floating)) and not isinstance(value, bool) and 0 <= value <= 1
    if not ok or (open_low and value == 0):
        raise ValueError(f"{name} must lie in {'(0' if open_low else '[0'}, 1], got {shown(value)}")
    return float(value)


_MAX_ENTRIES = 2**30  # a table of horizon x n_arms float64 entries: 8 GiB at most


def _table_shape(horizon: int, n_arms: int) -> None:
    if horizon * n_arms > _MAX_ENTRIES:
        raise ValueError(f"horizon x n_arms must be at most 2^30 table entries, got horizon={horizon}, n_arms={n_arms}")


def _bernoulli_table(means: np.ndarray, seed) -> np.ndarray:
    """Bernoulli draws with per-(round, arm) ``means``, in row blocks (bounded temporary memory)."""
    rng = np.random.default_rng(check_seed("seed", seed, generator=True))
    out = np.empty(means.shape)
    step = max(1, 2**20 // means.shape[1])
    for i in range(0, means.shape[0], step):
        out[i:i + step] = rng.random(means[i:i + step].shape) < means[i:i + step]
    return out


def switching_best_arm(horizon: int, n_arms: int = 5, segments: int = 4, *, high: float = 0.7,
                       low: float = 0.3, seed=0) -> RewardTable:
    """Bernoulli rewards where arm (j mod K) has mean ``high`` and the others ``low`` in segment j of
    ``segments`` equal segments (the best arm switches every T/m rounds)."""
    horizon, n_arms = _whole("horizon", horizon, 1), _whole("n_arms", n_arms, 2)
    segments = _whole("segments", segments, 1)
    _table_shape(horizon, n_arms)
    if segments > horizon:
        raise ValueError(f"segments must lie in [1, horizon={horizon}], got {segments}")
    high, low = _unit("high", high), _unit("low", low)
    seg = np.minimum(np.arange(horizon) * segments // horizon, segments - 1)
    means = np.full((horizon, n_arms), low)
    means[np.arange(horizon), seg % n_arms] = high
    return RewardTable(_bernoulli_table(means, seed))


def shifted_stochastic(horizon: int, before, after, shift_at: int | None = None, *, seed=0) -> RewardTable:
    """Bernoulli arms with means ``before`` up to round ``shift_at`` (default T/2) and ``after`` from
    the next round on (a stochastic instance with one shift)."""
    horizon = _whole("horizon", horizon, 2)
    check_seed("seed", seed, generator=True)
    before, after = real_array("before", before), real_array("after", after)
    if before.ndim != 1 or before.size < 2 or before.shape != after.shape:
        raise ValueError(f"before and after must be 1-D sequences of the same length >= 2, got shapes "
                         f"{before.shape} and {after.shape}")
    if np.any((before < 0) | (before > 1)) or np.any((after < 0) | (after > 1)):
        raise ValueError("before and after means must lie in [0, 1]")
    _table_shape(horizon, before.size)
    shift_at = horizon // 2 if shift_at is None else _whole("shift_at", shift_at, 1)
    if shift_at >= horizon:
        raise ValueError(f"shift_at must lie in [1, horizon - 1 = {horizon - 1}], got {shift_at}")
    means = np.where(np.arange(horizon)[:, None] < shift_at, before, after)
    return RewardTable(_bernoulli_table(means, seed))


def auer_lower_bound(horizon: int, n_arms: int = 5, *, gap: float | None = None, seed=0) -> RewardTable:
    """Auer et al. (2002), Thm 5.1: Bernoulli(1/2) arms, one good arm (uniform, from ``seed``) at
    1/2 + gap; gap = min(1/4, (1/4) sqrt(K/T)) by default. Any algorithm's expected regret over the
    draw of the good arm is Omega(sqrt(K T))."""
    horizon, n_arms = _whole("horizon", horizon, 1), _whole("n_arms", n_arms, 2)
    gap = min(0.25, 0.25 * math.sqrt(n_arms / horizon)) if gap is None else _unit("gap", gap)
    if gap > 0.5:
        raise ValueError(f"gap must lie in [0, 0.5], got {gap}")
    _table_shape(horizon, n_arms)
    rng = np.random.default_rng(check_seed("seed", seed, generator=True))
    good = int(rng.integers(n_arms))
    means = np.full(n_arms, 0.5)
    means[good] += gap
    table = _bernoulli_table(np.broadcast_to(means, (horizon, n_arms)), rng)
    return RewardTable(table)


class _OneMemoryRun(EnvironmentRun):
    def __init__(self, env, replicates):
        self.env = env
        self.prev = np.full(replicates, -1, dtype=np.int64)  # no previous action before round 1
        self.last = np.zeros(replicates)

    def rewards(self, t, arms):
        if t > self.env.table.shape[0]:
            raise ValueError(f"round t={t} is beyond the adversary's {self.env.table.shape[0]} rounds")
        x = self.env.table[t - 1, arms]
        switched = (self.prev >= 0) & (arms != self.prev)
        self.prev = np.asarray(arms, dtype=np.int64).copy()
        self.last = np.where(switched, x * (1.0 - self.env.cost), x)
        return self.last

    def regret(self, t, arms):
        # policy regret: the best constant action's reward this round minus the reward obtained
        return self.env.table[t - 1, self.env.best_arm] - self.last


class OneMemoryAdversary(Environment):
    """An adaptive adversary with memory 1 (Dekel, Tewari & Arora 2012): round t pays
    x_t(a_t) (1 - cost [a_t != a_{t-1}]) for an oblivious table ``x`` in [0, 1]; regret is policy
    regret against the best constant action (module docstring)."""

    name = "one_memory_adversary"

    @property
    def rewards_in_unit_interval(self) -> bool:
        """Whether every reward x (1 - cost [switch]) lies in [0, 1], so the engine may skip its
        per-round clipping. Judged at each look (once per run, O(T K)) rather than fixed at
        construction: a table or cost changed afterwards (``env.table[0, 0] = 5``) would otherwise
        reach the policies unclipped, outside the [0, 1] range their sensitivities assume."""
        table, cost = self.table, self.cost
        return bool(0.0 <= cost <= 1.0 and np.all((table >= 0.0) & (table <= 1.0)))

    def __init__(self, table, cost: float = 0.5) -> None:
        table = real_array("table", table)
        if table.ndim != 2 or table.shape[1] < 2 or table.shape[0] < 1:
            raise ValueError(f"table must have shape (rounds >= 1, arms >= 2), got {table.shape}")
        if np.any(~np.isfinite(table)) or np.any((table < 0) | (table > 1)):
            raise ValueError("table must contain rewards in [0, 1]")
        self.table = table
        self.cost = _unit("cost", cost)
        # a constant action never switches: its total is the column sum
        self.best_arm = int(np.argmax(table.sum(axis=0)))

    @property
    def n_arms(self) -> int:
        return int(self.table.shape[1])

    @property
    def rounds(self) -> int:
        return int(self.table.shape[0])

    def start(self, replicates, rng):
        return _OneMemoryRun(self, replicates)

    def expected(self, t, arms):
        """The table's reward without the switching cost (the run's ``regret`` adds the cost)."""
        return self.table[np.asarray(t) - 1, arms]

    def best(self, t):
        return self.table[np.asarray(t) - 1, self.best_arm]

    def params(self):
        return {"environment": self.name, "shape": list(self.table.shape), "cost": self.cost}
