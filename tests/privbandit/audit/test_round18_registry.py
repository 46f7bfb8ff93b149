"""Round 18 of the planted bugs (bench/audit_planted_round18.py, session 16): the registration, not the audit.

Each bug must be importable under its ``bug_`` name and *armed* -- on a tiny run it acts, draws or reports
differently from its clean twin (the parent's ``start`` on the bug's own configuration, as the bench's armed
guard builds it). Bugs that wait for something a tiny run does not reach are checked at their trigger instead:
DP-UCB's buffer refill after 4,096 draws, Private-UCB's noise table past 2^15 records (its sampler told counts c
and c + 2^15), DP-UCB-Bound's checkpoint round, DP-TS's replicates past the first 16 (the same noise whatever the
seed), EXP3's uniforms after 1,024 choices, DP-SE's second epoch. The controls are listed before the bugs,
``--only round18`` runs them first, and each completes a tiny run. The whole audit of these rows is
``python bench/audit_planted.py --only round18``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _bench import armed_on_a_tiny_run, check_only_round, check_registration, differs, twins  # puts bench/ on sys.path

import audit_planted as harness  # noqa: E402 -- by name, as the harness imports the round (one module object)
import audit_planted_round18 as r18  # noqa: E402

_LATE = {"dp_ucb_noise_block_refill_repeats", "ucb_tree_noise_table_wraps", "dp_ucb_bound_checkpoint_refresh",
         "dp_ts_replicates_past_sixteen_fixed_seed", "exp3_uniforms_cycled", "dp_se_mean_over_all_epochs",
         "dp_se_epoch_sized_by_raw_mean"}
"""Bugs a 200-round, 8-replicate run does not reach: each has its own test below."""


def test_registered_names_and_parents_controls_first():
    assert len(r18.ROUND18_BUGS) >= 14 and len(r18.CONTROLS18) >= 5
    check_registration(harness, r18, 18)


def test_only_round18_runs_controls_first(monkeypatch, tmp_path):
    check_only_round(harness, r18, 18, monkeypatch, tmp_path)


@pytest.mark.parametrize("key", sorted(set(r18.ROUND18_BUGS) - _LATE))
def test_bug_armed_on_a_tiny_run(key):
    assert armed_on_a_tiny_run(harness, r18.ROUND18_BUGS[key]), f"{key}: no difference from its clean twin"


@pytest.mark.parametrize("key", sorted(_LATE))
def test_late_bugs_are_a_no_op_on_the_tiny_run(key):
    """The late bugs really wait: on the tiny run they are their clean twin (so their own tests below carry them)."""
    assert not armed_on_a_tiny_run(harness, r18.ROUND18_BUGS[key])


@pytest.mark.parametrize("key", sorted(r18.CONTROLS18))
def test_control_runs_and_releases(key):
    """A control completes a tiny run (``behaviour`` turns a raise into one action) and releases (EXP3 draws no
    noise: its run's actions are the check)."""
    pol = r18.CONTROLS18[key]()
    out = harness.behaviour(pol, n_arms=2, replicates=4, horizon=200)
    assert out["actions"].shape == (4, 200)
    assert out["draws"][0].size > 0 or not pol.records_releases


# --- the late triggers -------------------------------------------------------------------------------
def test_refill_repeats_the_last_draw():
    """The buffered sampler's 4,097th standard draw is its 4,096th; the rest are the generator's own, in order."""
    sampler = r18._RefillRepeats(np.random.default_rng(7))
    z = np.concatenate([sampler._standard(1000), sampler._standard(3096), sampler._standard(5)])
    ref = np.random.default_rng(7).laplace(0.0, 1.0, 2 * r18.REFILL_BLOCK)
    assert (z[:r18.REFILL_BLOCK] == ref[:r18.REFILL_BLOCK]).all()
    assert z[r18.REFILL_BLOCK] == z[r18.REFILL_BLOCK - 1]
    assert (z[r18.REFILL_BLOCK + 1:] == ref[r18.REFILL_BLOCK + 1:r18.REFILL_BLOCK + 5]).all()
    bug, clean = twins(r18.DPUCBNoiseBlockRefillRepeats)  # 64 replicates x 2 arms: a refill every 32 rounds
    assert differs(harness.behaviour(bug, n_arms=2, replicates=64, horizon=200),
                   harness.behaviour(clean, n_arms=2, replicates=64, horizon=200))


@pytest.mark.parametrize("refresh", [False, True])
def test_noise_table_reads_a_slot_again_past_its_size(refresh):
    """The table's sampler told the node of count c and then of c + 2^15 on the same stream: the wrapping table
    returns the same standard draw (its refreshed twin a new one); another stream's slot is its own."""
    sampler = r18._NoiseTable(np.random.default_rng(3))
    sampler._bug_shape, sampler._bug_refresh = (1, 2), refresh
    rows, streams = np.array([0, 0]), np.array([0, 1])
    draws = []
    for c in (5, 5 + r18.TABLE):
        sampler._bug_pos = (rows, streams, np.array([c, c]))
        draws.append(sampler._sum_release(np.zeros(2), 1.0))
    assert draws[0][0] != draws[0][1]
    assert (draws[1] == draws[0]).all() != refresh


def test_checkpoint_round_renoises_the_sums():
    run = r18.DPUCBBoundCheckpointRefresh().start(2, 4, 2 * r18.CHECKPOINT, np.random.default_rng(1))
    for t in (1, 2, 3):
        run.update(t, np.full(4, (t - 1) % 2), np.full(4, 0.5))
    before = run.hybrid.noisy_sum.copy()
    run.update(r18.CHECKPOINT - 1, np.zeros(4, dtype=np.intp), np.zeros(4))  # count 3: no release, no refresh
    unchanged = run.hybrid.noisy_sum.copy()
    run.update(r18.CHECKPOINT, np.zeros(4, dtype=np.intp), np.zeros(4))  # count 4 of arm 0, and the refresh
    assert (unchanged[:, 1] == before[:, 1]).all()
    assert (run.hybrid.noisy_sum[:, 1] != before[:, 1]).all()  # arm 1 was not pulled: only the refresh moved it


def _replicate_noise(cls, seed: int, replicates: int = 20) -> np.ndarray:
    """The standard draws of the first DP-TS split release of every replicate (one round, arm 0 everywhere)."""
    run = cls().start(2, replicates, 200, np.random.default_rng(seed))
    sampler = run.split.sampler
    release, seen = sampler._sum_release, []

    def recording(statistic, scale, on_grid=True):
        out = release(statistic, scale, on_grid)
        seen.append((np.asarray(out) - statistic) / np.asarray(scale, dtype=float))
        return out

    sampler._sum_release = recording
    run.update(1, np.zeros(replicates, dtype=np.intp), np.full(replicates, 0.5))
    return np.ravel(seen[0])


@pytest.mark.parametrize("cls, fixed", [(r18.DPTSReplicatesPastSixteenFixedSeed, True),
                                        (r18.DPTSReplicatesSpawnedGenerators, False)])
def test_replicates_past_the_pool(cls, fixed):
    a, b = _replicate_noise(cls, 1), _replicate_noise(cls, 2)
    assert (a[:r18.POOL] != b[:r18.POOL]).all()  # the pool: the run's generator
    assert (a[r18.POOL:] == b[r18.POOL:]).all() == fixed  # past it: default_rng(r) in every run, or spawned


def test_exp3_uniforms_cycle_after_the_buffer():
    bug, clean = twins(r18.Exp3UniformsCycled)
    horizon = 1100  # the buffer holds 1,024 choices at 8 replicates
    assert differs(harness.behaviour(bug, n_arms=2, replicates=8, horizon=horizon),
                   harness.behaviour(clean, n_arms=2, replicates=8, horizon=horizon))
    run = r18.Exp3UniformsCycled().start(2, 8, 3000, np.random.default_rng(0))
    for t in range(1, 1025):
        run.select(t)
    first = run.core.uniforms
    for t in range(1025, 2050):
        run.select(t)
    assert run.core.uniforms is first  # never refilled


@pytest.mark.parametrize("key", ["dp_se_mean_over_all_epochs", "dp_se_epoch_sized_by_raw_mean"])
def test_dp_se_bugs_act_from_the_second_epoch(key):
    """beta = 0.5: R_1 = 444 pulls per arm, R_2 = 2,484 -- the second epoch's release (cumulative mean) or its
    length (raw mean) is the first place the bugs act, within 6,000 rounds."""
    cls = r18.ROUND18_BUGS[key]
    bug, clean = cls(beta=0.5), cls(beta=0.5)
    clean.start = lambda *a, **k: r18.DPSE.start(clean, *a, **k)
    horizon = 6000
    assert differs(harness.behaviour(bug, n_arms=2, replicates=16, horizon=horizon, planned=True),
                   harness.behaviour(clean, n_arms=2, replicates=16, horizon=horizon, planned=True))
