"""Exact known answers for the arm sequence of 2-arm Gaussian Thompson sampling (AUDIT.md 2.4, 4).

* statistics self-test: the enumeration matches simulated frequencies of ``run_policy``;
* known answers: exact eps of the arm sequence at delta = 1e-5 for the three configurations of
  AUDIT.md 2.4 on their worst templates of AUDIT.md 2.1;
* controls: exact <= claim; planted variance/std bug: exact > claim;
* the bounds ladder: audit eps_lb <= exact <= claim.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from privbandit.audit import Audit, Budget, Claim, Neighbours, run_policy
from privbandit.audit.exact import (MAX_ADAPTIVE_ROUNDS, ActionDistribution, PrivacyProfile, action_distribution,
                                    bounds_ladder, exact_epsilon, exact_reference)
from privbandit.audit.runner import PolicySampler, auto_trace
from privbandit.policies.gaussian_ts import GaussianTS

from _audit_planted import mutated_gaussian_ts

T = 20          # adaptive rounds of AUDIT.md 2.4
DELTA = 1e-5
FALSE_ALARM = 1e-3  # per chi-square test at the fixed seeds (the tests are deterministic)


def template(b, rest, other, audited=0, flip=(0.0, 1.0), rounds=T):
    """AUDIT.md 2.1: a constant per arm; the first pre-pull reward of the audited arm flipped 0 <-> 1."""
    tape = np.full((2, b + rounds), float(other))
    tape[audited] = float(rest)
    tape_prime = tape.copy()
    tape[audited, 0], tape_prime[audited, 0] = flip
    return tape, tape_prime


def std_confusion(c):
    """Planted bug #3 of AUDIT.md 4 (tests/.../_audit_planted.py 'variance_std'): sigma^2 = c/(n+1)^2."""
    return lambda n: c / (n + 1.0) ** 2


def pooled_chisquare(observed, expected_probs, n, min_expected=20.0):
    """Chi-square p-value, bins with expected count < min_expected pooled into one."""
    expected = n * np.asarray(expected_probs)
    big = expected >= min_expected
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] < min_expected:  # the pooled bin itself too small: merge it into the smallest big bin
        j = int(np.argmin(exp[:-1]))
        obs[j] += obs[-1]
        exp[j] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


# --- the enumeration -----------------------------------------------------------------------------
@pytest.mark.parametrize("b, c, rounds", [(0, 1.0, 10), (2, 1.0, 12), (19, 4.0, 20), (4, 0.5, 16)])
def test_probabilities_sum_to_one(b, c, rounds):
    tape = np.random.default_rng(b).random((2, b + rounds))
    dist = action_distribution(GaussianTS(b, c), tape, 2 * b + rounds)
    assert dist.size == 2 ** rounds
    assert abs(dist.probs.sum() - 1.0) < 1e-12
    assert abs(special.logsumexp(dist.log_probs)) < 1e-12
    assert abs(dist.pull_count_pmf(0).sum() - 1.0) < 1e-12
    np.testing.assert_array_equal(dist.pulls(0) + dist.pulls(1), 2 * b + rounds)


def test_first_choice_is_the_normal_cdf_formula():
    b, c = 3, 2.0
    tape = np.array([[0.2, 0.9, 0.4, 0.0], [1.0, 0.1, 0.3, 0.0]])
    dist = action_distribution(GaussianTS(b, c), tape, 2 * b + 1)
    m0, m1 = tape[0, :b].sum() / (b + 1), tape[1, :b].sum() / (b + 1)
    p0 = stats.norm.cdf((m0 - m1) / math.sqrt(2 * c / (b + 1)))
    np.testing.assert_allclose(dist.probs, [p0, 1 - p0], rtol=1e-12)
    # b = 0: both arms draw N(0, c), a fair coin
    np.testing.assert_allclose(action_distribution(GaussianTS(0, c), tape, 1).probs, [0.5, 0.5], rtol=1e-15)


