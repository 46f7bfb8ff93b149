"""White-box coupled-run checks: each check catches its small planted bug, and the clean twin (the
unmodified policy, same sizes and seed) passes every check.

Checks 1-4 and the redraw check are exact (no false alarm is possible for a policy that honours the
contract), so the clean twins cannot fail by chance; the noise-law test has family-wise level
alpha = 1e-4 by DKW-Massart, and the seeds are fixed."""

import numpy as np
import pytest

from privbandit.audit.whitebox import (MIN_GROUP, neighbour_tapes, probe_horizon, whitebox_audit, _power,
                                       _law_distance)
from privbandit.policies import DPSE, AnytimeLazyUCB, DPUCBInt, GaussianTS, PrivateUCB

from _whitebox_planted import (Exp3BatchAverageScale, Exp3NoiseAfterImportance, Exp3RawReward, FrozenNoise,
                               HandNoiseHalved, NewestRecordOnly, OverDeclaredScale, PeeksAtMean, ReReleases,
                               SilentPosterior, TripledRewards)

CASES = [
    # (bug, clean twin, check, horizon, replicates)
    (PeeksAtMean(), PrivateUCB(), "decisions", 60, 64),
    (SilentPosterior(b=2), GaussianTS(b=2), "unreported", 40, 64),
    (TripledRewards(b=2), GaussianTS(b=2), "sensitivity", 40, 64),
    (NewestRecordOnly(), PrivateUCB(), "footprint", 60, 64),
    (ReReleases(interval=3), DPUCBInt(interval=3), "redraw", 60, 64),
    (OverDeclaredScale(), AnytimeLazyUCB(), "noise_law", 100, 256),
    (FrozenNoise(b=2), GaussianTS(b=2), "noise_law", 40, 64),
    (HandNoiseHalved(), AnytimeLazyUCB(), "noise_law", 100, 256),
]


@pytest.mark.parametrize("bug, clean, check, horizon, reps", CASES, ids=[c[2] + ":" + type(c[0]).__name__ for c in CASES])
def test_each_check_catches_its_planted_bug_and_passes_the_clean_twin(bug, clean, check, horizon, reps):
    res = whitebox_audit(bug, horizon, 2, reps, seed=0)
    assert res.verdict == "VIOLATION" and check in res.checks, res.summary()
    twin = whitebox_audit(clean, horizon, 2, reps, seed=0)
    assert twin.verdict == "CONSISTENT" and not twin.findings, twin.summary()
    assert twin.releases > 0


ROUND10 = [
    # round 10 (adversarial private policies): (bug, clean twin, check)
    (Exp3RawReward(), "dp_exp3_lap", "decisions"),
    (Exp3NoiseAfterImportance(), "private_exp3", "sensitivity"),
    (Exp3BatchAverageScale(), "batched_private_exp3", "noise_report"),
]


@pytest.mark.parametrize("bug, clean, check", ROUND10, ids=[c[2] + ":" + type(c[0]).__name__ for c in ROUND10])
def test_round10_adversarial_bugs_are_caught(bug, clean, check):
    from privbandit.policies import make_policy

    res = whitebox_audit(bug, 60, 2, 64, seed=0, law=False)
    assert res.verdict == "VIOLATION" and check in res.checks, res.summary()
    twin = make_policy(clean, **({"tau": 4} if clean == "batched_private_exp3" else {}))
    assert whitebox_audit(twin, 60, 2, 64, seed=0, law=False).verdict == "CONSISTENT"


def test_three_arms_and_exact_mode_pass_clean():
    for policy in (PrivateUCB(exact=True), GaussianTS(b=1)):
        res = whitebox_audit(policy, 60, 3, 48, seed=1)
        assert res.verdict == "CONSISTENT", res.summary()


def test_neighbour_tapes_differ_in_one_entry_each():
    tape, tape_p, arm, pull = neighbour_tapes(3, 20, 16, np.random.default_rng(0), first=0, window=5)
    diff = tape != tape_p
    assert diff.reshape(16, -1).sum(axis=1).tolist() == [1] * 16
    assert np.all(tape[np.arange(16), arm, pull] == 0) and np.all(tape_p[np.arange(16), arm, pull] == 1)
    assert tape.min() >= 0 and tape.max() <= 1 and np.all(pull < 5)


def test_probe_horizon_reaches_the_first_releases_of_an_elimination_policy():
    # DP-SE's first epoch holds ~1,600 pulls per arm: the probe must go past it
    assert probe_horizon(DPSE(), 2) > 3_000
    assert probe_horizon(GaussianTS(b=3), 2) == 200


def test_stated_power_is_the_dkw_bound():
    # sup |F_Lap(x) - F_Lap(x/2)| = 1/8 exactly (at x = ln 2)
    assert _law_distance("laplace", 2.0) == pytest.approx(0.125, abs=1e-6)
    assert _power("laplace", MIN_GROUP, 1.0) == 0.0
    n, crit = 2000, np.sqrt(np.log(2 / 1e-4) / 4000)
    assert _power("laplace", n, crit) == pytest.approx(1 - 2 * np.exp(-2 * n * (0.125 - crit) ** 2))


def test_whitebox_rejects_bad_input():
    with pytest.raises(ValueError, match="not private"):
        from privbandit.policies import UCB1
        whitebox_audit(UCB1(), 20)
    with pytest.raises(ValueError, match="replicates"):
        whitebox_audit(GaussianTS(), 20, 2, 1)
    with pytest.raises(ValueError, match="alpha"):
        whitebox_audit(GaussianTS(), 20, alpha=2.0)


def test_a_policy_private_by_its_own_sampling_is_not_held_to_the_decisions_check():
    # EXP3's privacy is its exponential-weights sampling (records_releases=False): its decisions read
    # the data by design, so the replay argument does not apply (the black-box audits test its claim)
    from privbandit.policies import EXP3

    res = whitebox_audit(EXP3(), 40, 2, 16, seed=0)
    assert res.verdict != "VIOLATION" and any("records_releases" in n for n in res.notes), res.summary()


def test_planned_runs_audit_the_block_path():
    """whitebox_audit(planned=True) feeds planned stretches through update_block, as simulate does: a bug
    on that path only (DP-SE counting a stretch's rewards twice) is refuted there and invisible round
    by round; the unmodified DP-SE stays consistent both ways."""
    from _whitebox_planted import BlockCountsTwice

    from privbandit.policies import DPSE

    bug = BlockCountsTwice()
    horizon = probe_horizon(bug, 2)
    assert whitebox_audit(bug, horizon, 2, 32, seed=0, law=False).verdict == "CONSISTENT"
    res = whitebox_audit(bug, horizon, 2, 32, seed=0, law=False, planned=True)
    assert res.verdict == "VIOLATION" and "sensitivity" in res.checks, res.summary()
    for planned in (False, True):
        twin = whitebox_audit(DPSE(), horizon, 2, 32, seed=0, law=False, planned=planned)
        assert twin.verdict == "CONSISTENT" and not twin.findings, twin.summary()
