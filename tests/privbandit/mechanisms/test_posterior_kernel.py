"""The posterior's fused draw gives numpy's bits, compiled and interpreted.

privbandit.mechanisms.posterior.posterior_theta replaced the numpy expression
``sums / (counts + 1) + sqrt(c / (counts + 1)) * z`` (times the sampler's test factor) with one
loop; +, /, sqrt and * are correctly rounded in numpy, CPython and numba alike, so any difference
would be a reordering or a fused multiply-add -- checked here bit for bit on values that make the
last bit matter (many magnitudes of sums, counts, c and z). Whole Gaussian-TS runs compiled vs
interpreted: tests/privbandit/policies/test_ts_kernels.py; the golden digests: test_streams_identical.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.mechanisms.posterior import GaussianPosteriorRelease, posterior_theta

WAYS = ["py_func", "jit"]


def _numpy_theta(sums, counts, z, c, factor):
    """The float path before the kernel (posterior.py, session 5)."""
    denom = counts + 1.0
    noise = np.sqrt(c / denom) * z
    if factor != 1.0:
        noise = noise * factor
    return sums / denom + noise


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("c", [1.0, 4.0, 0.3, 1e-7, 123456.789])
@pytest.mark.parametrize("factor", [1.0, 0.5, 1.0 / 3.0])
def test_posterior_theta_is_the_numpy_expression_bit_for_bit(way, c, factor):
    rng = np.random.default_rng(7)
    n = 4096
    counts = np.concatenate([rng.integers(0, 10, n // 2), rng.integers(0, 10**9, n // 2)]).astype(float)
    sums = counts * rng.random(n) * np.exp(rng.uniform(-30, 0, n))
    z = rng.standard_normal(n) * np.exp(rng.uniform(-20, 5, n))
    theta = np.full(n, np.nan)
    getattr(posterior_theta, way)(sums, counts, z, c, factor, theta)
    want = _numpy_theta(sums, counts, z, c, factor)
    assert np.array_equal(theta.view(np.int64), want.view(np.int64))  # bits, signed zeros included


@pytest.mark.parametrize("way", WAYS)
def test_posterior_theta_special_values_follow_numpy(way):
    sums = np.array([0.0, -0.0, 1.0, np.inf, np.nan, 2.0, 0.0])
    counts = np.array([0.0, 0.0, -1.0, 3.0, 1.0, np.inf, 0.0])
    z = np.array([-0.0, 0.0, 1.0, 1.0, 1.0, 1.0, np.nan])
    theta = np.empty(sums.size)
    with np.errstate(all="ignore"):
        getattr(posterior_theta, way)(sums, counts, z, 1.0, 1.0, theta)
        want = _numpy_theta(sums, counts, z, 1.0, 1.0)
    assert np.array_equal(theta, want, equal_nan=True)
    assert np.array_equal(np.signbit(theta), np.signbit(want))


def test_release_refuses_statistics_of_another_shape():
    post = GaussianPosteriorRelease(3, 2, c=1.0, rng=np.random.default_rng(0), ledger=None)
    with pytest.raises(ValueError, match="sums and counts must broadcast"):
        post.release(np.zeros((3, 3)), np.zeros((3, 3)))
    # broadcastable statistics are drawn as numpy broadcast them
    theta = post.release(np.zeros(2), np.ones((3, 2)))
    assert theta.shape == (3, 2)

