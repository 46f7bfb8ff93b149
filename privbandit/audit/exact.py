"""Exact output distributions for small audits: the arm sequence of 2-arm Gaussian Thompson sampling.

AUDIT.md 2.1, 3.2 step 5 and 4 ("known answers"): with a reward tape (the j-th pull of arm k pays
``tape[k, j]``) the state of :class:`~privbandit.policies.gaussian_ts.GaussianTS` after a prefix of
arm choices is just the pull counts, because the sums are prefix sums of the tape. So the law of the
whole arm sequence can be enumerated exactly when the number of adaptive rounds T is small:

* the pre-pull rounds are deterministic (arm i is played b times in a row, as in ``GaussianTS.select``);
* in each adaptive round, with n_i pulls and sum S_i of arm i, the policy draws
  theta_i ~ N(m_i, v_i), m_i = S_i / (n_i + 1), v_i = c / (n_i + 1) (Ou, Cummings & Avella Medina,
  arXiv 2407.14879, Algorithm 2; an arm with n_i = 0 draws N(0, c)), and plays argmax_i theta_i.
  ``argmax`` takes the first maximum, but a tie has probability 0 when v_0 + v_1 > 0, so

      P(arm 0) = P(theta_0 > theta_1) = Phi((m_0 - m_1) / sqrt(v_0 + v_1)).

  The log-probabilities come from ``scipy.special.log_ndtr``, so far tails stay accurate.

Two arms only: with K > 2 arms each choice probability is a (K-1)-dimensional Gaussian orthant
integral that needs numerical integration; this module refuses K != 2 rather than approximate.

From two such distributions (neighbouring tapes D, D') :class:`PrivacyProfile` gives the exact
privacy of the arm-sequence output: the hockey-stick divergence

    delta(eps) = max( sum_s max(0, P(s) - e^eps P'(s)),  sum_s max(0, P'(s) - e^eps P(s)) )

and ``epsilon(delta)``, the smallest eps >= 0 with delta(eps) <= delta (the tight (eps, delta)-DP of
the output between these two inputs; AUDIT.md 2.4, column "exact eps, arm sequence").
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import numpy as np

from accountants._validate import real_array
from scipy import special

from accountants._validate import real_array, shown
from privbandit.audit.certify import EpsAtDelta
from privbandit.audit.runner import PolicySampler
from privbandit.policies.gaussian_ts import GaussianTS

MAX_ADAPTIVE_ROUNDS = 22
"""Largest number of adaptive rounds enumerated: 2**22 (about 4.2 million) sequences, about 0.1 GB of
float64 log-probabilities plus temporaries (AUDIT.md 5: the enumeration does not scale beyond ~2**22)."""

EPSILON_TOLERANCE = 1e-10
"""Width of the final bisection bracket of :meth:`PrivacyProfile.epsilon`. The upper end is reported,
so the returned eps lies in [eps*, eps* + 1e-10] up to float rounding of the tail sums (about 1e-13
relative to the probabilities summed)."""


# --------------------------------------------------------------------------------------------------
# Enumeration
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ActionDistribution:
    """The exact law of the arm sequence of 2-arm :class:`GaussianTS` on one reward tape.

    Sequences are indexed by a packed code: bit t of the code is the arm (0 or 1) played in adaptive
    round t (t = 0 is the first round after the 2b pre-pull rounds). ``log_probs[code]`` is the exact
    log-probability of that sequence and ``arm1_pulls[code]`` the number of adaptive pulls of arm 1.
    """

    b: int
    c: float
    horizon: int
    rounds: int
    log_probs: np.ndarray
    arm1_pulls: np.ndarray
    seconds: float

    @property
    def size(self) -> int:
        """Number of arm sequences, 2**rounds."""
        return int(self.log_probs.size)

    @property
    def probs(self) -> np.ndarray:
        return np.exp(self.log_probs)

    def pulls(self, arm: int) -> np.ndarray:
        """Total pulls N_arm (pre-pulls included) of every sequence, indexed by code."""
        arm = _check_arm(arm)
        adaptive = self.arm1_pulls if arm == 1 else self.rounds - self.arm1_pulls
        return self.b + adaptive.astype(np.int64)

    def pull_count_pmf(self, arm: int) -> np.ndarray:
        """P(N_arm = k) for k = 0 .. horizon (zero below b and above b + rounds)."""
        return np.bincount(self.pulls(arm), weights=self.probs, minlength=self.horizon + 1)

    def prob(self, event) -> float:
        """P(event) for a boolean mask over the codes (e.g. ``dist.pulls(0) <= 6``)."""
        return math.exp(self.log_prob_event(event))

    def log_prob_event(self, event) -> float:
        """log P(event), by log-sum-exp so that far-tail events keep their digits."""
        mask = np.asarray(event)
        if mask.dtype != bool or mask.shape != self.log_probs.shape:
            raise ValueError(f"event must be a boolean mask of shape {self.log_probs.shape}, got "
                             f"{mask.dtype} {mask.shape}")
        if not mask.any():
            return -math.inf
        return float(special.logsumexp(self.log_probs[mask]))

    def codes(self, actions) -> np.ndarray:
        """Packed codes of observed arm sequences (n, horizon); -1 where the pre-pull rounds do not
        match the policy's deterministic pre-pulls or an arm is not 0/1."""
        actions = np.asarray(actions)
        if actions.ndim != 2 or actions.shape[1] != self.horizon:
            raise ValueError(f"actions must have shape (n, horizon={self.horizon}), got {actions.shape}")
        pre = 2 * self.b
        expected_pre = np.repeat(np.arange(2), self.b)
        adaptive = actions[:, pre:].astype(np.int64)
        ok = np.all(actions[:, :pre] == expected_pre, axis=1) & np.all((adaptive == 0) | (adaptive == 1), axis=1)
        codes = (adaptive << np.arange(self.rounds, dtype=np.int64)).sum(axis=1)
        return np.where(ok, codes, -1)

    def log_prob(self, actions) -> np.ndarray:
        """Exact log-probability of each observed arm sequence (AUDIT.md 3.1, ``log_prob_actions``);
        -inf for sequences the policy cannot produce."""
        codes = self.codes(actions)
        return np.where(codes >= 0, self.log_probs[np.maximum(codes, 0)], -np.inf)

    def sequences(self, codes=None) -> np.ndarray:
        """Full arm sequences (n, horizon) as int8 for the given codes (default: all of them)."""
        codes = np.arange(self.size, dtype=np.int64) if codes is None else np.asarray(codes, dtype=np.int64)
        if codes.size and (codes.min() < 0 or codes.max() >= self.size):
            raise ValueError(f"codes must lie in [0, {self.size}), got range [{codes.min()}, {codes.max()}]")
        out = np.empty((codes.size, self.horizon), dtype=np.int8)
        out[:, :2 * self.b] = np.repeat(np.arange(2, dtype=np.int8), self.b)
        out[:, 2 * self.b:] = (codes[:, None] >> np.arange(self.rounds, dtype=np.int64)) & 1
        return out


