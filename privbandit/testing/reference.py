"""Plain per-round, one-replicate implementations of the baseline policies.

Written as directly from the papers as possible, with Python scalars and the standard library's
``random`` module, so that they share no code with the vectorised engine. The test suite compares
the engine's arm-pull distribution with these; the benchmarks use them as the "plain loop" baseline.
"""

from __future__ import annotations

import math
import random


def ucb1(means: list[float], horizon: int, rng: random.Random) -> list[int]:
    """UCB1 (Auer et al. 2002) on Bernoulli arms; returns the pull count of each arm."""
    k = len(means)
    sums, counts = [0.0] * k, [0] * k
    for t in range(1, horizon + 1):
        if t <= k:
            arm = t - 1
        else:
            arm = max(range(k), key=lambda a: sums[a] / counts[a] + math.sqrt(2 * math.log(t) / counts[a]))
        reward = 1.0 if rng.random() < means[arm] else 0.0
        sums[arm] += reward
        counts[arm] += 1
    return counts


def beta_ts(means: list[float], horizon: int, rng: random.Random) -> list[int]:
    """Beta-Bernoulli Thompson sampling (Agrawal & Goyal 2012); returns the pull counts."""
    k = len(means)
    alpha, beta = [1.0] * k, [1.0] * k
    counts = [0] * k
    for _ in range(horizon):
        arm = max(range(k), key=lambda a: rng.betavariate(alpha[a], beta[a]))
        reward = 1.0 if rng.random() < means[arm] else 0.0
        alpha[arm] += reward
        beta[arm] += 1.0 - reward
        counts[arm] += 1
    return counts


def gaussian_ts(means: list[float], horizon: int, rng: random.Random, b: int = 0, c: float = 1.0) -> list[int]:
    """Gaussian-prior TS with b pre-pulls and variance factor c (Ou et al. Alg. 2); pull counts."""
    k = len(means)
    sums, counts = [0.0] * k, [0] * k
    for t in range(1, horizon + 1):
        if t <= k * b:
            arm = (t - 1) // b
        else:
            arm = max(range(k), key=lambda a: rng.gauss(sums[a] / (counts[a] + 1), math.sqrt(c / (counts[a] + 1))))
        reward = 1.0 if rng.random() < means[arm] else 0.0
        sums[arm] += reward
        counts[arm] += 1
    return counts


def beta_ts_numpy(means: list[float], horizon: int, rng) -> list[int]:
    """Beta-Bernoulli TS as a per-round loop over one replicate written with numpy calls (the way
    most simulators are written); ``rng`` is a ``numpy.random.Generator``. Returns the pull counts."""
    import numpy as np

    mu = np.asarray(means, dtype=float)
    alpha, beta = np.ones(mu.size), np.ones(mu.size)
    for _ in range(horizon):
        arm = int(np.argmax(rng.beta(alpha, beta)))
        reward = float(rng.random() < mu[arm])
        alpha[arm] += reward
        beta[arm] += 1.0 - reward
    return (alpha + beta - 2).astype(int).tolist()
