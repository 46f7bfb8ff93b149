"""The deployment audit's ``rewards`` check (session 17): the policy is fed a fixed map of each record's raw reward.

Round 19 (s17/blind, ``deploy_zero_reward_imputed``) fed a reward of 0 as the arm's last applied reward: one user's
reward entered the policy again for every later non-responder, while the log kept the raw 0 beside the fed value
and the replay (which feeds the logged values) matched the snapshot. The audit passed it.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from privbandit.audit.deployment import deployment_audit
from _deploy_helpers import feeding
from privbandit.deploy import Deployment


class CarryForward(Deployment):
    """A zero imputed with the last applied reward of the same arm (the bug's shape; 0 while the arm has none)."""

    def update(self, decision, reward):
        def fed(dep, raw):
            if raw != 0.0:
                return raw
            log = dep.decisions()
            arm = next(d["arm"] for d in log if d["decision"] == decision)
            applied = [d["reward"] for d in log if d["applied"] and d["arm"] == arm]
            return applied[-1] if applied else 0.0
        return feeding(self, decision, reward, fed)


class ZeroAsHalf(Deployment):
    """A zero read as 0.5 (the prior mean): a fixed map, record by record -- private, must pass."""

    def update(self, decision, reward):
        return feeding(self, decision, reward, lambda dep, raw: 0.5 if raw == 0.0 else raw)


def _drive(cls, path, n=24):
    dep = cls.create(path, "gaussian_ts", params={"c": 4.0}, n_arms=2, budget=50.0, delta=1e-6, horizon=200, seed=3)
    rng = np.random.default_rng(3)
    try:
        for _ in range(n):
            d = dep.select()
            dep.update(d.decision, float(rng.random() < 0.5))
    finally:
        dep.close()


def _kinds(path):
    return [f.check for f in deployment_audit(path).findings]


def test_a_zero_carried_forward_is_found(tmp_path):
    _drive(CarryForward, tmp_path / "bug.sqlite")
    assert "rewards" in _kinds(tmp_path / "bug.sqlite")


def test_a_fixed_map_passes(tmp_path):
    _drive(ZeroAsHalf, tmp_path / "ok.sqlite")
    assert _kinds(tmp_path / "ok.sqlite") == []


def test_the_library_deployment_passes(tmp_path):
    _drive(Deployment, tmp_path / "lib.sqlite")
    assert _kinds(tmp_path / "lib.sqlite") == []


def test_a_reward_fed_outside_the_unit_interval_is_found(tmp_path):
    """A policy refuses such a reward itself, so only an edited log shows one; the audit names it all the same."""
    path = tmp_path / "edited.sqlite"
    _drive(Deployment, path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE updates SET reward = 1.5 WHERE decision_id = (SELECT MIN(decision_id) FROM updates)")
    assert "rewards" in _kinds(path)
