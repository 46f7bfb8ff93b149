import math

import numpy as np
import pytest
from scipy import stats

from accountants import gdp_conversion
from privbandit.engine import simulate
from privbandit.envs import Bernoulli, RewardTape, TruncatedExponential
from privbandit.ledger import Ledger
from privbandit.mechanisms.posterior import GaussianPosteriorRelease
from privbandit.policies import GaussianTS

FIVE_ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]


@pytest.mark.parametrize("b, c, K, T", [(0, 1.0, 5, 1000), (1, 1.0, 2, 100), (10, 4.0, 5, 10_000), (3, 0.5, 3, 64)])
def test_schedule_mu_closed_form_and_claim(b, c, K, T):
    policy = GaussianTS(b=b, c=c)
    sched = policy.privacy_schedule(T, K)
    n = T - 1 if b == 0 else T - K * b
    assert sched.mu(T) == pytest.approx(math.sqrt(n / (c * (max(b, 1) + 1))), rel=1e-12)
    # Certified through GDP exactly, and never above the paper's claim sqrt(T / (c (b + 1))).
    cert = sched.epsilon(T, 1e-6)
    assert cert.by == "gdp"
    assert cert.value == pytest.approx(gdp_conversion.epsilon_for_delta(sched.mu(T), 1e-6), rel=1e-12)
    assert cert.value <= policy.claimed_epsilon(T, K, 1e-6)
    assert policy.claimed_mu(T) == pytest.approx(math.sqrt(T / (c * (max(b, 1) + 1))))


def test_agrawal_goyal_form_certifies_sqrt_t_over_two():
    # b = 0, c = 1: the paper's sqrt(T/2)-GDP; ours charges T - 1 rounds (round 1 releases nothing).
    sched = GaussianTS().privacy_schedule(10_000, 5)
    assert sched.mu(10_000) == pytest.approx(math.sqrt(9_999 / 2))
    assert sched.mu(10_000) <= math.sqrt(10_000 / 2)


def test_no_release_for_arms_without_data_and_first_observation_charged_once():
    ledger = Ledger(1, 2, tight=True)
    run = GaussianTS(b=0).start(2, 1, 10, np.random.default_rng(0), ledger=ledger)
    run.select(1)  # no arm holds a record: nothing is recorded
    assert ledger.draws.sum() == 0
    run.update(1, np.array([0]), np.array([1.0]))
    run.select(2)  # arm 0 now holds one record: exactly one release, footprint [0, 1)
    assert ledger.draws.tolist() == [[1, 0]]
    assert ledger.realized_mu()[0] == pytest.approx(1 / math.sqrt(2))


def test_realized_equals_schedule_where_attained():
    # Arm 1 is pulled only in the pre-pull phase: its records are in every later release at k = b.
    b, c, K, T = 2, 3.0, 2, 40
    ledger = Ledger(1, K, tight=True)
    run = GaussianTS(b=b, c=c).start(K, 1, T, np.random.default_rng(1), ledger=ledger)
    for t in range(1, T + 1):
        run.select(t)
        arm = (t - 1) // b if t <= K * b else 0
        run.update(t, np.array([arm]), np.array([0.5]))
    sched = GaussianTS(b=b, c=c).privacy_schedule(T, K)
    assert ledger.realized_mu()[0] == pytest.approx(sched.mu(T), rel=1e-12)


@pytest.mark.parametrize("env, T", [
    (Bernoulli(FIVE_ARMS), 512),
    (TruncatedExponential([0.1, 1, 2, 5, 10]), 300),
    (Bernoulli([0.9, 0.6]), 1024),
])
@pytest.mark.parametrize("b, c", [(0, 1.0), (4, 2.0)])
def test_realized_never_exceeds_certified(env, T, b, c):
    """100 random runs per configuration, every checkpoint (powers of two included)."""
    policy = GaussianTS(b=b, c=c)
    cps = np.unique(np.r_[np.arange(1, T + 1, 7), 2 ** np.arange(int(math.log2(T)) + 1)])
    r = simulate(policy, env, T, 100, seed=[b, T], checkpoints=cps, realized_points=10**6,
                 ledger_replicates=None)
    sched = policy.privacy_schedule(T, env.n_arms)
    assert np.all(np.isfinite(r.realized_epsilon))
    assert np.all(r.realized_epsilon <= r.certified_epsilon[:, None] + 1e-9)
    # and the certified curve is the schedule's, round by round
    assert r.certified_epsilon[-1] == pytest.approx(sched.epsilon(T, r.delta).value)


