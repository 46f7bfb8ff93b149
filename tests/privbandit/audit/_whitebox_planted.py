"""Small planted bugs for the white-box checks: one per check, each a subclass of a real policy that
keeps its parent's claim (the bench suite, bench/audit_planted_bugs.py, holds the larger zoo)."""

from __future__ import annotations

import numpy as np

from privbandit.mechanisms._base import flat
from privbandit.policies import (DPSE, AnytimeLazyUCB, DPEXP3Lap, DPUCBBound, DPUCBInt, GaussianTS, PrivateTS,
                                 PrivateUCB)


class PeeksAtMean(PrivateUCB):
    """decisions: the index adds a tenth of the exact empirical mean."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sums = np.zeros((replicates, n_arms))
        update, rows = run.update, np.arange(replicates)

        def upd(t, arms, rewards):
            sums[rows, arms] += rewards
            update(t, arms, rewards)

        def select(t):
            if t <= n_arms:
                return np.full(replicates, t - 1, dtype=np.intp)
            n = run.counts
            index = (run.tree.noisy_sum + run.relaxation) / n + np.sqrt(2 * np.log(t) / n) + 0.1 * sums / n
            return np.argmax(index, axis=1)

        run.update, run.select = upd, select
        return run


class SilentPosterior(GaussianTS):
    """unreported: the posterior draws are never reported to the ledger."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.posterior._record = None
        return run


class TripledRewards(GaussianTS):
    """sensitivity: the posterior is released on 3x the reward sums (declared sensitivity stays
    1/(k+1)). Planted below ``update``, which validates its rewards and would refuse 3x a reward."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        release = run.posterior.release
        run.posterior.release = lambda sums, counts: release(3.0 * np.asarray(sums), counts)
        return run


class NewestRecordOnly(PrivateUCB):
    """footprint: every tree node declares only its newest record as its footprint."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        record = run.tree._record
        run.tree._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, kk, hi - 1, hi, scale, m, node)
        return run


class ReReleases(DPUCBInt):
    """redraw: every select re-releases (and reports) the interval means already released."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im, select = run.interval, run.select

        def sel(t):
            rr, kk = np.nonzero((im.released_count > 0) & (im.count == im.released_count))
            im.released_count[rr, kk] = 0
            im._release(rr, kk)
            return select(t)

        run.select = sel
        return run


class OverDeclaredScale(AnytimeLazyUCB):
    """noise law: the ledger is told twice the scale the batch noise uses."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        record = fb._record
        fb._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, kk, lo, hi, 2.0 * scale, m, node)
        return run


class FrozenNoise(GaussianTS):
    """noise law (re-use): one standard normal block for every round."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        z = run.posterior._standard_normals().copy()
        run.posterior._standard_normals = lambda: z
        return run


class HandNoiseHalved(AnytimeLazyUCB):
    """noise law: the batch release is assembled by hand, statistic + sampler.laplace(scale / 2)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.batches.sampler
        def by_hand(stat, scale, **kw):
            return np.asarray(stat) + sampler.laplace(scale / 2.0, size=np.shape(stat))

        # both release paths: the public one and the mechanisms' internal one
        sampler.laplace_release = sampler._sum_release = by_hand
        return run


class HalvedRecordNoise(DPEXP3Lap):
    """noise law, on the per-record path (LaplaceRelease.release_records): every observed reward is
    released with half the Laplace scale the ledger is told."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.noise.sampler
        draw = sampler._sum_release
        sampler._sum_release = lambda stat, scale, **kw: draw(stat, scale / 2.0, **kw)
        return run


# --- round 4: bugs that only the contract checks added in round 4 see at these sizes -------------------
class ScaleAfterInsert(DPUCBInt):
    """schedule: the release scale is computed for one item more than the mean holds, (n + 1)^(v/2 - 1),
    and reported honestly: every report is right, the spend exceeds the schedule."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        im._default_scale = lambda n: (np.asarray(n, dtype=float) + 1.0) ** (im.v / 2.0 - 1.0)
        return run


