"""Logged bandit feedback and the replay evaluator (Li, Chu, Langford & Wang, WSDM 2011, Alg. 1).

A log is a sequence of events ``(x, a, r, p)``: the user's context x (d,), the action a the logging
policy took, its reward r in [0, 1] and the probability p with which it was taken.

* :func:`uniform_log` logs a :class:`~privbandit.contextual.envs.ClassificationBandit` with the
  uniform logging policy (p = 1/K): examples drawn uniformly with replacement.
* :func:`load_log` reads a user's log (CSV or Parquet): context columns, ``action``, ``reward``,
  ``propensity``.
* :func:`replay` evaluates a contextual policy: walk through the events; when the policy, shown x
  (the same context for every arm: disjoint models), picks the logged action, the event is kept,
  the policy learns from it and its reward counts; otherwise it is discarded and the policy's state
  is unchanged. Under uniform logging the kept events are distributed exactly as an on-policy run
  (Li et al. 2011, Thm 1), about one event in K is kept, and the mean kept reward estimates the
  policy's per-round value. ``replicates`` replay independent random orders of the log in
  lock-step (the policy's ``update`` takes the mask of replicates whose event was kept).
* :func:`ips_value` is the inverse-propensity estimate of a fixed rule, for non-uniform logs.

Privacy: a replayed private policy inserts only kept events; each is one record (its context and
reward) of the played arm's stream, so the policy's schedule at ``horizon = len(log)`` bounds it for
neighbouring logs that differ in rewards only. Whether an event is kept depends on its own context
(the policy's choice on it), so a log that changes one event's context can drop or add a record and
shift every later position: that relation is not covered (docs/policies_contextual.md).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Hashable, Iterable
from pathlib import Path

import numpy as np

from accountants import _validate
from accountants._validate import NOT_NUMBERS

from privbandit.feedback import Offer
from privbandit.seeding import check_seed

_Z95 = 1.959963984540054


@dataclasses.dataclass(frozen=True)
class LoggedData:
    """Logged bandit feedback: ``contexts`` (n, d), ``actions`` (n,) in [0, n_arms), ``rewards``
    (n,) in [0, 1], ``propensities`` (n,) in (0, 1], ``n_arms``."""

    contexts: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    propensities: np.ndarray
    n_arms: int

    def __post_init__(self) -> None:
        # Copies, read-only once checked (session 13): np.asarray kept the caller's float arrays, so a log
        # validated here and then changed by its caller (rewards set to 5, an action to 99, contexts to
        # 1e6, a propensity to 0) replayed the changed values -- an action no arm matches was silently
        # never counted. Numbers only (real_array: text such as "0.5" was read as 0.5); bool contexts and
        # rewards (one-hot features, clicks) read as 0 / 1 as before.
        x = _validate.real_array("contexts", self.contexts, bools=True)
        _validate.unmasked("actions", self.actions)  # (np.asarray drops a mask: the masked action was replayed)
        a = np.asarray(self.actions)
        r = _validate.real_array("rewards", self.rewards, bools=True)
        p = _validate.real_array("propensities", self.propensities)
        n = x.shape[0] if x.ndim == 2 else -1
        if x.ndim != 2 or n < 1 or not np.isfinite(x).all():
            raise ValueError(f"contexts must be a finite (n, d) array with n >= 1, got shape {x.shape}")
        # a replayed policy keeps (replicates, n_arms, dim) state: at most 2^20 arms, as LinearContextual
        # (an action of 2^63 - 1 in a log made n_arms 2^63 and the replay a numpy error)
        if isinstance(self.n_arms, NOT_NUMBERS) or not isinstance(self.n_arms, (int, np.integer)) or not 2 <= self.n_arms <= 2**20:
            raise ValueError(f"n_arms must be a whole number in [2, 2^20 = {2**20}], got {self.n_arms!r}")
        if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer) or a.min() < 0 or a.max() >= self.n_arms:
            raise ValueError(f"actions must be {n} whole numbers in [0, {self.n_arms - 1}]")
        if r.shape != (n,) or not (r.min() >= 0 and r.max() <= 1):
            raise ValueError(f"rewards must be {n} numbers in [0, 1]")
        if p.shape != (n,) or not (p.min() > 0 and p.max() <= 1):
            raise ValueError(f"propensities must be {n} numbers in (0, 1]")
        for name, v in (("contexts", x), ("actions", a.astype(np.int64)), ("rewards", r), ("propensities", p)):
            v.setflags(write=False)
            object.__setattr__(self, name, v)

    def __len__(self) -> int:
        return int(self.actions.size)

    @property
    def uniform(self) -> bool:
        """True when every propensity is 1/K (the condition of the replay method's unbiasedness)."""
        return bool(np.allclose(self.propensities, 1.0 / self.n_arms, rtol=1e-9, atol=0.0))


def uniform_log(env, n_events: int, seed=None) -> LoggedData:
    """``n_events`` events of the uniform logging policy on a classification reduction ``env``."""
    if isinstance(n_events, NOT_NUMBERS) or not isinstance(n_events, (int, np.integer)) or n_events < 1:
        raise ValueError(f"n_events must be a whole number in [1, inf), got {n_events!r}")
    rng = np.random.default_rng(check_seed("seed", seed, generator=True))
    idx = rng.integers(0, env.labels.size, n_events)
    actions = rng.integers(0, env.n_arms, n_events)
    rewards = (actions == env.labels[idx]).astype(float)
    return LoggedData(env.features[idx], actions, rewards, np.full(n_events, 1.0 / env.n_arms), env.n_arms)


#: pyarrow 0.14.0 - 14.0.0 rebuild a column's "PyExtensionType" from a pickle stored in the file: a
#: crafted Parquet log runs code when read (CVE-2023-47248, fixed in 14.0.1)
PYARROW_SAFE = (14, 0, 1)


def _safe_parquet_reader() -> None:
    """ValueError unless the installed pyarrow reads Parquet without unpickling (a log is a file a
    user may receive from elsewhere); pyproject's ``frames`` extra asks for it, but an older pyarrow
    already installed would be used as it is."""
    import pyarrow

    parts = [int(p) if p.isdigit() else 0 for p in pyarrow.__version__.split("+")[0].split(".")[:3]]
    if tuple(parts + [0] * (3 - len(parts))) < PYARROW_SAFE:
        raise ValueError(f"reading a Parquet log needs pyarrow >= {'.'.join(map(str, PYARROW_SAFE))}: pyarrow "
                         f"{pyarrow.__version__} runs code stored in a crafted Parquet file (CVE-2023-47248); "
                         "upgrade it (pip install -U 'pyarrow>=14.0.1') or convert the log to CSV")


def _unique_parquet_names(path: Path) -> None:
    """ValueError naming the log unless its Parquet schema names each column once (session 18, s18/fuzz): a file
    written with one name twice was refused by pyarrow's "Multiple matches for FieldRef.Name(x0)", naming neither
    the log nor the column -- the CSV reader's check (session 17) had no Parquet counterpart."""
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 -- not a Parquet file, truncated, ...
        raise ValueError(f"log {path.name!r} is not a readable Parquet file ({type(exc).__name__}: "
                         f"{str(exc)[:160]})") from None
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"log {path.name!r} names the column(s) {', '.join(map(repr, repeated))} more than once in "
                         "its schema; each column must have a name of its own")


