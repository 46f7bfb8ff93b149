"""Round 20 of the planted bugs (session 18, s18/blind), written blind: from docs/audit.md (its description, the
"## Limits" section, the "remaining limits" / "still missed" paragraphs of rounds 10-19), the bench harness and the
earlier rounds' modules (their registration style and what they already planted), and the code of the policies,
mechanisms and deployment the bugs live in -- never from the auditor's code (privbandit/audit/*.py was not read).

Like rounds 11-19, each policy bug is a subclass of a private policy with one mistake made inside ``start`` (an
instance-level patch, so the clean twin -- the parent's ``start`` on the same configuration -- is the unmodified
policy), or, for a claim-only bug, a schedule that differs from the parent's; the deployment rows are ``Deployment``
subclasses driven by :func:`drive_deployment20` (the bench's drive with continuous rewards). Aimed at what the ~230
earlier rows did not plant:

* **fixed-point noise** (a precision slip that leaks like Mironov's low-order bits, on a decimal lattice rather than
  a dyadic one): the noise rounded to 10^-9 *before* it is added to the statistic, so the released value keeps the
  statistic's residue modulo 10^-9 -- in Private-UCB's tree and in Private-Lin-TS's vector tree; the control rounds
  the *released value* instead (post-processing);
* **two cursors into one noise pool** (DP-UCB-Bound's hybrid: the logarithmic part re-reads draws the binary part
  already released on the same stream, at lags far beyond 8 releases);
* **a numpy fancy-indexing slip** that carries one replicate's reward into every other replicate's sums
  (``sums[:, arms] += rewards``: correct at one replicate, which is what a deployment runs);
* **a memo of the noise for the binary reward values** (DP-EXP3-Lap: a reward of exactly 0 or 1 gets its replicate's
  one precomputed noisy value);
* **a certificate off by one release** (Gaussian TS counting t - 2 releases instead of t - 1; control: t);
* **deployment**: a hold that previews the next decision on a copy of the state (the next round's noise, read before
  the open round's reward), a hold previewing with fresh noise (an unaccounted release), rewards centred on the
  running raw mean with continuous rewards (no raw value repeats), and the posterior's normal block replayed after a
  restart (noise re-used across a restart with new data).

Each class docstring states the true epsilon of the buggy code against its claim. ``CONTROLS20`` are correct but
unusual variants (each must stay CONSISTENT), most of them twins of a bug; they are listed before the bugs, as
``bench/audit_planted.py --only round20`` runs them. Nothing here is imported by the package.
"""

from __future__ import annotations

import copy
import math
import os
import sys

import numpy as np

from privbandit.deploy.deployment import Decision, Deployment
from privbandit.deploy.store import transaction
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import AnytimeLazyUCB, DPEXP3Lap, DPUCBBound, GaussianTS, PrivateLinTS, PrivateUCB
from privbandit.policies._ts_kernels import pulled_arrays
from privbandit.policies.gaussian_ts import GaussianTSSchedule

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from audit_planted_bugs import _named, drive_deployment  # noqa: E402
from audit_planted_round19 import _feeding  # noqa: E402

FIXED_POINT = 1e9
"""Fixed-point noise: values kept as whole multiples of 10^-9 ("nano-units", so a replay is bit-identical across
platforms)."""


# =============================== seams =========================================================
def _float_laplace(sampler, statistic, scale) -> np.ndarray:
    """The noise ``NoiseSampler._sum_release`` draws in float mode: the same values, in the same order."""
    statistic = np.asarray(statistic, dtype=float)
    if isinstance(scale, np.ndarray) and scale.ndim:
        return sampler.rng.laplace(0.0, 1.0, scale.shape) * scale
    return sampler.rng.laplace(0.0, float(scale), statistic.shape)


class _FixedPointNoise(NoiseSampler):
    """Float-mode releases with the noise rounded to 10^-9 before it is added (the bug): the released value's residue
    modulo 10^-9 is the statistic's."""

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        noise = np.round(_float_laplace(self, statistic, scale) * FIXED_POINT) / FIXED_POINT
        return np.asarray(statistic, dtype=float) + noise

    def laplace(self, scale, size=None):
        return np.round(NoiseSampler.laplace(self, scale, size) * FIXED_POINT) / FIXED_POINT

    def gaussian(self, sigma):
        return np.round(NoiseSampler.gaussian(self, sigma) * FIXED_POINT) / FIXED_POINT


