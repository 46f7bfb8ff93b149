"""Round 16 of the planted bugs (bench/audit_planted_round16.py, session 14): the registration, not the audit.

Each bug must be importable under its ``bug_`` name and *armed* -- on a tiny run it acts, draws or reports
differently from its clean twin (the parent's ``start`` on the bug's own configuration, as the bench's armed
guard builds it), or its certificate differs from its parent's -- so that a catch-table row measures the
auditor and not a no-op. The bugs with a late trigger (a node of level >= 9, a round past 2^16, an arm index
>= 16) are checked on small direct runs that reach exactly their trigger, and not before it. The lagged noise
is Laplace per draw and one draw 64 releases apart. The controls are listed before the bugs, and ``--only
round16`` runs them first. The whole audit of these rows is ``python bench/audit_planted.py --only round16``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from _bench import armed_on_a_tiny_run, check_only_round, check_registration, differs as _differs  # puts bench/ on sys.path

import audit_planted as harness  # noqa: E402 -- by name, as the harness imports the round (one module object)
import audit_planted_round16 as r16  # noqa: E402

_LATE = {"lin_ts_deep_nodes_quarter", "ucb_late_double", "anytime_arm16_half_in_draw"}  # own tests below


def test_registered_names_and_parents_controls_first():
    assert len(r16.ROUND16_BUGS) >= 12 and len(r16.CONTROLS16) >= 4 and len(r16.DEPLOY_BUGS16) >= 3
    check_registration(harness, r16, 16)


def test_only_round16_runs_controls_first(monkeypatch, tmp_path):
    check_only_round(harness, r16, 16, monkeypatch, tmp_path)


@pytest.mark.parametrize("key", sorted(set(r16.ROUND16_BUGS) - _LATE))
def test_bug_armed_on_a_tiny_run(key):
    assert armed_on_a_tiny_run(harness, r16.ROUND16_BUGS[key]), f"{key}: no difference from its clean twin on the tiny run"


@pytest.mark.parametrize("key", sorted(r16.CONTROLS16))
def test_control_runs_and_releases(key):
    """A control completes a tiny run and releases (``behaviour`` turns a raise into an empty trace)."""
    out = harness.behaviour(r16.CONTROLS16[key](), n_arms=2, replicates=4, horizon=200)
    assert out["draws"] and out["draws"][0].size > 0


def _tree_inserts(cls, rounds, n_arms=2, start=1):
    """What a one-replicate Private-UCB run of ``cls`` adds into its tree's nodes in ``rounds`` rounds from round
    ``start`` (arms in turn, reward 0.5; the policy's own round numbers)."""
    run = cls().start(n_arms, 1, start + rounds, np.random.default_rng(1))
    seen, core = [], run.tree._core
    insert = core.insert_flat  # below every seam: what the tree's nodes actually add up
    core.insert_flat = lambda mech, f, rr, kk, v, *rest: seen.append(float(np.asarray(v)[0])) or insert(mech, f, rr, kk, v, *rest)
    for t in range(start, start + rounds):
        run.update(t, np.array([(t - 1) % n_arms]), np.array([0.5]))
    return np.array(seen)


@pytest.mark.parametrize("cls, late", [("UCBLateDouble", 1.0), ("UCBLateQuantised", 0.5)])
def test_late_records_mapped_after_round_2_16_only(cls, late):
    rounds = 8
    got = _tree_inserts(getattr(r16, cls), rounds, start=r16.LATE_ROUND - 3)  # rounds 2^16 - 3 .. 2^16 + 4
    assert np.array_equal(got, [0.5] * 4 + [late] * 4)


def _deep_draws(cls, records=1_100):
    """The node noise the vector tree of a one-replicate, one-arm Private linear TS run of ``cls`` draws, per node,
    with each node's level (rewards 1, a fixed context)."""
    pol = cls(dim=2, epsilon=1.0)
    run = pol.start(2, 1, records, np.random.default_rng(3))
    z = np.zeros((1, 2, 2))
    z[0, :, 0] = 1.0

    class Offer:
        contexts = z

    levels, draws = [], []
    for t in range(1, records + 1):
        run.select(t, Offer())
        tree = run.stats.tree
        n = int(tree.count[0, 0]) + 1
        before = tree.noise_sum[0, 0].copy()
        dropped = tree._nodes[0, 0, :(n & -n).bit_length() - 1].sum(axis=0)
        run.update(t, np.array([0]), np.array([1.0]))
        levels.append((n & -n).bit_length() - 1)
        draws.append((tree.noise_sum[0, 0] - before + dropped) / tree.weights / tree.scale)
    return np.array(levels), np.array(draws)


def test_deep_nodes_quarter_only_from_level_9():
    levels, bug = _deep_draws(r16.LinTSDeepNodesQuarter)
    _, clean = _deep_draws(r16.PrivateLinTS)
    deep = levels >= r16.DEEP_LEVEL
    assert deep.sum() == 2  # records 512 and 1,024 complete the level-9 and level-10 nodes
    assert np.allclose(bug[~deep], clean[~deep]) and np.allclose(bug[deep], 0.25 * clean[deep])


def test_arm16_sampler_halves_only_arms_16_and_up():
    """The sampler draws arms >= 16 at half the scale it is handed, arms 0..15 at the full one: the same standard
    draws as the unmodified sampler's, from the same generator state."""
    arms = np.array([0, 7, 15, 16, 20, 32])
    bug = r16._HalfInDrawFromArm16(np.random.default_rng(5))
    bug._bug_arms = arms
    clean = r16.NoiseSampler(np.random.default_rng(5))
    stat, scale = np.linspace(0.0, 1.0, arms.size), 2.0
    ratio = (bug._sum_release(stat, scale) - stat) / (clean._sum_release(stat, scale) - stat)
    assert np.allclose(ratio, np.where(arms >= r16.WIDE_ARM, 0.5, 1.0))


@pytest.mark.parametrize("n_arms, acts", [(16, False), (17, True)])
def test_arm16_bug_needs_17_arms(n_arms, acts):
    bug, clean = r16.AnytimeArm16HalfInDraw(), r16.AnytimeLazyUCB()
    out = [harness.behaviour(p, n_arms=n_arms, replicates=2, horizon=300) for p in (bug, clean)]
    assert _differs(*out) == acts


def test_lagged_uniforms_are_uniform_and_tied_64_apart():
    rng = np.random.default_rng(0)
    ring, seen = np.zeros((1, 1, r16.LAG)), np.zeros((1, 1, r16.LAG), dtype=bool)
    n = 64 * 40
    u = np.concatenate([r16._lagged_uniforms(ring, seen, np.zeros(1, int), np.zeros(1, int), np.array([k]),
                                             rng.random(1)) for k in range(n)])
    assert stats.kstest(u, "uniform").pvalue > 1e-3  # each draw Uniform(0, 1) in law
    lag = (u[r16.LAG:] - u[:-r16.LAG]) % 1.0
    assert np.allclose(lag, r16.ROTATION % 1.0)  # release k + 64 a fixed turn of release k
    assert np.unique(u).size == n  # never a repeated value
    z = r16._laplace_inverse_cdf(u)
    assert stats.kstest(z, "laplace").pvalue > 1e-3


def test_certificate_bugs_numbers():
    joint = r16.JointOwnDeltaRootDropped()
    sch = joint.privacy_schedule(200, 2, "round")
    assert math.isclose(sch.epsilon(200, 1e-6).value, 0.9306, abs_tol=1e-3)
    assert math.isclose(r16.JointDPSchedule.epsilon(sch, 200, 1e-6).value, 1.0, abs_tol=1e-6)
    exp3 = r16.Exp3AdvancedExpm1Dropped().privacy_schedule(200, 2)
    clean = r16.EXP3().privacy_schedule(200, 2)
    assert exp3.epsilon(200, 1e-5).value < 0.4 * clean.epsilon(200, 1e-5).value


def _driven(cls, path):
    """The status and log of a store driven as the bench drives it (then reopened by ``cls``)."""
    from audit_planted_bugs import drive_deployment

    drive_deployment(cls, path)
    dep = cls.open(path)
    try:
        return dep.status(), dep.decisions()
    finally:
        dep.close()


def test_deployment_rows_act(tmp_path):
    """Each deployment bug changes what its store holds or reports against the unmodified deployment's drive; the
    control changes nothing."""
    base_status, base_log = _driven(r16.Deployment, str(tmp_path / "base.db"))
    control_status, control_log = _driven(r16.DeployOdometerWarmed, str(tmp_path / "control.db"))
    assert [d["arm"] for d in control_log] == [d["arm"] for d in base_log]
    assert control_status["spent_epsilon"] == base_status["spent_epsilon"]
    for cls in r16.DEPLOY_BUGS16.values():
        status, log = _driven(cls, str(tmp_path / f"{cls.__name__}.db"))
        changed = ([d["arm"] for d in log] != [d["arm"] for d in base_log]
                   or status["spent_epsilon"] != base_status["spent_epsilon"]
                   or status["releases_per_arm"] != base_status["releases_per_arm"])
        assert changed, cls.__name__


def test_guard_arms_the_wide_arm_bug_through_its_33_arm_run():
    """The harness's armed guard drives the audit's 33-arm coupled run (round 16): without it the bug, which acts
    only on arms >= 16, would be reported DISARMED."""
    assert harness.armed(r16.AnytimeArm16HalfInDraw) == ""
