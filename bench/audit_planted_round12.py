"""Round 12 of the planted bugs (session 10), written blind against the Limitations of docs/audit.md.

Like the earlier rounds (``audit_planted_bugs.py``), each bug is a subclass of a private policy with
one mistake, which keeps its parent's claim unless the mistake *is* the claim. Aimed at: certificates
wrong through components other than ``PureDP`` (zCDP events, a delta dropped, a Gaussian schedule that
stops counting rounds, an RDP order slip), a hub of degree >= 6, arm indices >= 6, rounds past the late
run, contexts far above 16 L, noise from a stream correlated with the data or shared across replicates,
ties broken by the data, a bug that fires only without a ledger, the posterior of TS at large counts,
EXP3 noise scaled by the learning rate, an asymmetric Gram-matrix noise, and a deployment that
under-records releases after a reopen. ``CONTROLS12`` are correct but unusual variants (each must stay
CONSISTENT). Nothing here is imported by the package.
"""

from __future__ import annotations

import math

import numpy as np

from accountants import Certificate, ZCDP
from accountants.events import NO_EVENT, ApproxDP
from accountants.gdp_conversion import epsilon_for_delta
from privbandit.contextual import linalg
from privbandit.mechanisms._base import exact_log2, flat
from privbandit.mechanisms.posterior import GaussianPosteriorRelease
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import (AnytimeLazyUCB, DPUCBBound, DPUCBInt, GaussianTS, LazyDPTS, PrivateEXP3,
                                 PrivateLinUCB, PrivateUCB)
from privbandit.policies.gaussian_ts import GaussianTSSchedule
from privbandit.policies.graph_private import DPUCBN
from privbandit.policies.linear import JointDPLinUCB, JointDPSchedule

import os  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from audit_planted_bugs import (_Bounded, _laplace_shape, _named, _on_statistics, _swapping,  # noqa: E402
                                truncate_round_tags)


# --- certificates through components other than PureDP ---------------------------------------------
class _CappedRoundsSchedule(GaussianTSSchedule):
    """Gaussian TS's schedule whose release count stops at 10,000 ("the posterior has converged by
    then"): events and mu agree with each other, both too small once t > 10,000."""

    def releases(self, rounds):
        return min(GaussianTSSchedule.releases(self, rounds), 10_000)


class TSScheduleCappedRounds(GaussianTS):
    """Gaussian TS whose schedule counts at most 10,000 Gaussian releases (the run keeps releasing)."""

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _CappedRoundsSchedule(self.b, self.c, n_arms)


class _ZCDPHalfSchedule(GaussianTSSchedule):
    """Events as zCDP with rho = mu^2 / 4 per release (the Gaussian's rho is Delta^2 / (2 sigma^2) =
    mu^2 / 2: a factor-2 slip); mu() is the right GDP value."""

    def events(self, rounds):
        n = self.releases(rounds)
        if n == 0:
            return NO_EVENT
        mu2 = 1.0 / (self.c * (self.k_min + 1.0))
        return ZCDP(rho=mu2 / 4.0) * n

    def mu(self, rounds):
        return math.sqrt(self.releases(rounds) / (self.c * (self.k_min + 1)))


class TSEventsZCDPHalf(GaussianTS):
    """Gaussian TS whose schedule declares each posterior draw as zCDP(mu^2 / 4) (half the Gaussian's
    rho); its mu is right."""

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _ZCDPHalfSchedule(self.b, self.c, n_arms)


class _DeltaDroppedSchedule(GaussianTSSchedule):
    """Each Gaussian draw declared as ApproxDP(eps_i, 0), eps_i its exact GDP conversion at delta
    1e-6: the per-release delta is dropped. mu() is right."""

    def events(self, rounds):
        n = self.releases(rounds)
        if n == 0:
            return NO_EVENT
        mu_i = 1.0 / math.sqrt(self.c * (self.k_min + 1.0))
        return ApproxDP(epsilon_for_delta(mu_i, 1e-6), 0.0) * n

    def mu(self, rounds):
        return math.sqrt(self.releases(rounds) / (self.c * (self.k_min + 1)))


