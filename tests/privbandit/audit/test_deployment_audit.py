"""The deployment audit (privbandit/audit/deployment.py): every round-10 deployment bug
(tests/.../_deploy_planted.py) is refuted from its store, and an unmodified deployment served the same
way (holds, restarts, exploit decisions past the budget) passes. All checks are exact."""

import pytest

from privbandit.audit.deployment import deployment_audit
from privbandit.deploy.deployment import Deployment

from _deploy_planted import FilterOnePast, HoldRedraws, ResumeReseeds, serve


@pytest.mark.parametrize("cls, checks", [
    (FilterOnePast, {"filter"}),
    (HoldRedraws, {"releases", "replay"}),
    (ResumeReseeds, {"replay"}),
], ids=lambda x: x.__name__ if isinstance(x, type) else "-".join(sorted(x)))
def test_deployment_bugs_are_refuted(tmp_path, cls, checks):
    path = tmp_path / "store.db"
    serve(cls, path)
    res = deployment_audit(path)
    assert res.verdict == "VIOLATION" and set(res.checks) == checks, res.summary()


def test_unmodified_deployment_passes(tmp_path):
    path = tmp_path / "store.db"
    serve(Deployment, path)
    res = deployment_audit(path)
    assert res.verdict == "CONSISTENT" and not res.findings, res.summary()
    assert res.rounds == res.stop_round == 20  # the filter bound, and 20 exploit decisions after it


def test_untracked_realized_spend_and_an_open_round_pass(tmp_path):
    path = tmp_path / "store.db"
    with Deployment.create(path, "lazy_dp_ts", params={"epsilon": 0.5}, n_arms=3, budget=1.0, delta=1e-6,
                           horizon=50, seed=3, track_realized=False) as dep:
        for i in range(12):
            d = dep.select()
            dep.update(d.decision, (i % 3) / 2)
        dep.select()  # a round left open (its reward still to come)
    res = deployment_audit(path)
    assert res.verdict == "CONSISTENT", res.summary()
    assert res.rounds == 13


def test_missing_store_is_refused(tmp_path):
    from privbandit.deploy.store import StoreError

    with pytest.raises(StoreError):
        deployment_audit(tmp_path / "absent.db")
