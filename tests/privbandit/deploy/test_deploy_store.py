"""Input validation, idempotent updates, delayed rewards, and clear errors for corrupt, foreign or
newer stores."""

from __future__ import annotations

import hashlib
import pickle
import sqlite3
import zlib

import pytest

from privbandit.deploy import Deployment, StoreError


@pytest.fixture
def dep(tmp_path):
    d = Deployment.create(tmp_path / "s.db", "lazy_dp_ts", params={"epsilon": 0.5}, n_arms=3, budget=1.0,
                          delta=1e-6, horizon=100, seed=2)
    yield d
    d.close()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "1", None, True])
def test_bad_rewards_are_refused(dep, bad):
    d = dep.select()
    with pytest.raises(ValueError, match="reward must be"):
        dep.update(d.decision, bad)
    assert dep.status()["updates"] == 0


def test_rewards_are_clipped_or_refused_when_strict(dep, tmp_path):
    d = dep.select()
    assert dep.update(d.decision, 3.5).reward == 1.0
    row = dep.decisions()[0]
    assert (row["reward"], row["raw_reward"]) == (1.0, 3.5)
    strict = Deployment.create(tmp_path / "t.db", "lazy_dp_ts", n_arms=3, budget=1.0, delta=1e-6, horizon=100,
                               strict_rewards=True)
    d = strict.select()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        strict.update(d.decision, -0.1)
    strict.close()


def test_duplicate_updates_are_idempotent_and_conflicts_refused(dep):
    d = dep.select()
    first = dep.update(d.decision, 0.25)
    again = dep.update(d.decision, 0.25)
    assert (first.duplicate, again.duplicate, again.applied, again.reward) == (False, True, True, 0.25)
    with pytest.raises(ValueError, match="already has reward"):
        dep.update(d.decision, 0.75)
    with pytest.raises(ValueError, match="does not exist"):
        dep.update(99, 0.5)
    with pytest.raises(ValueError, match="decision must be a whole number"):
        dep.update(0, 0.5)
    status = dep.status()
    assert (status["updates"], status["applied_updates"], status["policy_rounds"]) == (1, 1, 1)


def test_delayed_out_of_order_rewards(dep):
    """While round 1 awaits its reward, selects are holds (its arm again, no policy call, no noise);
    rewards arrive in any order; the policy round's reward closes it and the next select opens round 2."""
    first = dep.select()
    holds = [dep.select() for _ in range(3)]
    assert [h.kind for h in holds] == ["hold"] * 3 and {h.arm for h in holds} == {first.arm}
    assert all(r["releases"] == [0, 0, 0] for r in dep.decisions()[1:])
    for h in reversed(holds):
        assert dep.update(h.decision, 1.0).applied is False
    assert dep.select().kind == "hold"  # round 1 still open
    assert dep.update(first.decision, 0.0).applied is True
    nxt = dep.select()
    assert (nxt.kind, nxt.round) == ("policy", 2)
    status = dep.status()
    assert (status["decisions"], status["updates"], status["pending"], status["open_decision"]) == (6, 4, 2, nxt.decision)


def test_closed_deployment_refuses_calls(dep):
    dep.close()
    with pytest.raises(ValueError, match="closed"):
        dep.select()


def test_create_validates(tmp_path):
    kw = dict(n_arms=3, budget=1.0, delta=1e-6, horizon=100)
    with pytest.raises(ValueError, match="not private"):
        Deployment.create(tmp_path / "a.db", "ucb1", **kw)
    with pytest.raises(ValueError, match="unknown policy"):
        Deployment.create(tmp_path / "a.db", "nope", **kw)
    with pytest.raises(ValueError, match="delta must"):
        Deployment.create(tmp_path / "a.db", "dp_ts", **(kw | {"delta": 1.5}))
    with pytest.raises(ValueError, match="horizon must"):
        Deployment.create(tmp_path / "a.db", "dp_ts", **(kw | {"horizon": 2}))
    with pytest.raises(ValueError, match="on_exhausted"):
        Deployment.create(tmp_path / "a.db", "dp_ts", on_exhausted="maybe", **kw)
    Deployment.create(tmp_path / "a.db", "dp_ts", **kw).close()
    with pytest.raises(ValueError, match="already exists"):
        Deployment.create(tmp_path / "a.db", "dp_ts", **kw)


