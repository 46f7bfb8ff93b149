"""Non-private Thompson sampling with a Beta prior.

Agrawal & Goyal (2012), "Analysis of Thompson Sampling for the Multi-armed Bandit Problem", COLT,
Algorithm 2: Beta(1, 1) prior; a reward r in [0, 1] is turned into a Bernoulli(r) success before the
conjugate update (for {0, 1} rewards this is the identity and consumes no randomness).
"""

from __future__ import annotations

import numpy as np

from privbandit.policies.base import Policy, PolicyRun, check_arms


class _BetaTSRun(PolicyRun):
    def __init__(self, n_arms, replicates, rng):
        self.rng = rng
        self.rows = np.arange(replicates)
        self.alpha = np.ones((replicates, n_arms))
        self.beta = np.ones((replicates, n_arms))

    def select(self, t):
        return np.argmax(self.rng.beta(self.alpha, self.beta), axis=1)

    def update(self, t, arms, rewards):
        binary = (rewards == 0) | (rewards == 1)
        if not binary.all():  # Agrawal & Goyal's Bernoulli trick for fractional rewards
            rewards = np.where(binary, rewards, self.rng.random(rewards.shape) < rewards).astype(float)
        self.alpha[self.rows, arms] += rewards
        self.beta[self.rows, arms] += 1.0 - rewards


class BetaTS(Policy):
    """Beta-Bernoulli Thompson sampling (Agrawal & Goyal 2012, Alg. 2). Non-private."""

    name = "beta_ts"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _BetaTSRun(n_arms, replicates, rng)
