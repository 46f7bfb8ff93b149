"""The deployment audit's ``interventions`` check (session 18): each fed value is a function of its own record.

Round 20 (s18/blind, ``deploy_rewards_centred_on_running_mean``) fed clip(r - rbar + 1/2), rbar the running mean of the
earlier raw rewards, with continuous rewards: no raw value repeats, so check ``rewards`` (one raw value, one fed value)
saw nothing, while one user's reward moved every later fed value. The check replays the class on scratch stores with
half of the logged raw rewards changed and requires the other half's later fed values to stay the same.
"""

from __future__ import annotations

import numpy as np

from privbandit.audit.deployment import deployment_audit
from privbandit.audit.fed_interventions import fed_interventions
from _deploy_helpers import feeding
from privbandit.deploy import Deployment


def _earlier_raw(dep):
    return [r for (r,) in dep._conn.execute("SELECT raw_reward FROM updates WHERE applied = 1 ORDER BY decision_id")]


class CentredOnRunningMean(Deployment):
    """Round 20's bug: clip(r - mean of the earlier raw rewards + 1/2)."""

    def update(self, decision, reward):
        def fed(dep, raw):
            before = _earlier_raw(dep)
            return min(1.0, max(0.0, raw - (float(np.mean(before)) if before else 0.5) + 0.5))
        return feeding(self, decision, reward, fed)


class SmoothedWithPrevious(Deployment):
    """A map that reads one other record only: the mean of this raw reward and the previous one."""

    def update(self, decision, reward):
        def fed(dep, raw):
            before = _earlier_raw(dep)
            return min(1.0, max(0.0, (raw + before[-1]) / 2 if before else raw))
        return feeding(self, decision, reward, fed)


class Squared(Deployment):
    """Round 20's control: each reward fed as its square -- a fixed map of each record alone."""

    def update(self, decision, reward):
        return feeding(self, decision, reward, lambda dep, raw: min(1.0, max(0.0, raw)) ** 2)


def _drive(cls, path, n=12):
    dep = cls.create(path, "gaussian_ts", params={"c": 4.0}, n_arms=2, budget=50.0, delta=1e-6, horizon=200, seed=5,
                     synchronous="normal")
    rng = np.random.default_rng(5)
    try:
        for _ in range(n):
            d = dep.select()
            dep.update(d.decision, float(rng.beta(6.0, 4.0) if d.arm == 0 else rng.beta(4.0, 6.0)))
    finally:
        dep.close()


def _checks(cls, path):
    _drive(cls, path)
    return deployment_audit(path, deployment=cls).checks


def test_rewards_centred_on_the_running_mean_are_found(tmp_path):
    assert "interventions" in _checks(CentredOnRunningMean, tmp_path / "mean.db")


def test_a_map_reading_the_previous_record_is_found(tmp_path):
    assert "interventions" in _checks(SmoothedWithPrevious, tmp_path / "prev.db")


def test_a_fixed_map_of_each_record_passes(tmp_path):
    assert _checks(Squared, tmp_path / "sq.db") == []


def test_the_library_deployment_passes_the_intervention(tmp_path):
    path = tmp_path / "lib.db"
    _drive(Deployment, path)
    with Deployment.open(path) as dep:
        history = dep.history()
    assert fed_interventions(Deployment, history["config"], history["decisions"]) == ([], [])