class NextArmsStream(DPUCBBound):
    """footprint (stream): every hybrid release is reported on the next arm's stream."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        record = run.hybrid._record
        run.hybrid._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, (np.asarray(kk) + 1) % n_arms, lo, hi,
                                                                           scale, m, node)
        return run


class ScaleGrowsWithSum(AnytimeLazyUCB):
    """noise_coupling: the batch noise scale grows with the batch sum, (1/eps)(1 + min(sum, 1)/4), never
    below the scale reported: no report is wrong and the noise law moves little, but the noise reads the
    data (a data-dependent scale: the privacy loss is unbounded in the tails)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.batches.sampler

        def release(stat, scale, **kw):
            grow = 1.0 + np.minimum(np.asarray(stat, dtype=float), 1.0) / 4.0
            return type(sampler)._sum_release(sampler, stat, np.asarray(scale) * grow, **kw)

        sampler._sum_release = release
        return run


class GaussianNodes(PrivateUCB):
    """noise_report (family): tree nodes get Gaussian noise of the Laplace's standard deviation through
    the sampler's own Gaussian release, reported as Laplace."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.tree.sampler
        sampler._sum_release = lambda stat, scale, **kw: type(sampler).gaussian_release(
            sampler, stat, np.broadcast_to(np.sqrt(2.0) * np.asarray(scale), np.shape(stat)))
        return run


class HighLevelHalved(PrivateUCB):
    """noise_report (scale): tree nodes of level >= 3 (the rare ones) are drawn at half the reported scale."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree, sampler = run.tree, run.tree.sampler
        insert, state = tree._insert, {}

        def ins(v, f, rr, kk):  # the one insert path: note the new counts of the inserted streams
            state["tau"] = tree.count.reshape(-1)[f] + 1
            try:
                insert(v, f, rr, kk)
            finally:
                state.clear()

        def release(stat, scale, **kw):
            tau = state.get("tau")
            high = (tau & -tau) >= 8 if tau is not None and np.size(tau) == np.size(stat) else False
            return type(sampler)._sum_release(sampler, stat, np.where(high, np.asarray(scale) / 2.0, scale), **kw)

        tree._insert, sampler._sum_release = ins, release
        return run


class HalvedLate(AnytimeLazyUCB):
    """noise_report, late: batch noise at half the reported scale after round 200 (past the white-box
    horizon of the audit command: only its long run reaches it)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler, select, clock = run.batches.sampler, run.select, {"t": 0}

        def sel(t):
            clock["t"] = t
            return select(t)

        def release(stat, scale, **kw):
            return type(sampler)._sum_release(sampler, stat, scale / 2.0 if clock["t"] > 200 else scale, **kw)

        run.select, sampler._sum_release = sel, release
        return run


class TreeOneRecordLater(PrivateUCB):
    """footprint_position: every tree node declared one record later, [lo + 1, hi + 1) (right stream,
    scale and sensitivity; the changed releases still share a record)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        record = run.tree._record
        run.tree._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, kk, np.asarray(lo) + 1,
                                                                         np.asarray(hi) + 1, scale, m, node)
        return run


class Exp3RecordLater(DPEXP3Lap):
    """footprint_position on a stream no mechanism inserts into (numbered by the arm's pulls): each
    per-record release declared as the arm's next record, [pos + 1, pos + 2)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        release = run.noise.release_records
        run.noise.release_records = lambda v, scale, rr, kk, pos: release(v, scale, rr, kk, np.asarray(pos) + 1)
        return run


class LateBatchDropsFirst(AnytimeLazyUCB):
    """footprint_position: batch releases of two or more records declare [lo + 1, hi) (no footprint is
    empty, so the changed releases of a stream -- one per batch -- trivially share a record)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        record = run.batches._record

        def rec(rr, kk, lo, hi, scale, m, node):
            lo = np.asarray(lo)
            return record(rr, kk, np.where(np.asarray(hi) - lo >= 2, lo + 1, lo), hi, scale, m, node)

        run.batches._record = rec
        return run


