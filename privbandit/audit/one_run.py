"""One-run privacy auditing with canary rewards (AUDIT.md 3.5).

Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run", NeurIPS 2023
(arXiv:2305.08846). Instead of running a policy millions of times on one neighbouring pair, randomise
``m`` *canary* entries of the input independently -- each a fair coin S_i in {0, 1} -- run once, and
let a guesser read the output and guess some of the coins, abstaining on the rest. If the algorithm
is (eps, delta)-DP with respect to changing any one coordinate of S, the number W of correct guesses
among at most r guesses satisfies the paper's Theorem 3.1:

* delta = 0: W is stochastically dominated by Binomial(r, e^eps / (1 + e^eps)), so
  ``p(eps) = P[Binomial(r, q(eps)) >= v]`` is a p-value for the hypothesis "eps-DP" given v correct
  guesses (q(eps) is the accuracy of eps-randomised response);
* delta > 0: ``P[W >= v] <= f(v) + 2 m delta max_{i in 1..m} (f(v - i) - f(v)) / i`` with
  ``f(v) = P[Binomial(r, q(eps)) >= v]`` (the p-value computed by the paper's Appendix D code).

The largest eps rejected at level alpha is a (1 - alpha)-confidence lower bound ``eps_lb`` on the true
eps (:func:`epsilon_lower_bound`).

**Bandits (the tape model, AUDIT.md 2.1).** The input is a reward tape: the j-th pull of arm k pays
``tape[k, j]``. Two tapes differing in one entry are neighbours, so every tape entry is one record and
flipping a canary entry between 0 and 1 is a replace-one neighbour inside the declared range [0, 1].
The policy's per-record guarantee therefore covers every canary coordinate, whatever the policy does
with the others: the bound holds for adaptive policies, with no group-privacy cost, because each
canary is its own neighbouring coordinate. It requires that every canary is a *distinct* tape entry
(:class:`CanaryDesign` enforces it) and that the claim is a per-record claim in the tape model.

**Validity does not depend on the guesser.** Any function of the output may choose the guesses and
the abstentions (Theorem 3.1 only needs ``||T||_1 <= r`` for a number r fixed in advance), so the
scores here are heuristics that affect power only. In particular the guesser may abstain on canaries
the output shows were never consumed (their arm was not pulled often enough), and canaries consumed
after a policy stopped using rewards simply carry no signal: they dilute power, never validity.

**Looseness (AUDIT.md 3.5 and 5).** The statistic is a randomised-response test: even with every one
of r guesses correct, ``eps_lb = logit(alpha^(1/r)) ~ ln(r / ln(1/alpha))`` (:func:`epsilon_ceiling`;
about 3.5 for r = 100 and 5.8 for r = 1000 at alpha = 0.05). A bandit run of T rounds consumes at
most T canaries, and canaries interfere: one arm sequence of T choices must encode all of them, so
an arm-sequence guesser is weak for correct noisy policies. Use it as a smoke test of expensive
policies (a gross bug, e.g. noise forgotten, stands out against a small claim) -- never as evidence
of privacy. A clean one-run audit says nothing.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import numpy as np
from scipy import special
from scipy import stats as _sps

from accountants._validate import shown
from privbandit.audit import stats as _stats
from privbandit.audit.certify import Claim
from privbandit.audit.runner import auto_trace, run_policy
from privbandit.policies.base import Policy

# --------------------------------------------------------------------------------------------------
# Statistics (Steinke, Nasr & Jagielski 2023, Theorem 3.1 and Appendix D)
# --------------------------------------------------------------------------------------------------


def _whole(name: str, value, low: int = 0) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)) \
            or not float(value).is_integer() or value < low:
        raise ValueError(f"{name} must be a whole number in [{low}, inf), got {shown(value)}")
    return int(value)


def _epsilon(value, name: str = "epsilon") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not (value >= 0) or math.isnan(value):
        raise ValueError(f"{name} must lie in [0, inf], got {shown(value)}")
    return float(value)


def _delta(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not (0.0 <= value < 1.0):
        raise ValueError(f"delta must lie in [0, 1), got {shown(value)}")
    return float(value)


def _check_counts(correct, guesses, canaries, delta):
    r = _whole("guesses", guesses)
    v = _whole("correct", correct)
    if v > r:
        raise ValueError(f"correct must lie in [0, guesses] = [0, {r}], got {v}")
    if delta > 0 and canaries is None:
        raise ValueError("canaries (the number m of randomised coordinates) is required when delta > 0")
    m = None
    if canaries is not None:
        m = _whole("canaries", canaries)
        if m < r:
            raise ValueError(f"canaries must be >= guesses ({r}): at most one guess per canary, got {m}")
    return v, r, m


def rr_accuracy(epsilon: float) -> float:
    """e^eps / (1 + e^eps): the best accuracy of guessing one fair bit from an eps-DP release
    (eps-randomised response), the success probability of Theorem 3.1's dominating binomial."""
    return float(special.expit(_epsilon(epsilon)))


