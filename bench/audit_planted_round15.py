"""Round 15 of the planted bugs (session 13, s13/blind), written blind: from docs/audit.md's description and
Limitations, the bench harness and the code of the policies, mechanisms, accountants and deployment modules the
bugs live in -- never from the auditor's check code (privbandit/audit/).

Like rounds 11-14, each policy bug is a subclass of a private policy with one mistake made inside ``start`` (an
instance-level patch, so the clean twin -- the parent's ``start`` on the same configuration -- is the unmodified
policy), or, for a certificate bug, a schedule subclass; it keeps its parent's claim unless the mistake *is* the
claim. Aimed at what earlier rounds did not cover: bugs that depend on the reward's *value* (exactly 0, exactly
1, above 1/2, strictly fractional), on the record's round (the first, the last of the horizon), noise right in
law but shared between two arms through one uniform, certificates that forget one mechanism kind, convert GDP
by the wrong branch for large mu or tighten the live certificate in the wrong direction, a graph's isolated
played arm counted through its self-loop, per-coordinate context clipping, and three deployment filters / restarts.
Each class docstring states the true epsilon of the buggy code against its claim. ``CONTROLS15`` are correct but
unusual variants (each must stay CONSISTENT); they are listed before the bugs, as ``bench/audit_planted.py
--only round15`` runs them. Nothing here is imported by the package.
"""

from __future__ import annotations

import functools
import math
import operator
import os
import sys
from statistics import NormalDist

import numpy as np

from accountants import Certificate
from accountants.events import NO_EVENT, Laplace
from accountants.pure import PureAccountant
from privbandit.contextual import linalg
from privbandit.mechanisms._base import flat
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import DPEXP3Lap, DPUCBBound, JointDPLinUCB, PrivateEXP3, PrivateLinTS, PrivateUCB
from privbandit.policies.dp_ucb import HybridSchedule
from privbandit.policies.graph_private import DPUCBN, GaussianTSN, StreamsSchedule
from privbandit.policies.private_ucb import PrivateUCBSchedule
from privbandit.policies._exp3_kernels import exp3_rescale

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from audit_planted_bugs import _named, _on_statistics  # noqa: E402


def _validated_then_mapped(mech, mapping) -> None:
    """``mech``'s validated entries mapped by ``mapping(v, f, rr)`` (f: their flat stream index or a full slice,
    rr: their replicates) before they are
    inserted: the mechanism's own [0, 1] check has passed, so the mapped values go in as they are -- the
    "validate, then transform" seam every bug of a reward's value goes through."""
    insert = mech._insert

    def mapped(v, f, rr, kk):
        insert(mapping(np.asarray(v, dtype=float), f, rr), f, rr, kk)

    mech._insert = mapped


def _exp3_lap_update(run, released, learned=None) -> None:
    """DP-EXP3-Lap's update with the released statistic ``released(t, rewards)`` (reported as a sensitivity-1
    release of the record, as the parent does) and, optionally, the learned value ``learned(t, rewards, noisy)``."""

    def update(t, arms, rewards):
        rows, arms = run.core.rows, run.core.checked(arms)
        rewards = np.asarray(rewards, dtype=float)
        lo = run.pulls[rows, arms]
        noisy = run.noise.release_records(released(t, rewards), run.scale, rows, arms, lo)
        run.pulls[rows, arms] = lo + 1
        gain = noisy if learned is None else learned(t, rewards, noisy)
        run.core.learn(arms, exp3_rescale.at(rows.size)(gain, run.b))

    run.update = update


