"""Round 20 of the planted bugs (bench/audit_planted_round20.py, session 18): the registration, not the audit.

Each bug must be importable under its ``bug_`` name and *armed*: on a small untraced run (a few replicates, tens of
rounds, driven here directly rather than through the audit's tracer, to keep the file fast) it acts or holds state
differently from its clean twin (the parent's ``start`` on the bug's own configuration, as the bench's armed guard
builds it), in the way its docstring says. The claim-only bug and control are checked against the parent's schedule.
The deployment rows are checked for what reaches the policy and what a reopen restores. The controls are listed before
the bugs and ``--only round20`` runs them first. The whole audit of these rows is
``python bench/audit_planted.py --only round20``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _bench import check_only_round, check_registration, twins  # puts bench/ on sys.path

import audit_planted as harness  # noqa: E402 -- by name, as the harness imports the round (one module object)
import audit_planted_round20 as r20  # noqa: E402
from privbandit.mechanisms.sampling import NoiseSampler  # noqa: E402


def test_registered_names_and_parents_controls_first():
    assert len(r20.ROUND20_BUGS) + len(r20.DEPLOY_BUGS20) >= 11 and len(r20.CONTROLS20) + len(r20.DEPLOY_CONTROLS20) >= 5
    check_registration(harness, r20, 20)


def test_only_round20_runs_controls_first(monkeypatch, tmp_path):
    check_only_round(harness, r20, 20, monkeypatch, tmp_path)


def _drive(policy, replicates: int, horizon: int, seed: int = 3, binary: bool = False):
    """Run ``policy`` round by round on a fixed reward table (fractional, or 0/1 with ``binary``); the actions."""
    rng = np.random.default_rng(seed + 1000)
    table = rng.random((horizon, replicates, 2))
    if binary:
        table = (table < 0.5).astype(float)
    run = policy.start(2, replicates, horizon, np.random.default_rng(seed))
    rows = np.arange(replicates)
    actions = np.empty((horizon, replicates), dtype=int)
    for t in range(1, horizon + 1):
        arms = np.asarray(run.select(t))
        actions[t - 1] = arms
        run.update(t, arms, table[t - 1, rows, arms])
    return run, actions


# --- fixed-point noise ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sampler, on_noise", [(r20._FixedPointNoise, True), (r20._FixedPointRelease, False)])
def test_fixed_point_samplers(sampler, on_noise):
    """The bug's release minus its fractional statistic is a whole number of 10^-9 (the statistic's residue shows
    through); the control's release itself is; both within 5e-10 of the library's draw on the same seed."""
    stat = np.random.default_rng(1).random(500) * 7.0
    bug = NoiseSampler(np.random.default_rng(2))
    bug.__class__ = sampler
    out = bug._sum_release(stat, 3.0)
    ref = NoiseSampler(np.random.default_rng(2))._sum_release(stat, 3.0)
    assert np.all(np.abs(out - ref) <= 6e-10) and not np.array_equal(out, ref)
    units = (out - stat if on_noise else out) * r20.FIXED_POINT
    assert np.all(np.abs(units - np.round(units)) < 1e-3)
    other = (out if on_noise else out - stat) * r20.FIXED_POINT  # the other reading is not on the lattice
    assert np.mean(np.abs(other - np.round(other)) > 1e-2) > 0.9


@pytest.mark.parametrize("cls", [r20.PrivateUCBNoiseFixedPoint, r20.PrivateUCBReleaseFixedPoint])
def test_private_ucb_fixed_point_installed(cls):
    """The bug (and its control) runs its tree through the fixed-point sampler; its clean twin through the library's;
    the released sums differ by no more than the rounding."""
    bug, clean = twins(cls)
    (rb, _), (rc, _) = _drive(bug, 4, 40), _drive(clean, 4, 40)
    assert type(rb.tree.sampler) is not NoiseSampler and type(rc.tree.sampler) is NoiseSampler
    diff = np.abs(rb.tree.noisy_sum - rc.tree.noisy_sum)
    assert diff.max() > 0 and diff.max() < 1e-7


def test_private_lin_ts_fixed_point_installed():
    """Private-Lin-TS's vector tree (made at the first select) gets the fixed-point sampler; its draws differ from
    the clean twin's on the harness's own contextual tape, by no more than the rounding."""
    bug, clean = twins(r20.PrivateLinTSNoiseFixedPoint)
    a = harness.behaviour(bug, n_arms=2, replicates=2, horizon=12)
    b = harness.behaviour(clean, n_arms=2, replicates=2, horizon=12)
    assert a["draws"][1].size and not np.array_equal(a["draws"][1], b["draws"][1])
    assert np.allclose(a["draws"][1], b["draws"][1], rtol=0, atol=1e-6)  # (the per-entry weights scale the rounding)


# --- two cursors into one pool ---------------------------------------------------------------------------
def test_two_cursor_pool_reuses_binary_draws_in_log_releases():
    """DP-UCB-Bound's logarithmic releases from count 8 on re-read standard draws the binary part used: after 60
    rounds some stream's log cursor has passed entries of its pool, and the released sums differ from the twin's."""
    bug, clean = twins(r20.DPUCBBoundNoisePoolTwoCursors)
    (rb, _), (rc, _) = _drive(bug, 2, 60), _drive(clean, 2, 60)
    sampler = rb.hybrid.sampler
    reused = [key for key, c in sampler._bug_cursor.items() if min(c, len(sampler._bug_pool.get(key, []))) > 3]
    assert reused
    assert not np.array_equal(rb.hybrid.noisy_sum, rc.hybrid.noisy_sum)


# --- fancy indexing ----------------------------------------------------------------------------------------
def test_fancy_indexed_sums_cross_replicates_but_not_at_one():
    """Several replicates: the bug's sums differ from the twin's (other replicates' rewards in them), its counts do
    not; one replicate (a deployment): identical."""
    bug, clean = twins(r20.GaussianTSSumsFancyIndexed)
    (rb, _), (rc, _) = _drive(bug, 4, 20), _drive(clean, 4, 20)
    assert not np.allclose(rb.sums, rc.sums)
    (rb1, ab1), (rc1, ac1) = _drive(bug, 1, 20), _drive(clean, 1, 20)
    assert np.array_equal(ab1, ac1) and np.array_equal(rb1.sums, rc1.sums)


# --- the binary reward memo --------------------------------------------------------------------------------
def test_binary_reward_noise_memo_repeats_released_values():
    """On 0/1 rewards each replicate's releases take at most two values (the twin's: one per release)."""
    for cls, most in ((r20.DPEXP3LapBinaryRewardNoiseMemo, 2), (None, None)):
        bug, clean = twins(r20.DPEXP3LapBinaryRewardNoiseMemo)
        policy = bug if cls is not None else clean
        run = policy.start(2, 3, 30, np.random.default_rng(4))
        released = []
        release = run.noise.release_records

        def keep(*args, **kw):
            out = release(*args, **kw)
            released.append(np.array(out))
            return out

        run.noise.release_records = keep
        rng = np.random.default_rng(5)
        for t in range(1, 31):
            arms = run.select(t)
            run.update(t, arms, (rng.random(3) < 0.5).astype(float))
        distinct = [np.unique(np.array(released)[:, r]).size for r in range(3)]
        if most is None:
            assert min(distinct) == 30
        else:
            assert max(distinct) <= most


# --- the certificate off by one -------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, sign", [(r20.GaussianTSScheduleOneReleaseShort, -1),
                                       (r20.GaussianTSScheduleOneReleaseLong, 1)])
def test_gaussian_ts_schedule_off_by_one(cls, sign):
    """mu^2 (c = 1) is (t - 2) / 2 for the bug, t / 2 for the control, against the parent's (t - 1) / 2."""
    pol = cls()
    parent = r20.GaussianTS()
    for t in (2, 3, 200):
        got, ref = pol.privacy_schedule(t, 2).mu(t) ** 2, parent.privacy_schedule(t, 2).mu(t) ** 2
        assert got == pytest.approx(ref + sign * 0.5)