def test_missing_empty_and_garbage_files(tmp_path):
    with pytest.raises(StoreError, match="no such deployment store"):
        Deployment.open(tmp_path / "missing.db")
    (tmp_path / "empty.db").write_bytes(b"")
    with pytest.raises(StoreError, match="empty file"):
        Deployment.open(tmp_path / "empty.db")
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="not a privbandit deployment store"):
        Deployment.open(tmp_path / "junk.db")


def test_foreign_sqlite_file_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="application_id"):
        Deployment.open(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not switched to WAL
    conn.close()


def _tamper(path, sql, *args):
    conn = sqlite3.connect(path)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


def test_newer_schema_is_refused(dep):
    dep.close()
    _tamper(dep.path, "PRAGMA user_version = 2")
    with pytest.raises(StoreError, match="schema version 2 was written by a newer privbandit"):
        Deployment.open(dep.path)


def test_damaged_pages_are_a_store_error(dep):
    for _ in range(20):  # enough rows for several pages
        d = dep.select()
        dep.update(d.decision, 1.0)
    dep.close()  # checkpoints the WAL into the main file
    with open(dep.path, "r+b") as fh:
        fh.seek(4096)
        fh.write(b"\xde\xad\xbe\xef" * 2048)  # pages 2-3
    with pytest.raises(StoreError, match="corrupt"):
        Deployment.open(dep.path)


def test_corrupt_snapshot_is_detected(dep):
    dep.close()
    _tamper(dep.path, "UPDATE state SET blob = ?", b"\x78\x01garbage")
    with pytest.raises(StoreError, match="does not match its digest"):
        Deployment.open(dep.path)


def test_snapshot_cannot_run_code(dep, tmp_path):
    """A tampered snapshot with a matching digest still cannot build arbitrary objects."""
    dep.close()
    marker = tmp_path / "pwned"
    blob = zlib.compress(pickle.dumps(_Evil(str(marker))))
    _tamper(dep.path, "UPDATE state SET blob = ?, digest = ?", blob, hashlib.sha256(blob).hexdigest())
    with pytest.raises(StoreError, match="never stores"):
        Deployment.open(dep.path, allow_legacy=True)  # (session 14: legacy snapshots are read only when allowed)
    assert not marker.exists()


class _Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.path}",)


def test_untracked_realized_spend(tmp_path):
    with Deployment.create(tmp_path / "u.db", "dp_ucb_bound", n_arms=3, budget=5.0, delta=1e-6, horizon=100,
                           seed=1, track_realized=False) as dep:
        for _ in range(10):
            d = dep.select()
            dep.update(d.decision, 1.0)
        status = dep.status()
    assert status["realized_epsilon"] is None and status["certified_closed_form_epsilon"] is None
    assert sum(status["releases_per_arm"]) > 0 and status["spent_epsilon"] > 0


@pytest.mark.parametrize("sql", ["UPDATE state SET rounds = rounds - 1", "UPDATE state SET rounds = 0",
                                 "UPDATE state SET open_decision = NULL", "UPDATE state SET open_decision = 1"])
def test_tampered_round_counters_are_detected(dep, sql):
    """The state row's counters drive the odometer and the privacy filter (rounds opened so far) but
    lie outside the snapshot's digest: the snapshot carries its own copy, so a counter changed behind
    the deployment's back (one round fewer: one round more of budget) is refused, not trusted."""
    for _ in range(3):
        d = dep.select()
        dep.update(d.decision, 1.0)
    dep.select()  # a round left open (decision 4)
    dep.close()
    _tamper(dep.path, sql)
    with pytest.raises(StoreError, match="modified outside privbandit"):
        Deployment.open(dep.path)


def test_store_without_snapshot_counters_still_opens_and_gains_them(dep):
    """A store written before snapshots carried their counters (no "counters" key) opens as it did;
    its next write adds them, and a counter tampered with after that is detected."""
    d = dep.select()
    dep.update(d.decision, 0.0)
    dep.close()
    conn = sqlite3.connect(dep.path)
    (blob,) = conn.execute("SELECT blob FROM state").fetchone()
    data = pickle.loads(zlib.decompress(blob))
    del data["state"]["counters"]  # (a data-only snapshot since session 13: the state under "state")
    old = zlib.compress(pickle.dumps(data), 1)
    conn.execute("UPDATE state SET blob = ?, digest = ?", (old, hashlib.sha256(old).hexdigest()))
    conn.commit()
    conn.close()
    with Deployment.open(dep.path) as again:
        assert again.status()["policy_rounds"] == 1
        again.select()
    _tamper(dep.path, "UPDATE state SET rounds = 1")
    with pytest.raises(StoreError, match="modified outside privbandit"):
        Deployment.open(dep.path)
