"""Audit of a deployment's store: does the live service spend what its filter and odometer claim?

:mod:`privbandit.deploy` runs one replicate of a private policy online, with a privacy filter fixed at
creation (``stop = max{t : cert(t) <= budget}``) and a data-independent odometer ``cert(rounds)``
(docs/deploy.md). Its guarantee rests on three facts the policy audits cannot see: the policy is called
exactly as in the synchronous run ``select(1), update(1), select(2), ...``; no policy round opens past
``stop``; and nothing but a policy round draws noise. :func:`deployment_audit` re-derives each from the
store (its configuration, its decision and update log, and the committed snapshot):

* **filter** -- ``stop`` recomputed from the configuration (policy, parameters, arms, horizon, budget,
  delta) by the odometer, and the policy rounds actually opened (in the log) at most ``stop``: their
  certificate at delta never exceeds the budget.
* **rounds** -- the policy decisions carry rounds 1, 2, ..., n, each once, n the store's round counter;
  hold and exploit decisions carry none.
* **arms** (session 14) -- hold and exploit decisions play the arms ``Deployment.select``'s data-independent
  rules give from the log alone (the open decision's arm; the arm chosen most often in the policy rounds before).
* **releases** -- hold and exploit decisions, and rewards not fed to the policy, made no release; the
  ledger in the snapshot counts exactly the releases the log records (a release the log does not show
  is a draw outside a policy call).
* **rewards** (session 17) -- every applied update fed the policy a value in [0, 1], and one raw reward was
  always fed as one value: what a record contributes is a fixed map of its own raw value (the replay below
  feeds the logged values, so it cannot see how they were made).
* **interventions** (session 18, when the deployment class is given) -- the class replayed on scratch stores
  through the logged raw rewards, and again with a fixed half of them changed: every later record of the other
  half must be fed the same value (privbandit.audit.fed_interventions): with continuous rewards no raw value
  repeats, and ``rewards`` cannot see a map that reads other records.
* **replay** -- the policy started from the configuration's seed and driven through the logged policy
  rounds (``select(t)`` must return the logged arm; ``update`` with the logged reward) ends in the
  snapshot's generator state with the same ledger counts: the committed history *is* the synchronous
  run the certificate covers. Noise re-drawn or skipped at a restart (a generator re-seeded, a snapshot
  not restored) or a select made twice for one round breaks it.
* **snapshot** (session 13) -- the replay's state compared with the committed snapshot field by field
  (every array and scalar of the run, its generator and its ledger; the ledger's query cache aside): a
  stale noise state restored after a crash, an odometer or a count that differs from the logged history,
  is named by its field. **digest**: every decision's and update's ``state_digest`` cell is recomputed
  from the replay (the snapshot the call must have left: its state, counters and configuration digest);
  a hold, exploit or stored-only reward must name a snapshot the replay passed through. Cells written in
  the object-pickle format of sessions 1-12 (before a store's first data-only write) are recomputed in
  that format; one that matches neither is a finding once any cell has matched, else unverifiable (a
  note, INCONCLUSIVE).
* **raised** -- an exception raised by the policy while it is replayed is an observation
  (privbandit.audit.raised), not a crash of the audit: every logged round completed in the live
  deployment, so a replay that raises is not the logged run (a finding). An exception of the policy
  or ledger code while the stored snapshot is read or queried makes the audit INCONCLUSIVE, naming it.
* **realized** -- the snapshot ledger's realized spend (closed-form accountants) within the schedule's
  certificate in the same currency at the opened rounds (DESIGN.md's invariant, as ``status()`` reports
  it), when the deployment tracks it.

Each check is exact: a finding is a witness in the store, never a statistical judgement.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from privbandit.audit.raised import NOT_OBSERVED, Clock, PolicyRaised, Raised, policy_code

REL_TOL = 1e-6
"""Relative slack on realized <= certified (two accountants' floating-point outputs; see ledger_audit)."""


@dataclasses.dataclass
class DeploymentFinding:
    check: str  # filter | rounds | arms | releases | rewards | interventions | replay | snapshot | digest | raised | realized | status
    detail: str


@dataclasses.dataclass
class DeploymentAuditResult:
    store: str
    policy: str
    rounds: int
    stop_round: int
    findings: list[DeploymentFinding]
    #: what could not be checked (an exception of the policy or ledger code, digests in an older format)
    notes: list[str] = dataclasses.field(default_factory=list)
    #: True when a note means a check could not run: the audit is then INCONCLUSIVE, never CONSISTENT
    incomplete: bool = False

    @property
    def verdict(self) -> str:
        return "VIOLATION" if self.findings else "INCONCLUSIVE" if self.incomplete else "CONSISTENT"

    @property
    def checks(self) -> list[str]:
        return sorted({f.check for f in self.findings})

    def summary(self) -> str:
        head = (f"deployment audit of {self.store} ({self.policy}): {self.rounds} policy rounds, filter stop "
                f"{self.stop_round}")
        if self.verdict == "INCONCLUSIVE":
            return f"{head}: INCONCLUSIVE ({self.notes[0] if self.notes else 'a check could not run'})"
        if not self.findings:
            return f"{head}: CONSISTENT (filter, rounds, arms, releases, replay, snapshot, digests and realized spend check out)"
        return f"{head}: VIOLATION ({', '.join(self.checks)}; first: {self.findings[0].detail})"


def _unreleased_arm(log) -> DeploymentFinding | None:
    """Check ``arms`` (session 14): hold and exploit decisions release no noise, so their arms must be
    functions of what was released -- ``Deployment.select``'s rules, read off the log alone: a hold repeats
    the open policy decision's arm (the latest policy decision: one is open at a time), an exploit plays the
    arm chosen most often in the policy rounds logged before it (ties: the lowest index; arm 0 before any).
    An arm from anything else -- the rewards (round 16's ``deploy_exploit_best_observed``: "the best observed
    mean") -- publishes data with no noise and no certificate."""
    counts: dict[int, int] = {}
    latest = None
    for d in log:
        if d["kind"] == "policy":
            counts[d["arm"]] = counts.get(d["arm"], 0) + 1
            latest = d
        elif d["kind"] == "exploit":
            rule = min(counts, key=lambda a: (-counts[a], a)) if counts else 0
            if d["arm"] != rule:
                return DeploymentFinding("arms", (
                    f"exploit decision {d['decision']} played arm {d['arm']}, but the exploit rule (the arm chosen "
                    f"most often in the {sum(counts.values())} policy rounds before it) gives arm {rule}: an arm "
                    "chosen from something other than the releases, e.g. the rewards"))
        elif d["kind"] == "hold" and (latest is None or d["arm"] != latest["arm"]):
            return DeploymentFinding("arms", (
                f"hold decision {d['decision']} played arm {d['arm']}, not the open policy decision's arm "
                f"{'(none was open)' if latest is None else latest['arm']}: a hold repeats that decision"))
    return None


def deployment_audit(path, deployment=None, *, min_version: int = 0) -> DeploymentAuditResult:
    """Audit the deployment store at ``path`` (module docstring). The store is only read.

    ``min_version``: the least state version the store may hold (``Deployment.open``'s, session 16): a store
    rolled back to an earlier state of its own is genuine in every cell the audit reads, so only a version kept
    elsewhere can refuse it (a ``StoreError``, as the deployment's own open).

    ``deployment``: the :class:`privbandit.deploy.Deployment` (sub)class the service runs, when it is not the
    library's own: its ``status()`` -- the operator's odometer -- is then read on a private copy of the store
    (its ``open`` may write) and compared with the odometer recomputed from the configuration (check
    ``status``, session 14: round 16's ``deploy_odometer_since_reopen`` reported 0.0 spent after a reopen,
    with no trace in the store)."""
    from privbandit.deploy.deployment import Deployment
    from privbandit.deploy.odometer import Odometer
    from privbandit.ledger import CLOSED_FORM_ACCOUNTANTS
    from privbandit.policies import make_policy

    with Deployment.open(path, min_version=min_version) as dep:
        history = dep.history()  # one read transaction: log, counters and snapshot agree
    config, log, state = history["config"], history["decisions"], history["snapshot"]
    status_rounds = int(history["rounds"])
    k = int(config["n_arms"])
    for d in log:  # per-arm release counts as logged; a malformed cell is a damaged store, not a verdict
        d["releases"] = _release_counts(path, d["releases"], k)
        d["update_releases"] = None if d["update_releases"] is None else _release_counts(path, d["update_releases"], k)
    findings: list[DeploymentFinding] = []
    policy = make_policy(config["policy"], **config["params"])
    horizon, delta = int(config["horizon"]), float(config["delta"])
    budget = float(config["budget_epsilon"])
    odo = Odometer(policy, horizon, k, delta)
    stop = odo.stop_round(budget)
    policy_rows = [d for d in log if d["kind"] == "policy"]
    n = len(policy_rows)

    # filter
    if int(config["stop_round"]) > stop:
        findings.append(DeploymentFinding("filter", (
            f"the stored filter stops at round {config['stop_round']}, but the budget {budget:g} at delta {delta:g} "
            f"affords only {stop} rounds (cert({stop + 1}) = {odo.epsilon(stop + 1):.6g})")))
    if n > stop:
        findings.append(DeploymentFinding("filter", (
            f"{n} policy rounds were opened, {n - stop} past the budget: their certificate {odo.epsilon(n):.6g} > "
            f"budget {budget:g} at delta {delta:g}")))

    # rounds
    rounds = [d["round"] for d in policy_rows]
    if rounds != list(range(1, n + 1)) or n != status_rounds:
        findings.append(DeploymentFinding("rounds", (
            f"policy decisions carry rounds {rounds[:8]}{' ...' if n > 8 else ''}, the store counts {status_rounds}: "
            "not the synchronous run 1, 2, ..., n")))
    if any(d["round"] is not None for d in log if d["kind"] != "policy"):
        findings.append(DeploymentFinding("rounds", "a hold or exploit decision carries a policy round"))
    arms = _unreleased_arm(log)
    if arms is not None:
        findings.append(arms)

    # releases
    ledger = state["ledger"]
    logged = np.zeros(k, dtype=np.int64)
    for d in log:
        rel = d["releases"]
        if d["kind"] != "policy" and rel.any():
            findings.append(DeploymentFinding("releases", (
                f"decision {d['decision']} ({d['kind']}) made {int(rel.sum())} releases: only a policy round may draw "
                "noise")))
            break
    for d in log:
        logged += d["releases"]
        if d["update_releases"] is not None:
            logged += d["update_releases"]
    notes: list[str] = []
    incomplete = False
    try:
        drawn = np.asarray(ledger.draws[0], dtype=np.int64)
    except NOT_OBSERVED:
        raise
    except Exception as exc:  # noqa: BLE001 -- the stored ledger's own code: an observation, not a crash
        notes.append(f"the snapshot's ledger could not be read: {Raised.of(exc, n).describe()}")
        incomplete, drawn = True, logged
    if not np.array_equal(drawn, logged):
        findings.append(DeploymentFinding("releases", (
            f"the snapshot's ledger counts {drawn.tolist()} releases per arm, the log records {logged.tolist()}: "
            "releases were made outside the logged calls")))

    # rewards (session 17): what the policy was fed is a fixed map of each record's own raw value into [0, 1]
    findings.extend(_fed_rewards(log))

    # replay: the synchronous run from the seed, through the logged policy rounds; then the replayed state
    # against the snapshot, and every call's digest cell against the snapshot the replay says it left
    replay = _Replay(policy, config, k, horizon)
    findings.extend(replay.run(log, state))
    notes.extend(replay.notes)
    incomplete |= replay.incomplete

    # realized <= certified, in the same currency
    if config.get("track_realized", True) and n:
        try:
            realized = float(np.nanmax(ledger.realized_epsilon(delta)))
        except NOT_OBSERVED:
            raise
        except Exception as exc:  # noqa: BLE001 -- see above
            notes.append(f"the snapshot's realized spend could not be computed: {Raised.of(exc, n).describe()}")
            incomplete, realized = True, -math.inf
        cert = float(odo.schedule.epsilon(n, delta, CLOSED_FORM_ACCOUNTANTS).value)
        if math.isfinite(cert) and realized > cert * (1 + REL_TOL) + 1e-12:
            findings.append(DeploymentFinding("realized", (
                f"the ledger's realized epsilon {realized:.6g} exceeds the certificate {cert:.6g} of {n} policy rounds "
                f"at delta {delta:g} (closed-form accountants)")))
    if deployment is not None and deployment is not Deployment:
        found, note = _status_check(path, deployment, odo, budget, n, stop)
        findings.extend(found)
        if note:
            notes.append(note)
            incomplete = True
        # interventions (session 18): the class replayed on scratch stores with earlier raw rewards changed
        from privbandit.audit.fed_interventions import fed_interventions

        found, more = fed_interventions(deployment, config, log)
        findings.extend(DeploymentFinding(check, detail) for check, detail in found)
        if more:
            notes.extend(more)
            incomplete = True
    return DeploymentAuditResult(str(path), config["policy"], n, stop, findings, notes, incomplete)


def _fed_rewards(log) -> list[DeploymentFinding]:
    """Check ``rewards`` (session 17): every applied update fed the policy a value in [0, 1], and one raw reward
    was always fed as one value.

    The replay feeds the logged (fed) rewards, so it cannot see how they were made. Every policy's sensitivity
    rests on each record moving its statistics by a value in [0, 1] that depends on that record alone: the
    library feeds clip(raw), and any fixed map of the raw value (0 -> 0.5, say: "no response" read as the prior
    mean) keeps that. A raw value fed as two different values was mapped through something else -- another
    record (round 19's ``deploy_zero_reward_imputed`` carried the arm's last applied reward forward into every
    later zero: one user's reward entered the policy once per later non-responder) or the state. A deterministic
    map that reads other records but happens to agree on every repeated raw value is not seen (documented
    limit), nor is a randomised map (flagged, though it may be private)."""
    fed: dict[float, float] = {}
    for d in log:
        if not d["applied"] or d["reward"] is None:
            continue
        value, raw = float(d["reward"]), d["raw_reward"]
        if not 0.0 <= value <= 1.0:  # (a NaN fails this too)
            return [DeploymentFinding("rewards", (
                f"decision {d['decision']} fed the policy the reward {value!r}, outside [0, 1]: every sensitivity "
                "assumes rewards clipped into [0, 1]"))]
        if raw is None:
            continue
        first = fed.setdefault(float(raw), value)
        if first != value:
            return [DeploymentFinding("rewards", (
                f"the raw reward {float(raw)!r} was fed to the policy as {first!r} and as {value!r} (decision "
                f"{d['decision']}): the value fed depends on more than its own record, so one record can move the "
                "policy's statistics more than once"))]
    return []


def _status_check(path, deployment, odo, budget: float, n: int, stop: int) -> tuple[list, str | None]:
    """Check ``status``: ``deployment.open`` on a copy of the store, then its ``status()`` against the
    odometer recomputed from the configuration at the ``n`` policy rounds the log shows: spent epsilon never
    below cert(n), remaining never above budget - cert(n), the round count and the exhausted flag as logged."""
    import os
    import shutil
    import sqlite3
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "store.db")
        with sqlite3.connect(str(path)) as src, sqlite3.connect(copy) as dst:
            src.backup(dst)  # a consistent copy even of a store in WAL mode
        try:
            with deployment.open(copy) as dep:
                status = dep.status()
        except NOT_OBSERVED:
            raise
        except Exception as exc:  # noqa: BLE001 -- the deployment's own code: an observation
            return [], f"the deployment class {deployment.__name__} could not report its status: {Raised.of(exc, n).describe()}"
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    spent = odo.epsilon(n)
    found = []
    reported = status.get("spent_epsilon")
    if not isinstance(reported, (int, float)) or not reported >= spent * (1.0 - REL_TOL):
        found.append(DeploymentFinding("status", (
            f"status() reports spent epsilon {reported!r} after {n} policy rounds, below their certificate "
            f"{spent:.6g}: the operator's odometer under-counts")))
    remaining = status.get("remaining_epsilon")
    if not isinstance(remaining, (int, float)) or remaining > (budget - spent) + REL_TOL * max(1.0, abs(budget)):
        found.append(DeploymentFinding("status", (
            f"status() reports remaining epsilon {remaining!r}, above budget - spent = {budget - spent:.6g}")))
    if status.get("policy_rounds") != n or bool(status.get("filter", {}).get("exhausted")) != (n >= stop):
        found.append(DeploymentFinding("status", (
            f"status() reports {status.get('policy_rounds')!r} policy rounds (exhausted: "
            f"{status.get('filter', {}).get('exhausted')!r}), the log shows {n} (stop round {stop})")))
    return found, None


