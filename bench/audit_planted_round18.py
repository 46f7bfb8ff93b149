"""Round 18 of the planted bugs (session 16, s16/blind), written blind: from docs/audit.md's description and Limits
(the "## Limits" section, every "remaining limits" / "still missed" paragraph, the earlier rounds' tables), the
bench harness and the code of the policies and mechanisms the bugs live in -- never from the auditor's check code
(privbandit/audit/ beyond the runner, tapes and constants the harness calls).

Like rounds 11-17, each policy bug is a subclass of a private policy with one mistake made inside ``start`` (an
instance-level patch, so the clean twin -- the parent's ``start`` on the same configuration -- is the unmodified
policy). Aimed at what docs/audit.md and the session-15 closing note admit the auditor does not reach, and at the
families earlier rounds hit least (EXP3 and EXP3-tau 2 rows each, DP-UCB, DP-TS and Private-TS 3, DP-SE 4):

* **noise shared where check 5d does not pair**: a buffered sampler whose refill repeats the previous block's last
  draw (DP-UCB: the pair is replicate R-1's last release of one round and replicate 0's first of the next, or at
  R = 1 arm K-1 and arm 0 one round apart), and Private-UCB's per-stream noise table of 2^15 nodes read again
  after an arm's 2^15-th record (a lag of 2^15 releases on one stream: "code keyed to a stream's count past ~2^15");
* **replicates beyond the first 16** (check 5e compares the first 16): DP-TS replicates 16.. drawing from
  generators seeded by their index;
* **the exponential-weights policies beyond check 13's first step**: EXP3's uniform buffer re-read as a ring
  instead of refilled, EXP3-tau's batch choice from a generator seeded by the batch index, and EXP3-tau's gain
  kept across batches while the arm repeats (a record in several updates: later steps only);
* **a sampler installed after start** and truncated beyond 13.5 scales (Anytime-Lazy-UCB, rejection beyond 20
  scales, swapped in at the first release);
* **a round outside the clock-jump windows**: DP-UCB-Bound re-noising every arm's sum at rounds that are multiples
  of 100,000 (unreported);
* **data-dependent branches**: DP-UCB-Bound not storing an arm's fourth consecutive 0; Private-TS's Beta
  parameters from the raw total when the noisy one leaves [0, n]; Private EXP3 learning the raw loss where the
  clip of its noisy loss binds (a clip after the noise -- correct -- then a fallback that is not);
* **re-use of records the paper discards**: DP-SE's mean over every epoch's samples, Private-TS's last gap batch
  inserted into the tree; and DP-SE's next epoch sized from the last epoch's raw best mean (a public length keyed to
  raw data).

Each class docstring states the true epsilon of the buggy code against its claim. ``CONTROLS18`` are correct but
unusual variants (each must stay CONSISTENT), four of them twins of a bug; they are listed before the bugs, as
``bench/audit_planted.py --only round18`` runs them. Nothing here is imported by the package.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import (DPSE, DPTS, DPUCB, EXP3, AnytimeLazyUCB, DPUCBBound, EXP3Tau, PrivateEXP3,
                                 PrivateTS, PrivateUCB)
from privbandit.policies.private_ts import _GAP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from audit_planted_bugs import _named  # noqa: E402
from audit_planted_round15 import _validated_then_mapped  # noqa: E402
from audit_planted_round17 import _telling  # noqa: E402

POOL = 16
"""DP-TS's generator pool: replicates 0 .. 15 draw from the run's generator, later ones from a generator of their
own."""

TABLE = 2 ** 15
"""Private-UCB's per-stream noise table: 2^15 node draws, slot (c - 1) mod 2^15 for the node completed at count c."""

REFILL_BLOCK = 4096
"""DP-UCB's buffered sampler: standard Laplace draws in blocks of 4,096."""

TRUNCATION = 20.0
"""Anytime-Lazy-UCB's "robust" sampler rejects standard draws beyond 20 scales (and draws again)."""

CHECKPOINT = 100_000
"""DP-UCB-Bound re-noises every arm's sum at rounds that are multiples of 100,000."""

ZERO_RUN = 3
"""DP-UCB-Bound does not store a 0 that follows three consecutive 0s of the same arm."""

