"""The project's planted privacy bugs: copies of the real private policies with one bug each.

Every bug is a subclass of a policy of ``privbandit.policies`` (with, inside ``start``, an
instance-level monkeypatch of the run or of one of its mechanisms); the class keeps its parent's
``privacy_schedule``, so the accountant still makes the original claim. Nothing here is imported by
the package. ``bench/audit_planted.py`` runs the ``privbandit audit`` pipeline at ``--tier ci`` on
each and prints the catch table of docs/audit.md.

Kinds (issue 13): a tree level with half the declared noise; a statistic re-drawn every round
(reported, and silent); a sensitivity mis-declared for one arm; an exploration bonus from un-noised
sums; ties broken by the raw empirical mean; a release not reported to the ledger; rewards centred so
the sensitivity doubles; an exact prefix sum plus fresh noise at every insert. ``AIMED`` lists the
bugs planted with a particular check in mind; the others were written afterwards, without looking
at which check would see them, to measure generalisation. ``ROUND4`` lists fourteen more, planted the
way an outside tester would (docs/audit.md, "Round 4"): tree levels off by one, a late half-scale
logarithmic release, an interval scale computed one count ahead, raw means at small counts, a scale
that shrinks with the data, noise seeded by the data, Gaussian noise reported as Laplace, releases
reported on the wrong stream, interval releases at every round, an exact posterior for one arm,
rewards normalised by their running maximum, a noisy mean clipped to the seen range, a posterior
subclass with sigma one count ahead, and noise halved after round 1,000. ``ROUND5`` lists footprints
wrong *within* the right stream (docs/audit.md, "Round 5"): tree nodes reported one record later, a
batch that drops its first record (DP-SE; Lazy-DP-TS for batches of two or more), an interval release that drops its newest record, a posterior that
drops its newest record, and adversarial batch releases reported one record later. ``ROUND6`` (session
5): footprints wrong only deep in a stream, and a bug on the planned path only. ``ROUND7`` (session 6):
bugs acting only on records at the policy's own release boundaries -- a DP-UCB-Int interval's newest
record counted twice, the record completing a DP-SE batch counted twice, a Private-TS gap batch carrying
its closing record into the next, a DP-UCB-Int index reading the first record after a release raw.
``ROUND8`` to ``ROUND10`` were written blind (round 9: the contextual policies; round 10: graph feedback,
adversarial policies, deployments); ``ROUND11`` (session 9), also blind, aims at the Limitations of
docs/audit.md: samplers wrong only in their tails or float lattice, arms >= 3, rounds past 2,000, hub and
redrawn graphs, certificates wrong only at delta > 0, contexts of other norms (``CONTROLS11``: correct
variants).
"""

from __future__ import annotations

import math

import numpy as np

from accountants import Certificate
from accountants.gdp_conversion import epsilon_for_delta
from privbandit.mechanisms._base import exact_log2, flat
from privbandit.mechanisms.posterior import GaussianPosteriorRelease
from privbandit.contextual import linalg
from privbandit.mechanisms.sampling import GRID, NoiseSampler
from privbandit.policies import (DPSE, DPUCB, AnytimeLazyUCB, BatchedPrivateEXP3, DPEXP3Lap, DPUCBBound,
                                 DPUCBInt, GaussianTS, LazyDPTS, PrivateEXP3, PrivateTS, PrivateUCB)
from privbandit.policies.base import note_rounds
from privbandit.policies.gaussian_ts import GaussianTSSchedule
from privbandit.policies.graph_private import (DPUCBN, GaussianTSN, LazyDPTSN, StreamsSchedule, _explore_first,
                                               streams_per_record)
from privbandit.policies.hu_hegde import LAZY_SHIFT, beta_draw
from privbandit.policies.linear import JointDPLinUCB, PrivateLinTS, PrivateLinUCB


def _named(cls, name):
    cls.name = name
    return cls