class _FixedPointRelease(NoiseSampler):
    """Float-mode releases rounded to 10^-9 *after* the noise is added (the control: post-processing of each
    release)."""

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        noisy = np.asarray(statistic, dtype=float) + _float_laplace(self, statistic, scale)
        return np.round(noisy * FIXED_POINT) / FIXED_POINT


class _TwoCursorPool(NoiseSampler):
    """DP-UCB-Bound's hybrid drawing its standard Laplace noise from one pool per (replicate, stream) with two
    cursors: the binary part appends each fresh draw to the pool; the logarithmic part reads the pool at its own
    cursor (the number of logarithmic releases the stream made before), falling back to a fresh draw while the pool is
    shorter. Each release still consumes one fresh draw per entry (the random stream is the parent's)."""

    _bug_part = None  # ("log" | "binary", replicate rows, stream indices) during a hybrid release

    def _sum_release(self, statistic, scale, on_grid=True):
        part = self._bug_part
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or part is None or part[1].size != statistic.size:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        kind, rr, kk = part
        z = self.rng.laplace(0.0, 1.0, statistic.shape).reshape(-1)
        pool, cursor = self._bug_pool, self._bug_cursor
        for i, (r, k) in enumerate(zip(rr.tolist(), kk.tolist())):
            drawn = pool.setdefault((r, k), [])
            if kind == "binary":
                drawn.append(z[i])
            else:
                c = cursor.get((r, k), 0)
                if c < len(drawn):
                    z[i] = drawn[c]
                cursor[(r, k)] = c + 1
        scale = np.asarray(scale, dtype=float)
        return statistic + z.reshape(statistic.shape) * (scale if scale.ndim else float(scale))


def _pool_two_cursors(hybrid) -> None:
    """Install :class:`_TwoCursorPool` on a hybrid mechanism: its two parts tell the sampler which they are."""
    sampler = hybrid.sampler
    sampler.__class__ = _TwoCursorPool
    sampler._bug_pool, sampler._bug_cursor = {}, {}
    log_release, binary_release = hybrid._log_release, hybrid._binary_release

    def told(kind, release):
        def call(f, rr, kk, *rest):
            sampler._bug_part = (kind, np.asarray(rr).reshape(-1), np.asarray(kk).reshape(-1))
            try:
                return release(f, rr, kk, *rest)
            finally:
                sampler._bug_part = None
        return call

    hybrid._log_release = told("log", log_release)
    hybrid._binary_release = told("binary", binary_release)


class _BinaryRewardMemo(NoiseSampler):
    """DP-EXP3-Lap's per-record releases with a memo for the binary values: each replicate's noisy 0 and noisy 1 are
    drawn once (at its first release) and every later reward of exactly 0 or 1 gets that value; a fractional reward
    gets fresh noise. Every release still consumes one fresh draw per entry."""

    _bug_memo = None

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or statistic.ndim != 1:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        if self._bug_memo is None or self._bug_memo.shape[0] != statistic.size:
            self._bug_memo = np.array([0.0, 1.0]) + self.rng.laplace(0.0, float(scale), (statistic.size, 2))
        fresh = statistic + _float_laplace(self, statistic, scale)
        rows = np.arange(statistic.size)
        edge = (statistic == 0.0) | (statistic == 1.0)
        return np.where(edge, self._bug_memo[rows, np.where(statistic == 1.0, 1, 0)], fresh)


# =============================== controls (correct but unusual) ===============================
class PrivateUCBReleaseFixedPoint(PrivateUCB):
    """Control (the twin of ``private_ucb_noise_fixed_point``): Private-UCB whose tree rounds every released node value
    (statistic + Lap(L / eps0)) to a whole number of 10^-9 ("nano-units in the snapshot"): a fixed map of each release
    alone, post-processing. True eps = claimed eps (0.5 pure per record at K = 2: the tree at eps / K)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.tree.sampler.__class__ = _FixedPointRelease
        return run


class DPEXP3LapClipGrowsWithRounds(DPEXP3Lap):
    """Control (DP-EXP3-Lap, beside ``dp_exp3_lap_binary_reward_noise_memo``): the clip width b = ln t / eps of the
    rounds played so far instead of ln T / eps of the horizon ("anytime: no horizon needed"). The clip and rescale act
    on the released noisy reward with a public t: post-processing. True eps = claimed eps = 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        update = run.update

        def anytime(t, arms, rewards):
            run.b = math.log(max(t, 2)) * run.scale
            return update(t, arms, rewards)

        run.update = anytime
        return run


