"""The deployment audit (privbandit/audit/deployment.py): every round-10 deployment bug
(tests/.../_deploy_planted.py) is refuted from its store, and an unmodified deployment served the same
way (holds, restarts, exploit decisions past the budget) passes. All checks are exact."""

import pytest

from privbandit.audit.deployment import deployment_audit
from privbandit.deploy.deployment import Deployment

from _deploy_planted import FilterOnePast, HoldRedraws, ResumeReseeds, serve


@pytest.mark.parametrize("cls, checks", [
    (FilterOnePast, {"filter"}),
    # (session 14: the deployment itself refuses to go on at the first restart after a redrawn hold -- its ledger
    # counts releases its log does not -- so the store audited is 4 rounds old, where the redrawn hold's noise
    # also puts the realized spend above cert(4))
    (HoldRedraws, {"arms", "realized", "releases", "replay"}),  # (arms: its hold played a fresh arm)
    (ResumeReseeds, {"replay", "snapshot", "digest"}),  # (snapshot and digest: session 13)
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


def _cli(capsys, *argv):
    import json

    from privbandit.cli import main

    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else None), err


def test_cli_audits_a_store(tmp_path, capsys):
    """``privbandit deploy audit STORE``: JSON verdict, exit 0 CONSISTENT / 1 VIOLATION, 2 for a missing store."""
    clean, bad = tmp_path / "clean.db", tmp_path / "bad.db"
    serve(Deployment, clean)
    serve(HoldRedraws, bad)
    code, out, _ = _cli(capsys, "deploy", "audit", str(clean))
    assert code == 0 and out["verdict"] == "CONSISTENT" and out["findings"] == [] and out["policy_rounds"] == 20
    code, out, _ = _cli(capsys, "deploy", "audit", str(bad))
    assert code == 1 and out["verdict"] == "VIOLATION" and set(out["checks"]) == {"arms", "realized", "releases", "replay"}
    assert all(f["detail"] for f in out["findings"])
    code, out, err = _cli(capsys, "deploy", "audit", str(tmp_path / "absent.db"))
    assert code == 2 and out is None and err.startswith("privbandit: error:") and err.count("\n") == 1


def test_history_is_one_consistent_read(tmp_path):
    """``Deployment.history()`` gives the audit the log, the counters and the snapshot of one version,
    with each update's releases (the audit no longer opens a second connection for them)."""
    path = tmp_path / "store.db"
    serve(Deployment, path, decisions=12)
    with Deployment.open(path) as dep:
        h = dep.history()
        assert h["decisions"] == dep.decisions() and h["rounds"] == dep.status()["policy_rounds"] == 12
        snap = dep.snapshot()
    assert h["config"]["policy"] == "gaussian_ts" and h["open_decision"] is None
    assert h["snapshot"]["rng"].bit_generator.state == snap["rng"].bit_generator.state
    answered = [d["update_releases"] is not None for d in h["decisions"]]
    assert answered == [d["reward"] is not None for d in h["decisions"]] and any(answered) and not all(answered)


def test_damaged_release_cell_is_a_store_error(tmp_path):
    """A releases cell that is valid JSON but not K counts is a damaged store (StoreError naming it),
    not a TypeError inside the audit."""
    import sqlite3

    from privbandit.deploy.store import StoreError

    path = tmp_path / "store.db"
    serve(Deployment, path, decisions=6)
    for cell in ('{"a": 1}', '[1, 2, 3]', '[-1, 0]', '[0.5, 0]', '[true, 0]'):
        conn = sqlite3.connect(path)
        conn.execute("UPDATE decisions SET releases = ? WHERE id = 2", (cell,))
        conn.commit()
        conn.close()
        with pytest.raises(StoreError, match="releases cell"):
            deployment_audit(path)
