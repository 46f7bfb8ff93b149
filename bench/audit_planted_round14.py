"""Round 14 of the planted bugs (session 12, s12/blind), written blind: from docs/audit.md's description and
Limitations, the bench harness and the code of the policies, mechanisms, ledger and deployment modules the bugs
live in -- never from the auditor's check code (privbandit/audit/).

Like rounds 11-13, each policy bug is a subclass of a private policy with one mistake made inside ``start``
(an instance-level patch, so the clean twin -- the parent's ``start`` on the same configuration -- is the
unmodified policy), or, for a certificate bug, a schedule subclass; it keeps its parent's claim unless the
mistake *is* the claim. Aimed at what earlier rounds did not cover: the adversarial family (an importance-
weighted estimate clipped at 2, a floor read from the raw loss, the tau-th round of a batch counted twice, a
one-replicate path, a late scale), graph feedback (an entry entering a second stream through the played
arm's smoothing, a round certificate counting the neighbours but not the played arm, noise shared between
two arms' streams), the contextual policies (a b-noise weight that forgets the context bound, a ridge read
from the reward, a Gram sensitivity with L where L^2 belongs), the ledger (record ids from a stale arm
array), the certificate side (a delta split wrong only at small delta, releases counted per arm) and the
deployment path (a filter that lets one release through after exhaustion, an odometer that under-counts
after a restart, a snapshot that restores a stale generator after a reopen). Those seventeen were all refuted;
four more were then aimed at limits docs/audit.md states (a sensitivity error with the scale right past round
2^14, or on arms >= 8; a record at a batch position no long run targets; a certificate wrong only below
delta = 1e-6). Each class docstring states the true epsilon of the buggy code against its claim. ``CONTROLS14`` are correct but unusual variants (each must
stay CONSISTENT); they are listed before the bugs, as ``bench/audit_planted.py --only round14`` runs them.
Nothing here is imported by the package.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

import numpy as np

from accountants import Certificate
from accountants.gdp_conversion import epsilon_for_delta
from privbandit.contextual import linalg
from privbandit.policies import (BatchedPrivateEXP3, DPEXP3Lap, GaussianTS, JointDPLinUCB, LazyDPTS, PrivateEXP3,
                                 PrivateLinUCB)
from privbandit.policies._exp3_kernels import exp3_rescale
from privbandit.policies.gaussian_ts import GaussianTSSchedule
from privbandit.policies.graph_private import DPUCBN, LazyDPTSN, StreamsSchedule, streams_per_record

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from audit_planted_bugs import _named, _on_statistics, _remember_choice  # noqa: E402
from audit_planted_round13 import pair_arm_noise  # noqa: E402


def _scaled_draws(sampler, factor) -> None:
    """``sampler``'s Laplace draws made at ``factor()`` times the scale it is handed (the class's own
    ``_sum_release``, so the draw is traced); the caller reports the scale it handed in."""

    def scaled(statistic, scale, on_grid=True):
        return type(sampler)._sum_release(sampler, statistic, factor() * np.asarray(scale, dtype=float), on_grid)

    sampler._sum_release = scaled


def _b_entries(dim: int) -> np.ndarray:
    """Which entries of the packed (A, b) vector (without r^2, as Private LinUCB's tree holds it) are b's."""
    i, j = linalg.packed_index(dim + 1)
    keep = ~((i == dim) & (j == dim))
    return j[keep] == dim


# =============================== controls (correct but unusual) ===============================
class Exp3LapWiderClip(DPEXP3Lap):
    """Control: DP-EXP3-Lap clipping its noisy reward to [-2b, 2b + 1] (b = ln T / eps) before rescaling:
    another post-processing of the same eps-DP release. True eps = claimed eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def update(t, arms, rewards):
            rows, arms = run.core.rows, run.core.checked(arms)
            lo = run.pulls[rows, arms]
            noisy = run.noise.release_records(rewards, run.scale, rows, arms, lo)
            run.pulls[rows, arms] = lo + 1
            run.core.learn(arms, exp3_rescale.at(rows.size)(noisy, 2.0 * run.b))

        run.update = update
        return run


class Exp3BatchFloorConstant(BatchedPrivateEXP3):
    """Control: batched private EXP3 (tau = 4) flooring its noisy average loss at -b (b = 1/(eps tau), the
    noise scale on the average; binds in ~18% of batches) instead of -b ln(nK): post-processing of the noisy
    release alone. True eps = claimed eps."""

    def __init__(self, epsilon: float = 1.0, tau: int | None = 4, exact: bool = False):
        super().__init__(epsilon, tau, exact)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.floor = 1.0 / (self.epsilon * run.tau)
        return run


class _AllArmsStreams(StreamsSchedule):
    """The round relation composed over all K streams (max_degree + 1 <= K: an upper bound)."""


class GraphRoundAllArms(DPUCBN):
    """Control: DP-UCB-N whose round-relation certificate composes K streams whatever the graph's degree
    (the complete graph's count): looser, valid. True eps <= claimed eps."""

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        good = super().privacy_schedule(horizon, n_arms, relation=relation, max_degree=max_degree, graph=graph)
        if relation != "round":
            return good
        return _AllArmsStreams(good.base, n_arms, relation)


class LinBWeightTight(PrivateLinUCB):
    """Control: Private LinUCB whose b entries get the per-entry weight L instead of 2 L (half the b noise).
    Valid under the entry relation it certifies (contexts public, a reward moves b_i by at most |z_i|, so b
    moves by ||z||_1 / L <= sqrt d units, inside the declared min(d + 1, d(d+1)/2) + sqrt d). True eps
    <= claimed eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        bound = self.bound

        def patch(stats):
            stats.tree.weights = np.where(_b_entries(stats.dim), bound, stats.tree.weights)

        _on_statistics(run, patch)
        return run


CONTROLS14 = {
    "exp3_lap_wider_clip": Exp3LapWiderClip,
    "exp3_batch_floor_constant": Exp3BatchFloorConstant,
    "graph_round_all_arms": GraphRoundAllArms,
    "lin_b_weight_tight": LinBWeightTight,
}
"""Round 14's controls (correct variants: each must come out CONSISTENT); listed before the bugs."""


# =============================== bugs =========================================================
# --- adversarial ------------------------------------------------------------------------------
class Exp3LapWeightedClipTwo(DPEXP3Lap):
    """DP-EXP3-Lap releasing the importance-weighted reward r / p_I clipped to [0, 2] ("an unbiased estimate,
    bounded for stability") with Lap(1/eps), reported as a sensitivity-1 release of the record; EXP3 then
    learns from the noisy estimate times p_I. The clip is off by the importance weight: the estimate moves by
    up to min(2, 1/p_I) = 2 whenever p_I <= 1/2. True eps = 2 eps per record (1 at the default); claimed eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def update(t, arms, rewards):
            rows, core = run.core.rows, run.core
            arms = core.checked(arms)
            lo = run.pulls[rows, arms]
            estimate = np.minimum(np.asarray(rewards, dtype=float) / core.p_played, 2.0)
            noisy = run.noise.release_records(estimate, run.scale, rows, arms, lo)
            run.pulls[rows, arms] = lo + 1
            core.learn(arms, exp3_rescale.at(rows.size)(noisy * core.p_played, run.b))

        run.update = update
        return run


class Exp3BatchFloorFromRaw(BatchedPrivateEXP3):
    """Batched private EXP3 (tau = 4) whose noisy average loss is kept within 2 b (b = 1/(eps tau), the noise
    scale on the average) of the *raw* average ("a two-scale denoising guard": clip(noisy / tau, raw / tau -
    2b, raw / tau + 2b)). The guard binds with probability e^-2 = 13.5% per batch and then EXP3 learns
    raw / tau -+ 2b exactly. True: not eps-DP for any finite eps (the raw loss sum reaches the weights with
    probability 0.135 per batch: at best (eps, 0.135)); claimed pure eps = 1."""

    def __init__(self, epsilon: float = 1.0, tau: int | None = 4, exact: bool = False):
        super().__init__(epsilon, tau, exact)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def end_batch():
            rows, lo = run.core.rows, run.first
            hi = lo + run.length
            noisy = run.noise.release_records(run.loss, run.scale, rows, run.arms, lo, hi)
            run.pulls[rows, run.arms] = hi
            raw = run.loss / run.tau
            guard = 2.0 / (self.epsilon * run.tau)
            loss = np.clip(noisy / run.tau, raw - guard, raw + guard)
            run.core.learn(run.arms, -loss)
            run.loss = np.zeros_like(run.loss)

        run._end_batch = end_batch
        return run


class Exp3BatchLastRoundTwice(BatchedPrivateEXP3):
    """Batched private EXP3 (tau = 4) whose batch loss sum adds the loss of the batch's tau-th round twice (an
    accumulator that also folds in "the closing round" at the batch end): that record's sensitivity is 2,
    the batch's release still reported as sensitivity 1. Only records at the K-th (tau-th) round of a full
    batch. True eps = 2 eps for those records (2 at the default); claimed eps = 1."""

    def __init__(self, epsilon: float = 1.0, tau: int | None = 4, exact: bool = False):
        super().__init__(epsilon, tau, exact)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _count_closing_twice(run)
        return run


class Exp3LapSingleReplicateHalf(DPEXP3Lap):
    """DP-EXP3-Lap that, run with one replicate ("the deployment path"), draws its Laplace noise at half the
    scale; the ledger hears 1/eps. With two or more replicates it is exact. True eps = 2 eps per record with
    one replicate (2 at the default); claimed eps = 1."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        if replicates == 1:
            _scaled_draws(run.noise.sampler, lambda: 0.5)
        return run