def load_log(path, context_columns=None, n_arms: int | None = None) -> LoggedData:
    """Read a log from CSV or Parquet (by suffix; Parquet needs the ``frames`` extra): columns
    ``action``, ``reward``, ``propensity`` and the context columns (default: every other column,
    in file order). ``n_arms`` defaults to the largest action + 1."""
    import pandas as pd

    if not isinstance(path, (str, os.PathLike)):  # (Path(None) is a TypeError)
        raise ValueError(f"path must be a str or os.PathLike naming a .csv or .parquet file, got {path!r}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise ValueError(f"path must end in .csv, .parquet or .pq, got {path.name!r}")
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file")
    if suffix != ".csv":
        _safe_parquet_reader()
        _unique_parquet_names(path)
    try:
        frame = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"log {path.name!r} is empty (no header)") from None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 -- pandas / pyarrow raise many types for a file not theirs
        # (pyarrow's ArrowInvalid "Could not open Parquet input source ..." named no parameter)
        raise ValueError(f"log {path.name!r} is not a readable {'CSV' if suffix == '.csv' else 'Parquet'} file "
                         f"({type(exc).__name__}: {str(exc)[:160]})") from None
    if len(frame) == 0:
        raise ValueError(f"log {path.name!r} has no rows")
    if suffix == ".csv":
        # pandas renames a repeated column name silently ("x0", "x0.1"): a hand-edited header naming one column
        # twice was read as two context columns, and context_columns=["x0"] took the first (session 17)
        names = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"log {path.name!r} names the column(s) {', '.join(map(repr, repeated))} more than once "
                             "in its header; each column must have a name of its own")
    if isinstance(context_columns, (str, bytes)) or (context_columns is not None and (
            not isinstance(context_columns, Iterable) or isinstance(context_columns, np.ndarray) and context_columns.ndim != 1)):
        # a name is not spelled out letter by letter; a number or a 0-d array is no list at all
        raise ValueError(f"context_columns must be a list of column names, got {context_columns!r}")
    missing = [c for c in ("action", "reward", "propensity") if c not in frame.columns]
    if missing:
        raise ValueError(f"log {path.name!r} lacks the column(s) {', '.join(missing)}")
    cols = [c for c in frame.columns if c not in ("action", "reward", "propensity")] if context_columns is None \
        else list(context_columns)
    if not all(isinstance(c, Hashable) for c in cols):  # (a list of lists: pandas' "unhashable type")
        raise ValueError(f"context_columns must be a list of column names, got {context_columns!r}")
    absent = [c for c in cols if c not in frame.columns]
    if not cols or absent:
        raise ValueError(f"context_columns must name columns of the log, missing {absent or 'all'}")
    actions = frame["action"].to_numpy()
    if not np.issubdtype(actions.dtype, np.integer):
        raise ValueError("the action column must hold whole numbers")
    for name in ("reward", "propensity"):  # text such as "1" is not read as a number behind the user's back
        if not pd.api.types.is_numeric_dtype(frame[name]) or pd.api.types.is_bool_dtype(frame[name]):
            raise ValueError(f"the {name} column of log {path.name!r} must hold numbers, got dtype {frame[name].dtype}")
    k = int(actions.max()) + 1 if n_arms is None else n_arms
    try:
        contexts = frame[cols].to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"context columns {cols} of log {path.name!r} must hold numbers") from None
    return LoggedData(contexts, actions, frame["reward"].to_numpy(dtype=float),
                      frame["propensity"].to_numpy(dtype=float), k)


