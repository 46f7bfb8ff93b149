"""Non-private UCB baselines: UCB1 and KL-UCB.

* UCB1 — Auer, Cesa-Bianchi & Fischer (2002), "Finite-time Analysis of the Multiarmed Bandit
  Problem", Machine Learning 47, Fig. 1: play each arm once, then argmax mean + sqrt(2 ln t / n).
* KL-UCB — Garivier & Cappé (2011), "The KL-UCB Algorithm for Bounded Stochastic Bandits and
  Beyond", COLT, Algorithm 1 with the Bernoulli divergence: argmax of
  max{q in [mean, 1] : n kl(mean, q) <= ln t + c ln ln t}.

Ties are broken toward the lowest arm index (deterministic, like ``numpy.argmax``).
"""

from __future__ import annotations

import abc

import numpy as np
from scipy import special

from accountants._validate import shown
from accountants import _validate
from privbandit.policies.base import Policy, PolicyRun, check_arms


class _CountingRun(PolicyRun):
    """Shared state: per-replicate, per-arm reward sums and pull counts; round-robin start."""

    def __init__(self, n_arms: int, replicates: int):
        self.n_arms = n_arms
        self.rows = np.arange(replicates)
        self.offsets = self.rows * n_arms  # flat index of (replicate, arm 0)
        self.sums = np.zeros((replicates, n_arms))
        self.counts = np.zeros((replicates, n_arms))

    def update(self, t, arms, rewards):
        flat = self.offsets + arms  # one entry per replicate: no repeated index
        # read, add, write: what ``x[flat] += y`` does, spelled out (measured ~1 us cheaper at one
        # replicate, where the augmented fancy assignment's fixed cost dominates)
        sums, counts = self.sums.ravel(), self.counts.ravel()
        sums[flat] = sums[flat] + rewards
        counts[flat] = counts[flat] + 1

    def select(self, t):
        if t <= self.n_arms:
            return np.full(self.rows.size, t - 1, dtype=np.intp)
        return self.index(t).argmax(axis=1)  # the method: np.argmax's dispatch costs more at one replicate

    @abc.abstractmethod
    def index(self, t: int) -> np.ndarray:
        """The (replicates, arms) index whose argmax is played in round ``t`` > n_arms."""


class _UCB1Run(_CountingRun):
    def index(self, t):
        return self.sums / self.counts + np.sqrt(2.0 * np.log(t) / self.counts)


class UCB1(Policy):
    """UCB1 (Auer et al. 2002, Fig. 1). Non-private."""

    name = "ucb1"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _UCB1Run(n_arms, replicates)


def bernoulli_kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """kl(p, q) = p ln(p/q) + (1-p) ln((1-p)/(1-q)), with 0 ln 0 = 0; q clipped inside (0, 1)."""
    tiny = 1e-15
    q = np.clip(q, tiny, 1 - tiny)
    return special.xlogy(p, p) - special.xlogy(p, q) + special.xlogy(1 - p, 1 - p) - special.xlogy(1 - p, 1 - q)


class _KLUCBRun(_CountingRun):
    def __init__(self, n_arms, replicates, c, iterations):
        super().__init__(n_arms, replicates)
        self.c, self.iterations = c, iterations

    def index(self, t):
        mean = self.sums / self.counts
        p = np.minimum(mean, 1.0 - 1e-9)  # the index of a mean of 1 is 1 (set below)
        budget = (np.log(t) + self.c * np.log(max(np.log(t), 1.0))) / self.counts
        # g(q) = kl(p, q) - budget is convex and increasing on [p, 1). Newton's method started to the
        # right of the root (Pinsker: kl(p, q) >= 2 (q - p)^2, so the root is <= p + sqrt(budget/2))
        # decreases monotonically to the root and never crosses it.
        entropy = special.xlogy(p, p) + special.xlogy(1 - p, 1 - p)
        # Newton's method in y = -ln(1 - q): g(y) = kl(p, q(y)) - budget is convex and increasing
        # for q > p and nearly linear for large y (where kl blows up in q), so Newton started to the
        # right of the root converges fast and monotonically from above (never below the index).
        q0 = np.minimum(1.0 - 1e-12, p + np.sqrt(budget / 2.0))
        y = -np.log1p(-q0)
        for _ in range(self.iterations):
            q = -np.expm1(-y)
            g = entropy - p * np.log(q) + (1 - p) * y - budget
            slope = (q - p) / q  # dg/dy = dg/dq * (1 - q) = (q - p) / q
            step = np.divide(g, slope, out=np.zeros_like(g), where=slope > 0)
            y = np.maximum(-np.log1p(-p), y - np.maximum(step, 0.0))
        q = -np.expm1(-y)
        return np.where(mean >= 1.0 - 1e-9, 1.0, q)


#: KL-UCB's largest exploration constant c (the paper's theory: c = 3)
C_MAX = 1e250


class KLUCB(Policy):
    """KL-UCB (Garivier & Cappé 2011, Alg. 1, Bernoulli kl). Non-private.

    ``c`` is the ln ln t exploration constant (the paper's theory uses c = 3; c = 0 is the usual
    practical choice and the default); ``iterations`` is the number of Newton steps toward the index
    (from above, so a truncated iteration errs toward more exploration).
    """

    name = "kl_ucb"

    def __init__(self, c: float = 0.0, iterations: int = 8):
        self.c = _validate.nonnegative("c", c)
        if self.c > C_MAX:  # (Newton's step g / slope divides an index budget ~ 4 c by a slope >= 1e-9: c = 1e300
            # overflowed it, a RuntimeWarning every round; past ~1e15 every index is already 1 - 1e-12)
            raise ValueError(f"c must lie in [0, {C_MAX:g}], got {shown(c)}")
        try:  # a whole number (2.0 is fine; NaN, inf, True, None and strings are not)
            n = _validate.count("iterations", iterations)
        except ValueError:
            n = 0
        if not 1 <= n <= 60:
            raise ValueError(f"iterations must be a whole number in [1, 60], got {shown(iterations)}")
        self.iterations = n

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _KLUCBRun(n_arms, replicates, self.c, self.iterations)

    def params(self):
        return {"policy": self.name, "c": self.c, "iterations": self.iterations}
