"""A private bandit policy deployed online: one decision at a time, persistent, crash-safe, budgeted.

``Deployment.create(path, policy, n_arms=..., budget=..., delta=...)`` starts a store;
``Deployment.open(path)`` reopens it (from any process). Each call is one SQLite transaction
(:mod:`privbandit.deploy.store`) that loads the snapshot of the policy run, advances it, writes the
new snapshot and the call's row, and commits -- the call is *acknowledged* when it returns.

Rounds, decisions and delayed rewards (docs/deploy.md, "Delayed rewards"). The policies' contract
is ``select(t)`` followed by ``update(t, arm, reward)`` before ``select(t + 1)``: their indices
divide by per-arm counts and their schedules count one release per round, so a second
``select(t)`` without an update would draw noise again and a ``select(t + 1)`` before the update
may divide by zero. A deployment therefore keeps at most one *policy round* open:

* ``select()`` with no round open opens round t = rounds + 1: the policy's ``select(t)`` (its noise
  draws are reported to the ledger), decision kind ``"policy"``;
* ``select()`` while round t awaits its reward returns a ``"hold"`` decision: round t's arm again,
  decided by post-processing of the released arms alone (no policy call, no noise, no privacy cost);
* ``update(d, r)`` for the open round's decision feeds ``update(t, arm, r)`` to the policy and closes
  the round; a reward for a hold or exploit decision is validated and stored, never fed to the
  policy (it was not produced by the policy's sampling, and it costs no privacy). Rewards may come
  in any order and after any delay; a second reward for a decision is refused (the same value: an
  idempotent no-op; a different one: an error).
* Once the filter (:mod:`privbandit.deploy.odometer`) refuses the next round, ``select()`` either
  raises :class:`BudgetExhausted` (``on_exhausted="stop"``) or returns ``"exploit"`` decisions
  (``on_exhausted="exploit"``): the arm the policy chose most often in its released rounds (ties:
  the lowest index) -- post-processing of released outputs only.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from accountants import _validate
from accountants._validate import choice, exact_text, shown
from privbandit.deploy import store as _store
from privbandit.deploy.odometer import Odometer, finite, plan
from privbandit.deploy.store import StoreError, transaction


class LogMismatch(StoreError):
    """The store's counters or its snapshot's release counts disagree with its own log (session 14,
    :meth:`Deployment._check_log`): it was modified outside privbandit -- or written by a deployment that
    released or counted outside its logged calls. Refused before the deployment's first call."""

ON_EXHAUSTED = ("exploit", "stop")


class BudgetExhausted(Exception):
    """The next policy round would exceed the budget (or the horizon) and ``on_exhausted="stop"``."""


@dataclasses.dataclass(frozen=True)
class Decision:
    """A decision: its id (pass it to :meth:`Deployment.update`), the arm to play, and how it was
    made: ``"policy"`` (a policy round), ``"hold"`` (while a round awaits its reward) or
    ``"exploit"`` (after the budget or horizon is spent)."""

    decision: int
    arm: int
    kind: str
    round: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "arm": self.arm, "kind": self.kind, "round": self.round}


@dataclasses.dataclass(frozen=True)
class UpdateResult:
    """The outcome of :meth:`Deployment.update`: the reward as the policy sees it (clipped to
    [0, 1]), whether it was fed to the policy, and whether it repeated an earlier identical update."""

    decision: int
    reward: float
    applied: bool
    duplicate: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_MAX_ID = 2**63 - 1  # SQLite's largest INTEGER


#: the most arms a deployment takes: its policy and ledger hold per-arm state, snapshotted in the store
#: (10^5 arms is 0.7 MB a snapshot); 10^11 was a MemoryError and 10^19 numpy's "Maximum allowed
#: dimension exceeded", naming no parameter. The contextual environments' bound too.
N_ARMS_MAX = 2**20


_whole = _validate.whole  # (one shared check of a whole-number parameter)


def _finite_or_nan(name: str, value) -> float:
    """``value`` as a finite float by the shared conversion (``accountants._validate.finite``), or nan for
    anything it refuses, for the caller's own message naming its range."""
    try:
        return _validate.finite(name, value)
    except ValueError:
        return math.nan


def check_reward(reward, strict: bool) -> tuple[float, float]:
    """(raw, clipped): a finite real; outside [0, 1] it is clipped (the sensitivities of every
    policy rely on [0, 1]) unless ``strict``, which makes it an error."""
    raw = _finite_or_nan("reward", reward)  # (the shared conversion: a lying __float__ is refused by name)
    if not math.isfinite(raw):
        raise ValueError(f"reward must be a finite real number in [0, 1], got {shown(reward)}")
    if strict and not 0.0 <= raw <= 1.0:
        raise ValueError(f"reward must lie in [0, 1] (strict_rewards=True), got {shown(raw)}")
    return raw, min(1.0, max(0.0, raw))


def _json_params(params: dict) -> dict:
    try:
        return json.loads(json.dumps(params, allow_nan=False))
    except (TypeError, ValueError, RecursionError):  # (a list nested 100,000 deep: json's RecursionError)
        raise ValueError(f"params must be JSON values (numbers, strings, booleans, null), got {shown(params)}") from None


#: SQLite result codes of a store that is sound but cannot be used right now (locked past the
#: timeout, disk full, an I/O error, a read-only file): these stay sqlite3 errors. Every other
#: OperationalError -- "no such column", "no such table" -- comes from a damaged schema page.
_TRANSIENT = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN",
              "SQLITE_NOMEM", "SQLITE_INTERRUPT", "SQLITE_PROTOCOL")