# --- the raw first batch ------------------------------------------------------------------------------------
def test_anytime_first_batch_read_raw():
    """Anytime-Lazy-UCB's index reads an arm's first (one-reward) batch raw: on 64 replicates the choices of the
    rounds after the pre-pulls differ from the twin's; its released batches (the ledger's) are the same draws."""
    bug, clean = twins(r20.AnytimeFirstBatchUnnoised)
    (rb, ab), (rc, ac) = _drive(bug, 64, 6), _drive(clean, 64, 6)
    assert np.array_equal(ab[:2], ac[:2]) and not np.array_equal(ab, ac)


# --- deployment rows ----------------------------------------------------------------------------------------
def _store(cls, tmp_path, decisions: int = 8):
    path = str(tmp_path / "store.db")
    assert r20.drive_deployment20(cls, path, decisions=decisions) is None
    return path


@pytest.mark.parametrize("cls", [r20.DeployRewardsCentredOnRunningMean, r20.DeployRewardsSquared])
def test_deployment_fed_rewards(tmp_path, cls):
    """Continuous raw rewards (none repeats) reach the policy centred on the running raw mean (the bug) or squared
    (the control); the log keeps the raw reward beside the fed one."""
    dep = cls.open(_store(cls, tmp_path))
    try:
        rows = dep._conn.execute("SELECT u.raw_reward, u.reward FROM updates u JOIN decisions d ON d.id = u.decision_id "
                                 "WHERE u.applied = 1 ORDER BY d.round").fetchall()
    finally:
        dep.close()
    raws = [raw for raw, _ in rows]
    assert len(rows) == 8 and len(set(raws)) == 8
    for i, (raw, fed) in enumerate(rows):
        want = (min(1.0, max(0.0, raw - (np.mean(raws[:i]) if i else 0.5) + 0.5))
                if cls is r20.DeployRewardsCentredOnRunningMean else raw * raw)
        assert fed == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("cls, position", [(r20.DeployReopenReplaysNormalBlock, "start"),
                                           (r20.DeployReopenRedrawsNormalBlock, "end"),
                                           (r20.Deployment, "kept")])
