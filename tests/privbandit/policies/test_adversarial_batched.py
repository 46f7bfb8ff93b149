"""The batched private conversion of Asi, Raman & Talwar (ICML 2025) with EXP3 as its base
(privbandit/policies/adversarial.py, ``BatchedPrivateEXP3``; docs/policies_adversarial.md)."""

import math

import numpy as np
import pytest

from _ucb_helpers import assert_realized_below_certified, memo_ledger, noise_factor  # noqa: F401
from privbandit import budget
from privbandit.engine import simulate
from privbandit.envs import Bernoulli, switching_best_arm
from privbandit.ledger import Ledger
from privbandit.policies import BatchedPrivateEXP3, PrivateEXP3, make_policy

FIVE_ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]


# --- its noise --------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.4, 2.0], ids=["tau=3", "tau=1"])
@pytest.mark.parametrize("factor, low, high", [(1.0, 0.9, 1.1), (0.5, 0.0, 0.35), (0.0, 0.0, 0.0)])
def test_noise_has_the_declared_scale_and_bugs_are_detected(noise_factor, eps, factor, low, high):
    """EXP3 learns from -(S + Lap(1/eps)) / tau, S the batch's loss sum (reward 1/4: S = 3/4 per
    round). The recovered noise's mean square is 2/eps^2 (the paper's Lap(1/(eps tau)) on the average,
    times tau). 20000 draws; the ratio's relative sd is sqrt((kurtosis - 1) / n) = sqrt(5 / 20000) =
    0.016, so [0.9, 1.1] is > 6 sd wide; a halved scale gives about 0.25 and removed noise exactly 0.
    eps = 0.4 (tau = 3) takes the batch release, eps = 2 (tau = 1) the per-record fast path. The
    loss floor -b ln(nK) binds with probability 1/(2nK) per draw (n = 400, K = 3: ~8 of 20000 draws,
    each clipped by a tail of mean b, far below the band)."""
    noise_factor(factor)
    pol = BatchedPrivateEXP3(epsilon=eps)
    R = 50
    T = 400 * pol.tau_for(10**6)  # 400 whole batches per replicate
    run = pol.start(3, R, T, np.random.default_rng(7))
    tau = run.tau
    gains = []
    learn = run.core.learn
    run.core.learn = lambda arms, g: (gains.append(np.array(g)), learn(arms, g))
    for t in range(1, T + 1):
        arms = run.select(t)
        run.update(t, arms, np.full(R, 0.25))
    assert len(gains) == 400
    noise = -np.concatenate(gains) * tau - 0.75 * tau
    ratio = float(np.mean(noise ** 2)) / (2 / eps ** 2)
    assert low <= ratio <= high, ratio


def test_one_release_per_batch_with_its_footprint():
    """T = 23, tau = 5: four batches of 5 records and a last one of 3, each released once (scale
    1/eps, sensitivity 1) with footprint [lo, hi) of the played arm's stream; the arm is constant
    within a batch, and the streams' footprints tile [0, pulls)."""
    T, R, K, tau = 23, 6, 3, 5
    led = Ledger(R, K, tight=True)
    run = BatchedPrivateEXP3(epsilon=0.5, tau=tau).start(K, R, T, np.random.default_rng(1), ledger=led)
    played = []
    for t in range(1, T + 1):
        arms = run.select(t)
        played.append(arms.copy())
        run.update(t, arms, np.full(R, 0.5))
    played = np.array(played)  # (T, R)
    for j in range(0, T, tau):
        assert np.all(played[j:j + tau] == played[j]), j  # one arm per batch
    rel = led.releases()
    assert rel["replicate"].size == R * 5
    assert np.all(rel["param"] == 2.0) and np.all(rel["sensitivity"] == 1.0)
    assert sorted(np.asarray(rel["hi"]) - np.asarray(rel["lo"])) == sorted([5] * 4 * R + [3] * R)
    for r in range(R):
        for k in range(K):
            mine = (np.asarray(rel["replicate"]) == r) & (np.asarray(rel["stream"]) == k)
            lo, hi = np.sort(np.asarray(rel["lo"])[mine]), np.sort(np.asarray(rel["hi"])[mine])
            assert np.array_equal(lo[1:], hi[:-1]) and (lo.size == 0 or lo[0] == 0)
            assert (hi[-1] if hi.size else 0) == np.count_nonzero(played[:, r] == k)


