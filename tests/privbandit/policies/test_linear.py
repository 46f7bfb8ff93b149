"""Linear contextual policies: hand-computed certificates, sensitivity bounds, noise scales (which
fail if the noise is removed or halved), realized <= certified, learning, validation, an audit."""

import math

import numpy as np
import pytest

from accountants import best_epsilon
from accountants.gdp_conversion import epsilon_for_delta
from accountants.pure import PureAccountant
from privbandit.contextual import LinearContextual, linalg
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.feedback import Offer
from privbandit.policies import make_policy
from privbandit.policies.linear import JointDPLinUCB, LinTS, LinUCB, PrivateLinTS, PrivateLinUCB


# --- certificates against hand-computed footprints ---------------------------------------------

def test_private_lin_ucb_certificate_by_hand():
    # d = 2, L = 1, eps = 1: S = 3 + 2 = 5 streams, eps0 = 0.2; T = 16: 5 levels, node scale
    # 5 / 0.2 = 25; Delta = min(3, 3) + sqrt 2; the first record of a full tree is in 5 nodes.
    pol = PrivateLinUCB(epsilon=1.0, dim=2, bound=1.0)
    sched = pol.privacy_schedule(16, 3)
    hand = 5 * (3 + math.sqrt(2)) / 25
    assert best_epsilon(sched.events(16), 1e-6, [PureAccountant]).value == pytest.approx(hand, rel=1e-12)
    assert sched.epsilon(16, 1e-6).value <= hand * (1 + 1e-12) <= pol.claimed_epsilon(16, 3, 1e-6)
    # 9 records: bit_length(9) = 4 nodes
    assert best_epsilon(sched.events(9), 1e-6, [PureAccountant]).value == pytest.approx(4 * (3 + math.sqrt(2)) / 25)


def test_mishra_example_certificate_is_below_their_claim():
    # their example: d = 6, 27 streams at eps0 = 0.1, claimed 2.7; certified (7 + sqrt 6) x 0.1
    pol = PrivateLinTS(epsilon=2.7, dim=6)
    assert pol.streams_per_arm == 27 and pol.eps0 == pytest.approx(0.1)
    cert = best_epsilon(pol.privacy_schedule(1024, 10).events(1024), 1e-6, [PureAccountant]).value
    assert cert == pytest.approx((7 + math.sqrt(6)) * 0.1) and cert < 2.7


def test_joint_dp_certificate_by_hand():
    # d = 2, L = 1: L~^2 = 2, L2 sensitivity 2 sqrt 2; T = 16: m = ceil(log2 16) + 1 = 5,
    # sigma^2 = 16 m L~^4 ln(4/delta)^2 / eps^2; 5 nodes: mu = sqrt 5 * 2 sqrt 2 / sigma
    pol = JointDPLinUCB(epsilon=1.0, delta=1e-6, dim=2, bound=1.0)
    sigma = math.sqrt(16 * 5 * 4 * math.log(4e6) ** 2)
    assert pol.sigma(16) == pytest.approx(sigma)
    sched = pol.privacy_schedule(16, 3)
    mu = math.sqrt(5) * 2 * math.sqrt(2) / sigma
    assert sched.mu(16) == pytest.approx(mu, rel=1e-12)
    assert sched.epsilon(16, 1e-6).value == pytest.approx(epsilon_for_delta(mu, 1e-6), rel=1e-9)
    assert sched.epsilon(16, 1e-6).value <= pol.claimed_epsilon(16, 3, 1e-6)
    gdp = JointDPLinUCB(epsilon=1.0, delta=1e-6, dim=2, calibration="gdp")
    assert 0.999 < gdp.privacy_schedule(16, 3).epsilon(16, 1e-6).value <= 1.0


def test_sensitivity_bounds_hold_on_random_and_extreme_records():
    rng = np.random.default_rng(0)
    d, bound = 4, 1.5
    z = rng.standard_normal((20_000, 2, d))
    z *= bound * rng.random((20_000, 2, 1)) ** 0.2 / np.linalg.norm(z, axis=2, keepdims=True)
    z[:5, 0] = bound / math.sqrt(d)  # extreme: all coordinates equal (largest L1 norm) ...
    z[:5, 1] = -bound / math.sqrt(d)  # ... against its negation
    r = rng.integers(0, 2, (20_000, 2)).astype(float)
    r[:5] = 1.0
    x = linalg.augmented(z, r)
    pol = PrivateLinUCB(dim=d, bound=bound)
    packed = linalg.packed_outer(x)[..., :-1] / pol.weights()
    l1 = np.abs(packed[:, 0] - packed[:, 1]).sum(axis=1)
    assert l1.max() <= pol.sensitivity() + 1e-12
    assert l1.max() > 0.5 * pol.sensitivity()  # the bound is of the right order (attained up to ~2x)
    joint = JointDPLinUCB(dim=d, bound=bound)
    full = linalg.packed_outer(x)
    l2 = np.linalg.norm(full[:, 0] - full[:, 1], axis=1)
    assert l2.max() <= joint.sensitivity() + 1e-12


# --- the noise actually drawn (fails if it is removed or halved) -------------------------------

