"""Round 19 of the planted bugs (session 17, s17/blind), written blind: from docs/audit.md (its description, the
"## Limits" section, the "remaining limits" / "still missed" paragraphs of rounds 10-18), the bench harness and the
earlier rounds' modules (their registration style and what they already planted), and the code of the policies,
mechanisms and deployment the bugs live in -- never from the auditor's check code (privbandit/audit/ beyond the
runner, tapes and constants the harness calls).

Like rounds 11-18, each policy bug is a subclass of a private policy with one mistake made inside ``start`` (an
instance-level patch, so the clean twin -- the parent's ``start`` on the same configuration -- is the unmodified
policy); the deployment rows are ``Deployment`` subclasses driven by ``audit_planted_bugs.drive_deployment``. Aimed at
families and mechanisms of mistake the ~210 earlier rows did not plant:

* **the exponential weights' later steps, with a large effect** (round 18's miss was 1.8 %): EXP3 and EXP3-tau
  importance-weighting by the exponential weights' own probability w_a / W instead of the gamma-mixed p_a they
  sampled from -- identical at the first step (uniform weights), unbounded once the weights diverge;
* **seed entropy**: Lazy-DP-TS replicates each seeded with 32 bits drawn from the run's generator (noise that is
  independent, secret, correctly scaled and seed-dependent -- and brute-forceable: 2^32 candidate streams);
* **unreported releases used only in some rounds**: Private-UCB re-synchronising its index on freshly noised raw sums
  every 64th round (through ``rng.laplace``, neither traced nor reported);
* **data-dependent inclusion of side observations** (DP-UCB-N dropping side observations equal to 0);
* **a buffer never cleared** (DP-UCB's fake-zero items keeping each arm's last real reward);
* **an "unbiased" mean** (DP-UCB-Int releasing sum / (n - 1) with sensitivity 1 / n reported);
* **resampling outliers** (Batched Private EXP3 re-drawing a batch's noise while the floor binds);
* **a running raw mean inside the released statistic** (Private-Lin-UCB centring rewards on the raw running mean);
* **a counter one step behind its sum** (Gaussian TS's count advanced at the next decision);
* **deployment imputation**: a reward of 0 ("no response") imputed with the arm's last applied reward.

Each class docstring states the true epsilon of the buggy code against its claim. ``CONTROLS19`` are correct but
unusual variants (each must stay CONSISTENT), most of them twins of a bug; they are listed before the bugs, as
``bench/audit_planted.py --only round19`` runs them. Nothing here is imported by the package.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

import privbandit.deploy.deployment as _deployment
from privbandit.deploy.deployment import Deployment
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import (DPUCB, DPUCBN, EXP3, BatchedPrivateEXP3, DPUCBInt, EXP3Tau, GaussianTS,
                                 LazyDPTS, PrivateLinUCB, PrivateUCB)
from privbandit.policies.dp_ucb import _INTP, ucb_index

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from audit_planted_bugs import _named  # noqa: E402

RESYNC = 64
"""Private-UCB re-synchronises its index every 64th round (the bug from raw sums, the control from released ones)."""

SEED_BITS = 32
"""Lazy-DP-TS's per-replicate seeds: 32 bits each (the control: 126 bits)."""

LOG_WEIGHT_FLOOR = -50.0
"""EXP3's log-weights floored at 50 below the largest (the control)."""

P_GUARD = 1e-12
"""EXP3's unmixed probability guarded away from 0 ("no division by zero")."""


# =============================== seams =========================================================
class _ReplicateStreams(NoiseSampler):
    """Float-mode Laplace releases told ``_bug_rows`` (the replicate of each entry): replicate r draws from its own
    generator ``_bug_generators[r]`` (made at start, seeded from the run's generator)."""

    _bug_rows = None
    _bug_generators = None

    def _sum_release(self, statistic, scale, on_grid=True):
        told = self._bug_rows
        if self.exact or told is None or told.size != np.size(statistic):  # an untold release: the library's own
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        gens = self._bug_generators
        z = np.fromiter((gens[r].laplace(0.0, 1.0) for r in told.tolist()), dtype=float, count=told.size)
        return np.asarray(statistic, dtype=float) + z.reshape(np.shape(statistic)) * (
            np.asarray(scale, dtype=float) * self._noise_scale_factor)