def _release_counts(path, cell, k: int) -> np.ndarray:
    """A logged ``releases`` cell as K non-negative whole counts (StoreError otherwise)."""
    from privbandit.deploy.store import StoreError

    if (isinstance(cell, list) and len(cell) == k
            and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 2**63 for c in cell)):
        return np.asarray(cell, dtype=np.int64)
    raise StoreError(f"{path}: corrupt deployment store (a releases cell holds {str(cell)[:80]!r}, "
                     f"not {k} release counts)")


#: the ledger's query caches: filled by reading the realized spend (``status()``), not by any release
_QUERY_CACHES = ("_mu_cache",)


class _Replay:
    """The synchronous run from the configuration's seed, driven through the logged calls exactly as a
    deployment drives it (the ledger read before and after each call, as ``select``/``update`` do, so
    its releases fold in the same order), with the digest of the snapshot each call must have left."""

    def __init__(self, policy, config: dict, k: int, horizon: int) -> None:
        from privbandit.deploy.deployment import config_digest

        self.policy, self.config, self.k, self.horizon = policy, config, k, horizon
        self.config_digest = config_digest(config)
        self.notes: list[str] = []
        self.incomplete = False

    def digests(self, state: dict, counters) -> tuple[str, str | None]:
        """(data-only digest, object-pickle digest of sessions 1-12 or None) of the snapshot ``state``
        with ``counters``, as Deployment._write stores it."""
        import hashlib
        import pickle
        import zlib

        from privbandit.deploy import store

        full = {**state, "counters": counters, "config_digest": self.config_digest}
        new = store.dump_state(full)[1]
        try:
            old = hashlib.sha256(zlib.compress(pickle.dumps(full, protocol=5), 1)).hexdigest()
        except Exception:  # noqa: BLE001 -- an object the old format could not store: no old digest
            old = None
        return new, old

    def run(self, log: list[dict], stored: dict) -> list[DeploymentFinding]:
        from privbandit.ledger import Ledger

        config, seed = self.config, self.config["seed"]
        rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
        ledger = Ledger(1, self.k, track_replicates=None if config.get("track_realized", True) else 0)
        clock = Clock()
        try:
            with policy_code(clock):
                run = self.policy.start(self.k, 1, self.horizon, rng, ledger=ledger)
        except PolicyRaised as exc:
            return [DeploymentFinding("raised", f"replaying the policy from seed {seed}: it {exc.raised.describe()}; "
                                                "the live deployment started it")]
        state = {"run": run, "rng": rng, "ledger": ledger}
        cells = _Cells(self)
        cells.passed(state, (0, None))
        for d in [d for d in log if d["kind"] == "policy"]:
            t = clock.t = d["round"]
            try:
                with policy_code(clock):
                    ledger.draws
                    arm = int(np.asarray(run.select(t))[0])
                    ledger.draws
            except PolicyRaised as exc:
                return [DeploymentFinding("raised", (
                    f"replaying the policy from seed {seed}: round {t} {exc.raised.describe()}; the live deployment "
                    f"completed it (decision {d['decision']}): the logged history is not the synchronous run"))]
            if arm != d["arm"]:
                return [DeploymentFinding("replay", (
                    f"replaying the policy from seed {seed}: round {t} selects arm {arm}, the store logged arm "
                    f"{d['arm']} (decision {d['decision']}): the logged history is not the synchronous run"))]
            cells.passed(state, (t, d["decision"]), d["state_digest"], f"decision {d['decision']}")
            if d["applied"]:
                try:
                    with policy_code(clock):
                        run.update(t, np.array([arm], dtype=np.intp), np.array([float(d["reward"])]))
                        ledger.draws
                except PolicyRaised as exc:
                    return [DeploymentFinding("raised", (
                        f"replaying the policy from seed {seed}: the update of round {t} {exc.raised.describe()}; the "
                        f"live deployment applied it (decision {d['decision']})"))]
                cells.passed(state, (t, None), d["update_state_digest"], f"the update of decision {d['decision']}")
        out = []
        if rng.bit_generator.state != stored["rng"].bit_generator.state:
            out.append(DeploymentFinding("replay", (
                f"replaying the policy from seed {seed} through the {clock.t} logged policy rounds leaves its generator "
                "in another state than the snapshot's: noise was drawn, re-drawn or skipped outside the synchronous "
                "run (e.g. at a restart)")))
        elif not np.array_equal(np.asarray(ledger.draws[0]), np.asarray(stored["ledger"].draws[0])):
            out.append(DeploymentFinding("replay", (
                f"the replay's ledger counts {np.asarray(ledger.draws[0]).tolist()} releases per arm, the snapshot's "
                f"{np.asarray(stored['ledger'].draws[0]).tolist()}")))
        out.extend(_compare_snapshot(state, stored))
        out.extend(cells.check(log))
        self.notes.extend(cells.notes)
        self.incomplete |= cells.incomplete
        return out


