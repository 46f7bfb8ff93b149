"""Round 15 of the planted bugs (bench/audit_planted_round15.py, session 13): the registration, not the audit.

Each bug must be importable under its ``bug_`` name and *armed* -- on a tiny run it acts, draws or reports
differently from its clean twin (the parent's ``start`` on the bug's own configuration, as the bench's armed
guard builds it), or its certificate differs from its parent's -- so that a catch-table row measures the
auditor and not a no-op. The bugs keyed to a reward's value or a record's round are checked to act on exactly
those records. The controls are listed before the bugs, and ``--only round15`` runs them first. The whole audit
of these rows is ``python bench/audit_planted.py --only round15`` (minutes per row).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from _bench import armed_on_a_tiny_run, check_only_round, check_registration, differs as _differs, twins as _twins  # puts bench/ on sys.path

import audit_planted as harness  # noqa: E402 -- by name, as the harness imports the round (one module object)
import audit_planted_round15 as r15  # noqa: E402

_GRAPH_EDGELESS = {"graph_isolated_self_loop_double"}  # armed on isolated played arms only: own test below


def test_registered_names_and_parents_controls_first():
    assert len(r15.ROUND15_BUGS) >= 12 and len(r15.CONTROLS15) >= 4 and len(r15.DEPLOY_BUGS15) >= 3
    check_registration(harness, r15, 15)


def test_only_round15_runs_controls_first(monkeypatch, tmp_path):
    check_only_round(harness, r15, 15, monkeypatch, tmp_path)


@pytest.mark.parametrize("key", sorted(set(r15.ROUND15_BUGS) - _GRAPH_EDGELESS))
def test_bug_armed_on_a_tiny_run(key):
    assert armed_on_a_tiny_run(harness, r15.ROUND15_BUGS[key]), f"{key}: no difference from its clean twin on the tiny run"


@pytest.mark.parametrize("key", sorted(r15.CONTROLS15))
def test_control_runs_and_releases(key):
    """A control completes a tiny run and releases (``behaviour`` turns a raise into an empty trace): a control
    that raised would be "CONSISTENT" only through the audit's exception handling."""
    out = harness.behaviour(r15.CONTROLS15[key](), n_arms=2, replicates=4, horizon=200)
    assert out["draws"][0].size > 0


def test_isolated_graph_bug_armed_on_the_edgeless_graph_only():
    bug, clean = _twins(r15.GraphIsolatedSelfLoopDouble)
    edgeless = [harness.behaviour(p, n_arms=2, replicates=4, horizon=60, shape="edgeless") for p in (bug, clean)]
    complete = [harness.behaviour(p, n_arms=2, replicates=4, horizon=60, shape="path") for p in (bug, clean)]
    assert _differs(*edgeless) and not _differs(*complete)


def _inserted(cls, rewards, n_arms=2):
    """What a one-replicate Private-UCB run of ``cls`` adds into its trees' nodes, round by round (arms in turn)."""
    run = cls().start(n_arms, 1, 64, np.random.default_rng(1))
    seen, core = [], run.tree._core
    insert = core.insert_flat  # below every seam: what the tree's nodes actually add up
    core.insert_flat = lambda mech, f, rr, kk, v, *rest: seen.append(float(np.asarray(v)[0])) or insert(mech, f, rr, kk, v, *rest)
    for t, r in enumerate(rewards, start=1):
        run.update(t, np.array([(t - 1) % n_arms]), np.array([r]))
    return np.array(seen)


@pytest.mark.parametrize("cls, expected", [
    ("UCBFractionalCentred", lambda r: np.where((r > 0) & (r < 1), 2 * r - 1, r)),
    ("UCBZeroAsMinusOne", lambda r: np.where(r == 0, -1.0, r)),
    ("UCBHighRewardBonus", lambda r: np.where(r > 0.5, r + 0.5, r)),
])
def test_value_keyed_bugs_change_only_their_values(cls, expected):
    rewards = np.array([0.0, 1.0, 0.25, 0.5, 0.75, 1.0, 0.0, 1e-9])
    got = _inserted(getattr(r15, cls), rewards)
    assert np.array_equal(_inserted(r15.PrivateUCB, rewards), rewards)
    assert np.array_equal(got, expected(rewards))


def test_power_of_two_bug_doubles_the_records_opening_a_level():
    rewards = np.full(24, 0.5)
    got = _inserted(r15.UCBPowerOfTwoCarry, rewards)  # arms alternate: record j of an arm in round 2 j (- 1)
    per_arm_index = np.arange(24) // 2 + 1  # the count each record brings its arm to
    pow2 = (per_arm_index & (per_arm_index - 1)) == 0
    assert np.array_equal(got, np.where(pow2, 1.0, 0.5))


def _exp3_released(cls, rewards, horizon):
    """The statistics a one-replicate EXP3 run of ``cls`` hands its Laplace release, round by round."""
    run = cls().start(2, 1, horizon, np.random.default_rng(5))
    seen = []
    release = run.noise.release_records
    run.noise.release_records = lambda v, *a, **k: seen.append(float(np.asarray(v)[0])) or release(v, *a, **k)
    for t, r in enumerate(rewards, start=1):
        run.update(t, run.select(t), np.array([r]))
    return np.array(seen)