def _replicate_streams(run, replicates: int, rng, bits: int) -> None:
    """Lazy-DP-TS's batch releases from one generator per replicate, each seeded (at start, in replicate order: a
    fixed number of draws from the run's generator) with ``bits`` random bits."""
    fb = run.batches
    if bits <= 63:
        seeds = [int(s) for s in rng.integers(0, 2 ** bits, size=replicates, dtype=np.uint64)]
    else:  # two 63-bit words: 126 bits
        seeds = [[int(a), int(b)] for a, b in rng.integers(0, 2 ** 63, size=(replicates, 2))]
    sampler = fb.sampler
    sampler.__class__ = _ReplicateStreams
    sampler._bug_generators = [np.random.default_rng(s) for s in seeds]
    close = fb._close

    def told(idx):
        sampler._bug_rows = np.asarray(idx[0]).reshape(-1)
        try:
            return close(idx)
        finally:
            sampler._bug_rows = None

    fb._close = told


def _resync_every(run, rng, from_raw: bool) -> None:
    """Private-UCB whose index, every RESYNC-th round, reads freshly noised sums: Lap(L / eps0) added (by
    ``rng.laplace``, outside the sampler) to the raw sums (``from_raw``: the bug) or to the tree's released sums (the
    control's extra jitter: post-processing)."""
    tree = run.tree
    rows = np.arange(run.replicates)
    raw = np.zeros((run.replicates, run.n_arms))
    select, update = run.select, run.update

    def recording(t, arms, rewards):
        update(t, arms, rewards)
        raw[rows, np.asarray(arms)] += np.asarray(rewards, dtype=float)

    def resynced(t):
        if t <= run.n_arms or t % RESYNC:
            return select(t)
        base = raw if from_raw else tree.noisy_sum
        sums = base + rng.laplace(0.0, tree.scale, base.shape)
        index, arms = np.empty((run.replicates, run.n_arms)), np.empty(run.replicates, _INTP)
        ucb_index.at(run.replicates)(sums, tree.count, run.relaxation, 2.0 * math.log(t), 0.0, 0.0, False, index, arms)
        return arms

    run.update, run.select = recording, resynced


def _side_filter(run, keep) -> None:
    """DP-UCB-N whose learn drops side observations (observed entries other than the played arm's) where
    ``keep(observed, values, counts, played)`` is False; the played arm's own reward is always kept."""
    observe, learn = run.observe, run.learn
    told = {}

    def observing(t, feedback):
        told["arms"] = np.asarray(feedback.arms)
        try:
            return observe(t, feedback)
        finally:
            told.pop("arms", None)

    def learning(t, observed, values):
        arms = told.get("arms")
        if arms is not None:
            played = np.zeros(observed.shape, dtype=bool)
            played[np.arange(observed.shape[0]), arms] = True
            observed = observed & (played | keep(observed, values, run.counts, played))
            values = np.where(observed, values, 0.0)
        return learn(t, observed, values)

    run.observe, run.learn = observing, learning


def _importance_unmixed(core) -> None:
    """EXP3's ``learn`` importance-weighting by the exponential weights' own probability w_a / W of the played arm
    (floored at P_GUARD) instead of the gamma-mixed probability the choice was drawn from."""
    learn = core.learn

    def unmixed(arms, gains):
        mixed = core.p_played
        lw = core.log_w
        w = np.exp(lw - lw.max(axis=1, keepdims=True))
        own = w[core.rows, np.asarray(arms)] / w.sum(axis=1)
        core.p_played = np.maximum(own, P_GUARD)
        try:
            learn(arms, gains)
        finally:
            core.p_played = mixed

    core.learn = unmixed


