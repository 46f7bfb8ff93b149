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

import math

import numpy as np

from privbandit.mechanisms._base import check_ledger, check_name, positive, whole
from privbandit.mechanisms._kernels import dividing_kernel
from privbandit.mechanisms.sampling import NoiseSampler


@dividing_kernel
def posterior_theta(sums: np.ndarray, counts: np.ndarray, z: np.ndarray, c: float, factor: float,
                    theta: np.ndarray) -> None:
    """The float path's draw over flat arrays, element by element: ``theta = sums / (counts + 1) +
    sqrt(c / (counts + 1)) * z`` (times ``factor`` after the product when it is not 1), the operations
    and their order of the numpy expression it replaced -- +, /, sqrt and * are correctly rounded
    compiled and interpreted, and numba contracts nothing into a fused multiply-add without fastmath,
    so the bits are the same (tests/privbandit/mechanisms/test_posterior_kernel.py). One pass instead
    of six array temporaries; the mean and sigma are recomputed from ``sums`` and ``counts`` at every
    call (nothing is cached across rounds: a run's statistics may be rewritten between them).
    A :func:`dividing_kernel` (compiled without Python's zero-division check, whose branch kept the
    loop from vectorising: 2.4x slower at 5000 entries): counts >= 0, so every divisor is >= 1;
    interpreted, numpy scalars divide as numpy does."""
    if factor == 1.0:  # x * 1.0 == x bit for bit: skipped, as numpy's path skipped it
        for i in range(theta.shape[0]):
            denom = counts[i] + 1.0
            q = c / denom
            # numpy's sqrt: NaN below 0 (math.sqrt would raise interpreted; it is the faster call)
            theta[i] = sums[i] / denom + (math.sqrt(q) if q >= 0.0 else math.nan) * z[i]
    else:
        for i in range(theta.shape[0]):
            denom = counts[i] + 1.0
            q = c / denom
            theta[i] = sums[i] / denom + ((math.sqrt(q) if q >= 0.0 else math.nan) * z[i]) * factor


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
        # One release per arm holding k >= 1 records, over all of them (footprint [0, k)); in exact
        # mode with the grid-rounded parameters, recorded as zCDP (discrete Gaussian) events.
        self._record = None if self.ledger is None else self.ledger.prefix_recorder(
            self._release_parameters, self.name, gaussian=True, discrete=self.sampler.exact)
        self._z = np.empty((0, self.replicates, self.arms))
        self._pos = 0

    def _standard_normals(self) -> np.ndarray:
        if self._pos == self._z.shape[0]:
            self._z = self.sampler.rng.standard_normal((self._block, self.replicates, self.arms))
            self._pos = 0
        z = self._z[self._pos]
        self._pos += 1
        return z

    def _release_parameters(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sigma, sensitivity) of the release of an arm holding k records, as actually used."""
        sigma, sens = np.sqrt(self.c / (k + 1.0)), 1.0 / (k + 1.0)
        if self.sampler.exact:
            return self.sampler.effective_sigma(sigma), self.sampler.effective_sensitivity(sens)
        return sigma, sens

    def release(self, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        if self.sampler.exact:
            denom = counts + 1.0
            theta = self.sampler.gaussian_release(sums / denom, np.sqrt(self.c / denom))
        else:
            s, k = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
            shape = (self.replicates, self.arms)
            if s.shape != shape or k.shape != shape:  # broadcast them, as numpy did
                try:
                    s, k = np.broadcast_to(s, shape), np.broadcast_to(k, shape)
                except ValueError:
                    raise ValueError(f"sums and counts must broadcast to shape {shape} (replicates, arms), "
                                     f"got {s.shape} and {k.shape}") from None
            z = self._standard_normals()
            theta = np.empty(shape)
            posterior_theta.at(self.replicates)(s.reshape(-1), k.reshape(-1), z.reshape(-1), self.c,
                                                float(self.sampler._noise_scale_factor), theta.reshape(-1))
        if self._record is not None:
            self._record(counts)
        return theta