def test_enumeration_matches_simulated_frequencies():
    # AUDIT.md 4 statistics self-test. 4e5 runs of a random tape; two chi-square tests (pull counts of
    # arm 0, and the first 5 adaptive choices as 32 cells), each at FALSE_ALARM.
    b, c, rounds, n = 2, 1.0, 12, 400_000
    tape = np.random.default_rng(0).random((2, 2 * b + rounds))  # run_policy wants horizon pulls per arm
    policy = GaussianTS(b, c)
    dist = action_distribution(policy, tape, 2 * b + rounds)
    actions = run_policy(policy, tape, 2 * b + rounds, n, np.random.default_rng(1))["actions"]
    counts = np.bincount((actions == 0).sum(axis=1), minlength=2 * b + rounds + 1)
    assert pooled_chisquare(counts, dist.pull_count_pmf(0), n) > FALSE_ALARM
    # power: the same counts reject a slightly wrong model (c = 1.2 instead of 1)
    wrong = action_distribution(GaussianTS(b, 1.2), tape, 2 * b + rounds)
    assert pooled_chisquare(counts, wrong.pull_count_pmf(0), n) < 1e-20
    codes = dist.codes(actions)
    assert np.all(codes >= 0)
    head = np.bincount(codes & 31, minlength=32)
    head_probs = np.bincount(np.arange(dist.size) & 31, weights=dist.probs, minlength=32)
    assert pooled_chisquare(head, head_probs, n) > FALSE_ALARM
    # the most likely sequence, a per-cell binomial check at 4 standard deviations
    top = int(np.argmax(dist.log_probs))
    p = dist.probs[top]
    assert abs((codes == top).sum() - n * p) < 4 * math.sqrt(n * p * (1 - p))


def test_variance_parameter_models_the_planted_bug():
    # the variance= hook reproduces the mutated policy's law (so the bugged exact eps below is honest)
    b, c, rounds, n = 2, 1.0, 12, 200_000
    tape = np.random.default_rng(3).random((2, 2 * b + rounds))
    dist = action_distribution(GaussianTS(b, c), tape, 2 * b + rounds, variance=std_confusion(c))
    actions = run_policy(mutated_gaussian_ts("variance_std", b, c), tape, 2 * b + rounds, n,
                         np.random.default_rng(4))["actions"]
    counts = np.bincount((actions == 0).sum(axis=1), minlength=2 * b + rounds + 1)
    assert pooled_chisquare(counts, dist.pull_count_pmf(0), n) > FALSE_ALARM


def test_codes_log_prob_and_sequences_round_trip():
    b, rounds = 3, 8
    tape = np.random.default_rng(5).random((2, b + rounds))
    dist = action_distribution(GaussianTS(b, 2.0), tape, 2 * b + rounds)
    seqs = dist.sequences()
    assert seqs.shape == (2 ** rounds, 2 * b + rounds)
    np.testing.assert_array_equal(dist.codes(seqs), np.arange(dist.size))
    np.testing.assert_array_equal(dist.log_prob(seqs), dist.log_probs)
    np.testing.assert_array_equal((seqs == 0).sum(axis=1), dist.pulls(0))
    bad = seqs[:2].copy()
    bad[0, 0] = 1  # the pre-pull phase plays arm 0 first
    bad[1, -1] = 2
    assert np.all(dist.log_prob(bad) == -np.inf)
    assert dist.prob(dist.pulls(0) <= b + 3) == pytest.approx(dist.pull_count_pmf(0)[:b + 4].sum(), rel=1e-12)
    assert dist.log_prob_event(np.zeros(dist.size, bool)) == -math.inf


# --- exact privacy -------------------------------------------------------------------------------
def test_privacy_profile_of_randomized_response():
    eps = 1.3
    p = np.log([math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))])
    prof = PrivacyProfile(p, p[::-1])
    for e in (0.0, 0.4, 1.0):
        assert prof.delta(e) == pytest.approx((math.exp(eps) - math.exp(e)) / (1 + math.exp(eps)), rel=1e-12)
    assert prof.delta(eps + 0.1) == 0.0
    assert prof.epsilon(0.0) == pytest.approx(eps, abs=1e-12)
    for d in (1e-5, 0.01, 0.2):
        true = math.log(math.exp(eps) - d * (1 + math.exp(eps)))
        got = prof.epsilon(d)
        assert true <= got <= true + 1e-9  # errs upward only, by at most the bisection tolerance
    assert prof.epsilon(0.6) == 0.0  # delta(0) = total variation 0.571 < 0.6