class _Cells:
    """The ``state_digest`` cells of a store's log against the snapshots the replay passes through."""

    def __init__(self, replay: _Replay) -> None:
        self.replay = replay
        self.seen: set[str] = set()  # every digest a snapshot of the replay had (either format)
        self.results: list[tuple[str, str]] = []  # (where, "new" | "old" | "mismatch") in log order
        self.notes: list[str] = []
        self.incomplete = False

    def passed(self, state: dict, counters, cell: str | None = None, where: str = "") -> None:
        new, old = self.replay.digests(state, counters)
        self.seen.update(d for d in (new, old) if d is not None)
        if cell is not None:
            self.results.append((where, "new" if cell == new else "old" if cell == old else "mismatch"))

    def check(self, log: list[dict]) -> list[DeploymentFinding]:
        """Policy calls' cells must be the replay's; a cell written in the old format only before any
        data-only one (a store migrated once). Hold, exploit and stored-only updates name a snapshot
        of the replay."""
        out, data_seen, unverified = [], False, 0
        for where, how in self.results:
            if how == "new":
                data_seen = True
            elif how == "old" and data_seen:
                out.append(DeploymentFinding("digest", f"{where}: its state_digest is the old format's, after data-only "
                                                       "snapshots were written (a snapshot written by another code)"))
                break
            elif how == "mismatch":
                if data_seen or any(h != "mismatch" for _, h in self.results):
                    out.append(DeploymentFinding("digest", (
                        f"{where}: its state_digest names no snapshot the replay of the logged history leaves there "
                        "(the snapshot that call committed was not the synchronous run's)")))
                    break
                unverified += 1
        if unverified:
            self.notes.append(f"{unverified} state_digest cells could not be recomputed in either format (a store "
                              "written by an older privbandit?): not verified")
            self.incomplete = True
        for d in log:
            for cell, where in ((d["state_digest"], "decision"), (d["update_state_digest"], "the update of decision")):
                if cell is not None and (d["kind"] != "policy" or where == "the update of decision" and not d["applied"]) \
                        and cell not in self.seen and not unverified:
                    out.append(DeploymentFinding("digest", (
                        f"{where} {d['decision']} ({d['kind']}): its state_digest names no snapshot the replay passed "
                        "through (a snapshot was written outside the logged policy calls)")))
                    return out
        return out