# --- 1. one tree level drawn with half the declared noise -------------------------------------------
class TreeHalfLevel(PrivateUCB):
    """Private-UCB whose tree draws level-1 nodes with half the scale; the ledger hears the full one."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree, core = run.tree, run.tree._core
        insert_flat = core.insert_flat

        def halved(mech, f, rr, kk, v, scale, offset, mechanism):
            tau = flat(core.tau)[f] + 1
            level = exact_log2(tau & -tau)
            return insert_flat(mech, f, rr, kk, v, np.where(level == 1, scale / 2.0, scale), offset, mechanism)

        record = tree._record
        core.insert_flat = halved
        tree._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, kk, lo, hi, tree.scale, m, node)
        return run


# --- 2a. re-drawn every round, reported ---------------------------------------------------------------
class RedrawReported(DPUCBInt):
    """DP-UCB-Int whose interval mean is released afresh at every select (each re-draw is reported,
    with the statistic's own node id, so the ledger can see the repeat)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        _StatKeeper.install(im)
        select = run.select

        def redraw_select(t):
            rr, kk = np.nonzero(im.released_count > 0)
            if rr.size:
                n = im.released_count[rr, kk]
                scale = im._scales(n)
                im.noisy_mean[rr, kk] = im.sampler.laplace_release(im._bug_stat[rr, kk], scale)
                im.ledger._record_from_mechanism(rr, kk, 0, n, scale, 1.0 / n, im.name, n)
            return select(t)

        run.select = redraw_select
        return run


class _StatKeeper:
    """Keeps, per stream, the exact mean at its last release (what a re-draw re-releases)."""

    @staticmethod
    def install(im):
        im._bug_stat = np.zeros(im.count.shape)
        release = im._release

        def tracked(rr, kk):
            release(rr, kk)
            im._bug_stat[rr, kk] = im.sum[rr, kk] / np.maximum(im.count[rr, kk], 1)

        im._release = tracked


# --- 2b. re-drawn every round, silently -----------------------------------------------------------------
class RedrawSilent(DPUCBInt):
    """DP-UCB-Int that re-noises its released means at every select without telling the ledger."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        _StatKeeper.install(im)
        select = run.select

        def redraw_select(t):
            rr, kk = np.nonzero(im.released_count > 0)
            if rr.size:
                scale = im._scales(im.released_count[rr, kk])
                im.noisy_mean[rr, kk] = im.sampler.laplace_release(im._bug_stat[rr, kk], scale)
            return select(t)

        run.select = redraw_select
        return run


# --- 3. sensitivity mis-declared for one arm ---------------------------------------------------------------
class SensitivityOneArm(DPUCBBound):
    """DP-UCB-Bound whose arm-1 hybrid releases use half the scale and declare sensitivity 1/2, so the
    ledger's epsilon per release is unchanged while the true one doubles."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        hy = run.hybrid
        sampler = hy.sampler
        orig = type(sampler)._sum_release
        state = {"kk": None}
        record = hy._record

        def rec(rr, kk, lo, hi, scale, mechanism, node):
            sens = np.where(kk == 1, 0.5, 1.0)
            scale = np.broadcast_to(np.asarray(scale, dtype=float), kk.shape)
            hy.ledger._record_from_mechanism(rr, kk, lo, hi, scale * np.where(kk == 1, 0.5, 1.0), sens,
                                             mechanism, node)

        # the insert path shared by insert and insert_pulled: both parts see the arms they release for
        log_release, binary_insert = hy._log_release, hy._binary_insert

        def log_rel(f, rr, kk, t, v):
            state["kk"] = kk
            log_release(f, rr, kk, t, v)

        def bin_ins(f, rr, kk, t, v):
            state["kk"] = kk
            binary_insert(f, rr, kk, t, v)

        def sum_release(statistic, scale, **kw):
            kk = state["kk"]
            if kk is not None and kk.size == np.size(statistic):
                scale = np.broadcast_to(np.asarray(scale, dtype=float), kk.shape) * np.where(kk == 1, 0.5, 1.0)
            return orig(sampler, statistic, scale, **kw)

        hy._record = rec
        hy._log_release, hy._binary_insert = log_rel, bin_ins
        sampler._sum_release = sum_release
        return run


# --- 4. exploration bonus from un-noised sums -------------------------------------------------------------
class BonusUnnoised(AnytimeLazyUCB):
    """Anytime-Lazy-UCB whose bonus shrinks with the exact empirical mean (a variance-style bonus)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run._sum = np.zeros((replicates, n_arms))
        run._n = np.zeros((replicates, n_arms))
        update = run.update

        def upd(t, arms, rewards):
            run._sum[np.arange(replicates), arms] += rewards
            run._n[np.arange(replicates), arms] += 1
            update(t, arms, rewards)

        def select(t):
            if t <= n_arms:
                return np.full(replicates, t - 1, dtype=np.intp)
            o = run.batches.batch_size
            mean = run._sum / np.maximum(run._n, 1)
            a_ln_t = run.alpha * math.log(t)
            bonus = np.sqrt(a_ln_t * mean * (1 - mean) / o + 1e-3) + a_ln_t / (run.epsilon * o)
            return np.argmax(run.batches.noisy_sum / o + bonus, axis=1)

        run.update, run.select = upd, select
        return run


# --- 5. ties broken by the raw empirical mean -------------------------------------------------------------
class TieRawMean(GaussianTS):
    """Gaussian TS (b = 4) whose pre-pulls go round robin over the least-pulled arms, ties broken
    towards the best raw empirical mean (instead of a fixed order)."""

    def __init__(self, b: int = 4, c: float = 1.0):
        super().__init__(b=b, c=c)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        select = run.select

        def tie_select(t):
            if t > n_arms * run.b:
                return select(t)
            least = run.counts == run.counts.min(axis=1, keepdims=True)
            mean = run.sums / np.maximum(run.counts, 1)
            return np.argmax(np.where(least, mean + 1e-9, -1.0), axis=1)

        run.select = tie_select
        return run


# --- 6. a release not reported to the ledger ---------------------------------------------------------------
class UnreportedRelease(LazyDPTS):
    """Lazy-DP-TS whose batch releases of arm 0 are never reported."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        record = fb._record

        def rec(rr, kk, lo, hi, scale, mechanism, node):
            keep = kk != 0
            lo = np.broadcast_to(lo, rr.shape)[keep] if np.ndim(lo) else lo
            hi = np.broadcast_to(hi, rr.shape)[keep] if np.ndim(hi) else hi
            node = np.broadcast_to(node, rr.shape)[keep] if np.ndim(node) else node
            record(rr[keep], kk[keep], lo, hi, scale, mechanism, node)

        fb._record = rec
        return run


# --- 7. rewards centred: the sensitivity doubles -----------------------------------------------------------
class CentredRewards(GaussianTS):
    """Gaussian TS on centred rewards 2x - 1 in [-1, 1]: the posterior mean's sensitivity is 2/(k+1),
    while the release still declares 1/(k+1)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        # below the reward check that wraps every PolicyRun.update (it would refuse a centred reward):
        # the class's own update, unwrapped, is what the bug feeds
        raw = type(run).update.__wrapped__
        run.update = lambda t, arms, rewards: raw(run, t, arms, 2.0 * np.asarray(rewards) - 1.0)
        return run


# --- 8. exact prefix sum plus fresh noise at every insert --------------------------------------------------
class PrefixFreshNoise(PrivateUCB):
    """Private-UCB whose 'tree' releases the exact prefix sum plus one fresh Lap(L/eps) at every insert,
    reported as the tree node it pretends to be."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree = run.tree
        exact = np.zeros((replicates, n_arms))

        def insert(v, f, rr, kk):  # the one path behind insert and insert_pulled
            flat(exact)[f] += v
            count = flat(tree.count)
            tau = count[f] + 1
            low = tau & -tau
            tree.noisy_sum[rr, kk] = tree.sampler._sum_release(flat(exact)[f], tree.scale)
            tree._record(rr, kk, tau - low, tau, tree.scale, tree.name, (tau - low) * 64 + exact_log2(low))
            count[f] = tau

        tree._insert = insert
        return run


# --- unaimed: written afterwards, without a check in mind ---------------------------------------------------
class NoiseOutsideSampler(DPUCB):
    """DP-UCB whose hybrid noise is drawn with rng.laplace at a third of the scale, outside the sampler."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.hybrid.sampler
        sampler._sum_release = lambda stat, scale: stat + sampler.rng.laplace(0.0, np.asarray(scale) / 3.0, np.shape(stat))
        return run


class StaleNoise(GaussianTS):
    """Gaussian TS that draws its posterior noise once and re-uses it every round (the statistic moves,
    the noise does not: consecutive releases reveal the reward exactly)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        post = run.posterior
        draw = post._standard_normals
        cache = {}

        def frozen():
            if "z" not in cache:
                cache["z"] = draw().copy()
            return cache["z"]

        post._standard_normals = frozen
        return run


class IndexUsesLastReward(DPUCBInt):
    """DP-UCB-Int that adds a small bonus to the arm whose last reward was 1 (a stay-on-win heuristic).

    At the paper's interval parameter rate=1 (interval 1: adaptive play from round K + 1), as planted
    when that was DP-UCB-Int's default. At today's default (certified epsilon 1, interval 197) the bug
    is just as real, but adaptive play starts at round 395, when the audit's changed record (one of an
    arm's first pulls) is never an arm's last reward: the coupled runs cannot see it (measured:
    CONSISTENT), a limit of the neighbour placement, docs/audit.md."""

    def __init__(self, rate: float = 1.0, **kwargs):
        super().__init__(rate=rate, **kwargs)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        last = np.zeros((replicates, n_arms))
        update, select = run.update, run.select

        def upd(t, arms, rewards):
            last[np.arange(replicates), arms] = rewards
            update(t, arms, rewards)

        def sel(t):
            arms = np.asarray(select(t)).copy()
            if t > n_arms * run.first:
                index = run.interval.noisy_mean + np.sqrt(2.0 * math.log(t) / run.counts) + 0.05 * last
                arms = np.argmax(index, axis=1)
            return arms

        run.update, run.select = upd, sel
        return run


class ScaleIsEpsilon(AnytimeLazyUCB):
    """Anytime-Lazy-UCB at epsilon=0.5 whose batch noise uses scale epsilon instead of 1/epsilon."""

    def __init__(self, epsilon: float = 0.5, alpha: float = 3.1, exact: bool = False):
        super().__init__(epsilon, alpha, exact)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        orig = fb.sampler._sum_release  # the batches' release path (laplace_release is not used)
        fb.sampler._sum_release = lambda stat, scale, **kw: orig(stat, self.epsilon, **kw)
        return run



# --- round 4: an outside tester's DP implementation mistakes -----------------------------------------------
# Written as an outside tester who knows the usual DP implementation mistakes would plant them, each
# through a public-ish seam of the current code (a run's mechanism attributes and methods, its
# sampler's release methods, the policy run's select/update), never by editing the package. Each keeps
# its parent's claim. ``bench/audit_planted.py`` checks before every audit that the bug is armed: its
# run differs from its parent's (actions, released values or ledger reports) on fixed tapes and seed.


class TreeLevelsOffByOne(PrivateUCB):
    """Private-UCB whose trees count their levels as ``horizon.bit_length() - 1`` (floor(log2 T)): node
    noise Lap((L - 1)/eps0) while a record still enters up to L nodes. The ledger is told the scale
    actually drawn (an honest report), so only a comparison with the schedule sees it."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree = run.tree
        tree.levels = max(1, tree.horizon.bit_length() - 1)
        tree.scale = tree.levels / tree.epsilon
        return run


class LateLogHalfScale(DPUCBBound):
    """DP-UCB-Bound whose hybrid logarithmic releases draw Lap(1/eps) -- the eps/2 split forgotten --
    once a stream holds 64 items ("late in the run"), while the ledger is told Lap(2/eps)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        hy = run.hybrid
        sampler = hy.sampler
        log_release = hy._log_release
        late = {"t": None}

        def log_rel(f, rr, kk, t, v):
            late["t"] = t  # the releasing streams' counts (powers of two)
            try:
                log_release(f, rr, kk, t, v)
            finally:
                late["t"] = None

        def sum_release(statistic, scale, **kw):
            t = late["t"]
            if t is not None and np.size(t) == np.size(statistic):
                scale = np.where(np.asarray(t) >= 64, np.asarray(scale) / 2.0, np.asarray(scale) * 1.0)
            return type(sampler)._sum_release(sampler, statistic, scale, **kw)  # looked up per call: traced

        hy._log_release = log_rel
        sampler._sum_release = sum_release
        return run


class IntervalScaleAfterInsert(DPUCBInt):
    """DP-UCB-Int (default: certified eps = 1, interval 197) whose release scale is computed for the
    count after the next insert, (n + 1)^(v/2 - 1), for a mean of n items (sensitivity 1/n, reported
    honestly): each release is (n+1)^(1 - v/2)/n-DP, a little more than the n^(-v/2) the schedule pays."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        im._default_scale = lambda n: (np.asarray(n, dtype=float) + 1.0) ** (im.v / 2.0 - 1.0)
        return run


class RawMeanSmallCounts(PrivateUCB):
    """Private-UCB that, while an arm has fewer than 4 pulls ("too few for the tree to be accurate"),
    scores it by its exact empirical mean instead of the tree's noisy sum."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sums = np.zeros((replicates, n_arms))
        rows = np.arange(replicates)
        update, select = run.update, run.select

        def upd(t, arms, rewards):
            sums[rows, arms] += rewards
            update(t, arms, rewards)

        def sel(t):
            if t <= n_arms:
                return select(t)
            n = run.counts
            bonus = np.sqrt(2.0 * math.log(t) / n)
            noisy = (run.tree.noisy_sum + run.relaxation) / n + bonus
            return np.argmax(np.where(n < 4, sums / n + bonus + run.relaxation / n, noisy), axis=1)

        run.update, run.select = upd, sel
        return run


class DataDependentScale(LazyDPTS):
    """Lazy-DP-TS whose batch noise shrinks with the batch sum ("less noise where there is little
    signal"): scale (1/eps) min(1, 1/4 + sum), while the ledger is told 1/eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.batches.sampler

        def sum_release(statistic, scale, **kw):
            stat = np.asarray(statistic, dtype=float)
            return type(sampler)._sum_release(sampler, stat, np.asarray(scale) * np.minimum(1.0, 0.25 + stat), **kw)

        sampler._sum_release = sum_release
        return run


class SeededByData(AnytimeLazyUCB):
    """Anytime-Lazy-UCB with "reproducible" noise: each batch release draws from a generator seeded
    by the batch sums, so the noise is a deterministic function of the data."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.batches.sampler

        def sum_release(statistic, scale, **kw):
            stat = np.asarray(statistic, dtype=float)
            seeded = type(sampler)(np.random.default_rng([int(x) for x in np.round(stat * 2 ** 20) % 2 ** 32]))
            return type(sampler)._sum_release(seeded, stat, scale, **kw)

        sampler._sum_release = sum_release
        return run


class GaussianForLaplace(PrivateUCB):
    """Private-UCB whose tree nodes get Gaussian noise of the declared Laplace scale's standard
    deviation (sigma = sqrt(2) L/eps0) through the sampler's own Gaussian release; the ledger is told
    Lap(L/eps0). Same variance, but no pure-DP guarantee at all."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.tree.sampler

        def sum_release(statistic, scale, **kw):
            stat = np.asarray(statistic, dtype=float)
            return type(sampler).gaussian_release(sampler, stat, np.broadcast_to(math.sqrt(2.0) * np.asarray(scale), stat.shape))

        sampler._sum_release = sum_release
        return run


class WrongStream(DPUCBBound):
    """DP-UCB-Bound whose hybrid reports every release on the next arm's stream: the counts, scales
    and footprints are right, the stream is not, so the ledger charges another arm's records."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        hy = run.hybrid
        record = hy._record
        hy._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, (np.asarray(kk) + 1) % n_arms, lo, hi,
                                                                   scale, m, node)
        return run


class IntervalEveryRound(DPUCBInt):
    """DP-UCB-Int (rate=1/8: interval 8) that refreshes the pulled arm's noisy mean at every pull
    (fresh noise through the mechanism's sampler) while the ledger hears only the interval releases."""

    def __init__(self, rate: float = 0.125, **kwargs):
        super().__init__(rate=rate, **kwargs)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        update = run.update
        rows = np.arange(replicates)

        def upd(t, arms, rewards):
            update(t, arms, rewards)
            n = im.count[rows, arms]
            im.noisy_mean[rows, arms] = im.sampler._sum_release(im.sum[rows, arms] / n, im._default_scale(n),
                                                                on_grid=False)

        run.update = upd
        return run


