"""Session 14's deployment-audit checks, each against our own planted variant (not round 16's):

* ``arms``: hold and exploit decisions play the arms Deployment.select's data-independent rules give from
  the log alone -- an exploit arm read off the rewards publishes them with no noise;
* ``status`` (with the service's Deployment class): its ``status()`` odometer never below the certificate
  of the policy rounds the log shows, read on a private copy of the store."""

from __future__ import annotations

import hashlib

from privbandit.audit.deployment import deployment_audit
from privbandit.deploy.deployment import Deployment

from _deploy_planted import serve


class ExploitHighestRawSum(Deployment):
    """Past the budget, exploit the arm with the smallest sum of RAW rewards ("give the other arm a chance"): an
    arm read off the data (here not the most-chosen arm, which the policy picked for its high rewards)."""

    def _exploit_arm(self):
        row = self._conn.execute("SELECT d.arm FROM decisions d JOIN updates u ON u.decision_id = d.id "
                                 "GROUP BY d.arm ORDER BY SUM(u.raw_reward) ASC, d.arm DESC LIMIT 1").fetchone()
        return super()._exploit_arm() if row is None else int(row[0])


class StatusSpentFromHash(Deployment):
    """status() reports the odometer scaled by a factor in [0.5, 1) derived from the store's path."""

    def status(self, last: int = 5):
        out = super().status(last)
        shrink = 0.5 + (hashlib.sha256(str(self.path).encode()).digest()[0] / 512)
        out["spent_epsilon"] *= shrink
        return out


def test_exploit_arm_from_the_rewards_is_refuted_by_arms(tmp_path):
    path = tmp_path / "store.db"
    serve(ExploitHighestRawSum, path)
    res = deployment_audit(path)
    assert res.verdict == "VIOLATION" and "arms" in res.checks, res.summary()


def test_status_under_reporting_is_refuted_only_with_the_class(tmp_path):
    path = tmp_path / "store.db"
    serve(StatusSpentFromHash, path)
    assert deployment_audit(path).verdict == "CONSISTENT"  # no trace in the store itself
    res = deployment_audit(path, deployment=StatusSpentFromHash)
    assert res.verdict == "VIOLATION" and res.checks == ["status"], res.summary()


def test_unmodified_class_passes_status_and_the_store_is_not_written(tmp_path):
    path = tmp_path / "store.db"
    serve(Deployment, path)

    class Reopening(Deployment):  # a correct subclass whose open writes (a cache warm-up): on the copy only
        @classmethod
        def open(cls, p):
            dep = super().open(p)
            dep._conn.execute("CREATE TABLE IF NOT EXISTS warm (x INTEGER)")
            return dep
    before = path.read_bytes()
    res = deployment_audit(path, deployment=Reopening)
    assert res.verdict == "CONSISTENT", res.summary()
    assert path.read_bytes() == before
