"""Round 17 of the planted bugs (bench/audit_planted_round17.py, session 15): the registration, not the audit.

Each bug must be importable under its ``bug_`` name and *armed* -- on a tiny run it acts, draws or reports
differently from its clean twin (the parent's ``start`` on the bug's own configuration, as the bench's armed
guard builds it). The hub-round bug is armed only on a graph with a hub (checked on the audit's star, and shown
to be a no-op on the 2-arm path). The triggers the docstrings state are checked on direct runs: EXP3's floor in
the second half, EXP3-tau's re-draw after a zero only, DP-TS's saturation after eight ones and its flush noise
re-used from the block's last node, the memo's repeated noise, a side zero left uncounted, the |sum z| clip, the
clipped uniforms' atoms. The controls are listed before the bugs, and ``--only round17`` runs them first; the
deployment rows change their stores as stated under the crash drive. The whole audit of these rows is
``python bench/audit_planted.py --only round17``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from _bench import armed_on_a_tiny_run, check_only_round, check_registration, differs  # puts bench/ on sys.path

import audit_planted as harness  # noqa: E402 -- by name, as the harness imports the round (one module object)
import audit_planted_round17 as r17  # noqa: E402

_OWN_RUN = {"lazy_n_hub_round_half"}  # armed only on a hub graph: its own test below


def test_registered_names_and_parents_controls_first():
    assert len(r17.ROUND17_BUGS) >= 13 and len(r17.CONTROLS17) >= 4 and len(r17.DEPLOY_BUGS17) >= 2
    check_registration(harness, r17, 17)


def test_report_bugs_are_bugs_not_controls():
    """Session 15 (s15/reach2): the privacy-correct Gram control whose ledger report misstates its draw is a
    *report bug* (expected VIOLATION): run with the bugs, not among the controls, documented as privacy-correct."""
    assert set(r17.REPORT_BUGS17) == {"joint_gram_symmetrised_noise"}
    for key, cls in r17.REPORT_BUGS17.items():
        assert r17.ROUND17_BUGS[key] is cls and key not in r17.CONTROLS17
        assert cls.__doc__.startswith("Report bug (privacy-correct")


def test_only_round17_runs_controls_first(monkeypatch, tmp_path):
    check_only_round(harness, r17, 17, monkeypatch, tmp_path)


@pytest.mark.parametrize("key", sorted(set(r17.ROUND17_BUGS) - _OWN_RUN))
def test_bug_armed_on_a_tiny_run(key):
    assert armed_on_a_tiny_run(harness, r17.ROUND17_BUGS[key]), f"{key}: no difference from its clean twin on the tiny run"


def test_hub_bug_armed_on_the_star_only():
    bug, clean = r17.LazyNHubRoundHalf(), r17.LazyNHubRoundHalf()
    clean.start = lambda *a, **k: r17.LazyDPTSN.start(clean, *a, **k)
    star = dict(n_arms=harness.GRAPH["shape_arms"], replicates=8, horizon=200, shape="star")
    assert differs(harness.behaviour(bug, **star), harness.behaviour(clean, **star))
    path = dict(n_arms=2, replicates=8, horizon=200)  # degree 1: never a hub round
    assert not differs(harness.behaviour(bug, **path), harness.behaviour(clean, **path))


@pytest.mark.parametrize("key", sorted(r17.CONTROLS17))
def test_control_runs_and_releases(key):
    """A control completes a tiny run (``behaviour`` turns a raise into one action) and releases (EXP3 draws no
    noise: its run's actions are the check)."""
    pol = r17.CONTROLS17[key]()
    out = harness.behaviour(pol, n_arms=2, replicates=4, horizon=200)
    assert out["actions"].shape == (4, 200)
    assert out["draws"][0].size > 0 or not pol.records_releases


# --- the triggers ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, early, late", [("Exp3FloorDroppedLate", 1.0, 1.0 / r17.LATE_FLOOR),
                                              ("Exp3FloorRaised", 2.0, 2.0)])
def test_exp3_floor_early_and_late(cls, early, late):
    run = getattr(r17, cls)().start(2, 4, 200, np.random.default_rng(0))
    gamma = run.core.gamma
    for t, factor in ((100, early), (101, late)):
        run.select(t)
        assert run.core.floor == pytest.approx(factor * gamma / 2) and run.core.keep == pytest.approx(1 - factor * gamma)
        assert (run.core.p_played >= factor * gamma / 2 - 1e-15).all()


@pytest.mark.parametrize("reward, switches", [(0.0, True), (1.0, False)])
def test_exp3_tau_redraws_only_after_a_zero(reward, switches):
    run = r17.Exp3TauRedrawOnZero().start(2, 256, 200, np.random.default_rng(5))
    first = run.select(1).copy()
    run.update(1, first, np.full(256, reward))
    second = run.select(2)
    assert (second != first).any() == switches
    if switches:  # a fresh EXP3 choice: about half the replicates move (K = 2)
        assert 0.2 < (second != first).mean() < 0.8