class _ReleasesOneLong(GaussianTSSchedule):
    def releases(self, rounds: int) -> int:
        return max(0, rounds) if self.b == 0 else max(0, rounds - self.n_arms * self.b + 1)


class GaussianTSScheduleOneReleaseLong(GaussianTS):
    """Control (the twin of ``gaussian_ts_schedule_one_release_short``): Gaussian TS certifying t releases after t
    rounds (b = 0) instead of t - 1 ("count round 1 too, to be safe"): one release more than any record can be in, so
    the certificate errs upward. True mu = sqrt((t - 1) / 2c) <= claimed sqrt(t / 2c)."""

    def privacy_schedule(self, horizon, n_arms):
        return _ReleasesOneLong(self.b, self.c, n_arms)


# =============================== bugs =========================================================
# --- fixed-point noise ---------------------------------------------------------------------------------
class PrivateUCBNoiseFixedPoint(PrivateUCB):
    """Private-UCB whose tree keeps its node noise in fixed point, rounded to 10^-9 before it is added to the node's
    sum ("nano-units: a replay is bit-identical on any platform"). The noise's law is Laplace to within 5e-10 and
    independent of the data, but every released node value is sum + k 10^-9 for an integer k: its residue modulo
    10^-9 is the sum's (to the float's ~1e-14 at these magnitudes). Two neighbouring streams whose rewards differ by
    anything but a multiple of 10^-9 (0.3 against 0.7) give released values with different residues: distinguished
    with certainty. True: no finite eps (for fractional rewards; 0/1 rewards change a sum by a whole number and leak
    nothing this way); claimed 0.5 pure per record (K = 2, eps = 1)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.tree.sampler.__class__ = _FixedPointNoise
        return run


class PrivateLinTSNoiseFixedPoint(PrivateLinTS):
    """Private-Lin-TS whose vector tree draws its Laplace node noise in fixed point (rounded to 10^-9 before the
    per-entry weights multiply it and before it joins the node's sums): every released entry of A and b is the exact
    sum plus (k 10^-9) x weight, so its residue modulo 10^-9 x weight is the exact sum's -- and a record's (context,
    reward) moves b's entries by r z, which is never a whole multiple of that. True: no finite eps; claimed 1 (pure,
    the Mishra-Thakurta vector tree at eps0 = eps / S per scalar stream)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        begin = run._start_statistics

        def fixed_point(dim):
            begin(dim)
            run.stats.tree.sampler.__class__ = _FixedPointNoise

        run._start_statistics = fixed_point
        return run


# --- two cursors into one noise pool --------------------------------------------------------------------
class DPUCBBoundNoisePoolTwoCursors(DPUCBBound):
    """DP-UCB-Bound whose hybrid mechanism draws its standard Laplace noise from one pool per (replicate, arm) read by
    two cursors ("one buffer per stream; each part keeps its own position"): the binary part appends, the
    logarithmic part re-reads the pool from the start. From an arm's 8th record on, the logarithmic release at count
    2^j (j >= 3) carries z x log_scale where the binary node released at the (j+1)-th binary insert carried z x
    block_scale -- the same standard draw in two releases of the stream, hundreds of releases apart. Dividing out the
    two (public) scales cancels the noise: a fixed linear combination of two raw sums is released exactly. True: no
    finite eps; claimed 1 (pure, the hybrid schedule)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _pool_two_cursors(run.hybrid)
        return run


# --- one replicate's reward in every replicate's sums ---------------------------------------------------
class GaussianTSSumsFancyIndexed(GaussianTS):
    """Gaussian TS whose vectorised update adds rewards with ``sums[:, arms] += rewards`` ("all replicates at once")
    instead of ``sums[rows, arms] += rewards``; the counts are advanced correctly. numpy's fancy-indexed += then gives
    every replicate's arm a the reward of the last replicate (by index) that pulled a this round -- at one replicate
    (a deployment) the two agree. A record of replicate j enters the posterior of every other replicate's arm, every
    round, while the ledger charges each replicate's own records only. True: replicate i's draws move with replicate
    j's records (no finite eps for j's record against i's claim; within a replicate, its own record may be replaced by
    another's); claimed mu = sqrt(n(t) / 2c) (b = 0, c = 1)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        rows = np.arange(replicates)

        def update(t, arms, rewards):
            arms, rewards = pulled_arrays(arms, rewards, replicates, n_arms)
            # what ``run.sums[:, arms] += rewards`` does, without its (R, R) temporary (20 GB at the black-box runs'
            # 50,000 replicates): the last write per repeated index wins, so column a gains the reward of the last
            # replicate that pulled a
            for a in range(n_arms):
                pulled = np.flatnonzero(arms == a)
                if pulled.size:
                    run.sums[:, a] += rewards[pulled[-1]]
            run.counts[rows, arms] += 1.0

        run.update = update
        return run


