import math

import numpy as np
import pytest

from _ucb_helpers import (FIVE_ARMS, assert_realized_below_certified, drive, laplace_ks, memo_ledger,  # noqa: F401
                          noise_factor, variance_ratio)
from accountants import AdvancedCompositionAccountant, KOVHeterogeneousAccountant, PureAccountant, best_epsilon
from privbandit.engine import simulate
from privbandit.envs import Bernoulli, TruncatedExponential
from privbandit.ledger import Ledger
from privbandit.mechanisms import _kernels
from privbandit.mechanisms.hybrid import HybridMechanism
from privbandit.policies.dp_ucb import DPUCB, DPUCBBound, DPUCBInt, hybrid_error_bound, release_counts

TWO_ARMS = [0.9, 0.6]
TEN_ARMS = [0.1] * 8 + [0.55, 0.2]


# ---------------------------------------------------------------------------------------------- privacy


@pytest.mark.parametrize("cls", [DPUCBBound, DPUCB])
@pytest.mark.parametrize("env, T", [(Bernoulli(TWO_ARMS), 256), (Bernoulli(FIVE_ARMS), 200)])
def test_hybrid_policies_realized_never_exceed_certified(cls, env, T, memo_ledger):
    assert_realized_below_certified(cls(epsilon=1.0), env, T, seed=[3, T], tight=True)


@pytest.mark.parametrize("cls", [DPUCBBound, DPUCB])
def test_hybrid_policies_cheap_ledger(cls):
    assert_realized_below_certified(cls(epsilon=0.3), TruncatedExponential([1, 2, 4]), 300, seed=5)


@pytest.mark.parametrize("policy, env, T", [
    (DPUCBInt(rate=1.0), Bernoulli(TWO_ARMS), 256),                 # f = 1: > 64 releases, grouped path
    (DPUCBInt(rate=0.1, decay=0.5), Bernoulli(FIVE_ARMS), 300),     # decreasing intervals
    (DPUCBInt(rate=0.2, v=1.5), TruncatedExponential([1, 2, 4]), 128),
])
def test_dp_ucb_int_realized_never_exceeds_certified(policy, env, T):
    assert_realized_below_certified(policy, env, T, seed=[7, T])


def test_dp_ucb_int_tight_ledger(memo_ledger):
    assert_realized_below_certified(DPUCBInt(rate=0.125), Bernoulli(TWO_ARMS), 128, seed=8, tight=True)