# =============================== controls (correct but unusual) ===============================
class UCBRewardQuantisedUp(PrivateUCB):
    """Control: Private-UCB inserting each reward rounded up to a multiple of 1/16 ("sixteenths, as the
    dashboard shows them"): a map of [0, 1] into [0, 1], so every tree sum still moves by at most 1 per
    record. True eps = claimed eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _validated_then_mapped(run.tree, lambda v, f, rr: np.ceil(16.0 * v) / 16.0)
        return run


class Exp3LapRandomisedRounding(DPEXP3Lap):
    """Control: DP-EXP3-Lap releasing a randomised rounding of each reward, Bernoulli(r) (one uniform of the
    run's generator drawn every round, whatever the reward): the released record is in {0, 1}, sensitivity 1,
    and the rounding's coin is independent of the data. True eps = claimed eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        coin = run.core.rng if hasattr(run.core, "rng") else rng

        def rounded(t, rewards):
            return (coin.random(rewards.shape) < rewards).astype(float)

        _exp3_lap_update(run, rounded)
        return run


class _PureOnlyHybrid(HybridSchedule):
    """The hybrid schedule certified by the pure accountant alone (the sum of the releases' pure epsilons)."""

    def epsilon(self, rounds, delta, accountants=None):
        return HybridSchedule.epsilon(self, rounds, delta, [PureAccountant])


class DPUCBBoundPureOnly(DPUCBBound):
    """Control: DP-UCB-Bound whose certificate at every delta is the pure accountant's (no approximate-DP
    accountant consulted): looser than the best, valid. True eps <= claimed eps (T = 200, K = 2, 1e-5:
    1.0000000000001 claimed against 0.99997 by RDP)."""

    def privacy_schedule(self, horizon, n_arms):
        good = super().privacy_schedule(horizon, n_arms)
        bad = object.__new__(_PureOnlyHybrid)
        bad.__dict__.update(good.__dict__)
        return bad


_TO_BALL = linalg.bound_contexts
"""The projection onto the L-ball itself (``_select_with`` swaps the module attribute during a select)."""


def _select_with(run, bound_contexts) -> None:
    """A linear run's ``select`` with ``bound_contexts(z, bound)`` in place of the projection onto the L-ball
    (``linalg.bound_contexts``, which the run calls by module attribute, swapped for the call only)."""
    select = run.select

    def swapped(t, offer=None):
        saved = linalg.bound_contexts
        linalg.bound_contexts = lambda z, bound, mode: bound_contexts(z, bound)
        try:
            return select(t, offer)
        finally:
            linalg.bound_contexts = saved

    run.select = swapped


def _joint_gdp_init(self, epsilon: float = 1.0, delta: float = 1e-6, dim: int = 5, bound: float = 4.0,
                    alpha: float = 1.0, regularization: float = 1.0, model: str = "shared",
                    calibration: str = "gdp", failure: float = 0.01, contexts: str = "clip") -> None:
    """Joint-DP LinUCB's constructor with round 14's configuration as defaults (shared model, L = 4, the "gdp"
    calibration: a Gaussian tree whose mu the round relation reads)."""
    JointDPLinUCB.__init__(self, epsilon, delta, dim, bound, alpha, regularization, model, calibration, failure, contexts)


class JointCoordinateThenNormClip(JointDPLinUCB):
    """Control: Joint-DP LinUCB (shared model, calibration "gdp") clipping each context coordinate to [-L, L]
    and *then* projecting onto the L-ball: every context reaching the statistics still has norm <= L. True
    eps = claimed eps."""

    __init__ = _joint_gdp_init

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _select_with(run, lambda z, bound: _TO_BALL(np.clip(z, -bound, bound), bound, "clip"))
        return run


CONTROLS15 = {
    "ucb_reward_quantised_up": UCBRewardQuantisedUp,
    "exp3_lap_randomised_rounding": Exp3LapRandomisedRounding,
    "dp_ucb_bound_pure_only": DPUCBBoundPureOnly,
    "joint_coordinate_then_norm_clip": JointCoordinateThenNormClip,
}
"""Round 15's controls (correct variants: each must come out CONSISTENT); listed before the bugs."""


# =============================== bugs =========================================================
# --- the reward's value -----------------------------------------------------------------------
class UCBFractionalCentred(PrivateUCB):
    """Private-UCB inserting a strictly fractional reward r in (0, 1) as 2 r - 1 ("a graded reward centred
    like a +-1 outcome"), 0 and 1 unchanged: the inserted value ranges over (-1, 1], so a record moves a tree
    sum by up to 2 (r near 0 against r = 1) with the scale for 1. True eps = 2 x claimed (pure eps0 = 1/K per
    record: 1.0 vs 0.5 at K = 2). Wrong only for neighbours whose rewards are not both in {0, 1}."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _validated_then_mapped(run.tree, lambda v, f, rr: np.where((v > 0.0) & (v < 1.0), 2.0 * v - 1.0, v))
        return run


class UCBZeroAsMinusOne(PrivateUCB):
    """Private-UCB inserting a reward of exactly 0 as -1 ("a failure is a -1 outcome"), every other reward
    unchanged: 0 against 1 moves a tree sum by 2 with the scale for 1. True eps = 2 x claimed (1.0 vs 0.5 at
    K = 2)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _validated_then_mapped(run.tree, lambda v, f, rr: np.where(v == 0.0, -1.0, v))
        return run


class UCBHighRewardBonus(PrivateUCB):
    """Private-UCB inserting a reward above 1/2 as r + 1/2 ("a success earns half a point more"): the
    inserted value ranges over [0, 1.5], a record moves a tree sum by up to 1.5 with the scale for 1. True
    eps = 1.5 x claimed (0.75 vs 0.5 at K = 2)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _validated_then_mapped(run.tree, lambda v, f, rr: np.where(v > 0.5, v + 0.5, v))
        return run


class Exp3LapOneCapped(DPEXP3Lap):
    """DP-EXP3-Lap that, for a reward of exactly 1 ("already at the cap"), keeps its noisy release at or
    below 1 (min(1 + Lap(1/eps), 1)) before EXP3 learns it, other rewards as released. The learned gain is
    then no post-processing of the release: with r = 0 it exceeds 1 with probability e^-1 / 2 = 0.18, with
    r = 1 never. True: no finite eps for the learned gains (the weights); the actions alone are bounded only
    through EXP3's exploration floor, far above the claim; claimed eps = 1 (the release itself is exact)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _exp3_lap_update(run, lambda t, r: r, lambda t, r, noisy: np.where(r == 1.0, np.minimum(noisy, 1.0), noisy))
        return run


class Exp3FractionalLossDoubled(PrivateEXP3):
    """Private EXP3 releasing the loss of a strictly fractional reward as 2 (1 - r) ("a graded loss on [0, 2],
    binary losses unchanged"), reported as a sensitivity-1 Lap(1/eps) release: r near 0 against r = 1 moves the
    released loss by up to 2. True eps = 2 per record (2 at the default); claimed eps = 1. Wrong only for
    neighbours whose rewards are not both in {0, 1}."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def update(t, arms, rewards):
            rows, arms = run.core.rows, run.core.checked(arms)
            r = np.asarray(rewards, dtype=float)
            loss = np.where((r > 0.0) & (r < 1.0), 2.0 * (1.0 - r), 1.0 - r)
            lo = run.pulls[rows, arms]
            noisy_loss = run.noise.release_records(loss, run.scale, rows, arms, lo)
            run.pulls[rows, arms] = lo + 1
            run.core.learn(arms, -noisy_loss)

        run.update = update
        return run


class UCBPowerOfTwoCarry(PrivateUCB):
    """Private-UCB whose record that brings its arm's count to a power of two (the 1st, 2nd, 4th, 8th, ...
    record: a new tree level opens) is inserted as 2 r ("the carry into the new level adds the record
    again"), reported as usual: those records move their nodes by 2 with the scale for 1. True eps = 2 x
    claimed for them (1.0 vs 0.5 at K = 2)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree = run.tree

        def carried(v, f, rr):
            after = flat(tree.count)[f] + 1  # the count the entry brings its stream to
            return np.where((after & (after - 1)) == 0, 2.0 * v, v)

        _validated_then_mapped(run.tree, carried)
        return run


# --- the record's round -------------------------------------------------------------------------
class Exp3LapLastRoundDouble(DPEXP3Lap):
    """DP-EXP3-Lap whose record of the horizon's last round is released as 2 r ("the end-of-run flush adds the
    last reward to the round's own"), still reported as a sensitivity-1 Lap(1/eps) release. True eps = 2 for
    the last round's record (2 at the default); claimed eps = 1. No later decision reads that release."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _exp3_lap_update(run, lambda t, r: 2.0 * r if t == horizon else r)
        return run


class Exp3LapFirstRoundDouble(DPEXP3Lap):
    """DP-EXP3-Lap whose record of round 1 is released as 2 r ("the first reward doubles as the prior"), still
    reported as a sensitivity-1 Lap(1/eps) release. True eps = 2 for the first round's record; claimed 1."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _exp3_lap_update(run, lambda t, r: 2.0 * r if t == 1 else r)
        return run


# --- noise right in law, shared through one uniform ----------------------------------------------
class _ShiftedUniformPairs(NoiseSampler):
    """Laplace noise by the inverse CDF of a uniform, where the k-th release of arm 2j+1 in a replicate uses the
    uniform of the k-th release of arm 2j shifted by one half (mod 1): every draw is exactly Laplace(scale) on
    its own (u + 1/2 mod 1 is uniform), magnitudes and values never repeat, but the two are one draw."""

    _bug_idx = None

    def _sum_release(self, statistic, scale, on_grid=True):
        idx = self._bug_idx
        if self.exact or idx is None or idx[0].size != np.size(statistic):
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic = np.asarray(statistic, dtype=float)
        u = self.rng.random(statistic.shape)
        saved = self.__dict__.setdefault("_bug_saved", {})
        for i, (r, k, pos) in enumerate(zip(*(a.tolist() for a in idx))):
            key = (r, k // 2, pos)
            if k % 2 == 0:
                saved[key] = u[i]
            elif key in saved:
                u[i] = (saved.pop(key) + 0.5) % 1.0
        u = np.clip(u, 1e-300, 1.0 - 2.0 ** -53)  # u = 0 would be an infinite draw
        z = -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))
        return statistic + z * np.asarray(scale, dtype=float)