def test_exp3_tau_gain_is_the_sum():
    run = r17.Exp3TauGainUnaveraged().start(2, 1, 200, np.random.default_rng(2))
    assert run.tau == 6
    for t in range(1, 7):
        arms = run.select(t)
        run.update(t, arms, np.ones(1))
    # one batch of six rewards of 1: the played arm's log-weight moved by eta * 6 / p (the parent: eta * 1 / p)
    w = run.core.log_w[0]
    assert w.max() - w.min() == pytest.approx(run.core.eta * 6.0 / run.core.p_played[0])


def test_private_exp3_running_total_released():
    released = []
    run = r17.PrivateExp3RunningLoss().start(2, 1, 200, np.random.default_rng(0))
    release = run.noise.release_records
    run.noise.release_records = lambda values, *a: released.append(float(values[0])) or release(values, *a)
    for t in range(1, 5):
        run.select(t)
        run.update(t, np.array([0]), np.array([0.25]))  # arm 0 four times: losses 0.75 each
    assert released == pytest.approx([0.75, 1.5, 2.25, 3.0])


def test_dp_ts_saturation_after_eight_ones():
    saturated = r17._saturating(2)
    f = np.array([0])
    entered = [float(saturated(np.array([v]), f, f)[0]) for v in [1.0] * 7 + [0.0, 1.0, 0.0, 0.25]]
    assert entered == [1.0] * 7 + [0.0, 1.0, 1.0, 1.0]  # the 8th one is the 9th reward; later rewards enter as 1
    other = saturated(np.array([0.0]), np.array([1]), f)  # another stream is untouched
    assert other[0] == 0.0


def _standard_noise(sampler, tag=lambda: None) -> list:
    """Every ``_sum_release`` of ``sampler`` from now on, as (tag(), its noise / scale, flattened)."""
    release, seen = sampler._sum_release, []

    def recording(statistic, scale, on_grid=True):
        out = release(statistic, scale, on_grid)
        seen.append((tag(), np.ravel((np.asarray(out) - statistic) / np.asarray(scale, dtype=float))))
        return out

    sampler._sum_release = recording
    return seen


def test_dp_ts_flush_reuses_the_last_binary_draw():
    run = r17.DPTSFlushReusesBlockNoise().start(2, 1, 200, np.random.default_rng(4))
    sampler = run.split.sampler
    seen = _standard_noise(sampler, lambda: sampler._bug_ctx[0])
    for t in range(1, 16):
        run.update(t, np.array([0]), np.array([0.5]))
    flushes = [i for i, (kind, _) in enumerate(seen) if kind == "flush"]
    assert len(flushes) == 4  # counts 1, 3, 7, 15
    for i in flushes[1:]:  # every flush after the first takes the previous binary node's standard draw
        assert seen[i - 1][0] == "binary" and seen[i][1][0] == pytest.approx(seen[i - 1][1][0], rel=1e-12)


def test_dp_ucb_memo_repeats_noise():
    run = r17.DPUCBNoiseMemoHash().start(2, 8, 200, np.random.default_rng(6))
    sampler = run.hybrid.sampler
    noise = _standard_noise(sampler)
    for t in range(1, 201):
        arms = run.select(t)
        run.update(t, arms, np.full(8, 0.5))
    z = np.concatenate([n for _, n in noise])
    assert np.isin(np.round(z, 9), np.round(sampler._bug_table, 9)).all()  # every value read from the memo
    assert z.size - np.unique(np.round(z, 12)).size > 10  # and many read twice (collisions)


def test_gaussian_ts_n_side_zero_left_uncounted():
    run = r17.GaussianTSNSideZeroUncounted(b=0).start(3, 1, 200, np.random.default_rng(0))
    run._bug_arms = np.array([0])  # arm 0 played; arms 1 and 2 side-observed
    observed = np.array([[True, True, True]])
    run.learn(1, observed, np.array([[0.0, 0.0, 0.5]]))
    assert run.counts.tolist() == [[1.0, 0.0, 1.0]]  # the played 0 counts; the side 0 does not


def test_signed_sum_norm_passes_mixed_signs_unclipped():
    big = np.array([[100.0, -100.0, 0.0, 0.0, 0.0], [100.0, 100.0, 0.0, 0.0, 0.0]])
    out = r17._signed_sum_norm(big, 1.0)
    assert np.array_equal(out[0], big[0])  # |sum z| = 0: never clipped (norm 141 against L = 1)
    assert np.linalg.norm(out[1]) <= 1.0  # non-negative: over-clipped to |sum z| = 1


