"""Acceptance: SIGKILL a writer mid-stream and reopen -- every acknowledged call is there, no
released value changed, decisions continue deterministically; two writer processes lose no update."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys

import pytest
from _deploy_helpers import reward, run_worker

from privbandit.deploy import Deployment

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

POLICY, PARAMS = "dp_ucb_bound", {"epsilon": 1.0}


def _create(path):
    Deployment.create(path, POLICY, params=PARAMS, n_arms=3, budget=1e6, delta=1e-6, horizon=10_000,
                      seed=5).close()


def _reference(path, n):
    """The uninterrupted run: n rounds of select-then-update in one process."""
    _create(path)
    with Deployment.open(path) as dep:
        for _ in range(n):
            d = dep.select()
            dep.update(d.decision, reward(d.decision, d.arm))
        return dep.decisions()


def _kill_after(path, acks: int, total: int) -> list[str]:
    """Start a writer for ``total`` rounds, SIGKILL it after ``acks`` acknowledged calls."""
    proc = run_worker(str(path), str(total))
    lines = []
    while len(lines) < acks:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        lines.append(line.split())
    os.kill(proc.pid, signal.SIGKILL)  # the writer is inside its next call
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return lines


def test_sigkill_mid_stream_loses_nothing_acknowledged(tmp_path):
    n = 60
    reference = _reference(tmp_path / "ref.db", n)
    path = tmp_path / "killed.db"
    _create(path)
    acknowledged_s, acknowledged_u = {}, {}
    for acks in (11, 24, 37):  # three kills at different points of the stream
        for kind, *rest in _kill_after(path, acks, n):
            if kind == "S":
                acknowledged_s[int(rest[0])] = int(rest[1])
            else:
                acknowledged_u[int(rest[0])] = float(rest[1])
        with Deployment.open(path) as dep:
            rows = {r["decision"]: r for r in dep.decisions()}
            status = dep.status()
            certify = dep.odometer.epsilon
        # the odometer never under-counts what was released: every committed policy round is counted,
        # and the snapshot's release counts are exactly the releases the committed calls logged
        policy_rounds = sum(r["kind"] == "policy" for r in rows.values())
        assert status["policy_rounds"] == policy_rounds
        assert status["spent_epsilon"] == certify(policy_rounds)
        logged = [sum(r["releases"][a] + (r["update_releases"] or [0] * 3)[a] for r in rows.values()) for a in range(3)]
        assert status["releases_per_arm"] == logged
        # every acknowledged select and update is there, with its arm and reward
        for d, arm in acknowledged_s.items():
            assert rows[d]["arm"] == arm
        for d, r in acknowledged_u.items():
            assert rows[d]["reward"] == r
        # whatever was committed (acknowledged or not) is the reference's prefix: no released value,
        # noise release or snapshot differs from the uninterrupted run
        committed = [rows[d] for d in sorted(rows)]
        update_fields = ("reward", "raw_reward", "applied", "update_releases", "update_state_digest")  # an update may not have committed yet
        assert [{k: v for k, v in r.items() if k not in update_fields} for r in committed] == \
               [{k: v for k, v in r.items() if k not in update_fields} for r in reference[:len(committed)]]
    # finish the stream: the decisions continue exactly as in the uninterrupted run
    with Deployment.open(path) as dep:
        remaining = n - len(dep.decisions())  # the worker first completes a decision left pending
    proc = run_worker(str(path), str(remaining))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    with Deployment.open(path) as dep:
        assert dep.decisions() == reference
        assert dep.status()["updates"] == n


def test_two_processes_lose_no_update(tmp_path):
    path = tmp_path / "two.db"
    _create(path)
    m = 40
    procs = [run_worker(str(path), str(m)) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err
    acked = [line.split() for out, _ in outputs for line in out.splitlines()]
    selects = {int(x[1]) for x in acked if x[0] == "S"}
    updates = {int(x[1]) for x in acked if x[0] == "U"}
    assert len(selects) == len(updates) == 2 * m  # distinct decision ids: no decision issued twice
    with Deployment.open(path) as dep:
        status = dep.status()
        rows = dep.decisions()
    assert status["decisions"] == status["updates"] == 2 * m
    assert {r["decision"] for r in rows} == selects == updates
    assert all(r["reward"] is not None for r in rows)
    # every policy round was opened once and closed by its own reward; the snapshot saw them all
    policy_rows = [r for r in rows if r["kind"] == "policy"]
    assert [r["round"] for r in policy_rows] == list(range(1, len(policy_rows) + 1))
    assert status["policy_rounds"] == status["applied_updates"] == len(policy_rows)
    assert status["hold_decisions"] == 2 * m - len(policy_rows)
    conn = sqlite3.connect(path)
    (version,) = conn.execute("SELECT version FROM state").fetchone()
    conn.close()
    assert version == 2 * len(policy_rows)  # one snapshot write per select and per update of a round


def kill_at_random(path, kills: int, seed: int, rounds: int = 400, delay=(0.0, 0.25)) -> dict:
    """SIGKILL a writer ``kills`` times, each a random delay after its first acknowledged call (so
    inside a select or an update, in the snapshot's encoding, SQLite's commit or between them), and
    reopen the store after each: it must open, count every policy round it committed (the odometer
    never under-counts), hold every acknowledged call, and audit CONSISTENT. Returns counts."""
    import random
    import time

    from privbandit.audit.deployment import deployment_audit

    rng = random.Random(seed)
    acked_s, acked_u, counts = {}, {}, {"kills": 0, "acknowledged": 0, "committed_unacknowledged": 0}
    for _ in range(kills):
        proc = run_worker(str(path), str(rounds))
        first = proc.stdout.readline()
        assert first, proc.stderr.read()
        time.sleep(rng.uniform(*delay))
        os.kill(proc.pid, signal.SIGKILL)
        # (read through the same buffered reader as the first line: communicate() reads the pipe's file
        # descriptor and would miss lines that readline() had already buffered)
        rest = proc.stdout.read()
        proc.stderr.read()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        counts["kills"] += proc.returncode == -signal.SIGKILL
        for kind, *fields in (line.split() for line in [first, *rest.splitlines()] if line.strip()):
            if kind == "S":
                acked_s[int(fields[0])] = int(fields[1])
            else:
                acked_u[int(fields[0])] = float(fields[1])
        with Deployment.open(path) as dep:  # the store opens after every kill
            rows = {r["decision"]: r for r in dep.decisions()}
            status = dep.status()
            policy_rounds = sum(r["kind"] == "policy" for r in rows.values())
            assert status["policy_rounds"] == policy_rounds
            assert status["spent_epsilon"] == dep.odometer.epsilon(policy_rounds)
            logged = [sum(r["releases"][a] + (r["update_releases"] or [0] * 3)[a] for r in rows.values())
                      for a in range(3)]
            assert status["releases_per_arm"] == logged
        assert all(rows[d]["arm"] == arm for d, arm in acked_s.items())  # nothing acknowledged was lost
        assert all(rows[d]["reward"] == r for d, r in acked_u.items())
        counts["acknowledged"] = len(acked_s) + len(acked_u)
        counts["committed_unacknowledged"] = len(rows) + sum(r["reward"] is not None for r in rows.values()) \
            - counts["acknowledged"]
        res = deployment_audit(path)
        assert res.verdict == "CONSISTENT", res.summary()
    counts["decisions"] = len(rows)
    return counts


def test_sigkill_at_random_points_keeps_the_store_and_the_odometer(tmp_path):
    """Session 13: after the snapshot became plain data restored into a fresh run, kill a writer at
    random points again (Gaussian TS: a block of pre-drawn normals and a prefix recorder in its
    state); 3 kills, a few seconds."""
    path = tmp_path / "random.db"
    Deployment.create(path, "gaussian_ts", params={"b": 2, "c": 50.0}, n_arms=3, budget=1e6, delta=1e-6,
                      horizon=10_000, seed=11, synchronous="normal").close()
    counts = kill_at_random(path, kills=3, seed=1)
    assert counts["kills"] == 3 and counts["acknowledged"] > 3