class Exp3LapPairUniformShift(DPEXP3Lap):
    """DP-EXP3-Lap whose k-th release on arm 2j+1 takes its Laplace noise from the uniform of arm 2j's k-th
    release shifted by 1/2 ("antithetic-style variance reduction"): each release is Lap(1/eps) in law, but
    the noise of one is a fixed function of the other's. True: no finite eps (given both releases, the pair of
    rewards lies on a curve); claimed eps = 1 per record."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.noise.sampler
        sampler.__class__ = _ShiftedUniformPairs
        update = run.update

        def telling(t, arms, rewards):
            rows, arms_a = run.core.rows, run.core.checked(arms)
            sampler._bug_idx = (np.asarray(rows), np.asarray(arms_a), run.pulls[rows, arms_a].copy())
            try:
                update(t, arms, rewards)
            finally:
                sampler._bug_idx = None

        run.update = telling
        return run


# --- certificates -------------------------------------------------------------------------------
class _LaplaceOnlyHybrid(HybridSchedule):
    """The hybrid's events with its leaves grouped by kind and only the Laplace kind kept (the log
    mechanism's PureDP leaf forgotten)."""

    def events(self, rounds):
        ev = HybridSchedule.events(self, rounds)
        kept = [leaf * n for leaf, n in ev.grouped().items() if isinstance(leaf, Laplace)] if ev != NO_EVENT else []
        return functools.reduce(operator.add, kept) if kept else NO_EVENT