def _tail(v: int, r: int, q: float) -> float:
    """f(v) = P[Binomial(r, q) >= v] (1 for v <= 0)."""
    if v <= 0:
        return 1.0
    return float(_sps.binom.sf(v - 1, r, q))


def _delta_term(v: int, r: int, q: float) -> float:
    """max_{i >= 1} (f(v - i) - f(v)) / i = max_i P[v - i <= W~ < v] / i, W~ ~ Binomial(r, q).

    Only i <= v matters: for i > v the numerator stops growing (W~ >= 0) while i does."""
    if v <= 0:
        return 0.0
    pmf = _sps.binom.pmf(np.arange(v - 1, -1, -1), r, q)  # P[W~ = v-1], P[W~ = v-2], ..., P[W~ = 0]
    window = np.cumsum(pmf)  # window[i-1] = P[v - i <= W~ <= v - 1]
    return float(np.max(window / np.arange(1, v + 1)))


def p_value(correct: int, guesses: int, epsilon: float, *, delta: float = 0.0, canaries: int | None = None) -> float:
    """The p-value of "the algorithm is (eps, delta)-DP" after ``correct`` of ``guesses`` guesses.

    Steinke, Nasr & Jagielski (2023), Theorem 3.1: with f(v) = P[Binomial(r, e^eps/(1+e^eps)) >= v],
    P[W >= v] <= f(v) + 2 m delta max_{i=1..m} (f(v-i) - f(v)) / i, where m = ``canaries`` is the
    number of randomised coordinates (needed only when delta > 0). For delta = 0 this is the exact
    binomial tail (W is stochastically dominated by the binomial). Capped at 1.
    """
    eps = _epsilon(epsilon)
    delta = _delta(delta)
    v, r, m = _check_counts(correct, guesses, canaries, delta)
    q = float(special.expit(eps))
    p = _tail(v, r, q)
    if delta > 0:
        p += 2.0 * m * delta * _delta_term(v, r, q)
    return min(p, 1.0)


def epsilon_lower_bound(correct: int, guesses: int, *, alpha: float = 0.05, delta: float = 0.0,
                        canaries: int | None = None, tol: float = 1e-7, max_epsilon: float = 60.0) -> float:
    """The largest eps rejected at level ``alpha``: a (1 - alpha)-confidence lower bound on eps.

    The result is the first crossing ``inf{eps : p(eps) > alpha}``, returned as the lower end of a
    bisection bracket (to ``tol``) on which p <= alpha holds, so it errs toward a smaller bound
    (AUDIT.md 3.3). The first crossing is the right target even if p were not monotone: (eps, delta)-DP
    implies (eps', delta)-DP for every eps' >= eps, so ``max_{e <= eps} p(e)`` is itself a p-value for
    "eps-DP", and its rejection region is exactly [0, first crossing).

    For delta = 0 the p-value is the binomial tail, increasing in eps (q(eps) increases), so bisection
    finds the crossing exactly. For delta > 0 the delta term is not proven monotone; a 400-point grid
    locates the first crossing before the bisection (p was monotone in every case checked, but a
    wiggle narrower than the grid step would be missed). 0 when not even eps = 0 is rejected (no power).
    """
    alpha = _stats._check_alpha(alpha)
    delta = _delta(delta)
    v, r, m = _check_counts(correct, guesses, canaries, delta)
    if not (isinstance(tol, (int, float)) and 0 < tol < 1):
        raise ValueError(f"tol must lie in (0, 1), got {shown(tol)}")

    def rejected(eps):
        return p_value(v, r, eps, delta=delta, canaries=m) <= alpha

    if r == 0 or not rejected(0.0):
        return 0.0
    hi = 1.0
    while rejected(hi):
        if hi >= max_epsilon:
            return float(max_epsilon)  # beyond any useful claim; reported as the cap
        hi = min(2.0 * hi, max_epsilon)
    lo = 0.0
    if delta > 0:
        grid = np.linspace(0.0, hi, 401)
        for a, b in zip(grid[:-1], grid[1:]):
            if not rejected(b):
                lo, hi = a, b
                break
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if rejected(mid):
            lo = mid
        else:
            hi = mid
    return float(lo)