def _centred(run, centre, tally) -> None:
    """Private-Lin-UCB inserting clip(r - centre(rows) + 1/2, 0, 1) instead of each reward r; ``tally`` (R, 2): the
    replicate's count and raw sum, advanced after each round (None: the centre reads nothing)."""
    update = run.update

    def centring(t, arms, rewards, mask=None):
        rows = np.arange(run.replicates) if mask is None else np.flatnonzero(mask)
        r = np.asarray(rewards, dtype=float)
        fed = r.copy()
        fed[rows] = np.clip(r[rows] - centre(rows) + 0.5, 0.0, 1.0)
        if tally is not None:
            tally[rows, 0] += 1.0
            tally[rows, 1] += r[rows]
        return update(t, arms, fed, mask)

    run.update = centring


# =============================== controls (correct but unusual) ===============================
class LazyReplicateSeeds126Bit(LazyDPTS):
    """Control (the twin of ``lazy_replicate_seeds_32_bit``): Lazy-DP-TS whose replicates each draw their batch noise
    from a generator of their own, seeded at start with 126 bits drawn from the run's generator ("replicates replayable
    one by one"): independent, secret, Lap(1/eps) of the reported scale, a function of the run's seed alone. True eps
    = claimed eps = 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _replicate_streams(run, replicates, rng, bits=126)
        return run


class Exp3LogWeightsFloored(EXP3):
    """Control (EXP3 numerics, beside ``exp3_importance_unmixed_p``): EXP3 flooring every log-weight at 50 below the
    largest after each update ("no denormals"). The floor is a 1-Lipschitz map of each log-weight gap applied after
    the update, so it never widens the gap between two neighbouring runs' log-weights; the choice still mixes in the
    uniform gamma / K (an arm 50 below weighs e^-50 ~ 2e-22 of the exponential part either way). True eps <= claimed
    eps (the certificate's step bound and floor still hold)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core = run.core
        learn = core.learn

        def floored(arms, gains):
            learn(arms, gains)
            top = core.log_w.max(axis=1, keepdims=True)
            np.maximum(core.log_w, top + LOG_WEIGHT_FLOOR, out=core.log_w)

        core.learn = floored
        return run


class DPUCBNSideThinnedByCounts(DPUCBN):
    """Control (the twin of ``dp_ucb_n_zero_side_observations_skipped``): DP-UCB-N taking a side observation only for
    an arm observed fewer times than the played arm ("catch-up: well-observed arms need no more"). Which entries are
    kept depends on the counts -- on the actions and the public graph only -- so a dropped entry is in no release and a
    kept one is inserted as in the parent: each record in one hybrid stream at eps. True eps = claimed eps (the hybrid
    schedule at n(t) = t, 1 stream under "entry")."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _side_filter(run, lambda observed, values, counts, played:
                     counts < (counts * played).sum(axis=1, keepdims=True))
        return run


class PrivateLinUCBRewardsShiftedByPrior(PrivateLinUCB):
    """Control (the twin of ``private_lin_ucb_rewards_centred_on_raw_mean``): Private-Lin-UCB centring each reward on
    a fixed prior mean 0.3 instead of the raw running mean (the inserted value clip(r - 0.3 + 1/2, 0, 1)): a fixed
    1-Lipschitz map of [0, 1] into [0, 1] applied to each record alone, so a record still moves only its own
    round's value, by at most as much as the parent's. True eps = claimed eps = 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _centred(run, lambda rows: np.full(rows.size, 0.3), None)
        return run


class PrivateUCBIndexJitteredEvery64(PrivateUCB):
    """Control (the twin of ``private_ucb_resync_from_raw_every_64``): Private-UCB whose index, every 64th round, reads
    the tree's released sums plus a fresh Lap(L / eps0) each ("jitter breaks ties between equal arms"), drawn by
    ``rng.laplace`` outside the sampler: post-processing of the released sums with data-independent noise. True eps =
    claimed eps (0.5 pure per record at K = 2: the tree at eps / K)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _resync_every(run, rng, from_raw=False)
        return run


CONTROLS19 = {
    "lazy_replicate_seeds_126_bit": LazyReplicateSeeds126Bit,
    "exp3_log_weights_floored": Exp3LogWeightsFloored,
    "dp_ucb_n_side_thinned_by_counts": DPUCBNSideThinnedByCounts,
    "private_lin_ucb_rewards_shifted_by_prior": PrivateLinUCBRewardsShiftedByPrior,
    "private_ucb_index_jittered_every_64": PrivateUCBIndexJitteredEvery64,
}
"""Round 19's policy controls (correct variants: each must come out CONSISTENT); listed before the bugs."""


# =============================== bugs =========================================================
# --- the exponential weights' later steps ----------------------------------------------------------
class Exp3ImportanceUnmixedP(EXP3):
    """EXP3 importance-weighting each gain by the exponential weights' own probability w_a / W of the played arm
    ("Auer et al.'s estimator divides by the weight's share; the gamma mix is only for exploration") instead of the
    mixed p_a = (1 - gamma) w_a / W + gamma / K it sampled from (guarded at 1e-12 against a division by zero). At the
    first step the weights are uniform and the two agree; once they diverge, w_a / W of a neglected arm falls far
    below the floor gamma / K the certificate's step bound eta / floor relies on, and a record moves that arm's
    log-weight by eta r / (w_a / W) -- up to eta x 1e12. True: no finite bound of the certificate's form (the per-step
    log-ratio grows as 1 / (w_a / W)); claimed 676.9 at delta 1e-5 (K = 2, T = 200)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _importance_unmixed(run.core)
        return run


class Exp3TauImportanceUnmixedP(EXP3Tau):
    """EXP3-tau with the same estimator slip as ``exp3_importance_unmixed_p``: each batch's gain total / tau weighted
    by 1 / (w_a / W) of the batch's arm instead of 1 / p_a. EXP3-tau's batches make each step 1 / tau of EXP3's (one
    gain of sensitivity 1 / tau per batch), but the slip is the same: once an arm's exponential weight falls below the
    floor gamma / K, a record moves its log-weight by eta / (tau w_a / W), beyond the certificate's step bound.
    True: no finite bound of the certificate's form; claimed 75.21 at delta 1e-5 (K = 2, T = 200)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _importance_unmixed(run.core)
        return run