class PosteriorExactOneArm(LazyDPTS):
    """Lazy-DP-TS whose arm 0 posterior is centred on its exact running mean (all of its rewards),
    not on the noisy batch mean; the other arms are untouched."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sums = np.zeros((replicates, n_arms))
        counts = np.zeros((replicates, n_arms))
        rows = np.arange(replicates)
        update, select = run.update, run.select

        def upd(t, arms, rewards):
            sums[rows, arms] += rewards
            counts[rows, arms] += 1
            update(t, arms, rewards)

        def sel(t):
            arms = select(t)  # refreshes the cached terms (and is the unmodified choice before round K)
            if t <= n_arms:
                return arms
            shift = 3.0 * math.log2(t) / run._eps_o
            mean = run._mean.copy()
            mean[:, 0] = sums[:, 0] / np.maximum(counts[:, 0], 1)
            mubar = np.clip(mean + shift, 0.0, 1.0)
            return np.argmax(run.rng.beta(mubar * run._o + 1.0, (1.0 - mubar) * run._o + 1.0), axis=1)

        run.update, run.select = upd, sel
        return run


class NormaliseByMax(GaussianTS):
    """Gaussian TS (b = 2) that rescales every reward by the largest reward seen so far ("normalise to
    [0, 1]"): one record changes every stored value, far beyond the declared 1/(k+1)."""

    def __init__(self, b: int = 2, c: float = 1.0):
        super().__init__(b=b, c=c)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        raw = np.zeros((replicates, n_arms))
        top = np.full(replicates, 1e-3)
        rows = np.arange(replicates)
        update = type(run).update.__wrapped__  # below the reward check (the stored values stay in [0, 1])

        def upd(t, arms, rewards):
            rewards = np.asarray(rewards, dtype=float)
            raw[rows, arms] += rewards
            np.maximum(top, rewards, out=top)
            update(run, t, arms, rewards)
            run.sums[:] = raw / top[:, None]

        run.update = upd
        return run


class ClippedToSeenRange(LazyDPTS):
    """Lazy-DP-TS that clips each arm's noisy batch mean to the range of rewards that arm has paid
    ("keep the estimate plausible"): a post-processing that reads the data."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        lo = np.full((replicates, n_arms), np.inf)
        hi = np.full((replicates, n_arms), -np.inf)
        rows = np.arange(replicates)
        update, select = run.update, run.select

        def upd(t, arms, rewards):
            lo[rows, arms] = np.minimum(lo[rows, arms], rewards)
            hi[rows, arms] = np.maximum(hi[rows, arms], rewards)
            update(t, arms, rewards)

        def sel(t):
            arms = select(t)
            if t <= n_arms:
                return arms
            mean = np.clip(run._mean, lo, hi)
            mubar = np.clip(mean + 3.0 * math.log2(t) / run._eps_o, 0.0, 1.0)
            return np.argmax(run.rng.beta(mubar * run._o + 1.0, (1.0 - mubar) * run._o + 1.0), axis=1)

        run.update, run.select = upd, sel
        return run



class _PosteriorSigmaOffByOne(GaussianPosteriorRelease):
    """The posterior release rewritten with sigma^2 = c / (k + 2) (the count after the next pull), while
    the ledger's prefix recorder still reports sigma^2 = c / (k + 1)."""

    def release(self, sums, counts):
        theta = sums / (counts + 1.0) + np.sqrt(self.c / (counts + 2.0)) * self._standard_normals()
        if self._record is not None:
            self._record(counts)
        return theta


class PosteriorSigmaOffByOne(GaussianTS):
    """Gaussian TS (b = 4) whose posterior mechanism is a subclass with sigma computed one count ahead:
    sigma shrinks by sqrt((k+1)/(k+2)) <= sqrt(5/6), so each release is up to 20% more expensive
    (in mu^2) than reported -- below what a goodness-of-fit test on the residuals can see."""

    def __init__(self, b: int = 4, c: float = 1.0):
        super().__init__(b=b, c=c)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.posterior.__class__ = _PosteriorSigmaOffByOne
        return run


class HalvedAfterRound1000(AnytimeLazyUCB):
    """Anytime-Lazy-UCB whose batch noise is drawn at half the reported scale from round 1000 on ("the
    estimates are good enough by then"): invisible to any audit that stops before round 1000."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.batches.sampler
        select, clock = run.select, {"t": 0}

        def sel(t):
            clock["t"] = t
            return select(t)

        def sum_release(statistic, scale, **kw):
            late = clock["t"] >= 1000
            return type(sampler)._sum_release(sampler, statistic, scale / 2.0 if late else scale, **kw)

        run.select, sampler._sum_release = sel, sum_release
        return run


# --- round 5: footprints wrong within the right stream ------------------------------------------------------
# Each reports its releases on the right stream with the right scale, sensitivity and noise; only the
# record positions [lo, hi) are off, so the ledger composes the wrong records of the stream and
# under-reports some records' realized spend.


class TreeFootprintShifted(PrivateUCB):
    """Private-UCB whose tree reports every node one record later: [lo + 1, hi + 1) for the dyadic
    range [lo, hi) it summed (an off-by-one between the count before and after the insert)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree = run.tree
        record = tree._record
        tree._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, kk, np.asarray(lo) + 1, np.asarray(hi) + 1,
                                                                     scale, m, node)
        return run


class BatchDropsFirst(DPSE):
    """DP-SE whose epoch batch releases report [lo + 1, hi): the batch's first record is left out of
    the footprint (an off-by-one in the batch start)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        record = fb._record
        fb._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, kk, np.asarray(lo) + 1, hi, scale, m, node)
        return run


class LazyBatchDropsFirst(LazyDPTS):
    """Lazy-DP-TS whose batch releases of two or more records report [lo + 1, hi) (the one-record
    batches are reported right, so no footprint is empty)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        record = fb._record

        def rec(rr, kk, lo, hi, scale, m, node):
            lo = np.asarray(lo)
            return record(rr, kk, np.where(np.asarray(hi) - lo >= 2, lo + 1, lo), hi, scale, m, node)

        fb._record = rec
        return run


class IntervalDropsLast(DPUCBInt):
    """DP-UCB-Int (rate 1/4: interval 4) whose interval releases report [0, n - 1) for the mean of n
    items: the newest record (the one that made the release due) is left out of the footprint."""

    def __init__(self, rate: float = 0.25, **kwargs):
        super().__init__(rate=rate, **kwargs)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        led = im.ledger
        record = led._record_from_mechanism  # the mechanism reports through its ledger: patched on this run's

        def rec(rep, st, lo, hi, scale, sensitivity, mechanism, node, **kw):
            if mechanism == im.name:
                hi = np.asarray(hi) - 1
            return record(rep, st, lo, hi, scale, sensitivity, mechanism, node, **kw)

        led._record_from_mechanism = rec
        return run


class PosteriorDropsNewest(GaussianTS):
    """Gaussian TS (b = 4) whose posterior releases report footprint [0, k - 1) for a posterior over k
    records (sigma and sensitivity those of k, as drawn): the newest record is charged nothing."""

    def __init__(self, b: int = 4, c: float = 1.0):
        super().__init__(b=b, c=c)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        post = run.posterior
        if post._record is not None:
            led = post.ledger

            def record(counts):
                k = np.asarray(counts).astype(np.int64)
                sigma, sens = post._release_parameters(k)
                led._record_dense(k >= 1, 0, np.maximum(k - 1, 0), np.asarray(sigma, dtype=float),
                                  np.asarray(sens, dtype=float), post.name, gaussian=True,
                                  discrete=post.sampler.exact)

            post._record = record
        return run


class Exp3BatchShifted(BatchedPrivateEXP3):
    """Batched private EXP3 whose batch releases report [lo + 1, hi + 1) of the played arm's stream
    (the batch's first record read after it was counted)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        noise = run.noise
        release, release_records = noise.release, noise.release_records

        def rel(statistic, scale, sensitivity, replicate, stream, lo, hi, node=None):
            return release(statistic, scale, sensitivity, replicate, stream, np.asarray(lo) + 1, np.asarray(hi) + 1,
                           node)

        noise.release = rel
        # the run's path (session 8: every batch, [lo, hi)); a batch of one record passes no end
        noise.release_records = lambda values, scale, rr, kk, pos, end=None: release_records(
            values, scale, rr, kk, np.asarray(pos) + 1, None if end is None else np.asarray(end) + 1)
        return run



# --- round 6: footprints wrong only for records deep in their stream ---------------------------------------
# The early changed records (an arm's first pulls) never witness these: only the long run's late records do.


class TreeLateNodesShifted(PrivateUCB):
    """Private-UCB whose tree nodes starting at record 128 or later are reported one record later,
    [lo + 1, hi + 1) (an off-by-one that only appears once the stream is long)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        record = run.tree._record

        def rec(rr, kk, lo, hi, scale, m, node):
            shift = (np.asarray(lo) >= 128).astype(np.int64)
            return record(rr, kk, np.asarray(lo) + shift, np.asarray(hi) + shift, scale, m, node)

        run.tree._record = rec
        return run


class HybridLateLogDropsFirst(DPUCBBound):
    """DP-UCB-Bound whose logarithmic releases at counts >= 256 report [t/2 + 1, t): the first record of
    the increment is left out (its only witnesses are the records 2^j, j >= 7)."""

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
    """DP-SE whose block insert (update_block of two or more planned rounds: the engine's path, never
    taken round by round) adds the stretch's rewards to the open batch sums twice: sensitivity 2."""

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


# --- round 7: bugs on the policy's own release schedule ----------------------------------------------------
# Each acts only on the record at a release boundary that is neither an early pull, nor a power of two,
# nor likely to be a log-uniform pick: the newest record of a DP-UCB-Int interval (pull 2f - 1, 3f - 1, ...),
# the record that completes a DP-SE batch, the record that closes a Private-TS gap batch. Each changes
# what is computed (the certificate no longer holds for that record), not only what is reported.