@dataclasses.dataclass(frozen=True)
class ReplayResult:
    """Per replicate: ``kept`` events and their ``total`` reward; ``value`` the mean kept reward and
    ``half_width`` its 95% normal half-width (sample standard deviation / sqrt(kept))."""

    kept: np.ndarray
    total: np.ndarray
    value: np.ndarray
    half_width: np.ndarray
    sum_squares: np.ndarray


def replay(policy, log: LoggedData, replicates: int = 1, seed=None, *, ledger=None, shuffle: bool = True) -> ReplayResult:
    """Li et al. (2011)'s replay estimate of ``policy`` on ``log`` (module docstring). ``shuffle``:
    each replicate replays its own random order of the log (replicate 0 too); False replays the
    log in its order in every replicate. ``ledger`` is passed to the policy's run."""
    if not log.uniform:
        raise ValueError("log: replay is unbiased only under uniform logging (every propensity 1/n_arms); "
                         "use ips_value for a fixed rule on this log")
    if isinstance(replicates, NOT_NUMBERS) or not isinstance(replicates, (int, np.integer)) or replicates < 1:
        raise ValueError(f"replicates must be a whole number in [1, inf), got {replicates!r}")
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(check_seed("seed", seed))
    order_seq, policy_seq = seq.spawn(2)
    n, k, d = len(log), log.n_arms, log.contexts.shape[1]
    if shuffle:
        order_rng = np.random.default_rng(order_seq)
        order = np.stack([order_rng.permutation(n) for _ in range(replicates)], axis=1)  # (n, R)
    else:
        order = np.broadcast_to(np.arange(n)[:, None], (n, replicates))
    run = policy.start(k, replicates, n, np.random.default_rng(policy_seq), ledger=ledger)
    kept = np.zeros(replicates, dtype=np.int64)
    total = np.zeros(replicates)
    squares = np.zeros(replicates)
    for i in range(n):
        events = order[i]
        x = log.contexts[events]
        offer = Offer(contexts=np.broadcast_to(x[:, None, :], (replicates, k, d)))
        # every replicate's policy is asked at its own next round; lock-step needs one t: the
        # policies here do not read t (LinUCB/LinTS indices are time-free), so the event index serves
        arms = run.select(i + 1, offer)
        match = arms == log.actions[events]
        r = log.rewards[events]
        run.update(i + 1, arms, r, mask=match)
        kept += match
        total += np.where(match, r, 0.0)
        squares += np.where(match, r * r, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = total / kept
        var = np.maximum(squares / kept - value ** 2, 0.0) * kept / np.maximum(kept - 1, 1)
        half = _Z95 * np.sqrt(var / kept)
    return ReplayResult(kept, total, value, half, squares)


def ips_value(choose, log: LoggedData) -> tuple[float, float]:
    """Inverse-propensity estimate of a fixed rule ``choose(contexts (n, d)) -> arms (n,)``:
    ``mean(1[choose(x) = a] r / p)`` and its 95% normal half-width."""
    arms = np.asarray(choose(log.contexts))
    w = (arms == log.actions) * log.rewards / log.propensities
    n = len(log)
    return float(w.mean()), float(_Z95 * w.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
