import math

import numpy as np
import pytest
from scipy import stats

from accountants import Laplace, best_epsilon
from privbandit.engine import simulate
from privbandit.envs import Bernoulli, TruncatedExponential
from privbandit.ledger import Ledger
from privbandit.mechanisms import NoiseSampler
from privbandit.policies.hu_hegde import DPTS, LazyDPTS, laplace_epsilon
from privbandit.policies.thompson import BetaTS

from _ts_helpers import assert_realized_below_certified, memo_ledger, run_manual  # noqa: F401

FIVE_ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]


@pytest.mark.parametrize("policy", [DPTS(1.0), DPTS(0.25), LazyDPTS(1.0), LazyDPTS(0.1)], ids=repr)
@pytest.mark.parametrize("env, T", [(Bernoulli(FIVE_ARMS), 512), (TruncatedExponential([0.1, 1, 2, 5, 10]), 300),
                                    (Bernoulli([0.9, 0.6]), 256)])
def test_realized_never_exceeds_certified(memo_ledger, policy, env, T):
    r = assert_realized_below_certified(policy, env, T, seed=[T, int(policy.epsilon * 100)])
    # certified <= the paper's claim (eps, pure, at every delta)
    assert np.all(r.certified_epsilon <= policy.claimed_epsilon(T, env.n_arms, r.delta))


def test_lazy_schedule_is_exact_single_laplace():
    sched = LazyDPTS(0.5).privacy_schedule(10_000, 5)
    cert = sched.epsilon(10_000, 1e-6)
    assert cert.value == pytest.approx(0.5 + 2 * math.log1p(-1e-6), abs=1e-12)
    # agrees with the accountant layer (PLD is conservative by discretisation only)
    assert best_epsilon(Laplace(2.0, 1.0), 1e-6).value == pytest.approx(cert.value, abs=1e-8)
    assert sched.epsilon(1, 1e-6).value == cert.value and sched.epsilon(0, 1e-6).value == 0
    assert laplace_epsilon(0.1, 0.5) == 0.0


def test_lazy_worst_record_attains_schedule_and_each_record_is_released_once():
    led = Ledger(3, 2, tight=True)
    run_manual(LazyDPTS(1.0), 2, 3, 100, ledger=led)
    for r in range(3):
        leaves, counts = led.record_multisets(r)
        assert leaves == [Laplace(1.0, 1.0)] and counts.max() == 1  # one Lap(1/eps) per record
    assert led.redraws() == []


def test_dpts_schedule_monotone_and_below_claim():
    pol = DPTS(1.0)
    sched = pol.privacy_schedule(5000, 5)
    vals = [sched.epsilon(t, 1e-6).value for t in [1, 5, 6, 7, 8, 20, 100, 1000, 4096, 5000]]
    assert all(a <= b + 1e-12 for a, b in zip(vals, vals[1:]))
    assert vals[-1] <= 1.0
    # a record at round t <= K has been released once: Lap(2/eps) (the modified log part)
    assert sched.events(3) == Laplace(2.0, 1.0) * 1


def _dpts_first_noise(factor, n=4000, eps=1.0):
    old = NoiseSampler._noise_scale_factor
    NoiseSampler._noise_scale_factor = factor
    try:
        run = run_manual(DPTS(eps), 2, n, 10, rounds=2)  # each arm once: C = 0.5 + Lap(2/eps)
    finally:
        NoiseSampler._noise_scale_factor = old
    noise = (run.split.noisy_sum - 0.5).ravel()
    return stats.kstest(noise, stats.laplace(scale=2.0 / eps).cdf).pvalue


def _lazy_noise(factor, n=4000, eps=0.5):
    old = NoiseSampler._noise_scale_factor
    NoiseSampler._noise_scale_factor = factor
    try:
        run = run_manual(LazyDPTS(eps), 2, n, 10, rounds=2)  # first batches: 0.5 + Lap(1/eps)
    finally:
        NoiseSampler._noise_scale_factor = old
    noise = (run.batches.noisy_sum - 0.5).ravel()
    return stats.kstest(noise, stats.laplace(scale=1.0 / eps).cdf).pvalue


@pytest.mark.parametrize("fn", [_dpts_first_noise, _lazy_noise])
def test_noise_law_and_planted_bugs_detected(fn):
    assert fn(1.0) > 1e-3
    assert fn(0.0) < 1e-12   # noise removed
    assert fn(0.5) < 1e-12   # scale halved


def test_dpts_uses_private_mean_not_raw_mean():
    # Line-7 erratum: with the noise removed the private mean equals the raw mean, so the policies'
    # decisions coincide; with noise the selection must depend on the noisy C + B.
    run = run_manual(DPTS(500.0), 3, 500, 50, rounds=3)
    run.split.noisy_sum[:] = np.array([0.0, 30.0, 0.0])  # private sums; raw sums are all 0.5 O
    run.split.count[:] = 30
    arms = run.select(1000)
    assert np.mean(arms == 1) > 0.9


def test_regret_sanity_and_eps_500_close_to_non_private():
    env = Bernoulli(FIVE_ARMS)
    base = simulate(BetaTS(), env, 3000, 40, seed=5, ledger=False).regret_mean[-1]
    dpts = simulate(DPTS(500.0), env, 3000, 40, seed=5, ledger=False).regret_mean[-1]
    lazy = simulate(LazyDPTS(500.0), env, 3000, 40, seed=5, ledger=False).regret_mean[-1]
    assert dpts < 3 * base + 30
    assert 0 < lazy < 600
    lazy1 = simulate(LazyDPTS(1.0), env, 3000, 40, seed=5, ledger=False).regret_mean[-1]
    assert lazy1 < 0.25 * 3000 * 0.5  # far below uniform play


@pytest.mark.parametrize("cls", [DPTS, LazyDPTS])
def test_bad_parameters(cls):
    for bad in [0, -1.0, float("nan"), float("inf"), "1", True]:
        with pytest.raises(ValueError, match="epsilon"):
            cls(bad)
    with pytest.raises(ValueError, match="exact"):
        cls(1.0, exact=1)
    with pytest.raises(ValueError, match="n_arms"):
        cls(1.0).start(1, 1, 10, np.random.default_rng(0))
