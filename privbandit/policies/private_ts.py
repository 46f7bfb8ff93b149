"""Private-TS: differentially private Thompson sampling with tree-based aggregation.

Mishra & Thakurta, "(Nearly) Optimal Differentially Private Stochastic Multi-Arm Bandits", UAI 2015,
Algorithm 2 (restored in shared ALGORITHMS.md 3.3; natural log). Three phases, per replicate:

1. **Gap estimation** (lines 2-8): with Deltahat = 1, 1/2, 1/4, ... pull every arm m times (round
   robin), release each arm's batch mean + Lap(2k/(eps m)) (sensitivity 1/m: eps/(2k)-DP; every
   record is in exactly one batch, Theorem 7's parallel composition), halve Deltahat, and stop once
   the two largest noisy means differ by more than Deltahat. The paper's batch size
   m = 192 k log T / (eps Deltahat^2) is ``batch_constant = 192``; its value is impractical (over
   11,000 pulls per arm in the first batch for k = 5, T = 1e5, eps = 1), so the **default is
   batch_constant = 1**, m = ceil(k ln T/(eps Deltahat^2)) (58 pulls per arm in the first batch of
   that example; the Laplace scale 2 Deltahat^2/ln T stays far below Deltahat). The phase ends at
   the horizon if the gap is never resolved (e.g. equal means).
2. **Random pulls** (lines 11-12): every arm is pulled n_r = Gamma / Deltahat^2 more times (round
   robin), Gamma = c log^3 T / eps with the paper's c = 192 (``pull_constant``). That too exceeds
   any practical horizon, and the paper's own experiment skipped gap estimation and used "a smaller
   value" (ALGORITHMS.md 3.4), so the **default is pull_constant = 0.01**, and ``random_pulls``
   (an int) fixes n_r directly. The rewards go into the arm's tree (see below).
3. **Thompson sampling** (lines 14-16): theta_a ~ Beta(r_a + 1, n_a - r_a + 1), r_a the arm's tree
   total **clipped to [0, n_a]** (the raw total can leave that range and give invalid Beta
   parameters, Hu & Hegde 2022 Sec. 2.3; clipping is post-processing), n_a the rewards in the tree.

Trees: one binary mechanism per arm (:class:`privbandit.mechanisms.TreeMechanism`, Chan et al.'s
B(T, eps0)) at eps0 = eps/(2k), created empty after gap estimation (gap-estimation rewards are not
reused, as in the paper). Differences from the printed algorithm, all privacy-neutral:

* The tree is bounded by the horizon T (L = floor(log2 T) + 1 levels) rather than by the
  data-dependent T - tau, so every replicate shares one data-independent schedule.
* Line 12 inserts each arm's random-pull total as ONE leaf; the mechanism takes items in [0, 1],
  so the random-pull rewards are inserted one by one. Either way a record is in at most L nodes of
  Lap(L/eps0) -- the same per-record eps0 -- and the released total carries popcount(n) nodes.

Privacy (per record, DESIGN.md): a record is either in one gap-estimation release
(Lap(2k/(eps m)) on a mean of sensitivity 1/m: eps/(2k)) or in at most bit_length(n) <= L nodes of
its arm's tree (Lap(L/eps0) each, eps0 = eps/(2k)), never both. The certificate is the larger of the
two exact (eps, delta) values, where an arm's tree holds at most n(t) = t - k m_0 records after t
rounds (gap estimation always completes a first batch of m_0 pulls per arm first; n(t) = t without
gap estimation) -- a worst case over every transcript, whatever the data-dependent phase lengths.
Pure: eps/(2k), i.e. 2k times smaller than Theorem 7's eps, which composes the k arms and the two
phases sequentially although a record enters one arm's statistic of one phase.
"""

from __future__ import annotations

import math
import operator
import numbers

import numpy as np

from accountants._validate import NOT_NUMBERS, shown
from accountants import Certificate, Laplace, PureDP
from accountants.events import NO_EVENT, exact_pure_epsilon
from privbandit.mechanisms import LaplaceRelease, TreeMechanism
from privbandit.mechanisms._base import _Scratch, flat, laplace_event
from privbandit.policies._ts_kernels import (beta_argmax, beta_parameters, private_ts_arms, pts_route_round,
                                             pulled_arrays)
