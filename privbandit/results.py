"""The object a simulation returns: regret next to the certified privacy spend, per round.

Tidy export (``to_frame``, pandas), ``save`` to Parquet or CSV, and ``plot`` (matplotlib) live here;
pandas, pyarrow and matplotlib are optional extras imported only when used.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np


@dataclasses.dataclass
class SimulationResult:
    """Regret and privacy of one policy on one environment over ``replicates`` replicates.

    Attributes:
        regret_mean, regret_lower, regret_upper: cumulative pseudo-regret per round (length
            ``horizon``): mean across replicates and a normal 95% confidence band for the mean.
        final_regret: cumulative pseudo-regret at the horizon, per replicate.
        pulls: final pull counts, shape (replicates, arms).
        checkpoints: rounds at which privacy was evaluated (always includes the horizon).
        certified_epsilon: certified epsilon at ``delta`` after each checkpoint round (the policy's
            privacy schedule; data-independent; ``inf`` for a non-private policy).
        certified_by: the accountant that achieved each certified value.
        realized_epsilon: the ledger's realized per-record spend at each checkpoint, shape
            (checkpoints, replicates) — NaN where a replicate was not tracked; None without ledger.
            The default (cheap) ledger composes each record with the closed-form accountants only
            (pure, KOV heterogeneous, GDP); a tight ledger (``ledger="tight"``) with all of them.
        certified_closed_form: the certificate in the cheap ledger's currency (the schedule composed
            by the same closed-form accountants) at the checkpoints where the ledger was queried (NaN
            elsewhere, like ``realized_epsilon``): the invariant is realized <= this, checkpoint by
            checkpoint. It can exceed ``certified_epsilon``, which also uses PLD and optimal
            composition. None with a tight ledger (compare with ``certified_epsilon``) or none.
        claimed_epsilon: the source paper's claimed epsilon for this configuration, if any.
        arms: the arm played by each replicate in each round, shape (horizon, replicates), if kept.
        relation: the neighbouring relation the certified and realized epsilons are for, "entry"
            or "round" (``privbandit.feedback.RELATIONS``; they coincide for bandit feedback).
    """

    policy: dict[str, Any]
    environment: dict[str, Any]
    horizon: int
    replicates: int
    seed: Any
    delta: float
    regret_mean: np.ndarray
    regret_lower: np.ndarray
    regret_upper: np.ndarray
    final_regret: np.ndarray
    pulls: np.ndarray
    checkpoints: np.ndarray
    certified_epsilon: np.ndarray
    certified_by: list[str]
    realized_epsilon: np.ndarray | None = None
    claimed_epsilon: float | None = None
    arms: np.ndarray | None = None
    certified_closed_form: np.ndarray | None = None
    seconds: float = math.nan
    relation: str = "entry"

    @property
    def name(self) -> str:
        return str(self.policy.get("policy", "policy"))

    def certified_at(self, rounds) -> np.ndarray:
        """Certified epsilon after each of ``rounds``: the value at the next checkpoint at or above it.

        Valid because a privacy schedule is monotone in the number of rounds.
        """
        rounds = np.asarray(rounds)
        if np.any(rounds < 1) or np.any(rounds > self.horizon):
            raise ValueError(f"rounds must lie in [1, {self.horizon}]")
        return self.certified_epsilon[np.searchsorted(self.checkpoints, rounds, side="left")]

    def realized_within_certificate(self) -> bool:
        """The ledger invariant of this run: realized <= certified at every queried checkpoint, in
        the same currency (closed-form accountants for the cheap ledger, all for a tight one)."""
        if self.realized_epsilon is None:
            raise ValueError("this run kept no ledger (simulate(..., ledger=False))")
        bound = self.certified_closed_form if self.certified_closed_form is not None else self.certified_epsilon
        real = self.realized_epsilon
        ok = np.isnan(real) | (real <= bound[:, None] * (1 + 1e-9) + 1e-12)
        return bool(np.all(ok))

    def summary(self) -> dict[str, Any]:
        """Final figures: regret (mean and band), certified and realized epsilon at the horizon."""
        realized = None
        if self.realized_epsilon is not None and np.any(np.isfinite(self.realized_epsilon[-1])):
            realized = float(np.nanmax(self.realized_epsilon[-1]))
        return {
            "policy": self.name,
            "regret": float(self.regret_mean[-1]),
            "regret_lower": float(self.regret_lower[-1]),
            "regret_upper": float(self.regret_upper[-1]),
            "certified_epsilon": float(self.certified_epsilon[-1]),
            "certified_by": self.certified_by[-1],
            "realized_epsilon_max": realized,
            "claimed_epsilon": self.claimed_epsilon,
            "realized_within_certificate": (None if self.realized_epsilon is None
                                            else self.realized_within_certificate()),
            "delta": self.delta,
            "relation": self.relation,
            "horizon": self.horizon,
            "replicates": self.replicates,
        }

    def to_frame(self):
        """A tidy pandas DataFrame, one row per round (requires the ``frames`` extra)."""
        import pandas as pd

        rounds = np.arange(1, self.horizon + 1)
        frame = pd.DataFrame({
            "round": rounds,
            "regret_mean": self.regret_mean,
            "regret_lower": self.regret_lower,
            "regret_upper": self.regret_upper,
            "certified_epsilon": self.certified_at(rounds),
        })
        if self.realized_epsilon is not None:
            worst = np.full(self.checkpoints.size, np.nan)
            finite = np.any(np.isfinite(self.realized_epsilon), axis=1)
            worst[finite] = np.nanmax(self.realized_epsilon[finite], axis=1)
            frame["realized_epsilon_max"] = np.nan
            frame.loc[self.checkpoints - 1, "realized_epsilon_max"] = worst
        frame.insert(0, "policy", self.name)
        frame.insert(1, "environment", str(self.environment.get("environment")))
        frame["delta"] = self.delta
        frame.attrs["metadata"] = self.metadata()
        return frame

    def metadata(self) -> dict[str, Any]:
        return {
            "policy": self.policy, "environment": self.environment, "horizon": self.horizon,
            "replicates": self.replicates, "seed": _jsonable(self.seed), "delta": self.delta,
            "relation": self.relation,
            "claimed_epsilon": self.claimed_epsilon, "seconds": self.seconds,
        }

    def save(self, path: str | Path) -> Path:
        """Write the tidy frame to ``.parquet`` or ``.csv`` and the metadata to ``<path>.json``."""
        path = Path(path)
        frame = self.to_frame()
        if path.suffix == ".parquet":
            frame.to_parquet(path, index=False)
        elif path.suffix == ".csv":
            frame.to_csv(path, index=False)
        else:
            raise ValueError(f"path must end in .parquet or .csv, got {path.name!r}")
        path.with_suffix(path.suffix + ".json").write_text(json.dumps(self.metadata(), indent=2, default=str))
        return path

    def plot(self, ax=None, *, label: str | None = None, privacy: bool = True):
        """Regret with its band; certified (and realized) epsilon on a second axis. Returns the axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7, 4))
        rounds = np.arange(1, self.horizon + 1)
        line, = ax.plot(rounds, self.regret_mean, label=label or self.name)
        ax.fill_between(rounds, self.regret_lower, self.regret_upper, color=line.get_color(), alpha=0.2)
        ax.set_xlabel("round")
        ax.set_ylabel("cumulative pseudo-regret")
        ax2 = None
        if privacy and np.all(np.isfinite(self.certified_epsilon)):
            ax2 = ax.twinx()
            ax2.step(self.checkpoints, self.certified_epsilon, where="post", color=line.get_color(),
                     linestyle="--", label=f"certified eps (delta={self.delta:g})")
            if self.realized_epsilon is not None and np.any(np.isfinite(self.realized_epsilon)):
                ax2.plot(self.checkpoints, np.nanmax(self.realized_epsilon, axis=1), ":",
                         color=line.get_color(), label="realized eps (worst replicate)")
            ax2.set_ylabel("epsilon")
            ax2.legend(loc="lower right", fontsize="small")
        ax.legend(loc="upper left", fontsize="small")
        return ax


def _jsonable(seed):
    if isinstance(seed, np.random.SeedSequence):
        return {"entropy": str(seed.entropy), "spawn_key": list(seed.spawn_key)}
    return seed