def epsilon_ceiling(guesses: int, *, alpha: float = 0.05, delta: float = 0.0, canaries: int | None = None) -> float:
    """The randomised-response ceiling: eps_lb when all ``guesses`` guesses are correct.

    For delta = 0 it is logit(alpha^(1/r)) ~ ln(r / ln(1/alpha)): no one-run audit with r guesses can
    certify more, whatever the true eps (AUDIT.md 3.5, "looseness")."""
    return epsilon_lower_bound(guesses, guesses, alpha=alpha, delta=delta, canaries=canaries)


# --------------------------------------------------------------------------------------------------
# Guesses with abstention
# --------------------------------------------------------------------------------------------------


def choose_guesses(scores, k: int, rng: np.random.Generator) -> np.ndarray:
    """Guess the ``k`` canaries with the largest |score|; abstain on the rest (the paper's abstention).

    ``scores``: positive means "the canary is 1", negative "0", |score| is the confidence; 0 and
    non-finite scores always abstain, so at most k guesses are made. Ties in |score| are broken by
    ``rng`` (which must be independent of the canary bits). Returns an int8 array: 1, 0, or -1
    (abstain), in the shape of ``scores``.
    """
    s = np.asarray(scores, dtype=float)
    k = _whole("k", k)
    flat = s.ravel()
    conf = np.where(np.isfinite(flat), np.abs(flat), 0.0)
    out = np.full(flat.shape, -1, dtype=np.int8)
    usable = np.flatnonzero(conf > 0)
    if k > 0 and usable.size:
        # a random permutation first, then a stable sort: equal confidences are ordered at random
        perm = usable[rng.permutation(usable.size)]
        order = perm[np.argsort(-conf[perm], kind="stable")][:k]
        out[order] = (flat[order] > 0).astype(np.int8)
    return out.reshape(s.shape)


def count_correct(guesses, bits) -> tuple[int, int]:
    """(guesses made, correct guesses) of a guess array from :func:`choose_guesses`."""
    g = np.asarray(guesses)
    b = np.asarray(bits)
    if g.shape != b.shape:
        raise ValueError(f"guesses and bits must have the same shape, got {g.shape} and {b.shape}")
    made = g >= 0
    return int(made.sum()), int((g[made] == b[made]).sum())