def _compare_snapshot(replayed: dict, stored: dict) -> list[DeploymentFinding]:
    """The replay's run, generator and ledger against the snapshot's, field by field (exact: the same
    calls on the same seed give the same bits); up to three differing fields are named."""
    from privbandit.deploy.snapshot import encode

    diffs: list[str] = []

    def walk(a, b, path: str) -> None:
        if len(diffs) >= 3:
            return
        if type(a) is not type(b):
            diffs.append(f"{path} ({type(b).__name__} in the snapshot, {type(a).__name__} in the replay)")
        elif type(a) is np.ndarray:
            if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
                diffs.append(f"{path} ({_brief(b)} in the snapshot, {_brief(a)} in the replay)")
        elif type(a) in (list, tuple):
            if len(a) != len(b):
                diffs.append(f"{path} ({len(b)} entries in the snapshot, {len(a)} in the replay)")
            else:
                for i, (x, y) in enumerate(zip(a, b)):
                    walk(x, y, path if i == 0 and type(x) is str and x.startswith("\x00") else f"{path}[{i}]"
                         if not (type(a[0]) is str and a[0].startswith("\x00")) else path)
        elif type(a) is dict:
            for key in sorted(set(a) | set(b), key=str):
                if key in _QUERY_CACHES:
                    continue
                if key not in a or key not in b:
                    diffs.append(f"{path}.{key} (only in the {'snapshot' if key in b else 'replay'})")
                else:
                    walk(a[key], b[key], f"{path}.{key}")
        elif a != b and not (a != a and b != b):
            diffs.append(f"{path} ({b!r} in the snapshot, {a!r} in the replay)")

    trees = [encode({key: s[key] for key in ("run", "rng", "ledger")}) for s in (replayed, stored)]
    walk(trees[0], trees[1], "snapshot")
    return [DeploymentFinding("snapshot", (
        f"the committed snapshot differs from the replay of the logged history: {'; '.join(diffs)} -- a state "
        "restored from elsewhere (e.g. stale noise after a crash) or advanced outside the logged calls"))] if diffs else []


def _brief(a: np.ndarray) -> str:
    flat = a.ravel()
    return f"{a.dtype}{list(a.shape)} {flat[:4].tolist()}{' ...' if flat.size > 4 else ''}"


__all__ = ["DeploymentAuditResult", "DeploymentFinding", "deployment_audit"]
