"""Gaussian posterior draws as instrumented releases (Gaussian-prior Thompson sampling).

Ou, Cummings & Avella Medina (arXiv 2407.14879), Lemma 3 / Lemma 5 (ALGORITHMS.md 5.1-5.2): the
posterior sample theta = S/(k+1) + N(0, c/(k+1)) of an arm holding k >= 1 rewards in [0, 1] is a
Gaussian release of its mean S/(k+1), whose sensitivity is 1/(k+1), with sigma = sqrt(c/(k+1)):
(1/sqrt(c(k+1)))-GDP per round. An arm with k = 0 holds no record: its draw N(0, c) depends on no
data and is not recorded.

Standard normals are drawn in blocks of rounds (each round still consumes fresh independent
variates, so the law is unchanged); in exact mode every draw goes through the discrete Gaussian
sampler of :mod:`privbandit.mechanisms.sampling` instead.
"""

from __future__ import annotations

import numpy as np

from privbandit.mechanisms._base import check_ledger, check_name, positive, whole
from privbandit.mechanisms.sampling import NoiseSampler


class GaussianPosteriorRelease:
    """Per-round posterior draws of every arm's mean, for (replicates, arms) lock-stepped runs.

    ``release(sums, counts)`` returns theta of shape (replicates, arms) and records one Gaussian
    release per (replicate, arm) with ``counts >= 1``: footprint = all of that arm's records
    [0, counts), sensitivity 1/(counts+1), sigma sqrt(c/(counts+1)).
    """

    def __init__(self, replicates: int, arms: int, *, c: float, rng: np.random.Generator, ledger,
                 name: str = "gaussian_posterior", exact: bool = False, block: int = 256) -> None:
        # ``block`` rounds of normals are drawn at once; callers pass min(block, rounds left) so that
        # short runs (audits: millions of runs of ~20 rounds) draw no unused variates.
        self.replicates = whole("replicates", replicates, 1)
        self.arms = whole("arms", arms, 1)
        self.c = positive("c", c)
        self.ledger = check_ledger(ledger, self.replicates, self.arms) if ledger is not None else None
        self.name = check_name(name)
        self.sampler = NoiseSampler(rng, exact=exact)
        self._block = whole("block", block, 1)
        self._z = np.empty((0, self.replicates, self.arms))
        self._pos = 0

    def _standard_normals(self) -> np.ndarray:
        if self._pos == self._z.shape[0]:
            self._z = self.sampler.rng.standard_normal((self._block, self.replicates, self.arms))
            self._pos = 0
        z = self._z[self._pos]
        self._pos += 1
        return z

    def release(self, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        denom = counts + 1.0
        sigma = np.sqrt(self.c / denom)
        if self.sampler.exact:
            theta = self.sampler.gaussian_release(sums / denom, sigma)
            if self.ledger is not None:  # discrete Gaussian: zCDP events, with the grid-rounded parameters
                self.ledger._record_dense(counts >= 1, 0, counts.astype(np.int64),
                                          np.asarray(self.sampler.effective_sigma(sigma)),
                                          np.asarray(self.sampler.effective_sensitivity(1.0 / denom)),
                                          self.name, gaussian=True, discrete=True)
            return theta
        theta = sums / denom + sigma * self._standard_normals() * self.sampler._noise_scale_factor
        if self.ledger is not None:  # one release per arm holding a record: footprint [0, k)
            self.ledger._record_posterior(counts, self.c, self.name)
        return theta