# --------------------------------------------------------------------------------------------------
# Canary tapes
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CanaryDesign:
    """Where the canaries sit on a reward tape, and what the other entries pay.

    ``template``: (arms, pulls) tape of the non-canary entries. ``arms``/``pulls``: the canary
    entries (distinct, so each canary is its own record). :meth:`tapes` inserts one row of bits per
    independent run.
    """

    template: np.ndarray
    arms: np.ndarray
    pulls: np.ndarray

    def __post_init__(self):
        t = np.asarray(self.template, dtype=float)
        if t.ndim != 2 or t.shape[0] < 2 or t.shape[1] < 1:
            raise ValueError(f"template must have shape (arms >= 2, pulls >= 1), got {t.shape}")
        if np.any(~np.isfinite(t)) or np.any(t < 0) or np.any(t > 1):
            raise ValueError("template must lie in [0, 1] (the declared reward range)")
        a = np.asarray(self.arms, dtype=np.int64)
        p = np.asarray(self.pulls, dtype=np.int64)
        if a.ndim != 1 or a.shape != p.shape or a.size == 0:
            raise ValueError("arms and pulls must be 1-d arrays of the same length >= 1")
        if np.any(a < 0) or np.any(a >= t.shape[0]) or np.any(p < 0) or np.any(p >= t.shape[1]):
            raise ValueError(f"canary entries must lie inside the tape of shape {t.shape}")
        if np.unique(a * t.shape[1] + p).size != a.size:
            raise ValueError("canary entries must be distinct: each canary must be its own record")
        object.__setattr__(self, "template", t)
        object.__setattr__(self, "arms", a)
        object.__setattr__(self, "pulls", p)

    @property
    def m(self) -> int:
        return int(self.arms.size)

    def draw_bits(self, runs: int, rng: np.random.Generator) -> np.ndarray:
        """(runs, m) independent fair coins in {0, 1}."""
        return rng.integers(0, 2, size=(_whole("runs", runs, 1), self.m), dtype=np.int8)

    def tapes(self, bits) -> np.ndarray:
        """(runs, arms, pulls) tapes: the template with each run's canary bits inserted."""
        bits = np.asarray(bits)
        if bits.ndim != 2 or bits.shape[1] != self.m or np.any((bits != 0) & (bits != 1)):
            raise ValueError(f"bits must have shape (runs, {self.m}) with values in {{0, 1}}")
        out = np.repeat(self.template[None], bits.shape[0], axis=0)
        out[:, self.arms, self.pulls] = bits
        return out