LOSS_CLIP = (-1.0, 2.0)
"""Private EXP3's noisy loss clipped to [-1, 2] before the update (the control; the bug falls back to the raw loss)."""


# =============================== seams =========================================================
def _tell_positions(tree, sampler) -> None:
    """``sampler._bug_pos`` = (rows, streams, new counts) for each insert into ``tree`` (a T-bounded tree: the
    insert of count c completes the node of c's lowest set bit)."""
    _telling(tree, "_insert", sampler, "_bug_pos",
             lambda v, f, rr, kk: (np.asarray(rr), np.asarray(kk), tree.count[np.asarray(rr), np.asarray(kk)] + 1))


class _NoiseTable(NoiseSampler):
    """Laplace node noise through a per-stream table of TABLE standard draws, slot (c - 1) mod TABLE for the node
    completed at count c (told by ``_bug_pos``). ``_bug_refresh``: every lap of the table draws afresh (correct);
    otherwise a slot filled on the first lap is read again on later laps (the node at count c + 2^15 carries the
    noise of the node at count c). Kept only when the run's horizon exceeds TABLE (a T-bounded tree's stream never
    holds more than T records, so a shorter run never wraps: the black-box audits' 50,000-replicate runs need no
    table)."""

    _bug_pos = None
    _bug_table = None
    _bug_refresh = False
    _bug_horizon = TABLE + 1

    def _sum_release(self, statistic, scale, on_grid=True):
        told = self._bug_pos
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or told is None or told[0].size != statistic.size:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        rr, kk, c = told
        z = self.rng.laplace(0.0, 1.0, statistic.size)
        if self._bug_horizon <= TABLE:  # a stream never holds more than T records: the table never wraps
            return statistic + z.reshape(statistic.shape) * np.asarray(scale, dtype=float) * self._noise_scale_factor
        if self._bug_table is None:  # zeros: calloc'd, so only the slots a run reaches take memory
            shape = self._bug_shape + (TABLE,)
            self._bug_table = (np.zeros(shape), np.zeros(shape, dtype=bool))
        table, filled = self._bug_table
        slot, lap = (c - 1) % TABLE, (c - 1) // TABLE
        if not self._bug_refresh:
            again = (lap > 0) & filled[rr, kk, slot]
            z = np.where(again, table[rr, kk, slot], z)
        table[rr, kk, slot] = z
        filled[rr, kk, slot] = True
        return statistic + z.reshape(statistic.shape) * np.asarray(scale, dtype=float) * self._noise_scale_factor


def _noise_table(run, refresh: bool) -> None:
    sampler = run.tree.sampler
    sampler.__class__ = _NoiseTable
    sampler._bug_shape, sampler._bug_horizon = run.tree.count.shape, run.tree.horizon
    sampler._bug_refresh = refresh
    _tell_positions(run.tree, sampler)


class _GeneratorPool(NoiseSampler):
    """Laplace releases told ``_bug_rows`` (the replicate of each entry): replicates below POOL draw from the run's
    generator, each later replicate r from ``_bug_generator(r)`` (made once per replicate, on its first release)."""

    _bug_rows = None
    _bug_make = None
    _bug_generators = None

    def _sum_release(self, statistic, scale, on_grid=True):
        rows = self._bug_rows
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or rows is None or rows.size != statistic.size:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        z = self.rng.laplace(0.0, 1.0, statistic.size)
        for i in np.flatnonzero(rows >= POOL):
            r = int(rows[i])
            gen = self._bug_generators.get(r)
            if gen is None:
                gen = self._bug_generators[r] = self._bug_make(r)
            z[i] = gen.laplace(0.0, 1.0)
        return statistic + z.reshape(statistic.shape) * np.asarray(scale, dtype=float) * self._noise_scale_factor


def _generator_pool(run, make) -> None:
    split = run.split
    sampler = split.sampler
    sampler.__class__ = _GeneratorPool
    sampler._bug_make, sampler._bug_generators = make, {}
    for name in ("_flush", "_binary_release"):
        _telling(split, name, sampler, "_bug_rows", lambda f, rr, kk, *rest: np.asarray(rr).reshape(-1))


