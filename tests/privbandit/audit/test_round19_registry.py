"""Round 19 of the planted bugs (bench/audit_planted_round19.py, session 17): the registration, not the audit.

Each bug must be importable under its ``bug_`` name and *armed* -- on a tiny run it acts, draws or reports
differently from its clean twin (the parent's ``start`` on the bug's own configuration, as the bench's armed
guard builds it). DP-UCB-Int's first release waits for 197 pulls of each arm (its calibrated interval at eps = 1),
past the tiny run: it is checked at its trigger. The per-replicate seeds are checked for their entropy (32 bits
for the bug, 126 for its control), and the deployment rows for what reaches the policy. The controls are listed
before the bugs, ``--only round19`` runs them first, and each completes a tiny run. The whole audit of these rows
is ``python bench/audit_planted.py --only round19``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _bench import armed_on_a_tiny_run, check_only_round, check_registration, differs, twins  # puts bench/ on sys.path

import audit_planted as harness  # noqa: E402 -- by name, as the harness imports the round (one module object)
import audit_planted_round19 as r19  # noqa: E402
from audit_planted_bugs import drive_deployment  # noqa: E402

_LATE = {"dp_ucb_int_unbiased_mean"}  # armed at its first interval only: test_unbiased_mean_released_at_the_first_interval
"""Bugs a 200-round, 8-replicate run does not reach: each has its own test below."""


def test_registered_names_and_parents_controls_first():
    assert len(r19.ROUND19_BUGS) >= 10 and len(r19.CONTROLS19) >= 5
    check_registration(harness, r19, 19)


def test_only_round19_runs_controls_first(monkeypatch, tmp_path):
    check_only_round(harness, r19, 19, monkeypatch, tmp_path)


@pytest.mark.parametrize("key", sorted(set(r19.ROUND19_BUGS) - _LATE))
def test_bug_armed_on_a_tiny_run(key):
    assert armed_on_a_tiny_run(harness, r19.ROUND19_BUGS[key]), f"{key}: no difference from its clean twin"


@pytest.mark.parametrize("key", sorted(r19.CONTROLS19))
def test_control_runs_and_releases(key):
    """A control completes a tiny run (``behaviour`` turns a raise into one action) and releases (EXP3 draws no
    noise: its run's actions are the check)."""
    pol = r19.CONTROLS19[key]()
    out = harness.behaviour(pol, n_arms=2, replicates=4, horizon=200)
    assert out["actions"].shape == (4, 200)
    assert out["draws"][0].size > 0 or not pol.records_releases


# --- the late trigger, the seeds, the deployment rows ---------------------------------------------------
def test_unbiased_mean_released_at_the_first_interval():
    """DP-UCB-Int's first release (count f = 197 on each arm, round 2f) reads sum / (f - 1): the bug's released mean
    minus its noise is f / (f - 1) times the clean twin's, on the same tape and seed."""
    bug, clean = twins(r19.DPUCBIntUnbiasedMean)
    f = bug.first_interval
    horizon = 2 * f + 2
    assert differs(harness.behaviour(bug, n_arms=2, replicates=4, horizon=horizon),
                   harness.behaviour(clean, n_arms=2, replicates=4, horizon=horizon))
    stats = []
    for pol in (bug, clean):
        run = pol.start(2, 1, horizon, np.random.default_rng(5))
        for t in range(1, 2 * f + 1):
            run.update(t, np.array([(t - 1) % 2]), np.array([1.0 if t % 3 else 0.0]))
        stats.append((run.interval.noisy_mean.copy(), run.interval.sum.copy()))
    (noisy_bug, sums), (noisy_clean, _) = stats
    noise = noisy_clean - sums / f  # the same draw in both runs (the same seed, the same consumption)
    assert np.allclose(noisy_bug - noise, sums / (f - 1), rtol=0, atol=1e-12)


@pytest.mark.parametrize("cls, small", [(r19.LazyReplicateSeeds32Bit, True), (r19.LazyReplicateSeeds126Bit, False)])
def test_replicate_seed_entropy(cls, small):
    """Every replicate's generator is seeded with 32 bits (the bug) or 126 (its control), drawn from the run's
    generator: the streams change with the run's seed either way."""
    seeds = []
    for run_seed in (1, 2):
        run = cls().start(2, 64, 200, np.random.default_rng(run_seed))
        gens = run.batches.sampler._bug_generators
        seeds.append([_as_int(g.bit_generator.seed_seq.entropy) for g in gens])
    assert seeds[0] != seeds[1]
    assert all((s < 2 ** 32) == small for s in seeds[0])


def _as_int(entropy) -> int:
    """A SeedSequence's entropy (an int, or a list of 63-bit words, least significant first) as one int."""
    if isinstance(entropy, int):
        return entropy
    return sum(int(w) << (63 * i) for i, w in enumerate(entropy))


@pytest.mark.parametrize("cls, fed", [(r19.DeployZeroRewardImputed, None), (r19.DeployZeroImputedConstant, 0.5)])
def test_deployment_zero_rewards_reach_the_policy_imputed(tmp_path, cls, fed):
    """The bench's drive (60 decisions, holds, restarts): every applied raw reward 0 reaches the policy as the arm's
    last applied reward (the bug; some of them 1) or as 0.5 (the control); the log keeps the raw 0 beside it."""
    path = str(tmp_path / "store.db")
    assert drive_deployment(cls, path) is None
    dep = cls.open(path)
    try:
        rows = dep._conn.execute("SELECT u.raw_reward, u.reward FROM updates u WHERE u.applied = 1").fetchall()
    finally:
        dep.close()
    imputed = [reward for raw, reward in rows if raw == 0.0]
    assert imputed
    if fed is None:
        assert any(v == 1.0 for v in imputed) and all(v in (0.0, 1.0) for v in imputed)
    else:
        assert all(v == fed for v in imputed)