def _one_round(pol, replicates, dim=2, n_arms=2):
    run = pol.start(n_arms, replicates, 1, np.random.default_rng(5))
    z = np.full((replicates, n_arms, dim), 0.5)
    arms = run.select(1, Offer(contexts=z))
    run.update(1, arms, np.full(replicates, 0.5))
    tree = run.stats.tree
    rows = np.arange(replicates)
    return (tree.noisy_sum() - tree.exact_sum)[rows, arms]


def test_private_lin_ucb_noise_has_the_declared_scale():
    # d = 2, eps = 1, T = 1 (one level): eps0 = 0.2, scale = 1 * Delta_entry / 0.2: 5 for the A
    # entries (Delta = L^2 = 1), 10 for the b entries (Delta = 2L); Laplace std = sqrt 2 * scale.
    # Sample std of n = 4000 Laplace draws: relative sd sqrt((kurtosis - 1) / 4n) = sqrt(5 / 16000)
    # = 1.8%; 5 sd = 9% (halving the noise is 50% off, removing it 100%).
    noise = _one_round(PrivateLinUCB(epsilon=1.0, dim=2), 4000)
    w = PrivateLinUCB(epsilon=1.0, dim=2).weights()
    np.testing.assert_allclose(w, [1, 1, 2, 1, 2])  # packed [z; r]: (0,0) (0,1) (0,r) (1,1) (1,r)
    np.testing.assert_allclose(noise.std(axis=0), math.sqrt(2) * 5 * w, rtol=0.09)


def test_joint_dp_noise_has_the_declared_sigma():
    # T = 1: m = 1, sigma = 4 * 2 * ln(4e6) / 1; sample std relative sd sqrt(1 / 2n) = 1.1% at
    # n = 4000; 5 sd = 6%.
    noise = _one_round(JointDPLinUCB(epsilon=1.0, delta=1e-6, dim=2), 4000)
    assert noise.shape == (4000, 6)
    np.testing.assert_allclose(noise.std(axis=0), 8 * math.log(4e6), rtol=0.06)


# --- realized <= certified, learning ------------------------------------------------------------

@pytest.mark.parametrize("pol", [PrivateLinUCB(epsilon=1.0, dim=3), PrivateLinTS(epsilon=0.5, dim=3),
                                 JointDPLinUCB(epsilon=1.0, dim=3, model="disjoint")], ids=lambda p: p.name)
def test_realized_never_exceeds_certified(pol):
    env = LinearContextual(3, 3, noise=0.1)
    res = simulate(pol, env, 300, 6, seed=2, ledger_replicates=6)
    q = ~np.isnan(res.realized_epsilon[:, 0])
    assert q.sum() >= 2
    realized = res.realized_epsilon[q]
    assert np.all(realized > 0)
    assert np.all(realized <= res.certified_closed_form[q][:, None] * (1 + 1e-9))
    assert res.certified_epsilon[-1] <= pol.claimed_epsilon(300, 3, res.delta)


def test_shared_joint_dp_records_in_stream_zero():
    res = simulate(JointDPLinUCB(epsilon=1.0, dim=3), LinearContextual(3, 4, model="shared"), 64, 2, seed=0,
                   ledger_replicates=2)
    assert np.all(res.realized_epsilon[-1] <= res.certified_closed_form[-1] * (1 + 1e-9))


def test_non_private_baselines_learn():
    env = LinearContextual(5, 10, noise=0.1)
    run = env.start(2000, np.random.default_rng(9))
    z = run.offer(1).contexts
    means = env.means(z)
    random_per_round = float((means.max(axis=1) - means.mean(axis=1)).mean())  # uniform play's regret
    for pol in (LinUCB(), LinTS()):
        res = simulate(pol, env, 2000, 4, seed=1)
        # learning: at most a fifth of uniform play's expected regret (LinUCB ~ 2%, LinTS ~ 7% here)
        assert res.regret_mean[-1] < 0.2 * random_per_round * 2000, pol


# --- validation ---------------------------------------------------------------------------------

def test_validation():
    with pytest.raises(ValueError, match="dim"):
        PrivateLinUCB(dim=0)
    with pytest.raises(ValueError, match="bound"):
        LinUCB(bound=-1.0)
    with pytest.raises(ValueError, match="contexts"):
        LinUCB(contexts="ignore")
    with pytest.raises(ValueError, match="calibration"):
        JointDPLinUCB(calibration="wishart")
    with pytest.raises(ValueError, match="delta"):
        JointDPLinUCB(delta=0.0)
    with pytest.raises(ValueError, match="contexts"):  # a K-armed environment offers none
        simulate(LinUCB(), Bernoulli([0.2, 0.8]), 10, 1)
    run = PrivateLinUCB(dim=3).start(2, 1, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="dim=3"):
        run.select(1, Offer(contexts=np.zeros((1, 2, 4))))
    run = PrivateLinUCB(dim=2, contexts="reject").start(2, 1, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="bound"):
        run.select(1, Offer(contexts=np.full((1, 2, 2), 1.0)))
    assert make_policy("private-lin-ucb", epsilon=2.0, dim=4).eps0 == pytest.approx(2.0 / 14)
