"""The deployment audit's ``interventions`` check (session 18): each fed value is a function of its own record alone.

Check ``rewards`` (session 17) observes the log: one raw value must always be fed as one value. With continuous
rewards no raw value repeats, and round 20's ``deploy_rewards_centred_on_running_mean`` (fed clip(r - rbar + 1/2), rbar
the mean raw reward of the updates before it) passed: one user's reward moved every later fed value, so its record's
sensitivity in the policy's sums was ~1 + ln N, not 1. An observation cannot tell "a map of this record" from "a map
of this record and the others"; an intervention can (the counterfactual the privacy definition itself is about: a
neighbouring stream differs in one record, and only that record's contribution may change).

The check replays the logged policy rounds through the deployment's own class on scratch stores (same configuration
and seed; ``select`` then ``update`` with the logged raw reward, the synchronous order), three times:

* as logged (the baseline);
* with the raw rewards of a fixed pseudo-random half ``S`` of the records changed (each to the end of [0, 1] farther
  from its clipped value), and again with the other half changed.

Every record outside the changed half that comes after a changed one, and is played on the same arm in both replays,
must be fed exactly the same value in both: a fixed map of a record's own raw reward (and of public things: its arm,
its round) gives the same bits. Two complementary halves put any pair of records (i < j) on opposite sides with
probability 1/2, so a map that reads even one other record (the previous one, the first one) leaves witnesses; a map
that reads every earlier record (a running mean, a running maximum) is found by any split.

The scratch stores never reopen and serve no hold, so what the class does at a restart or a hold is not intervened on
(``replay``, ``arms`` and ``snapshot`` watch those); rewards stored on hold or exploit decisions are not replayed.
A randomised map (fresh randomness per call) differs between replays and is flagged, as by ``rewards``.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from privbandit.audit.raised import NOT_OBSERVED, Raised

SPLIT_SEED = 20_181
"""The public seed of the split into halves (any fixed value: the check's power does not rest on its secrecy)."""


def _changed(raw: float) -> float:
    """The intervened raw reward: the end of [0, 1] farther from the clipped logged value (a change of >= 1/2)."""
    return 1.0 if min(1.0, max(0.0, raw)) < 0.5 else 0.0


def _replay(deployment, config: dict, rows: list[dict], raws: list, tmp: str, name: str) -> list[tuple]:
    """Serve ``rows``' policy rounds on a scratch store of ``deployment``: ``(arm, fed)`` per row (fed None when the row
    had no applied reward). Raises what the class raises."""
    path = os.path.join(tmp, f"{name}.db")
    dep = deployment.create(path, config["policy"], n_arms=int(config["n_arms"]), budget=float(config["budget_epsilon"]),
                            delta=float(config["delta"]), params=dict(config["params"]), horizon=int(config["horizon"]),
                            seed=int(config["seed"]), on_exhausted=config["on_exhausted"],
                            strict_rewards=bool(config["strict_rewards"]), synchronous="normal",
                            track_realized=bool(config.get("track_realized", True)))
    try:
        for row, raw in zip(rows, raws):
            d = dep.select()
            if d.kind != "policy":  # the scratch store's own filter or counters disagree with the log
                raise RuntimeError(f"its select() on a scratch store made a {d.kind} decision where the log has "
                                   f"policy round {row['round']}")
            if raw is not None:
                dep.update(d.decision, raw)
        log = [d for d in dep.history()["decisions"] if d["kind"] == "policy"]
    finally:
        dep.close()
    return [(d["arm"], float(d["reward"]) if d["applied"] and d["reward"] is not None else None) for d in log]


def fed_interventions(deployment, config: dict, log: list[dict]):
    """Check ``interventions`` (module docstring) of the store whose ``config`` and ``log`` are given, served by the
    class ``deployment``. Returns (findings as (check, detail) pairs, notes): a note when the class could not be
    replayed on a scratch store (the check did not run)."""
    rows = [d for d in log if d["kind"] == "policy"]
    raws = [float(d["raw_reward"]) if d["applied"] and d["raw_reward"] is not None else None for d in rows]
    applied = [j for j, r in enumerate(raws) if r is not None]
    if len(applied) < 2:
        return [], []
    order = np.random.default_rng(SPLIT_SEED).permutation(len(applied))
    halves = [set(applied[i] for i in order[: len(applied) // 2]), set(applied[i] for i in order[len(applied) // 2:])]
    tmp = tempfile.mkdtemp(prefix="privbandit-fed-")
    try:
        try:
            base = _replay(deployment, config, rows, raws, tmp, "base")
            runs = [(half, _replay(deployment, config, rows,
                                   [_changed(r) if j in half else r for j, r in enumerate(raws)], tmp, f"half{h}"))
                    for h, half in enumerate(halves)]
        except NOT_OBSERVED:
            raise
        except Exception as exc:  # noqa: BLE001 -- the deployment's own code: an observation, not a crash
            return [], [f"the deployment class {deployment.__name__} could not replay the logged raw rewards on a "
                        f"scratch store (check interventions not run): {Raised.of(exc, len(rows)).describe()}"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for half, run in runs:
        first = min(half)
        for j in range(first + 1, len(rows)):
            if j in half or raws[j] is None or j >= len(run) or j >= len(base):
                continue
            (arm0, fed0), (arm1, fed1) = base[j], run[j]
            if arm0 == arm1 and fed0 != fed1:
                earlier = sorted(rows[i]["round"] for i in half if i < j)
                return [("interventions", (
                    f"policy round {rows[j]['round']} (raw reward {raws[j]!r}, arm {arm0}) was fed {fed0!r} when the "
                    f"logged raw rewards were replayed through {deployment.__name__}, and {fed1!r} when only the raw "
                    f"rewards of {len(earlier)} earlier rounds ({earlier[:6]}{' ...' if len(earlier) > 6 else ''}) "
                    "were changed: the value fed depends on other records, so one record moves the policy's "
                    "statistics more than once"))], []
    return [], []


__all__ = ["SPLIT_SEED", "fed_interventions"]
