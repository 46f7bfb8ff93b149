"""Session 16: a store rolled back to an earlier state of its own (a restored backup) is refused -- by a live
deployment by itself (the state version only grows), and at open given the least version kept elsewhere
(``min_version`` / ``--min-version``). Neither the checksum nor the key's tag can see such a rollback: the old
state is genuine. A restored backup forgets the decisions released since, so the odometer would spend their
privacy again."""

from __future__ import annotations

import json
import sqlite3

import pytest

from privbandit.cli import main
from privbandit.deploy import Deployment, StoreError


def _create(path, **kw):
    Deployment.create(path, "lazy_dp_ts", params={"epsilon": 0.5}, n_arms=3, budget=1e3, delta=1e-6, horizon=200,
                      seed=3, **kw).close()


def _rounds(dep, n):
    for i in range(n):
        d = dep.select()
        dep.update(d.decision, float((d.arm + i) % 2))


def _backup(src: str, dst: str) -> None:
    """SQLite's online backup: a consistent copy of ``src`` written into ``dst`` through SQLite itself (into
    the same file, when restoring over a store in use: its inode does not change)."""
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    a.close()
    b.close()


def test_a_live_deployment_refuses_a_backup_restored_under_it(tmp_path):
    path, copy = str(tmp_path / "s.db"), str(tmp_path / "backup.db")
    _create(path)
    with Deployment.open(path) as dep:
        _rounds(dep, 3)
        _backup(path, copy)
        _rounds(dep, 4)
        assert dep.status()["policy_rounds"] == 7
        _backup(copy, path)  # restored in place: the path still names the file the deployment opened
        with pytest.raises(StoreError, match="rolled back to an earlier state"):
            dep.select()
        with pytest.raises(StoreError, match="rolled back"):
            dep.status()
    # reopened without the version kept elsewhere the old state is genuine and opens (documented) ...
    with Deployment.open(path) as dep:
        assert dep.status()["policy_rounds"] == 3  # the four rounds released since the backup are forgotten


def test_open_refuses_a_store_below_min_version(tmp_path):
    path, copy = str(tmp_path / "s.db"), str(tmp_path / "backup.db")
    _create(path, key=b"rollback-key-16b")  # the tag holds: the old state was written with the key
    with Deployment.open(path, key=b"rollback-key-16b") as dep:
        _rounds(dep, 2)
        _backup(path, copy)
        _rounds(dep, 2)
        kept = dep.status()["state_version"]
    _backup(copy, path)
    with pytest.raises(StoreError, match=f"older than version {kept}"):
        Deployment.open(path, key=b"rollback-key-16b", min_version=kept)
    with Deployment.open(path, key=b"rollback-key-16b", min_version=kept - 4) as dep:  # the backup's own version
        assert dep.status()["state_version"] == kept - 4
    for bad in (-1, 1.5, True, "3", float("nan")):
        with pytest.raises(ValueError, match="min_version"):
            Deployment.open(path, key=b"rollback-key-16b", min_version=bad)


def test_a_lowered_version_counter_is_refused_by_a_live_deployment(tmp_path):
    """Only the counter moved back (snapshot and round counters as they were): nothing but the version's
    monotonicity can tell."""
    path = str(tmp_path / "s.db")
    _create(path)
    with Deployment.open(path) as dep:
        _rounds(dep, 2)
        with sqlite3.connect(path) as other:
            other.execute("UPDATE state SET version = version - 1 WHERE id = 1")
        other.close()
        with pytest.raises(StoreError, match="rolled back"):
            dep.select()


def test_cli_min_version(tmp_path, capsys):
    store = str(tmp_path / "c.db")
    assert main(["deploy", "init", store, "--policy", "lazy_dp_ts", "--param", "epsilon=0.5", "--n-arms", "3",
                 "--budget", "1", "--delta", "1e-6", "--seed", "4", "--horizon", "100"]) == 0
    assert main(["deploy", "status", store]) == 0
    version = json.loads(capsys.readouterr().out.splitlines()[-1])["state_version"]
    assert main(["deploy", "select", store, "--min-version", str(version)]) == 0
    capsys.readouterr()
    assert main(["deploy", "status", store, "--min-version", str(version + 5)]) == 2
    err = capsys.readouterr().err
    assert "rolled back" in err and len(err.strip().splitlines()) == 1
    assert main(["deploy", "audit", store, "--min-version", str(version + 5)]) == 2  # the audit refuses it too
    assert "rolled back" in capsys.readouterr().err
    assert main(["deploy", "audit", store, "--min-version", str(version)]) == 0
    capsys.readouterr()
    assert main(["deploy", "status", store, "--min-version", "-1"]) == 2
    assert "--min-version: must be a whole number in [0, inf)" in capsys.readouterr().err