class TSDeltaDropped(GaussianTS):
    """Gaussian TS whose schedule declares each Gaussian draw as (eps_i, 0)-DP (eps_i its conversion at
    delta 1e-6; the delta is dropped); events count right, mu is right."""

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _DeltaDroppedSchedule(self.b, self.c, n_arms)


class _RDPOrderSchedule(JointDPSchedule):
    """Joint-DP LinUCB's schedule converting its RDP curve with ln(1/delta)/alpha instead of
    ln(1/delta)/(alpha - 1): min over alpha of alpha rho + ln(1/delta)/alpha = 2 sqrt(rho ln(1/delta))."""

    def epsilon(self, rounds, delta, accountants=None):
        good = JointDPSchedule.epsilon(self, rounds, delta, accountants)
        mu = self.mu(rounds)
        if delta == 0 or rounds <= 0 or not math.isfinite(mu) or mu == 0:
            return good
        rho = mu * mu / 2.0
        value = 2.0 * math.sqrt(rho * math.log(1.0 / delta))
        return Certificate(value, "rdp", {"rdp": value})


class JointRDPOrderSlip(JointDPLinUCB):
    """Joint-DP LinUCB (eps = 20, calibration "gdp") whose eps at delta is the RDP conversion with
    ln(1/delta)/alpha (an order slip: alpha - 1 is right); events and mu are right. The slip gives
    mu sqrt(2 ln(1/delta)), below the exact GDP curve only once mu is large (at the default eps = 1 and
    the paper's calibration, mu = 0.022, it stays above the truth: 0.105 vs 0.065 at delta 1e-5; here
    mu = 3.2 at T = 200: 15.5 vs 18.4)."""

    def __init__(self, epsilon: float = 20.0, delta: float = 1e-6, dim: int = 5, bound: float = 1.0,
                 alpha: float = 1.0, regularization: float = 1.0, model: str = "shared",
                 calibration: str = "gdp", failure: float = 0.01, contexts: str = "clip") -> None:
        super().__init__(epsilon, delta, dim, bound, alpha, regularization, model, calibration, failure, contexts)

    def privacy_schedule(self, horizon, n_arms, relation="entry", contexts=None):
        good = super().privacy_schedule(horizon, n_arms, relation=relation, contexts=contexts)
        bad = object.__new__(_RDPOrderSchedule)
        bad.__dict__.update(good.__dict__)
        return bad


# --- graph: a hub of degree >= 6 -----------------------------------------------------------------
class GraphHub7RoundTags(DPUCBN):
    """DP-UCB-N whose round tags hold at most six entries (a 6-slot buffer: the played arm and five side
    observations): on a hub of degree >= 6 the other side-observed records are released but never tagged
    with their round."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        truncate_round_tags(run, 5)
        return run


# --- arm indices >= 6 ----------------------------------------------------------------------------
class _HalfFromArmSix(NoiseSampler):
    """Laplace noise at half the scale for releases whose stream (arm) index is >= 6."""

    _bug_arms = None

    def _sum_release(self, statistic, scale, on_grid=True):
        arms = self._bug_arms
        if self.exact or arms is None or arms.size != np.size(statistic):
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic, scale = _laplace_shape(statistic, scale)
        noise = self.rng.laplace(0.0, 1.0, statistic.shape) * np.where(arms >= 6, scale / 2.0, scale)
        return statistic + noise


class LazyArmSevenHalf(LazyDPTS):
    """Lazy-DP-TS whose batch noise for arms 6, 7, ... is drawn at half the scale (a per-arm scale table
    sized for six arms, the rest filled with 0.5); the ledger hears the full scale. Armed only for K >= 7."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _closing_arms(run.batches, _HalfFromArmSix)
        return run


def _closing_arms(batches, sampler_class) -> None:
    """The fresh-batch mechanism's sampler becomes ``sampler_class``, told (``_bug_arms``) the arm of each
    release while a batch closes."""
    batches.sampler.__class__ = sampler_class
    close = batches._close

    def closing(idx):
        batches.sampler._bug_arms = np.asarray(idx[1])
        try:
            close(idx)
        finally:
            batches.sampler._bug_arms = None

    batches._close = closing