def _noise_variance_test(c, counts, scale_factor=1.0, sd_instead_of_var=False, n=40_000, seed=3):
    rng = np.random.default_rng(seed)
    rel = GaussianPosteriorRelease(n, 1, c=c, rng=rng, ledger=None)
    rel.sampler._noise_scale_factor = scale_factor
    sums = np.full((n, 1), 0.3 * counts)
    cnt = np.full((n, 1), float(counts))
    if sd_instead_of_var:  # the planted bug: sigma^2 = c/(k+1)^2, i.e. sigma = sqrt(c)/(k+1)
        rel.c = c / (counts + 1.0)
    theta = rel.release(sums, cnt)[:, 0]
    resid = (theta - 0.3 * counts / (counts + 1.0)) / math.sqrt(c / (counts + 1.0))
    # Under the correct law resid ~ N(0, 1); KS against N(0, 1) with a fixed seed.
    return stats.kstest(resid, "norm").pvalue


def test_posterior_noise_has_the_declared_law_and_bugs_are_detected():
    assert _noise_variance_test(4.0, 9) > 1e-3
    assert _noise_variance_test(4.0, 9, scale_factor=0.0) < 1e-12   # noise removed
    assert _noise_variance_test(4.0, 9, scale_factor=0.5) < 1e-12   # scale halved
    assert _noise_variance_test(4.0, 9, sd_instead_of_var=True) < 1e-12  # variance / std confused


def test_regret_on_the_five_arm_instance_is_sane():
    r = simulate(GaussianTS(), Bernoulli(FIVE_ARMS), 5_000, 40, seed=2, ledger=False)
    assert 20 < r.regret_mean[-1] < 300


def test_bad_parameters():
    for kwargs, match in [({"b": -1}, "b"), ({"b": 1.5}, "b"), ({"c": 0.0}, "c"), ({"c": float("nan")}, "c")]:
        with pytest.raises(ValueError, match=match):
            GaussianTS(**kwargs)
    with pytest.raises(ValueError, match="pre-pull"):
        simulate(GaussianTS(b=100), Bernoulli(FIVE_ARMS), 100, 1)


def test_tape_neighbours_differ_only_through_one_arm():
    # A smoke check of the neighbour model used by the audit: same seed, tapes differing in one
    # reward give identical first choices until the changed reward is observed.
    tape = np.full((2, 50), 0.5)
    tape2 = tape.copy()
    tape2[1, 10] = 1.0
    a = simulate(GaussianTS(b=1), RewardTape(tape), 20, 50, seed=9, keep_arms=True, ledger=False)
    b = simulate(GaussianTS(b=1), RewardTape(tape2), 20, 50, seed=9, keep_arms=True, ledger=False)
    np.testing.assert_array_equal(a.arms[:3], b.arms[:3])


# --- the paper's appendix routes (comparison methods) -----------------------------------------
def test_rdp_route_matches_closed_form_and_is_above_gdp():
    T, delta = 10_000, 1e-5
    pol = GaussianTS()
    assert pol.rdp_route_epsilon(T, delta) == pytest.approx(T / 4 + math.sqrt(T * math.log(1 / delta)))
    # numerical optimisation over alpha agrees with the closed form
    a = T / 4
    alphas = np.linspace(1.0001, 3, 200_001)
    assert pol.rdp_route_epsilon(T, delta) == pytest.approx(np.min(alphas * a + math.log(1 / delta) / (alphas - 1)),
                                                            rel=1e-6)
    for b, c in [(0, 1.0), (10, 50.0), (100, 2.0)]:
        p = GaussianTS(b=b, c=c)
        gdp = p.claimed_epsilon(T, 5, delta)
        assert gdp <= p.rdp_route_epsilon(T, delta) <= p.advanced_route_epsilon(T, delta)


def test_route_arguments_validated():
    with pytest.raises(ValueError, match="delta"):
        GaussianTS().rdp_route_epsilon(10, 0.0)
    with pytest.raises(ValueError, match="horizon"):
        GaussianTS().advanced_route_epsilon(0, 1e-5)