def action_distribution(policy: GaussianTS, tape, horizon: int, *,
                        variance: Callable[[np.ndarray], np.ndarray] | None = None) -> ActionDistribution:
    """Enumerate every arm sequence of ``policy`` (2-arm GaussianTS) on ``tape`` over ``horizon`` rounds.

    ``tape[k, j]`` is the reward of the j-th pull of arm k, in [0, 1] (clip first, as the engine and
    :func:`~privbandit.audit.runner.run_policy` do). The adaptive rounds T = horizon - 2b must not
    exceed :data:`MAX_ADAPTIVE_ROUNDS`.

    ``variance`` (tests only): the sampling variance of theta for an arm with n pulls, as a function of
    the array n. Default ``c / (n + 1)``, the policy's own (Ou et al. Algorithm 2). It exists so that a
    *planted* bug (e.g. sigma^2 = c/(n+1)^2, AUDIT.md 4 #3) can be evaluated exactly and honestly,
    instead of pretending that a mutated subclass is the correct policy.
    """
    started = time.perf_counter()
    b, c, tape, rounds = _check_inputs(policy, tape, horizon)
    if variance is None:
        def variance(n):
            return c / (n + 1.0)
    elif not callable(variance):
        raise ValueError(f"variance must be callable as variance(n) -> array, or None, got {shown(variance)}")
    log_p0, log_p1 = _choice_log_probs(tape, b, rounds, variance)
    log_probs, arm1 = _enumerate(log_p0, log_p1, rounds)
    return ActionDistribution(b, c, int(horizon), rounds, log_probs, arm1, time.perf_counter() - started)