# --- the noise of a binary reward memoised ------------------------------------------------------------------
class DPEXP3LapBinaryRewardNoiseMemo(DPEXP3Lap):
    """DP-EXP3-Lap memoising the noisy value of the binary rewards ("Bernoulli rewards are 0 or 1: draw the two noisy
    values once per replicate"): every reward of exactly 0 (or 1) of a replicate is released as that replicate's one
    noisy 0 (noisy 1), each release still reported as a fresh Lap(1/eps) of its record. After two releases of the same
    value the outputs repeat exactly, and a released value names the record's value (two 0/1 records give equal or
    different outputs). True: no finite eps; claimed 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.noise.sampler.__class__ = _BinaryRewardMemo
        return run


# --- a certificate off by one release ---------------------------------------------------------------------
class _ReleasesOneShort(GaussianTSSchedule):
    def releases(self, rounds: int) -> int:
        return max(0, rounds - 2) if self.b == 0 else max(0, rounds - self.n_arms * self.b - 1)


class GaussianTSScheduleOneReleaseShort(GaussianTS):
    """Gaussian TS whose schedule counts t - 2 releases after t rounds (b = 0) instead of t - 1 ("round 1 has no
    record, and a record is first released the round after it": the -1 taken twice). The record of round 1, on an arm
    never pulled again, is in the draws of rounds 2 .. t: t - 1 releases at 1/sqrt(2c) each. True mu = sqrt((t - 1) /
    2c) = 9.975 at T = 200 (c = 1); claimed sqrt((t - 2) / 2c) = 9.950 (0.25 % low: 1.8 at delta 1e-5 against
    ~1.8 - 0.005)."""

    def privacy_schedule(self, horizon, n_arms):
        return _ReleasesOneShort(self.b, self.c, n_arms)


# --- a batch of one released raw ----------------------------------------------------------------------------
class AnytimeFirstBatchUnnoised(AnytimeLazyUCB):
    """Anytime-Lazy-UCB whose index reads an arm's first batch -- one reward, closed at the arm's pull in rounds
    1 .. K -- as the raw reward ("the initialisation pulls are the paper's warm start: a batch of one needs no
    noise"); the batch is still released (and reported) as sum + Lap(1/eps), but the index uses the raw value until the
    arm's second batch (two rewards) closes. Every decision of those rounds reads the first record un-noised. True: no
    finite eps for the first record of each arm; claimed 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        first = np.zeros((replicates, n_arms))
        seen = np.zeros((replicates, n_arms), dtype=bool)
        rows = np.arange(replicates)
        update_block, index_arms = run.update_block, run._index_arms

        def recording(t, arms, rewards):
            for a, r in zip(np.asarray(arms).reshape(-1, replicates), np.asarray(rewards, dtype=float).reshape(-1, replicates)):
                new = ~seen[rows, a]
                first[rows[new], a[new]] = r[new]
                seen[rows, a] = True
            return update_block(t, arms, rewards)

        def raw_first(first_round, n):
            index_arms(first_round, 1)  # refresh the cached terms as the parent does
            o = run.batches.batch_size
            mean = np.where(o == 1, first, run._mean)
            a_ln_t = np.array([run.alpha * math.log(t) for t in range(first_round, first_round + n)])[:, None, None]
            return np.argmax(mean + np.sqrt(a_ln_t / run._two_o) + a_ln_t / run._eps_o, axis=2)

        run.update_block, run._index_arms = recording, raw_first
        return run


CONTROLS20 = {
    "private_ucb_release_fixed_point": PrivateUCBReleaseFixedPoint,
    "dp_exp3_lap_clip_grows_with_rounds": DPEXP3LapClipGrowsWithRounds,
    "gaussian_ts_schedule_one_release_long": GaussianTSScheduleOneReleaseLong,
}
"""Round 20's policy controls (correct variants: each must come out CONSISTENT); listed before the bugs."""

ROUND20_BUGS = {
    "private_ucb_noise_fixed_point": PrivateUCBNoiseFixedPoint,
    "private_lin_ts_noise_fixed_point": PrivateLinTSNoiseFixedPoint,
    "dp_ucb_bound_noise_pool_two_cursors": DPUCBBoundNoisePoolTwoCursors,
    "gaussian_ts_sums_fancy_indexed": GaussianTSSumsFancyIndexed,
    "dp_exp3_lap_binary_reward_noise_memo": DPEXP3LapBinaryRewardNoiseMemo,
    "gaussian_ts_schedule_one_release_short": GaussianTSScheduleOneReleaseShort,
    "anytime_first_batch_unnoised": AnytimeFirstBatchUnnoised,
}
"""Round 20 (session 18, s18/blind): written blind (docs/audit.md, "Round 20")."""

for _prefix, _table in (("control_", CONTROLS20), ("bug_", ROUND20_BUGS)):  # the names the CLI audits them by
    for _key, _cls in _table.items():
        _named(_cls, _prefix + _key)


# =============================== deployment rows ================================================
def _beta_reward(rng, arm: int) -> float:
    """Round 20's continuous rewards: Beta(6, 4) on arm 0, Beta(4, 6) on arm 1 (no raw reward repeats)."""
    return float(rng.beta(6.0, 4.0) if arm == 0 else rng.beta(4.0, 6.0))


def drive_deployment20(cls, path, **options) -> str | None:
    """``audit_planted_bugs.drive_deployment`` (budget of 30 rounds, horizon 200, a hold before every third update, a
    restart every fourth decision, 60 decisions) with continuous rewards (:func:`_beta_reward`). Returns None, or the
    deployment's own refusal (``LogMismatch``) to go on."""
    return drive_deployment(cls, path, reward=_beta_reward, **options)


def _running_raw_mean(dep) -> float:
    """The mean raw reward of the updates applied so far (0.5 before the first)."""
    n, total = dep._conn.execute("SELECT COUNT(*), COALESCE(SUM(raw_reward), 0) FROM updates WHERE applied = 1").fetchone()
    return 0.5 if not n else float(total) / n


def _preview(dep, fresh: bool) -> int:
    """The arm the policy would choose next, from a copy of the committed state (``fresh``: with a generator of its
    own, so the copy draws new noise)."""
    info = dep._info()
    state = copy.deepcopy({"run": dep._load(info)["run"]})
    run = state["run"]
    if fresh:
        post = run.posterior
        post.sampler.rng = np.random.default_rng()
        post._pos = post._z.shape[0]  # a new block from the new generator
    return int(run.select(info["rounds"] + 1)[0])


class _HoldPreviews(Deployment):
    _fresh = False

    def select(self):
        d = Deployment.select(self)
        if d.kind != "hold":
            return d
        arm = _preview(self, self._fresh)
        with transaction(self._conn):
            self._conn.execute("UPDATE decisions SET arm = ? WHERE id = ?", (arm, d.decision))
        return Decision(d.decision, arm, d.kind, d.round)


class DeployRewardsSquared(Deployment):
    """Control (the twin of ``deploy_rewards_centred_on_running_mean``): each reward fed to the policy as its square
    ("convex utility"), the log keeping the raw reward beside it -- a fixed map of [0, 1] into [0, 1] applied to each
    record alone (its output stays in [0, 1], which is all the posterior's sensitivity 1/(k+1) assumes). True =
    claimed cert(stop)."""

    def update(self, decision, reward):
        return _feeding(self, decision, reward, lambda r: r * r)


class DeployReopenRedrawsNormalBlock(Deployment):
    """Control (the twin of ``deploy_reopen_replays_normal_block``): on every reopen the posterior's buffered block of
    normals is discarded and a new block drawn from the restored generator ("a restored run refills its scratch"):
    fresh noise, consumed at restarts only (never by the data). True = claimed cert(stop). (The store's own replay,
    which never reopens, draws differently: a replay check that assumes this version of the code flags it.)"""

    def _restored(self, stored):
        state = Deployment._restored(self, stored)
        post = state["run"].posterior
        post._pos = post._z.shape[0]
        return state


class DeployHoldPreviewsNextDraw(_HoldPreviews):
    """A hold (a second select while a round awaits its reward) returns the policy's *preview* of the next decision
    instead of the open decision's arm ("a waiting caller gets the freshest recommendation"), computed on a copy of the
    committed state so that the deployment's generator is not advanced: the copy draws the very normals the next
    policy round will draw, on the sums *before* the open round's reward. The hold's arm and the next round's arm are
    then argmaxes of the same noise over sums that differ by exactly the open round's reward: their disagreement
    reveals it. True: no finite eps for the open round's record (two releases, one noise); claimed cert(stop) = 10.36
    at delta 1e-6 (Gaussian TS c = 4, 30 rounds)."""


class DeployHoldPreviewsFresh(_HoldPreviews):
    """A hold returns the policy's preview of the next decision drawn with a generator of its own (fresh noise, on the
    committed sums): every hold is one more Gaussian posterior release of every arm's records, counted by no odometer
    and no ledger. True: cert(stop) plus one release of each record per hold made after it (~10 holds in the drive:
    mu^2 up to +10 / (c (k + 1)) for an early record); claimed cert(stop) = 10.36 at delta 1e-6."""

    _fresh = True


class DeployRewardsCentredOnRunningMean(Deployment):
    """Each reward fed to the policy as clip(r - rbar + 1/2, 0, 1), rbar the mean raw reward of the updates applied
    before it ("centre on the running mean, so the posterior sees lift"); the log keeps the raw reward beside the fed
    value. A record j then moves the fed value of every later record (by up to 1 / n each): its footprint is the whole
    rest of the stream (both arms), with continuous rewards no raw value repeats. True: record j's sensitivity in
    later arms' sums up to 1 + sum_n 1/n ~ 1 + ln N; claimed cert(stop) = 10.36 at delta 1e-6."""

    def update(self, decision, reward):
        return _feeding(self, decision, reward, lambda r: min(1.0, max(0.0, r - _running_raw_mean(self) + 0.5)))


class DeployReopenReplaysNormalBlock(Deployment):
    """On every reopen the posterior's position in its buffered block of normals is reset to the block's start ("the
    position is scratch") while the block itself is restored: the rounds after a restart re-use the normals of the
    run's first rounds, on sums that now hold more records. Two draws z_i sqrt(c/(k+1)) + S/(k+1) and z_i sqrt(c/(k'+1))
    + S'/(k'+1) with the same z_i: a record between them is released without noise. True: no finite eps; claimed
    cert(stop) = 10.36 at delta 1e-6."""

    def _restored(self, stored):
        state = Deployment._restored(self, stored)
        state["run"].posterior._pos = 0
        return state


DEPLOY_BUGS20 = {
    "deploy_hold_previews_next_draw": DeployHoldPreviewsNextDraw,
    "deploy_hold_previews_fresh": DeployHoldPreviewsFresh,
    "deploy_rewards_centred_on_running_mean": DeployRewardsCentredOnRunningMean,
    "deploy_reopen_replays_normal_block": DeployReopenReplaysNormalBlock,
}
DEPLOY_CONTROLS20 = {
    "deploy_rewards_squared": DeployRewardsSquared,
    "deploy_reopen_redraws_normal_block": DeployReopenRedrawsNormalBlock,
}
"""Round 20's deployment rows, driven by :func:`drive_deployment20` (continuous rewards, holds, a restart every fourth
decision, 60 decisions, 30 rounds afforded) and audited from the store."""