# --- privacy ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", [BatchedPrivateEXP3(epsilon=0.3), BatchedPrivateEXP3(epsilon=0.7, tau=7)],
                         ids=["tau=4", "tau=7"])
def test_realized_never_exceeds_certified_cheap(policy):
    assert_realized_below_certified(policy, Bernoulli(FIVE_ARMS), 200, seed=3, replicates=20)


def test_realized_never_exceeds_certified_tight(memo_ledger):
    assert_realized_below_certified(BatchedPrivateEXP3(epsilon=0.3), Bernoulli(FIVE_ARMS), 200, seed=3,
                                    replicates=10, tight=True)


@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_every_record_spends_eps_exactly_once(eps):
    """Each record is in one release of (sensitivity / scale) = eps, the last shorter batch included
    (T = 203 is not a multiple of tau = 4), also in exact mode."""
    for exact in (False, True):
        r = simulate(BatchedPrivateEXP3(epsilon=eps, exact=exact), Bernoulli(FIVE_ARMS), 203, 4, seed=2,
                     ledger="tight", realized_points=1, progress=False)
        assert r.realized_epsilon[-1] == pytest.approx(np.full(4, eps), rel=1e-4)
        assert r.realized_within_certificate()


def test_budget_epsilon_and_invert():
    cert = budget.epsilon("batched_private_exp3", 10_000, 1e-6, n_arms=5, epsilon=0.5)
    assert 0.5 * (1 - 1e-5) <= cert.value <= 0.5  # one Laplace of sensitivity 1 and scale 2: pure 0.5
    # the batch length does not enter the certificate: every record is in one eps-DP release
    for tau in (1, 7, 10_000):
        assert budget.epsilon("batched_private_exp3", 10_000, 1e-6, n_arms=5, epsilon=0.5, tau=tau).value \
            == cert.value
    inv = budget.invert("batched_private_exp3", 0.8, 10_000, solve_for="epsilon", bounds=(0.01, 10.0),
                        n_arms=5, delta=1e-6)
    assert inv.certificate <= 0.8 and inv.value == pytest.approx(0.8, rel=1e-3)
    assert budget.epsilon("batched_private_exp3", 10_000, 1e-6, n_arms=5, epsilon=inv.value).value <= 0.8
    assert BatchedPrivateEXP3(epsilon=0.5).claimed_epsilon(10_000, 5, 1e-6) == 0.5


# --- parameters -------------------------------------------------------------------------------------
def test_batch_length_and_rates():
    assert BatchedPrivateEXP3(epsilon=0.1).tau_for(10_000) == 10  # ceil(1/eps), Asi et al. Cor. 2
    assert BatchedPrivateEXP3(epsilon=0.3).tau_for(10_000) == 4
    assert BatchedPrivateEXP3(epsilon=10.0).tau_for(10_000) == 1
    assert BatchedPrivateEXP3(epsilon=1e-4).tau_for(500) == 500  # capped at T: one batch
    assert BatchedPrivateEXP3(epsilon=1.0, tau=50).tau_for(20) == 20
    pol, K, T = BatchedPrivateEXP3(epsilon=0.1), 5, 10_000
    gamma, eta = pol.rates(K, T)
    n, b = 1000, 1.0  # batches, noise scale on the average loss 1 / (eps tau)
    floor = b * math.log(n * K)
    assert eta == pytest.approx(math.sqrt(math.log(K) / (n * K * (1 + 2 * b * b + floor))))
    assert gamma == pytest.approx(eta * K * floor) and 0 < gamma < 1
    assert pol.loss_floor(K, T) == pytest.approx(floor)


def test_the_loss_floor_bounds_every_update():
    """EXP3's analysis needs eta |loss| / p <= 1 on negative losses: with the floor -f and p >= gamma/K,
    eta f K / gamma = 1. Drive a run with reward 1 (loss 0: every negative value is noise) at a small
    eps and check every importance-weighted step stays within 1."""
    pol, K, R, T = BatchedPrivateEXP3(epsilon=0.05, tau=2), 3, 200, 400
    run = pol.start(K, R, T, np.random.default_rng(3))
    steps, floor = [], pol.loss_floor(K, T)
    learn = run.core.learn

    def spy(arms, g):
        assert np.all(-np.asarray(g) >= -floor * (1 + 1e-12))
        steps.append(run.core.eta * np.asarray(g) / run.core.p_played)
        learn(arms, g)

    run.core.learn = spy
    for t in range(1, T + 1):
        run.update(t, run.select(t), np.ones(R))
    steps = np.concatenate(steps)
    # at this seed the floor binds 28 times (40000 draws x 1/(2nK) = 33 expected) and the largest step
    # is 0.81: the bound is not vacuous
    assert 0.5 < steps.max() <= 1 + 1e-9


