import math

import numpy as np
import pytest

from _ucb_helpers import (FIVE_ARMS, assert_realized_below_certified, drive, laplace_ks, memo_ledger,  # noqa: F401
                          noise_factor)
from accountants import PureAccountant
from privbandit.engine import simulate
from privbandit.envs import Bernoulli, TruncatedExponential
from privbandit.ledger import Ledger
from privbandit.policies.elimination import DPSE, AnytimeLazyUCB, epoch_size


# ---------------------------------------------------------------------------------------------- privacy


@pytest.mark.parametrize("env, T", [
    (Bernoulli([0.9, 0.6]), 1024),
    (Bernoulli(FIVE_ARMS), 4096),
    (TruncatedExponential([1, 2, 4]), 2048),
])
def test_dp_se_realized_never_exceeds_certified(env, T, memo_ledger):
    # beta = 0.5 keeps the first epochs short enough for releases (and eliminations) within T
    r = assert_realized_below_certified(DPSE(epsilon=1.0, beta=0.5), env, T, seed=[2, T], tight=True)
    assert np.nanmax(r.realized_epsilon) <= 1.0 + 1e-9


@pytest.mark.parametrize("env, T", [(Bernoulli(FIVE_ARMS), 512), (Bernoulli([0.9, 0.6]), 300),
                                    (TruncatedExponential([1, 2, 4]), 256)])
def test_anytime_lazy_ucb_realized_never_exceeds_certified(env, T, memo_ledger):
    assert_realized_below_certified(AnytimeLazyUCB(epsilon=0.5), env, T, seed=[3, T], tight=True)


@pytest.mark.parametrize("policy", [DPSE(epsilon=0.7, beta=0.5), AnytimeLazyUCB(epsilon=0.7)])
def test_cheap_ledger(policy):
    assert_realized_below_certified(policy, Bernoulli([0.8, 0.5, 0.45]), 2048, seed=9)


@pytest.mark.parametrize("eps", [0.1, 0.25, 0.5, 1.0])
def test_certified_below_claimed(eps):
    T, K = 100_000, 5
    for policy in [DPSE(eps), AnytimeLazyUCB(eps)]:
        sched = policy.privacy_schedule(T, K)
        assert sched.epsilon(T, 1e-6).value <= policy.claimed_epsilon(T, K, 1e-6) == eps
        assert sched.epsilon(T, 1e-6, [PureAccountant]).value == pytest.approx(eps, rel=1e-9)


def test_dp_se_schedule_is_empty_before_the_first_batch_can_close():
    policy = DPSE(epsilon=1.0)
    T, K = 10_000, 3
    r1 = int(epoch_size(1, K, 1.0, 1 / T))
    sched = policy.privacy_schedule(T, K)
    assert sched.epsilon(r1 - 1, 1e-6).value == 0.0
    assert sched.epsilon(r1, 1e-6, [PureAccountant]).value == pytest.approx(1.0)


def test_every_record_is_in_exactly_one_release():
    R, K, T = 5, 2, 200
    ledger = Ledger(R, K)
    run = drive(AnytimeLazyUCB(epsilon=0.4), K, R, T, lambda t: np.full(R, (t - 1) % K), ledger=ledger)
    assert np.all(ledger.draws == 6)  # 100 pulls: batches 1 + 2 + ... + 32 = 63 items released
    assert run.batches.batch_size.tolist() == [[32, 32]] * R
    assert ledger.realized_pure_epsilon() == pytest.approx(np.full(R, 0.4))


# ------------------------------------------------------------------------------------------- mechanics


def test_epoch_size_formula():
    eps, beta, s, e = 0.5, 1e-3, 4, 2
    gap = 2.0 ** -e
    want = math.floor(max(32 * math.log(8 * s * e * e / beta) / gap ** 2, 8 * math.log(4 * s * e * e / beta) / (eps * gap))) + 1
    assert int(epoch_size(e, s, eps, beta)) == want