class DPUCBBoundForgetsPure(DPUCBBound):
    """DP-UCB-Bound whose schedule composes only the Laplace releases of its hybrid mechanism (the binary
    part's nodes) and forgets the PureDP leaf of the logarithmic part ("the PLD path takes the Laplace
    leaves; the others were meant to go through the pure accountant"). T = 200, K = 2: at 1e-5 claimed
    0.49998 (one Laplace(2)) vs true 0.99997 (+ PureDP(0.5)); mu 0.624 vs 0.882."""

    def privacy_schedule(self, horizon, n_arms):
        good = super().privacy_schedule(horizon, n_arms)
        bad = object.__new__(_LaplaceOnlyHybrid)
        bad.__dict__.update(good.__dict__)
        return bad


GDP_BRANCH_MU = 4.0
"""Above this mu the slipped conversion takes its "large mu" branch."""


class _LargeMuBranch(StreamsSchedule):
    """eps at delta for mu > 4 by the tail bound of the privacy loss with its mean mu^2 / 2 dropped
    (eps = mu z_{1 - delta}); smaller mu through the accountants, right."""

    def epsilon(self, rounds, delta, accountants=None):
        good = StreamsSchedule.epsilon(self, rounds, delta, accountants)
        mu = self.mu(rounds)
        if not (math.isfinite(mu) and mu > GDP_BRANCH_MU and 0.0 < delta < 0.5):
            return good
        value = mu * NormalDist().inv_cdf(1.0 - delta)
        return Certificate(value, "gdp", {"gdp": value})


