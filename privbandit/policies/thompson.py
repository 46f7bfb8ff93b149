"""Non-private Thompson sampling with a Beta prior.

Agrawal & Goyal (2012), "Analysis of Thompson Sampling for the Multi-armed Bandit Problem", COLT,
Algorithm 2: Beta(1, 1) prior; a reward r in [0, 1] is turned into a Bernoulli(r) success before the
conjugate update (for {0, 1} rewards this is the identity and consumes no randomness).
"""

from __future__ import annotations

import numpy as np

from privbandit.policies._ts_kernels import beta_argmax
from privbandit.policies.base import Policy, PolicyRun, check_arms


class _BetaTSRun(PolicyRun):
    _BLOCK = 1024

    def __init__(self, n_arms, replicates, rng):
        self.rng = rng
        self.offsets = np.arange(replicates) * n_arms  # flat index of (replicate, arm 0)
        self.alpha = np.ones((replicates, n_arms))
        self.beta = np.ones((replicates, n_arms))
        self._uniforms = np.empty((0, replicates))
        self._pos = 0

    def select(self, t):
        return beta_argmax(self.rng, self.alpha, self.beta)  # rng.beta(alpha, beta).argmax(axis=1)

    def update(self, t, arms, rewards):
        # Agrawal & Goyal's Bernoulli trick: success with probability r. For r in {0, 1} it is the
        # identity (u < 1 always, u < 0 never), so Bernoulli rewards are used as observed.
        if self._pos == self._uniforms.shape[0]:
            self._uniforms = self.rng.random((self._BLOCK, self.offsets.size))
            self._pos = 0
        success = self._uniforms[self._pos] < rewards
        self._pos += 1
        flat = self.offsets + arms
        self.alpha.ravel()[flat] += success
        self.beta.ravel()[flat] += ~success


class BetaTS(Policy):
    """Beta-Bernoulli Thompson sampling (Agrawal & Goyal 2012, Alg. 2). Non-private."""

    name = "beta_ts"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _BetaTSRun(n_arms, replicates, rng)