def test_privacy_profile_infinite_loss():
    # an output impossible under one input: eps is infinite unless delta covers its mass
    prof = PrivacyProfile(np.log([0.5, 0.5]), np.log([1.0, 1e-300]) + np.array([0.0, -np.inf]))
    assert prof.epsilon(0.1) == math.inf
    assert prof.epsilon(0.6) == 0.0
    assert prof.delta(math.inf) == pytest.approx(0.5)


# AUDIT.md 2.4 known answers, on the worst templates of AUDIT.md 2.1 ("arm 1" is the audited arm).
KNOWN = [  # b, c, rest of the audited arm, other arm, exact eps at 1e-5
    (19, 4.0, 1.0, 0.75, 1.073),
    (4, 8.0, 0.5, 0.5, 1.620),
    (4, 1.0, 0.0, 0.0, 5.407),
]


@pytest.mark.parametrize("b, c, rest, other, expected", KNOWN)
def test_known_answers_and_claim(b, c, rest, other, expected):
    policy = GaussianTS(b, c)
    horizon = 2 * b + T
    tape, tape_prime = template(b, rest, other)
    d, dp = action_distribution(policy, tape, horizon), action_distribution(policy, tape_prime, horizon)
    prof = PrivacyProfile.between(d, dp)
    eps = prof.epsilon(DELTA)
    assert eps == pytest.approx(expected, abs=5e-4)  # AUDIT.md quotes 3 decimals
    assert prof.delta(eps) <= DELTA < prof.delta(eps - 1e-6)  # the smallest such eps, rounded up
    # arm labels do not matter (ties have probability 0), nor the direction of the flip
    swapped = exact_epsilon(policy, *template(b, rest, other, audited=1, flip=(1.0, 0.0)), horizon, DELTA)
    assert swapped == pytest.approx(eps, abs=1e-9)
    # control: exact <= claim (the schedule's certificate and Ou et al.'s sqrt(T/(c(b+1))))
    claim = Claim.from_schedule(policy.privacy_schedule(horizon, 2), horizon).epsilon_at(DELTA)
    assert eps < claim
    assert claim == pytest.approx(policy.claimed_epsilon(T, 2, DELTA), rel=1e-9)


@pytest.mark.parametrize("b, c, rest, other, expected", [
    (19, 4.0, 0.0, 0.0, 6.21),   # worst template of the bugged policy on the AUDIT.md 2.1 grid
    (4, 8.0, 0.5, 0.25, 4.91),
])
def test_planted_variance_std_bug_exceeds_the_claim(b, c, rest, other, expected):
    policy = GaussianTS(b, c)
    horizon = 2 * b + T
    eps = exact_epsilon(policy, *template(b, rest, other), horizon, DELTA, variance=std_confusion(c))
    assert eps == pytest.approx(expected, abs=5e-3)  # AUDIT.md quotes 2 decimals
    assert eps > policy.claimed_epsilon(T, 2, DELTA)


def test_noise_forgotten_is_infinitely_leaky():
    # AUDIT.md 2.4: greedy on the posterior mean, exact eps = inf
    eps = exact_epsilon(GaussianTS(4, 8.0), *template(4, 0.5, 0.5, rounds=10), 18, DELTA, variance=lambda n: 0 * n)
    assert eps == math.inf


# --- the audit's exact column and the bounds ladder ----------------------------------------------
def test_bounds_ladder_audit_below_exact_below_claim():
    b, c = 4, 8.0
    horizon = 2 * b + T
    tape, tape_prime = template(b, 0.5, 0.5, rounds=b + T)
    res = Audit.policy(GaussianTS(b, c), horizon, 2, neighbours=Neighbours.pair(tape, tape_prime),
                       budget=Budget(40_000), seed=0, exact=True).run()
    assert res.exact is not None and res.exact.epsilon == pytest.approx(1.620, abs=5e-4)
    (_, lb), (_, exact), (_, claim) = bounds_ladder(res)
    assert 0 < lb <= exact <= claim
    rows = res.table("rows")
    assert [r["exact"] for r in rows if r["certificate"].startswith("eps")] == [res.exact.epsilon]
    assert any(n.startswith("exact reference: eps") for n in res.notes)