# --- seed entropy ------------------------------------------------------------------------------------
class LazyReplicateSeeds32Bit(LazyDPTS):
    """Lazy-DP-TS whose replicates each draw their batch noise from a generator of their own, seeded at start with
    ``rng.integers(2**32)`` ("a uint32 seed per replicate, so one replicate can be replayed alone"). The noise is
    independent across replicates, secret, of the reported scale and changes with the run's seed -- but each
    replicate's whole noise stream is one of 2^32, so an observer who enumerates the 2^32 seeds (minutes of CPU)
    recovers it from the first few releases and subtracts it from every later one. True: no finite eps against such an
    observer (the releases are then exact batch sums); claimed 1 (pure). Information-theoretically every PRNG stream
    is one of finitely many; 32 bits is what makes the search practical (the control seeds with 126)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _replicate_streams(run, replicates, rng, bits=SEED_BITS)
        return run


# --- unreported releases used in some rounds ---------------------------------------------------------
class PrivateUCBResyncFromRawEvery64(PrivateUCB):
    """Private-UCB re-synchronising its index every 64th round ("the tree's error grows with log n: refresh from the
    raw sums kept for diagnostics"): the index of rounds 64, 128, ... reads raw sum + Lap(L / eps0) per arm, drawn by
    ``rng.laplace`` (not the tree's sampler) and reported to no ledger; the tree and its releases are unchanged. Each
    resync is one more Lap(L / eps0) release of every record so far (sensitivity 1). True: eps0 (1 + m / L) for a
    record before m resyncs -- 0.5 x (1 + 3 / 8) = 0.69 at T = 200, 0.5 x (1 + 31 / 11) = 1.9 at T = 2,000; claimed
    0.5 pure (K = 2, eps = 1)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _resync_every(run, rng, from_raw=True)
        return run


# --- data-dependent inclusion of side observations -----------------------------------------------------
class DPUCBNZeroSideObservationsSkipped(DPUCBN):
    """DP-UCB-N forwarding only the side observations that are not 0 ("a zero side observation is a non-event: skip
    it to keep the streams sparse"); the played arm's own reward is always kept. Whether a side entry becomes a record
    -- its arm's count, the positions of every later record of that stream and the counts at which its hybrid
    releases -- depends on that entry's value: a 0 on one neighbour and a 1 on the other moves every later release of
    the stream to another count. True: no finite eps (a release at a count reached on one neighbour only); claimed 1
    (pure, "entry"). Without side observations (the edgeless graph) it is the parent."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _side_filter(run, lambda observed, values, counts, played: values != 0.0)
        return run


# --- a buffer never cleared ----------------------------------------------------------------------------
class DPUCBFakeItemsKeepLastReward(DPUCB):
    """DP-UCB whose round buffer of items is written only at the pulled arm ("zeroing R x K entries a round was
    measured slow"), so the "fake zero" item of every other arm is that arm's last real reward, fed again every round
    until the arm is pulled next. A record then enters its arm's stream once per round until the next pull of that
    arm: up to t items. True: up to t x the claim (sensitivity = the number of repeats, at every node that holds them);
    claimed 1 (pure, the hybrid schedule at n(t) = t)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        values, everything = np.zeros((replicates, n_arms)), np.ones((replicates, n_arms), dtype=bool)
        rows = np.arange(replicates)

        def update(t, arms, rewards):
            arms = np.asarray(arms)
            values[rows, arms] = np.asarray(rewards, dtype=float)
            run.counts[rows, arms] += 1
            run.hybrid.insert(values, everything)

        run.update = update
        return run


# --- an "unbiased" mean ----------------------------------------------------------------------------------
class DPUCBIntUnbiasedMean(DPUCBInt):
    """DP-UCB-Int releasing sum / (n - 1) at each release of n items ("the unbiased mean", a confusion with the sample
    variance's Bessel correction) with Lap(n^(v/2 - 1)) and sensitivity 1 / n reported. The statistic's sensitivity is
    1 / (n - 1): each release is n / (n - 1) x eps_n. True: the certificate's releases each scaled by n / (n - 1)
    (first release at n = f); claimed: the certificate's (1 at delta 1e-6 by the calibrated interval)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        sums = im.sum

        release = im._release

        def unbiased(rr, kk):
            if rr.size == 0:
                return release(rr, kk)
            n = im.count[rr, kk].astype(float)
            saved = sums[rr, kk].copy()
            sums[rr, kk] = saved * n / np.maximum(n - 1.0, 1.0)
            try:
                return release(rr, kk)
            finally:
                sums[rr, kk] = saved

        im._release = unbiased
        return run


# --- resampling outliers ---------------------------------------------------------------------------------
class BatchedExp3RedrawWhileFloored(BatchedPrivateEXP3):
    """Batched Private EXP3 re-drawing a batch's noise while its noisy average loss lies below the floor -b ln(nK)
    ("an outlier: draw again") instead of flooring it (the library's post-processing); each re-draw goes through the
    same sampler and is reported to no ledger. The learned value is then the loss sum plus Laplace noise *conditioned
    on* sum + Z >= -tau b ln(nK): a conditioning whose normaliser depends on the sum, and every re-draw is one more
    (unreported) look at it. True: > 1 per record (the conditioned law's ratio adds up to ln(P(S' + Z >= c) /
    P(S + Z >= c)) <= 1 to each release; and the number of draws is itself a function of the data); claimed 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        noise = run.noise
        release = noise.release_records

        def redrawing(values, scale, replicate, stream, position, end=None):
            noisy = release(values, scale, replicate, stream, position, end)  # the one reported release
            low = noisy / run.tau < -run.floor
            while low.any():  # silent re-draws through the same sampler (the parent's floor then never binds)
                noisy[low] = noise.sampler._sum_release(values[low], scale)
                low = noisy / run.tau < -run.floor
            return noisy

        noise.release_records = redrawing
        return run


# --- a running mean of raw rewards inside the released statistic -------------------------------------------
class PrivateLinUCBRewardsCentredOnRawMean(PrivateLinUCB):
    """Private-Lin-UCB centring each reward on the running mean of the replicate's raw rewards before it enters the
    statistics ("mean-centred ridge targets", shifted by 1/2 and clipped to stay in [0, 1]): the value inserted at
    round t is clip(r_t - rbar_(t-1) + 1/2, 0, 1), rbar over every earlier round. A record h then moves the value
    inserted at every later round (by up to 1 / (t - 1) each), not only its own: its footprint is the whole rest of
    the stream while the ledger reports its own position. True: up to 1 + sum_t 1/(t - 1) ~ 1 + ln T in units of the
    per-record sensitivity (6.3 at T = 200); claimed 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tally = np.zeros((replicates, 2))  # n, sum
        _centred(run, lambda rows: np.where(tally[rows, 0] > 0, tally[rows, 1] / np.maximum(tally[rows, 0], 1), 0.5),
                 tally)
        return run


# --- a counter advanced one step after the sum -----------------------------------------------------------
class GaussianTSCountLagsSum(GaussianTS):
    """Gaussian TS advancing an arm's count when the next decision is committed (after the next select's posterior
    draw) but its sum when the reward arrives ("the count is the number of decisions made on the arm"): the draw of
    round t + 1 reads S_k / k with sigma^2 = c / k and sensitivity 1 / k -- the parent's formula at count k - 1 --
    after k records. The ledger hears what was drawn (consistent), but the schedule's worst release, 1 / sqrt(c (k_min
    + 1)) with k_min = 1, assumes an arm's first record is in draws of count >= 1 + 1: here an arm with one record
    releases at 1 / sqrt(c) each round until it is pulled again. True: mu^2 up to twice the claim's for such a record
    (every release at 1/c instead of 1/(2c)); claimed mu = sqrt(n(t) / 2c) (b = 0, c = 1)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        rows = np.arange(replicates)
        pending = np.zeros((replicates, n_arms))
        select, update = run.select, run.update

        def counted_late(t):
            arms = select(t)
            run.counts += pending
            pending[...] = 0.0
            return arms

        def summed(t, arms, rewards):
            update(t, arms, rewards)
            arms = np.asarray(arms)
            run.counts[rows, arms] -= 1.0
            pending[rows, arms] += 1.0

        run.select, run.update = counted_late, summed
        return run