from privbandit.policies.base import Policy, PolicyRun, check_arms, check_flag, check_epsilon, check_positive
from privbandit.policies.hu_hegde import CachedSchedule

PAPER_CONSTANT = 192.0
"""Mishra & Thakurta Algorithm 2: m = 192 k log T/(eps Deltahat^2) and Gamma = 192 log^3 T/eps."""

_GAP, _RANDOM, _TS = 0, 1, 2
_NO_ARMS = np.zeros(0, dtype=np.intp)


def batch_size(batch_constant: float, k: int, horizon: int, epsilon: float, gap: float) -> int:
    """Line 4: m = ceil(batch_constant k ln T / (eps Deltahat^2)), at least 1 and at most T + 1.

    Every m > T behaves alike (the batch of k m > T rounds never closes), so the cap changes nothing
    but keeps an extreme constant or epsilon (m = inf) a number."""
    m = batch_constant * k * math.log(horizon) / (epsilon * gap * gap)
    return max(1, math.ceil(m)) if m <= horizon else int(horizon) + 1


class _OffsetTree(TreeMechanism):
    """A TreeMechanism whose records start at a per-stream ledger position ``offset`` (R, K).

    Private-TS's trees receive an arm's rewards only after its gap-estimation rewards, which occupy
    ledger positions [0, offset); :class:`TreeMechanism` numbers its records from 0, which would
    make the ledger compose tree nodes with gap-estimation releases of *other* records. The binary
    core takes the offset (it is how the split and hybrid mechanisms place their blocks).

    As in :class:`TreeMechanism`, the tree's ``count`` and ``noisy_sum`` ARE its core's ``tau`` and
    ``total`` (the tree never restarts a block), and the core's capacity (the horizon) refuses an
    insert into a full stream before any state changes.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.offset = np.zeros((self.replicates, self.streams), dtype=np.int64)
        self._link_core_state()

    def _link_core_state(self) -> None:
        # equal values where a state was pickled with separate arrays (deployments' snapshots)
        core = self._core
        if self.count is not core.tau:
            core.tau[...] = self.count
            self.count = core.tau
        if self.noisy_sum is not core.total:
            core.total[...] = self.noisy_sum
            self.noisy_sum = core.total

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._link_core_state()

    def _insert(self, v, f, rr, kk) -> None:
        self._core.insert_flat(self, f, rr, kk, v, self.scale, flat(self.offset)[f], self.name)


class PrivateTSSchedule(CachedSchedule):
    """max(gap-estimation record, tree record) certificate; see the module docstring."""

    def __init__(self, policy: PrivateTS, horizon: int, n_arms: int):
        super().__init__()
        self.k, self.horizon = n_arms, horizon
        eps = policy.epsilon
        rng = np.random.default_rng(0)
        tree = TreeMechanism(1, 1, epsilon=eps / (2 * n_arms), horizon=horizon, rng=rng,
                             ledger=None, exact=policy.exact)
        self._tree = tree
        self.gap_estimation = policy.gap_estimation
        if self.gap_estimation:
            # Every batch size gap estimation can use within the horizon; in exact mode their
            # grid-rounded parameters differ slightly, so take the least private one.
            sampler = LaplaceRelease(rng, None, "template", exact=policy.exact).sampler
            leaves, used, gap = [], 0, 1.0
            while True:
                m = batch_size(policy.batch_constant, n_arms, horizon, eps, gap)
                if not leaves:
                    self.first_batch_rounds = n_arms * m
                if leaves and used + n_arms * m > horizon:
                    break
                scale = 2.0 * n_arms / (eps * m)
                # the event the ledger records: DiscreteLaplace in exact mode (a continuous Laplace
                # there would be bounded by curves slightly better than the discrete release's)
                leaves.append(laplace_event(sampler, scale, 1.0 / m))
                used += n_arms * m
                gap /= 2.0
            self._gap_event = max(leaves, key=lambda ev: ev.sensitivity / ev.scale)
            # A continuous Laplace's curve depends on sensitivity / scale only, so the largest ratio
            # dominates the others; a discrete one's also on its grid units, so in exact mode the
            # gap certificate is the largest over every distinct leaf (:meth:`epsilon`).
            self._gap_leaves = tuple(dict.fromkeys(leaves)) if policy.exact else (self._gap_event,)
        else:
            self.first_batch_rounds = 0
            self._gap_event = NO_EVENT
            self._gap_leaves = ()

    def tree_count(self, rounds: int) -> int:
        """Most records an arm's tree can hold after ``rounds`` rounds (every transcript)."""
        return int(min(self.horizon, max(0, rounds - self.first_batch_rounds)))

    def _parts(self, rounds: int):
        gap = self._gap_event if (self.gap_estimation and rounds >= self.first_batch_rounds) else NO_EVENT
        return gap, self._tree.privacy_schedule(self.tree_count(rounds))

    def events(self, rounds: int):
        """One event dominating both kinds of record: the event itself when only one kind exists;
        otherwise PureDP of the larger pure epsilon (each kind is that-eps-DP, and randomized
        response dominates every eps-DP mechanism, Kairouz, Oh & Viswanath 2015)."""
        if rounds <= 0:
            return NO_EVENT
        gap, tree = self._parts(rounds)
        if gap == NO_EVENT:
            return tree
        if tree == NO_EVENT:
            return gap
        # exact rationals, rounded up once (session 17: the float quotients and sum could land an ulp below the
        # releases' exact epsilon -- the certificate at delta = 0 below the truth)
        pure = max(exact_pure_epsilon(gap), sum(exact_pure_epsilon(leaf) * n for leaf, n in tree.grouped().items()))
        return PureDP.at_least(pure)

    def epsilon(self, rounds: int, delta: float, accountants=None) -> Certificate:
        """The larger of the two kinds' certificates: each record is one kind, so the guarantee for
        every pair of neighbours is the worse of the two (tighter than ``events``' PureDP)."""
        if rounds <= 0:
            return Certificate(0.0, "none", {})
        certs = [self._certify(ev, delta, accountants) for ev in self.record_kinds(rounds)]
        return max(certs, key=lambda c: c.value) if certs else Certificate(0.0, "none", {})

    def record_kinds(self, rounds: int) -> list:
        """The gap-estimation leaves (each distinct one in exact mode) and the tree record's event:
        a record is one kind or the other, so :meth:`epsilon` is the worst kind's certificate."""
        if rounds <= 0:
            return []
        gap, tree = self._parts(rounds)
        return ([*self._gap_leaves] if gap != NO_EVENT else []) + ([tree] if tree != NO_EVENT else [])