class GaussianTSNLargeMuBranch(GaussianTSN):
    """Gaussian-TS-N (b = 1, c = 1) whose eps at delta, once mu > 4, is mu z_{1 - delta} (the privacy loss
    N(mu^2/2, mu^2)'s tail without its mean): below the exact GDP curve by about mu^2 / 2. Events and mu are
    right. T = 200, K = 2, entry relation (mu = 9.95): claimed 42.4 at 1e-5 vs true 91.1 (round relation, max
    degree 1, mu = 14.07: 60.0 vs 158.1); the branch is taken from round ~90 on (mu 4.24 at 20 rounds)."""

    def __init__(self, b: int = 1, c: float = 1.0):
        super().__init__(b, c)

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        good = super().privacy_schedule(horizon, n_arms, relation=relation, max_degree=max_degree, graph=graph)
        return _LargeMuBranch(good.base, good.streams, good.relation)


class _ForwardMinimumLive(PrivateUCBSchedule):
    """Live certificates tightened with the running minimum taken forward (over earlier checkpoints) instead
    of backward (over later ones): every checkpoint after the first reports the first one's epsilon."""

    def live_certificates(self, rounds, delta, accountants=None):
        rounds = np.asarray(rounds, dtype=np.int64)
        values = np.array([0.0 if r == 0 else self.epsilon(int(r), delta, accountants).value for r in rounds])
        tightened = np.minimum.accumulate(values)
        first = self.epsilon(int(rounds[0]), delta, accountants).by if rounds.size and rounds[0] > 0 else "none"
        return tightened, [first] * rounds.size


class UCBLiveForwardMinimum(PrivateUCB):
    """Private-UCB whose live certificates (the engine's running column) take the running minimum forward:
    at rounds [50, 100, 200] it reports [eps(50)] * 3. Its ``epsilon`` at any single round is right. T = 200,
    K = 2 at 1e-5: the live certificate at 200 is eps(50) = 0.3744 (6 nodes of Lap(16) per record) vs true
    eps(200) = 0.4974 (8 nodes); at 100 0.3744 vs 0.4362."""

    def privacy_schedule(self, horizon, n_arms):
        good = super().privacy_schedule(horizon, n_arms)
        bad = object.__new__(_ForwardMinimumLive)
        bad.__dict__.update(good.__dict__)
        return bad