@pytest.mark.parametrize("kwargs, match", [({"tau": 0}, "tau"), ({"tau": 2.5}, "tau"), ({"tau": True}, "tau"),
                                           ({"epsilon": 0.0}, "epsilon"), ({"epsilon": math.inf}, "epsilon"),
                                           ({"exact": 1}, "exact")])
def test_bad_parameters_name_themselves(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BatchedPrivateEXP3(**kwargs)
    with pytest.raises(ValueError, match=match):
        make_policy("batched_private_exp3", **kwargs)


# --- regret -----------------------------------------------------------------------------------------
def _per_round(policy, T, R=40):
    r = simulate(policy, switching_best_arm(T, 5, 4, seed=2017), T, R, seed=1, ledger=False, progress=False)
    return r.regret_lower[-1] / T, r.regret_upper[-1] / T


def test_regret_per_round_falls_on_the_switching_sequence():
    """Regret is O(sqrt(T K / eps)) up to logs: per round it falls from T = 2000 to 20000. Measured
    at eps = 1 (40 replicates, seed 1): 0.026 +- 0.004 -> 0.011 +- 0.003; the test asks the 95%
    bands to be disjoint, a deterministic statement at a fixed seed."""
    small, large = _per_round(BatchedPrivateEXP3(epsilon=1.0), 2000), _per_round(BatchedPrivateEXP3(epsilon=1.0), 20000)
    assert large[1] < small[0], (small, large)


def test_batching_beats_per_round_noise_at_small_epsilon():
    """The paper's point: at eps = 0.1 the batched conversion's noise on a batch average is
    Lap(1/(eps tau)) = Lap(1) instead of Lap(10) on every round, so its regret (sqrt(1/eps)) beats
    Agarwal & Singh's private EXP3 (1/eps). Measured at T = 20000 (40 replicates, seed 1): 0.0183 +-
    0.0024 against 0.0248 +- 0.0016 per round; the bands are disjoint, and the batched policy also
    beats uniform play, whose expected regret on this table is 0.0238 per round (computed below)."""
    T = 20000
    batched, agarwal = _per_round(BatchedPrivateEXP3(epsilon=0.1), T), _per_round(PrivateEXP3(epsilon=0.1), T)
    assert batched[1] < agarwal[0], (batched, agarwal)
    table = switching_best_arm(T, 5, 4, seed=2017).table
    uniform = (table.sum(axis=0).max() - table.mean(axis=1).sum()) / T
    assert batched[1] < uniform, (batched, uniform)


# --- command line -----------------------------------------------------------------------------------
def test_cli_accepts_it_and_refuses_bad_parameters_in_one_line(capsys):
    from privbandit.cli import main

    assert main(["budget", "batched_private_exp3", "--horizon", "10000", "--n-arms", "5", "--epsilon", "0.5",
                 "--param", "tau=7"]) == 0
    out = capsys.readouterr().out
    assert "best: 0.49999" in out and "paper's claim: 0.5" in out
    assert main(["run", "batched_private_exp3", "--horizon", "300", "--replicates", "3", "--epsilon", "0.3",
                 "--quiet"]) == 0
    assert "BatchedPrivateEXP3(epsilon=0.3, tau=None" in capsys.readouterr().out
    for command in (["budget", "batched_private_exp3", "--horizon", "1000", "--param", "tau=0"],
                    ["run", "batched_private_exp3", "--horizon", "300", "--param", "tau=2.5", "--quiet"],
                    ["audit", "batched_private_exp3", "--param", "tau=-1"],
                    ["run", "batched_private_exp3", "--horizon", "300", "--epsilon", "-1", "--quiet"],
                    ["run", "batched_private_exp3", "--horizon", "300", "--param", "gamma=0.1", "--quiet"]):
        assert main(command) == 2, command
        err = capsys.readouterr().err.strip()
        assert err.startswith("privbandit: error:") and "\n" not in err, err
        assert ("tau" in err) or ("epsilon" in err) or ("gamma" in err), err