def _private_exp3_clipped(run, fallback: bool) -> None:
    """Private EXP3 learning its noisy loss clipped to LOSS_CLIP; ``fallback``: where the clip binds, the raw loss."""
    lo_clip, hi_clip = LOSS_CLIP

    def update(t, arms, rewards):
        rows, arms = run.core.rows, run.core.checked(arms)
        loss = 1.0 - np.asarray(rewards, dtype=float)
        lo = run.pulls[rows, arms]
        noisy = run.noise.release_records(loss, run.scale, rows, arms, lo)
        run.pulls[rows, arms] = lo + 1
        clipped = np.clip(noisy, lo_clip, hi_clip)
        if fallback:
            clipped = np.where(clipped != noisy, loss, clipped)
        run.core.learn(arms, -clipped)

    run.update = update


# =============================== controls (correct but unusual) ===============================
class PrivateExp3NoisyLossClipped(PrivateEXP3):
    """Control (the twin of ``private_exp3_raw_loss_when_clipped``): Private EXP3 learning its noisy loss clipped to
    [-1, 2] ("bounded losses keep the exponential weights stable"): the clip reads the release only -- post-processing
    of a Lap(1/eps) release of sensitivity 1. True eps = claimed eps = 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _private_exp3_clipped(run, fallback=False)
        return run


class AnytimeRewardsSixDecimals(AnytimeLazyUCB):
    """Control: Anytime-Lazy-UCB storing each reward rounded to six decimals ("sensor values are stored as
    integers of 1e-6"): a fixed map of [0, 1] into [0, 1] applied to each record alone, so a batch sum still moves
    by at most 1 per record. True eps = claimed eps = 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _validated_then_mapped(run.batches, lambda v, f, rr: np.round(v, 6))
        return run


class Exp3UniformsReflected(EXP3):
    """Control (the twin of ``exp3_uniforms_cycled``): EXP3 refilling its uniform buffer with 1 - u ("the sampler
    walks the arms from the last one": the same as reflecting the uniform) -- every choice still consumes a fresh
    uniform, and 1 - u is uniform on (0, 1] (u = 0, probability 2^-53 a draw, would give the last arm its floor's
    worth of extra mass at most once in 2^53 choices), so the law of the choices is unchanged while the runs differ
    choice by choice. True eps = claimed eps (K = 2, T = 200: 676.9 at delta 1e-5)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core = run.core
        choose = core.choose

        def reflected():
            if core.pos == core.uniforms.shape[0]:
                core.uniforms, core.pos = 1.0 - core.rng.random((core.block, core.rows.size)), 0
            return choose()

        core.choose = reflected
        return run


class DPTSReplicatesSpawnedGenerators(DPTS):
    """Control (the twin of ``dp_ts_replicates_past_sixteen_fixed_seed``): DP-TS whose replicates 16, 17, ... draw
    their split noise from generators spawned from the run's generator (``rng.spawn``: independent streams, secret,
    different from run to run) -- "a pool of 16 generators, more spawned on demand". Each replicate's noise is
    independent Laplace of the reported scale. True eps = claimed eps = 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _generator_pool(run, lambda r: rng.spawn(1)[0])
        return run