def test_reopen_normal_block_position(tmp_path, cls, position):
    """After 8 decisions (restarts after the 4th and 8th), a reopened store's posterior reads its block of normals from
    the start (the bug), past its end (the control: a new block at the next draw) or where it stood (the library)."""
    dep = cls.open(_store(cls, tmp_path))
    try:
        post = dep.snapshot()["run"].posterior
    finally:
        dep.close()
    assert {"start": post._pos == 0, "end": post._pos == post._z.shape[0],
            "kept": 0 < post._pos < post._z.shape[0]}[position]


@pytest.mark.parametrize("cls", [r20.DeployHoldPreviewsNextDraw, r20.DeployHoldPreviewsFresh])
def test_hold_returns_a_preview_without_advancing_the_state(tmp_path, cls, monkeypatch):
    """A hold's arm is the preview's (here forced to the other arm, to see it logged and returned), and the hold
    leaves the deployment's generator and ledger where they were; the next-draw preview is that of a copy of the state
    (computed twice, the same arm)."""
    path = str(tmp_path / "store.db")
    dep = cls.create(path, "gaussian_ts", params={"c": 4.0}, n_arms=2, budget=50.0, delta=1e-6, horizon=200, seed=7)
    try:
        d = dep.select()
        before = dep.snapshot()
        state_before = (before["rng"].bit_generator.state["state"], before["ledger"].draws.copy(),
                        before["run"].posterior._pos)
        if cls is r20.DeployHoldPreviewsNextDraw:
            assert r20._preview(dep, False) == r20._preview(dep, False)
        monkeypatch.setattr(r20, "_preview", lambda dep, fresh: 1 - d.arm)
        h = dep.select()
        after = dep.snapshot()
        rows = dep.decisions()
    finally:
        dep.close()
    assert h.kind == "hold" and h.arm == 1 - d.arm and rows[-1]["arm"] == 1 - d.arm
    assert after["rng"].bit_generator.state["state"] == state_before[0]
    assert np.array_equal(after["ledger"].draws, state_before[1]) and after["run"].posterior._pos == state_before[2]