class IntervalNewestTwice(DPUCBInt):
    """DP-UCB-Int (default: certified eps = 1, interval f = 197) whose interval releases from the second
    one on (counts 2f, 3f, ...) compute the mean with the newest record counted twice ("the record that
    made the release due is added before the insert finishes"): that release's sensitivity is 2/n, not
    the 1/n its noise is calibrated to, so the newest record's privacy loss doubles there."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        insert = im._insert

        def _insert(v, f, rr, kk):
            n = flat(im.count)[f] + 1
            due = (n % im.interval == 0) & (n >= 2 * im.interval) if im.interval else np.zeros(n.shape, bool)
            if not due.any():
                return insert(v, f, rr, kk)
            g, extra = f[due], np.asarray(v)[due]
            before = flat(im.sum)[g].copy()
            flat(im.sum)[g] += extra  # counted once more for the release the insert makes
            insert(v, f, rr, kk)
            flat(im.sum)[g] = before + extra  # the running sum itself stays right afterwards
        im._insert = _insert
        return run


class BatchEndTwice(DPSE):
    """DP-SE whose record that completes an arm's epoch batch (the R_e-th fresh reward: the round in which
    the batch is released) is added to the batch sum twice: that batch's sensitivity is 2, its noise is
    Lap(1/eps) for sensitivity 1. Planted on ``insert_pulled_rounds``, the one insert of both paths
    (round by round and planned)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        insert = fb.insert_pulled_rounds

        def twice(arms, values, replicates=None):
            insert(arms, values, replicates)
            arms, values = np.asarray(arms), np.asarray(values, dtype=float)
            rows = np.arange(arms.shape[1]) if replicates is None else np.flatnonzero(replicates)
            last = arms[-1, rows]
            # the stretch's last round filled the batch (update_block ends a stretch in that round)
            hit = rows[fb.pending[rows, last] == run.size[rows]]
            fb._open_sum[hit, arms[-1, hit]] += values[-1, hit]

        fb.insert_pulled_rounds = twice
        return run


class GapBatchCarriesLast(PrivateTS):
    """Private-TS whose gap-estimation batches, from the second one on, carry the record that closed them
    (the last arm's last pull of the round robin) into the next batch's sum ("the batch sum is reset
    before the closing reward is subtracted"): that record is in two gap releases, each charged as the
    only one (Theorem 7's parallel composition over disjoint batches no longer holds)."""

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
    """DP-UCB-Int (default: certified eps = 1, interval 197) with a "freshness correction": between
    releases, the index moves the arm's stale noisy mean a quarter of the way towards the first reward
    revealed after that release, un-noised. Every decision from then to the next release reads that
    raw record (no noise protects it: its privacy loss is unbounded); its only witnesses are the records
    just after a release (pulls f, 2f, ...)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        rows = np.arange(replicates)
        first = np.full((replicates, n_arms), np.nan)  # the first reward after each arm's last release
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
            return np.argmax(nudged + np.sqrt(2.0 * math.log(t) / run.counts), axis=1)

        run.update, run.select = upd, sel
        return run


# --- round 8 (session 6, lead): written blind -- without looking at which check would see them --------
class BatchNoiseReused(LazyDPTS):
    """Lazy-DP-TS whose streams draw their Laplace noise once (first batch) and re-use it for every later
    batch (each release still reported): the difference of two releases of a stream is exact."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        fb = run.batches
        noise, has = np.zeros(fb.pending.shape), np.zeros(fb.pending.shape, dtype=bool)

        def close(idx):
            rr, kk = idx
            if rr.size == 0:
                return
            fb.version += 1
            first = ~has[rr, kk]
            if first.any():
                r1, k1 = rr[first], kk[first]
                noise[r1, k1] = fb.sampler._sum_release(fb._open_sum[r1, k1], fb.scale) - fb._open_sum[r1, k1]
                has[r1, k1] = True
            fb.noisy_sum[rr, kk] = fb._open_sum[rr, kk] + noise[rr, kk]
            fb._record(rr, kk, fb.count[rr, kk] - fb.pending[rr, kk], fb.count[rr, kk], fb.scale, fb.name,
                       fb.n_batches[rr, kk])
            fb.batch_size[rr, kk] = fb.pending[rr, kk]
            fb.n_batches[rr, kk] += 1
            fb.pending[rr, kk] = 0
            fb._open_sum[rr, kk] = 0.0
            fb._target[rr, kk] = 0

        fb._close = close
        return run


def _scale_posterior(run, factor: float, from_count: int) -> None:
    """Gaussian TS's posterior noise multiplied by ``factor`` where an arm holds at least ``from_count``
    rewards (the ledger hears the full sigma)."""
    post = run.posterior

    def release(sums, counts):
        denom = counts + 1.0
        sigma = np.sqrt(post.c / denom)
        sigma = np.where(counts >= from_count, sigma * factor, sigma)
        theta = sums / denom + sigma * post._standard_normals()
        if post._record is not None:
            post._record(counts)
        return theta

    post.release = release


class PosteriorHalfLate(GaussianTS):
    """Gaussian TS: the posterior noise halved once an arm holds 32 rewards."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _scale_posterior(run, 0.5, 32)
        return run


class PosteriorScale090(GaussianTS):
    """Gaussian TS: the posterior noise 10% too small everywhere."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _scale_posterior(run, 0.9, 0)
        return run


class TreeScale090(PrivateUCB):
    """Private-UCB whose tree draws every node with 90% of the declared scale (reported in full)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree, core = run.tree, run.tree._core
        insert_flat = core.insert_flat

        def scaled(mech, f, rr, kk, v, scale, offset, mechanism):
            return insert_flat(mech, f, rr, kk, v, scale * 0.9, offset, mechanism)

        record = tree._record
        core.insert_flat = scaled
        tree._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, kk, lo, hi, tree.scale, m, node)
        return run


class GapRawStop(PrivateTS):
    """Private-TS (batch constant 0.02, so gap batches close within the audit's horizons) whose gap
    phase stops on the RAW batch means; the noisy ones are still released and recorded. When the
    phase ends depends on the data without noise."""

    def __init__(self, epsilon=1.0, gap_estimation=True, batch_constant=0.02, **kw):
        super().__init__(epsilon=epsilon, gap_estimation=gap_estimation, batch_constant=batch_constant, **kw)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        from privbandit.policies import private_ts

        def close_batches(rows, t):
            if rows.size == 0:
                return
            k, eps = run.k, run.p.epsilon
            m = run.m[rows]
            rr, kk, mm = np.repeat(rows, k), np.tile(np.arange(k), rows.size), np.repeat(m, k)
            lo = np.repeat(run.n_gap[rows], k)
            raw = (run.batch_sum[rr, kk] / mm).reshape(rows.size, k)
            noisy = run.release.release(run.batch_sum[rr, kk] / mm, 2.0 * k / (eps * mm), 1.0 / mm,
                                        rr, kk, lo, lo + mm, node=lo)
            run.muhat[rows] = noisy.reshape(rows.size, k)
            run.batch_sum[rows] = 0.0
            run.n_gap[rows] += m
            run.gap[rows] /= 2.0
            top2 = np.sort(raw, axis=1)[:, -2:]
            stop = (top2[:, 1] - top2[:, 0]) > run.gap[rows]
            run._enter_random(rows[stop], t)
            cont = rows[~stop]
            run.phase_start[cont] = t
            run.m[cont] = [private_ts.batch_size(run.p.batch_constant, k, run.T, eps, g) for g in run.gap[cont]]

        run._close_batches = close_batches
        return run


def _zero_sum_shortcut(fb) -> None:
    """A fresh batch whose raw sum is 0 is published as exactly 0: no noise, no release recorded."""
    close = fb._close

    def shortcut(idx):
        rr, kk = idx
        if rr.size == 0:
            return
        zero = fb._open_sum[rr, kk] == 0.0
        if zero.any():
            zr, zk = rr[zero], kk[zero]
            fb.version += 1
            fb.noisy_sum[zr, zk] = 0.0
            fb.batch_size[zr, zk] = fb.pending[zr, zk]
            fb.n_batches[zr, zk] += 1
            fb.pending[zr, zk] = 0
            fb._target[zr, zk] = 0
        close((rr[~zero], kk[~zero]))

    fb._close = shortcut


class ZeroSumShortcut(DPSE):
    """DP-SE: an epoch batch with raw sum 0 published as 0 without noise or record."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _zero_sum_shortcut(run.batches)
        return run


class LazyZeroSumShortcut(LazyDPTS):
    """Lazy-DP-TS: a doubling batch with raw sum 0 published as 0 without noise or record."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _zero_sum_shortcut(run.batches)
        return run


# --- round 9 (session 7): the contextual policies' vector trees ----------------------------------------
def _on_statistics(run, patch) -> None:
    """Apply ``patch(stats)`` when a linear run builds its statistics (lazily, at its first select: the
    context dimension is known only then); an instance-level patch, so the clean twin (the parent's
    ``start``) is the unmodified policy."""
    build = run._start_statistics

    def patched(dim):
        build(dim)
        patch(run.stats)

    run._start_statistics = patched


class LinHalfScaleDraw(PrivateLinTS):
    """Private linear TS whose tree draws its node noise at half the scale (the ledger hears the full
    scale)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            tree = stats.tree
            tree._draw = lambda m: tree.sampler.laplace(tree.scale / 2.0, size=(m, tree.size)) * tree.weights

        _on_statistics(run, patch)
        return run


class LinNoiseHalved(PrivateLinUCB):
    """Private LinUCB whose tree halves each node's noise after drawing it (the draw itself, and the
    report, are at the full scale)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            draw = stats.tree._draw
            stats.tree._draw = lambda m: draw(m) * 0.5

        _on_statistics(run, patch)
        return run


class LinGramUnnoised(PrivateLinUCB):
    """Private LinUCB whose index uses the exact Gram matrix and b of each arm (the tree still releases
    and reports its noisy sums; the index ignores them)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            add = stats.add

            def exact_add(rows, groups, z, r):
                add(rows, groups, z, r)
                packed = stats.tree.exact_sum[rows, groups]
                packed = np.concatenate([packed, np.zeros((packed.shape[0], 1))], axis=1)
                a, b = linalg.split_gram(linalg.unpack(packed, stats.dim + 1), stats.dim)
                a_inv = np.linalg.inv(a + stats.diag * np.eye(stats.dim))
                stats.a_inv[rows, groups] = a_inv
                stats.theta[rows, groups] = np.einsum("bij,bj->bi", a_inv, b)

            stats.add = exact_add

        _on_statistics(run, patch)
        return run


class JointSensitivityNoReward(JointDPLinUCB):
    """Joint-DP LinUCB whose tree declares the sensitivity of the contexts alone, sqrt 2 L^2: the
    reward's entries of [z; r] are forgotten (sqrt 2 (L^2 + 1) is right); the noise is unchanged."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            stats.tree.sensitivity = math.sqrt(2.0) * self.bound ** 2

        _on_statistics(run, patch)
        return run


class JointUnreportedLeaves(JointDPLinUCB):
    """Joint-DP LinUCB whose tree reports only its nodes of two or more records: the single-record
    (level-0) nodes, half of all releases, are drawn and used but never reach the ledger."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            book = stats.tree.ledger
            record = book._record_from_mechanism

            def leaves_dropped(rep, st, lo, hi, scale, sensitivity, mechanism, node, gaussian=False,
                               discrete=False):
                keep = (np.asarray(hi) - np.asarray(lo)) > 1
                if keep.any():
                    record(rep[keep], st[keep], lo[keep], hi[keep], scale, sensitivity, mechanism, node[keep],
                           gaussian=gaussian, discrete=discrete)

            book._record_from_mechanism = leaves_dropped

        _on_statistics(run, patch)
        return run


class LinSeededByData(PrivateLinTS):
    """Private linear TS whose tree draws each node's noise from a generator seeded by its stream's
    exact sums so far."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            tree = stats.tree
            insert = tree.insert

            def seeded(values, streams, mask=None):
                seed = int(np.abs(tree.exact_sum).sum() * 1e6) % (2 ** 32)
                tree.sampler = NoiseSampler(np.random.default_rng(seed))
                return insert(values, streams, mask)

            tree.insert = seeded

        _on_statistics(run, patch)
        return run



# --- round 10 (session 8): graph-feedback and adversarial private policies, written blind ------------------
# Graph bugs live on the side-observation path (a round's record entering several streams); adversarial
# bugs in the noise-then-EXP3 pipeline. Controls (``CONTROLS10``) are correct variants.


def _pulled_mask(run, arms) -> np.ndarray:
    mask = np.zeros((run.replicates, run.n_arms), dtype=bool)
    mask[run.rows, arms] = True
    return mask


def _remember_choice(run) -> None:
    """Keep the round's chosen arms on the run (the graph runs' ``learn`` is not told them)."""
    choose = run.choose

    def remembering(t, graph):
        run._bug_arms = choose(t, graph)
        return run._bug_arms

    run.choose = remembering


class GraphSideReleaseOnPulled(LazyDPTSN):
    """Lazy-DP-TS-N whose batch releases on side-observed arms are reported on the pulled arm's stream
    (the K-armed reporting code: ``stream = arm played``)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember_choice(run)
        b = run.batches
        record = b._record

        def rec(rr, kk, lo, hi, scale, mechanism, node):
            arms = getattr(run, "_bug_arms", None)
            kk = kk if arms is None else np.asarray(arms)[rr].astype(kk.dtype)
            record(rr, kk, lo, hi, scale, mechanism, node)

        b._record = rec
        return run