class _PrivateTSRun(PolicyRun):
    #: every replicate is in the Thompson-sampling phase (a class default: a run pickled before this
    #: flag existed resumes on the general path, which is correct for every phase)
    _all_ts = False

    def __init__(self, policy: PrivateTS, n_arms, replicates, horizon, rng, ledger):
        self.p, self.k, self.T, self.rng = policy, n_arms, horizon, rng
        R = replicates
        self.rows = np.arange(R)
        self.tree = _OffsetTree(R, n_arms, epsilon=policy.epsilon / (2 * n_arms), horizon=horizon, rng=rng,
                                ledger=ledger, name="private_ts/tree", exact=policy.exact)
        self.release = LaplaceRelease(rng, ledger, "private_ts/gap", exact=policy.exact)
        self.phase = np.full(R, _GAP if policy.gap_estimation else _RANDOM, dtype=np.int8)
        self.phase_start = np.zeros(R, dtype=np.int64)  # rounds played before the current phase
        self.gap = np.ones(R)  # Deltahat
        self.m = np.full(R, batch_size(policy.batch_constant, n_arms, horizon, policy.epsilon, 1.0),
                         dtype=np.int64)
        self.n_gap = np.zeros(R, dtype=np.int64)  # gap-estimation records per arm (ledger offset)
        self.batch_sum = np.zeros((R, n_arms))
        self.n_random = np.zeros(R, dtype=np.int64)
        self.muhat = np.full((R, n_arms), np.nan)  # last released noisy batch means (line 5)
        self._values = np.zeros((R, n_arms))
        self._mask = np.zeros((R, n_arms), dtype=bool)
        self._round_scratch = _Scratch()  # working arrays of select and update (see _scratch)
        if not policy.gap_estimation:
            self._enter_random(self.rows, 0)

    def _enter_random(self, rows: np.ndarray, t: int) -> None:
        self.phase[rows] = _RANDOM
        self.phase_start[rows] = t
        self.n_random[rows] = self.p.random_pull_count(self.T, self.gap[rows])
        self.tree.offset[rows] = self.n_gap[rows, None]
        done = rows[self.n_random[rows] == 0]
        self.phase[done] = _TS
        self._refresh_all_ts()

    def _refresh_all_ts(self) -> None:
        # Thompson sampling is the last phase: once every replicate is in it, the round robin and
        # the phase bookkeeping are idle for the rest of the run
        self._all_ts = bool((self.phase == _TS).all())

    def _scratch(self) -> tuple:
        """Working arrays of a round: the Beta parameters (R, K) and the clocks' row lists (R,), each
        rewritten before it is read (a :class:`_Scratch`: pickled empty, equal to any other)."""
        scratch = self.__dict__.get("_round_scratch")
        if scratch is None:  # a run pickled before the scratch space existed
            scratch = self._round_scratch = _Scratch()
        got = scratch.by_size.get(0)
        if got is None:
            R, k = self.rows.size, self.k
            got = scratch.by_size[0] = (np.empty((R, k)), np.empty((R, k)), np.empty(R, dtype=np.intp),
                                        np.empty(R, dtype=np.intp))
        return got

    def select(self, t):
        R, k, tree = self.rows.size, self.k, self.tree
        a, b = self._scratch()[:2]
        # line 15's Beta(r + 1, n - r + 1) of the replicates in Thompson sampling (rows in replicate
        # order), r the tree total clipped to [0, n]: one kernel for numpy's mask, casts and clips
        n_ts = beta_parameters.at(R)(self.phase, _TS, tree.count, tree.noisy_sum, a, b)
        if n_ts == R:  # every replicate in Thompson sampling
            return beta_argmax(self.rng, a, b)
        best = beta_argmax(self.rng, a[:n_ts], b[:n_ts]) if n_ts else _NO_ARMS
        arms = np.empty(R, dtype=np.intp)
        private_ts_arms.at(R)(self.phase, self.phase_start, t, k, _TS, best, arms)
        return arms

    def update(self, t, arms, rewards):
        if self._all_ts:  # the general path below with no replicate in the first two phases
            self.tree.insert_pulled(arms, rewards)
            return
        R = self.rows.size
        arms, rewards = pulled_arrays(arms, rewards, R, self.k)
        closing, done = self._scratch()[2:]
        # one kernel: gap-estimation rewards into the batch sums, the others marked in _mask / _values;
        # then the replicates whose gap batch is complete and those whose random pulls are, both read off
        # the clocks before any batch closes (the tree insert below touches no clock): a replicate whose
        # gap phase ends now starts its random pulls with phase_start = t (0 rounds played in the new
        # phase, not the gap phase's k m, which when n_random = m would send it straight to Thompson
        # sampling without its random pulls)
        into_tree, n_close, n_done = pts_route_round.at(R)(
            self.phase, self.phase_start, self.m, self.n_random, t, self.k, _GAP, _RANDOM, arms, rewards,
            self.batch_sum, self._mask, self._values, closing, done)
        if into_tree < 0:
            raise ValueError(f"arms must lie in [0, {self.k}) (the arms)")
        if into_tree == R:  # every replicate past gap estimation: its pulled arm's tree
            self.tree.insert_pulled(arms, rewards)
        elif into_tree:
            self.tree.insert(self._values, self._mask)
        if n_close:
            self._close_batches(closing[:n_close], t)
        if n_done:
            self.phase[done[:n_done]] = _TS
            self._refresh_all_ts()

    def _close_batches(self, rows: np.ndarray, t: int) -> None:
        if rows.size == 0:
            return
        k, eps = self.k, self.p.epsilon
        m = self.m[rows]
        rr = np.repeat(rows, k)
        kk = np.tile(np.arange(k), rows.size)
        mm = np.repeat(m, k)
        lo = np.repeat(self.n_gap[rows], k)
        noisy = self.release.release(self.batch_sum[rr, kk] / mm, 2.0 * k / (eps * mm), 1.0 / mm,
                                     rr, kk, lo, lo + mm, node=lo)
        muhat = noisy.reshape(rows.size, k)
        self.muhat[rows] = muhat
        self.batch_sum[rows] = 0.0
        self.n_gap[rows] += m
        self.gap[rows] /= 2.0
        top2 = np.sort(muhat, axis=1)[:, -2:]
        stop = (top2[:, 1] - top2[:, 0]) > self.gap[rows]
        self._enter_random(rows[stop], t)
        cont = rows[~stop]
        self.phase_start[cont] = t
        self.m[cont] = [batch_size(self.p.batch_constant, k, self.T, eps, g) for g in self.gap[cont]]


