"""One-run audits (Steinke, Nasr & Jagielski 2023; AUDIT.md 3.5): statistics, canary tapes, planted bugs."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import special

from privbandit.audit import Claim, auto_trace, laplace_release, run_policy, trace_attribute
from privbandit.audit.one_run import (CanaryDesign, action_guesser, choose_guesses, consumption_rounds,
                                      count_correct, design_canaries, epsilon_ceiling, epsilon_lower_bound,
                                      one_run_audit, one_run_mechanism_audit, p_value, rr_accuracy, run_on_tapes,
                                      trace_guesser)
from privbandit.audit.stats import binomial_allowance
from privbandit.policies.gaussian_ts import GaussianTS

from _audit_planted import mutated_gaussian_ts


# --- statistics ----------------------------------------------------------------------------------

def _tail_exact(v, r, q):
    """P[Binomial(r, q) >= v] by direct summation in exact rational arithmetic."""
    q = Fraction(q)
    return float(sum(math.comb(r, j) * q ** j * (1 - q) ** (r - j) for j in range(max(v, 0), r + 1)))


def _p_exact(v, r, eps, delta, m):
    q = Fraction(float(special.expit(eps)))
    f = lambda w: sum(math.comb(r, j) * q ** j * (1 - q) ** (r - j) for j in range(max(w, 0), r + 1))
    term = max(((f(v - i) - f(v)) / i for i in range(1, m + 1)), default=0)
    return min(float(f(v) + 2 * m * Fraction(delta) * term), 1.0)


@pytest.mark.parametrize("v,r,eps", [(0, 10, 1.0), (7, 10, 0.5), (10, 10, 2.0), (30, 40, 1.3), (3, 40, 0.0)])
def test_pure_p_value_is_the_binomial_tail(v, r, eps):
    assert p_value(v, r, eps) == pytest.approx(_tail_exact(v, r, special.expit(eps)), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("v,r,m,eps,delta", [(8, 10, 12, 1.0, 1e-3), (25, 30, 40, 2.0, 1e-4), (5, 5, 5, 0.3, 0.01)])
def test_approx_p_value_matches_the_theorem_formula(v, r, m, eps, delta):
    # Theorem 3.1: f(v) + 2 m delta max_{i in 1..m} (f(v - i) - f(v)) / i, i over the full range 1..m
    assert p_value(v, r, eps, delta=delta, canaries=m) == pytest.approx(_p_exact(v, r, eps, delta, m), rel=1e-9)
    assert p_value(v, r, eps, delta=delta, canaries=m) >= p_value(v, r, eps)


def test_lower_bound_is_the_first_rejection_crossing_and_conservative():
    for v, r in [(80, 100), (45, 50), (600, 1000)]:
        lb = epsilon_lower_bound(v, r, alpha=0.05)
        assert p_value(v, r, lb) <= 0.05 < p_value(v, r, lb + 1e-5)
    # all correct: the closed form logit(alpha^(1/r)), approached from below
    for r in (1, 10, 100, 1000):
        exact = max(float(special.logit(0.05 ** (1 / r))), 0.0)  # r = 1 rejects nothing: 1/2 > alpha
        lb = epsilon_ceiling(r, alpha=0.05)
        assert exact - 1e-6 <= lb <= exact
    assert epsilon_ceiling(100) == pytest.approx(math.log(100 / math.log(20)), abs=0.02)  # ~ ln(r / ln(1/alpha))
    lb_d = epsilon_lower_bound(80, 100, delta=1e-5, canaries=1000)
    assert 0 < lb_d <= epsilon_lower_bound(80, 100)  # delta only weakens the bound
    assert p_value(80, 100, lb_d, delta=1e-5, canaries=1000) <= 0.05


def test_edge_cases():
    assert epsilon_lower_bound(0, 0) == 0.0                   # zero guesses: no evidence
    assert epsilon_lower_bound(0, 50) == 0.0                  # none correct
    assert epsilon_lower_bound(25, 50) == 0.0                 # chance level
    assert p_value(0, 0, 3.0) == 1.0 and p_value(0, 10, 0.0) == 1.0
    assert p_value(10, 10, 0.0) == pytest.approx(2.0 ** -10)
    assert epsilon_lower_bound(1, 1, alpha=0.5) == pytest.approx(0.0, abs=1e-6)  # 1/2 <= alpha only at eps = 0
    assert rr_accuracy(0.0) == 0.5 and rr_accuracy(math.log(3)) == pytest.approx(0.75)
    assert epsilon_lower_bound(10, 10, alpha=0.05) < epsilon_lower_bound(10, 10, alpha=0.2)


@pytest.mark.parametrize("call,match", [
    (lambda: p_value(5, 4, 1.0), "correct must lie in"),
    (lambda: p_value(-1, 4, 1.0), "correct must be a whole number"),
    (lambda: p_value(1, 4, -1.0), "epsilon must lie in"),
    (lambda: p_value(1, 4, 1.0, delta=1.0), "delta must lie in"),
    (lambda: p_value(1, 4, 1.0, delta=1e-5), "canaries"),
    (lambda: p_value(1, 4, 1.0, canaries=3), "canaries must be >= guesses"),
    (lambda: epsilon_lower_bound(1, 4, alpha=0.0), "alpha must lie in"),
    (lambda: design_canaries(2, 10, 30), "beyond the horizon"),
    (lambda: design_canaries(1, 10, 3), "n_arms must be a whole number in \\[2"),
    (lambda: CanaryDesign(np.zeros((2, 5)), [0, 0], [1, 1]), "distinct"),
    (lambda: CanaryDesign(np.full((2, 5), 2.0), [0], [1]), "template must lie in"),
    (lambda: one_run_audit(GaussianTS(), 20, observe="releases"), "observe must be"),
    (lambda: one_run_audit(GaussianTS(), 20, canaries=10, guesses=11), "guesses must lie in"),
    (lambda: action_guesser(0.0), "stay_weight must lie in"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_randomized_response_soundness_self_test():
    # exact eps-randomised response on every canary: W ~ Binomial(r, q(eps)) exactly, so eps_lb > eps
    # may happen in at most ~alpha of independent audits (AUDIT.md 3.3 "soundness self-test")
    eps, m, repeats = 1.0, 300, 200
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2, (repeats, m))
    keep = rng.random((repeats, m)) < rr_accuracy(eps)
    correct = (np.where(keep, bits, 1 - bits) == bits).sum(axis=1)
    lbs = np.array([epsilon_lower_bound(int(v), m) for v in correct])
    assert (lbs > eps).sum() <= binomial_allowance(repeats, 0.05)
    assert np.median(lbs) < eps


# --- guesses and canary tapes ------------------------------------------------------------------------

def test_choose_guesses_abstains_and_breaks_ties_at_random():
    s = np.array([0.0, 2.0, -3.0, np.nan, 1.0, -1.0])
    g = choose_guesses(s, 3, np.random.default_rng(0))
    assert g.tolist()[:4] == [-1, 1, 0, -1]
    assert g[4:].tolist() in ([1, -1], [-1, 0])  # the tie |1| = |-1| for the last slot, broken at random
    picks = {tuple(choose_guesses(s, 3, np.random.default_rng(i))[4:]) for i in range(20)}
    assert picks == {(1, -1), (-1, 0)}
    assert (choose_guesses(s, 10, np.random.default_rng(0)) >= 0).sum() == 4  # 0 and nan always abstain
    assert count_correct(np.array([1, 0, -1]), np.array([1, 1, 0])) == (2, 1)


def test_design_and_consumption():
    d = design_canaries(2, 10, 5, template=[0.5, 0.25], first_pull=2)
    assert d.arms.tolist() == [0, 1, 0, 1, 0] and d.pulls.tolist() == [2, 2, 3, 3, 4]
    tapes = d.tapes(np.array([[1, 0, 1, 1, 0]]))
    assert tapes[0, 0, :5].tolist() == [0.5, 0.5, 1, 1, 0] and tapes[0, 1, 2] == 0 and tapes[0, 1, 5] == 0.25
    actions = np.array([[0, 0, 1, 0, 1, 1, 1, 0, 0, 0]])  # arm 0 pulls in rounds 1, 2, 4, 8, 9, 10
    assert consumption_rounds(actions, d.arms, d.pulls).tolist() == [[4, 6, 8, 7, 9]]
    actions = np.array([[0, 0, 0, 0, 0, 0, 0, 0, 0, 1]])  # arm 1 pulled once: its canaries never paid
    assert consumption_rounds(actions, d.arms, d.pulls).tolist() == [[3, 0, 4, 0, 5]]


def test_runs_on_equal_tapes_match_run_policy():
    tape = np.random.default_rng(0).random((2, 30))
    pol = GaussianTS(b=2, c=1.0)
    a = run_on_tapes(pol, np.repeat(tape[None], 40, axis=0), 30, np.random.default_rng(5))
    b = run_policy(pol, tape, 30, 40, np.random.default_rng(5))
    np.testing.assert_array_equal(a["actions"], b["actions"])


def test_trace_guesser_reads_exact_rewards_from_a_noise_free_index():
    pol = mutated_gaussian_ts("no_noise", b=1, c=4.0)
    d = design_canaries(2, 30, 20, first_pull=1)
    bits = d.draw_bits(3, np.random.default_rng(1))
    out = run_on_tapes(pol, d.tapes(bits), 30, np.random.default_rng(2), trace=auto_trace)
    rounds = consumption_rounds(out["actions"], d.arms, d.pulls)
    scores = trace_guesser()({**out, "rounds": rounds, "arms": d.arms, "pulls": d.pulls})
    sure = scores != 0
    assert sure.sum() >= 20
    assert np.all((scores[sure] > 0) == (bits[sure] == 1))


# --- mechanism level: the known answer ---------------------------------------------------------------

def test_laplace_one_run_known_answer():
    mech, claim = laplace_release(1.0)
    res = one_run_mechanism_audit(mech, claim, canaries=200_000, guesses=100_000, seed=0)
    assert res.verdict == "CONSISTENT" and 0.95 < res.eps_lb <= 1.0, res.summary()
    # Laplace with the scale halved (true eps = 2) against the claim eps = 1
    bad, _ = laplace_release(2.0)
    res = one_run_mechanism_audit(bad, claim, canaries=1000, guesses=500, seed=0)
    assert res.verdict == "VIOLATION" and res.eps_lb > 1.5, res.summary()


def test_laplace_one_run_stays_below_the_true_epsilon_across_seeds():
    mech, claim = laplace_release(1.0)
    lbs = [one_run_mechanism_audit(mech, claim, canaries=4000, guesses=2000, seed=s).eps_lb for s in range(20)]
    assert sum(lb > 1.0 for lb in lbs) <= binomial_allowance(20, 0.05)
    assert max(lbs) <= 1.0 and np.median(lbs) > 0.7


# --- policy level: planted bugs and correct twins ----------------------------------------------------

T = 60  # GaussianTS(b=19, c=4): 22 adaptive rounds; schedule mu = sqrt(22 / 80) = 0.524, eps(1e-5) = 2.10


def test_noise_forgotten_is_flagged_against_a_small_claim_in_one_run():
    res = one_run_audit(mutated_gaussian_ts("no_noise", b=1, c=8.0), 200, canaries=200, guesses=[50, 100],
                        observe="trace", claim=Claim.pure(1.0), seed=0)
    assert res.verdict == "VIOLATION" and res.correct == res.made == 100 and res.eps_lb > 3, res.summary()
    assert res.runs == 1 and res.m == 200 and res.eps_lb <= res.ceiling + 1e-9


def test_noise_forgotten_is_flagged_against_its_own_schedule_with_pooled_runs():
    bug = mutated_gaussian_ts("no_noise", b=19, c=4.0)
    res = one_run_audit(bug, T, canaries=40, guesses=[80, 160], runs=4, observe="trace", seed=0)
    assert res.claim_value == pytest.approx(2.10, abs=0.01)
    assert res.verdict == "VIOLATION" and res.eps_lb > 2.5, res.summary()
    # one run holds only 22 adaptive payouts: the randomised-response ceiling stays below the claim
    one = one_run_audit(bug, T, canaries=40, guesses=20, observe="trace", seed=0)
    assert one.verdict == "CONSISTENT" and one.correct == one.made == 20 and one.eps_lb < one.claim_value


def test_published_empirical_mean_is_flagged():
    res = one_run_audit(mutated_gaussian_ts("leak_mean", b=19, c=4.0), T, canaries=40, guesses=80, runs=4,
                        observe="trace", trace=trace_attribute("public_means"), seed=0)
    assert res.verdict == "VIOLATION", res.summary()


def test_correct_twins_are_not_flagged():
    # the correct twin through the same code path: no power (the noise hides every single canary)
    twin = one_run_audit(mutated_gaussian_ts("none", b=19, c=4.0), T, canaries=40, guesses=[80, 160], runs=4,
                         observe="trace", seed=0)
    assert twin.verdict in ("CONSISTENT", "INCONCLUSIVE") and twin.eps_lb < 1.0, twin.summary()
    # a low-noise Gaussian TS at its own (large) claim: the audit has power and is consistent
    low = one_run_audit(GaussianTS(b=1, c=0.05), 200, canaries=200, guesses=[50, 100], observe="trace", seed=1)
    assert low.verdict == "CONSISTENT" and low.eps_lb > 0, low.summary()
    # actions only, the default guesser
    act = one_run_audit(GaussianTS(b=4, c=8.0), 100, canaries=100, guesses=40, seed=0)
    assert act.verdict != "VIOLATION" and act.observation.startswith("actions")
    assert "never certifies" in low.summary() and set(act.as_dict()) >= {"eps_lb", "guesses", "correct", "m", "seed"}