def _check_arm(arm) -> int:
    if isinstance(arm, bool) or not isinstance(arm, (int, np.integer)) or arm not in (0, 1):
        raise ValueError(f"arm must be 0 or 1 (two arms), got {shown(arm)}")
    return int(arm)


def _check_inputs(policy, tape, horizon) -> tuple[int, float, np.ndarray, int]:
    # Exactly GaussianTS: a subclass may change select/update, and the model below would then be the
    # law of a different policy. Planted bugs are modelled with ``variance=`` instead.
    if type(policy) is not GaussianTS:
        raise ValueError(f"policy must be a GaussianTS instance (the only policy with an exact enumerator; "
                         f"subclasses are refused), got {type(policy).__name__}")
    tape = real_array("tape", tape, bools=True)
    if tape.ndim != 2 or tape.shape[0] != 2:
        raise ValueError(f"tape must have shape (2, pulls): n_arms must be 2 (with K > 2 arms each choice "
                         f"probability is a Gaussian orthant integral that needs numerical integration, "
                         f"which is not implemented), got shape {tape.shape}")
    if not np.all(np.isfinite(tape)) or np.any(tape < 0) or np.any(tape > 1):
        raise ValueError("tape must hold finite rewards in [0, 1] (clip it first, as the engine does)")
    b = policy.b
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < max(2 * b, 1):
        raise ValueError(f"horizon must be a whole number >= max(2b, 1) = {max(2 * b, 1)}, got {shown(horizon)}")
    rounds = int(horizon) - 2 * b
    if rounds > MAX_ADAPTIVE_ROUNDS:
        raise ValueError(f"horizon - 2b (adaptive rounds) must be <= MAX_ADAPTIVE_ROUNDS = {MAX_ADAPTIVE_ROUNDS} "
                         f"(2**{MAX_ADAPTIVE_ROUNDS} sequences), got horizon={horizon}, b={b}: {rounds} rounds")
    if tape.shape[1] < b + rounds:
        raise ValueError(f"tape must hold at least b + (horizon - 2b) = {b + rounds} pulls per arm (an arm "
                         f"may be pulled in every adaptive round), got {tape.shape[1]}")
    return b, policy.c, tape, rounds


def _choice_log_probs(tape: np.ndarray, b: int, rounds: int, variance) -> tuple[np.ndarray, np.ndarray]:
    """log P(arm 0) and log P(arm 1) in adaptive round t after k1 adaptive pulls of arm 1, shape
    (rounds, rounds) indexed [t, k1] (entries with k1 > t are unused).

    State: n_0 = b + t - k1, n_1 = b + k1 pulls; S_i = the sum of the first n_i tape entries of arm i
    (the policy adds rewards in pull order, i.e. a prefix sum of the tape).
    """
    cum = np.concatenate([np.zeros((2, 1)), np.cumsum(tape, axis=1)], axis=1)
    t, k1 = np.meshgrid(np.arange(rounds), np.arange(rounds), indexing="ij")
    k1 = np.minimum(k1, t)  # unused cells: keep the indices valid
    n0, n1 = b + t - k1, b + k1
    m0, m1 = cum[0, n0] / (n0 + 1.0), cum[1, n1] / (n1 + 1.0)
    v = np.asarray(variance(n0.astype(float)), float) + np.asarray(variance(n1.astype(float)), float)
    if np.any(~np.isfinite(v)) or np.any(v < 0):
        raise ValueError("variance(n) must return finite values >= 0")
    diff = m0 - m1
    with np.errstate(divide="ignore", invalid="ignore"):
        z = diff / np.sqrt(v)
    # v = 0 (no noise at all): theta = m, and argmax takes the first maximum, so arm 0 wins ties.
    z = np.where(v > 0, z, np.where(diff >= 0, np.inf, -np.inf))
    return special.log_ndtr(z), special.log_ndtr(-z)