ROUND19_BUGS = {
    "exp3_importance_unmixed_p": Exp3ImportanceUnmixedP,
    "exp3_tau_importance_unmixed_p": Exp3TauImportanceUnmixedP,
    "lazy_replicate_seeds_32_bit": LazyReplicateSeeds32Bit,
    "private_ucb_resync_from_raw_every_64": PrivateUCBResyncFromRawEvery64,
    "dp_ucb_n_zero_side_observations_skipped": DPUCBNZeroSideObservationsSkipped,
    "dp_ucb_fake_items_keep_last_reward": DPUCBFakeItemsKeepLastReward,
    "dp_ucb_int_unbiased_mean": DPUCBIntUnbiasedMean,
    "batched_exp3_redraw_while_floored": BatchedExp3RedrawWhileFloored,
    "private_lin_ucb_rewards_centred_on_raw_mean": PrivateLinUCBRewardsCentredOnRawMean,
    "gaussian_ts_count_lags_sum": GaussianTSCountLagsSum,
}
"""Round 19 (session 17, s17/blind): written blind (docs/audit.md, "Round 19")."""

for _prefix, _table in (("control_", CONTROLS19), ("bug_", ROUND19_BUGS)):  # the names the CLI audits them by
    for _key, _cls in _table.items():
        _named(_cls, _prefix + _key)