class TreeLateNodesShifted(PrivateUCB):
    """footprint_position on late records only: tree nodes starting at record 128 or later are declared
    one record later, [lo + 1, hi + 1); every node over the first 128 records is right, so a changed
    record among an arm's first pulls never sees the bug (docs/audit.md, "Late records")."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        record = run.tree._record

        def rec(rr, kk, lo, hi, scale, m, node):
            shift = (np.asarray(lo) >= 128).astype(np.int64)
            return record(rr, kk, np.asarray(lo) + shift, np.asarray(hi) + shift, scale, m, node)

        run.tree._record = rec
        return run


class HybridLateLogDropsFirst(DPUCBBound):
    """footprint_position on late records only: the hybrid's logarithmic releases at counts >= 256
    declare [t/2 + 1, t), leaving out the first record of their increment."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        record = run.hybrid._record

        def rec(rr, kk, lo, hi, scale, m, node):
            if m.endswith("/log"):
                lo = np.asarray(lo)
                lo = np.where(lo >= 128, lo + 1, lo)
            return record(rr, kk, lo, hi, scale, m, node)

        run.hybrid._record = rec
        return run


class BlockCountsTwice(DPSE):
    """sensitivity, on the planned path only: DP-SE whose block insert (``update_block`` of two or more
    rounds, the engine's path) adds the stretch's rewards to the open batch sums twice. Round by round
    (``insert_pulled_rounds`` of one round) it is right, so only an audit that plans sees it."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        insert = fb.insert_pulled_rounds

        def twice(arms, values, replicates=None):
            insert(arms, values, replicates)
            arms, values = np.asarray(arms), np.asarray(values, dtype=float)
            if arms.shape[0] > 1:
                rows = np.arange(arms.shape[1]) if replicates is None else np.flatnonzero(replicates)
                np.add.at(fb._open_sum, (np.broadcast_to(rows, arms[:, rows].shape), arms[:, rows]), values[:, rows])

        fb.insert_pulled_rounds = twice
        return run


# --- on the policy's own release schedule (round 7): witnessed only by a record on a release boundary


class IntervalNewestTwice(DPUCBInt):
    """sensitivity, at the policy's release boundaries only: DP-UCB-Int (interval 23) whose interval
    releases from the second one on (counts 46, 69, ...) count the newest record twice (sensitivity 2/n
    against the declared 1/n). Its only witnesses are the records 45, 68, ... of an arm."""

    def __init__(self, interval: int = 23, **kwargs):
        super().__init__(interval=interval, **kwargs)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        insert = im._insert

        def _insert(v, f, rr, kk):
            n = flat(im.count)[f] + 1
            due = (n % im.interval == 0) & (n >= 2 * im.interval)
            if not due.any():
                return insert(v, f, rr, kk)
            g, extra = f[due], np.asarray(v)[due]
            before = flat(im.sum)[g].copy()
            flat(im.sum)[g] += extra
            insert(v, f, rr, kk)
            flat(im.sum)[g] = before + extra

        im._insert = _insert
        return run


class GapBatchCarriesLast(PrivateTS):
    """footprint / footprint_position, at a gap-batch boundary only: Private-TS whose gap batches, from the
    second on, carry the record that closed them into the next batch's sum (one record in two gap
    releases). Its only witness is the last record of an arm's second gap batch (and later ones)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        from privbandit.policies.private_ts import _GAP

        m0 = run.m.copy()
        last = {}
        update, close = run.update, run._close_batches

        def upd(t, arms, rewards):
            last["arms"], last["rewards"] = np.asarray(arms).copy(), np.asarray(rewards, dtype=float).copy()
            return update(t, arms, rewards)

        def close_batches(rows, t):
            close(rows, t)
            rows = np.asarray(rows)
            carry = rows[(run.phase[rows] == _GAP) & (run.n_gap[rows] > m0[rows])]
            if carry.size and "arms" in last:
                run.batch_sum[carry, last["arms"][carry]] += last["rewards"][carry]

        run.update, run._close_batches = upd, close_batches
        return run