@pytest.mark.parametrize("policy", [DPUCBInt(rate=0.25), DPUCBInt(rate=1.0), DPUCBInt(interval=5, decay=0.5)])
def test_dp_ucb_int_schedule_is_attained_at_every_round(policy):
    K, T = 2, 150
    f = policy.first_interval
    ledger = Ledger(1, K)
    run = policy.start(K, 1, T, np.random.default_rng(0), ledger=ledger)
    sched = policy.privacy_schedule(T, K)
    for t in range(1, T + 1):
        run.select(t)
        arm = (t - 1) % K if t <= K * f else 0  # round robin, then arm 0 only
        run.update(t, np.array([arm]), np.array([0.5]))
        n = -(-t // K) if t <= K * f else t - (K - 1) * f
        want = sum(c ** (-policy.v / 2) for c in release_counts(f, policy.decay, n))
        assert ledger.realized_pure_epsilon()[0] == pytest.approx(want, rel=1e-9, abs=1e-15)
        cert = sched.epsilon(t, 1e-6, [PureAccountant]).value
        if sched._releases(t) <= sched.exact_limit:
            assert cert == pytest.approx(want, rel=1e-9, abs=1e-15)
        else:  # eps_j rounded up to a 1% grid: never below, at most 1% above
            assert want * (1 - 1e-12) <= cert <= want * 1.0101


def test_hybrid_schedules_bound_the_forced_worst_case():
    K, T = 3, 130
    for policy, arm_of in [(DPUCBBound(0.7), lambda t: t - 1 if t <= K else 0), (DPUCB(0.7), lambda t: (t - 1) % K)]:
        ledger = Ledger(1, K)
        run = policy.start(K, 1, T, np.random.default_rng(0), ledger=ledger)
        sched = policy.privacy_schedule(T, K)
        for t in range(1, T + 1):
            run.select(t)
            run.update(t, np.array([arm_of(t)]), np.array([1.0]))
            pure = sched.epsilon(t, 1e-6, [PureAccountant]).value
            assert ledger.realized_pure_epsilon()[0] <= pure * (1 + 1e-9)
            assert pure <= 0.7 * (1 + 1e-9)
        assert ledger.realized_pure_epsilon()[0] == pytest.approx(0.7, rel=1e-9)  # a full block is eps


@pytest.mark.parametrize("eps", [0.1, 1.0])
@pytest.mark.parametrize("arms", [TWO_ARMS, TEN_ARMS])
def test_certified_below_claimed_for_the_papers_parameters(eps, arms):
    K, T, delta = len(arms), 100_000, math.exp(-10)
    for policy in [DPUCBBound(eps), DPUCB(eps)]:
        assert policy.privacy_schedule(T, K).epsilon(T, delta).value <= policy.claimed_epsilon(T, K, delta) == eps
    for policy in [DPUCBInt(rate=eps), DPUCBInt(rate=eps, decay=0.5), DPUCBInt.calibrated(eps, delta)]:
        sched = policy.privacy_schedule(T, K)
        cert = sched.epsilon(T, delta)
        # Theorem 3.4's own composition (heterogeneous advanced) on our schedule, and the best one
        adv = sched.epsilon(T, delta, [AdvancedCompositionAccountant]).value
        assert cert.value <= adv <= policy.paper_bound(delta) == policy.claimed_epsilon(T, K, delta)
    assert DPUCBInt.calibrated(eps, delta).paper_bound(delta) <= eps


def test_dp_ucb_int_paper_bound_closed_form_and_calibration():
    from scipy import special
    p = DPUCBInt(rate=0.1, v=1.1)
    s = special.zeta(1.1) * 10 ** -1.1
    assert p.paper_bound(1e-5) == pytest.approx(math.sqrt(2 * math.log(1e5) * s) + 2 * s)
    # ALGORITHMS.md 4.4 numbers: delta' = e^-10, v = 1.1: eps' = 1 -> f ~ 153, eps' = 0.1 -> f ~ 8714
    assert DPUCBInt.calibrated(1.0, math.exp(-10)).first_interval in (153, 154)
    assert abs(DPUCBInt.calibrated(0.1, math.exp(-10)).first_interval - 8714) <= 2


def test_dp_ucb_int_grouped_certificate_is_never_below_the_exact_one():
    sched = DPUCBInt(rate=1.0).privacy_schedule(2000, 2)
    for t in [100, 2000]:
        for acc in [PureAccountant, AdvancedCompositionAccountant, KOVHeterogeneousAccountant]:
            exact = best_epsilon(sched.events(t), 1e-6, [acc]).value
            grouped = best_epsilon(sched.grouped_events(t), 1e-6, [acc]).value
            assert exact <= grouped <= exact * 1.02
    # and against every accountant (PLD included) on the exact multiset
    assert sched.epsilon(100, 1e-6).value >= best_epsilon(sched.events(100), 1e-6).value * (1 - 1e-9)


# ------------------------------------------------------------------------------------------- mechanics


def test_vectorised_error_bound_matches_the_mechanism():
    mech = HybridMechanism(1, 1, epsilon=0.37, rng=np.random.default_rng(0), ledger=None)
    n = np.arange(0, 3000)
    for gamma in [0.3, 1e-4, 1e-20]:
        got = hybrid_error_bound(n, math.log(4 / gamma), 0.37)
        want = np.array([mech.error_bound(int(x), gamma) for x in n])
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_dp_ucb_bound_index_adds_the_bound_and_dp_ucb_feeds_zeros():
    R, K, T = 3, 3, 50
    run = drive(DPUCBBound(0.5), K, R, T, lambda t: np.full(R, (t - 1) % K))
    t = T + 1
    n = run.counts
    want = run.hybrid.noisy_sum / n + np.sqrt(2 * math.log(t) / n) + hybrid_error_bound(n, math.log(4 * t ** 4), 0.5) / n
    np.testing.assert_allclose(run.index(t), want)
    assert run.hybrid.count.tolist() == n.tolist()
    run2 = drive(DPUCB(0.5), K, R, T, lambda t: np.full(R, 0 if t > K else t - 1))
    assert np.all(run2.hybrid.count == T)  # every mechanism advanced every round
    assert run2.counts[:, 0].tolist() == [T - K + 1] * R
    np.testing.assert_allclose(run2.index(t), run2.hybrid.noisy_sum / run2.counts
                               + np.sqrt(2 * math.log(t) / run2.counts))


def test_dp_ucb_int_releases_once_per_interval_and_caches():
    R, K, T = 4, 2, 60
    ledger = Ledger(R, K)
    policy = DPUCBInt(rate=0.2)  # f = 5
    run = drive(policy, K, R, T, lambda t: np.full(R, (t - 1) % K), ledger=ledger)
    assert np.all(ledger.draws == 6)  # 30 pulls per arm: releases at 5, 10, ..., 30
    cached = run.interval.noisy_mean.copy()
    for t in range(T + 1, T + 5):
        run.select(t)  # selecting never draws
    assert np.all(ledger.draws == 6) and np.array_equal(cached, run.interval.noisy_mean)
    ledger2 = Ledger(R, K)
    drive(DPUCBInt(interval=4, decay=0.5), K, R, T, lambda t: np.full(R, (t - 1) % K), ledger=ledger2)
    assert np.all(ledger2.draws == release_counts(4, 0.5, 30).size)


def _hybrid_ratio(cls, factor_setter, factor, R=2000, K=2, T=45, eps=0.6):
    factor_setter(factor)
    run = drive(cls(eps), K, R, T, lambda t: np.full(R, t % K))
    h = run.hybrid
    n = h.count
    resid = h.noisy_sum - 0.5 * run.counts
    k = np.floor(np.log2(n)).astype(int)
    tau = n - 2 ** k
    pop = np.vectorize(lambda x: bin(int(x)).count("1"))(tau)
    var = 2 * (2 / eps) ** 2 * (k + 1) + 2 * pop * (2 * k / eps) ** 2  # log part + binary part
    return variance_ratio(resid, var)


@pytest.mark.parametrize("cls", [DPUCBBound, DPUCB])
def test_hybrid_noise_has_the_declared_scale_and_bugs_are_detected(cls, noise_factor):
    assert 0.9 < _hybrid_ratio(cls, noise_factor, 1.0) < 1.1
    assert _hybrid_ratio(cls, noise_factor, 0.5) < 0.35
    assert _hybrid_ratio(cls, noise_factor, 0.0) == 0.0


@pytest.mark.parametrize("policy", [DPUCBInt(rate=0.25, v=1.1), DPUCBInt(interval=3, decay=0.5, v=1.6)])
def test_dp_ucb_int_noise_is_laplace_of_scale_n_to_v_over_2_minus_1(policy, noise_factor):
    R, K, T = 3000, 2, 40

    def standardised(factor):
        noise_factor(factor)
        run = drive(policy, K, R, T, lambda t: np.full(R, (t - 1) % K))
        n = run.interval.released_count
        return (run.interval.noisy_mean - 0.5) / n.astype(float) ** (policy.v / 2 - 1)

    assert laplace_ks(standardised(1.0)) > 1e-3
    assert laplace_ks(standardised(0.5)) < 1e-12
    assert laplace_ks(standardised(0.0)) < 1e-12


# --------------------------------------------------------------------------------------------- misc


def test_bad_parameters():
    cases = [(DPUCBBound, {"epsilon": 0}, "epsilon"), (DPUCB, {"epsilon": -1}, "epsilon"),
             (DPUCBInt, {"v": 1.0}, "v"), (DPUCBInt, {"v": 2.0}, "v"), (DPUCBInt, {"interval": 0}, "interval"),
             (DPUCBInt, {"interval": 2.5}, "interval"), (DPUCBInt, {"decay": -0.1}, "decay"),
             (DPUCBInt, {"epsilon": math.nan}, "epsilon")]
    for cls, kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            cls(**kwargs)
    with pytest.raises(ValueError, match="delta"):
        DPUCBInt().paper_bound(1.0)
    with pytest.raises(ValueError, match="target_epsilon"):
        DPUCBInt.calibrated(0.0, 1e-6)


def test_release_counts():
    assert release_counts(3, 0.0, 10).tolist() == [3, 6, 9]
    assert release_counts(4, 1.0, 12).tolist() == [4, 6, 8, 9, 10, 11, 12]  # intervals 4, 2, 2 (ceil 4/3), 1, ...
    assert release_counts(1, 0.0, 4).tolist() == [1, 2, 3, 4]


def test_small_t_qualitative_ordering_two_arms():
    # Tossou & Dimitrakakis scenario 1 at eps = 1, short horizon, DP-UCB-Int calibrated to overall
    # eps' = 1 (delta' = e^-10) as in the paper's experiments: DP-UCB-Int best, Private-UCB worst.
    from privbandit.policies.private_ucb import PrivateUCB
    from privbandit.policies.ucb import UCB1
    T, R = 3000, 40
    env = Bernoulli(TWO_ARMS)
    reg = {p.name: simulate(p, env, T, R, seed=11, ledger=False).regret_mean[-1]
           for p in [UCB1(), DPUCBInt.calibrated(1.0, math.exp(-10)), DPUCBBound(1.0), DPUCB(1.0), PrivateUCB(1.0)]}
    assert reg["ucb1"] <= reg["dp_ucb_int"] < min(reg["dp_ucb_bound"], reg["dp_ucb"])
    assert reg["private_ucb"] >= max(reg["dp_ucb_bound"], reg["dp_ucb"], reg["dp_ucb_int"])


@pytest.mark.parametrize("interval, v", [(1, 1.1), (7, 1.5), (40, 1.9)])
def test_fixed_interval_grouping_dominates_the_exact_schedule(interval, v):
    """The O(log m) grouped event charges every release at least its own eps (so it certifies no
    less than the exact multiset) and at most 1% more."""
    from accountants import best_epsilon
    from accountants.kov import KOVHeterogeneousAccountant
    from accountants.pure import PureAccountant
    from privbandit.policies import DPUCBInt

    T, K = 3_000, 3
    sched = DPUCBInt(v=v, interval=interval).privacy_schedule(T, K)
    exact = sched.events(T)
    grouped = sched.grouped_events(T)
    exact_eps = np.sort([leaf.pure_epsilon() for leaf, n in exact.leaves() for _ in range(n)])[::-1]
    grouped_eps = np.sort([leaf.pure_epsilon() for leaf, n in grouped.leaves() for _ in range(n)])[::-1]
    assert exact_eps.size == grouped_eps.size
    assert np.all(grouped_eps >= exact_eps)
    assert np.all(grouped_eps <= exact_eps * 1.0101)
    accs = [PureAccountant, KOVHeterogeneousAccountant]
    assert best_epsilon(grouped, 1e-6, accs).value >= best_epsilon(exact, 1e-6, accs).value


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_dp_ucb_int_epsilon_is_the_privacy_it_certifies(eps):
    """``epsilon`` means the certified privacy (issue 17): at the policy's delta the certificate is
    <= epsilon at every horizon (the paper-form bound holds for all of them); the interval form is
    ``rate`` (f = ceil(1/rate)), the paper's parameter, which is not a privacy level."""
    K = 5
    policy = DPUCBInt(epsilon=eps)
    for T in (1_000, 100_000):
        assert policy.privacy_schedule(T, K).epsilon(T, policy.delta).value <= eps
    assert policy.paper_bound(policy.delta) <= eps
    smaller = DPUCBInt(interval=policy.first_interval - 1)
    assert smaller.paper_bound(policy.delta) > eps  # the least interval that meets the target
    assert DPUCBInt(rate=1.0).first_interval == 1 and DPUCBInt(rate=0.1).first_interval == 10
    assert DPUCBInt(rate=1.0).privacy_schedule(10_000, 2).epsilon(10_000, 1e-6).value > 5  # not a privacy level
    with pytest.raises(ValueError, match="one of epsilon"):
        DPUCBInt(epsilon=1.0, rate=1.0)
    with pytest.raises(ValueError, match="decay"):
        DPUCBInt(epsilon=1.0, decay=0.5)
    with pytest.raises(ValueError, match="rate"):
        DPUCBInt(rate=0.0)


# ------------------------------------------------------------------------------------------- kernels


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the interpreted path exists")
def test_index_and_bound_kernels_agree_compiled_and_interpreted():
    """The DP-UCB(-Bound) index and the vectorised error bound are one Python source run compiled and
    interpreted: same bits, and the argmax np.argmax gives (first maximum, first NaN)."""
    from privbandit.policies import dp_ucb

    g = np.random.default_rng(5)
    counts = g.integers(1, 2**40, (7, 6))
    counts[0] = [1, 2, 3, 4, 2**33, 2**33 + 5]  # powers of two, tau = 0, large counts
    noisy = g.standard_normal((7, 6)) * 50
    noisy[1] = 3.0  # ties: the first maximum
    counts[1] = 7
    noisy[2, 3] = np.nan  # NaN: the first NaN, as np.argmax
    for bound in (False, True):
        got = []
        for way in ("py_func", "jit"):
            index, arms = np.empty((7, 6)), np.empty(7, dtype=np.intp)
            getattr(dp_ucb.ucb_index, way)(noisy, counts, 0.0, 2.0 * math.log(99), math.log(4) + 4 * math.log(99),
                                           2.0 * math.sqrt(8) / 0.3, bound, index, arms)
            got.append((index, arms))
            assert arms.tolist() == np.argmax(index, axis=1).tolist()
        assert np.array_equal(got[0][0], got[1][0], equal_nan=True)
        assert np.array_equal(got[0][0].view(np.int64), got[1][0].view(np.int64))
    n = np.concatenate([np.arange(0, 5000), g.integers(1, 2**52, 2000)])
    lg = g.uniform(0.1, 80, n.size)
    outs = []
    for way in ("py_func", "jit"):
        out = np.empty(n.size)
        getattr(dp_ucb.hybrid_bounds, way)(n, lg, 2.0 * math.sqrt(8) / 0.3, out)
        outs.append(out)
    assert np.array_equal(outs[0].view(np.int64), outs[1].view(np.int64))


def test_vectorised_error_bound_matches_the_numpy_expression_bit_for_bit():
    """The kernel's scalar arithmetic is the vectorised numpy expression it replaced, bit for bit
    (k from frexp, exact below 2^53)."""
    g = np.random.default_rng(6)
    n = np.concatenate([np.arange(0, 4096), g.integers(1, 2**52, 4000)])
    for lg in (0.2, 7.5, g.uniform(0.1, 90, n.size)):
        safe = np.maximum(n, 1)
        k = np.frexp(safe.astype(float))[1].astype(np.int64) - 1
        tau = safe - np.left_shift(np.int64(1), k)
        terms = np.stack([k + 1, np.where(tau > 0, k, 0), np.bitwise_count(tau)]).astype(float)
        total = np.maximum(lg, np.sqrt(terms[0] * lg))
        total = total + terms[1] * np.maximum(lg, np.sqrt(terms[2] * lg))
        want = np.where(n > 0, 2.0 * math.sqrt(8.0) / 0.37 * total, 0.0)
        got = hybrid_error_bound(n, lg, 0.37)
        assert np.array_equal(got.view(np.int64), want.view(np.int64))


@pytest.mark.parametrize("replicates", [1, 3])
def test_dp_ucb_update_refuses_arms_outside_the_arms_and_writes_nothing(replicates):
    run = DPUCB(1.0).start(4, replicates, 100, np.random.default_rng(0))
    for bad in (4, -1):
        with pytest.raises(ValueError, match=r"arms must lie in \[0, 4\)"):
            run.update(1, np.full(replicates, bad), np.zeros(replicates))
    with pytest.raises(ValueError, match="shape"):
        run.update(1, np.zeros(replicates + 1, dtype=int), np.zeros(replicates + 1))
    assert run.counts.sum() == 0 and run.hybrid.count.sum() == 0
    run.update(1, np.full(replicates, 2), np.full(replicates, 0.5))
    assert run.counts[:, 2].tolist() == [1] * replicates and np.all(run.hybrid.count == 1)


def test_hybrid_bound_shortcut_is_the_full_formula_at_its_boundary():
    """When ln(4/gamma) >= k + 1 the kernel skips both maxima (they are ln(4/gamma) itself): the full
    formula, in plain Python, gives the same bits at and around lg = k + 1 and for huge lg."""
    from privbandit.policies import dp_ucb

    def full(n, lg, c):
        if n <= 0:
            return 0.0
        k = n.bit_length() - 1
        tau = n - (1 << k)
        total = max(lg, math.sqrt(float(k + 1) * lg))
        return c * (total + float(k if tau > 0 else 0) * max(lg, math.sqrt(float(bin(tau).count("1")) * lg)))

    ns = list(range(0, 1100)) + [2**j + d for j in range(11, 62) for d in (-1, 0, 1, 12345)]
    lgs = [x for j in range(1, 64) for x in (float(j), np.nextafter(float(j), 0.0), np.nextafter(float(j), 99.0))]
    lgs += [1e-300, 0.5, 1e150, 1.5e154, 1e300]
    n_arr = np.array(ns, dtype=np.int64)
    for lg in lgs:
        want = np.array([full(n, float(lg), 2.7) for n in ns])
        for way in ("py_func", "jit"):
            out = np.empty(n_arr.size)
            getattr(dp_ucb.hybrid_bounds, way)(n_arr, np.full(n_arr.size, float(lg)), 2.7, out)
            assert np.array_equal(out.view(np.int64), want.view(np.int64)), (way, lg)


@pytest.mark.parametrize("name", ["dp_ucb_bound", "dp_ucb", "private_ucb"])
@pytest.mark.parametrize("way", ["py_func", "jit"])
def test_an_arm_never_pulled_has_infinite_index_both_ways(name, way, monkeypatch):
    """A caller that skips the round robin (select(t > K) before any update) gets the first arm
    without a pull -- index +inf, as numpy's (s + Gamma)/0 gave Private-UCB -- interpreted and
    compiled alike: interpreted, the index kernel raised ZeroDivisionError (a traceback), compiled
    it returned NaN."""
    from privbandit.policies import REGISTRY, dp_ucb

    kernel = dp_ucb.ucb_index
    monkeypatch.setattr(kernel, "at", lambda n: getattr(kernel, way))
    run = REGISTRY[name](epsilon=1.0).start(4, 2, 100, np.random.default_rng(0))
    assert run.select(9).tolist() == [0, 0]
    for t, arm in ((1, 0), (2, 2), (3, 0)):  # pulls of arms 0 and 2 only, in both replicates
        run.update(t, np.array([arm, arm]), np.array([0.5, 0.25]))
    assert run.select(9).tolist() == [1, 1]
    index = run.index(9)
    assert np.isinf(index[:, [1, 3]]).all() and np.isfinite(index[:, [0, 2]]).all()


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the interpreted path exists")
def test_private_ucb_index_is_the_numpy_expression_bit_for_bit():
    """Private-UCB's index through the shared kernel (offset = Gamma) is (noisy_sum + Gamma) / n +
    sqrt(2 ln t / n) as numpy evaluated it, bit for bit, compiled and interpreted, and its argmax
    is np.argmax's (first maximum)."""
    from privbandit.policies import dp_ucb

    g = np.random.default_rng(8)
    counts = g.integers(1, 2**40, (9, 5))
    counts[0] = [1, 2, 3, 2**33, 7]
    noisy = g.standard_normal((9, 5)) * 300
    noisy[1], counts[1] = -2.5, 11  # ties: the first maximum
    gamma, t = 1234.5678, 99_991
    want = (noisy + gamma) / counts.astype(float) + np.sqrt(2.0 * math.log(t) / counts.astype(float))
    for way in ("py_func", "jit"):
        index, arms = np.empty((9, 5)), np.empty(9, dtype=np.intp)
        getattr(dp_ucb.ucb_index, way)(noisy, counts, gamma, 2.0 * math.log(t), 0.0, 0.0, False, index, arms)
        assert np.array_equal(index.view(np.int64), want.view(np.int64))
        assert arms.tolist() == np.argmax(want, axis=1).tolist()


def test_dp_ucb_int_delta_query_is_grouped_like_epsilon_and_still_an_upper_bound(monkeypatch):
    # session 14: delta(eps) built one Laplace per release (the inherited query) and ran every
    # accountant on them -- 26 s at 10^5 rounds with interval 1; it now groups as epsilon() does
    from accountants import best_delta
    from accountants.best import default_accountants
    from accountants.pld import PLDAccountant

    schedule = DPUCBInt(interval=1).privacy_schedule(5000, 2)
    cheap = [f for f in default_accountants() if f is not PLDAccountant]
    exact = best_delta(schedule.events(5000), 1.0, cheap).value
    grouped = schedule.delta(5000, 1.0)
    assert grouped.value >= exact and grouped.value <= 1.5 * exact  # dominating, within the grid's slack

    def per_release(rounds):
        raise AssertionError("the per-release event list was built past exact_limit")
    monkeypatch.setattr(schedule, "events", per_release)
    assert schedule.delta(5000, 1.0).value == grouped.value
    assert schedule.delta(10**7, 1.0).value <= 1.0