class Exp3LateHalf(PrivateEXP3):
    """Private EXP3 whose loss noise is drawn at half the reported scale once some arm's stream holds 2^14 =
    16,384 records ("the weights have converged"). True eps = 2 eps for every record released after that
    point (2 at the default); claimed eps = 1. Reached only by runs of more than 16,384 rounds."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _scaled_draws(run.noise.sampler, lambda: 0.5 if int(run.pulls.max()) >= 2 ** 14 else 1.0)
        return run


class Exp3BatchLateLastTwice(BatchedPrivateEXP3):
    """Batched private EXP3 (tau = 4) whose batch loss sum adds the tau-th round's loss twice only from round
    2^14 + 1 on (a second accumulator, "kept in float32 past 2^14 rounds", folded in at the batch end). The
    scale, the reports and the noise law are right; the records at the tau-th round of batches past round
    2^14 have sensitivity 2. True eps = 2 for them; claimed eps = 1. Reached only by runs past 16,384 rounds."""

    def __init__(self, epsilon: float = 1.0, tau: int | None = 4, exact: bool = False):
        super().__init__(epsilon, tau, exact)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _count_closing_twice(run, after=2 ** 14)
        return run


def _count_closing_twice(run, after: int = 0) -> None:
    """A batched EXP3 run whose batch loss sum adds the loss of each batch's tau-th round a second time, for
    rounds past ``after``."""
    absorb = run._absorb
    seen = {"t": 0}

    def absorb_twice(rewards):
        first = seen["t"]
        seen["t"] += rewards.shape[0]
        absorb(rewards)
        rounds = first + 1 + np.arange(rewards.shape[0])
        closing = (rounds % run.tau == 0) & (rounds > after)
        if closing.any():
            run.loss = run.loss + (1.0 - rewards[closing]).sum(axis=0)

    run._absorb = absorb_twice


class Exp3LapArmNineDouble(DPEXP3Lap):
    """DP-EXP3-Lap whose released reward is multiplied by a per-arm unit table of eight entries (all 1; arms
    >= 8 fall back to the default unit 2: "rewards in half-points"), still reported as a sensitivity-1
    release: records of arms 8, 9, ... have sensitivity 2. The scale and the noise law are right. True eps =
    2 for records of arms >= 8 (K >= 9 only); claimed eps = 1."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        units = np.where(np.arange(n_arms) >= 8, 2.0, 1.0)

        def update(t, arms, rewards):
            rows, arms = run.core.rows, run.core.checked(arms)
            lo = run.pulls[rows, arms]
            noisy = run.noise.release_records(np.asarray(rewards, dtype=float) * units[arms], run.scale, rows, arms, lo)
            run.pulls[rows, arms] = lo + 1
            run.core.learn(arms, exp3_rescale.at(rows.size)(noisy / units[arms], run.b))

        run.update = update
        return run