class PrivateTS(Policy):
    """Private-TS, Mishra & Thakurta (UAI 2015) Algorithm 2 (see the module docstring).

    Parameters:
        epsilon: in (0, inf); pure eps-DP over the run as claimed by Theorem 7.
        gap_estimation: run lines 2-8 (True) or start with Deltahat = 1 (the paper's experiment).
        batch_constant: c_m in (0, inf) of the batch size m = ceil(c_m k ln T/(eps Deltahat^2));
            paper 192, default 1.
        pull_constant: c_r in (0, inf) of Gamma = c_r ln^3 T/eps, random pulls per arm
            ceil(Gamma/Deltahat^2); paper 192, default 0.01.
        random_pulls: None, or a whole number >= 0 of random pulls per arm replacing that formula.
        exact: floating-point-safe grid noise.
    """

    name = "private_ts"
    private = True

    def __init__(self, epsilon: float = 1.0, gap_estimation: bool = True, batch_constant: float = 1.0,
                 pull_constant: float = 0.01, random_pulls: int | None = None, exact: bool = False):
        self.epsilon = check_epsilon(epsilon)
        if not isinstance(gap_estimation, (bool, np.bool_)):
            raise ValueError(f"gap_estimation must be True or False, got {shown(gap_estimation)}")
        self.gap_estimation = bool(gap_estimation)
        self.batch_constant = check_positive("batch_constant", batch_constant)
        self.pull_constant = check_positive("pull_constant", pull_constant)
        if random_pulls is not None and (isinstance(random_pulls, NOT_NUMBERS)
                                         or not isinstance(random_pulls, (numbers.Integral, np.integer))
                                         or random_pulls < 0):
            raise ValueError(f"random_pulls must be None or a whole number in [0, inf), got {shown(random_pulls)}")
        self.random_pulls = None if random_pulls is None else operator.index(random_pulls)
        self.exact = check_flag("exact", exact)

    def random_pull_count(self, horizon: int, gap) -> np.ndarray:
        """Line 12: random pulls per arm, ceil(c_r ln^3 T/(eps Deltahat^2)) or ``random_pulls``."""
        gap = np.asarray(gap, dtype=float)
        # capped at the horizon, which no run outlasts (so the cap changes no run): a count beyond int64
        # (random_pulls=2**70, or a tiny epsilon in the formula) used to overflow, or wrap negative
        if self.random_pulls is not None:
            return np.full(gap.shape, min(self.random_pulls, horizon), dtype=np.int64)
        gamma = self.pull_constant * math.log(horizon) ** 3 / self.epsilon
        with np.errstate(over="ignore", divide="ignore"):
            return np.minimum(np.ceil(gamma / gap ** 2), float(horizon)).astype(np.int64)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _PrivateTSRun(self, n_arms, replicates, horizon, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        return PrivateTSSchedule(self, horizon, n_arms)

    def claimed_epsilon(self, horizon, n_arms, delta):
        """Theorem 7: eps-DP (pure; the same at every delta)."""
        return self.epsilon

    def params(self):
        return {"policy": self.name, "epsilon": self.epsilon, "gap_estimation": self.gap_estimation,
                "batch_constant": self.batch_constant, "pull_constant": self.pull_constant,
                "random_pulls": self.random_pulls, "exact": self.exact}


__all__ = ["PrivateTS", "PrivateTSSchedule"]
