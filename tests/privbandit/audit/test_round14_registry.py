"""Round 14 of the planted bugs (bench/audit_planted_round14.py, session 12): the registration, not the audit.

Each bug must be importable under its ``bug_`` name and *armed* -- on a tiny run it acts, draws or reports
differently from its clean twin (the parent's ``start`` on the bug's own configuration, as the bench's armed
guard builds it), or its certificate differs from its parent's -- so that a catch-table row measures the
auditor and not a no-op. The controls are listed before the bugs, and ``--only round14`` runs them first.
The whole audit of these rows is ``python bench/audit_planted.py --only round14`` (minutes per row).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from _bench import armed_on_a_tiny_run, check_only_round, check_registration, differs as _differs, twins as _twins  # puts bench/ on sys.path

import audit_planted as harness  # noqa: E402 -- by name, as the harness imports the round (one module object)
import audit_planted_round14 as r14  # noqa: E402

# bugs that differ only on a path the tiny K-armed run does not take: checked by their own tests below
_OWN_TEST = {"exp3_lap_single_replicate_half", "exp3_late_half", "exp3_batch_late_last_twice", "exp3_lap_arm_nine_double"}


def test_registered_names_and_parents_controls_first():
    assert len(r14.ROUND14_BUGS) >= 14 and len(r14.CONTROLS14) >= 4
    check_registration(harness, r14, 14)


def test_only_round14_runs_controls_first(monkeypatch, tmp_path):
    check_only_round(harness, r14, 14, monkeypatch, tmp_path)


@pytest.mark.parametrize("key", sorted(set(r14.ROUND14_BUGS) - _OWN_TEST))
def test_bug_armed_on_a_tiny_run(key):
    assert armed_on_a_tiny_run(harness, r14.ROUND14_BUGS[key]), f"{key}: no difference from its clean twin on the tiny run"


def test_single_replicate_bug_armed_only_with_one_replicate():
    bug, clean = _twins(r14.Exp3LapSingleReplicateHalf)
    one = [harness.behaviour(p, n_arms=2, replicates=1, horizon=200) for p in (bug, clean)]
    many = [harness.behaviour(p, n_arms=2, replicates=4, horizon=200) for p in (bug, clean)]
    assert _differs(*one) and not _differs(*many)


def test_late_bug_halves_only_from_2_14_records():
    bug, clean = _twins(r14.Exp3LateHalf)
    arms, rewards = np.zeros(1, dtype=np.int64), np.array([0.5])
    for pulls, factor in ((2 ** 14 - 1, 1.0), (2 ** 14, 0.5)):
        noise = []
        for policy in (bug, clean):
            run = policy.start(2, 1, 2 ** 15, np.random.default_rng(3))
            run.select(1)
            run.pulls[0, 1] = pulls
            seen = []
            release = run.noise.release_records
            run.noise.release_records = lambda v, *a, **k: seen.append(release(v, *a, **k) - v) or seen[-1]
            run.update(1, arms, rewards)
            noise.append(seen[0][0])
        assert noise[0] == pytest.approx(factor * noise[1], rel=1e-12)


def _released_statistics(policy, n_arms, horizon, arms_of=None):
    """The statistics a one-replicate EXP3 run hands its Laplace release, round by round (rewards 0.25)."""
    run = policy.start(n_arms, 1, horizon, np.random.default_rng(5))
    seen = []
    release = run.noise.release_records
    run.noise.release_records = lambda v, *a, **k: seen.append(float(np.asarray(v)[0])) or release(v, *a, **k)
    for t in range(1, horizon + 1):
        arms = run.select(t) if arms_of is None else np.array([arms_of(t)], dtype=np.int64)
        run.update(t, arms, np.array([0.25]))
    return np.array(seen)


def test_late_batch_bug_counts_the_closing_round_twice_only_past_2_14():
    bug, clean = _twins(r14.Exp3BatchLateLastTwice)
    a, b = (_released_statistics(p, 2, 2 ** 14 + 8) for p in (bug, clean))
    assert a.shape == b.shape == (2 ** 12 + 2,)  # one release per batch of 4
    assert np.array_equal(a[:2 ** 12], b[:2 ** 12])
    assert np.allclose(a[2 ** 12:] - b[2 ** 12:], 0.75)  # the 4th round's loss 1 - 0.25, once more


def test_arm_nine_bug_doubles_only_arms_from_8():
    bug, clean = _twins(r14.Exp3LapArmNineDouble)
    pattern = lambda t: t % 10  # noqa: E731 -- every arm of ten in turn
    a, b = (_released_statistics(p, 10, 20, pattern) for p in (bug, clean))
    arms = np.arange(1, 21) % 10
    assert np.array_equal(a, np.where(arms >= 8, 2.0, 1.0) * b)


def test_tiny_delta_bug_armed_only_below_1e_6():
    bug = r14.TSTinyDeltaSplit()
    clean = object.__new__(r14.GaussianTS)  # the parent's schedule on the bug's configuration (b = 1, c = 4)
    clean.__dict__.update(bug.__dict__)
    for delta, differs in ((1e-3, False), (1e-5, False), (1e-6, False), (1e-9, True)):
        a, b = (p.privacy_schedule(200, 2).epsilon(200, delta).value for p in (bug, clean))
        assert (a < b) == differs and (a == b) != differs


def _arms_and_draws(cls, path):
    from audit_planted_bugs import drive_deployment
    from privbandit.deploy.deployment import Deployment

    drive_deployment(cls, path)
    with Deployment.open(path) as dep:
        history = dep.history()
    policy = [d for d in history["decisions"] if d["kind"] == "policy"]
    return [d["arm"] for d in policy], history["snapshot"]["ledger"].draws[0].tolist()


@pytest.mark.parametrize("key", sorted(r14.DEPLOY_BUGS14))
def test_deployment_bug_armed(key, tmp_path):
    from audit_planted_bugs import DeployControl

    bug = _arms_and_draws(r14.DEPLOY_BUGS14[key], os.path.join(tmp_path, "bug.db"))
    clean = _arms_and_draws(DeployControl, os.path.join(tmp_path, "clean.db"))
    assert bug != clean


def test_deployment_control_identical(tmp_path):
    from audit_planted_bugs import DeployControl

    (cls,) = r14.DEPLOY_CONTROLS14.values()
    assert _arms_and_draws(cls, os.path.join(tmp_path, "c.db")) == _arms_and_draws(DeployControl, os.path.join(tmp_path, "u.db"))
