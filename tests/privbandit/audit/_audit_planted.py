"""Planted bugs: one-line mutations of correct code whose privacy claim is left unchanged.

Each mutated policy keeps the correct policy's ``privacy_schedule`` (the accountant still makes the
original claim); only the run's behaviour changes, by one line. The audit must flag every one.
"""

from __future__ import annotations

import numpy as np

from privbandit.policies.gaussian_ts import GaussianTS, GaussianTSSchedule


class _Mutated(GaussianTS):
    def __init__(self, mutation: str, b: int = 4, c: float = 8.0):
        super().__init__(b=b, c=c)
        self.mutation = mutation

    def __repr__(self):
        return f"GaussianTS(b={self.b}, c={self.c}) with planted bug {self.mutation!r}"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        post = run.posterior
        c = self.c
        if self.mutation == "variance_std":
            # sigma^2 = c/(k+1)^2 instead of c/(k+1)
            def release(sums, counts):
                denom = counts + 1.0
                return sums / denom + np.sqrt(c) / denom * post._standard_normals()
            post.release = release
        elif self.mutation == "no_noise":
            def release(sums, counts):
                return sums / (counts + 1.0) + 0.0 * post._standard_normals()
            post.release = release
        elif self.mutation == "common_noise":
            draw = post._standard_normals
            post._standard_normals = lambda: np.repeat(draw()[:, :1], n_arms, axis=1)  # one z for all arms
        elif self.mutation == "leak_mean":
            select = run.select

            def leaky_select(t):
                run.public_means = run.sums / (run.counts + 1.0)  # the empirical mean, published
                return select(t)
            run.select = leaky_select
        elif self.mutation != "none":
            raise ValueError(f"unknown mutation {self.mutation!r}")
        return run


def mutated_gaussian_ts(mutation: str, b: int = 4, c: float = 8.0) -> GaussianTS:
    """GaussianTS(b, c) with a planted bug: 'variance_std', 'no_noise', 'common_noise', 'leak_mean',
    or 'none' (the correct twin, through the same code path)."""
    return _Mutated(mutation, b, c)


class UnderCountingSchedule(GaussianTSSchedule):
    """Planted schedule bug: charges only half of the releases (e.g. only rounds the arm was pulled)."""

    def releases(self, rounds):
        return super().releases(rounds) // 2


class UnderCountingGaussianTS(GaussianTS):
    def privacy_schedule(self, horizon, n_arms):
        return UnderCountingSchedule(self.b, self.c, n_arms)


def redrawing_laplace(epsilon: float):
    """A Laplace release that, after a 'restart', releases the same statistic again with fresh noise
    (the claim stays one epsilon-DP release)."""
    from privbandit.mechanisms.sampling import NoiseSampler

    def mechanism(x, n, rng):
        s = NoiseSampler(rng)
        first = s.laplace_release(np.full(n, float(x)), np.full(n, 1.0 / epsilon))
        again = s.laplace_release(np.full(n, float(x)), np.full(n, 1.0 / epsilon))  # re-drawn after restart
        return np.stack([first, again], axis=1)

    return mechanism


# --- a toy private policy built on LaplaceRelease with node ids (for the ledger's re-draw check) ----
import math

from accountants import Laplace
from accountants.events import NO_EVENT
from privbandit.mechanisms.laplace import LaplaceRelease
from privbandit.policies.base import Policy, PolicyRun, check_arms
from privbandit.schedule import EventSchedule


class _EpochRun(PolicyRun):
    def __init__(self, policy, n_arms, replicates, rng, ledger):
        self.policy, self.k, self.r = policy, n_arms, replicates
        self.sums = np.zeros((replicates, n_arms))
        self.counts = np.zeros((replicates, n_arms), dtype=np.int64)
        self.noisy = np.zeros((replicates, n_arms))
        self.rng = rng
        self.mech = LaplaceRelease(rng, ledger, "epoch_sum") if ledger is not None else None
        self.epoch = -1

    def _release(self, node):
        rep, arm = np.nonzero(self.counts >= 1)
        if rep.size == 0:
            return
        stat = self.sums[rep, arm]
        scale = 1.0 / self.policy.epsilon
        if self.mech is not None:
            vals = self.mech.release(stat, scale, 1.0, rep, arm, 0, self.counts[rep, arm], node=node)
        else:
            vals = stat + self.rng.laplace(0.0, scale, stat.size)
        self.noisy[rep, arm] = vals

    def select(self, t):
        if t <= self.k:
            return np.full(self.r, t - 1)
        if (t & (t - 1)) == 0:  # a new epoch: one fresh release per arm
            self.epoch += 1
            self._release(self.epoch)
        elif self.policy.redraw:
            self._release(self.epoch)  # planted bug: the epoch's statistic is re-drawn every round
        return np.argmax(self.noisy / np.maximum(self.counts, 1), axis=1)

    def update(self, t, arms, rewards):
        rows = np.arange(self.r)
        self.sums[rows, arms] += rewards
        self.counts[rows, arms] += 1


class EpochLaplaceGreedy(Policy):
    """Toy: at rounds 2^j every arm's reward sum is released once with Lap(1/epsilon); greedy on those.
    Schedule: a record is in at most one release per epoch -> floor(log2 t) Laplace releases."""

    name = "epoch_laplace_greedy"
    private = True

    def __init__(self, epsilon=1.0, redraw=False):
        self.epsilon, self.redraw = float(epsilon), bool(redraw)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _EpochRun(self, n_arms, replicates, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        eps = self.epsilon

        def events(t):
            n = int(math.floor(math.log2(t))) if t >= 1 else 0
            return Laplace(1.0 / eps, 1.0) * n if n else NO_EVENT

        return EventSchedule(events)

    def __repr__(self):
        return f"EpochLaplaceGreedy(epsilon={self.epsilon}, redraw={self.redraw})"
