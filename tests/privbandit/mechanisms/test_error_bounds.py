"""Coverage of every stated error bound: the empirical failure rate at each count must not exceed
gamma beyond a binomial tolerance (Bonferroni over the counts checked)."""

import math

import numpy as np
import pytest
from scipy import stats

from _mech_helpers import EPS, make

R = 2000
N = 128
GAMMA = 0.05


def _threshold(n_checks):
    # largest failure count compatible with rate <= gamma at overall level 1e-3
    return stats.binom.ppf(1 - 1e-3 / n_checks, R, GAMMA) / R


@pytest.mark.parametrize("kind", ["tree", "logarithmic", "hybrid", "split"])
def test_counting_error_bounds_cover(kind):
    m, _ = make(kind, R, 1, seed=7)
    rng = np.random.default_rng(8)
    mask = np.ones((R, 1), dtype=bool)
    true = np.zeros(R)
    worst = 0.0
    for n in range(1, N + 1):
        v = rng.random((R, 1))
        m.insert(v, mask)
        true += v[:, 0]
        rate = np.mean(np.abs(m.noisy_sum[:, 0] - true) > m.error_bound(n, GAMMA))
        worst = max(worst, rate)
    assert worst <= _threshold(N)


def test_fresh_batch_error_bound_covers():
    m, _ = make("fresh_batch", R, 1, seed=3, batches="manual")
    rng = np.random.default_rng(4)
    mask = np.ones((R, 1), dtype=bool)
    fails = []
    for size in (1, 5, 17):
        m.set_batch_size(np.full((R, 1), size))
        total = np.zeros(R)
        for _ in range(size):
            v = rng.random((R, 1))
            m.insert(v, mask)
            total += v[:, 0]
        assert np.all(m.batch_size == size)
        fails.append(np.mean(np.abs(m.noisy_sum[:, 0] - total) > m.error_bound(size, GAMMA)))
    assert max(fails) <= _threshold(3)


def test_interval_error_bound_covers():
    m, _ = make("interval", R, 1, seed=5, interval=4)
    rng = np.random.default_rng(6)
    vals = rng.random((R, 40))
    fails = []
    for t in range(40):
        m.insert(vals[:, t:t + 1], np.ones((R, 1), dtype=bool))
        n = t + 1
        if n % 4 == 0:
            fails.append(np.mean(np.abs(m.noisy_mean[:, 0] - vals[:, :n].mean(axis=1)) > m.error_bound(n, GAMMA)))
    assert max(fails) <= _threshold(len(fails))


@pytest.mark.parametrize("n", [1, 2, 3, 8, 13, 100, 1024, 1500])
def test_hybrid_bound_is_doubled_tossou_form_when_gamma_small(n):
    """With ln(4/gamma) >= log2 n + 1 the bound is ALGORITHMS.md 4.1's with every term doubled."""
    m, _ = make("hybrid", 1, 1)
    gamma = min(1e-4, 4 * math.exp(-(math.log2(n) + 1)))  # ln(4/gamma) >= log2(n) + 1
    k = int(math.floor(math.log2(n)))
    tossou = math.sqrt(8) / EPS * math.log(4 / gamma) * (1 if n & (n - 1) == 0 else 1 + k)
    assert m.error_bound(n, gamma) == pytest.approx(2 * tossou)
