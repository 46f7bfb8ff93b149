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

from accountants._validate import shown


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
        raw = np.asarray(rounds)
        # whole numbers only: 1.5 was read as round 2, NaN was an IndexError and "3" a numpy type error
        whole = raw.dtype.kind in "iu" or (raw.dtype.kind == "f" and bool(np.all(np.isfinite(raw) & (raw == np.round(raw)))))
        if not whole or np.any(raw < 1) or np.any(raw > self.horizon):
            raise ValueError(f"rounds must be whole numbers in [1, {self.horizon}], got {shown(rounds)}")
        rounds = raw.astype(np.int64)
        return self.certified_epsilon[np.searchsorted(self.checkpoints, rounds, side="left")]

    #: the check's floating-point slack for the cheap ledger: it sums per-record spends in difference arrays,
    #: in another order than the schedule's composition, so the same spend can differ in its last bits
    #: (relative 1e-9, absolute 1e-12 for certificates at 0). A tight ledger's realized spend is
    #: ``best_epsilon`` of the record's releases, the certificate ``best_epsilon`` of the schedule's: compared
    #: with no slack since session 17 (the one-Laplace profile an accountant, pure sums exact; 3,186 readings
    #: of every private policy at deltas 1e-300..0.1, 0 above; 254 of 1,644 on 57774e4, up to 1.17e-8 above).
    RELATIVE_SLACK, ABSOLUTE_SLACK = 1e-9, 1e-12

    def _same_currency_bound(self) -> np.ndarray:
        """The certificate in the ledger's currency at each checkpoint (NaN where not queried)."""
        return self.certified_closed_form if self.certified_closed_form is not None else self.certified_epsilon

    def _slack(self) -> tuple[float, float]:
        """(relative, absolute) slack of the ledger check: the cheap ledger's, or none for a tight one."""
        if self.certified_closed_form is None:
            return 0.0, 0.0
        return self.RELATIVE_SLACK, self.ABSOLUTE_SLACK

    def realized_fraction(self) -> float:
        """The worst tracked record's realized spend as a fraction of the certificate composed by the
        *same* accountants at the same checkpoint (the ledger check's bound, with its float slack),
        maximised over the queried checkpoints and tracked replicates: <= 1 exactly when
        :meth:`realized_within_certificate` holds. NaN when no replicate was tracked."""
        if self.realized_epsilon is None:
            raise ValueError("this run kept no ledger (simulate(..., ledger=False))")
        relative, absolute = self._slack()
        bound = self._same_currency_bound()[:, None] * (1 + relative) + absolute
        with np.errstate(invalid="ignore"):
            ratio = self.realized_epsilon / bound
        finite = ratio[~np.isnan(ratio)]
        return float(finite.max()) if finite.size else math.nan

    def realized_within_certificate(self) -> bool:
        """The ledger invariant of this run: realized <= certified at every queried checkpoint, in
        the same currency (closed-form accountants for the cheap ledger, all for a tight one)."""
        fraction = self.realized_fraction()
        return bool(math.isnan(fraction) or fraction <= 1.0)

    def realized_at_horizon(self) -> tuple[float | None, float | None]:
        """(worst tracked record's realized spend, the same accountants' certificate) at the horizon;
        (None, None) without a ledger or tracked replicate."""
        if self.realized_epsilon is None or not np.any(np.isfinite(self.realized_epsilon[-1])):
            return None, None
        return float(np.nanmax(self.realized_epsilon[-1])), float(self._same_currency_bound()[-1])

    def summary(self) -> dict[str, Any]:
        """Final figures: regret (mean and band), certified epsilon at the horizon and the realized
        spend -- ``realized_epsilon_max`` in the ledger's currency next to ``certified_same_currency``
        (the certificate composed by those same accountants) and ``realized_fraction``, their ratio
        maximised over the queried checkpoints (<= 1 exactly when the ledger check passes)."""
        realized, same = self.realized_at_horizon()
        fraction = None
        if self.realized_epsilon is not None:
            f = self.realized_fraction()
            fraction = None if math.isnan(f) else f
        return {
            "policy": self.name,
            "regret": float(self.regret_mean[-1]),
            "regret_lower": float(self.regret_lower[-1]),
            "regret_upper": float(self.regret_upper[-1]),
            "certified_epsilon": float(self.certified_epsilon[-1]),
            "certified_by": self.certified_by[-1],
            "realized_epsilon_max": realized,
            "certified_same_currency": same,
            "realized_fraction": fraction,
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
            # the certificate in the realized column's own currency (the ledger's accountants), at
            # the same rounds: compare realized with this column, not with certified_epsilon
            frame["certified_same_currency"] = np.nan
            same = np.where(np.isfinite(worst), self._same_currency_bound(), np.nan)
            frame.loc[self.checkpoints - 1, "certified_same_currency"] = same
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
        """Write the tidy frame to ``.parquet`` or ``.csv`` and the metadata to ``<path>.json``; the metadata
        records the data file's SHA-256 (``data_sha256``), and :func:`privbandit.saved.load_saved` reads the pair
        back only if it matches (one save, not the halves of two)."""
        from privbandit.cli_checks import staged_outputs
        from privbandit.saved import DATA_KEY, DIGEST_KEY, file_sha256

        path = output_path(path, (".parquet", ".csv"))
        frame = self.to_frame()
        try:
            # staged (session 16): written in a private directory beside the destination and moved in with
            # os.replace, so a kill or an error mid-write leaves the old file or the new one, never a truncated
            # one (pandas wrote in place), and a symlink at the path is replaced, not written through
            with staged_outputs(path.parent, "path") as stage:
                data = stage.path(path.name)
                if path.suffix.lower() == ".parquet":
                    frame.to_parquet(data, index=False)
                else:
                    frame.to_csv(data, index=False)
                # the pair is moved data first, metadata last (staged_outputs' sorted order), so a kill between
                # the two leaves a new data file beside old metadata: the metadata records the digest of the
                # data it was written with, and privbandit.saved.load_saved refuses a pair that does not match
                meta = self.metadata() | {DATA_KEY: path.name, DIGEST_KEY: file_sha256(data)}
                Path(stage.path(path.name + ".json")).write_text(json.dumps(meta, indent=2, default=str))
        except OSError as exc:  # an unwritable place: bad input, named, not pandas' OSError
            raise ValueError(f"path {str(path)!r}: cannot write ({exc.strerror or exc})") from None
        return path

    def plot(self, ax=None, *, label: str | None = None, privacy: bool = True, color=None):
        """Regret with its 95% band on ``ax``; with ``privacy``, certified epsilon on a second axis
        (from 0, plain tick labels). Returns the regret axes. :meth:`plot_figure` draws the
        two-panel figure of ``privbandit run --plot``."""
        import matplotlib.pyplot as plt

        if not isinstance(privacy, (bool, np.bool_)):  # "no" is truthy: not read as a flag
            raise ValueError(f"privacy must be True or False, got {shown(privacy)}")
        if ax is not None and not callable(getattr(ax, "plot", None)):
            raise ValueError(f"ax must be a matplotlib Axes or None, got {shown(ax)}")
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 4))
        rounds = np.arange(1, self.horizon + 1)
        line, = ax.plot(rounds, self.regret_mean, label=label or self.name, color=color)
        ax.fill_between(rounds, self.regret_lower, self.regret_upper, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_xlabel("round")
        ax.set_ylabel("cumulative pseudo-regret")
        _plain_axes(ax)
        if privacy and np.all(np.isfinite(self.certified_epsilon)):
            ax2 = ax.twinx()
            self._plot_epsilon(ax2, line.get_color(), realized=False)
            ax2.legend(loc="upper left", bbox_to_anchor=(1.12, 0.5), fontsize="small", frameon=False)
        ax.legend(loc="upper left", bbox_to_anchor=(1.12, 1.0), fontsize="small", frameon=False)
        return ax

    def _plot_epsilon(self, ax, color, realized: bool = True) -> None:
        """Certified epsilon (a step function from 0) and, at the ledger's queried checkpoints, the
        worst tracked record's realized spend next to the certificate in that same currency."""
        ax.step(np.r_[0, self.checkpoints], np.r_[0.0, self.certified_epsilon], where="post", color=color,
                label=f"certified eps (best accountant, delta={self.delta:g})")
        if realized and self.realized_epsilon is not None:
            rows = np.any(np.isfinite(self.realized_epsilon), axis=1)  # queried checkpoints only: no all-NaN line
            if rows.any():
                worst = np.nanmax(self.realized_epsilon[rows], axis=1)
                same = self._same_currency_bound()[rows]
                if not np.allclose(same, self.certified_epsilon[rows]):
                    ax.plot(self.checkpoints[rows], same, "o--", color="0.45", markersize=4, linewidth=1,
                            label="certified by the ledger's accountants (pure, KOV, GDP)")
                ax.plot(self.checkpoints[rows], worst, "x", color="black", markersize=6,
                        label="realized: worst tracked record (same accountants)")
        ax.set_ylim(bottom=0)
        ax.set_ylabel("epsilon")
        _plain_axes(ax)

    def plot_figure(self, title: str | None = None):
        """Two panels: regret with its 95% band; certified epsilon from 0 with the realized spend at
        the ledger's checkpoints (and the certificate in the ledger's currency beside it). Returns the
        figure; the legends sit below the panels, off the data."""
        import matplotlib.pyplot as plt

        check_title(title)
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
        self.plot(left, privacy=False, color="tab:blue")
        left.set_title("regret (mean, 95% band)", fontsize="medium")
        left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize="small", frameon=False)
        if np.all(np.isfinite(self.certified_epsilon)):
            self._plot_epsilon(right, "tab:blue")
            right.set_xlabel("round")
            right.set_title("privacy spent", fontsize="medium")
            right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize="small", frameon=False)
        else:
            right.axis("off")
            right.text(0.5, 0.5, "non-private policy:\nno finite certificate", ha="center", va="center")
        fig.suptitle(title or f"{self.name} on {self.environment.get('environment')}: horizon {self.horizon}, "
                            f"{self.replicates} replicates", fontsize="medium")
        return fig