class GraphRoundsPulledOnly(DPUCBN):
    """DP-UCB-N that tags only the pulled arm's record with its round (``note_rounds`` given the played
    arm's one-hot mask): side observations look like rounds of their own to the round relation."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember_choice(run)

        def learn(t, observed, values):
            positions = run.counts.copy()
            run.hybrid.insert(values, observed)
            run.counts += observed
            arms = getattr(run, "_bug_arms", None)
            mask = observed if arms is None else observed & _pulled_mask(run, arms)
            note_rounds(run.ledger, t, mask, positions)

        run.learn = learn
        return run


class GraphRoundCertEntry(GaussianTSN):
    """Gaussian-TS-N certified under the round relation with the entry relation's schedule (the noise
    is per stream, so "the noise is the same, the certificate is the same"): mu not scaled by
    sqrt(max_degree + 1)."""

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        streams_per_record(n_arms, relation, max_degree, graph)  # still validates
        return StreamsSchedule(GaussianTSSchedule(self.b, self.c, n_arms), 1, relation)


class GraphSideObsRaw(LazyDPTSN):
    """Lazy-DP-TS-N that feeds only the pulled arm's reward to the batch mechanism and adds side
    observations straight into the posterior's mean ("side information is free"): raw sums, no release."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember_choice(run)
        side_sum = np.zeros((replicates, n_arms))
        side_n = np.zeros((replicates, n_arms))
        b = run.batches

        def choose(t, graph):
            o = np.maximum(b.batch_size, 1).astype(float)
            shift = LAZY_SHIFT * math.log2(t) / (run.eps * o)
            mubar = np.clip((b.noisy_sum + side_sum) / (o + side_n) + shift, 0.0, 1.0)
            theta = beta_draw(run.rng, mubar, o + side_n)
            run._bug_arms = _explore_first(b.batch_size > 0, theta.argmax(axis=1))
            return run._bug_arms

        def learn(t, observed, values):
            arms = getattr(run, "_bug_arms", None)
            pulled = observed if arms is None else observed & _pulled_mask(run, arms)
            positions = b.count.copy()
            b.insert(np.where(pulled, values, 0.0), pulled)
            side = observed & ~pulled
            side_sum[side] += values[side]
            side_n[side] += 1
            note_rounds(run.ledger, t, pulled, positions)

        run.choose, run.learn = choose, learn
        return run


class GaussianTSNOwnCounts(GaussianTSN):
    """Gaussian-TS-N whose posterior count k_i counts only arm i's own pulls (the K-armed code), while
    its sum takes every observation: the mean S/(k_own + 1) carries side observations with sensitivity
    1/(k_own + 1) and sigma sqrt(c/(k_own + 1)), reported over [0, k_own)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember_choice(run)
        observed_n = np.zeros((replicates, n_arms), dtype=np.int64)

        def learn(t, observed, values):
            positions = observed_n.copy()
            run.sums += values
            arms = getattr(run, "_bug_arms", None)
            run.counts += observed if arms is None else _pulled_mask(run, arms)
            observed_n[...] += observed
            note_rounds(run.ledger, t, observed, positions)

        run.learn = learn
        return run


class Exp3RawRewardUpdate(DPEXP3Lap):
    """DP-EXP3-Lap whose EXP3 weights learn from the raw reward; the noisy release is still made and
    reported (computed "for the log") but its value is not what EXP3 uses."""

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
    """Private EXP3 that adds Lap(1/eps) to the importance-weighted loss (1 - r) / p_I (sensitivity
    1/p_I, up to K/gamma) and reports it as a sensitivity-1 release of the record."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def update(t, arms, rewards):
            rows, core = run.core.rows, run.core
            lo = run.pulls[rows, arms]
            noisy = run.noise.release_records((1.0 - rewards) / core.p_played, run.scale, rows, arms, lo)
            run.pulls[rows, arms] = lo + 1
            core.log_w[rows, arms] -= core.eta * noisy

        run.update = update
        return run


class Exp3ImportanceFromRaw(PrivateEXP3):
    """Private EXP3 whose importance weight 1/p_I comes from a shadow EXP3 run on the raw (un-noised)
    losses (the "true" sampling probability); the noisy loss is then divided by that p."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core = run.core
        raw_w = np.zeros((replicates, n_arms))

        def update(t, arms, rewards):
            rows = core.rows
            lo = run.pulls[rows, arms]
            noisy = run.noise.release_records(1.0 - rewards, run.scale, rows, arms, lo)
            run.pulls[rows, arms] = lo + 1
            w = np.exp(raw_w - raw_w.max(axis=1, keepdims=True))
            p = (1.0 - core.gamma) * w / w.sum(axis=1, keepdims=True) + core.gamma / core.k
            p_raw = p[rows, arms]
            raw_w[rows, arms] -= core.eta * (1.0 - rewards) / p_raw
            core.log_w[rows, arms] -= core.eta * noisy / p_raw

        run.update = update
        return run


class Exp3BatchAvgScaleOnSum(BatchedPrivateEXP3):
    """Batched private EXP3 (tau = 4) that adds the average's noise Lap(1/(eps tau)) to the batch's loss
    *sum* (sensitivity 1), reporting the scale 1/eps the certificate assumes."""

    def __init__(self, epsilon: float = 1.0, tau: int | None = 4, exact: bool = False):
        super().__init__(epsilon, tau, exact)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        noise, tau = run.noise, run.tau
        sampler, record = noise.sampler, noise.ledger
        laplace_release = sampler.laplace_release

        def release(statistic, scale, sensitivity, replicate, stream, lo, hi, node=None):
            statistic = np.asarray(statistic, dtype=float)
            noisy = laplace_release(statistic, np.asarray(scale, dtype=float) / tau)
            if record is not None:
                record.record_laplace(replicate, stream, lo, hi, scale, sensitivity, mechanism=noise.name, node=node)
            return noisy

        def release_records(values, scale, replicate, stream, position, end=None):  # the run's path (session 8)
            return release(values, scale, 1.0, replicate, stream, position,
                           np.asarray(position) + 1 if end is None else end)

        noise.release, noise.release_records = release, release_records
        return run


class Exp3BatchNoiseReused(BatchedPrivateEXP3):
    """Batched private EXP3 (tau = 4) that draws each replicate's Laplace noise once and adds the same
    draw to every batch's loss sum (every release still reported)."""

    def __init__(self, epsilon: float = 1.0, tau: int | None = 4, exact: bool = False):
        super().__init__(epsilon, tau, exact)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        noise = run.noise
        release = noise.release
        kept = {}

        def rel(statistic, scale, sensitivity, replicate, stream, lo, hi, node=None):
            statistic = np.asarray(statistic, dtype=float)
            fresh = release(statistic, scale, sensitivity, replicate, stream, lo, hi, node)
            if "z" not in kept:
                kept["z"] = fresh - statistic
            return statistic + kept["z"]

        def rel_records(values, scale, replicate, stream, position, end=None):  # the run's path (session 8)
            return rel(values, scale, 1.0, replicate, stream, position,
                       np.asarray(position) + 1 if end is None else end)

        noise.release, noise.release_records = rel, rel_records
        return run