def test_round_keyed_bugs_double_only_their_round():
    rewards = np.array([0.75, 0.25, 1.0, 0.5, 0.75])
    clean = _exp3_released(r15.DPEXP3Lap, rewards, 5)
    assert np.array_equal(clean, rewards)
    assert np.array_equal(_exp3_released(r15.Exp3LapFirstRoundDouble, rewards, 5), rewards * [2, 1, 1, 1, 1])
    assert np.array_equal(_exp3_released(r15.Exp3LapLastRoundDouble, rewards, 5), rewards * [1, 1, 1, 1, 2])


def test_fractional_loss_bug_doubles_only_fractional_losses():
    rewards = np.array([0.0, 1.0, 0.25, 0.5, 1.0, 0.0])
    got = _exp3_released(r15.Exp3FractionalLossDoubled, rewards, 6)
    assert np.array_equal(_exp3_released(r15.PrivateEXP3, rewards, 6), 1.0 - rewards)
    assert np.array_equal(got, [1.0, 0.0, 1.5, 1.0, 0.0, 1.0])


def test_pair_uniform_noise_is_laplace_and_one_draw():
    """Each arm's residuals are Laplace(1) (KS at a fixed seed, 4,000 per arm: critical value 0.0215 at
    alpha = 1e-3), and arm 1's k-th residual is the deterministic image of arm 0's k-th (u -> u + 1/2)."""
    from scipy import stats

    bug = r15.Exp3LapPairUniformShift()
    run = bug.start(2, 4000, 10, np.random.default_rng(11))
    out = {}
    release = run.noise.release_records
    run.noise.release_records = lambda v, *a, **k: out.setdefault(len(out), (np.array(v), release(v, *a, **k)))[1]
    for t, arm in ((1, 0), (2, 1)):
        run.update(t, np.full(4000, arm), np.full(4000, 0.5))
    z0, z1 = (out[i][1] - out[i][0] for i in (0, 1))
    for z in (z0, z1):
        assert stats.kstest(z, stats.laplace.cdf).statistic < 0.0215
    u0 = np.where(z0 < 0, np.exp(z0) / 2, 1 - np.exp(-z0) / 2)  # the Laplace(1) CDF: the uniform behind z0
    u1 = np.where(z1 < 0, np.exp(z1) / 2, 1 - np.exp(-z1) / 2)
    assert np.allclose((u0 + 0.5) % 1.0, u1, atol=1e-9)


def test_one_uniform_vector_noise_is_laplace_per_entry_and_one_draw_per_row():
    """Each entry of the vector noise is Laplace(scale) (KS, 4,000 rows, critical value 0.0215 at alpha = 1e-3),
    and every entry of a row is the image of the row's first uniform shifted by j / n."""
    from scipy import stats

    sampler = r15._OneUniformPerVector(np.random.default_rng(13))
    z = sampler.laplace(2.0, size=(4000, 6))
    for j in range(6):
        assert stats.kstest(z[:, j] / 2.0, stats.laplace.cdf).statistic < 0.0215
    u = stats.laplace.cdf(z / 2.0)
    assert np.allclose((u[:, :1] + np.arange(6) / 6) % 1.0, u, atol=1e-9)


def test_certificate_bugs_below_their_parents():
    lo, hi = (p.privacy_schedule(200, 2).epsilon(200, 1e-5).value for p in (r15.DPUCBBoundForgetsPure(), r15.DPUCBBound()))
    assert lo == pytest.approx(0.49998, abs=1e-5) and hi == pytest.approx(0.99997, abs=1e-5)
    tsn = [p.privacy_schedule(200, 2).epsilon(200, 1e-5).value for p in (r15.GaussianTSNLargeMuBranch(), r15.GaussianTSN(1, 1.0))]
    assert tsn[0] == pytest.approx(42.435, abs=1e-2) and tsn[1] == pytest.approx(91.104, abs=1e-2)
    rounds = np.array([50, 100, 200])
    live = [p.privacy_schedule(200, 2).live_certificates(rounds, 1e-5)[0] for p in (r15.UCBLiveForwardMinimum(), r15.PrivateUCB())]
    assert live[0][-1] == live[0][0] < live[1][-1]
    assert live[0][0] == pytest.approx(live[1][0], rel=1e-4)  # eps(50) (all accountants vs the cheap ones)


def _policy_rounds_and_arms(cls, path):
    from audit_planted_bugs import drive_deployment
    from privbandit.deploy.deployment import Deployment

    drive_deployment(cls, path)
    with Deployment.open(path) as dep:
        history = dep.history()
    return [d["arm"] for d in history["decisions"] if d["kind"] == "policy"]


def test_deployment_bugs_armed(tmp_path):
    from audit_planted_bugs import DeployControl

    clean = _policy_rounds_and_arms(DeployControl, os.path.join(tmp_path, "clean.db"))
    assert len(clean) == 30
    got = {key: _policy_rounds_and_arms(cls, os.path.join(tmp_path, key + ".db")) for key, cls in r15.DEPLOY_BUGS15.items()}
    assert len(got["deploy_filter_boundary_greater"]) == 31  # one policy round past the stop round
    assert len(got["deploy_filter_delta_slip"]) == 34  # the stop round planned at 10 delta
    assert got["deploy_restart_reseeded"] != clean


def test_deployment_control_identical(tmp_path):
    from audit_planted_bugs import DeployControl

    (cls,) = r15.DEPLOY_CONTROLS15.values()
    assert _policy_rounds_and_arms(cls, os.path.join(tmp_path, "c.db")) == \
        _policy_rounds_and_arms(DeployControl, os.path.join(tmp_path, "u.db"))