def output_path(path, suffixes: tuple[str, ...], name: str = "path") -> Path:
    """``path`` as a Path to a file that can be written: a str or os.PathLike, one of ``suffixes``
    (any case: ``.CSV`` too, as the command line accepts it), not a directory, in an existing
    directory. Checked before anything is computed or written (was a TypeError, IsADirectoryError
    or pandas' OSError after the frame was built)."""
    import os

    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"{name} must be a file name ending in {' or '.join(suffixes)}, got {shown(path)}")
    p = Path(path)
    if p.suffix.lower() not in suffixes:
        raise ValueError(f"{name} must end in {' or '.join(suffixes)}, got {shown(p.name)}")
    if p.is_dir():
        raise ValueError(f"{name} {str(p)!r} is a directory; give a file name")
    if not p.parent.is_dir():
        raise ValueError(f"{name} {str(p)!r}: directory {str(p.parent)!r} does not exist")
    return p


def check_title(title) -> None:
    if title is not None and not isinstance(title, str):  # (was matplotlib's AttributeError 'expandtabs')
        raise ValueError(f"title must be a str or None, got {shown(title)}")


def _plain_axes(ax) -> None:
    """Plain tick labels (no '1e-6+4.9999e-1' offset, no scientific notation on linear axes)."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    if ax.xaxis.get_scale() == "linear":
        ax.xaxis.set_major_locator(MaxNLocator(6, integer=True))  # plain round labels never collide
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "linear":
            formatter = ScalarFormatter(useOffset=False)
            formatter.set_scientific(False)
            axis.set_major_formatter(formatter)


def _jsonable(seed):
    if isinstance(seed, np.random.SeedSequence):
        return {"entropy": str(seed.entropy), "spawn_key": list(seed.spawn_key)}
    return seed
