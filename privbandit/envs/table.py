"""A fixed reward table x[t, k]: for adversarial sequences, logged replays, and audits.

Round t (1-based) pays ``table[t-1, k]`` for arm k. The comparator for pseudo-regret is the best
fixed arm in hindsight over the whole table (the adversarial-bandit notion of regret). Values are
stored as given: the engine clips rewards to [0, 1] before any mechanism sees them (or rejects them
when run with ``strict_rewards=True``); a table whose values all lie in [0, 1] already is declared
so (``rewards_in_unit_interval``) and skips that per-round work.
"""

from __future__ import annotations

import numpy as np

from accountants._validate import real_array

from privbandit.envs.base import Environment, EnvironmentRun


class _TableRun(EnvironmentRun):
    def __init__(self, table):
        self._table = table

    def rewards(self, t, arms):
        if t > self._table.shape[0]:
            raise ValueError(f"round t={t} is beyond the reward table's {self._table.shape[0]} rounds")
        return self._table[t - 1, arms]


class RewardTable(Environment):
    """Deterministic rewards ``table`` of shape (rounds, arms), the same for every replicate."""

    name = "reward_table"

    def __init__(self, table) -> None:
        table = real_array("table", table)
        if table.ndim != 2 or table.shape[1] < 2 or table.shape[0] < 1:
            raise ValueError(f"table must have shape (rounds >= 1, arms >= 2), got {table.shape}")
        if np.any(~np.isfinite(table)):
            raise ValueError("table must contain only finite rewards")
        self.table = table
        self._best_arm = int(np.argmax(np.clip(table, 0, 1).sum(axis=0)))

    @property
    def rewards_in_unit_interval(self) -> bool:
        """Whether every value already lies in [0, 1]: the engine then skips its per-round np.clip and
        the policy's NaN check (the table is finite). -0.0 is excluded because np.clip turns it into
        +0.0, so only values that clipping returns unchanged, bit for bit, take this path. Evaluated at
        each look (once per run: O(T K)), so a table changed after construction is judged as it is
        then, never by a stale flag that would let an out-of-range reward past the clipping."""
        table = self.table
        return bool(np.all((table >= 0.0) & (table <= 1.0)) and not np.any(np.signbit(table)))

    @property
    def n_arms(self) -> int:
        return int(self.table.shape[1])

    @property
    def rounds(self) -> int:
        return int(self.table.shape[0])

    def start(self, replicates, rng):
        return _TableRun(self.table)

    def expected(self, t, arms):
        return np.clip(self.table[np.asarray(t) - 1, arms], 0.0, 1.0)

    def best(self, t):
        return np.clip(self.table[np.asarray(t) - 1, self._best_arm], 0.0, 1.0)

    def params(self):
        return {"environment": self.name, "shape": list(self.table.shape)}