# --- graph feedback -----------------------------------------------------------------------------
class GraphIsolatedSelfLoopDouble(DPUCBN):
    """DP-UCB-N whose played arm, when no other arm is observed in the round (an isolated node of that round's
    graph), takes its own entry twice -- once as the pull and once "through its self-loop" -- so 2 r enters its
    stream, reported as one sensitivity-1 record. True eps = 2 x claimed for such entries (entry relation: 2.0
    vs 1.0 at eps = 1); graphs where every played arm has a neighbour are exact."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        learn, state = run.learn, {"alone": None}

        def telling(t, observed, values):
            state["alone"] = np.asarray(observed, dtype=bool).sum(axis=1) == 1  # the played arm alone
            try:
                learn(t, observed, values)
            finally:
                state["alone"] = None

        def doubled(v, f, rr):
            alone = state["alone"]
            return v if alone is None else np.where(alone[np.asarray(rr)], 2.0 * v, v)

        run.learn = telling
        _validated_then_mapped(run.hybrid, doubled)
        return run


# --- contextual ---------------------------------------------------------------------------------
class JointCoordinateClip(JointDPLinUCB):
    """Joint-DP LinUCB (shared model, L = 4, calibration "gdp", eps = 1 at delta 1e-6) clipping each context
    coordinate to [-L, L] instead of the context's norm to L: a context reaching the statistics has norm up
    to sqrt(d) L. Under the round relation (contexts change) the Gram matrix moves by up to sqrt 2 (d L^2 + 1)
    = 114.6 against the declared sqrt 2 (L^2 + 1) = 24.04 (d = 5): true mu = 4.76 x claimed (T = 200: mu 1.13
    vs 0.237, eps at 1e-6 5.61 vs 1.00)."""

    __init__ = _joint_gdp_init

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _select_with(run, lambda z, bound: np.clip(z, -bound, bound))
        return run


class _OneUniformPerVector(NoiseSampler):
    """Laplace vectors (``laplace(scale, size=(m, n))``) whose n entries come from one uniform per row, entry j
    from u + j / n (mod 1) through the Laplace inverse CDF: every entry is exactly Laplace(scale) on its own and
    no two entries are equal or equal in magnitude, but the whole row is one draw."""

    def laplace(self, scale, size=None):
        if self.exact or size is None or len(size) != 2:
            return NoiseSampler.laplace(self, scale, size)
        m, n = size
        u = (self.rng.random((m, 1)) + np.arange(n) / n) % 1.0
        u = np.clip(u, 1e-300, 1.0 - 2.0 ** -53)
        return -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5)) * float(scale) * self._noise_scale_factor


class LinNodeNoiseOneUniform(PrivateLinTS):
    """Private linear TS whose vector tree draws each node's noise vector from one uniform, entry j from
    u + j / n mod 1 ("a low-discrepancy noise vector"): each entry is Lap(scale w_j) in law, but a node's
    noise is a fixed curve through one draw, so a released node pins its statistic to a one-parameter family.
    True: no finite eps (the released node of D is impossible under D' whose statistic differs); claimed the
    paper's eps (1 by default; 0.41 at 1e-5 per record at d = 5, T = 200)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            stats.tree.sampler.__class__ = _OneUniformPerVector

        _on_statistics(run, patch)
        return run


ROUND15_BUGS = {
    "ucb_fractional_centred": UCBFractionalCentred,
    "ucb_zero_as_minus_one": UCBZeroAsMinusOne,
    "ucb_high_reward_bonus": UCBHighRewardBonus,
    "exp3_lap_one_capped": Exp3LapOneCapped,
    "exp3_fractional_loss_doubled": Exp3FractionalLossDoubled,
    "ucb_power_of_two_carry": UCBPowerOfTwoCarry,
    "exp3_lap_last_round_double": Exp3LapLastRoundDouble,
    "exp3_lap_first_round_double": Exp3LapFirstRoundDouble,
    "exp3_lap_pair_uniform_shift": Exp3LapPairUniformShift,
    "dp_ucb_bound_forgets_pure": DPUCBBoundForgetsPure,
    "gaussian_ts_n_large_mu_branch": GaussianTSNLargeMuBranch,
    "ucb_live_forward_minimum": UCBLiveForwardMinimum,
    "graph_isolated_self_loop_double": GraphIsolatedSelfLoopDouble,
    "joint_coordinate_clip": JointCoordinateClip,
    "lin_node_noise_one_uniform": LinNodeNoiseOneUniform,
}
"""Round 15 (session 13, s13/blind): written blind (docs/audit.md, "Round 15")."""

for _key, _cls in CONTROLS15.items():
    _named(_cls, "control_" + _key)
for _key, _cls in ROUND15_BUGS.items():
    _named(_cls, "bug_" + _key)


# =============================== deployment path ==============================================
from privbandit.deploy.deployment import Deployment  # noqa: E402
from privbandit.deploy.odometer import plan  # noqa: E402


class DeployFilterAsksOdometer(Deployment):
    """Control: a deployment whose filter asks the odometer every round ("refuse when round rounds + 1 would
    certify more than the budget") instead of reading the stop round stored at create: the same rounds pass
    (the stop round is the last whose certificate fits), so nothing more is released."""

    def select(self):
        saved = self.stop_round
        try:
            rounds = self._call(lambda: self._info()["rounds"])
            if rounds < self.horizon and self.odometer.epsilon(rounds + 1) > self.budget:
                self.stop_round = min(saved, rounds)
            return super().select()
        finally:
            self.stop_round = saved


class DeployFilterBoundaryGreater(Deployment):
    """The filter refuses a policy round when ``rounds > stop_round`` instead of ``rounds >= stop_round``
    ("stop once we are past the stop round"): the round after the stop round -- the first whose certificate
    exceeds the budget -- is released. True eps = cert(stop + 1) > budget; claimed cert(stop) <= budget (the
    bench's drive: Gaussian TS c = 4, budget cert(30) = 10.36 at delta 1e-6, true cert(31) = 10.58)."""

    def select(self):
        saved = self.stop_round
        self.stop_round = min(saved + 1, self.horizon)  # `rounds > stop` is `rounds >= stop + 1`
        try:
            return super().select()
        finally:
            self.stop_round = saved


class DeployFilterDeltaSlip(Deployment):
    """Opening the store, the filter's stop round is re-planned with the delta read as a percentage slip (ten
    times the configured delta: 1e-5 for 1e-6): more rounds fit the budget at the larger delta. True eps =
    cert_{1e-6}(stop') > budget; claimed the budget (the bench's drive: budget cert(30) = 10.36 at 1e-6; the
    first reopen moves the stop round to 34, cert_{1e-6}(34) = 11.20)."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)
        pol = dep.odometer.policy if hasattr(dep.odometer, "policy") else None
        if pol is not None:
            dep.stop_round = plan(pol, dep.n_arms, dep.budget, 10.0 * dep.delta, dep.horizon).stop_round
        return dep


class DeployRestartReseeded(Deployment):
    """A reopen rebuilds the noise state from the configured seed ("a fresh process re-seeds as at create"):
    the generator is re-created from ``seed`` and the posterior's block of normals redrawn from it, its cursor
    at 0. After every restart the normals of rounds 1, 2, ... are used again, on the later rounds'
    statistics. True: no finite eps (two posterior releases sharing a normal differ by a noiseless function
    of the data); claimed the schedule's eps (cert(30) = 10.36)."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)
        state = dep.snapshot()
        fresh = np.random.default_rng(np.random.SeedSequence(dep.config["seed"]))
        state["rng"].bit_generator.state = fresh.bit_generator.state
        posterior = getattr(state["run"], "posterior", None)
        if posterior is not None and getattr(posterior, "_z", None) is not None:
            posterior._z = state["rng"].standard_normal(posterior._z.shape)
            posterior._pos = 0
        return dep


DEPLOY_CONTROLS15 = {"deploy_filter_asks_odometer": DeployFilterAsksOdometer}
DEPLOY_BUGS15 = {"deploy_filter_boundary_greater": DeployFilterBoundaryGreater,
                 "deploy_filter_delta_slip": DeployFilterDeltaSlip,
                 "deploy_restart_reseeded": DeployRestartReseeded}
"""Round 15's deployment rows, driven by ``audit_planted_bugs.drive_deployment`` (holds, a restart every
fourth decision, 60 decisions, 30 rounds afforded) and audited from the store."""
