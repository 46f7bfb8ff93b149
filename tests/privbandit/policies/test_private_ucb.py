import math

import numpy as np
import pytest

from _ucb_helpers import (FIVE_ARMS, assert_realized_below_certified, drive, memo_ledger,  # noqa: F401
                          noise_factor, variance_ratio)
from accountants import PureAccountant
from privbandit.engine import simulate
from privbandit.envs import Bernoulli, TruncatedExponential
from privbandit.ledger import Ledger
from privbandit.policies.private_ucb import PrivateUCB, PrivateUCBSchedule


@pytest.mark.parametrize("env, T", [
    (Bernoulli(FIVE_ARMS), 256),
    (Bernoulli([0.9, 0.6]), 300),
    (TruncatedExponential([0.5, 1, 2]), 128),
])
def test_realized_never_exceeds_certified(env, T, memo_ledger):
    assert_realized_below_certified(PrivateUCB(epsilon=1.0), env, T, seed=[1, T], tight=True)


def test_realized_never_exceeds_certified_cheap_ledger():
    assert_realized_below_certified(PrivateUCB(epsilon=0.5, gamma=0.01), Bernoulli([0.9, 0.6, 0.5]), 512, seed=4)


def test_schedule_is_attained_at_every_round():
    # Arm 0 takes every pull after the first round robin: its first record is in bit_length(t - K + 1)
    # nodes of Lap(L/(eps/K)) after t rounds -- exactly the schedule, at every t.
    K, T, eps = 3, 100, 0.9
    ledger = Ledger(1, K)
    policy = PrivateUCB(epsilon=eps)
    run = policy.start(K, 1, T, np.random.default_rng(0), ledger=ledger)
    sched = policy.privacy_schedule(T, K)
    L = T.bit_length()
    for t in range(1, T + 1):
        run.select(t)
        run.update(t, np.array([t - 1 if t <= K else 0]), np.array([0.3]))
        pure = sched.epsilon(t, 1e-6, [PureAccountant]).value
        assert ledger.realized_pure_epsilon()[0] == pytest.approx(pure, rel=1e-9)
        assert pure == pytest.approx(max(1, t - K + 1).bit_length() * eps / (K * L), rel=1e-9)
    assert sched.epsilon(T, 1e-6, [PureAccountant]).value <= eps / K * (1 + 1e-9)


def test_a_schedule_one_node_short_would_be_caught(monkeypatch):
    # Planted bug: the schedule forgets the round robin (n = t - K instead of t - K + 1).
    monkeypatch.setattr(PrivateUCBSchedule, "max_items", lambda self, t: max(1, t - self.n_arms))
    K, T = 2, 64
    ledger = Ledger(1, K)
    policy = PrivateUCB()
    run = policy.start(K, 1, T, np.random.default_rng(0), ledger=ledger)
    stop = 33  # arm 0 then holds 32 = 2^5 records: its first record has just entered a sixth node
    for t in range(1, stop + 1):
        run.select(t)
        run.update(t, np.array([t - 1 if t <= K else 0]), np.array([0.3]))
    sched = policy.privacy_schedule(T, K)
    assert ledger.realized_pure_epsilon()[0] > sched.epsilon(stop, 1e-6, [PureAccountant]).value * (1 + 1e-6)


@pytest.mark.parametrize("eps, K, T", [(0.1, 5, 100_000), (1.0, 5, 100_000), (1.0, 2, 100_000), (0.1, 10, 100_000),
                                       (1.0, 10, 1024)])
def test_certified_below_claimed_and_per_record_is_eps_over_k(eps, K, T):
    policy = PrivateUCB(epsilon=eps)
    sched = policy.privacy_schedule(T, K)
    cert = sched.epsilon(T, 1e-6)
    assert cert.value <= policy.claimed_epsilon(T, K, 1e-6) == eps
    assert sched.epsilon(T, 1e-6, [PureAccountant]).value <= eps / K * (1 + 1e-9)


def test_relaxation_constant():
    # Gamma = k ln^2 T ln(k T ln T / gamma) / eps with gamma = T^-4 (Algorithm 1 line 7)
    T, K, eps = 1000, 5, 0.5
    want = K * math.log(T) ** 2 * math.log(K * T * math.log(T) * T ** 4) / eps
    assert PrivateUCB(epsilon=eps).relaxation(T, K) == pytest.approx(want)
    assert PrivateUCB(epsilon=eps, gamma=0.01).relaxation(T, K) == pytest.approx(
        K * math.log(T) ** 2 * math.log(K * T * math.log(T) / 0.01) / eps)


def _tree_residual_ratio(factor_setter, factor, R=3000, K=2, T=40, eps=0.8):
    factor_setter(factor)
    run = drive(PrivateUCB(epsilon=eps), K, R, T, lambda t: np.full(R, t % K))
    tree = run.tree
    n = tree.count
    resid = tree.noisy_sum - 0.5 * n
    scale = T.bit_length() / (eps / K)  # node noise Lap(L / eps0), eps0 = eps / K
    pop = np.vectorize(lambda x: bin(int(x)).count("1"))(n)
    return variance_ratio(resid, pop * 2.0 * scale ** 2)


def test_tree_noise_has_the_declared_scale_and_bugs_are_detected(noise_factor):
    assert 0.9 < _tree_residual_ratio(noise_factor, 1.0) < 1.1
    assert _tree_residual_ratio(noise_factor, 0.5) < 0.35     # scale halved
    assert _tree_residual_ratio(noise_factor, 0.0) == 0.0     # noise removed


def test_only_the_pulled_arms_tree_advances():
    ledger = Ledger(4, 3)
    run = drive(PrivateUCB(), 3, 4, 30, lambda t: np.full(4, 0 if t > 3 else t - 1), ledger=ledger)
    assert run.tree.count.tolist() == [[28, 1, 1]] * 4
    assert ledger.draws.tolist() == [[28, 1, 1]] * 4  # one node completes per insert


def test_bad_parameters():
    for kwargs, match in [({"epsilon": 0}, "epsilon"), ({"epsilon": -1.0}, "epsilon"), ({"epsilon": math.inf}, "epsilon"),
                          ({"gamma": 0.0}, "gamma"), ({"gamma": 1.0}, "gamma"), ({"epsilon": True}, "epsilon")]:
        with pytest.raises(ValueError, match=match):
            PrivateUCB(**kwargs)
    with pytest.raises(ValueError, match="horizon"):
        simulate(PrivateUCB(), Bernoulli(FIVE_ARMS), 3, 1)


def test_regret_is_sane_and_saturates_below_linear():
    r = simulate(PrivateUCB(epsilon=1.0), Bernoulli([0.9, 0.6]), 4000, 30, seed=3, ledger=False)
    assert 0 < r.regret_mean[-1] < 0.3 * 4000 * 0.75
