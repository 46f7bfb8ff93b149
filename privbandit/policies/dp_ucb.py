"""DP-UCB-Bound, DP-UCB and DP-UCB-Int.

Tossou & Dimitrakakis, "Algorithms for Differentially Private Multi-Armed Bandits", AAAI 2016
(arXiv 1511.08681), Algorithms 1, 2 and 3; restored in ALGORITHMS.md 4.1-4.4.

* :class:`DPUCBBound` (Algorithm 1): one hybrid mechanism (Chan, Shi & Song) per arm at ``epsilon``;
  only the pulled arm's mechanism advances; index s_a/N_a + sqrt(2 ln t/N_a) + nu_a/N_a with nu_a the
  hybrid error bound of "eq. (2.2)" (ALGORITHMS.md 4.1) at gamma = t^-4.
* :class:`DPUCB` (Algorithm 2): every arm's hybrid mechanism receives an item every round (the
  reward for the pulled arm, a "fake" 0 for the others) and the index is plain UCB.
* :class:`DPUCBInt` (Algorithm 3): each arm's empirical mean is released with Laplace noise of
  scale n^(v/2 - 1) (eps_n = n^(-v/2), v in (1, 2)) once per interval and cached in between.

The error bound used by DP-UCB-Bound is the one of the hybrid mechanism actually run
(``HybridMechanism.error_bound``: Chan et al.'s eps/2 split, so twice the paper's printed form,
which assumed Tossou's undivided scales); it is vectorised here and tested to agree with the
mechanism's own method.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np
from scipy import special

from accountants import _validate
from accountants._validate import NOT_NUMBERS, shown
from accountants import best_delta, best_epsilon
from accountants.best import Certificate, default_accountants
from accountants.pld import PLDAccountant
from accountants import GDPAccountant
from accountants.events import NO_EVENT, Composed, DiscreteLaplace, Event, Laplace, PureDP
from privbandit.mechanisms._kernels import _floor_log2, dividing_kernel, kernel, row_helper
from privbandit.mechanisms.hybrid import HybridMechanism
from privbandit.mechanisms.interval import IntervalMean, interval_scales
from privbandit.mechanisms.sampling import GRID
from privbandit.policies.base import (Policy, PolicyRun, PureEpsilonPolicy, check_arms, check_flag, check_positive,
                                     check_unit)
from privbandit.policies.interval_plan import ReleasePlan
from privbandit.schedule import PrivacySchedule

_SQRT8 = math.sqrt(8.0)
_INTP = np.dtype(np.intp)  # positional dtype: numpy's keyword parsing is a per-round cost at R = 1
_LOG4 = math.log(4.0)


def hybrid_error_bound(n: np.ndarray, log4_over_gamma: float | np.ndarray, epsilon: float) -> np.ndarray:
    """Vectorised ``HybridMechanism.error_bound(n, gamma)`` with ``log4_over_gamma`` = ln(4/gamma).

    k = floor(log2 n), tau = n - 2^k, l = ln(4/gamma):
    (2 sqrt 8 / eps) (max(l, sqrt((k+1) l)) + [tau > 0] k max(l, sqrt(popcount(tau) l))); 0 at n = 0.
    """
    n, lg = np.broadcast_arrays(np.asarray(n, dtype=np.int64), np.asarray(log4_over_gamma, dtype=float))
    flat_n, flat_lg = np.ascontiguousarray(n).reshape(-1), np.ascontiguousarray(lg).reshape(-1)
    out = np.empty(flat_n.size)
    hybrid_bounds.at(flat_n.size)(flat_n, flat_lg, 2.0 * _SQRT8 / epsilon, out)
    return out.reshape(n.shape)


@row_helper
def _hybrid_bound(n: int, lg: float, c: float) -> float:
    """:func:`hybrid_error_bound` of one count ``n`` with ``c`` = 2 sqrt 8 / eps: integer k, tau and
    popcount, each factor a float as exact as the integer, the products and sums in the order
    written there (float arithmetic, correctly rounded: the same bits compiled and interpreted)."""
    if n <= 0:
        return 0.0
    k = _floor_log2(n)
    tau = n - (1 << k)
    blocks = float(k if tau > 0 else 0)
    if lg >= float(k + 1):
        # Both maxima are lg itself, bit for bit (DP-UCB-Bound's ln(4/gamma) = ln 4 + 4 ln t always
        # is): popcount(tau) <= k < k + 1 <= lg, so each product p*lg <= lg*lg, and rounding and sqrt
        # are monotone with sqrt(fl(lg*lg)) == lg (or, for lg*lg beyond the float range,
        # sqrt(p*lg) is far below lg): neither sqrt exceeds lg, so neither needs computing.
        return c * (lg + blocks * lg)
    pop = 0
    x = tau
    while x:
        x &= x - 1
        pop += 1
    total = max(lg, math.sqrt(float(k + 1) * lg))
    total = total + blocks * max(lg, math.sqrt(float(pop) * lg))
    return c * total


@kernel
def hybrid_bounds(n: np.ndarray, lg: np.ndarray, c: float, out: np.ndarray) -> None:
    """out[i] = the hybrid error bound of count n[i] at ln(4/gamma) = lg[i] (see :func:`_hybrid_bound`)."""
    for i in range(n.size):
        out[i] = _hybrid_bound(n[i], lg[i], c)


@dividing_kernel
def ucb_index(noisy_sum: np.ndarray, counts: np.ndarray, offset: float, two_log_t: float, lg: float, c: float,
              bound: bool, index: np.ndarray, arms: np.ndarray) -> None:
    """The UCB index (s + offset)/N + sqrt(2 ln t / N) (``two_log_t`` = 2 ln t) of every (replicate,
    arm), plus DP-UCB-Bound's nu/N if ``bound`` (nu the hybrid error bound at ln(4/gamma) = ``lg``,
    ``c`` = 2 sqrt 8 / eps), into ``index`` (C-contiguous, as every array here); ``arms[r]`` its
    argmax over the arms of replicate r, as np.argmax picks it (the first maximum; the first NaN if
    any). ``offset`` is Private-UCB's
    confidence relaxation Gamma (Mishra & Thakurta 2015, Alg. 1 line 10: (r_a + Gamma)/n_a), 0 for
    DP-UCB / DP-UCB-Bound (Tossou & Dimitrakakis 2016, Alg. 1-2: s + 0.0 is s, bit for bit, except
    that -0.0 becomes +0.0, which the positive sqrt term then absorbs).

    An arm with no pull yet (N = 0: only when a caller skips the round robin of rounds 1..K) has
    index +inf, as numpy's (s + Gamma)/0 gave Private-UCB: it is played first. Interpreted, 0 as a
    divisor raised ZeroDivisionError here (a traceback), compiled it gave NaN: the guard makes both
    ways agree.

    Two passes over the flat (R*K,) views: the first, without a data-dependent branch but the
    guard's select, runs in SIMD lanes compiled; the second takes the argmax and, with ``bound``,
    first adds the bound's term to the first pass's value (the same two additions in the same order
    as one expression would make). The bound's term is branchy scalar work either way, so it shares
    the argmax's pass: interpreted, at one replicate, each index is then read once after the first
    pass, not twice (~1 us a round for five arms); folded into the first pass instead, it cost the
    compiled kernel its SIMD pass (at 1000 x 5, measured 59 -> 73 us)."""
    # flat views: ravel of a C-contiguous array (the callers' state and their fresh np.empty) is a
    # view, as reshape(-1) is, numpy and numba alike, at half its cost interpreted (~0.1 us a call)
    s, n_all, out = noisy_sum.ravel(), counts.ravel(), index.ravel()
    for i in range(n_all.size):
        # Python scalars (no-ops compiled): interpreted, numpy scalars' arithmetic costs several times more
        n = float(n_all[i])
        out[i] = (float(s[i]) + offset) / n + math.sqrt(two_log_t / n) if n > 0.0 else math.inf
    k = counts.shape[1]
    if bound:
        for r in range(counts.shape[0]):
            first = r * k
            best, arm = 0.0, 0
            for a in range(k):
                i = first + a
                x = float(out[i])
                m = int(n_all[i])
                if m > 0:
                    x = x + _hybrid_bound(m, lg, c) / m
                    out[i] = x
                # the same choice as the loop below: the first maximum, the first NaN if any
                if a == 0 or x > best or (x != x and best == best):
                    best, arm = x, a
            arms[r] = arm
        return
    for r in range(counts.shape[0]):
        # the flat view (one integer index: interpreted, a tuple index costs more per element)
        first = r * k
        best, arm = float(out[first]), 0
        for a in range(1, k):
            x = float(out[first + a])
            if x > best or (x != x and best == best):
                best, arm = x, a
        arms[r] = arm


@kernel
def one_hot_round(values: np.ndarray, counts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> bool:
    """DP-UCB's items of one round: ``values[r]`` = the reward at the pulled arm ``arms[r]``, 0 (a
    "fake" reward) at the others; the pulled arm's count += 1. Returns False, writing nothing, if
    an arm lies outside [0, K)."""
    for r in range(values.shape[0]):
        if not 0 <= arms[r] < values.shape[1]:
            return False
    for r in range(values.shape[0]):
        for a in range(values.shape[1]):
            values[r, a] = 0.0
        values[r, arms[r]] = rewards[r]
        counts[r, arms[r]] += 1
    return True


class HybridSchedule(PrivacySchedule):
    """Worst record after t rounds: the releases of one hybrid mechanism holding n(t) items.

    ``items(t)`` is the most items one arm's mechanism can hold after t rounds; the events are the
    mechanism's own declared schedule at that count (a record's releases only accumulate, so fewer
    items are dominated).
    """

    def __init__(self, epsilon: float, items, exact: bool = False):
        self.items = items
        self.mechanism = HybridMechanism(1, 1, epsilon=epsilon, rng=np.random.default_rng(0),
                                         ledger=None, exact=exact)

    def events(self, rounds: int) -> Event:
        if rounds <= 0:
            return NO_EVENT
        return self.mechanism.privacy_schedule(self.items(rounds))


class _HybridRun(PolicyRun):
    bound = False  # whether the index adds DP-UCB-Bound's nu/N

    def __init__(self, policy, n_arms, replicates, rng, ledger):
        self.n_arms, self.replicates, self.epsilon = n_arms, replicates, policy.epsilon
        self.hybrid = HybridMechanism(replicates, n_arms, epsilon=policy.epsilon, rng=rng,
                                      ledger=ledger,
                                      name=policy.name + "/hybrid", exact=policy.exact)

    def select(self, t):
        if t <= self.n_arms:
            return np.full(self.replicates, t - 1, dtype=np.intp)
        return self._index(t)[1]

    def index(self, t):
        """The index of every (replicate, arm) in round t > K (every count >= 1)."""
        return self._index(t)[0]

    def _index(self, t):
        # gamma = t^-4 for DP-UCB-Bound: ln(4 / gamma) = ln 4 + 4 ln t (ALGORITHMS.md 4.1-4.2)
        replicates, log_t = self.replicates, math.log(t)
        index, arms = np.empty((replicates, self.n_arms)), np.empty(replicates, _INTP)
        ucb_index.at(replicates)(self.hybrid.noisy_sum, self.counts, 0.0, 2.0 * log_t, _LOG4 + 4.0 * log_t,
                                 2.0 * _SQRT8 / self.epsilon, self.bound, index, arms)
        return index, arms


class _DPUCBBoundRun(_HybridRun):
    bound = True

    @property
    def counts(self) -> np.ndarray:
        """Pulls of every (replicate, arm): the items of the arm's mechanism, which holds the arm's
        rewards and nothing else (the same array, not a copy kept in step)."""
        return self.hybrid.count

    def update(self, t, arms, rewards):
        self.hybrid.insert_pulled(arms, rewards)


class _DPUCBRun(_HybridRun):
    def __init__(self, *args):
        super().__init__(*args)
        self.counts = np.zeros((self.replicates, self.n_arms), dtype=np.int64)  # pulls (the mechanisms hold t)
        self._all = np.ones((self.replicates, self.n_arms), dtype=bool)
        # the round's items, rewritten every round (the mechanism reads them during the insert only)
        self._values = np.zeros((self.replicates, self.n_arms))

    def update(self, t, arms, rewards):
        arms, rewards = np.asarray(arms), np.asarray(rewards, dtype=float)
        if arms.shape != (self.replicates,) or arms.dtype.kind not in "iu" or rewards.shape != arms.shape:
            raise ValueError(f"arms and rewards must be arrays of shape ({self.replicates},), arms of integers; "
                             f"got {arms.dtype} {arms.shape} and {rewards.shape}")
        if not one_hot_round.at(self.replicates)(self._values, self.counts, arms, rewards):
            raise ValueError(f"arms must lie in [0, {self.n_arms}) (the arms), got {arms.min()}..{arms.max()}")
        self.hybrid.insert(self._values, self._all)  # fake zero rewards for the arms not played


class _HybridPolicy(PureEpsilonPolicy):
    claim_source = "Tossou & Dimitrakakis (2016), Theorem 3.1 / Table 3.1.1"


class DPUCBBound(_HybridPolicy):
    """DP-UCB-Bound (Tossou & Dimitrakakis 2016, Algorithm 1).

    ``DPUCBBound(epsilon=1.0, exact=False)``: K hybrid mechanisms at ``epsilon``; arm a's mechanism
    holds only a's rewards. Privacy (Thm 3.1): a reward enters one mechanism only, eps-DP per record
    (parallel composition); the certificate is that mechanism's schedule at n(t) = max(1, t - K + 1).
    """

    name = "dp_ucb_bound"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _DPUCBBoundRun(self, n_arms, replicates, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        check_arms(n_arms, horizon)
        return HybridSchedule(self.epsilon, lambda t: max(1, t - n_arms + 1), self.exact)


class DPUCB(_HybridPolicy):
    """DP-UCB (Tossou & Dimitrakakis 2016, Algorithm 2, "fake zero rewards").

    ``DPUCB(epsilon=1.0, exact=False)``: every round every arm's hybrid mechanism receives an item
    (the reward for the pulled arm, 0 for the others), so each holds t items after t rounds and the
    noise no longer reveals how often an arm was pulled; index s_a/N_a + sqrt(2 ln t / N_a).
    Privacy: eps-DP per record; the certificate is the hybrid schedule at n(t) = t.
    """

    name = "dp_ucb"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _DPUCBRun(self, n_arms, replicates, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        check_arms(n_arms, horizon)
        return HybridSchedule(self.epsilon, lambda t: t, self.exact)


# --------------------------------------------------------------------------------------------------
# DP-UCB-Int


def release_counts(first: int, decay: float, limit: int) -> np.ndarray:
    """Pull counts at which an arm's mean is released, up to ``limit``.

    Interval j (j = 1, 2, ...) is f_j = max(1, ceil(first * j^-decay)); release j happens at
    c_j = f_1 + ... + f_j. ``decay = 0`` is the fixed interval f (releases at f, 2f, ...); ``decay > 0``
    is a decreasing interval series (the paper's Lemma B.1 series is not recovered, ALGORITHMS.md 4.4).
    Laid out from :class:`~privbandit.policies.interval_plan.ReleasePlan`'s arithmetic runs (the
    schedule's own reading of the same counts).
    """
    return ReleasePlan(first, decay).counts(limit)


class DPUCBIntSchedule(PrivacySchedule):
    """Worst record after t rounds: the first record of the arm with the most pulls n(t) is in every
    release of that arm at the counts c_j <= n(t) (each Lap(c_j^(v/2-1)) on a mean of sensitivity
    1/c_j, i.e. eps_j = c_j^(-v/2)); other arms' releases never read it.

    n(t) = ceil(t/K) during the round-robin phase (K c_1 rounds), t - (K - 1) c_1 after it.

    :meth:`epsilon` is every accountant's minimum, as :class:`PrivacySchedule` does; above
    ``exact_limit`` releases the leaves are first grouped, each charged UP to within a ratio
    ``1 + grid`` of its own eps (a Laplace release with a larger eps dominates one with a smaller eps
    under every accountant), so the certificate stays valid -- never smaller than the exact one --
    and costs O(number of groups), read from the release counts' arithmetic runs
    (:class:`~privbandit.policies.interval_plan.ReleasePlan`) at any horizon; there, unless ``accountants`` are named, the PLD accountant (seconds
    per evaluation on hundreds of heterogeneous groups) is skipped: the minimum over the others (pure,
    GDP, advanced = Theorem 3.4's heterogeneous composition, KOV, RDP) is still a valid certificate,
    within a few percent of PLD's (docs/policies_ucb.md).
    """

    exact_limit = 64
    grid = 0.01

    def __init__(self, policy: "DPUCBInt", horizon: int, n_arms: int):
        self.policy, self.horizon, self.n_arms = policy, horizon, n_arms
        self.first = policy.first_interval
        # Fixed interval, float noise: release j is at count j f with eps_j = (j f)^(-v/2) exactly, so
        # nothing per release needs to be stored (budgets at 1e7 rounds in milliseconds).
        self._fixed = policy.decay == 0.0 and not policy.exact
        if self._fixed:
            return
        # the release counts as arithmetic runs (session 18): per-release arrays of the whole horizon took
        # 146-485 s and ~7 GB per certificate at 10^8 rounds with decay > 0, and exact mode's ran out of memory
        # at 10^12; a schedule now reads counts only where it needs them
        self.plan = ReleasePlan(self.first, policy.decay)
        self.mechanism = IntervalMean(1, 1, v=policy.v, rng=np.random.default_rng(0), ledger=None,
                                      exact=policy.exact)

    def _leaf_parts(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(scale, sensitivity) of the releases at ``counts``, as the mechanism draws them: Lap(scale(c)) on a
        mean of sensitivity 1/c (grid-rounded in exact mode)."""
        sampler = self.mechanism.sampler
        # as floats: the same values as the mechanism's int64 counts converted (exact below 2^53), and counts past
        # 2^63 -- certified up to the budget's 10^30 rounds, never reached by a run -- do not overflow
        counts = np.maximum(np.asarray(counts, dtype=float), 1.0)
        scale = np.asarray(sampler.effective_scale(self.mechanism.scale_fn(counts)), dtype=float)
        sens = np.asarray(sampler.effective_sensitivity(1.0 / counts), dtype=float)
        return scale, sens

    def max_items(self, rounds: int) -> int:
        k, f = self.n_arms, self.first
        if rounds <= k * f:
            return -(-rounds // k)
        return rounds - (k - 1) * f

    def _releases(self, rounds: int) -> int:
        if rounds <= 0:
            return 0
        if self._fixed:
            return self.max_items(rounds) // self.first
        return self.plan.releases_upto(self.max_items(rounds))

    def _fixed_eps(self, j: np.ndarray) -> np.ndarray:
        """eps of releases j (1-based) for a fixed interval: sensitivity 1/c over scale c^(v/2-1)."""
        return (np.asarray(j, dtype=float) * self.first) ** (-self.policy.v / 2.0)

    def events(self, rounds: int) -> Event:
        m = self._releases(rounds)
        if m == 0:
            return NO_EVENT
        if self._fixed:
            c = np.arange(1, m + 1, dtype=float) * self.first
            scales = interval_scales(c, self.policy.v)  # (the mechanism's own scales, bit for bit)
            return Composed(tuple(Laplace(float(b), float(1.0 / n)) for b, n in zip(scales, c)))
        scale, sens = self._leaf_parts(self.plan.counts(self.max_items(rounds)))
        if self.policy.exact:  # what the ledger records: the discrete Laplace actually drawn, by its own curves
            return Composed(tuple(DiscreteLaplace(float(b), float(d), grid=GRID) for b, d in zip(scale, sens)))
        return Composed(tuple(Laplace(float(b), float(d)) for b, d in zip(scale, sens)))

    def epsilons(self, rounds: int) -> np.ndarray:
        """The per-release eps_j of the worst record after ``rounds`` rounds (one entry per release)."""
        if self._fixed:
            return self._fixed_eps(np.arange(1, self._releases(rounds) + 1))
        return self.epsilons_upto(self._releases(rounds))

    def grouped_events(self, rounds: int) -> Event:
        """An event dominating :meth:`events` in O(groups): every release charged at least its own eps, at
        most ~1% more, equal charges grouped."""
        m = self._releases(rounds)
        if self._fixed:
            return self._fixed_groups(m)
        if not self.policy.exact:
            return self._count_cells(1, m, (1.0 + self.grid) ** (2.0 / self.policy.v))
        # exact mode: below the count where the grid-rounded sensitivity of the mean bottoms out at one grid
        # step (2^20 pulls) eps_j = u_j / t_j moves with both parts; those at most 2^20 releases are grouped by
        # their own eps, as before session 18; above it u = 1 and eps_j = 1 / t_j, cells of counts as float mode
        small = min(m, self.plan.releases_upto(self._unit_sensitivity_count() - 1))
        parts = [self._level_groups(self.epsilons_upto(small))] if small else []
        if m > small:  # t changes by at most (1 + grid) across a cell of ratio (1 + grid)^(1 / (1 - v/2))
            parts.append(self._count_cells(small + 1, m, (1.0 + self.grid) ** (1.0 / (1.0 - self.policy.v / 2.0))))
        return Composed(tuple(parts))

    def epsilons_upto(self, m: int) -> np.ndarray:
        """eps_j = sensitivity / scale of the first ``m`` releases as drawn (one entry per release)."""
        counts = self.plan.counts(self.plan.count(m)) if m else np.zeros(0, dtype=np.int64)
        scale, sens = self._leaf_parts(counts)
        return sens / scale

    def _unit_sensitivity_count(self) -> int:
        """The least pull count whose mean the exact-mode sampler certifies at sensitivity one grid step
        (its grid-rounded 1/c never increases with c): found by evaluating the sampler, not assumed."""
        lo, hi = 0, 1  # sens(hi) == GRID once found; lo: a count whose sens is larger (0: none yet)
        while self._leaf_parts(np.array([hi]))[1][0] > GRID:
            lo, hi = hi, 2 * hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._leaf_parts(np.array([mid]))[1][0] > GRID:
                lo = mid
            else:
                hi = mid
        return hi

    def _level_groups(self, eps: np.ndarray) -> Event:
        """Exact mode's releases grouped by eps_j rounded up to the grid ratio (contiguous runs of equal level:
        eps_j falls with c_j below 2^20 pulls, so levels come in runs; a recurring level forms another group),
        each charged at the largest member's eps as pure releases (valid for the discrete Laplace, whose Renyi
        and PLD curves are slightly worse than the continuous one's at the same eps). O(n), no sort."""
        ratio = math.log1p(self.grid)
        level = np.ceil(np.log(eps) / ratio - 1e-9)
        starts = np.flatnonzero(np.r_[True, level[1:] != level[:-1]])
        sizes = np.diff(np.r_[starts, eps.size])
        tops = np.maximum.reduceat(eps, starts)
        # never below any member: the float quotient u/t is within half an ulp of the exact one, so the top
        # rounded up by 1e-12 covers it (session 18: the bare top could read an ulp below u/t)
        return Composed(tuple(PureDP(max(math.exp(lv * ratio), float(top)) * (1 + 1e-12)) * int(n)
                              for lv, n, top in zip(level[starts], sizes, tops)))

    def _count_cells(self, j_first: int, m: int, ratio: float) -> Event:
        """Releases ``j_first``..``m`` in cells of pull counts [c0, c0 ratio) (each cell's size read from the
        plan's arithmetic runs, never one by one), every release in a cell charged at a bound of the cell's
        largest eps: O(log(c_m / c_first) / log ratio + 1 / (ratio - 1)) groups at any horizon (session 18).

        Float mode: eps(c) = c^(-v/2) falls with c, so a cell's largest is its first release's, charged at
        c0^(-v/2) (1 + 1e-12) -- the margin covers the few ulps between that and the drawn (1/c) / c^(v/2-1),
        as :meth:`_fixed_groups` does -- within (1 + grid) of every member's at ratio (1 + grid)^(2/v).

        Exact mode draws t Z on the grid for a statistic of grid sensitivity u, exactly (u/t)-DP; u (the
        grid-rounded 1/c) and t (the grid-rounded c^(v/2-1)) never increase with c, so every member's u/t is at
        most u(c0) / t(c_last), charged as pure releases at the least float at or above that fraction."""
        if j_first > m:
            return NO_EVENT
        plan, v = self.plan, self.policy.v
        firsts, lasts, sizes, j0 = [], [], [], j_first
        while j0 <= m:
            c0 = plan.count(j0)
            end = max(c0 + 1, math.ceil(c0 * ratio))  # the cell's counts: [c0, end)
            j1 = min(m, plan.releases_upto(end - 1)) + 1  # first release beyond the cell
            firsts.append(c0), lasts.append(plan.count(j1 - 1)), sizes.append(j1 - j0)
            j0 = j1
        if not self.policy.exact:
            return Composed(tuple(Laplace(1.0 / (math.pow(c0, -v / 2.0) * (1 + 1e-12)), 1.0) * n
                                  for c0, n in zip(firsts, sizes)))
        # (one sampler call for every cell's two ends: u at its first count, t at its last)
        scale, sens = self._leaf_parts(np.array(firsts + lasts, dtype=float))
        k = len(firsts)
        return Composed(tuple(PureDP.at_least(Fraction(round(u / GRID), round(t / GRID))) * n  # (grid multiples)
                              for u, t, n in zip(sens[:k].tolist(), scale[k:].tolist(), sizes)))

    def _fixed_groups(self, m: int) -> Event:
        """Fixed interval: releases j in [j0, j1) with j1 = ceil(j0 (1 + grid)^(2/v)) differ in eps by
        at most the grid ratio; each range is charged at its largest eps, eps_{j0} (eps_j falls with
        j), so the grouped event dominates the exact one. O(log m) groups, no per-release arrays."""
        if m == 0:
            return NO_EVENT
        ratio = (1.0 + self.grid) ** (2.0 / self.policy.v)
        parts, j0 = [], 1
        while j0 <= m:
            j1 = min(m + 1, max(j0 + 1, math.ceil(j0 * ratio)))
            e = float(self._fixed_eps(j0)) * (1 + 1e-12)  # the group's largest eps, rounded up
            parts.append(Laplace(1.0 / e, 1.0) * (j1 - j0))
            j0 = j1
        return Composed(tuple(parts))

    def mu(self, rounds: int) -> float:
        """GDP mu of the worst record; above ``exact_limit`` releases from :meth:`grouped_events` (it
        dominates the exact event, so its mu is an upper bound) -- O(groups), not one Laplace object
        per release, so a 10^12-round budget does not run out of memory."""
        if self._releases(rounds) <= self.exact_limit:
            return super().mu(rounds)
        acc = GDPAccountant()
        ev = self.grouped_events(rounds)
        return acc.compose(ev).mu() if acc.supports(ev) else math.inf

    def epsilon(self, rounds: int, delta: float, accountants=None) -> Certificate:
        if self._releases(rounds) <= self.exact_limit:
            return best_epsilon(self.events(rounds), delta, accountants)
        if accountants is None:
            accountants = [f for f in default_accountants() if f is not PLDAccountant]
        return best_epsilon(self.grouped_events(rounds), delta, accountants)

    def delta(self, rounds: int, epsilon: float, accountants=None) -> Certificate:
        """Certified delta at ``epsilon``, grouped above ``exact_limit`` releases as :meth:`epsilon` is
        (the grouped event dominates the exact one, so its delta is an upper bound). The inherited
        query built one Laplace per release and ran the PLD on them: 26 s at 10^5 rounds with
        interval 1, minutes and 10^6 objects at 10^6 (session 14)."""
        if self._releases(rounds) <= self.exact_limit:
            return best_delta(self.events(rounds), epsilon, accountants)
        if accountants is None:
            accountants = [f for f in default_accountants() if f is not PLDAccountant]
        return best_delta(self.grouped_events(rounds), epsilon, accountants)


class _DPUCBIntRun(PolicyRun):
    def __init__(self, policy: "DPUCBInt", n_arms, replicates, horizon, rng, ledger):
        self.n_arms, self.replicates = n_arms, replicates
        self.first = policy.first_interval
        self.counts = np.zeros((replicates, n_arms), dtype=np.int64)
        self.offsets = np.arange(replicates) * n_arms  # flat index of (replicate, arm 0)
        fixed = policy.decay == 0.0
        self.interval = IntervalMean(replicates, n_arms, v=policy.v, rng=rng,
                                     ledger=ledger,
                                     interval=self.first if fixed else None, name="dp_ucb_int/interval",
                                     exact=policy.exact)
        self.due = None
        if not fixed:
            self.due = np.zeros(horizon + 2, dtype=bool)
            self.due[release_counts(self.first, policy.decay, horizon + 1)] = True

    def select(self, t):
        if t <= self.n_arms * self.first:  # round robin until every arm holds c_1 pulls
            return np.full(self.replicates, (t - 1) % self.n_arms, dtype=np.intp)
        index = self.interval.noisy_mean + np.sqrt(2.0 * math.log(t) / self.counts)
        return np.argmax(index, axis=1)

    def update(self, t, arms, rewards):
        self.interval.insert_pulled(arms, rewards)  # fixed interval: releases at multiples of f itself
        flat = self.offsets + arms
        self.counts.ravel()[flat] += 1
        if self.due is not None:
            due = self.due[self.counts.ravel()[flat]]
            if due.any():
                release = np.zeros(self.counts.shape, dtype=bool)
                release.ravel()[flat[due]] = True
                self.interval.release(release)


class DPUCBInt(Policy):
    """DP-UCB-Int (Tossou & Dimitrakakis 2016, Algorithm 3; Lemma 3.1, Theorem 3.4, Corollary 3.1).

    ``DPUCBInt(epsilon=None, v=1.1, interval=None, decay=0.0, exact=False, *, rate=None, delta=1e-6)``.
    The first interval f is set by exactly one of (default: ``epsilon=1.0``):

    * ``epsilon`` (> 0): the privacy the policy certifies, as for every policy -- f is the smallest
      fixed interval whose paper-form bound (:meth:`paper_bound`, Corollary 3.2 as ALGORITHMS.md 4.4
      inverts it) at ``delta`` is <= epsilon, so the certificate at ``delta`` is <= ``epsilon`` for
      every horizon (fixed interval only: ``decay`` must be 0);
    * ``rate`` (> 0): the paper's own interval parameter (Algorithm 3's "epsilon", whose reciprocal
      is the interval): f = ceil(1/rate), as the public reproduction (Ralami1859, IndexDPUCBINT.m)
      does. ``rate`` is NOT a privacy level -- ``rate=1`` certifies about 13 at delta = 1e-6 over
      10^4 rounds -- which is why it no longer goes by ``epsilon``;
    * ``interval`` (a whole number >= 1): f itself.

    Further:

    * ``v`` in (1, 2): the k-th release of an arm, at pull count n, adds Lap(n^(v/2-1)) to the
      arm's empirical mean (sensitivity 1/n): eps_n = n^(-v/2), square-summable since v > 1, noise
      shrinking since v < 2 (ALGORITHMS.md 4.4 reconstruction);
    * ``decay`` >= 0: interval j is max(1, ceil(f j^-decay)); 0 is the fixed interval, > 0 a
      decreasing series (the paper's Lemma B.1 series is not recovered).

    Rounds 1..K f play the arms round robin; the first release of every arm is at pull f; then
    argmax_a mu~_a + sqrt(2 ln t / N_a), with mu~_a the last (cached) release -- re-used, never
    re-drawn, between releases -- and the UCB bonus recomputed every round (post-processing).

    Privacy: the certificate composes, for the worst record (an arm's first), every release of its
    arm so far, by every accountant (heterogeneous advanced composition as Theorem 3.4, KOV, RDP,
    PLD, ...). The paper's closed form (:meth:`paper_bound`) is reported as :meth:`claimed_epsilon`.
    """

    name = "dp_ucb_int"
    private = True

    def __init__(self, epsilon: float | None = None, v: float = 1.1, interval: int | None = None,
                 decay: float = 0.0, exact: bool = False, *, rate: float | None = None, delta: float = 1e-6):
        given = [name for name, value in (("epsilon", epsilon), ("rate", rate), ("interval", interval))
                 if value is not None]
        if len(given) > 1:
            raise ValueError(f"give one of epsilon (the certified privacy), rate (1/interval) or interval, "
                             f"got {' and '.join(given)}")
        # converted first, then checked (session 16): checking ``1 < v < 2`` on the object and then storing
        # float(v) let a float subclass whose __float__ lies through as v = nan
        try:
            self.v = _validate.finite("v", v)
        except ValueError:
            self.v = math.nan
        if not 1 < self.v < 2:
            raise ValueError(f"v must be a real number in (1, 2), got {shown(v)}")
        try:  # (math.isfinite of an int beyond the floats was an OverflowError)
            self.decay = _validate.nonnegative("decay", decay)
        except ValueError:
            raise ValueError(f"decay must be a real number in [0, inf), got {shown(decay)}") from None
        self.exact = check_flag("exact", exact)
        self.delta = check_unit("delta", delta)
        self.epsilon = self.rate = None
        if interval is not None:
            # pull counts are int64: a longer interval would overflow them (and never release anyway)
            # (count reads an int subclass's exact value: int() called its __int__, which may lie)
            n = _validate.count("interval", interval) if isinstance(interval, numbers.Integral) else 0
            if isinstance(interval, NOT_NUMBERS) or not 1 <= n <= _MAX_INTERVAL:
                raise ValueError(f"interval must be a whole number in [1, {_MAX_INTERVAL:.0e}], got {shown(interval)}")
            self.interval = n
        elif rate is not None:
            try:
                self.rate = check_positive("rate", rate)
            except ValueError:
                self.rate = math.nan
            # 1/rate is the interval, a whole number of pulls in [1, _MAX_INTERVAL]
            if not 1.0 / _MAX_INTERVAL <= self.rate <= 1.0:
                raise ValueError(f"rate must lie in [{1.0 / _MAX_INTERVAL:.0e}, 1] (the reciprocal of the interval), "
                                 f"got {shown(rate)}")
            self.interval = math.ceil(1.0 / self.rate - 1e-12)
        else:
            self.epsilon = check_positive("epsilon", 1.0 if epsilon is None else epsilon)
            if self.decay != 0.0:
                raise ValueError("epsilon calibrates a fixed interval (decay = 0); with decay > 0 give interval "
                                 f"or rate instead, got decay={decay!r}")
            self.interval = _calibrated_interval(self.epsilon, self.delta, self.v)

    @property
    def first_interval(self) -> int:
        return self.interval

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _DPUCBIntRun(self, n_arms, replicates, horizon, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        check_arms(n_arms, horizon)
        return DPUCBIntSchedule(self, horizon, n_arms)

    def series_sum(self) -> float:
        """sum_j c_j^(-v) over the infinite release series (zeta(v) f^-v for the fixed interval)."""
        f = self.first_interval
        if self.decay == 0.0:
            return float(special.zeta(self.v) * f ** -self.v)
        # the series becomes "every count" after its last interval > 1: tail by the Hurwitz zeta
        step_one = _first_unit_step(f, self.decay)
        head = release_counts(f, self.decay, step_one)
        return float(np.sum(head.astype(float) ** -self.v) + special.zeta(self.v, step_one + 1))

    def paper_bound(self, delta: float) -> float:
        """ALGORITHMS.md 4.4's closed form standing in for Corollary 3.1 (valid for every horizon):
        sqrt(2 ln(1/delta) S) + 2 S with S = sum_j c_j^-v (S = zeta(v) f^-v for the fixed interval)."""
        delta = check_unit("delta", delta)
        s = self.series_sum()
        return math.sqrt(2.0 * math.log(1.0 / delta) * s) + 2.0 * s

    @classmethod
    def calibrated(cls, target_epsilon: float, delta: float, v: float = 1.1, exact: bool = False) -> "DPUCBInt":
        """The fixed-interval DP-UCB-Int certifying ``target_epsilon`` at ``delta`` for every horizon:
        the same as ``DPUCBInt(epsilon=target_epsilon, delta=delta, v=v, exact=exact)``."""
        return cls(epsilon=check_positive("target_epsilon", target_epsilon), delta=delta, v=v, exact=exact)

    def claimed_epsilon(self, horizon, n_arms, delta):
        """The paper-form (Corollary 3.1 style) bound at delta' = ``delta``; see :meth:`paper_bound`."""
        return self.paper_bound(delta)

    def params(self):
        how = ({"epsilon": self.epsilon, "delta": self.delta} if self.epsilon is not None
               else {"rate": self.rate} if self.rate is not None else {})
        return {"policy": self.name, **how, "v": self.v, "interval": self.first_interval,
                "decay": self.decay, "exact": self.exact}


def _paper_series_bound(f: int, v: float, delta: float) -> float:
    """:meth:`DPUCBInt.paper_bound` of the fixed interval ``f``: sqrt(2 ln(1/delta) S) + 2 S with
    S = zeta(v) f^-v."""
    s = float(special.zeta(v) * float(f) ** -v)
    return math.sqrt(2.0 * math.log(1.0 / delta) * s) + 2.0 * s


_MAX_INTERVAL = 1e18  # pulls between releases: beyond any horizon a run can hold


def _calibrated_interval(target: float, delta: float, v: float) -> int:
    """The smallest fixed interval f with paper bound <= ``target`` at ``delta`` (ALGORITHMS.md 4.4's
    inversion standing in for Corollary 3.2): solve sqrt(ln S) + 2 S = target for S in closed form, then
    search the whole numbers around the implied f for the least one whose evaluated bound meets the
    target and whose predecessor's does not (every candidate checked by re-evaluation).

    Session 16: sqrt(S) was (-sqrt(ln) + sqrt(ln + 8 target)) / 4, which cancels when 8 target << ln
    (relative error ~1e-16 ln / target: 2.3e-11 at target 1e-5, delta 1e-10), and the walk started one
    below that f and stepped up only -- 17 of 520 (target, delta, v) returned an f whose f - 1 met the
    bound too (up to ~1.5e5 pulls too long at f ~ 3.4e13). Now the cancellation-free form
    2 target / (sqrt(ln) + sqrt(ln + 8 target)), and a gallop + bisection to the boundary in both
    directions."""
    ln = 2.0 * math.log(1.0 / delta)
    y = 2.0 * target / (math.sqrt(ln) + math.sqrt(ln + 8.0 * target))  # sqrt(S) solving sqrt(ln S) + 2 S = target
    with np.errstate(divide="ignore", over="ignore"):
        start = (special.zeta(v) / np.float64(y) ** 2) ** (1.0 / v)
    if not start < _MAX_INTERVAL:  # an epsilon ~1e-300 (y^2 underflows): no release would ever happen
        raise ValueError(f"epsilon must be large enough that DP-UCB-Int's calibrated interval stays below "
                         f"{_MAX_INTERVAL:.0e} pulls at delta={delta:g}, v={v:g}; got epsilon={target!r}")

    def feasible(f: int) -> bool:
        return _paper_series_bound(f, v, delta) <= target

    f = max(1, math.floor(start))
    if feasible(f):  # gallop down to an infeasible f (or to 1, feasible: the answer)
        good, step = f, 1
        while good > 1 and feasible(max(1, good - step)):
            good, step = max(1, good - step), 2 * step
        if good == 1:
            return 1
        bad = max(1, good - step)
    else:  # gallop up to a feasible f
        bad, step = f, 1
        while not feasible(bad + step):
            bad, step = bad + step, 2 * step
        good = bad + step
    while good - bad > 1:  # invariant: bad infeasible, good feasible
        mid = (good + bad) // 2
        if feasible(mid):
            good = mid
        else:
            bad = mid
    return good


def _first_unit_step(first: int, decay: float) -> int:
    """The count c_J of the last release whose interval exceeds 1 (0 if none)."""
    c, j = 0, 1
    while True:
        step = max(1, math.ceil(first * j ** -decay - 1e-12))
        if step == 1:
            return c
        c += step
        j += 1
