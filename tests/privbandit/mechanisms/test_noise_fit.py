"""Goodness of fit of every mechanism's noise to the structure it declares (fixed seeds).

Two-sample Kolmogorov-Smirnov tests against a reference sample of the declared sum of Laplace
terms; the acceptance level 1e-3 is a false-alarm rate, and the same test must reject (p < 1e-6)
when the noise is halved or removed.
"""

import numpy as np
import pytest
from scipy import stats

from _mech_helpers import make, noise_scales, observed_noise, reference_sample

R = 3000
CASES = [("tree", 7), ("tree", 64), ("tree", 128), ("logarithmic", 16), ("hybrid", 13), ("hybrid", 8),
         ("split", 12), ("split", 7), ("fresh_batch", 7), ("interval", 9)]


def _noise(kind, n, factor=1.0, exact=False, seed=1):
    m, _ = make(kind, R, 1, seed=seed, exact=exact)
    m.sampler._noise_scale_factor = factor
    values = np.random.default_rng(99).integers(0, 2, size=(R, 1, n)).astype(float)
    return observed_noise(kind, m, n, values)


@pytest.mark.parametrize("kind, n", CASES)
def test_noise_matches_declared_laplace_structure(kind, n):
    ref = reference_sample(noise_scales(kind, n), 20 * R)
    assert stats.ks_2samp(_noise(kind, n), ref).pvalue > 1e-3


@pytest.mark.parametrize("kind, n", CASES)
def test_halved_or_removed_noise_is_detected(kind, n):
    ref = reference_sample(noise_scales(kind, n), 20 * R)
    assert stats.ks_2samp(_noise(kind, n, factor=0.5), ref).pvalue < 1e-6
    assert stats.ks_2samp(_noise(kind, n, factor=0.0), ref).pvalue < 1e-6


@pytest.mark.parametrize("kind, n", [("tree", 7), ("hybrid", 13), ("interval", 9)])
def test_exact_mode_noise_matches_too(kind, n):
    ref = reference_sample(noise_scales(kind, n), 20 * R)
    assert stats.ks_2samp(_noise(kind, n, exact=True), ref).pvalue > 1e-3