def test_clipped_uniform_laplace_atoms_and_law():
    sampler = r17._ClippedUniformLaplace(np.random.default_rng(9))
    top = math.log(1.0 / (2.0 * r17.U_CLIP))
    z = sampler.laplace(1.0, size=200_000)
    assert np.abs(z).max() <= top * (1 + 1e-12)
    assert stats.kstest(z, stats.laplace.cdf).pvalue > 1e-3  # Laplace in law away from the atoms
    sampler.rng = type("Edges", (), {"random": staticmethod(lambda shape: np.array([0.0, 1.0]))})()
    assert sampler._sum_release(np.zeros(2), 2.0) == pytest.approx([-2.0 * top, 2.0 * top])  # the atoms


def test_cross_arm_lag3_ties_one_pair_and_is_laplace_per_draw():
    run = r17.Exp3LapCrossArmLag3().start(2, 1, 200, np.random.default_rng(8))
    for t in range(1, 61):  # at most 60 releases an arm: the ring (64) still holds them all
        arms = run.select(t)
        run.update(t, arms, np.array([0.5]))
    u, p = run.noise.sampler._bug_ring
    n0, n1 = run.pulls[0]
    tied = [k for k in range(r17.CROSS_LAG, n1) if k - 3 < n0]
    assert len(tied) >= 10
    for k in tied:  # arm 1's k-th uniform is arm 0's (k - 3)-th turned by 1/2
        assert u[0, 1, k % r17.RING] == pytest.approx((u[0, 0, (k - 3) % r17.RING] + 0.5) % 1.0, abs=1e-15)
    sampler = r17._CrossArmLagged(np.random.default_rng(3))
    sampler._bug_ring = (np.zeros((1, 2, r17.RING)), np.full((1, 2, r17.RING), -1, dtype=np.int64))
    z = []
    for k in range(2000):  # alternating arms at equal positions: arm 1 from k >= 3 always tied
        for arm in (0, 1):
            sampler._bug_where = (np.array([0]), np.array([arm]), np.array([k]))
            z.append(sampler._sum_release(np.zeros(1), 1.0)[0])
    z = np.array(z)
    assert stats.kstest(z[1::2], stats.laplace.cdf).pvalue > 1e-3 and stats.kstest(z[0::2], stats.laplace.cdf).pvalue > 1e-3


def test_hash_rounding_is_a_fixed_map_into_zero_one():
    v = np.random.default_rng(1).random(20_000)
    a, b = r17._hash_rounded(v), r17._hash_rounded(v.copy())
    assert np.array_equal(a, b) and set(np.unique(a)) <= {0.0, 1.0}
    assert abs(a.mean() - v.mean()) < 4 * 0.5 / math.sqrt(v.size)  # unbiased: E[round(r)] = r for hashed r
    assert r17._hash_rounded(np.array([0.0]))[0] == 0.0 and r17._hash_rounded(np.array([1.0]))[0] == 1.0


def test_symmetrised_noise_marks_the_off_diagonals():
    pol = r17.JointGramSymmetrisedNoise()
    out = harness.behaviour(pol, n_arms=2, replicates=2, horizon=20)
    assert out["draws"][0].size > 0
    d = pol.dim + 1
    i, j = np.triu_indices(d)
    assert int((i != j).sum()) == d * (d - 1) // 2  # the mask's count for the packed (d + 1) x (d + 1) matrix


# --- deployments under the crash drive ------------------------------------------------------------
def _driven(cls, tmp_path):
    from privbandit.deploy.deployment import Deployment

    path = str(tmp_path / "store.db")
    assert r17.drive_deployment17(cls, path) is None
    lib, own = Deployment.open(path), cls.open(path)
    try:
        return lib.status(), own.status()
    finally:
        lib.close()
        own.close()


def test_crash_drive_ends_with_an_open_round(tmp_path):
    lib, _ = _driven(r17.DeployCrashUnmodified, tmp_path)
    assert lib["open_decision"] is not None and lib["policy_rounds"] == 30  # the stop round, left open
    assert sum(lib["releases_per_arm"]) == 57


def test_crash_redecides_releases_more_than_it_counts(tmp_path):
    lib, _ = _driven(r17.DeployCrashRedecides, tmp_path)
    assert lib["policy_rounds"] == 30 and sum(lib["releases_per_arm"]) == 67  # 5 crashes, 2 arms each


def test_status_counts_closed_rounds_only(tmp_path):
    lib, bug = _driven(r17.DeployStatusClosedRounds, tmp_path)
    assert lib["spent_epsilon"] == pytest.approx(10.364, abs=1e-3)
    assert bug["spent_epsilon"] == pytest.approx(10.147, abs=1e-3)