def test_exact_column_only_on_rows_at_its_delta():
    from privbandit.audit import EpsAtDelta, GDP
    tape, tape_prime = template(2, 0.5, 0.5, rounds=2 + 10)
    res = Audit.policy(GaussianTS(2, 1.0), 14, 2, neighbours=Neighbours.pair(tape, tape_prime),
                       certificates=[GDP(), EpsAtDelta(1e-3), EpsAtDelta(1e-5)], budget=Budget(4_000), seed=0,
                       exact=True).run()
    assert res.exact.delta == 1e-3  # the first eps-at-delta certificate
    cols = {r["certificate"]: r["exact"] for r in res.table("rows")}
    assert cols["eps@delta=0.001"] == res.exact.epsilon
    assert math.isnan(cols["eps@delta=1e-05"]) and math.isnan(cols["mu (GDP)"])
    assert bounds_ladder(res)[2][1] == pytest.approx(res.claim.epsilon_at(1e-3))


def test_exact_column_is_opt_in_and_refused_where_not_honest():
    tape, tape_prime = template(2, 0.5, 0.5, rounds=2 + 10)
    res = Audit.policy(GaussianTS(2, 1.0), 14, 2, neighbours=Neighbours.pair(tape, tape_prime),
                       budget=Budget(2_000), seed=0).run()
    assert res.exact is None and "exact" not in res.table("rows")[0]
    with pytest.raises(ValueError, match="bounds_ladder|exact=True"):
        bounds_ladder(res)
    trace = PolicySampler(GaussianTS(2, 1.0), tape, tape_prime, 14, trace=auto_trace)
    assert exact_reference(trace, DELTA)[0] is None
    mutated = PolicySampler(mutated_gaussian_ts("none", 2, 1.0), tape, tape_prime, 14)
    assert exact_reference(mutated, DELTA)[0] is None
    long = PolicySampler(GaussianTS(0, 1.0), np.zeros((2, 30)), np.eye(2, 30), 30)
    ref, note = exact_reference(long, DELTA)
    assert ref is None and "MAX_ADAPTIVE_ROUNDS" in note


# --- bad input -----------------------------------------------------------------------------------
def test_bad_input_is_refused():
    tape = np.zeros((2, 30))
    policy = GaussianTS(2, 1.0)
    with pytest.raises(ValueError, match="GaussianTS"):
        action_distribution(mutated_gaussian_ts("variance_std", 2, 1.0), tape, 10)
    with pytest.raises(ValueError, match="n_arms must be 2"):
        action_distribution(policy, np.zeros((3, 30)), 10)
    with pytest.raises(ValueError, match="MAX_ADAPTIVE_ROUNDS"):
        action_distribution(policy, np.zeros((2, 40)), 4 + MAX_ADAPTIVE_ROUNDS + 1)
    with pytest.raises(ValueError, match="horizon"):
        action_distribution(policy, tape, 3)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        action_distribution(policy, tape + 2.0, 10)
    with pytest.raises(ValueError, match="pulls per arm"):
        action_distribution(policy, np.zeros((2, 5)), 10)
    with pytest.raises(ValueError, match="variance"):
        action_distribution(policy, tape, 10, variance=lambda n: -n)
    dist = action_distribution(policy, tape, 10)
    assert isinstance(dist, ActionDistribution)
    with pytest.raises(ValueError, match="arm"):
        dist.pulls(2)
    with pytest.raises(ValueError, match="event"):
        dist.prob(np.ones(3, bool))
    with pytest.raises(ValueError, match="log_p"):
        PrivacyProfile(np.log([0.5, 0.4]), np.log([0.5, 0.5]))
    prof = PrivacyProfile.between(dist, dist)
    assert prof.epsilon(DELTA) == 0.0
    with pytest.raises(ValueError, match="delta"):
        prof.epsilon(1.0)
    with pytest.raises(ValueError, match="eps"):
        prof.delta(-1.0)