# controls: correct variants (must come out CONSISTENT)
class Exp3LastBatchSilent(BatchedPrivateEXP3):
    """Control: batched private EXP3 (tau = 4) that neither releases nor learns the horizon's last
    batch -- no choice follows it, so nothing is lost and no record of it is ever released."""

    def __init__(self, epsilon: float = 1.0, tau: int | None = 4, exact: bool = False):
        super().__init__(epsilon, tau, exact)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        end_batch = run._end_batch
        absorb = run._absorb
        seen = {"t": 0}

        def absorb_counting(rewards):
            seen["t"] += rewards.shape[0]
            absorb(rewards)

        def end():
            if seen["t"] >= horizon:  # the last batch: nothing follows, skip its release
                run.pulls[run.core.rows, run.arms] = run.first + run.length
                run.loss = np.zeros_like(run.loss)
                return
            end_batch()

        run._absorb, run._end_batch = absorb_counting, end
        return run


class GaussianTSNMoreNoise(GaussianTSN):
    """Control: Gaussian-TS-N whose posterior draws use variance factor 1.44 c (20% more noise) and
    report it honestly; the certificate still claims c."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.posterior.c = 1.44 * run.posterior.c
        return run


class DPUCBNIgnoresSide(DPUCBN):
    """Control: DP-UCB-N that ignores side observations (only the pulled arm's reward enters its
    stream): less information, one stream per round."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember_choice(run)
        learn = run.learn

        def pulled_only(t, observed, values):
            arms = getattr(run, "_bug_arms", None)
            mask = observed if arms is None else observed & _pulled_mask(run, arms)
            learn(t, mask, np.where(mask, values, 0.0))

        run.learn = pulled_only
        return run



# --- round 11 (session 9): written blind, aimed at the documented Limitations --------------------------
# Samplers whose law is wrong only in its tails or its float lattice (Mironov 2012), posterior noise wrong
# only for arms >= 3 or shared past a 4-arm buffer, a late-round scale cut, graph bugs that need a hub of
# degree >= 3 or a graph redrawn every round, certificates right in mu / pure eps but wrong in eps at
# delta, and contextual bugs (unclipped contexts, a context-dependent scale, node noise re-used).
# Controls (``CONTROLS11``) are correct variants.


def _swapping(parent, path: str, new_class, name: str, doc: str):
    """A subclass of the policy ``parent`` whose runs give the object at ``path`` (attributes of the run,
    e.g. "batches.sampler") the class ``new_class``: one instance's sampler or posterior, so the clean twin
    (the parent's ``start``) and every other run are untouched."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = parent.start(self, n_arms, replicates, horizon, rng, ledger)
        obj = run
        for attr in path.split("."):
            obj = getattr(obj, attr)
        obj.__class__ = new_class
        return run

    return type(name, (parent,), {"__doc__": doc, "start": start, "__module__": __name__})


def _laplace_shape(statistic, scale):
    statistic = np.asarray(statistic, dtype=float)
    return statistic, np.broadcast_to(np.asarray(scale, dtype=float), statistic.shape)


class _ClampedLaplace(NoiseSampler):
    """Laplace noise clamped to +-4 scale (an "outlier guard" so one huge draw cannot wreck an index)."""

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic, scale = _laplace_shape(statistic, scale)
        noise = self.rng.laplace(0.0, 1.0, statistic.shape) * scale
        return statistic + np.clip(noise, -4.0 * scale, 4.0 * scale)


class _Float32InverseCDF(NoiseSampler):
    """Laplace by the inverse CDF of a float32 uniform (a GPU port): 2^24 reachable noise values."""

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic, scale = _laplace_shape(statistic, scale)
        u = self.rng.random(statistic.shape, dtype=np.float32).astype(float) - 0.5
        noise = -np.sign(u) * np.log(np.maximum(1.0 - 2.0 * np.abs(u), 2.0 ** -24)) * scale
        return statistic + noise


class _NoiseOnGrid(NoiseSampler):
    """Float-mode Laplace noise rounded to the exact mode's grid (2^-20); the statistic is not rounded,
    so the released value's offset from the grid is the statistic's."""

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic, scale = _laplace_shape(statistic, scale)
        noise = self.rng.laplace(0.0, 1.0, statistic.shape) * scale
        return statistic + np.round(noise / GRID) * GRID


class _ExponentialDifference(NoiseSampler):
    """Control: Laplace(b) drawn as b (E1 - E2) with E1, E2 standard exponentials (exactly Laplace)."""

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic, scale = _laplace_shape(statistic, scale)
        e = self.rng.standard_exponential((2,) + statistic.shape)
        return statistic + (e[0] - e[1]) * scale


LazyNoiseClamped = _swapping(LazyDPTS, "batches.sampler", _ClampedLaplace, "LazyNoiseClamped",
                     """Lazy-DP-TS whose batch noise is clamped to +-4 scale (truncated Laplace: not eps-DP at all).""")


AnytimeNoiseFloat32 = _swapping(AnytimeLazyUCB, "batches.sampler", _Float32InverseCDF, "AnytimeNoiseFloat32",
                     """Anytime-Lazy-UCB whose batch noise comes from a float32 uniform's inverse CDF (2^24 values).""")


HybridNoiseOnGrid = _swapping(DPUCBBound, "hybrid.sampler", _NoiseOnGrid, "HybridNoiseOnGrid",
                     """DP-UCB-Bound whose hybrid noise is snapped to the 2^-20 grid in float mode (the statistic is not).""")


LazyExponentialDifference = _swapping(LazyDPTS, "batches.sampler", _ExponentialDifference, "LazyExponentialDifference",
                     """Control: Lazy-DP-TS drawing its Laplace noise as a difference of two exponentials.""")