class DPTSReplicatesSeededFromRun(DPTS):
    """Control (added after the table, to locate ``dp_ts_replicates_spawned_generators``'s refutation): DP-TS whose
    replicates 16, 17, ... draw their split noise from generators seeded, on first use, with 128 bits drawn from the
    run's generator ("extra replicates get a seed from the run") -- independent, secret, and a function of the run's
    seed alone (``rng.spawn`` also depends on how often the seed's SeedSequence was spawned from before). True eps =
    claimed eps = 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _generator_pool(run, lambda r: np.random.default_rng(rng.integers(0, 2 ** 63, size=2)))
        return run


class UCBNoiseTableRefreshed(PrivateUCB):
    """Control (the twin of ``ucb_tree_noise_table_wraps``): Private-UCB whose tree draws node noise through a
    per-stream table of 2^15 standard Laplace values, every slot drawn afresh each time it is used ("a table for
    replay of the last 2^15 nodes"): each node gets a fresh draw of the reported scale. True eps = claimed eps
    (0.5 pure per record at K = 2: the tree at eps / K)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _noise_table(run, refresh=True)
        return run


CONTROLS18 = {
    "private_exp3_noisy_loss_clipped": PrivateExp3NoisyLossClipped,
    "anytime_rewards_six_decimals": AnytimeRewardsSixDecimals,
    "exp3_uniforms_reflected": Exp3UniformsReflected,
    "dp_ts_replicates_spawned_generators": DPTSReplicatesSpawnedGenerators,
    "dp_ts_replicates_seeded_from_run": DPTSReplicatesSeededFromRun,
    "ucb_noise_table_refreshed": UCBNoiseTableRefreshed,
}
"""Round 18's policy controls (correct variants: each must come out CONSISTENT); listed before the bugs."""


# =============================== bugs =========================================================
# --- noise shared where check 5d does not pair ---------------------------------------------------
class _RefillRepeats(NoiseSampler):
    """Float-mode Laplace from a buffer of REFILL_BLOCK standard draws; the refill keeps the previous block's last
    value as the new block's first ("carry the unread tail over" -- off by one: the last value was already read)."""

    _bug_buffer = None
    _bug_pos = 0

    def _standard(self, n: int) -> np.ndarray:
        out = np.empty(n)
        done = 0
        while done < n:
            buf = self._bug_buffer
            if buf is None or self._bug_pos == buf.size:
                fresh = self.rng.laplace(0.0, 1.0, REFILL_BLOCK)
                if buf is not None:
                    fresh[0] = buf[-1]
                self._bug_buffer, self._bug_pos = fresh, 0
                buf = fresh
            take = min(n - done, buf.size - self._bug_pos)
            out[done:done + take] = buf[self._bug_pos:self._bug_pos + take]
            self._bug_pos += take
            done += take
        return out

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic = np.asarray(statistic, dtype=float)
        z = self._standard(statistic.size).reshape(statistic.shape)
        return statistic + z * np.asarray(scale, dtype=float) * self._noise_scale_factor


class DPUCBNoiseBlockRefillRepeats(DPUCB):
    """DP-UCB whose hybrid noise is read from a buffer of 4,096 standard Laplace draws, the refill off by one: the
    new block's first value is the previous block's last, already used ("keep the unread tail"). Every value is
    Laplace; every 4,096 draws two releases carry the same one. DP-UCB releases R x K values a round in one call
    (lock-step), so with R K dividing 4,096 the pair is the last entry of round t's call (replicate R-1, arm K-1)
    and the first of round t + 1's (replicate 0, arm 0): different replicates at different indices -- at R = 1,
    K = 2 (a deployment) arm 1 at round t and arm 0 at round t + 1 of the one run. Given both releases, the
    difference of their statistics is known exactly. True: no finite eps for the records under such a pair (every
    ~2,048 rounds at R = 1, K = 2); claimed 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.hybrid.sampler.__class__ = _RefillRepeats
        return run


class UCBTreeNoiseTableWraps(PrivateUCB):
    """Private-UCB whose tree draws node noise through a per-stream table of 2^15 standard Laplace values, slot
    (c - 1) mod 2^15 for the node completed at count c, filled on the first lap and read again afterwards ("a
    noise table sized for 2^15 records; nobody expected more"). The node completed at count c + 2^15 (same level
    when c's lowest set bit is below 15) carries the noise of the node at count c: the difference of the two
    releases is the difference of two p-sums, exactly. Reached only past an arm's 2^15-th record (docs/audit.md:
    code keyed to a stream's count past ~2^15 is not coupled; check 5d pairs along a stream at lags up to 1024).
    True: no finite eps for the records of an arm past 2^15 records (and of the nodes they pair with); claimed 0.5
    pure (K = 2: the tree at eps / K)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _noise_table(run, refresh=False)
        return run


class DPTSReplicatesPastSixteenFixedSeed(DPTS):
    """DP-TS whose split noise for replicates 16, 17, ... comes from ``np.random.default_rng(r)`` ("the pool has 16
    generators spawned from the seed; extra replicates get one seeded by their index"): replicates 0 .. 15 are
    correct, every later replicate's noise is the same in every run, whatever the run's seed -- public. A release of
    replicate r >= 16 is then its statistic plus a known value. True: no finite eps for replicates >= 16 (the
    release reveals the statistic to anyone who runs default_rng(r)); claimed 1 (pure). Aimed at check 5e, which
    compares the first 16 replicates across seeds."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _generator_pool(run, lambda r: np.random.default_rng(r))
        return run


# --- the exponential-weights policies beyond check 13's first step --------------------------------
class Exp3UniformsCycled(EXP3):
    """EXP3 whose uniform buffer (1,024 choices of R uniforms; fewer above 1,024 replicates) is re-read from its
    start when used up instead of refilled ("a ring buffer": the refill was meant to happen on wrap-around). Choice
    t + 1024 uses choice t's uniform u. The arm is 0 iff u < p_t(0): given a_t = 0 and a_{t+1024} = 1, u lies in
    [p_{t+1024}(0), p_t(0)) -- empty on one neighbour when a record between the two choices moves p_{t+1024}(0)
    above p_t(0), non-empty on the other. True: no finite eps (an outcome of probability 0 on one neighbour) from
    round 1,025 on; claimed the exponential-weights certificate (K = 2, T = 2,000: 9,141 at delta 1e-5). The floor
    and the first log-weight step (check 13) are exact."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core = run.core
        choose = core.choose

        def cycled():
            if core.uniforms.shape[0] and core.pos == core.uniforms.shape[0]:
                core.pos = 0  # wrap around (the refill never happens after the first block)
            return choose()

        core.choose = cycled
        return run


class Exp3TauChoiceSeededByBatch(EXP3Tau):
    """EXP3-tau whose batch choice draws its uniform from ``np.random.default_rng(b)``, b the batch index ("each
    batch reproducible on its own"; the run's seed forgotten in the seed): the uniform of batch b is the same in
    every run, so the arm is a fixed function of the weights -- EXP3-tau's privacy is all in that uniform. True: no
    finite eps (with u known, a_b = 0 iff u < p_b(0), and a record moving p_b(0) across u changes a_b surely);
    claimed the exponential-weights certificate (K = 2, T = 200: 75.21 at delta 1e-5). The floor and first step
    (check 13) are exact; no noise draw exists for the seed check (5e) to compare."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core, start_batch = run.core, run._start_batch
        state = {"batch": 0}

        def seeded():
            core.rng = np.random.default_rng(state["batch"])
            core.pos = core.uniforms.shape[0]  # draw this batch's uniform from its own generator
            state["batch"] += 1
            start_batch()

        run._start_batch = seeded
        return run


class Exp3TauGainKeptWhileArmRepeats(EXP3Tau):
    """EXP3-tau resetting its batch reward sum only when the chosen arm changes ("a run of the same arm is one long
    batch"): while the arm repeats, each batch's gain (sum / tau) includes every earlier batch of the run. A record
    then enters the update of its batch and of every later batch of the same run of choices: s_1 = 1 / tau is exact
    (check 13), but s_k grows by 1 / tau more per choice, s'_(k+1) = s'_k + expm1(s'_k) + 1 / tau (K = 2, T = 200,
    tau = 6: 0.167, 0.515, 1.354, then the cap 2.48 -- two choices earlier than the claimed 0.167, 0.348, 0.764,
    1.912; gains above 1 also leave the analysis' [0, 1]). True (the library's composition of those steps, worst
    case: the arm repeats in every batch): 76.54 at delta 1e-5 (RDP; pure 76.54) vs claimed 75.21 (33 choices) -- a
    small violation (1.8 %), in the later steps only."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        start_batch = run._start_batch

        def end_batch_kept():
            run.core.learn(run.arms, run.total / run.tau)

        def start_batch_resetting():
            before = run.arms.copy()
            start_batch()
            run.total = np.where(run.arms != before, 0.0, run.total)

        run._end_batch = end_batch_kept
        run._start_batch = start_batch_resetting
        return run


# --- DP-SE: every epoch's samples ------------------------------------------------------------------
class DPSEMeanOverAllEpochs(DPSE):
    """DP-SE releasing, at the end of each epoch, the noisy mean of *every* sample of the arm so far (this epoch's
    batch plus the earlier epochs' -- "why throw data away?"), with the same Lap(1/eps) on the sum; the ledger hears
    the epoch's batch as the footprint. The paper's fresh samples are what makes each record appear in one release:
    a record of epoch 1 is in the release of every epoch its arm survives. True: E x 1 for a record of an arm that
    survives E epochs (E >= 2 once an epoch after the first ends); claimed 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        close = fb._close
        kept_sum = np.zeros(fb.count.shape)
        kept_n = np.zeros(fb.count.shape, dtype=np.int64)

        def cumulative(idx):
            rr, kk = idx
            if rr.size == 0:
                return close(idx)
            raw, n = fb._open_sum[rr, kk].copy(), fb.pending[rr, kk].copy()
            fb._open_sum[rr, kk] += kept_sum[rr, kk]
            close(idx)
            fb.batch_size[rr, kk] += kept_n[rr, kk]
            kept_sum[rr, kk] += raw
            kept_n[rr, kk] += n

        fb._close = cumulative
        return run


class DPSEEpochSizedByRawMean(DPSE):
    """DP-SE sizing each new epoch's statistical term by the Bernoulli variance of the best surviving arm's *raw*
    epoch mean ("near 0 or 1 a mean is learnt faster": R_(e+1) = floor(max(32 ln(8|S|e^2/beta) / Delta^2 x
    max(1/4, 4 p(1 - p)), 8 ln(4|S|e^2/beta) / (eps Delta))) + 1, p the largest raw batch mean of the epoch just
    ended; the library's formula is the factor 1). The epoch's length -- public: the round robin's switch to the
    next epoch and the round of its releases -- is then a function of the last epoch's raw rewards. True: no finite
    eps (a record moving p changes the next release's round, an event of probability 0 on the other neighbour);
    claimed 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        close, eliminate = fb._close, run._eliminate
        raw_mean = np.full(fb.count.shape, np.nan)

        def remembering(idx):
            rr, kk = idx
            if rr.size:
                raw_mean[rr, kk] = fb._open_sum[rr, kk] / np.maximum(fb.pending[rr, kk], 1)
            close(idx)

        def resized(rows):
            best = np.where(run.active[rows], raw_mean[rows], -np.inf).max(axis=1)
            eliminate(rows)
            factor = np.maximum(0.25, 4.0 * best * (1.0 - best))
            e = run.epoch[rows].astype(float)
            s = run.active[rows].sum(axis=1).astype(float)
            delta = 2.0 ** -e
            a = 32.0 * np.log(8.0 * s * e * e / run.beta) / delta ** 2 * factor
            b = 8.0 * np.log(4.0 * s * e * e / run.beta) / (run.epsilon * delta)
            run.size[rows] = np.minimum(np.floor(np.maximum(a, b)) + 1, 2.0 ** 62).astype(np.int64)

        fb._close, run._eliminate = remembering, resized
        return run


# --- a sampler installed after start, truncated beyond 13.5 scales ---------------------------------
class _RejectBeyondTwenty(NoiseSampler):
    """Float-mode Laplace by the inverse CDF of a uniform, draws beyond TRUNCATION scales rejected and drawn again
    ("outliers wreck the index"): Laplace conditioned on |z| <= 20."""

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic = np.asarray(statistic, dtype=float)
        z = self._draw(statistic.size)
        return statistic + z.reshape(statistic.shape) * np.asarray(scale, dtype=float) * self._noise_scale_factor

    def _draw(self, n: int) -> np.ndarray:
        u = self.rng.random(n)
        z = -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))
        bad = ~(np.abs(z) <= TRUNCATION)
        while bad.any():
            z[bad] = self._draw(int(bad.sum()))
            bad = ~(np.abs(z) <= TRUNCATION)
        return z


class AnytimeNoiseRejectedBeyondTwenty(AnytimeLazyUCB):
    """Anytime-Lazy-UCB whose batch sampler is swapped, at the first batch release, for a "robust" one that draws
    Laplace by the inverse CDF and rejects standard draws beyond 20 scales (redrawn). Each release then has support
    [S - 20 b, S + 20 b]: an output in (S + 19 b, S + 20 b] has probability (e^-19 - e^-20) / 2 / (1 - e^-20) =
    1.8e-9 on one neighbour and 0 on the other. True: no finite pure eps; (1, 1.8e-9) per release; claimed 1
    (pure). Aimed at two stated limits at once: a truncation beyond ~13.5 scales, and a sampler installed after
    ``start`` (check 5f probes the samplers a run has when it starts)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        close = fb._close

        def installing(idx):
            fb.sampler.__class__ = _RejectBeyondTwenty
            fb._close = close  # installed once
            close(idx)

        fb._close = installing
        return run


# --- a round outside the clock-jump windows ----------------------------------------------------------
class DPUCBBoundCheckpointRefresh(DPUCBBound):
    """DP-UCB-Bound re-noising every arm's estimate at rounds that are multiples of 100,000 ("long deployments drift:
    refresh the noisy sums from the raw sums kept for diagnostics"): noisy_sum := raw sum + Lap(2/eps), drawn through
    the mechanism's sampler but reported to no ledger; the index reads it until the arm's next insert overwrites it.
    Each checkpoint is one more Lap(2/eps) release of every record so far (sensitivity 1). True: 1 + 0.5 x (the
    checkpoints after a record): 1.5 for the records before round 100,000 of a 2^17-round run; claimed 1 (pure).
    No round of the clock-jump windows (256 rounds around 2^16, 2^20, 2^24, 2^31) is a multiple of 100,000."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        hybrid = run.hybrid
        raw = np.zeros((replicates, n_arms))
        rows = np.arange(replicates)
        update = run.update

        def refreshing(t, arms, rewards):
            update(t, arms, rewards)
            raw[rows, np.asarray(arms)] += np.asarray(rewards, dtype=float)
            if t % CHECKPOINT == 0:
                hybrid.noisy_sum[...] = hybrid.sampler._sum_release(raw.copy(), hybrid.log_scale)

        run.update = refreshing
        return run


# --- data-dependent branches -------------------------------------------------------------------------
class DPUCBBoundZeroStreakSkipped(DPUCBBound):
    """DP-UCB-Bound not storing a reward of 0 that follows three consecutive 0s of the same arm ("idle streams:
    compress runs of zeros"): whether a record is counted depends on the arm's earlier raw rewards. The arm's count
    -- the index's N_a and the rounds at which its hybrid makes its logarithmic releases (counts 2^k) and its binary
    nodes -- then differs between neighbours: a record 1 instead of the third 0 of a run moves every later release
    of the arm to another count. True: no finite eps for the released trace (a release at a count reached on one
    neighbour only); claimed 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        hybrid = run.hybrid
        zeros = np.zeros((replicates, n_arms), dtype=np.int64)
        rows = np.arange(replicates)

        def update(t, arms, rewards):
            arms = np.asarray(arms)
            r = np.asarray(rewards, dtype=float)
            skip = (r == 0.0) & (zeros[rows, arms] >= ZERO_RUN)
            zeros[rows, arms] = np.where(r == 0.0, zeros[rows, arms] + 1, 0)
            if not skip.any():
                hybrid.insert_pulled(arms, rewards)
                return
            values = np.zeros((replicates, n_arms))
            mask = np.zeros((replicates, n_arms), dtype=bool)
            values[rows, arms] = r
            mask[rows[~skip], arms[~skip]] = True
            hybrid.insert(values, mask)

        run.update = update
        return run


class PrivateTSRawTotalWhenOutOfRange(PrivateTS):
    """Private-TS whose Beta parameters take the arm's *raw* tree total where the noisy total leaves [0, n] ("the
    clip would bind: the noise is an outlier, use the observed total") instead of clipping it (the library's
    post-processing). Whenever the noise pushes an arm's total out of range -- about half the time for an arm whose
    total is near 0 or n -- the Beta draw is a function of the raw data. True: no finite eps (on that event the
    output's law is the raw total's, a point mass in the data); claimed 0.25 pure (K = 2)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree = run.tree
        raw = np.zeros((replicates, n_arms))
        rows = np.arange(replicates)
        select, update = run.select, run.update

        def counting(t, arms, rewards):
            before = tree.count.copy()
            update(t, arms, rewards)
            arms_a = np.asarray(arms)
            grew = tree.count[rows, arms_a] > before[rows, arms_a]
            raw[rows, arms_a] += np.where(grew, np.asarray(rewards, dtype=float), 0.0)

        def falling_back(t):
            noisy = tree.noisy_sum
            out = (noisy < 0.0) | (noisy > tree.count)
            if not out.any():
                return select(t)
            tree.noisy_sum = np.where(out, raw, noisy)
            try:
                return select(t)
            finally:
                tree.noisy_sum = noisy

        run.update, run.select = counting, falling_back
        return run


class PrivateExp3RawLossWhenClipped(PrivateEXP3):
    """Private EXP3 clipping its noisy loss to [-1, 2] (correct: post-processing) and, where the clip binds, learning
    the raw loss instead ("the noise was an outlier: use the observed loss"). With eps = 1 the clip binds with
    probability e^-1 / 2 + e^-1 / 2 ~ 0.37 per release, and then the update (hence every later choice) is a function
    of the raw loss. True: no finite eps (on that event the learned value is the record itself); claimed 1 (pure).
    Two correct pieces -- a clip after the noise, and the raw loss EXP3 would use without privacy -- joined by a
    fallback that is not."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _private_exp3_clipped(run, fallback=True)
        return run


# --- re-use of records the paper discards -------------------------------------------------------------
class PrivateTSGapBatchReusedInTree(PrivateTS):
    """Private-TS inserting the rewards of a replicate's last gap-estimation batch into the arms' trees when it
    leaves gap estimation ("they are fresh samples too: warm-start the trees"); the tree numbers them as new records
    after the gap positions (the ledger never pairs them with their gap release). A record of that batch is in its
    gap release (eps / (2K)) and in up to L nodes of its arm's tree (eps0 = eps / (2K)). True: 0.5 for those records
    vs claimed 0.25 pure (K = 2, eps = 1: the certificate takes the larger of the two kinds, never their sum)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        kept = [[] for _ in range(replicates)]
        update, close = run.update, run._close_batches

        def keeping(t, arms, rewards):
            gap = np.flatnonzero(run.phase == _GAP)
            arms_a, r = np.asarray(arms), np.asarray(rewards, dtype=float)
            for i in gap:
                kept[i].append((int(arms_a[i]), float(r[i])))
            update(t, arms, rewards)

        def closing(rows, t):
            close(rows, t)
            left = [int(i) for i in rows if run.phase[i] != _GAP]
            for i in rows:
                if run.phase[i] == _GAP:
                    kept[int(i)].clear()
            longest = max((len(kept[i]) for i in left), default=0)
            for j in range(longest):  # one record per replicate per insert, in the batch's order
                values = np.zeros((replicates, n_arms))
                mask = np.zeros((replicates, n_arms), dtype=bool)
                for i in left:
                    if j < len(kept[i]):
                        arm, value = kept[i][j]
                        values[i, arm], mask[i, arm] = value, True
                run.tree.insert(values, mask)
            for i in left:
                kept[i].clear()

        run.update, run._close_batches = keeping, closing
        return run


ROUND18_BUGS = {
    "dp_ucb_noise_block_refill_repeats": DPUCBNoiseBlockRefillRepeats,
    "ucb_tree_noise_table_wraps": UCBTreeNoiseTableWraps,
    "dp_ts_replicates_past_sixteen_fixed_seed": DPTSReplicatesPastSixteenFixedSeed,
    "exp3_uniforms_cycled": Exp3UniformsCycled,
    "exp3_tau_choice_seeded_by_batch": Exp3TauChoiceSeededByBatch,
    "exp3_tau_gain_kept_while_arm_repeats": Exp3TauGainKeptWhileArmRepeats,
    "dp_se_mean_over_all_epochs": DPSEMeanOverAllEpochs,
    "dp_se_epoch_sized_by_raw_mean": DPSEEpochSizedByRawMean,
    "anytime_noise_rejected_beyond_twenty": AnytimeNoiseRejectedBeyondTwenty,
    "dp_ucb_bound_checkpoint_refresh": DPUCBBoundCheckpointRefresh,
    "dp_ucb_bound_zero_streak_skipped": DPUCBBoundZeroStreakSkipped,
    "private_ts_raw_total_when_out_of_range": PrivateTSRawTotalWhenOutOfRange,
    "private_exp3_raw_loss_when_clipped": PrivateExp3RawLossWhenClipped,
    "private_ts_gap_batch_reused_in_tree": PrivateTSGapBatchReusedInTree,
}
"""Round 18 (session 16, s16/blind): written blind (docs/audit.md, "Round 18")."""

for _key, _cls in CONTROLS18.items():
    _named(_cls, "control_" + _key)
for _key, _cls in ROUND18_BUGS.items():
    _named(_cls, "bug_" + _key)

DEPLOY_BUGS18: dict = {}
DEPLOY_CONTROLS18: dict = {}
"""Round 18 plants no deployment rows (its bugs are all in the policies)."""