class LazyFifthRecordTwice(LazyDPTS):
    """Lazy-DP-TS whose fifth record of an open doubling batch (a batch of 8 or more: stream positions
    2^j + 3, j >= 3 -- 11, 19, 35, 67, ...) is added to the open sum twice ("a running-mean warm-up
    correction"); the batch's release still reports sensitivity 1, the right scale and footprint. True
    eps = 2 for those records (2 at the default); claimed eps = 1. A position keyed to no power of two and
    no release boundary."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        batches, update = run.batches, run.update

        def update_fifth_twice(t, arms, rewards):
            arms_a, values = np.asarray(arms), np.asarray(rewards, dtype=float)
            fifth = batches.pending[run.rows, arms_a] == 4  # pending 4 < target: a batch of >= 8
            update(t, arms, rewards)
            if fifth.any():
                batches._open_sum[run.rows[fifth], arms_a[fifth]] += values[fifth]

        run.update = update_fifth_twice
        return run


# --- graph feedback ---------------------------------------------------------------------------
class GraphSideMaxIntoPulled(LazyDPTSN):
    """Lazy-DP-TS-N whose played arm's stream takes the largest reward revealed in the round ("optimistic
    smoothing over the neighbourhood") instead of its own: a side-observed entry (t, j) then enters arm j's
    stream *and* the played arm's, two Laplace releases of sensitivity 1. Under the entry relation true
    eps = 2 eps (2 at the default); claimed eps = 1. (Under the round relation the max is part of the round's
    record, already counted: that certificate stays valid.)"""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember_choice(run)
        learn = run.learn

        def smoothed(t, observed, values):
            arms = getattr(run, "_bug_arms", None)
            if arms is not None:
                values = np.array(values, dtype=float)
                best = np.where(observed, values, -np.inf).max(axis=1)
                rows = np.flatnonzero(observed.any(axis=1))
                values[rows, np.asarray(arms)[rows]] = best[rows]
            learn(t, observed, values)

        run.learn = smoothed
        return run


class _DegreeStreams(StreamsSchedule):
    """The round relation composed over max_degree streams (the played arm's own stream forgotten)."""


class GraphRoundStreamsDegree(DPUCBN):
    """DP-UCB-N whose round-relation certificate composes max(1, max_degree) streams instead of max_degree + 1
    ("a record reaches the neighbours"; the played arm's own entry forgotten). True eps = (d + 1) x one
    stream's; claimed max(1, d) x (T = 200, eps at 1e-5: d = 1 claimed 1.0 vs true 2.0; d = 2 2.0 vs 3.0;
    d = 3 3.0 vs 4.0)."""

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        good = super().privacy_schedule(horizon, n_arms, relation=relation, max_degree=max_degree, graph=graph)
        if relation != "round":
            return good
        streams = streams_per_record(n_arms, relation, max_degree, graph)
        return _DegreeStreams(good.base, max(1, streams - 1), relation)


class GraphPairedArmNoise(LazyDPTSN):
    """Lazy-DP-TS-N whose batch release of arm 2j+1 re-uses the standard Laplace draw of arm 2j's last batch in
    the same replicate ("a noise pool per arm pair"): every draw is Laplace(1/eps) on its own, but two streams
    share it, so their difference is exact. True: no finite eps (the difference of two released sums is
    noiseless); claimed eps = 1 per entry."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        pair_arm_noise(run.batches)
        return run


# --- contextual -------------------------------------------------------------------------------
class LinBWeightUnitBound(PrivateLinUCB):
    """Private LinUCB (declared bound L = 16) whose b entries get the per-entry weight 2 instead of 2 L (the
    context bound forgotten in b's weight; A's entries keep L^2). A reward moves b by ||z||_1 <= sqrt(d) L:
    17.9 units of weight 2 at d = 5, L = 16, against a declared vector sensitivity of 6 + sqrt 5 = 8.24. True
    eps = 17.9 eps0 = 0.894 per record (eps0 = 1/20); claimed 8.24 eps0 = 0.412 (the paper's S eps0 = 1)."""

    def __init__(self, epsilon: float = 1.0, dim: int = 5, bound: float = 16.0, alpha: float = 1.0,
                 regularization: float = 1.0, shift: float = 0.0, contexts: str = "clip") -> None:
        super().__init__(epsilon, dim, bound, alpha, regularization, shift, contexts)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            stats.tree.weights = np.where(_b_entries(stats.dim), 2.0, stats.tree.weights)

        _on_statistics(run, patch)
        return run


class LinRidgeFromReward(PrivateLinUCB):
    """Private LinUCB whose ridge adapts to the round's reward ("regularise at the noise's size after a
    success"): the noisy A + (lambda + shift + r_t s) I is inverted for the played arm, r_t the raw reward of
    the record just inserted and s = ``noise_scale_shift(T)`` (the noise's Frobenius size). The raw reward
    enters the index outside any release. True: not bounded by any eps (given the noise, the index and the
    next choices move with r_t deterministically); claimed eps = 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        size = self.noise_scale_shift(horizon)

        def patch(stats):
            add = stats.add

            def add_with_ridge(rows, groups, z, r):
                add(rows, groups, z, r)  # inserts and releases as before
                noisy = stats.tree.noisy_sum(rows, groups)
                noisy = np.concatenate([noisy, np.zeros((noisy.shape[0], 1))], axis=1)
                a, b = linalg.split_gram(linalg.unpack(noisy, stats.dim + 1), stats.dim)
                ridge = (stats.diag + size * np.asarray(r, dtype=float))[:, None, None]
                a_inv = linalg.regularized_inverse(a + ridge * np.eye(stats.dim), stats.floor)
                stats.a_inv[rows, groups] = a_inv
                stats.theta[rows, groups] = np.einsum("bij,bj->bi", a_inv, b)

            stats.add = add_with_ridge

        _on_statistics(run, patch)
        return run


class JointSensitivityLNotSquared(JointDPLinUCB):
    """Joint-DP LinUCB (shared model, L = 4, calibration "gdp", eps = 1 at delta 1e-6) whose run builds its
    tree with the Gram sensitivity sqrt 2 (L + 1) = 7.07 instead of sqrt 2 (L^2 + 1) = 24.04, and sigma
    calibrated from it (both reported: the ledger agrees with itself). A reward change moves the Gram matrix
    by at most sqrt(2 L^2 + 1) = 5.74 < 7.07 (entry relation: valid), a round whose context changes by up to
    24.04: under the round relation the shared model certifies, true mu = 3.4 x claimed (eps ~ 3.4 x 1 at
    delta 1e-6 and more); claimed eps = 1."""

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, dim: int = 5, bound: float = 4.0,
                 alpha: float = 1.0, regularization: float = 1.0, model: str = "shared",
                 calibration: str = "gdp", failure: float = 0.01, contexts: str = "clip") -> None:
        super().__init__(epsilon, delta, dim, bound, alpha, regularization, model, calibration, failure, contexts)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        wrong = math.sqrt(2.0) * (self.bound + 1.0)
        factor = wrong / self.sensitivity()

        def patch(stats):
            stats.tree.sensitivity = wrong
            stats.tree.scale = stats.tree.scale * factor

        _on_statistics(run, patch)
        return run


# --- ledger: record ids from a stale array -----------------------------------------------------
class Exp3LedgerStaleArms(DPEXP3Lap):
    """DP-EXP3-Lap whose ledger reports name the stream from the *previous* round's arms array (the positions
    from the right one): right scale, right count, wrong record ids. The noise is right (true eps = 1 per
    record, = certified), but the realized spend the ledger reports is wrong: a record of an arm just switched
    to is charged to the other arm's stream (realized 0 for it, 2 eps for another record)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        state = {"prev": None}

        def update(t, arms, rewards):
            rows, arms = run.core.rows, run.core.checked(arms)
            named = arms if state["prev"] is None else state["prev"]
            lo = run.pulls[rows, arms]
            noisy = run.noise.release_records(rewards, run.scale, rows, named, lo)
            run.pulls[rows, arms] = lo + 1
            state["prev"] = arms.copy()
            run.core.learn(arms, exp3_rescale.at(rows.size)(noisy, run.b))

        run.update = update
        return run


# --- certificates -------------------------------------------------------------------------------
class _SmallDeltaSplitSchedule(GaussianTSSchedule):
    """eps at delta <= 1e-5 by the exact GDP conversion at 10 delta (a split delta / 10 written as delta * 10
    on the closed-form branch); larger deltas through the accountants, right."""

    @staticmethod
    def _slipped(delta) -> bool:
        """Whether ``delta`` takes the slipped branch."""
        return 0 < delta <= 1e-5

    def epsilon(self, rounds, delta, accountants=None):
        good = GaussianTSSchedule.epsilon(self, rounds, delta, accountants)
        mu = self.mu(rounds)
        if not self._slipped(delta) or rounds <= 0 or not math.isfinite(mu) or mu == 0:
            return good
        value = epsilon_for_delta(mu, 10.0 * delta)
        return Certificate(value, "gdp", {"gdp": value})


class TSSmallDeltaSplit(GaussianTS):
    """Gaussian TS (b = 1, c = 4) whose eps at delta <= 1e-5 is the GDP conversion at 10 delta; events, mu and
    eps at delta > 1e-5 are right. At T = 200, K = 2 (mu = 4.97): claimed 30.13 at 1e-5 vs true 32.87; at 1e-9
    claimed 39.63 vs true 41.56 (at 1e-3 both 26.97)."""

    def __init__(self, b: int = 1, c: float = 4.0):
        super().__init__(b, c)

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _SmallDeltaSplitSchedule(self.b, self.c, n_arms)


class _TinyDeltaSplitSchedule(_SmallDeltaSplitSchedule):
    """eps at delta < 1e-6 by the exact GDP conversion at 10 delta (the split slip of ``_SmallDeltaSplitSchedule``
    on a branch taken only for deltas below 1e-6); deltas >= 1e-6 right."""

    @staticmethod
    def _slipped(delta) -> bool:
        return 0 < delta < 1e-6


class TSTinyDeltaSplit(GaussianTS):
    """Gaussian TS (b = 1, c = 4) whose eps at delta < 1e-6 is the GDP conversion at 10 delta; events, mu and
    eps at delta >= 1e-6 (1e-5 and 1e-3 among them) are right. At T = 200, K = 2 (mu = 4.97): claimed 39.63
    at 1e-9 vs true 41.56; at 1e-12 claimed 45.11 vs true 46.75."""

    def __init__(self, b: int = 1, c: float = 4.0):
        super().__init__(b, c)

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _TinyDeltaSplitSchedule(self.b, self.c, n_arms)


class _PerArmSchedule(GaussianTSSchedule):
    """Releases counted per arm: ceil(n(t) / K) ("each arm releases one posterior per K rounds")."""

    def releases(self, rounds):
        return -(-GaussianTSSchedule.releases(self, rounds) // self.n_arms)


class TSReleasesPerArm(GaussianTS):
    """Gaussian TS whose schedule counts releases per arm (ceil(n(t) / K)) instead of per record: every round
    draws every arm's posterior, so the worst record is in n(t) releases. True mu ~ sqrt(K) x claimed (T = 200,
    b = 0, c = 1: K = 2 claimed mu 7.07 vs true 9.97, eps at 1e-5 54.4 vs 91.5; K = 6: 4.12 vs 9.97)."""

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _PerArmSchedule(self.b, self.c, n_arms)


ROUND14_BUGS = {
    "exp3_lap_weighted_clip_two": Exp3LapWeightedClipTwo,
    "exp3_batch_floor_from_raw": Exp3BatchFloorFromRaw,
    "exp3_batch_last_round_twice": Exp3BatchLastRoundTwice,
    "exp3_lap_single_replicate_half": Exp3LapSingleReplicateHalf,
    "exp3_late_half": Exp3LateHalf,
    "exp3_batch_late_last_twice": Exp3BatchLateLastTwice,
    "exp3_lap_arm_nine_double": Exp3LapArmNineDouble,
    "lazy_fifth_record_twice": LazyFifthRecordTwice,
    "graph_side_max_into_pulled": GraphSideMaxIntoPulled,
    "graph_round_streams_degree": GraphRoundStreamsDegree,
    "graph_paired_arm_noise": GraphPairedArmNoise,
    "lin_b_weight_unit_bound": LinBWeightUnitBound,
    "lin_ridge_from_reward": LinRidgeFromReward,
    "joint_sensitivity_l_not_squared": JointSensitivityLNotSquared,
    "exp3_ledger_stale_arms": Exp3LedgerStaleArms,
    "ts_small_delta_split": TSSmallDeltaSplit,
    "ts_releases_per_arm": TSReleasesPerArm,
    "ts_tiny_delta_split": TSTinyDeltaSplit,
}
"""Round 14 (session 12, s12/blind): written blind (docs/audit.md, "Round 14")."""

for _key, _cls in CONTROLS14.items():
    _named(_cls, "control_" + _key)
for _key, _cls in ROUND14_BUGS.items():
    _named(_cls, "bug_" + _key)


# =============================== deployment path ==============================================
from privbandit.deploy.deployment import Decision, Deployment  # noqa: E402


class DeployDoubleOpen(Deployment):
    """Control: a deployment whose ``open`` opens the store, closes it and opens it again (a "health check"
    reopen): nothing is released or restored differently."""

    @classmethod
    def open(cls, path):
        Deployment.open(path).close()
        return super().open(path)


class DeployExploitPeeksPolicy(Deployment):
    """Once the filter has refused the next round, the first exploit decision asks the policy for its
    current favourite (``select(stop + 1)``: one more round of releases) and logs it as an exploit decision
    with no releases; every later exploit decision is the usual most-played arm. Exactly one release set
    past exhaustion. True eps = cert(stop + 1) > budget; claimed cert(stop) <= budget (the bench's drive:
    Gaussian TS c = 4, budget cert(30) = 10.36 at delta 1e-6, true cert(31) = 10.58)."""

    def select(self):
        def body():
            info = self._info()
            if info["rounds"] < self.stop_round or info["open_decision"] is not None:
                return None
            state = self._load(info)
            if state.get("bug_peeked"):
                return None
            arm = int(state["run"].select(info["rounds"] + 1)[0])
            state["bug_peeked"] = True
            cur = self._conn.execute(
                "INSERT INTO decisions (round, arm, kind, releases, state_digest, created) VALUES (?, ?, ?, ?, ?, ?)",
                (None, arm, "exploit", json.dumps([0] * self.n_arms), info["digest"], time.time()))
            self._write(info, state, info["rounds"], None)
            return Decision(cur.lastrowid, arm, "exploit", None)

        d = self._call(body)
        return d if d is not None else super().select()


class DeployRestartUndercounts(Deployment):
    """After a reopen, the first policy round is released but the round counter is not advanced ("the
    counter was already bumped before the restart"): the next round re-uses its number, and the filter
    allows one policy round more per restart. True eps = cert(stop + restarts before exhaustion): the bench's
    drive (30 rounds afforded, a restart every fourth decision) releases 39 policy rounds, cert(39) = 12.21
    at delta 1e-6; claimed cert(30) = 10.36."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)
        dep._bug_cold = True
        return dep

    def select(self):
        d = super().select()
        if getattr(self, "_bug_cold", False) and d.kind == "policy":
            self._bug_cold = False

            def body():
                info = self._info()
                state = self._load(info)
                self._write(info, state, info["rounds"] - 1, info["open_decision"])

            self._call(body)
        return d


_STALE_NOISE: dict = {}


class DeployReopenStaleRng(Deployment):
    """A reopen restores the noise state -- the generator and the posterior's cursor into its block of
    pre-drawn normals -- from a side copy taken at the *previous* open ("the noise state is cached beside the
    store and refreshed at open"), not from the snapshot: after every restart but the first, the normals of
    the previous segment are used again, on other statistics. True: no finite eps (two releases sharing a
    normal differ by a noiseless function of the data); claimed the schedule's eps (cert(30))."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)
        key = os.path.abspath(os.fsdecode(path))
        state = dep.snapshot()
        posterior = getattr(state["run"], "posterior", None)
        current = (state["rng"].bit_generator.state, getattr(posterior, "_pos", None))
        if key in _STALE_NOISE:
            rng_state, pos = _STALE_NOISE[key]
            state["rng"].bit_generator.state = rng_state
            if pos is not None:
                posterior._pos = pos
        _STALE_NOISE[key] = current
        return dep


DEPLOY_CONTROLS14 = {"deploy_double_open": DeployDoubleOpen}
DEPLOY_BUGS14 = {"deploy_exploit_peeks_policy": DeployExploitPeeksPolicy,
                 "deploy_restart_undercounts": DeployRestartUndercounts,
                 "deploy_reopen_stale_rng": DeployReopenStaleRng}
"""Round 14's deployment rows, driven by ``audit_planted_bugs.drive_deployment`` (holds, a restart every
fourth decision, 60 decisions, 30 rounds afforded) and audited from the store."""