class _AntitheticPosterior(GaussianPosteriorRelease):
    """Posterior normals antithetic in arm pairs (arm 2j+1 gets -z of arm 2j): "variance reduction"."""

    def _standard_normals(self):
        z = np.array(GaussianPosteriorRelease._standard_normals(self))
        pairs = 2 * (z.shape[-1] // 2)
        z[..., 1:pairs:2] = -z[..., 0:pairs:2]
        return z


class _WrapFourPosterior(GaussianPosteriorRelease):
    """Posterior normals from a 4-column buffer: arm k >= 4 re-uses arm k mod 4's normal."""

    def _standard_normals(self):
        z = np.array(GaussianPosteriorRelease._standard_normals(self))
        if z.shape[-1] > 4:
            z[..., 4:] = z[..., np.arange(4, z.shape[-1]) % 4]
        return z


class _ReorderedPosterior(GaussianPosteriorRelease):
    """Control: each round's normals drawn arm-major ((K, R), transposed): a legitimate reordering."""

    def _standard_normals(self):
        return np.ascontiguousarray(self.sampler.rng.standard_normal((self.arms, self.replicates)).T)


PosteriorAntitheticPairs = _swapping(GaussianTS, "posterior", _AntitheticPosterior, "PosteriorAntitheticPairs",
                     """Gaussian TS whose posterior normals are antithetic within arm pairs: theta_0 + theta_1 reveals
    S_0/(k_0+1) + S_1/(k_1+1) whenever the two arms hold the same count.""")


PosteriorWrapFour = _swapping(GaussianTS, "posterior", _WrapFourPosterior, "PosteriorWrapFour",
                     """Gaussian TS whose arms >= 4 re-use the normals of arm k mod 4 (a 4-column block buffer): armed
    only with K >= 5.""")


PosteriorReordered = _swapping(GaussianTS, "posterior", _ReorderedPosterior, "PosteriorReordered",
                     """Control: Gaussian TS drawing each round's normals arm-major.""")


class PosteriorVarianceHighArms(GaussianTS):
    """Gaussian TS whose arms >= 3 use the variance c/(k+1) as the standard deviation (c = 1: smaller
    than sqrt(c/(k+1)) from k = 1 on); the ledger hears sqrt(c/(k+1)). Armed only with K >= 4."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        post = run.posterior

        def release(sums, counts):
            denom = counts + 1.0
            sigma = np.sqrt(post.c / denom)
            sigma[..., 3:] = post.c / denom[..., 3:]
            theta = sums / denom + sigma * post._standard_normals()
            if post._record is not None:
                post._record(counts)
            return theta

        if n_arms > 3:  # (with three arms or fewer the parent's fused kernel runs, bit for bit)
            post.release = release
        return run


class HybridHalvedLate(DPUCBBound):
    """DP-UCB-Bound whose hybrid noise is drawn at half the reported scale from round 3,000 on (past the
    white-box long run's 2,000 rounds)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.hybrid.sampler
        select, clock = run.select, {"t": 0}

        def sel(t, *args, **kw):
            clock["t"] = t
            return select(t, *args, **kw)

        def sum_release(statistic, scale, **kw):
            late = clock["t"] >= 3000
            return type(sampler)._sum_release(sampler, statistic, scale / 2.0 if late else scale, **kw)

        run.select, sampler._sum_release = sel, sum_release
        return run


def _hub_rows(observed: np.ndarray) -> np.ndarray:
    """Replicates whose round revealed four or more entries (the played arm a hub of degree >= 3)."""
    return observed.sum(axis=1) >= 4


class GraphHubRoundTagsTruncated(DPUCBN):
    """DP-UCB-N whose round tags keep the played arm and at most two side observations (a 3-slot buffer):
    on a hub of degree >= 3 the other side-observed records are released correctly but never tagged
    with their round, so the round relation composes too little."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        truncate_round_tags(run, 2)
        return run


def truncate_round_tags(run, side_slots: int) -> None:
    """A DP-UCB-N run whose round tags keep the played arm and at most ``side_slots`` side observations."""
    _remember_choice(run)

    def learn(t, observed, values):
        positions = run.counts.copy()
        run.hybrid.insert(values, observed)
        run.counts += observed
        arms = getattr(run, "_bug_arms", None)
        if arms is None:
            note_rounds(run.ledger, t, observed, positions)
            return
        pulled = observed & _pulled_mask(run, arms)
        side = observed & ~pulled
        note_rounds(run.ledger, t, pulled | (side & (np.cumsum(side, axis=1) <= side_slots)), positions)

    run.learn = learn


class _SharedRowNoise(NoiseSampler):
    """Laplace noise where the releases of one replicate flagged in ``_bug_share`` share one draw."""

    _bug_share = None

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic, scale = _laplace_shape(statistic, scale)
        z = self.rng.laplace(0.0, 1.0, statistic.shape)
        share = self._bug_share
        if share is not None and share[0].size == z.size:
            rows, hub = share
            _, first = np.unique(rows, return_index=True)
            lead = first[np.searchsorted(np.unique(rows), rows)]
            z = np.where(hub[rows], z[lead], z)
        return statistic + z * scale


class GraphHubSharedBatchNoise(LazyDPTSN):
    """Lazy-DP-TS-N whose batch releases closing in a hub round (four or more entries revealed) share
    one Laplace draw per replicate (drawn once for the hub's neighbourhood)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        b = run.batches
        b.sampler.__class__ = _SharedRowNoise
        learn, close = run.learn, b._close
        state = {"hub": np.zeros(replicates, dtype=bool)}

        def hub_learn(t, observed, values):
            state["hub"] = _hub_rows(observed)
            learn(t, observed, values)

        def shared_close(idx):
            b.sampler._bug_share = (np.asarray(idx[0]), state["hub"])
            try:
                close(idx)
            finally:
                b.sampler._bug_share = None

        run.learn, b._close = hub_learn, shared_close
        return run


class GraphRoundTagsCachedMask(GaussianTSN):
    """Gaussian-TS-N whose round tags come from the neighbourhoods of the graph it cached when the edge
    count last changed ("graphs are static"): on a graph redrawn every round with the same edge count,
    side observations outside the cached neighbourhood are released but never tagged with their round."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember_choice(run)
        cache = {"edges": None, "graph": None}

        def learn(t, observed, values):
            positions = run.counts.astype(np.int64)
            run.sums += values
            run.counts += observed
            edges = int(run.graph.sum())
            if cache["edges"] != edges:
                cache["edges"], cache["graph"] = edges, run.graph.copy()
            arms = getattr(run, "_bug_arms", None)
            tags = observed if arms is None else observed & cache["graph"][np.asarray(arms)]
            note_rounds(run.ledger, t, tags, positions)

        run.learn = learn
        return run


class _SqrtStreamsSchedule(StreamsSchedule):
    """The round relation's eps at delta > 0 as sqrt(streams) times one stream's ("advanced composition
    over the streams"); events, pure eps (delta = 0) and mu are right."""

    def epsilon(self, rounds, delta, accountants=None):
        if self.streams == 1 or delta == 0 or rounds <= 0:
            return StreamsSchedule.epsilon(self, rounds, delta, accountants)
        base = self.base.epsilon(rounds, delta, accountants)
        return Certificate(math.sqrt(self.streams) * base.value, base.by, dict(base.values))


class GraphRoundEpsSqrtStreams(DPUCBN):
    """DP-UCB-N whose round-relation certificate at delta > 0 is sqrt(max_degree + 1) times the entry
    one; its events, pure epsilon and mu are the correct composition over the streams."""

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        good = super().privacy_schedule(horizon, n_arms, relation=relation, max_degree=max_degree, graph=graph)
        return _SqrtStreamsSchedule(good.base, good.streams, good.relation)


class _HalfMuEpsSchedule(GaussianTSSchedule):
    """mu right; eps at delta from the GDP conversion at mu / sqrt(K) ("the releases spread over K
    arms in parallel")."""

    def epsilon(self, rounds, delta, accountants=None):
        mu = self.mu(rounds)
        if delta == 0 or mu == 0:
            return GaussianTSSchedule.epsilon(self, rounds, delta, accountants)
        value = epsilon_for_delta(mu / math.sqrt(self.n_arms), delta)
        return Certificate(value, "gdp", {"gdp": value})


class _ExactGDPEpsSchedule(GaussianTSSchedule):
    """Control: eps at delta by the exact GDP conversion of mu, called directly (no accountant)."""

    def epsilon(self, rounds, delta, accountants=None):
        mu = self.mu(rounds)
        if delta == 0 or mu == 0:
            return GaussianTSSchedule.epsilon(self, rounds, delta, accountants)
        value = epsilon_for_delta(mu, delta)
        return Certificate(value, "gdp", {"gdp": value})


class TSEpsAtDeltaPerArm(GaussianTS):
    """Gaussian TS whose certified eps at delta divides mu by sqrt(K) before converting (mu and the
    events are right)."""

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)  # validation
        return _HalfMuEpsSchedule(self.b, self.c, n_arms)


class TSEpsExactGDP(GaussianTS):
    """Control: Gaussian TS whose eps at delta is the exact GDP conversion, computed directly."""

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _ExactGDPEpsSchedule(self.b, self.c, n_arms)


class _Bounded:
    """The policy as a run's ``select`` reads it, with another norm bound ``bound`` for its contexts; every
    other attribute (its statistics, built with the declared L) is the policy's own."""

    def __init__(self, policy, bound: float) -> None:
        self._policy, self.bound = policy, bound

    def __getattr__(self, name):
        return getattr(self._policy, name)


class LinContextsUnclipped(PrivateLinUCB):
    """Private LinUCB that trusts its contexts' norms (no clip to the declared bound L): a context of
    norm c L enters the tree's b entries with c times their declared sensitivity (A's with c^2 times)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.policy = _Bounded(self, math.inf)
        return run


class LinContextsHalfBall(PrivateLinUCB):
    """Control: Private LinUCB projecting contexts onto the ball of radius L/2 (stricter than L)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.policy = _Bounded(self, self.bound / 2.0)
        return run


class LinTSContextScaledNoise(PrivateLinTS):
    """Private linear TS whose node noise is scaled by ||z_t|| / L of the record being inserted ("the
    record's own sensitivity"); the ledger hears the full scale."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            add, draw = stats.add, stats.tree._draw
            factor = {"f": None}

            def scaled(m):
                noise = draw(m)
                f = factor["f"]
                return noise if f is None or f.size != m else noise * f[:, None]

            def add_scaled(rows, groups, z, r):
                factor["f"] = np.minimum(np.sqrt(np.einsum("ij,ij->i", z, z)) / self.bound, 1.0)
                try:
                    add(rows, groups, z, r)
                finally:
                    factor["f"] = None

            stats.add, stats.tree._draw = add_scaled, scaled

        _on_statistics(run, patch)
        return run


class JointNodeNoiseReused(JointDPLinUCB):
    """Joint-DP LinUCB whose tree draws its node noise once (per batch size) and re-uses that buffer for
    every later node."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            draw, kept = stats.tree._draw, {}

            def reused(m):
                if m not in kept:
                    kept[m] = draw(m)
                else:
                    draw(m)  # the random stream is consumed as before
                return kept[m].copy()

            stats.tree._draw = reused

        _on_statistics(run, patch)
        return run


BUGS = {
    "tree_half_level": TreeHalfLevel,
    "redraw_reported": RedrawReported,
    "redraw_silent": RedrawSilent,
    "sensitivity_one_arm": SensitivityOneArm,
    "bonus_unnoised": BonusUnnoised,
    "tie_raw_mean": TieRawMean,
    "unreported_release": UnreportedRelease,
    "centred_rewards": CentredRewards,
    "prefix_fresh_noise": PrefixFreshNoise,
    "noise_outside_sampler": NoiseOutsideSampler,
    "stale_noise": StaleNoise,
    "index_uses_last_reward": IndexUsesLastReward,
    "scale_is_epsilon": ScaleIsEpsilon,
    # round 4 (outside-tester kinds)
    "tree_levels_off_by_one": TreeLevelsOffByOne,
    "late_log_half_scale": LateLogHalfScale,
    "interval_scale_after_insert": IntervalScaleAfterInsert,
    "raw_mean_small_counts": RawMeanSmallCounts,
    "data_dependent_scale": DataDependentScale,
    "seeded_by_data": SeededByData,
    "gaussian_for_laplace": GaussianForLaplace,
    "wrong_stream": WrongStream,
    "interval_every_round": IntervalEveryRound,
    "posterior_exact_one_arm": PosteriorExactOneArm,
    "normalise_by_max": NormaliseByMax,
    "clipped_to_seen_range": ClippedToSeenRange,
    "posterior_sigma_off_by_one": PosteriorSigmaOffByOne,
    "halved_after_round_1000": HalvedAfterRound1000,
    # round 5 (footprints wrong within the right stream)
    "tree_footprint_shifted": TreeFootprintShifted,
    "batch_drops_first": BatchDropsFirst,
    "lazy_batch_drops_first": LazyBatchDropsFirst,
    "interval_drops_last": IntervalDropsLast,
    "posterior_drops_newest": PosteriorDropsNewest,
    "exp3_batch_shifted": Exp3BatchShifted,
    # round 6 (footprints wrong only for late records)
    "tree_late_nodes_shifted": TreeLateNodesShifted,
    "hybrid_late_log_drops_first": HybridLateLogDropsFirst,
    "block_counts_twice": BlockCountsTwice,
    # round 7 (bugs at the policy's own release boundaries)
    "interval_newest_twice": IntervalNewestTwice,
    "batch_end_twice": BatchEndTwice,
    "gap_batch_carries_last": GapBatchCarriesLast,
    "interval_peeks_first_after": IntervalPeeksFirstAfter,
    # round 8 (written blind by the lead)
    "batch_noise_reused": BatchNoiseReused,
    "posterior_half_late": PosteriorHalfLate,
    "posterior_scale_090": PosteriorScale090,
    "tree_scale_090": TreeScale090,
    "gap_raw_stop": GapRawStop,
    "zero_sum_shortcut": ZeroSumShortcut,
    "lazy_zero_sum_shortcut": LazyZeroSumShortcut,
    # round 9 (session 7: the contextual policies)
    "lin_half_scale_draw": LinHalfScaleDraw,
    "lin_noise_halved": LinNoiseHalved,
    "lin_gram_unnoised": LinGramUnnoised,
    "joint_sensitivity_no_reward": JointSensitivityNoReward,
    "joint_unreported_leaves": JointUnreportedLeaves,
    "lin_seeded_by_data": LinSeededByData,
    # round 10 (session 8: graph-feedback and adversarial private policies, written blind)
    "graph_side_release_on_pulled": GraphSideReleaseOnPulled,
    "graph_rounds_pulled_only": GraphRoundsPulledOnly,
    "graph_round_cert_entry": GraphRoundCertEntry,
    "graph_side_obs_raw": GraphSideObsRaw,
    "gaussian_ts_n_own_counts": GaussianTSNOwnCounts,
    "exp3_raw_reward_update": Exp3RawRewardUpdate,
    "exp3_noise_after_importance": Exp3NoiseAfterImportance,
    "exp3_importance_from_raw": Exp3ImportanceFromRaw,
    "exp3_batch_avg_scale_on_sum": Exp3BatchAvgScaleOnSum,
    "exp3_batch_noise_reused": Exp3BatchNoiseReused,
    # round 11 (session 9: written blind, aimed at the Limitations)
    "lazy_noise_clamped": LazyNoiseClamped,
    "anytime_noise_float32": AnytimeNoiseFloat32,
    "hybrid_noise_on_grid": HybridNoiseOnGrid,
    "posterior_antithetic_pairs": PosteriorAntitheticPairs,
    "posterior_wrap_four": PosteriorWrapFour,
    "posterior_variance_high_arms": PosteriorVarianceHighArms,
    "hybrid_halved_late": HybridHalvedLate,
    "graph_hub_round_tags_truncated": GraphHubRoundTagsTruncated,
    "graph_hub_shared_batch_noise": GraphHubSharedBatchNoise,
    "graph_round_tags_cached_mask": GraphRoundTagsCachedMask,
    "graph_round_eps_sqrt_streams": GraphRoundEpsSqrtStreams,
    "ts_eps_at_delta_per_arm": TSEpsAtDeltaPerArm,
    "lin_contexts_unclipped": LinContextsUnclipped,
    "lin_ts_context_scaled_noise": LinTSContextScaledNoise,
    "joint_node_noise_reused": JointNodeNoiseReused,
}
"""name -> class (each class is given ``name = 'bug_' + key`` for the registry)."""

AIMED = {"tree_half_level", "redraw_reported", "redraw_silent", "sensitivity_one_arm", "bonus_unnoised",
         "tie_raw_mean", "unreported_release", "centred_rewards", "prefix_fresh_noise"}
"""Planted with a check in mind; the rest were written afterwards (generalisation)."""

ROUND4 = {"tree_levels_off_by_one", "late_log_half_scale", "interval_scale_after_insert", "raw_mean_small_counts",
          "data_dependent_scale", "seeded_by_data", "gaussian_for_laplace", "wrong_stream", "interval_every_round",
          "posterior_exact_one_arm", "normalise_by_max", "clipped_to_seen_range", "posterior_sigma_off_by_one",
          "halved_after_round_1000"}
"""Round 4: planted as an outside tester would, against the auditor as it stood (docs/audit.md)."""

ROUND5 = {"tree_footprint_shifted", "batch_drops_first", "lazy_batch_drops_first", "interval_drops_last", "posterior_drops_newest",
          "exp3_batch_shifted"}
"""Round 5: footprints misattributed within the right stream (docs/audit.md, "Round 5")."""

ROUND6 = {"tree_late_nodes_shifted", "hybrid_late_log_drops_first", "block_counts_twice"}
"""Round 6 (session 5): footprints wrong only for records deep in their stream, and a bug on the planned
(update_block) path only (docs/audit.md)."""

ROUND7 = {"interval_newest_twice", "batch_end_twice", "gap_batch_carries_last", "interval_peeks_first_after"}
"""Round 7 (session 6): bugs acting only on records at the policy's own release boundaries (an interval's
newest record, a batch's completing record), which no early, power-of-two or log-uniform pick targets."""

ROUND8 = {"batch_noise_reused", "posterior_half_late", "posterior_scale_090", "tree_scale_090", "gap_raw_stop",
          "zero_sum_shortcut", "lazy_zero_sum_shortcut"}
"""Round 8 (session 6): written blind, without looking at which check would see them -- noise re-used
across releases, noise 10% or 50% (late) too small, a phase switch on raw means, a batch of zeros
published without noise or record (docs/audit.md, "Round 8")."""

ROUND9 = {"lin_half_scale_draw", "lin_noise_halved", "lin_gram_unnoised", "joint_sensitivity_no_reward",
          "joint_unreported_leaves", "lin_seeded_by_data"}
"""Round 9 (session 7): the contextual policies (private LinUCB / linear TS, joint-DP LinUCB), audited on
contextual tapes -- node noise drawn at half scale, noise halved after the draw, an index on the exact
Gram matrix, a sensitivity that forgets the reward, leaf nodes never reported, noise seeded by the data."""

ROUND10 = {"graph_side_release_on_pulled", "graph_rounds_pulled_only", "graph_round_cert_entry",
           "graph_side_obs_raw", "gaussian_ts_n_own_counts", "exp3_raw_reward_update", "exp3_noise_after_importance",
           "exp3_importance_from_raw", "exp3_batch_avg_scale_on_sum", "exp3_batch_noise_reused"}
"""Round 10 (session 8): written blind against the graph-feedback private policies (side observations,
the round relation) and the adversarial private policies (docs/audit.md, "Round 10")."""

CONTROLS10 = {
    "exp3_last_batch_silent": Exp3LastBatchSilent,
    "gaussian_ts_n_more_noise": GaussianTSNMoreNoise,
    "dp_ucb_n_ignores_side": DPUCBNIgnoresSide,
}
"""Round 10's controls: correct variants of the same policies (each must come out CONSISTENT)."""

ROUND11 = {"lazy_noise_clamped", "anytime_noise_float32", "hybrid_noise_on_grid", "posterior_antithetic_pairs",
           "posterior_wrap_four", "posterior_variance_high_arms", "hybrid_halved_late",
           "graph_hub_round_tags_truncated", "graph_hub_shared_batch_noise", "graph_round_tags_cached_mask",
           "graph_round_eps_sqrt_streams", "ts_eps_at_delta_per_arm", "lin_contexts_unclipped",
           "lin_ts_context_scaled_noise", "joint_node_noise_reused"}
"""Round 11 (session 9): written blind against the Limitations of docs/audit.md -- truncated, float32 and
grid-snapped Laplace samplers, antithetic / buffer-shared posterior normals, variance-as-sd for arms >= 3, a
late-round scale cut, hub and redrawn-graph round tags, a hub's shared batch noise, certificates wrong only
in eps at delta, unclipped contexts, a context-dependent scale, node noise re-used (docs/audit.md, "Round 11")."""

CONTROLS11 = {
    "lazy_exponential_difference": LazyExponentialDifference,
    "posterior_reordered": PosteriorReordered,
    "ts_eps_exact_gdp": TSEpsExactGDP,
    "lin_contexts_half_ball": LinContextsHalfBall,
}
"""Round 11's controls: correct variants (each must come out CONSISTENT)."""

for _key, _cls in BUGS.items():
    _named(_cls, "bug_" + _key)
for _key, _cls in {**CONTROLS10, **CONTROLS11}.items():
    _named(_cls, "control_" + _key)


# --- round 10, deployment path: bugs in privbandit.deploy (audited from the store, privbandit/audit/deployment.py) ---
import json as _json  # noqa: E402
import time as _time  # noqa: E402

from privbandit.deploy.deployment import Decision, Deployment  # noqa: E402


class DeployFilterOnePast(Deployment):
    """The filter compares ``rounds > stop_round`` instead of ``>=``: one policy round (one release
    set) past the budget."""

    def __init__(self, path, conn, config):
        super().__init__(path, conn, config)
        self.stop_round += 1


class DeployHoldRedraws(Deployment):
    """A hold decision asks the policy again for the open round's arm (``select(t)`` a second time: the
    noise is re-drawn) and logs no release ("a hold costs nothing")."""

    def select(self):
        def body():
            info = self._info()
            if info["open_decision"] is None or info["rounds"] >= self.stop_round:
                return None
            state = self._load(info)
            arm = int(state["run"].select(info["rounds"])[0])
            cur = self._conn.execute(
                "INSERT INTO decisions (round, arm, kind, releases, state_digest, created) VALUES (?, ?, ?, ?, ?, ?)",
                (None, arm, "hold", _json.dumps([0] * self.n_arms), info["digest"], _time.time()))
            self._write(info, state, info["rounds"], info["open_decision"])
            return Decision(cur.lastrowid, arm, "hold", None)

        d = self._call(body)
        return d if d is not None else super().select()


class DeployResumeReseeds(Deployment):
    """Reopening a store re-seeds the policy's generator from the configured seed (instead of restoring
    the snapshot's state): every restart replays the first rounds' noise."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)
        state = dep.snapshot()
        seed = np.random.SeedSequence(int(dep.config["seed"]))
        state["rng"].bit_generator.state = np.random.default_rng(seed).bit_generator.state
        return dep


class DeployControl(Deployment):
    """Control: the unmodified deployment (driven with holds and a restart every few calls)."""


DEPLOY_BUGS = {"deploy_filter_one_past": DeployFilterOnePast, "deploy_hold_redraws": DeployHoldRedraws,
               "deploy_resume_reseeds": DeployResumeReseeds}
"""Round 10's deployment-path bugs (Deployment subclasses)."""
DEPLOY_CONTROLS = {"deploy_unmodified": DeployControl}


def drive_deployment(cls, path, *, decisions: int = 60, seed: int = 7, policy: str = "gaussian_ts",
                     params: dict | None = None, rounds_afforded: int = 30, reward=None) -> str | None:
    """Create a store at ``path`` with ``cls`` (budget: what ``rounds_afforded`` rounds certify, horizon
    200) and serve ``decisions`` decisions: a second select (a hold) before every third update, a
    restart (close, ``cls.open``) every fourth decision, Bernoulli(0.6 / 0.4) rewards from ``seed``
    (or ``reward(rng, arm)``, round 20's continuous rewards).

    Returns None, or the message of the deployment's own refusal to go on (session 14: a reopened
    deployment checks its counters and release counts against its log before its first call,
    ``LogMismatch``): the drive ends there, and the store is audited as it stands."""
    from privbandit.deploy.deployment import LogMismatch

    from privbandit.deploy.odometer import Odometer
    from privbandit.policies import make_policy

    params = {"c": 4.0} if params is None else params
    pol = make_policy(policy, **params)
    budget = Odometer(pol, 200, 2, 1e-6).epsilon(rounds_afforded)
    dep = cls.create(path, policy, params=params, n_arms=2, budget=budget, delta=1e-6, horizon=200, seed=seed)
    rng = np.random.default_rng(seed)
    try:
        for i in range(decisions):
            d = dep.select()
            if i % 3 == 0:
                dep.select()  # a concurrent caller while the round is open: a hold
            dep.update(d.decision, float(rng.random() < (0.6 if d.arm == 0 else 0.4)) if reward is None
                       else reward(rng, d.arm))
            if i % 4 == 3:
                dep.close()
                dep = cls.open(path)
    except LogMismatch as exc:
        return str(exc)
    finally:
        dep.close()
    return None
