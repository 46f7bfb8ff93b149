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
* **releases** -- hold and exploit decisions, and rewards not fed to the policy, made no release; the
  ledger in the snapshot counts exactly the releases the log records (a release the log does not show
  is a draw outside a policy call).
* **replay** -- the policy started from the configuration's seed and driven through the logged policy
  rounds (``select(t)`` must return the logged arm; ``update`` with the logged reward) ends in the
  snapshot's generator state with the same ledger counts: the committed history *is* the synchronous
  run the certificate covers. Noise re-drawn or skipped at a restart (a generator re-seeded, a snapshot
  not restored) or a select made twice for one round breaks it.
* **realized** -- the snapshot ledger's realized spend (closed-form accountants) within the schedule's
  certificate in the same currency at the opened rounds (DESIGN.md's invariant, as ``status()`` reports
  it), when the deployment tracks it.

Each check is exact: a finding is a witness in the store, never a statistical judgement.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

REL_TOL = 1e-6
"""Relative slack on realized <= certified (two accountants' floating-point outputs; see ledger_audit)."""


@dataclasses.dataclass
class DeploymentFinding:
    check: str  # filter | rounds | releases | replay | realized
    detail: str


@dataclasses.dataclass
class DeploymentAuditResult:
    store: str
    policy: str
    rounds: int
    stop_round: int
    findings: list[DeploymentFinding]

    @property
    def verdict(self) -> str:
        return "VIOLATION" if self.findings else "CONSISTENT"

    @property
    def checks(self) -> list[str]:
        return sorted({f.check for f in self.findings})

    def summary(self) -> str:
        head = (f"deployment audit of {self.store} ({self.policy}): {self.rounds} policy rounds, filter stop "
                f"{self.stop_round}")
        if not self.findings:
            return f"{head}: CONSISTENT (filter, rounds, releases, replay and realized spend check out)"
        return f"{head}: VIOLATION ({', '.join(self.checks)}; first: {self.findings[0].detail})"


def deployment_audit(path) -> DeploymentAuditResult:
    """Audit the deployment store at ``path`` (module docstring). The store is only read."""
    from privbandit.deploy.deployment import Deployment
    from privbandit.deploy.odometer import Odometer
    from privbandit.ledger import CLOSED_FORM_ACCOUNTANTS
    from privbandit.policies import make_policy

    with Deployment.open(path) as dep:
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
    drawn = np.asarray(ledger.draws[0], dtype=np.int64)
    if not np.array_equal(drawn, logged):
        findings.append(DeploymentFinding("releases", (
            f"the snapshot's ledger counts {drawn.tolist()} releases per arm, the log records {logged.tolist()}: "
            "releases were made outside the logged calls")))

    # replay: the synchronous run from the seed, through the logged policy rounds
    findings.extend(_replay(policy, config, policy_rows, state, k, horizon))

    # realized <= certified, in the same currency
    if config.get("track_realized", True) and n:
        realized = float(np.nanmax(ledger.realized_epsilon(delta)))
        cert = float(odo.schedule.epsilon(n, delta, CLOSED_FORM_ACCOUNTANTS).value)
        if math.isfinite(cert) and realized > cert * (1 + REL_TOL) + 1e-12:
            findings.append(DeploymentFinding("realized", (
                f"the ledger's realized epsilon {realized:.6g} exceeds the certificate {cert:.6g} of {n} policy rounds "
                f"at delta {delta:g} (closed-form accountants)")))
    return DeploymentAuditResult(str(path), config["policy"], n, stop, findings)


def _release_counts(path, cell, k: int) -> np.ndarray:
    """A logged ``releases`` cell as K non-negative whole counts (StoreError otherwise)."""
    from privbandit.deploy.store import StoreError

    if (isinstance(cell, list) and len(cell) == k
            and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 2**63 for c in cell)):
        return np.asarray(cell, dtype=np.int64)
    raise StoreError(f"{path}: corrupt deployment store (a releases cell holds {str(cell)[:80]!r}, "
                     f"not {k} release counts)")


def _replay(policy, config: dict, policy_rows: list[dict], state: dict, k: int, horizon: int) -> list[DeploymentFinding]:
    from privbandit.ledger import Ledger

    rng = np.random.default_rng(np.random.SeedSequence(int(config["seed"])))
    ledger = Ledger(1, k, track_replicates=None if config.get("track_realized", True) else 0)
    run = policy.start(k, 1, horizon, rng, ledger=ledger)
    for d in policy_rows:
        t = d["round"]
        arm = int(np.asarray(run.select(t))[0])
        if arm != d["arm"]:
            return [DeploymentFinding("replay", (
                f"replaying the policy from seed {config['seed']}: round {t} selects arm {arm}, the store logged arm "
                f"{d['arm']} (decision {d['decision']}): the logged history is not the synchronous run")) ]
        if d["applied"]:
            run.update(t, np.array([arm], dtype=np.intp), np.array([float(d["reward"])]))
    if rng.bit_generator.state != state["rng"].bit_generator.state:
        return [DeploymentFinding("replay", (
            f"replaying the policy from seed {config['seed']} through the {len(policy_rows)} logged policy rounds leaves "
            "its generator in another state than the snapshot's: noise was drawn, re-drawn or skipped outside the "
            "synchronous run (e.g. at a restart)"))]
    if not np.array_equal(np.asarray(ledger.draws[0]), np.asarray(state["ledger"].draws[0])):
        return [DeploymentFinding("replay", (
            f"the replay's ledger counts {np.asarray(ledger.draws[0]).tolist()} releases per arm, the snapshot's "
            f"{np.asarray(state['ledger'].draws[0]).tolist()}"))]
    return []


__all__ = ["DeploymentAuditResult", "DeploymentFinding", "deployment_audit"]