# --- rounds beyond the late run ------------------------------------------------------------------
class TreeDeepLevelHalf(PrivateUCB):
    """Private-UCB whose tree draws nodes of level >= 13 (covering 8,192 records: an arm past its
    8,192nd pull) at half the scale; the ledger hears the full one."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core = run.tree._core
        insert_flat = core.insert_flat

        def halved(mech, f, rr, kk, v, scale, offset, mechanism):
            tau = flat(core.tau)[f] + 1
            level = exact_log2(tau & -tau)
            return insert_flat(mech, f, rr, kk, v, np.where(level >= 13, scale / 2.0, scale), offset, mechanism)

        record = run.tree._record
        core.insert_flat = halved
        run.tree._record = lambda rr, kk, lo, hi, scale, m, node: record(rr, kk, lo, hi, run.tree.scale, m, node)
        return run


# --- contexts far above 16 L ---------------------------------------------------------------------
class _Offer:
    """An offer with other contexts (every other attribute the original offer's)."""

    def __init__(self, offer, contexts):
        self._offer, self.contexts = offer, contexts

    def __getattr__(self, name):
        return getattr(self._offer, name)


def _pre_clip(run, policy, clip) -> None:
    """The run's contexts pass ``clip(z)`` (the policy's own bounding) and then the policy's bounding
    with an unbounded L (a no-op): ``clip`` alone decides what enters the statistics."""
    select = run.select

    def sel(t, offer=None):
        z = clip(np.asarray(offer.contexts, dtype=float))
        run.policy = _Bounded(policy, math.inf)
        try:
            return select(t, _Offer(offer, z))
        finally:
            run.policy = policy

    run.select = sel


class LinOutlierUnits(PrivateLinUCB):
    """Private LinUCB whose clip divides contexts of norm > 64 L by 64 ("wrong units") instead of
    projecting them onto the ball of radius L (so a context of norm 100 L enters with norm 1.56 L);
    norms in (L, 64 L] are projected."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        bound = self.bound

        def clip(z):
            norms = np.sqrt(np.einsum("...i,...i->...", z, z))[..., None]
            projected = np.where(norms > bound, z * (bound / np.maximum(norms, 1e-300)), z)
            return np.where(norms > 64.0 * bound, z / 64.0, projected)

        _pre_clip(run, self, clip)
        return run


# --- noise from a stream correlated with the data ------------------------------------------------
class _SeededByReward(NoiseSampler):
    """Laplace noise from a generator re-seeded, for each release, by the round and the last reward
    seen ("reproducible noise per event"): the draw is a function of (round, reward)."""

    _bug_key = None

    def _sum_release(self, statistic, scale, on_grid=True):
        key = self._bug_key
        if self.exact or key is None:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic, scale = _laplace_shape(statistic, scale)
        t, reward = key
        gen = np.random.default_rng([int(t), int(round(float(reward) * 1e6))])
        self.rng.laplace(0.0, 1.0, statistic.shape)  # the shared stream is consumed as before
        return statistic + gen.laplace(0.0, 1.0, statistic.shape) * scale


class IntervalSeededByReward(DPUCBInt):
    """DP-UCB-Int whose interval noise comes from a generator seeded by (round, sum of the rewards of the
    round over the replicates): noise drawn with the right law, from a stream keyed by the data."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        im = run.interval
        im.sampler.__class__ = _SeededByReward
        update = run.update

        def upd(t, arms, rewards):
            im.sampler._bug_key = (t, float(np.sum(rewards)))
            try:
                return update(t, arms, rewards)
            finally:
                im.sampler._bug_key = None

        run.update = upd
        return run


class _SharedAcrossReplicates(NoiseSampler):
    """Laplace noise whose standard draw is the same for every row of a release (one draw per column:
    "the replicates are simulations, one draw suffices")."""

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic, scale = _laplace_shape(statistic, scale)
        z = self.rng.laplace(0.0, 1.0, statistic.shape)
        if z.ndim == 1 and z.size > 1:
            z = np.full_like(z, z[0])
        return statistic + z * scale


AnytimeNoiseAcrossReplicates = _swapping(
    AnytimeLazyUCB, "batches.sampler", _SharedAcrossReplicates, "AnytimeNoiseAcrossReplicates",
    """Anytime-Lazy-UCB whose batch releases closing together (any replicates, any arms) share one
    standard Laplace draw.""")


# --- ties broken by the data ---------------------------------------------------------------------
class TSTieBreakBySum(GaussianTS):
    """Gaussian TS whose posterior samples are rounded to 1/8 ("a stable ranking") and whose ties are
    broken by the larger raw reward sum."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        post = run.posterior
        release = post.release

        def rounded(sums, counts):
            theta = np.round(np.asarray(release(sums, counts), dtype=float) * 8.0) / 8.0
            return theta + 1e-9 * sums / (1.0 + np.max(np.abs(sums)))

        post.release = rounded
        return run


# --- a bug that fires only without a ledger ------------------------------------------------------
class HybridNoLedgerHalf(DPUCBBound):
    """DP-UCB-Bound that, when run without a ledger ("a fast path: nothing to report"), draws its hybrid
    noise at half the scale."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        if ledger is None:
            sampler = run.hybrid.sampler
            sampler._sum_release = lambda statistic, scale, **kw: type(sampler)._sum_release(
                sampler, statistic, scale / 2.0, **kw)
        return run


# --- the posterior of TS at large counts ---------------------------------------------------------
class PosteriorLargeCountsSharpened(GaussianTS):
    """Gaussian TS whose posterior sd for an arm holding k >= 512 records is sqrt(c)/(k+1) (the sd of a
    mean of k+1 unit draws, squared once too often) instead of sqrt(c/(k+1)); the ledger hears
    sqrt(c/(k+1))."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        post = run.posterior

        def release(sums, counts):
            denom = counts + 1.0
            sigma = np.where(counts >= 512, math.sqrt(post.c) / denom, np.sqrt(post.c / denom))
            theta = sums / denom + sigma * post._standard_normals()
            if post._record is not None:
                post._record(counts)
            return theta

        post.release = release
        return run


# --- EXP3: noise scaled by the learning rate -----------------------------------------------------
class _ScaledBy(NoiseSampler):
    _bug_factor = 1.0

    def _sum_release(self, statistic, scale, on_grid=True):
        return NoiseSampler._sum_release(self, statistic, scale * self._bug_factor, on_grid)


class Exp3NoiseByLearningRate(PrivateEXP3):
    """Private EXP3 whose loss noise is scaled by 1 / (1 + eta T / K) ("the update multiplies the loss by
    eta, so the noise needs only cover eta's share"); the ledger hears 1/eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _, eta = self.rates(n_arms, horizon)
        run.noise.sampler.__class__ = _ScaledBy
        run.noise.sampler._bug_factor = 1.0 / (1.0 + eta * horizon / n_arms)
        return run


# --- contextual: a Gram-matrix noise that is not symmetric --------------------------------------
class LinGramAsymmetricNoise(PrivateLinUCB):
    """Private LinUCB whose index reads A's lower triangle from a second, independent noise draw of the
    same scale (a full d x d noise matrix, "the port of the dense implementation"): each off-diagonal
    entry of A is released twice; the ledger hears one release."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            tree, dim = stats.tree, stats.dim
            lower = {}

            def add(rows, groups, z, r):
                x = linalg.augmented(z, r)
                packed = linalg.packed_outer(x)
                if not stats.with_r2:
                    packed = packed[:, :-1]
                values = np.zeros((tree.replicates, packed.shape[1]))
                values[rows] = packed
                streams = np.zeros(tree.replicates, dtype=np.int64)
                streams[rows] = groups
                mask = np.zeros(tree.replicates, dtype=bool)
                mask[rows] = True
                tree.insert(values, streams, mask)
                key = (tree.replicates, tree.streams)
                if key not in lower:
                    lower[key] = np.zeros((tree.replicates, tree.streams, tree.size))
                lower[key][rows, groups] += tree.sampler.laplace(tree.scale, size=(rows.size, tree.size)) * tree.weights
                upper = tree.noisy_sum(rows, groups)
                second = tree.exact_sum[rows, groups] + lower[key][rows, groups]
                if not stats.with_r2:
                    upper = np.concatenate([upper, np.zeros((upper.shape[0], 1))], axis=1)
                    second = np.concatenate([second, np.zeros((second.shape[0], 1))], axis=1)
                gram = linalg.unpack(upper, dim + 1)
                other = linalg.unpack(second, dim + 1)
                below = np.tril(np.ones((dim + 1, dim + 1), dtype=bool), -1)
                gram = np.where(below, other, gram)
                a, b = linalg.split_gram(gram, dim)
                a = a + stats.diag * np.eye(dim)
                a = (a + np.swapaxes(a, -1, -2)) / 2.0  # symmetrised for the inverse (both halves read)
                a_inv = linalg.regularized_inverse(a, stats.floor)
                stats.a_inv[rows, groups] = a_inv
                stats.theta[rows, groups] = np.einsum("bij,bj->bi", a_inv, b)

            stats.add = add

        _on_statistics(run, patch)
        return run


# --- controls (correct but unusual) --------------------------------------------------------------
class _BoxMullerPosterior(GaussianPosteriorRelease):
    """Control: the posterior's standard normals by Box-Muller from two uniforms (exactly N(0, 1))."""

    def _standard_normals(self):
        u = self.sampler.rng.random((2, self.replicates, self.arms))
        return np.sqrt(-2.0 * np.log1p(-u[0])) * np.cos(2.0 * math.pi * u[1])


PosteriorBoxMuller = _swapping(GaussianTS, "posterior", _BoxMullerPosterior, "PosteriorBoxMuller",
                               """Control: Gaussian TS drawing its posterior normals by Box-Muller.""")


class _EveryRoundSchedule(GaussianTSSchedule):
    """Control: every round charged (t releases), more than the n(t) the policy makes."""

    def releases(self, rounds):
        return max(0, int(rounds))


class TSChargesEveryRound(GaussianTS):
    """Control: Gaussian TS whose schedule charges every round (the paper's T, larger than n(t))."""

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _EveryRoundSchedule(self.b, self.c, n_arms)


class LinHugeContextsStable(PrivateLinUCB):
    """Control: Private LinUCB projecting contexts onto the ball by its own stable formula (scaled by the
    largest entry first)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        bound = self.bound

        def clip(z):
            top = np.abs(z).max(axis=-1, keepdims=True)
            safe = np.where(top > 0, top, 1.0)
            norms = safe * np.sqrt(np.sum((z / safe) ** 2, axis=-1, keepdims=True))
            return np.where(norms > bound, z * (bound / np.maximum(norms, 1e-300)), z)

        _pre_clip(run, self, clip)
        return run


class Exp3HalfLearningRate(PrivateEXP3):
    """Control: Private EXP3 learning at half its eta (the noise, 1/eps per loss, untouched)."""

    def rates(self, n_arms, horizon):
        gamma, eta = super().rates(n_arms, horizon)
        return gamma, eta / 2.0


ROUND12_BUGS = {
    "ts_schedule_capped_rounds": TSScheduleCappedRounds,
    "ts_events_zcdp_half": TSEventsZCDPHalf,
    "ts_delta_dropped": TSDeltaDropped,
    "joint_rdp_order_slip": JointRDPOrderSlip,
    "graph_hub7_round_tags": GraphHub7RoundTags,
    "lazy_arm_seven_half": LazyArmSevenHalf,
    "tree_deep_level_half": TreeDeepLevelHalf,
    "lin_outlier_units": LinOutlierUnits,
    "interval_seeded_by_reward": IntervalSeededByReward,
    "anytime_noise_across_replicates": AnytimeNoiseAcrossReplicates,
    "ts_tie_break_by_sum": TSTieBreakBySum,
    "hybrid_no_ledger_half": HybridNoLedgerHalf,
    "posterior_large_counts_sharpened": PosteriorLargeCountsSharpened,
    "exp3_noise_by_learning_rate": Exp3NoiseByLearningRate,
    "lin_gram_asymmetric_noise": LinGramAsymmetricNoise,
}
"""Round 12 (session 10): written blind against the Limitations of docs/audit.md (docs/audit.md, "Round 12")."""

CONTROLS12 = {
    "posterior_box_muller": PosteriorBoxMuller,
    "ts_charges_every_round": TSChargesEveryRound,
    "lin_huge_contexts_stable": LinHugeContextsStable,
    "exp3_half_learning_rate": Exp3HalfLearningRate,
}
"""Round 12's controls: correct variants (each must come out CONSISTENT)."""

for _key, _cls in ROUND12_BUGS.items():
    _named(_cls, "bug_" + _key)
for _key, _cls in CONTROLS12.items():
    _named(_cls, "control_" + _key)


# --- deployment path -----------------------------------------------------------------------------
from privbandit.deploy.deployment import Deployment  # noqa: E402


class DeployReopenForgetsReleases(Deployment):
    """After a reopen, the first policy decision logs no releases ("the ledger diff needs a warm cache";
    the snapshot's ledger does count them)."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)
        dep._bug_cold = True
        return dep

    def select(self):
        d = super().select()
        if getattr(self, "_bug_cold", False) and d.kind == "policy":
            self._bug_cold = False
            with self._conn:
                self._conn.execute("UPDATE decisions SET releases = ? WHERE id = ?",
                                   ("[" + ", ".join(["0"] * self.n_arms) + "]", d.decision))
        return d


class DeployReopenEveryCall(Deployment):
    """Control: the unmodified deployment (the drive reopens it before every call)."""


DEPLOY_BUGS12 = {"deploy_reopen_forgets_releases": DeployReopenForgetsReleases}
DEPLOY_CONTROLS12 = {"deploy_reopen_every_call": DeployReopenEveryCall}


def drive_deployment12(cls, path, *, decisions: int = 60, seed: int = 7, policy: str = "gaussian_ts",
                       params: dict | None = None, rounds_afforded: int = 30) -> None:
    """Like ``audit_planted_bugs.drive_deployment`` (holds, restarts every fourth decision) and, for
    ``DeployReopenEveryCall``, a reopen between every two calls."""
    from privbandit.deploy.odometer import Odometer
    from privbandit.policies import make_policy

    params = {"c": 4.0} if params is None else params
    pol = make_policy(policy, **params)
    budget = Odometer(pol, 200, 2, 1e-6).epsilon(rounds_afforded)
    dep = cls.create(path, policy, params=params, n_arms=2, budget=budget, delta=1e-6, horizon=200, seed=seed)
    from privbandit.deploy.deployment import LogMismatch

    rng = np.random.default_rng(seed)
    every = cls is DeployReopenEveryCall
    try:
        for i in range(decisions):
            d = dep.select()
            if every:
                dep.close()
                dep = cls.open(path)
            if i % 3 == 0:
                dep.select()
            dep.update(d.decision, float(rng.random() < (0.6 if d.arm == 0 else 0.4)))
            if every or i % 4 == 3:
                dep.close()
                dep = cls.open(path)
    except LogMismatch as exc:  # the deployment refused to go on (see drive_deployment): audited as it stands
        return str(exc)
    finally:
        dep.close()
    return None


# --- round 12 variants: written after the auditor's round-12 change, without changing it again --------
# Same classes as above, different code and policies: do the new checks generalise?
from privbandit.policies import PrivateLinTS  # noqa: E402
from privbandit.policies.graph_private import LazyDPTSN  # noqa: E402

from audit_planted_bugs import _SharedRowNoise  # noqa: E402


class TreeNoLedgerSkipsLeaves(PrivateUCB):
    """Variant (ledger off): Private-UCB whose tree, when no ledger is attached, adds no noise to leaf
    nodes (level 0) -- "their noise is only needed for the ledger's bookkeeping"."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        if ledger is None:
            core = run.tree._core
            insert_flat = core.insert_flat

            def leaves_free(mech, f, rr, kk, v, scale, offset, mechanism):
                tau = flat(core.tau)[f] + 1
                level = exact_log2(tau & -tau)
                return insert_flat(mech, f, rr, kk, v, np.where(level == 0, scale * 1e-9, scale), offset, mechanism)

            core.insert_flat = leaves_free
        return run


class _SixtyPercentFromArmSeven(NoiseSampler):
    """Laplace noise multiplied by 0.6 after the draw for rows whose arm is >= 7."""

    _bug_arms = None

    def _sum_release(self, statistic, scale, on_grid=True):
        out = NoiseSampler._sum_release(self, statistic, scale, on_grid)
        arms = self._bug_arms
        if self.exact or arms is None or arms.size != np.size(out):
            return out
        statistic = np.asarray(statistic, dtype=float)
        return np.where(arms >= 7, statistic + 0.6 * (out - statistic), out)


class AnytimeArmEightSixty(AnytimeLazyUCB):
    """Variant (arm index >= 6): Anytime-Lazy-UCB whose batch noise for arm 7 (the eighth arm) and up is
    0.6 of the drawn value (a per-arm "confidence discount" table of seven entries)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _closing_arms(run.batches, _SixtyPercentFromArmSeven)
        return run


class _TabulatedSchedule(GaussianTSSchedule):
    """mu and events read from a table of the release counts at powers of two up to 2^14 rounds, the
    entry at or below t ("a precomputed curve for the dashboard"; beyond the table, the last entry)."""

    def releases(self, rounds):
        table = [GaussianTSSchedule.releases(self, 2 ** i) for i in range(15)]
        if rounds <= 0:
            return 0
        i = min(int(math.floor(math.log2(rounds))), 14)
        return table[i] if 2 ** i < rounds <= 2 ** 14 or rounds > 2 ** 14 else GaussianTSSchedule.releases(self, rounds)


class TSScheduleTabulated(GaussianTS):
    """Variant (far rounds): Gaussian TS (b = 1, c = 4) whose schedule reads a power-of-two table of
    release counts: between table entries it under-counts by up to half, and it stops at 2^14 rounds."""

    def __init__(self, b: int = 1, c: float = 4.0):
        super().__init__(b, c)

    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _TabulatedSchedule(self.b, self.c, n_arms)


class LinTSLooseOutliers(PrivateLinTS):
    """Variant (contexts far above 16 L): Private linear TS whose clip projects contexts of norm > 256 L
    onto the ball of radius 16 L ("outliers get a looser bound"), the others onto radius L. (First written
    with radius 4 L, which is no bug: under the entry relation, the only one this policy certifies, a
    context of radius R moves b by at most sqrt(d) R / (2 L) weighted units, inside the declared record
    sensitivity min(d + 1, d(d+1)/2) + sqrt(d) = 8.24 at d = 5 while R <= 7.4 L.)"""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        bound = self.bound

        def clip(z):
            norms = np.sqrt(np.einsum("...i,...i->...", z, z))[..., None]
            radius = np.where(norms > 256.0 * bound, 16.0 * bound, bound)
            return np.where(norms > radius, z * (radius / np.maximum(norms, 1e-300)), z)

        _pre_clip(run, self, clip)
        return run


class LazyNHubSevenSharedNoise(LazyDPTSN):
    """Variant (hub of degree >= 6): Lazy-DP-TS-N whose batch releases closing in a round that revealed 7
    or more entries share one Laplace draw per replicate."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        b = run.batches
        b.sampler.__class__ = _SharedRowNoise
        learn, close = run.learn, b._close
        state = {"hub": np.zeros(replicates, dtype=bool)}

        def hub_learn(t, observed, values):
            state["hub"] = observed.sum(axis=1) >= 7
            learn(t, observed, values)

        def shared_close(idx):
            b.sampler._bug_share = (np.asarray(idx[0]), state["hub"])
            try:
                close(idx)
            finally:
                b.sampler._bug_share = None

        run.learn, b._close = hub_learn, shared_close
        return run


ROUND12_VARIANTS = {
    "tree_no_ledger_skips_leaves": TreeNoLedgerSkipsLeaves,
    "anytime_arm_eight_sixty": AnytimeArmEightSixty,
    "ts_schedule_tabulated": TSScheduleTabulated,
    "lin_ts_loose_outliers": LinTSLooseOutliers,
    "lazy_n_hub_seven_shared_noise": LazyNHubSevenSharedNoise,
}
"""Round 12's variants: the new checks' classes again, written after the auditor change (docs/audit.md)."""

for _key, _cls in ROUND12_VARIANTS.items():
    _named(_cls, "bug_" + _key)
ROUND12_BUGS.update(ROUND12_VARIANTS)
