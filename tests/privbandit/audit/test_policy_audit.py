"""Policy-level audits of Gaussian Thompson sampling: correct twins and planted bugs (AUDIT.md 4)."""

import numpy as np
import pytest

from privbandit.audit import Audit, Budget, Neighbours, run_policy, trace_attribute, trace_method
from privbandit.engine import simulate
from privbandit.envs import RewardTape
from privbandit.policies.gaussian_ts import GaussianTS

from _audit_planted import mutated_gaussian_ts

T = 20  # b = 4 pre-pulls per arm, 12 adaptive rounds: schedule mu = sqrt(12 / (8 * 5)) = 0.548
SEARCH = Neighbours.search(arm_rest=(0.5,), others=(0.5, 1.0), pilot_runs=2000)
CI = Budget(40_000)     # enough for the factor-sqrt(k+1) variance bug on actions
GROSS = Budget(15_000)  # bugs that make the output (nearly) deterministic, and the correct twins


def audit(policy, observe="actions", neighbours=SEARCH, budget=CI, **kw):
    return Audit.policy(policy, T, 2, observe=observe, neighbours=neighbours, budget=budget, seed=0, **kw).run()


def test_runner_matches_engine_on_a_tape():
    tape = np.random.default_rng(0).random((2, T))
    pol = GaussianTS(b=2, c=1.0)
    res = simulate(pol, RewardTape(tape), T, 50, seed=123, keep_arms=True, ledger=False)
    policy_seq, _ = np.random.SeedSequence(123).spawn(2)
    mine = run_policy(pol, tape, T, 50, np.random.default_rng(policy_seq))
    np.testing.assert_array_equal(mine["actions"], res.arms.T)


@pytest.mark.parametrize("observe", ["actions", "trace"])
def test_correct_gaussian_ts_is_consistent(observe):
    # the correct twin, through the same code path as the mutations
    res = audit(mutated_gaussian_ts("none"), observe, budget=CI)
    assert res.verdict == "CONSISTENT", res.summary()
    assert 0.1 < res.mu_lb <= res.claim.gdp_mu()


@pytest.mark.parametrize("observe", ["actions", "trace"])
def test_planted_variance_std_confusion(observe):
    res = audit(mutated_gaussian_ts("variance_std"), observe)
    assert res.verdict == "VIOLATION", res.summary()
    assert res.mu_lb > res.claim.gdp_mu() * 1.1


def test_planted_noise_forgotten():
    res = audit(mutated_gaussian_ts("no_noise"), budget=GROSS)
    assert res.verdict == "VIOLATION" and res.mu_lb > 4


def test_planted_common_random_numbers_across_arms():
    res = audit(mutated_gaussian_ts("common_noise"), budget=GROSS)
    assert res.verdict == "VIOLATION" and res.mu_lb > 4, res.summary()


def test_planted_empirical_mean_leaked_in_output():
    leak = audit(mutated_gaussian_ts("leak_mean"), "trace", trace=trace_attribute("public_means"), budget=GROSS)
    assert leak.verdict == "VIOLATION" and leak.mu_lb > 4
    # correct twin: the published values are the posterior draws the accountant pays for
    twin = audit(GaussianTS(b=4, c=8.0), "trace", trace=trace_method("posterior.release"), budget=GROSS)
    assert twin.verdict == "CONSISTENT"


def test_planted_rewards_not_clipped():
    search = Neighbours.search(values=(0.0, 5.0), arm_rest=(0.5,), others=(0.5, 1.0), allow_out_of_range=True,
                               pilot_runs=2000)
    ok = audit(GaussianTS(b=4, c=8.0), neighbours=search, budget=GROSS)  # the runner clips, as the engine does
    assert ok.verdict == "CONSISTENT"
    bad = audit(GaussianTS(b=4, c=8.0), neighbours=search, clip=False, budget=GROSS)  # clip forgotten
    assert bad.verdict == "VIOLATION" and bad.mu_lb > 1.0, bad.summary()


def test_neighbour_pair_and_validation():
    tape = np.full((2, T), 0.5)
    tp = tape.copy()
    tp[0, 0] = 1.0
    res = audit(GaussianTS(b=4, c=8.0), neighbours=Neighbours.pair(tape, tp), budget=Budget(5_000))
    assert res.neighbours.startswith("arm 0 pull #0")
    with pytest.raises(ValueError, match="exactly one entry"):
        Neighbours.pair(tape, tape)
    bad = tp.copy()
    bad[0, 0] = 5.0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Neighbours.pair(tape, bad)
    with pytest.raises(ValueError, match="observe"):
        Audit.policy(GaussianTS(), T, 2, observe="everything")