def _corrupt(path: str, exc: sqlite3.DatabaseError) -> Exception:
    """Damaged pages or a damaged schema become a StoreError; a busy database (OperationalError:
    locked past the timeout, disk full, a read-only file, ...) a StoreUnavailable naming the store,
    still an OperationalError. A flipped byte in the schema page renames a column, and the next
    query fails with OperationalError "no such column": that is corruption too, told apart from a
    busy store by its SQLite result code."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    if isinstance(exc, sqlite3.OperationalError) and name.startswith(_TRANSIENT):
        return _store.StoreUnavailable.from_sqlite(path, exc)
    return StoreError(f"{path}: corrupt deployment store ({exc})")


def _cells(path: str, n_arms: int, row, kinds: str) -> tuple:
    """The cells of a row read back from the store, checked against the schema's column types
    (``kinds``: one letter per column, see ``_CELL``); a lower-case letter also admits NULL. The
    schema's NOT NULL and CHECK constraints hold only for rows SQLite wrote itself: a flipped byte
    in a record header turns an arm into NULL or text, and that is a corrupt store, not a TypeError
    somewhere later. JSON cells ('J') are returned parsed."""
    if row is None or len(row) != len(kinds):
        raise StoreError(f"{path}: corrupt deployment store (a row is missing or malformed)")
    out = []
    for value, kind in zip(row, kinds):
        if value is None and kind.islower():
            out.append(None)
            continue
        ok, value = _CELL[kind.upper()](value, n_arms)
        if not ok:
            raise StoreError(f"{path}: corrupt deployment store (a {_CELL_NAMES[kind.upper()]} cell holds {value!r})")
        out.append(value)
    return tuple(out)


def _json_cell(value, n_arms):
    if not isinstance(value, str):
        return False, value
    try:
        return True, json.loads(value)
    except (ValueError, RecursionError):  # (a cell nested 100,000 deep was an "internal error" RecursionError)
        return False, value


_CELL = {
    "N": lambda v, k: (type(v) is int and v >= 0, v),  # a count, an id, a round number, a version
    "A": lambda v, k: (type(v) is int and 0 <= v < k, v),  # an arm
    "K": lambda v, k: (v in ("policy", "hold", "exploit"), v),  # a decision kind
    "R": lambda v, k: (type(v) in (int, float) and math.isfinite(v), v),  # a reward
    "T": lambda v, k: (type(v) is str, v),  # a digest
    "J": _json_cell,  # releases per arm (JSON)
}
_CELL_NAMES = {"N": "whole-number", "A": "arm", "K": "decision-kind", "R": "reward", "T": "text", "J": "JSON"}


def config_digest(config: dict) -> str:
    """SHA-256 of the configuration as the store's meta table holds it (sorted-key JSON). The snapshot
    carries it (its own digest covers it): the configuration decides the certificate -- the policy's
    parameters, the horizon, the filter's stop round -- and it sits in the meta table, outside the
    snapshot's digest, where one flipped bit turned ``"epsilon": 3.0`` into ``2.0`` and the odometer
    certified a run of the 3.0 policy as the 2.0 one (session 10). The creation time is left out: it
    decides nothing, and two stores of the same configuration and seed keep equal snapshot digests."""
    import hashlib

    kept = {k: v for k, v in config.items() if k != "created"}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


#: JSON1 (json_each) is built into SQLite from 3.38; older libraries sum the releases in Python
_SQL_JSON = sqlite3.sqlite_version_info >= (3, 38, 0)


def _logged_releases(conn: sqlite3.Connection, path: str, n_arms: int) -> list[int]:
    """Releases per arm summed over every decision's and update's ``releases`` cell (a JSON array of
    ``n_arms`` whole counts >= 0; anything else is a corrupt store)."""
    bad = StoreError(f"{path}: corrupt deployment store (a releases cell is not {n_arms} release counts)")
    # (the cells of calls that released nothing -- holds, exploits, most updates or most selects -- are the exact
    # text a deployment writes for them, skipped by a string comparison: parsing JSON is what costs here)
    zero = json.dumps([0] * n_arms)
    cells = "SELECT releases FROM decisions WHERE releases != ?1 UNION ALL SELECT releases FROM updates WHERE releases != ?1"
    if _SQL_JSON:
        malformed = conn.execute(f"SELECT COUNT(*) FROM ({cells}) WHERE NOT json_valid(releases) "
                                 "OR json_type(releases) != 'array' OR json_array_length(releases) != ?2",
                                 (zero, n_arms)).fetchone()[0]
        if malformed:
            raise bad
        sums = [0] * n_arms
        for arm, total, off in conn.execute(
                f"SELECT j.key, SUM(j.value), SUM(j.type != 'integer' OR j.value < 0) "
                f"FROM ({cells}) AS r, json_each(r.releases) AS j GROUP BY j.key", (zero,)):
            if off or type(arm) is not int or not 0 <= arm < n_arms or type(total) is not int:
                raise bad
            sums[arm] = total
        return sums
    sums = [0] * n_arms
    for (cell,) in conn.execute(cells, (zero,)):
        try:
            counts = json.loads(cell) if type(cell) is str else None
        except (ValueError, RecursionError):
            counts = None
        if type(counts) is not list or len(counts) != n_arms or not all(
                type(c) is int and c >= 0 for c in counts):
            raise bad
        sums = [a + b for a, b in zip(sums, counts)]
    return sums


def _real_field(lo: float, hi: float, *, closed: bool = False):
    def ok(v) -> bool:
        return type(v) in (int, float) and math.isfinite(v) and (lo <= v <= hi if closed else lo < v < hi)
    return ok


def _whole_field(lo: int, hi: int | None = None):
    return lambda v: type(v) is int and v >= lo and (hi is None or v <= hi)


#: the configuration's fields as :meth:`Deployment.create` writes them (JSON types; ranges as create
#: checks them). A store whose configuration breaks one is corrupt: __init__ read these with
#: int() / float() / config[key], and a missing key was a KeyError, a list an AttributeError.
_CONFIG_FIELDS = {
    "policy": ("a registered policy name", lambda v: type(v) is str),
    "params": ("a JSON object of policy parameters", lambda v: type(v) is dict),
    "n_arms": (f"a whole number in [2, {N_ARMS_MAX}]", _whole_field(2, N_ARMS_MAX)),
    "horizon": ("a whole number in [n_arms, inf)", _whole_field(2)),
    "anytime": ("true or false", lambda v: type(v) is bool),
    "budget_epsilon": ("a finite real number in (0, inf)", lambda v: _real_field(0.0, math.inf)(v)),
    "delta": ("a real number in (0, 1)", _real_field(0.0, 1.0)),
    "seed": ("a whole number in [0, inf)", _whole_field(0)),
    "on_exhausted": (f"one of {', '.join(ON_EXHAUSTED)}", lambda v: v in ON_EXHAUSTED),
    "strict_rewards": ("true or false", lambda v: type(v) is bool),
    "stop_round": ("a whole number in [0, horizon]", _whole_field(0)),
    "certified_at_stop": ("a finite real number in [0, inf)", _real_field(0.0, math.inf, closed=True)),
    "next_round_epsilon": ("a finite real number or null", lambda v: v is None or _real_field(0.0, math.inf, closed=True)(v)),
}
_CONFIG_OPTIONAL = {  # (absent from stores written before these options existed)
    "synchronous": (f"one of {', '.join(_store.SYNCHRONOUS)}", lambda v: v in _store.SYNCHRONOUS),
    "track_realized": ("true or false", lambda v: type(v) is bool),
}


def check_config(config, path: str) -> dict:
    """``config`` as read from the store's meta table, every field of the right type and range, or a
    StoreError naming the first that is not (the store was damaged or edited by hand)."""
    if type(config) is not dict:
        raise StoreError(f"{path}: corrupt deployment store (its configuration is a JSON "
                         f"{type(config).__name__}, not an object)")
    for key, (valid, ok) in [*_CONFIG_FIELDS.items(), *_CONFIG_OPTIONAL.items()]:
        if key not in config:
            if key in _CONFIG_OPTIONAL:
                continue
            raise StoreError(f"{path}: corrupt deployment store (its configuration has no {key!r})")
        if not ok(config[key]) or (key == "horizon" and config[key] < config["n_arms"]) \
                or (key == "stop_round" and config[key] > config["horizon"]):
            raise StoreError(f"{path}: corrupt deployment store (configuration {key} must be {valid}, "
                             f"got {shown(config[key])})")
    return config


def _snapshot_shape(state, path: str, n_arms: int) -> dict:
    """``state`` if it is what :meth:`Deployment.create` and its calls write -- a dict holding a policy
    run, a numpy Generator, a one-replicate ledger over ``n_arms`` streams and (since session 10) two
    round counters -- else a StoreError. A snapshot that unpickled into something else (an int, a
    list) failed later with an AttributeError or TypeError naming no store."""
    from privbandit.ledger import Ledger
    from privbandit.policies.base import PolicyRun

    ok = type(state) is dict and isinstance(state.get("run"), PolicyRun) \
        and isinstance(state.get("rng"), np.random.Generator) and isinstance(state.get("ledger"), Ledger) \
        and getattr(state["ledger"], "replicates", None) == 1 and getattr(state["ledger"], "streams", None) == n_arms
    counters = state.get("counters") if ok else None
    if ok and counters is not None:
        ok = type(counters) is tuple and len(counters) == 2 and type(counters[0]) is int \
            and (counters[1] is None or type(counters[1]) is int)
    if not ok:
        raise StoreError(f"{path}: corrupt deployment store (its state snapshot is not a policy run, a generator "
                         f"and a ledger over {n_arms} arms, as a deployment writes)")
    return state


def fresh_state(policy, n_arms: int, horizon: int, seed: int, track_realized: bool) -> dict:
    """The state a deployment starts from: the policy's run over one replicate, its generator (seeded
    from ``seed``) and its ledger. Also the specification a stored snapshot is verified against and
    restored into (privbandit.deploy.snapshot): the same configuration builds the same structure."""
    from privbandit.ledger import Ledger

    rng = np.random.default_rng(np.random.SeedSequence(seed))
    ledger = Ledger(1, n_arms, track_replicates=None if track_realized else 0)
    return {"run": policy.start(n_arms, 1, horizon, rng, ledger=ledger), "rng": rng, "ledger": ledger}


class Deployment:
    """An open deployment store. Use :meth:`create` or :meth:`open`; close with :meth:`close` (or a
    ``with`` block). Several processes may hold the same store open: every call is serialised by
    SQLite's write lock and sees the latest committed state."""

    def __init__(self, path: str, conn, config: dict) -> None:
        from privbandit.policies import make_policy

        self.path, self._conn, self.config = path, conn, config
        # the authentication key (never stored; set by create / open), whether a legacy snapshot may be read,
        # and whether the log was checked against the counters and the snapshot (session 14)
        self._key: bytes | None = None
        self._allow_legacy = self._migrate = self._log_checked = False
        self.policy = make_policy(config["policy"], **config["params"])
        self.n_arms, self.horizon = int(config["n_arms"]), int(config["horizon"])
        self.budget, self.delta = float(config["budget_epsilon"]), float(config["delta"])
        self.stop_round = int(config["stop_round"])
        self.on_exhausted, self.strict_rewards = config["on_exhausted"], bool(config["strict_rewards"])
        self._config_digest = config_digest(config)
        self._odometer: Odometer | None = None
        self._cache: tuple[int, dict] | None = None  # (state version, unpickled state)
        # the highest state version this object has read, or committed, or was told of (open's min_version): a
        # store's version only grows (every write bumps it), so a lower one is the store rolled back (session 16)
        self._high_water = 0
        # the file this connection writes (absolute: a later chdir must not look like a replacement)
        self._abspath = os.path.abspath(os.fsdecode(path))
        self._file = _store.file_identity(self._abspath)

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike, policy: str, *, n_arms: int, budget: float, delta: float,
               params: dict | None = None, horizon: int | None = None, seed: int | None = None,
               on_exhausted: str = "exploit", strict_rewards: bool = False,
               synchronous: str = "full", track_realized: bool = True, key: bytes | str | None = None) -> "Deployment":
        """Initialise a new store at ``path`` (which must not exist).

        ``policy`` is a registered private policy name (``privbandit.policies.REGISTRY``) configured
        by ``params``; ``budget`` is the epsilon at ``delta`` the deployment may spend;
        ``horizon`` the rounds the policy is started for (None: the longest horizon the budget
        affords, up to ``odometer.ANYTIME_MAX_HORIZON``); ``seed`` any whole number (None: fresh
        entropy, recorded in the store); ``on_exhausted`` "exploit" or "stop"; ``synchronous``
        "full" (fsync per call: durable through a power cut) or "normal" (durable through a killed
        process only; see ``store.SYNCHRONOUS``); ``track_realized`` keeps the ledger's per-record
        sums for the realized spend in :meth:`status` (its snapshot share grows with the records per
        arm; False keeps only the release counts, and ``realized_epsilon`` is then None); ``key`` (bytes
        or str, at least 16 bytes; None: the environment's ``PRIVBANDIT_DEPLOY_KEY`` or
        ``PRIVBANDIT_DEPLOY_KEY_FILE`` if set, else none) authenticates the store with HMAC-SHA256: every
        write tags the configuration, the counters and the snapshot, and the store then refuses to open
        without the key (docs/deploy.md, "Session 14"). The key is never stored.
        """
        from privbandit.policies import make_policy

        path = _store.store_path(path)
        if params is not None and not isinstance(params, Mapping):  # (dict(3) was a TypeError)
            raise ValueError(f"params must be a mapping of policy parameter names to values, got {shown(params)}")
        params = _json_params(dict(params or {}))
        pol = make_policy(policy, **params)
        if not pol.private:
            raise ValueError(f"policy {pol.name!r} is not private (it releases raw rewards); a deployment "
                             "with a privacy budget needs a private policy")
        if "contexts" in pol.requires:  # select() has no contexts to offer: every decision would fail
            raise ValueError(f"policy {pol.name!r} needs each round's contexts, which a deployment does not take "
                             "(select() has no context argument); deploy a K-armed private policy")
        n_arms = _whole("n_arms", n_arms, 2, N_ARMS_MAX)
        # converted first, then checked (session 16): comparing the caller's object and then storing float() of
        # it let a float subclass whose __float__ lies store budget_epsilon = nan; the shared conversion also
        # names a 400-digit int (float() overflowed) and reads a numpy scalar as a float64 (no float16 cast)
        given_budget, given_delta = budget, delta
        budget, delta = _finite_or_nan("budget", budget), _finite_or_nan("delta", delta)
        if not 0 < budget < math.inf:
            raise ValueError(f"budget must be a real number in (0, inf), got {shown(given_budget)}")
        if not 0 < delta < 1:
            raise ValueError(f"delta must be a real number in (0, 1), got {shown(given_delta)}")
        if horizon is not None:
            # below 2^63, as simulate's: rounds are int64 in the policies' state (10^30 reached Private-UCB's
            # compiled kernel as a Python object: numba's TypingError, an internal error on the command line)
            horizon = _whole("horizon", horizon, n_arms, 2**63 - 1)
        if seed is None:
            seed = int(np.random.SeedSequence().entropy)
        seed = _whole("seed", seed, 0)
        # (``in`` alone: an array was numpy's "truth value ... is ambiguous", naming no parameter)
        on_exhausted = choice("on_exhausted", on_exhausted, ON_EXHAUSTED)
        synchronous = choice("synchronous", synchronous, _store.SYNCHRONOUS)
        if not isinstance(track_realized, bool):
            raise ValueError(f"track_realized must be True or False, got {shown(track_realized)}")
        if not isinstance(strict_rewards, bool):
            raise ValueError(f"strict_rewards must be True or False, got {shown(strict_rewards)}")
        key = _store.resolve_key(key, new_store=True)

        p = plan(pol, n_arms, float(budget), float(delta), horizon)
        odo = Odometer(pol, p.horizon, n_arms, float(delta))
        if p.stop_round == 0:
            raise ValueError(f"budget {exact_text(budget)} affords no policy round: one round certifies epsilon "
                             f"{exact_text(odo.epsilon(1))} at delta {exact_text(delta)}")  # (a Fraction has no :g format)
        fresh = fresh_state(pol, n_arms, p.horizon, seed, track_realized)
        at_stop = odo.certificate(p.stop_round)
        config = {
            "policy": pol.name, "params": params, "n_arms": n_arms, "horizon": p.horizon, "anytime": p.anytime,
            "budget_epsilon": float(budget), "delta": float(delta), "seed": seed, "on_exhausted": on_exhausted,
            "strict_rewards": strict_rewards, "synchronous": synchronous,
            "track_realized": track_realized, "stop_round": p.stop_round,
            "certified_at_stop": float(at_stop.value), "accountant_at_stop": at_stop.by,
            "next_round_epsilon": finite(odo.epsilon(p.stop_round + 1)) if p.stop_round < p.horizon else None,
            "created": time.time(),
        }
        blob, digest = _store.dump_state({**fresh, "counters": (0, None), "config_digest": config_digest(config)})
        conn = _store.connect(path, create=True, synchronous=synchronous)
        try:
            _store.initialise(conn, config, blob, digest, path, key)
        except BaseException:
            conn.close()
            raise
        dep = cls(path, conn, config)
        dep._key, dep._odometer = key, odo
        return dep

    @classmethod
    def open(cls, path: str | os.PathLike, *, key: bytes | str | None = None,
             allow_legacy: bool = False, min_version: int = 0) -> "Deployment":
        """Reopen an existing store (a clear :class:`StoreError` if it is missing, corrupt, foreign
        or of another schema version, or if its authentication does not hold; its counters and release
        counts are checked against its log before its first call, :meth:`_check_log`).

        ``key``: the store's authentication key (None: the environment's, see :meth:`create`); a store
        written with a key refuses to open without it, and a key given for a store without a tag is
        refused too. ``allow_legacy``: read a snapshot in the object-pickle format of sessions 1-12
        (refused otherwise) with the restricted unpickler, verify it like a data snapshot and write it
        back in the data format at once -- the store is migrated.

        ``min_version``: the least state version the store may hold (``status()["state_version"]`` as last
        seen, kept elsewhere): a store found at a lower version was rolled back to an earlier state of its own
        -- a restored backup forgets the decisions released since, and their privacy would be spent again --
        and is refused (:class:`StoreError`). Neither the checksum nor the key's tag can see such a rollback
        (the old state is genuine); an open deployment refuses one by itself (:meth:`_info`)."""
        path = _store.store_path(path)
        if not isinstance(allow_legacy, bool):
            raise ValueError(f"allow_legacy must be True or False, got {shown(allow_legacy)}")
        min_version = _whole("min_version", min_version, 0, _MAX_ID)
        key = _store.resolve_key(key)
        conn = _store.connect(path, create=False)
        try:
            config = check_config(_store.check(conn, path), path)
            _store.configure(conn, path, config.get("synchronous", "full"))
            tagged = conn.execute("SELECT COUNT(*) FROM meta WHERE key IN ('auth', 'mac')").fetchone()[0]
            if bool(tagged) != (key is not None):  # (a tagged store with a key: checked by _info below)
                _store.check_mac(path, key, "" if tagged else None, lambda k: None)
            try:
                dep = cls(path, conn, config)
            except ValueError as exc:  # make_policy refused the stored name or parameters
                raise StoreError(f"{path}: corrupt deployment store (configuration policy / params: {exc})") from None
            # (set after construction: subclasses -- the audit bench's planted deployments -- keep __init__'s
            # three arguments)
            dep._key, dep._allow_legacy, dep._high_water = key, allow_legacy, min_version
            with transaction(conn):  # fail now, not at the first call, if the snapshot is damaged
                info, state = dep._state()
                if dep._migrate:  # a legacy snapshot, verified: stored again in the data format, once
                    dep._write(info, state, info["rounds"], info["open_decision"])
                    dep._migrate = False
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _corrupt(path, exc) from None
        except BaseException:
            conn.close()
            raise
        return dep

    @property
    def authenticated(self) -> bool:
        """Whether this store is authenticated with a key (HMAC-SHA256, session 14; docs/deploy.md)."""
        return self._key is not None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._cache = None

    def __enter__(self) -> "Deployment":
        return self

    def __reduce__(self):
        # (pickle's own refusal named a sqlite3.Connection, not what to do; a copy that pickled its state
        # would be a second writer beside this one, outside the store's transactions -- never offered)
        raise TypeError(f"a Deployment cannot be pickled: it is an open store ({str(self.path)!r}); pickle the "
                        "path and call Deployment.open(path) where the deployment is needed")

    def __exit__(self, *exc) -> None:
        self.close()

    # --- state --------------------------------------------------------------------------------
    @property
    def odometer(self) -> Odometer:
        if self._odometer is None:
            self._odometer = Odometer(self.policy, self.horizon, self.n_arms, self.delta)
        return self._odometer

    def _conn_checked(self):
        if self._conn is None:
            raise ValueError("this deployment is closed; reopen it with Deployment.open(path)")
        return self._conn

    def _info(self) -> dict:
        """The state row's counters inside the current transaction (without the snapshot); with a key,
        their authentication tag verified first (every call: the counters decide the next round)."""
        if self._key is None:
            row = self._conn_checked().execute(
                "SELECT version, rounds, open_decision, digest FROM state WHERE id = 1").fetchone()
        else:
            row = self._conn_checked().execute(
                "SELECT version, rounds, open_decision, digest, (SELECT value FROM meta WHERE key = 'mac') "
                "FROM state WHERE id = 1").fetchone()
        if row is None:
            raise StoreError(f"{self.path}: corrupt deployment store (no state row)")
        if self._key is not None:
            row, mac = row[:4], row[4]
            _store.check_mac(self.path, self._key, mac, lambda k: _store.state_mac(k, self.config, *row))
        row = self._cells(row, "NNnT")
        if row[0] < self._high_water:
            self._cache = None
            raise StoreError(
                f"{self.path}: the store is at state version {row[0]}, older than version {self._high_water} "
                "already seen (read, written, or given as min_version): it was rolled back to an earlier state of "
                "its own (a restored backup?), which forgets the decisions released since and would spend their "
                "privacy again; refusing")
        self._high_water = row[0]
        return {"version": row[0], "rounds": row[1], "open_decision": row[2], "digest": row[3]}

    def _cells(self, row, kinds: str) -> tuple:
        return _cells(self.path, self.n_arms, row, kinds)

    def _load(self, info: dict) -> dict:
        """The snapshot of ``info``'s version; the restored state is reused when this process
        wrote (or last read) that version."""
        if self._cache is None or self._cache[0] != info["version"]:
            (blob,) = self._conn.execute("SELECT blob FROM state WHERE id = 1").fetchone()
            stored = _store.load_state(bytes(blob), info["digest"], self.path, self._allow_legacy)
            self._cache = (info["version"], _snapshot_shape(self._restored(stored), self.path, self.n_arms))
        return self._cache[1]

    def _restored(self, stored: dict) -> dict:
        """The stored snapshot (plain data; or, from a store written before session 13, the objects a
        legacy pickle built, encoded first) verified against a fresh run of this configuration and
        restored into it (privbandit.deploy.snapshot): no method of a stored object is ever called,
        and the kernels only ever see arrays of the shapes a run of this configuration has."""
        from privbandit.deploy import snapshot

        corrupt = f"{self.path}: corrupt deployment store (its state snapshot is not a policy run, a generator and a " \
                  f"ledger over {self.n_arms} arms, as a deployment writes, of a {self.config['policy']} run"
        if type(stored) is not dict or not {"run", "rng", "ledger"} <= set(stored):
            raise StoreError(corrupt + ")")
        # beside the run, its generator and ledger: the counters, the configuration digest (checked by
        # _snapshot_shape and _state), and plain scalars an extension may keep (a deployment reads none)
        extra = {k: v for k, v in stored.items() if k not in ("run", "rng", "ledger")}
        for k, v in extra.items():
            if k not in ("counters", "config_digest") and not (type(k) is str and (
                    v is None or type(v) in (bool, int, float, str))):
                raise StoreError(f"{corrupt}: snapshot.{k} is a {type(v).__name__}, not a plain value)")
        self._check_config_digest(extra.get("config_digest"))  # (before the run is compared with a fresh one of the
        # configuration: an edited configuration is named as such, not as the float it changed, session 14)
        body = {k: stored[k] for k in ("run", "rng", "ledger")}
        try:
            if not (type(body["run"]) is tuple and body["run"][:1] == (snapshot.OBJ,)):  # legacy: live objects
                body = snapshot.encode(_snapshot_shape(dict(body), self.path, self.n_arms))
                self._migrate = True  # (only reached with allow_legacy: open() writes it back as data)
            state = snapshot.restore(body, fresh_state(self.policy, self.n_arms, self.horizon, self.config["seed"],
                                                       self.config.get("track_realized", True)))
        except StoreError:
            raise
        except snapshot.SnapshotMismatch as exc:
            raise StoreError(f"{corrupt}: {exc})") from None
        except Exception as exc:  # a verified state its own classes still refuse
            raise StoreError(f"{corrupt}: {type(exc).__name__}: {exc})") from None
        state.update(extra)
        return state

    def _check_config_digest(self, recorded) -> None:
        """The configuration digest a snapshot carries against the configuration in ``meta`` (absent from
        stores written before session 10: added at their next write)."""
        if recorded is not None and recorded != self._config_digest:
            raise StoreError(f"{self.path}: corrupt deployment store (its configuration does not match the one its "
                             "snapshot was written with): it was modified outside privbandit")

    def _state(self) -> tuple[dict, dict]:
        info = self._info()
        state = self._load(info)
        # The state row's counters decide the odometer (rounds opened) and the open round; the digest
        # covers the snapshot only, so the snapshot carries its own copy of them and they must agree.
        # A store written before the snapshot held them (no "counters") is read as it is; its next
        # write adds them.
        self._check_config_digest(state.get("config_digest"))
        counters = state.get("counters")
        if counters is not None and tuple(counters) != (info["rounds"], info["open_decision"]):
            raise StoreError(f"{self.path}: corrupt deployment store (the state row says {info['rounds']} policy "
                             f"rounds, open decision {info['open_decision']}; its snapshot says {counters[0]}, "
                             f"{counters[1]}): it was modified outside privbandit")
        return info, state

    def _log_check(self, info: dict) -> None:
        """:meth:`_check_log` once per opened deployment, before its first select, update or status (in that
        call's transaction). Not in :meth:`open` itself, nor in :meth:`history` / :meth:`snapshot`: the
        deployment audit opens the store through them to report such a store's inconsistencies against the
        replay, which it cannot do for a store it cannot open."""
        if not self._log_checked:
            self._check_log(info, self._load(info))
            self._log_checked = True

    def _check_log(self, info: dict, state: dict) -> None:
        """Session 14: the state row's counters and the snapshot's release counts against the store's
        own log, with SQL aggregates (no replay: that is the audit's). The counters decide the
        odometer (``cert(rounds)``) and the filter, and the release counts are the ledger's: a store whose
        counters were rewound, or whose snapshot counts fewer releases than its decisions record, claims
        less spending than its log shows. Refused if

        * the policy decisions are not rounds 1 .. rounds, once each, or a hold / exploit decision has a round;
        * the open round is not the last policy round without a reward (or, with none open, the last
          policy round has no applied reward), or the applied rewards are not one per closed round;
        * the ledger's releases per arm (``Ledger.draws``) differ from the sum of the releases every
          decision and update logged.

        What this cannot see without a replay or a key: a log edited along with them (rows deleted, the
        counters and the ledger's counts lowered to match), and per-record sums lowered within a
        consistent count -- the audit's replay sees both, the key (:meth:`create`) makes them detectable."""
        conn, rounds, open_decision = self._conn, info["rounds"], info["open_decision"]
        n, top, distinct, low, stray = self._cells(conn.execute(
            "SELECT SUM(kind = 'policy'), COALESCE(MAX(CASE WHEN kind = 'policy' THEN round END), 0), "
            "COUNT(DISTINCT CASE WHEN kind = 'policy' THEN round END), "
            "COALESCE(MIN(CASE WHEN kind = 'policy' THEN round END), 1), "
            "SUM(kind != 'policy' AND round IS NOT NULL) FROM decisions").fetchone(), "nNNNn")
        n, stray = n or 0, stray or 0
        if not n == distinct == top == rounds or low != 1 or stray:
            raise LogMismatch(f"{self.path}: corrupt deployment store (the state row counts {rounds} policy rounds, its "
                             f"log holds {n} policy decisions over rounds {low if n else '-'} .. {top if n else '-'}"
                             f"{f' and {stray} other decisions with a round' if stray else ''}): it was modified "
                             "outside privbandit")
        applied, applied_policy, flags = self._cells(conn.execute(
            "SELECT COALESCE(SUM(u.applied != 0), 0), COALESCE(SUM(u.applied != 0 AND d.kind = 'policy'), 0), "
            "COALESCE(SUM(u.applied IS NOT 0 AND u.applied IS NOT 1), 0) "
            "FROM updates u LEFT JOIN decisions d ON d.id = u.decision_id").fetchone(), "NNN")
        if flags:  # (status summed the flags: an applied = 7 counted seven applied rewards -- session 17)
            raise LogMismatch(f"{self.path}: corrupt deployment store ({flags} update(s) with an applied flag other "
                              "than 0 or 1): it was modified outside privbandit")
        last = None if not rounds else conn.execute(
            "SELECT d.id, u.applied FROM decisions d LEFT JOIN updates u ON u.decision_id = d.id "
            "WHERE d.kind = 'policy' AND d.round = ?", (rounds,)).fetchone()
        closed = rounds - (open_decision is not None)
        ok = applied == applied_policy == closed and (
            last is None and open_decision is None
            or last is not None and (last[0] == open_decision and last[1] is None
                                     or open_decision is None and last[1] not in (None, 0)))
        if not ok:
            raise LogMismatch(f"{self.path}: corrupt deployment store (the state row says {rounds} policy rounds, open "
                             f"decision {open_decision}; its log holds {applied} rewards fed to the policy "
                             f"({applied_policy} of them for policy decisions), and round {rounds}'s decision is "
                             f"{'missing' if last is None else last[0]} with "
                             f"{'no reward' if last is None or last[1] is None else 'its reward'}): it was "
                             "modified outside privbandit")
        logged = _logged_releases(conn, self.path, self.n_arms)
        drawn = [int(c) for c in state["ledger"].draws[0]]
        if logged != drawn:
            raise LogMismatch(f"{self.path}: corrupt deployment store (its snapshot's ledger counts {drawn} releases per "
                             f"arm, its log records {logged}): it was modified outside privbandit")

    def _write(self, info: dict, state: dict, rounds: int, open_decision) -> str:
        state["ledger"].draws  # drains what the ledger staged: a snapshot holds no staged release
        state["counters"] = (rounds, open_decision)
        state["config_digest"] = self._config_digest
        blob, digest = _store.dump_state(state)
        version = info["version"] + 1
        self._conn.execute("UPDATE state SET version = ?, rounds = ?, open_decision = ?, blob = ?, digest = ? "
                           "WHERE id = 1", (version, rounds, open_decision, blob, digest))
        if self._key is not None:  # (in the same transaction: the tag and the row it covers commit together)
            self._conn.execute("UPDATE meta SET value = ? WHERE key = 'mac'",
                               (_store.state_mac(self._key, self.config, version, rounds, open_decision, digest),))
        self._cache = (version, state)
        return digest

    def _call(self, body):
        """Run ``body`` in one write transaction; on any failure the in-memory state (which the body
        may have advanced) is dropped so that the next call reloads the committed snapshot."""
        conn = self._conn_checked()
        try:
            with transaction(conn):
                result = body()
        except sqlite3.DatabaseError as exc:
            self._cache = None
            raise _corrupt(self.path, exc) from None
        except BaseException:
            self._cache = None
            raise
        if _store.file_identity(self._abspath) != self._file:
            # An open connection keeps writing to its file after the file is deleted, moved or replaced
            # (a directory swapped for another, a restore from backup): decisions were then released
            # and counted only in a file no one can open again, and a reopened store (or a restored
            # older copy) under-counted what was released. A call's result is returned only if, after
            # its commit, the path still names the file it was committed to (one stat per call).
            self._cache = None
            raise StoreError(f"{self.path}: the store file was deleted, moved or replaced while open; this call's "
                             "result was not released (its record went to the old file): open the store again")
        if self._cache is not None:  # committed: the version this call wrote (or read) is now the least allowed
            self._high_water = max(self._high_water, self._cache[0])
        return result

    # --- the online API -----------------------------------------------------------------------
    def select(self) -> Decision:
        """The next decision (see the module docstring for policy, hold and exploit decisions)."""

        def body() -> Decision:
            info = self._info()
            self._log_check(info)
            rounds, open_decision = info["rounds"], info["open_decision"]
            releases = [0] * self.n_arms
            if rounds >= self.stop_round:
                if self.on_exhausted == "stop":
                    cause = "horizon" if self.stop_round == self.horizon else "budget"
                    raise BudgetExhausted(
                        f"{cause} exhausted: {rounds} policy rounds certify epsilon "
                        f"{exact_text(self.odometer.epsilon(rounds))} at delta {exact_text(self.delta)}"
                        + (f"; round {rounds + 1} would certify {exact_text(self.odometer.epsilon(rounds + 1))} > "
                           f"budget {exact_text(self.budget)}" if cause == "budget" else f" (horizon {self.horizon})"))
                kind, t, arm = "exploit", None, self._exploit_arm()
            elif open_decision is not None:
                (arm,) = self._cells(self._conn.execute("SELECT arm FROM decisions WHERE id = ?",
                                                        (open_decision,)).fetchone(), "A")
                kind, t = "hold", None
            else:
                state = self._load(info)
                ledger = state["ledger"]
                before = ledger.draws[0].copy()
                t = rounds + 1
                arm = int(state["run"].select(t)[0])
                if not 0 <= arm < self.n_arms:
                    raise RuntimeError(f"policy returned arm {arm} outside [0, {self.n_arms})")
                kind = "policy"
                releases = (ledger.draws[0] - before).tolist()
            cur = self._conn.execute(
                "INSERT INTO decisions (round, arm, kind, releases, state_digest, created) VALUES (?, ?, ?, ?, ?, ?)",
                (t, arm, kind, json.dumps(releases), info["digest"], time.time()))
            decision = cur.lastrowid
            if kind == "policy":
                digest = self._write(info, state, t, decision)
                self._conn.execute("UPDATE decisions SET state_digest = ? WHERE id = ?", (digest, decision))
            return Decision(decision, int(arm), kind, t)

        return self._call(body)

    def update(self, decision: int, reward: float) -> UpdateResult:
        """Record the reward of ``decision`` (delayed and out-of-order rewards welcome).

        The reward must be a finite real; outside [0, 1] it is clipped (``strict_rewards``: refused).
        A second update of the same decision with the same reward is an idempotent no-op
        (``duplicate=True``); with a different reward it is refused (a reward is final)."""
        decision = _whole("decision", decision, 1)
        raw, reward = check_reward(reward, self.strict_rewards)
        if decision > _MAX_ID:  # SQLite ids are 64-bit: such a decision cannot exist (and cannot be bound)
            raise ValueError(f"decision {shown(decision)} does not exist in {self.path}")

        def body() -> UpdateResult:
            row = self._conn.execute("SELECT round, arm, kind FROM decisions WHERE id = ?", (decision,)).fetchone()
            if row is None:
                raise ValueError(f"decision {shown(decision)} does not exist in {self.path}")
            t, arm, kind = self._cells(row, "nAK")
            if (t is None) != (kind != "policy"):
                raise StoreError(f"{self.path}: corrupt deployment store (decision {decision}: kind {kind} "
                                 f"with round {t!r})")
            done = self._conn.execute("SELECT raw_reward, reward, applied FROM updates WHERE decision_id = ?",
                                      (decision,)).fetchone()
            if done is not None:
                done = self._cells(done, "RRN")
                if done[0] == raw:
                    return UpdateResult(decision, float(done[1]), bool(done[2]), True)
                raise ValueError(f"decision {decision} already has reward {done[0]!r}; a reward is final "
                                 f"(got {shown(raw)})")
            info = self._info()
            self._log_check(info)
            applied = kind == "policy"
            digest = info["digest"]
            releases = [0] * self.n_arms
            if applied:
                if info["open_decision"] != decision:  # only the open round can lack its reward
                    raise StoreError(f"{self.path}: corrupt deployment store (policy decision {decision} "
                                     f"has no reward but round {info['open_decision']} is open)")
                state = self._load(info)
                ledger = state["ledger"]
                before = ledger.draws[0].copy()
                state["run"].update(t, np.array([arm], dtype=np.intp), np.array([reward]))
                releases = (ledger.draws[0] - before).tolist()
                digest = self._write(info, state, info["rounds"], None)
            self._conn.execute("INSERT INTO updates VALUES (?, ?, ?, ?, ?, ?, ?)",
                               (decision, reward, raw, int(applied), json.dumps(releases), digest, time.time()))
            return UpdateResult(decision, reward, applied, False)

        return self._call(body)

    def _exploit_arm(self) -> int:
        """The arm the policy chose most often in its released rounds (ties: the lowest index)."""
        row = self._conn.execute("SELECT arm, COUNT(*) AS n FROM decisions WHERE kind = 'policy' "
                                 "GROUP BY arm ORDER BY n DESC, arm ASC LIMIT 1").fetchone()
        return 0 if row is None else self._cells(row, "AN")[0]

    # --- reporting ----------------------------------------------------------------------------
    def status(self, last: int = 5) -> dict[str, Any]:
        """Spent (certified and realized, at delta), remaining budget, counts, pulls, last releases.

        ``spent_epsilon`` is the odometer: the certificate of the policy rounds opened so far;
        ``realized_epsilon`` the ledger's worst record of this transcript (pure, KOV and GDP
        accountants), to be compared with ``certified_closed_form_epsilon`` (the certificate in the
        same currency; realized <= certified always). ``last``: how many of the latest policy rounds
        ``last_releases`` lists -- any whole number >= 0; one beyond the rounds opened lists them all
        (``last=10**400`` is "all", not an error: a count has no upper limit)."""
        last = min(_whole("last", last, 0), _MAX_ID)  # (SQLite's LIMIT -1 would list every round)
        conn = self._conn_checked()
        try:
            return self._status(conn, last)
        except sqlite3.DatabaseError as exc:
            self._cache = None
            raise _corrupt(self.path, exc) from None

    def _status(self, conn: sqlite3.Connection, last: int) -> dict[str, Any]:
        from privbandit.ledger import CLOSED_FORM_ACCOUNTANTS, REALIZED_ROUND_UP

        conn.execute("BEGIN")  # a read transaction: one consistent snapshot
        try:
            info, state = self._state()
            self._log_check(info)
            counts = dict(self._cells(r, "KN") for r in conn.execute("SELECT kind, COUNT(*) FROM decisions GROUP BY kind"))
            n_updates, n_applied = self._cells(
                conn.execute("SELECT COUNT(*), COALESCE(SUM(applied), 0) FROM updates").fetchone(), "NN")
            pulls = [0] * self.n_arms
            for row in conn.execute("SELECT arm, COUNT(*) FROM decisions GROUP BY arm"):
                arm, n = self._cells(row, "AN")
                pulls[arm] = n
            recent = conn.execute(
                "SELECT d.id, d.round, d.arm, d.releases, u.reward, u.releases FROM decisions d "
                "LEFT JOIN updates u ON u.decision_id = d.id WHERE d.kind = 'policy' ORDER BY d.id DESC LIMIT ?",
                (int(last),)).fetchall()
            recent = [self._cells(row, "NnAJrj") for row in recent]
        finally:
            conn.execute("COMMIT")
        rounds = info["rounds"]
        cert = self.odometer.certificate(rounds)
        ledger = state["ledger"]
        realized = float(ledger.realized_epsilon(self.delta)[0])
        if not self.config.get("track_realized", True):
            closed = math.nan  # no realized spend to compare with
        elif rounds == 0:
            closed = 0.0
        else:
            # rounded up like the ledger's per-record sums, so equal spends read equal (session 13)
            closed = float(self.odometer.schedule.epsilon(rounds, self.delta, CLOSED_FORM_ACCOUNTANTS).value
                           ) * (1.0 + REALIZED_ROUND_UP)
        n_decisions = sum(counts.values())
        exhausted = rounds >= self.stop_round
        return {
            "store": self.path, "schema_version": _store.SCHEMA_VERSION, "state_version": info["version"],
            "authenticated": self.authenticated,
            "policy": self.config["policy"], "params": self.config["params"], "n_arms": self.n_arms,
            "horizon": self.horizon, "anytime": bool(self.config["anytime"]), "seed": self.config["seed"],
            "delta": self.delta, "budget_epsilon": self.budget,
            "spent_epsilon": finite(cert.value), "remaining_epsilon": finite(self.budget - cert.value),
            "realized_epsilon": finite(realized), "certified_closed_form_epsilon": finite(closed),
            "odometer": {"policy_rounds": rounds, "epsilon": finite(cert.value), "delta": self.delta,
                         "accountant": cert.by, "theorem": self.odometer.theorem(rounds)},
            "filter": {"stop_round": self.stop_round, "certified_at_stop": self.config["certified_at_stop"],
                       "next_round_epsilon": self.config["next_round_epsilon"], "exhausted": exhausted,
                       "on_exhausted": self.on_exhausted},
            "decisions": n_decisions, "policy_rounds": rounds, "hold_decisions": counts.get("hold", 0),
            "exploit_decisions": counts.get("exploit", 0), "updates": int(n_updates),
            "applied_updates": int(n_applied), "pending": n_decisions - int(n_updates),
            "open_decision": info["open_decision"], "pulls": pulls,
            "releases_per_arm": ledger.draws[0].tolist(),
            "last_releases": [{"decision": d, "round": t, "arm": a, "select_releases": rs,
                               "reward": r, "update_releases": ru}
                              for d, t, a, rs, r, ru in recent],
        }

    def snapshot(self) -> dict:
        """The committed state (``run``, ``rng``, ``ledger``), read in one transaction and digest-checked:
        for an auditor (privbandit.audit.deployment). Curator's view: it holds every noisy value drawn."""
        conn = self._conn_checked()
        conn.execute("BEGIN")
        try:
            return self._state()[1]
        finally:
            conn.execute("COMMIT")

    def decisions(self) -> list[dict[str, Any]]:
        """Every decision with its reward (None while pending), in order: the deployment's log.

        ``releases`` are the releases per arm the decision's ``select`` made, ``update_releases`` those
        its ``update`` made (None while pending; e.g. a batch closing on that reward); ``state_digest`` and
        ``update_state_digest`` the digests of the snapshot each call left (the deployment audit
        recomputes them)."""
        try:
            rows = self._conn_checked().execute(
                "SELECT d.id, d.round, d.arm, d.kind, d.releases, d.state_digest, u.reward, u.raw_reward, u.applied, "
                "u.releases, u.state_digest FROM decisions d LEFT JOIN updates u ON u.decision_id = d.id "
                "ORDER BY d.id").fetchall()
        except sqlite3.DatabaseError as exc:
            raise _corrupt(self.path, exc) from None
        rows = [self._cells(row, "NnAKJTrrnjt") for row in rows]
        return [{"decision": d, "round": t, "arm": a, "kind": k, "releases": rs, "state_digest": sd,
                 "reward": r, "raw_reward": raw, "applied": None if ap is None else bool(ap), "update_releases": ru,
                 "update_state_digest": usd}
                for d, t, a, k, rs, sd, r, raw, ap, ru, usd in rows]

    def history(self) -> dict[str, Any]:
        """The store as one consistent read, for an auditor (privbandit.audit.deployment): the
        configuration, the state row's counters (``rounds`` policy rounds opened, ``open_decision``),
        the log (:meth:`decisions`) and the committed snapshot (:meth:`snapshot`), all inside one read
        transaction, so a service writing concurrently cannot interleave a call between them.
        Curator's view: the snapshot holds every noisy value drawn."""
        conn = self._conn_checked()
        conn.execute("BEGIN")
        try:
            info, state = self._state()
            log = self.decisions()
        except sqlite3.DatabaseError as exc:
            self._cache = None
            raise _corrupt(self.path, exc) from None
        finally:
            conn.execute("COMMIT")
        return {"config": dict(self.config), "rounds": info["rounds"], "open_decision": info["open_decision"],
                "decisions": log, "snapshot": state}
