"""Shared helpers of the mechanism tests: factories and the noise structure each mechanism declares."""

import numpy as np

from privbandit.ledger import Ledger
from privbandit.mechanisms import (FreshBatchMean, HybridMechanism, IntervalMean, LogarithmicMechanism,
                                   SplitMechanism, TreeMechanism)

EPS = 1.0
HORIZON = 128
V = 1.1

COUNTING = ["tree", "logarithmic", "hybrid", "split", "fresh_batch"]
ALL = COUNTING + ["interval"]


def make(kind, replicates, streams, *, seed=0, tight=False, exact=False, ledger=None, **kw):
    led = ledger if ledger is not None else Ledger(replicates, streams, tight=tight)
    rng = np.random.default_rng(seed)
    common = dict(rng=rng, ledger=led, exact=exact)
    if kind == "tree":
        m = TreeMechanism(replicates, streams, epsilon=EPS, horizon=kw.pop("horizon", HORIZON), **common, **kw)
    elif kind == "logarithmic":
        m = LogarithmicMechanism(replicates, streams, epsilon=EPS, **common, **kw)
    elif kind == "hybrid":
        m = HybridMechanism(replicates, streams, epsilon=EPS, **common, **kw)
    elif kind == "split":
        m = SplitMechanism(replicates, streams, epsilon=EPS, **common, **kw)
    elif kind == "fresh_batch":
        m = FreshBatchMean(replicates, streams, epsilon=EPS, **common, **kw)
    elif kind == "interval":
        m = IntervalMean(replicates, streams, v=V, interval=kw.pop("interval", 3), **common, **kw)
    else:
        raise AssertionError(kind)
    return m, led


def popcount(n):
    return bin(n).count("1")


def noise_scales(kind, n, horizon=HORIZON):
    """Scales of the independent Laplace terms in the mechanism's output at count n (eps = EPS)."""
    if kind == "tree":
        return [horizon.bit_length() / EPS] * popcount(n)
    if kind == "logarithmic":
        assert n & (n - 1) == 0
        return [1 / EPS] * n.bit_length()
    if kind == "hybrid":
        k = n.bit_length() - 1
        tau = n - (1 << k)
        return [2 / EPS] * (k + 1) + [2 * k / EPS] * popcount(tau)
    if kind == "split":
        c = (n + 1).bit_length() - 1
        tau = n - ((1 << c) - 1)
        return [2 / EPS] * c + [2 * c / EPS] * popcount(tau)
    if kind == "fresh_batch":
        return [1 / EPS]
    if kind == "interval":
        return [n ** (V / 2 - 1)]
    raise AssertionError(kind)


def run(m, n, values):
    """Insert values[:, :, t] for t < n into every stream; returns the true sums over time (n, R, K)."""
    R, K = m.replicates, m.streams
    mask = np.ones((R, K), dtype=bool)
    sums = np.zeros((n, R, K))
    acc = np.zeros((R, K))
    for t in range(n):
        m.insert(values[:, :, t], mask)
        acc = acc + values[:, :, t]
        sums[t] = acc
    return sums


def observed_noise(kind, m, n, values):
    """noisy output minus the statistic it estimates, after n inserts."""
    run(m, n, values)
    if kind == "fresh_batch":
        # last closed batch: doubling batches 1, 2, 4, ...; with n = 2^j - 1 the last batch is 2^(j-1)
        size = m.batch_size[:, 0]
        start = m.count[:, 0] - m.pending[:, 0] - size
        true = np.array([values[r, 0, start[r]:start[r] + size[r]].sum() for r in range(m.replicates)])
        return m.noisy_sum[:, 0] - true
    if kind == "interval":
        return m.noisy_mean[:, 0] - values[:, 0, :n].mean(axis=1)
    return m.noisy_sum[:, 0] - values[:, 0, :n].sum(axis=1)


def reference_sample(scales, size, seed=12345):
    rng = np.random.default_rng(seed)
    return sum(rng.laplace(0.0, s, size) for s in scales)