def design_canaries(n_arms: int, horizon: int, m: int, *, template: float | Sequence[float] | np.ndarray = 0.5,
                    first_pull: int = 0, stride: int = 1) -> CanaryDesign:
    """m canaries spread over arms and pull positions: canary i sits on arm i mod K at pull
    ``first_pull + (i // K) * stride``; every other entry pays ``template`` (a constant, one value per
    arm, or a full (K, horizon) tape).

    Set ``first_pull`` past the pre-pull phase (e.g. ``b`` for GaussianTS): pre-pull rewards are all
    summed before anything is released, so one output must encode all of them and per-canary guesses
    there are nearly coin flips.
    """
    k = _whole("n_arms", n_arms, 2)
    horizon = _whole("horizon", horizon, k)
    m = _whole("m", m, 1)
    first_pull = _whole("first_pull", first_pull)
    stride = _whole("stride", stride, 1)
    per_arm = -(-m // k)
    last = first_pull + (per_arm - 1) * stride
    if last >= horizon:
        room = k * max(0, (horizon - 1 - first_pull) // stride + 1)  # canaries that fit in the tape
        raise ValueError(f"m = {m} canaries need pull positions up to {last} on each of {k} arms, beyond the "
                         f"horizon ({horizon} pulls per arm): m must lie in [1, {room}]")
    tmpl = np.asarray(template, dtype=float)
    if tmpl.ndim == 0:
        tmpl = np.full((k, horizon), float(tmpl))
    elif tmpl.ndim == 1:
        if tmpl.size != k:
            raise ValueError(f"template must be a constant, {k} per-arm values or a ({k}, {horizon}) tape")
        tmpl = np.repeat(tmpl[:, None], horizon, axis=1)
    elif tmpl.shape != (k, horizon):
        raise ValueError(f"template must be a constant, {k} per-arm values or a ({k}, {horizon}) tape")
    i = np.arange(m)
    return CanaryDesign(tmpl, i % k, first_pull + (i // k) * stride)


def consumption_rounds(actions: np.ndarray, arms: np.ndarray, pulls: np.ndarray) -> np.ndarray:
    """(runs, m) round (1-based) at which each canary was paid out, 0 if its arm was not pulled
    ``pulls + 1`` times within the horizon (such a canary never reached the policy)."""
    actions = np.asarray(actions)
    runs = actions.shape[0]
    out = np.zeros((runs, arms.size), dtype=np.int64)
    for k in np.unique(arms):
        idx = np.flatnonzero(arms == k)
        hit = actions == k
        count = np.cumsum(hit, axis=1)  # pulls of arm k so far, including this round
        for c in idx:
            # the (pulls[c] + 1)-th pull of arm k: the first round whose running count reaches it
            reached = hit & (count == pulls[c] + 1)
            any_ = reached.any(axis=1)
            out[any_, c] = reached[any_].argmax(axis=1) + 1
    return out


# --------------------------------------------------------------------------------------------------
# Guessers: output -> score per canary (positive: 1, negative: 0, |score|: confidence)
# --------------------------------------------------------------------------------------------------


def action_guesser(stay_weight: float = 0.25) -> Callable:
    """Win-stay / lose-shift on the arm sequence (black-box).

    An index policy that just paid a canary from arm k raises arm k's index after a 1 and lowers it
    after a 0, so switching away right after the payout is strong evidence of a 0 (for greedy it is
    proof) while staying is weak evidence of a 1. Score: -1 on a switch, +``stay_weight`` on a stay,
    0 (abstain) for canaries not consumed or paid in the last round.
    """
    if not (isinstance(stay_weight, (int, float)) and 0 < stay_weight <= 1):
        raise ValueError(f"stay_weight must lie in (0, 1], got {shown(stay_weight)}")

    def guesser(obs: dict) -> np.ndarray:
        actions, rounds, arms = obs["actions"], obs["rounds"], obs["arms"]
        horizon = actions.shape[1]
        scores = np.zeros(rounds.shape)
        r, c = np.nonzero((rounds > 0) & (rounds < horizon))
        nxt = actions[r, rounds[r, c]]  # column t (0-based) is round t + 1, the next round
        scores[r, c] = np.where(nxt == arms[c], float(stay_weight), -1.0)
        return scores

    guesser.description = f"win-stay {stay_weight:g} / lose-shift 1"
    return guesser


def trace_guesser() -> Callable:
    """Change of the paid arm's released value across the payout (needs ``observe="trace"``).

    A policy that releases a noisy index per arm per round (Gaussian TS: theta ~ N(S/(n+1), c/(n+1))
    through ``posterior.release``) moves arm k's index up after a reward above its running mean and
    down after one below it; for a noise-free index the sign is exact. Score:
    theta_k(round t + 1) - theta_k(round t) for a canary paid in round t. The trace must hold K
    values per round for a contiguous final block of rounds (what :func:`auto_trace` records for
    policies that release in every round after a pre-pull phase); canaries without a release on both
    sides of their payout get 0 (abstain).
    """

    def guesser(obs: dict) -> np.ndarray:
        trace, rounds, arms, k = obs["trace"], obs["rounds"], obs["arms"], obs["n_arms"]
        if trace is None:
            raise ValueError("trace_guesser needs the trace: run with observe='trace'")
        horizon = obs["actions"].shape[1]
        if trace.shape[1] % k:
            raise ValueError(f"trace_guesser needs {k} released values per round, got {trace.shape[1]} columns")
        n_rel = trace.shape[1] // k
        if n_rel > horizon:
            raise ValueError(f"the trace holds {n_rel} releases for a horizon of {horizon} rounds")
        theta = trace.reshape(trace.shape[0], n_rel, k)
        first = horizon - n_rel + 1  # round of the first release
        scores = np.zeros(rounds.shape)
        r, c = np.nonzero((rounds >= first) & (rounds < horizon))
        t = rounds[r, c] - first  # index of the release made in the payout round (before the payout)
        scores[r, c] = theta[r, t + 1, arms[c]] - theta[r, t, arms[c]]
        return scores

    guesser.description = "index change across the payout"
    return guesser


# --------------------------------------------------------------------------------------------------
# Runs on per-run tapes
# --------------------------------------------------------------------------------------------------


def run_on_tapes(policy: Policy, tapes: np.ndarray, horizon: int, rng: np.random.Generator, *,
                 trace: Callable | None = None, clip: bool = True) -> dict:
    """One run of ``policy`` on each tape of ``tapes`` (runs, arms, pulls), lock-stepped: replicate i
    reads its own tape ``tapes[i]`` (independent runs with independent canary bits, in one call).
    :func:`privbandit.audit.runner.run_policy` with a tape per run; with identical tapes it reproduces
    the shared-tape runs bit for bit (tested). Rewards are clipped to [0, 1] as the engine does.
    """
    if not isinstance(policy, Policy):
        raise ValueError(f"policy must be a privbandit Policy, got {type(policy).__name__}")
    tapes = np.asarray(tapes, dtype=float)
    if tapes.ndim != 3:
        raise ValueError(f"tapes must have shape (runs, arms >= 2, pulls), got {tapes.shape}")
    horizon = _whole("horizon", horizon, 1)
    return run_policy(policy, tapes, horizon, tapes.shape[0], rng, trace=trace, clip=clip)


# --------------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class OneRunResult:
    """Outcome of a one-run audit (the one-run counterpart of :class:`privbandit.audit.AuditResult`).

    ``eps_lb`` is certified at ``1 - alpha`` (alpha Bonferroni-split over the ``guess_budgets`` tried);
    ``guesses`` is the budget r of the best row, ``made`` the guesses actually made (<= r), ``correct``
    the correct ones; ``m`` canaries per run over ``runs`` independent runs (``m * runs`` coordinates
    in the statistic), ``consumed`` of which reached the policy.
    """

    name: str
    claim: Claim
    claim_value: float
    delta: float
    alpha: float
    eps_lb: float
    guesses: int
    made: int
    correct: int
    m: int
    runs: int
    consumed: int
    seed: object
    seconds: float
    verdict: str
    observation: str
    rows: list[dict]
    notes: list[str]

    @property
    def ceiling(self) -> float:
        """The randomised-response ceiling for this guess budget (eps_lb if every guess were right)."""
        return epsilon_ceiling(self.guesses, alpha=self.alpha / max(len(self.rows), 1), delta=self.delta,
                               canaries=self.m * self.runs)

    def summary(self) -> str:
        conf = f"{100 * (1 - self.alpha):g}% confidence"
        what = (f"{self.correct}/{self.made} correct guesses (budget r={self.guesses}) on {self.m * self.runs} "
                f"canaries ({self.consumed} consumed, {self.runs} run(s)), {self.observation}, seed {self.seed!r}")
        claim = f"claimed eps {self.claim_value:.4g} at delta={self.delta:g}"
        if self.verdict == "VIOLATION":
            return f"VIOLATION: one-run eps_lb = {self.eps_lb:.4g} > {claim}, {conf}; {what}"
        if self.verdict == "CONSISTENT":
            return (f"CONSISTENT (one-run eps_lb {self.eps_lb:.4g} <= {claim}; ceiling {self.ceiling:.3g}); "
                    f"{what} -- an audit refutes, it never certifies")
        return f"INCONCLUSIVE: one-run eps_lb = 0 at {conf} (no power); {what}"

    def as_dict(self) -> dict:
        return {"name": self.name, "claim": self.claim.describe(), "claimed_eps": self.claim_value,
                "delta": self.delta, "alpha": self.alpha, "eps_lb": self.eps_lb, "guesses": self.guesses,
                "made": self.made, "correct": self.correct, "m": self.m, "runs": self.runs,
                "consumed": self.consumed, "seed": self.seed, "seconds": self.seconds, "verdict": self.verdict,
                "observation": self.observation}


def _guess_budgets(guesses, total: int) -> list[int]:
    ks = [guesses] if isinstance(guesses, (int, np.integer)) and not isinstance(guesses, bool) else list(guesses)
    if not ks:
        raise ValueError("guesses must be a whole number or a non-empty sequence of them")
    out = []
    for k in ks:
        k = _whole("guesses", k, 1)
        if k > total:
            raise ValueError(f"guesses must lie in [1, {total}] (the number of canaries), got {k}")
        out.append(k)
    return out


def _claim_value(claim: Claim, delta: float | None) -> tuple[float, float]:
    if not isinstance(claim, Claim):
        raise ValueError(f"claim must be a privbandit.audit.Claim, got {type(claim).__name__}")
    if delta is None:
        delta = 0.0 if (claim.epsilon is not None and claim.epsilon_of_delta is None) else 1e-5
    delta = _delta(delta)
    return claim.epsilon_at(delta), delta


def _verdict(eps_lb: float, claim_value: float) -> str:
    # the verdict words of privbandit.audit.core.VERDICTS; never "private"
    if eps_lb > claim_value:
        return "VIOLATION"
    return "CONSISTENT" if eps_lb > 0 else "INCONCLUSIVE"


def _evaluate(scores, bits, budgets, alpha, delta, rng):
    """Guess, count and bound for every budget in ``budgets`` (alpha split by Bonferroni)."""
    a = alpha / len(budgets)
    total = bits.size
    rows = []
    for k in budgets:
        g = choose_guesses(scores, k, rng)
        made, correct = count_correct(g, bits)
        lb = epsilon_lower_bound(correct, k, alpha=a, delta=delta, canaries=total)
        rows.append({"guesses": k, "made": made, "correct": correct, "eps_lb": lb, "alpha": a})
    return rows


def _finish(name, claim, claim_value, delta, alpha, rows, m, runs, consumed, seed, started, observation, notes):
    best = max(rows, key=lambda row: row["eps_lb"])
    return OneRunResult(name, claim, float(claim_value), delta, alpha, best["eps_lb"], best["guesses"],
                        best["made"], best["correct"], m, runs, consumed, seed, time.perf_counter() - started,
                        _verdict(best["eps_lb"], claim_value), observation, rows, notes)


# --------------------------------------------------------------------------------------------------
# Audits
# --------------------------------------------------------------------------------------------------


def one_run_audit(policy: Policy, horizon: int, n_arms: int = 2, *, canaries: int = 100,
                  guesses: int | Sequence[int] = 50, runs: int = 1, observe: str = "actions",
                  guesser: Callable | None = None, trace: Callable | None = None, claim: Claim | None = None,
                  delta: float | None = None, alpha: float = 0.05, template=0.5, first_pull: int | None = None,
                  stride: int = 1, clip: bool = True, seed=0, name: str | None = None) -> OneRunResult:
    """One-run audit of a bandit policy with ``canaries`` fair-coin rewards per run (AUDIT.md 3.5).

    * Canaries: :func:`design_canaries` (``template``, ``first_pull``, ``stride``); ``first_pull``
      defaults to the policy's pre-pulls per arm (its attribute ``b``) or 0.
    * ``runs`` independent runs, each with its *own* fresh canary bits (one vectorised call). The
      statistic pools them: a canary of run i influences only run i, so each of the
      ``canaries * runs`` coordinates is still one record under the per-record claim and Theorem 3.1
      applies to the pooled guesses. (Re-running on the *same* bits would not be allowed: that is
      the composition of the runs, a weaker claim.) ``runs=1`` is the one-run audit proper.
    * ``observe``: ``"actions"`` (default guesser :func:`action_guesser`) or ``"trace"`` (the
      releases the accountant pays for, recorded by ``trace``, default :func:`auto_trace`; default
      guesser :func:`trace_guesser`). A ``guesser(obs) -> (runs, canaries) scores`` receives
      ``obs = {"actions", "trace", "rounds", "arms", "pulls", "n_arms"}`` (``rounds``: payout round
      of each canary, 0 if never paid).
    * ``guesses``: the guess budget r, fixed before the run (Theorem 3.1 needs ||T||_1 <= r); a
      sequence tries each budget at alpha / len (Bonferroni) and reports the best.
    * ``claim``: default the policy's own schedule after ``horizon`` rounds; compared at ``delta``
      (default 0 for a pure claim, else 1e-5, where the delta-version of the bound is used).
    """
    started = time.perf_counter()
    if not isinstance(policy, Policy):
        raise ValueError(f"policy must be a privbandit Policy, got {type(policy).__name__}")
    if observe not in ("actions", "trace"):
        raise ValueError(f"observe must be 'actions' or 'trace', got {shown(observe)}")
    runs = _whole("runs", runs, 1)
    if claim is None:
        if not getattr(policy, "private", False):
            raise ValueError(f"{policy!r} is not private: pass the claim to test explicitly")
        claim = Claim.from_schedule(policy.privacy_schedule(horizon, n_arms), horizon,
                                    label=f"{policy!r} schedule, T={horizon}")
    claim_value, delta = _claim_value(claim, delta)
    alpha = _stats._check_alpha(alpha)
    if first_pull is None:
        first_pull = int(getattr(policy, "b", 0) or 0)
    design = design_canaries(n_arms, horizon, canaries, template=template, first_pull=first_pull, stride=stride)
    budgets = _guess_budgets(guesses, design.m * runs)
    if observe == "trace" and trace is None:
        trace = auto_trace
    guesser = guesser or (trace_guesser() if observe == "trace" else action_guesser())
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    # separate streams: the secret bits, the policy's noise, and the tie-breaking of the guesser
    s_bits, s_policy, s_guess = (np.random.default_rng(s) for s in seq.spawn(3))
    bits = design.draw_bits(runs, s_bits)
    out = run_on_tapes(policy, design.tapes(bits), horizon, s_policy, trace=trace if observe == "trace" else None,
                       clip=clip)
    rounds = consumption_rounds(out["actions"], design.arms, design.pulls)
    obs = {"actions": out["actions"], "trace": out["trace"], "rounds": rounds, "arms": design.arms,
           "pulls": design.pulls, "n_arms": n_arms}
    scores = np.asarray(guesser(obs), dtype=float)
    if scores.shape != bits.shape:
        raise ValueError(f"the guesser must return scores of shape {bits.shape}, got {scores.shape}")
    rows = _evaluate(scores, bits, budgets, alpha, delta, s_guess)
    notes = [f"{design.m} canaries per run on arms {sorted(set(design.arms.tolist()))}, pull positions "
             f"{int(design.pulls.min())}..{int(design.pulls.max())} (first_pull={first_pull}, stride={stride})"]
    observation = observe + f" ({getattr(guesser, 'description', 'custom guesser')})"
    return _finish(name or repr(policy), claim, claim_value, delta, alpha, rows, design.m, runs,
                   int((rounds > 0).sum()), seed, started, observation, notes)


def one_run_mechanism_audit(mechanism: Callable, claim: Claim, *, canaries: int = 10_000,
                            guesses: int | Sequence[int] = 1000, x: float = 0.0, x_prime: float = 1.0,
                            delta: float | None = None, alpha: float = 0.05, seed=0,
                            name: str = "mechanism") -> OneRunResult:
    """One-run audit of ``mechanism(x, n, rng)`` (the protocol of :mod:`privbandit.audit.mechanisms`).

    Canary i is one record holding ``x`` or ``x_prime`` (a fair coin); its statistic is released once,
    with its own independent noise, so each canary influences only its own release and the claim
    covers every coordinate. Score: the release minus the midpoint (x + x_prime) / 2, oriented so that
    positive means ``x_prime``; the top-``guesses`` |scores| are guessed. For the Laplace release at
    eps every release outside [x, x_prime] has likelihood ratio exactly e^eps, so the guessed
    canaries behave like eps-randomised response and the bound approaches the true eps from below as
    the number of canaries grows (the known-answer check of the one-run statistic).
    """
    started = time.perf_counter()
    if not callable(mechanism):
        raise ValueError(f"mechanism must be callable as mechanism(x, n, rng), got {shown(mechanism)}")
    m = _whole("canaries", canaries, 1)
    budgets = _guess_budgets(guesses, m)
    claim_value, delta = _claim_value(claim, delta)
    alpha = _stats._check_alpha(alpha)
    if not (math.isfinite(x) and math.isfinite(x_prime) and x != x_prime):
        raise ValueError(f"x and x_prime must be distinct finite values, got {shown(x)} and {x_prime!r}")
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    s_bits, s_mech, s_guess = (np.random.default_rng(s) for s in seq.spawn(3))
    bits = s_bits.integers(0, 2, size=(1, m), dtype=np.int8)
    released = np.empty(m)
    for value, mask in ((x, bits[0] == 0), (x_prime, bits[0] == 1)):
        n = int(mask.sum())
        if n:
            out = np.asarray(mechanism(value, n, s_mech), dtype=float)
            if out.shape != (n,):
                raise ValueError(f"mechanism must return shape (n,) = ({n},), got {out.shape}")
            released[mask] = out
    scores = ((released - 0.5 * (x + x_prime)) * np.sign(x_prime - x))[None, :]
    rows = _evaluate(scores, bits, budgets, alpha, delta, s_guess)
    return _finish(name, claim, claim_value, delta, alpha, rows, m, 1, m, seed, started, "value", [])