class IntervalPeeksFirstAfter(DPUCBInt):
    """decisions, at the record just after a release only: DP-UCB-Int (interval 23) whose index moves each
    arm's stale noisy mean a quarter of the way towards the first reward revealed after its last
    release, un-noised. Its only witnesses are the records 23, 46, ... of an arm."""

    def __init__(self, interval: int = 23, **kwargs):
        super().__init__(interval=interval, **kwargs)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        rows = np.arange(replicates)
        first = np.full((replicates, n_arms), np.nan)
        update, select = run.update, run.select

        def upd(t, arms, rewards):
            update(t, arms, rewards)
            arms = np.asarray(arms)
            n, done = run.counts[rows, arms], im.released_count[rows, arms]
            fresh = n == done + 1
            first[rows[fresh], arms[fresh]] = np.asarray(rewards, dtype=float)[fresh]
            released = n == done
            first[rows[released], arms[released]] = np.nan

        def sel(t):
            if t <= n_arms * run.first:
                return select(t)
            mean = im.noisy_mean
            nudged = np.where(np.isnan(first), mean, mean + 0.25 * (first - mean))
            return np.argmax(nudged + np.sqrt(2.0 * np.log(t) / run.counts), axis=1)

        run.update, run.select = upd, sel
        return run


# --- round 10: the adversarial private policies -----------------------------------------------------------
from privbandit.policies import BatchedPrivateEXP3, PrivateEXP3  # noqa: E402


class Exp3RawReward(DPEXP3Lap):
    """decisions: EXP3 learns from the raw reward; the noisy release is made and reported, then unused."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def update(t, arms, rewards):
            rows = run.core.rows
            lo = run.pulls[rows, arms]
            run.noise.release_records(rewards, run.scale, rows, arms, lo)
            run.pulls[rows, arms] = lo + 1
            run.core.learn(arms, rewards)

        run.update = update
        return run


class Exp3NoiseAfterImportance(PrivateEXP3):
    """sensitivity: Lap(1/eps) on the importance-weighted loss (1 - r)/p (sensitivity 1/p), reported as 1."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def update(t, arms, rewards):
            core = run.core
            lo = run.pulls[core.rows, arms]
            noisy = run.noise.release_records((1.0 - rewards) / core.p_played, run.scale, core.rows, arms, lo)
            run.pulls[core.rows, arms] = lo + 1
            core.log_w[core.rows, arms] -= core.eta * noisy

        run.update = update
        return run


class Exp3BatchAverageScale(BatchedPrivateEXP3):
    """noise_report: the batch's loss *sum* gets the average's noise Lap(1/(eps tau)); the ledger hears 1/eps."""

    def __init__(self, epsilon=1.0, tau=4, exact=False):
        super().__init__(epsilon, tau, exact)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        noise, tau = run.noise, run.tau

        def release(statistic, scale, sensitivity, replicate, stream, lo, hi, node=None):
            noisy = noise.sampler.laplace_release(np.asarray(statistic, dtype=float), np.asarray(scale, float) / tau)
            noise.ledger.record_laplace(replicate, stream, lo, hi, scale, sensitivity, mechanism=noise.name, node=node)
            return noisy

        def release_records(values, scale, replicate, stream, position, end=None):  # the run's path (session 8)
            return release(values, scale, 1.0, replicate, stream, position,
                           np.asarray(position) + 1 if end is None else end)

        noise.release, noise.release_records = release, release_records
        return run