def _enumerate(log_p0: np.ndarray, log_p1: np.ndarray, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """Double the arrays round by round: round t appends the arm as bit t, so after the loop the
    array index *is* the packed code (first half: arm 0 in round t; second half: arm 1)."""
    log_probs = np.zeros(1)
    arm1 = np.zeros(1, dtype=np.int8)
    for t in range(rounds):
        log_probs = np.concatenate([log_probs + log_p0[t, arm1], log_probs + log_p1[t, arm1]])
        arm1 = np.concatenate([arm1, arm1 + 1])
    return log_probs, arm1


# --------------------------------------------------------------------------------------------------
# Exact privacy of the output between two inputs
# --------------------------------------------------------------------------------------------------
class _OneWay:
    """delta(eps) = sum_s max(0, P(s) - e^eps Q(s)) in O(log n) per eps.

    Sort the outputs by the privacy loss L(s) = ln P(s) - ln Q(s), largest first; then
    delta(eps) = P(L > eps) - e^eps Q(L > eps), two tail sums read off cumulative sums.
    """

    def __init__(self, log_p: np.ndarray, log_q: np.ndarray):
        keep = log_p > -np.inf  # outputs impossible under P contribute nothing
        lp, lq = log_p[keep], log_q[keep]
        with np.errstate(invalid="ignore"):
            loss = lp - lq  # +inf where Q(s) = 0
        order = np.argsort(-loss)  # ties in the loss may come in any order: the tail sums at eps are equal
        self.neg_loss = -loss[order]  # ascending
        self.p_tail = np.concatenate([[0.0], np.cumsum(np.exp(lp[order]))])
        self.q_tail = np.concatenate([[0.0], np.cumsum(np.exp(lq[order]))])
        finite = np.isfinite(loss)
        self.max_finite_loss = float(loss[finite].max()) if finite.any() else -math.inf
        self.infinite_mass = float(np.exp(lp[~finite]).sum()) if (~finite).any() else 0.0

    def delta(self, eps: float) -> float:
        k = int(np.searchsorted(self.neg_loss, -eps, side="left"))  # number of outputs with L > eps
        return max(0.0, float(self.p_tail[k] - math.exp(eps) * self.q_tail[k]))

    def epsilon(self, delta: float) -> float:
        if self.infinite_mass > delta:
            return math.inf  # outputs impossible under Q carry more than delta
        if self.delta(0.0) <= delta:
            return 0.0
        hi = self.max_finite_loss  # delta(hi) = infinite_mass <= delta
        if delta == 0.0:
            return hi  # pure DP: the largest privacy loss
        lo = 0.0
        # delta(eps) is non-increasing: bisect, keep delta(lo) > delta >= delta(hi), report hi (upward)
        while hi - lo > EPSILON_TOLERANCE:
            mid = 0.5 * (lo + hi)
            if self.delta(mid) > delta:
                lo = mid
            else:
                hi = mid
        return hi


class PrivacyProfile:
    """Exact (eps, delta) profile of an output between two inputs, from the log-probabilities of every
    output under each (aligned arrays over the same outputs), e.g. two :class:`ActionDistribution`.

    ``delta(eps)`` is the larger hockey-stick divergence of the two directions; ``epsilon(delta)`` the
    smallest eps >= 0 with ``delta(eps) <= delta`` (bisection to :data:`EPSILON_TOLERANCE`, rounded up).
    """

    def __init__(self, log_p, log_q):
        log_p, log_q = (np.asarray(v, dtype=float).ravel() for v in (log_p, log_q))
        if log_p.shape != log_q.shape or log_p.size == 0:
            raise ValueError(f"log_p and log_q must be non-empty and aligned, got {log_p.shape}, {log_q.shape}")
        for name, v in (("log_p", log_p), ("log_q", log_q)):
            total = special.logsumexp(v)
            if np.any(np.isnan(v)) or np.any(v > 0) or not abs(total) < 1e-9:
                raise ValueError(f"{name} must hold log-probabilities (<= 0, no NaN) summing to 1, "
                                 f"got log-sum {total!r}")
        self._ways = (_OneWay(log_p, log_q), _OneWay(log_q, log_p))

    @classmethod
    def between(cls, dist: ActionDistribution, dist_prime: ActionDistribution) -> "PrivacyProfile":
        if dist.size != dist_prime.size or dist.b != dist_prime.b:
            raise ValueError("dist and dist_prime must enumerate the same sequences (same b and horizon)")
        return cls(dist.log_probs, dist_prime.log_probs)

    def delta(self, eps: float) -> float:
        if not (isinstance(eps, (int, float)) and eps >= 0):
            raise ValueError(f"eps must lie in [0, inf), got {shown(eps)}")
        if math.isinf(eps):
            return max(w.infinite_mass for w in self._ways)
        return max(w.delta(float(eps)) for w in self._ways)

    def epsilon(self, delta: float) -> float:
        if not (isinstance(delta, (int, float)) and 0.0 <= delta < 1.0):
            raise ValueError(f"delta must lie in [0, 1), got {shown(delta)}")
        # each direction is monotone, so the smallest eps for the max is the max of the smallest eps
        return max(w.epsilon(float(delta)) for w in self._ways)


def exact_epsilon(policy: GaussianTS, tape, tape_prime, horizon: int, delta: float, *,
                  variance: Callable[[np.ndarray], np.ndarray] | None = None) -> float:
    """Exact eps at ``delta`` of the arm sequence of ``policy`` between the tapes D and D'."""
    d = action_distribution(policy, tape, horizon, variance=variance)
    dp = action_distribution(policy, tape_prime, horizon, variance=variance)
    return PrivacyProfile.between(d, dp).epsilon(delta)


# --------------------------------------------------------------------------------------------------
# The known-answer column of an audit (AUDIT.md 3.2 step 5, 3.6 "bounds ladder")
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ExactReference:
    """The exact eps at ``delta`` of the audited output between the audited pair of tapes."""

    epsilon: float
    delta: float
    rounds: int
    seconds: float
    what: str = "arm sequence"


def exact_reference(sampler, delta: float) -> tuple[ExactReference | None, str]:
    """The exact reference for an audit's chosen sampler, when it is cheap and honest: a
    :class:`~privbandit.audit.runner.PolicySampler` of exactly ``GaussianTS`` on 2 arms, observing the
    actions only, with clipping on and at most :data:`MAX_ADAPTIVE_ROUNDS` adaptive rounds.
    Returns (reference or None, a note saying what was done or why not).
    """
    if not isinstance(sampler, PolicySampler):
        return None, "exact reference: only for policy audits"
    if type(sampler.policy) is not GaussianTS:
        return None, f"exact reference: no enumerator for {type(sampler.policy).__name__} (GaussianTS only)"
    if sampler.trace is not None:
        return None, "exact reference: only for the actions (the trace is continuous)"
    if not sampler.clip:
        return None, "exact reference: only with clipped rewards"
    if sampler.tape.shape[0] != 2:
        return None, f"exact reference: only for 2 arms, got {sampler.tape.shape[0]}"
    rounds = sampler.horizon - 2 * sampler.policy.b
    if rounds > MAX_ADAPTIVE_ROUNDS:
        return None, f"exact reference: {rounds} adaptive rounds > MAX_ADAPTIVE_ROUNDS = {MAX_ADAPTIVE_ROUNDS}"
    started = time.perf_counter()
    eps = exact_epsilon(sampler.policy, np.clip(sampler.tape, 0, 1), np.clip(sampler.tape_prime, 0, 1),
                        sampler.horizon, delta)
    seconds = time.perf_counter() - started
    return (ExactReference(eps, float(delta), rounds, seconds),
            f"exact reference: eps = {eps:.4f} at delta = {delta:g} ({2 ** rounds} sequences, {seconds:.2f} s)")


def bounds_ladder(result) -> list[tuple[str, float]]:
    """AUDIT.md 3.6 "bounds ladder": [(audit eps_lb, .), (exact eps, .), (claimed eps, .)] at the audit's
    eps-at-delta certificate. A correct policy must satisfy audit <= exact <= claim (the first
    inequality at the audit's confidence); needs ``result.exact`` (``Audit(..., exact=True)``)."""
    if getattr(result, "exact", None) is None:
        raise ValueError("result.exact is None: run the audit with exact=True on a supported policy")
    name = EpsAtDelta(result.exact.delta).name  # compare at the delta of the known answer only
    row = next((r for r in result.rows if r.certified.certificate == name), None)
    if row is None:
        raise ValueError(f"result has no {name} row to compare with the exact eps")
    return [("audit eps_lb", float(row.certified.lower_bound)), ("exact eps", float(result.exact.epsilon)),
            ("claimed eps", float(row.claim_value))]