# =============================== deployment rows ================================================
def _imputing(dep, decision: int, reward, impute):
    """``Deployment.update`` with a reward of 0 replaced by ``impute(dep, decision)`` (None: kept) before it reaches
    the policy; the log keeps what the caller sent as ``raw_reward`` and what the policy learned as ``reward``."""
    return _feeding(dep, decision, reward, lambda clipped: impute(dep, decision) if clipped == 0.0 else None)


def _feeding(dep, decision: int, reward, fed_of):
    """``Deployment.update`` feeding the policy ``fed_of(clipped reward)`` (None: the clipped reward itself); the log
    keeps what the caller sent as ``raw_reward`` and what the policy learned as ``reward`` (round 20 reuses it)."""
    raw, clipped = _deployment.check_reward(reward, dep.strict_rewards)
    fed = fed_of(clipped)
    if fed is None:
        return Deployment.update(dep, decision, reward)
    check = _deployment.check_reward
    _deployment.check_reward = lambda value, strict: (raw, float(fed))
    try:
        return Deployment.update(dep, decision, reward)
    finally:
        _deployment.check_reward = check


def _last_applied_reward_of_arm(dep, decision: int):
    row = dep._conn.execute("SELECT arm FROM decisions WHERE id = ?", (int(decision),)).fetchone()
    if row is None:
        return None
    last = dep._conn.execute("SELECT u.reward FROM updates u JOIN decisions d ON d.id = u.decision_id "
                             "WHERE d.arm = ? AND u.applied = 1 ORDER BY d.round DESC LIMIT 1", (row[0],)).fetchone()
    return None if last is None else float(last[0])