def test_dp_se_eliminates_on_an_easy_instance_and_stops_releasing():
    R, K, T = 20, 2, 1500
    ledger = Ledger(R, K)
    policy = DPSE(epsilon=1.0, beta=0.5)
    r1 = int(epoch_size(1, K, 1.0, 0.5))
    run = policy.start(K, R, T, np.random.default_rng(0), ledger=ledger)
    means = np.array([0.9, 0.1])
    rng = np.random.default_rng(1)
    for t in range(1, T + 1):
        arms = run.select(t)
        if t <= K * r1:
            assert np.all(arms == (t - 1) % K)  # round robin through epoch 1
        run.update(t, arms, (rng.random(R) < means[arms]).astype(float))
    assert run.active.tolist() == [[True, False]] * R  # the bad arm is gone after epoch 1
    assert np.all(run.select(T) == 0)
    assert ledger.draws.tolist() == [[1, 1]] * R  # one batch each; exploitation releases nothing


def test_dp_se_noise_is_laplace_of_scale_one_over_eps_r(noise_factor):
    R, K, eps, beta = 2000, 2, 1.0, 0.9
    r1 = int(epoch_size(1, K, eps, beta))

    def standardised(factor):
        noise_factor(factor)
        run = DPSE(epsilon=eps, beta=beta).start(K, R, 10 * r1, np.random.default_rng(5))
        for t in range(1, K * r1 + 1):
            run.update(t, run.select(t), np.full(R, 0.5))
        assert np.all(run.batches.batch_size == r1)
        return (run.batches.noisy_mean - 0.5) * eps * r1  # Lap(1/(eps R_1)) on the mean

    assert laplace_ks(standardised(1.0)) > 1e-3
    assert laplace_ks(standardised(0.5)) < 1e-12
    assert laplace_ks(standardised(0.0)) < 1e-12


def test_anytime_lazy_ucb_noise_and_index(noise_factor):
    R, K, T, eps = 3000, 2, 60, 0.8

    def run_with(factor):
        noise_factor(factor)
        return drive(AnytimeLazyUCB(epsilon=eps), K, R, T, lambda t: np.full(R, t % K))

    def standardised(run):
        b = run.batches
        return (b.noisy_sum - 0.5 * b.batch_size) * eps  # one Lap(1/eps) per batch sum

    run = run_with(1.0)
    assert laplace_ks(standardised(run)) > 1e-3
    t = T + 1
    o = run.batches.batch_size
    a = 3.1 * math.log(t)
    np.testing.assert_allclose(run.select(t), np.argmax(run.batches.noisy_sum / o + np.sqrt(a / (2 * o)) + a / (eps * o), axis=1))
    assert laplace_ks(standardised(run_with(0.5))) < 1e-12
    assert laplace_ks(standardised(run_with(0.0))) < 1e-12


def test_bad_parameters():
    cases = [(DPSE, {"epsilon": 0.0}, "epsilon"), (DPSE, {"beta": 1.0}, "beta"), (DPSE, {"beta": 0}, "beta"),
             (AnytimeLazyUCB, {"alpha": 3.0}, "alpha"), (AnytimeLazyUCB, {"alpha": math.inf}, "alpha"),
             (AnytimeLazyUCB, {"epsilon": -2}, "epsilon")]
    for cls, kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            cls(**kwargs)


def test_small_t_qualitative_ordering_five_arms():
    # Sajed & Sheffet's instance: Anytime-Lazy-UCB below DP-SE (short horizon, eps = 1).
    env = Bernoulli(FIVE_ARMS)
    reg = {p.name: simulate(p, env, 6000, 30, seed=4, ledger=False).regret_mean[-1]
           for p in [DPSE(1.0), AnytimeLazyUCB(1.0)]}
    assert reg["anytime_lazy_ucb"] < reg["dp_se"]


def test_epoch_size_never_wraps_negative_at_extreme_parameters():
    """An epoch size that overflows to inf (epsilon 1e-308, or epochs past ~500 where Delta_e^2
    underflows) is capped at 2^62 -- an epoch no horizon completes -- instead of casting inf to the
    most negative int64 (which made every arm look finished)."""
    import numpy as np

    from privbandit.policies.elimination import epoch_size

    sizes = [epoch_size(1, 5, 1e-308, 1e-3), epoch_size(np.array([1, 600, 1100]), 5, 1.0, 1e-3)]
    for size in sizes:
        assert np.all(np.asarray(size) >= 1)
    assert int(epoch_size(1, 5, 1e-308, 1e-3)) == 2 ** 62