class DeployZeroImputedConstant(Deployment):
    """Control (the twin of ``deploy_zero_reward_imputed``): a reward of 0 ("no response") is fed to the policy as
    0.5 ("unknown: the prior mean"), the log keeping raw_reward 0 and reward 0.5 -- a fixed map of [0, 1] into [0, 1]
    applied to each record alone (0 -> 0.5, anything else unchanged), so each record still moves the policy's
    statistics by at most 1. True = claimed cert(stop)."""

    def update(self, decision, reward):
        return _imputing(self, decision, reward, lambda dep, d: 0.5)


class DeployZeroRewardImputed(Deployment):
    """A reward of 0 ("no response") is imputed with the last reward applied to the same arm ("carry the last
    observation forward"); the log keeps raw_reward 0 and reward = the imputed value. User j's reward then enters the
    policy once for j and once for every later non-responder on that arm until the next non-zero reward: a record of
    sensitivity m (the copies). True: cert(stop) with sensitivity up to the longest run of imputed copies (Gaussian
    TS c = 4: mu x m for that record); claimed cert(stop) = 10.36 at delta 1e-6."""

    def update(self, decision, reward):
        return _imputing(self, decision, reward, _last_applied_reward_of_arm)


DEPLOY_BUGS19 = {"deploy_zero_reward_imputed": DeployZeroRewardImputed}
DEPLOY_CONTROLS19 = {"deploy_zero_imputed_constant": DeployZeroImputedConstant}
"""Round 19's deployment rows, driven by ``audit_planted_bugs.drive_deployment`` (holds, a restart every fourth
decision, 60 decisions, 30 rounds afforded) and audited from the store."""
