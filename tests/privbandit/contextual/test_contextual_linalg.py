"""Batched linear algebra of the linear policies against direct per-matrix computations."""

import math

import numpy as np
import pytest

from privbandit.contextual import linalg


def test_packed_outer_and_unpack_round_trip():
    x = np.random.default_rng(0).standard_normal((4, 3, 5))
    packed = linalg.packed_outer(x)
    assert packed.shape == (4, 3, 15)
    np.testing.assert_allclose(linalg.unpack(packed, 5), x[..., :, None] * x[..., None, :])


def test_split_gram_gives_a_and_b():
    z, r = np.array([[0.3, -0.4]]), np.array([0.7])
    a, b = linalg.split_gram(linalg.unpack(linalg.packed_outer(linalg.augmented(z, r)), 3), 2)
    np.testing.assert_allclose(a[0], np.outer(z[0], z[0]))
    np.testing.assert_allclose(b[0], 0.7 * z[0])


def test_sherman_morrison_matches_inverse():
    rng = np.random.default_rng(1)
    m = rng.standard_normal((6, 4, 4))
    a = m @ m.transpose(0, 2, 1) + np.eye(4)
    z = rng.standard_normal((6, 4))
    expected = np.linalg.inv(a + z[:, :, None] * z[:, None, :])
    np.testing.assert_allclose(linalg.sherman_morrison(np.linalg.inv(a), z), expected, rtol=1e-9, atol=1e-12)


def test_regularized_inverse_shifts_the_spectrum_to_the_floor():
    a = np.array([[[2.0, 0.0], [0.0, -5.0]], [[3.0, 0.0], [0.0, 2.0]]])  # the first is not PD
    out = linalg.regularized_inverse(a, 1.0)
    np.testing.assert_allclose(out[0], np.diag([1 / 8, 1.0]))  # shifted by 6: eigenvalues 8 and 1
    np.testing.assert_allclose(out[1], np.diag([1 / 3, 1 / 2]))  # already above the floor


def test_bound_contexts_clip_and_reject():
    z = np.array([[[3.0, 4.0], [0.3, 0.4]]])
    clipped = linalg.bound_contexts(z, 1.0, "clip")
    np.testing.assert_allclose(clipped, [[[0.6, 0.8], [0.3, 0.4]]])
    with pytest.raises(ValueError, match="bound=1.0"):
        linalg.bound_contexts(z, 1.0, "reject")
    assert linalg.bound_contexts(z, 5.0, "reject") is z


def test_indices_match_direct_formulas():
    rng = np.random.default_rng(2)
    z = rng.standard_normal((2, 3, 4))
    theta = rng.standard_normal((2, 3, 4))
    m = rng.standard_normal((2, 3, 4, 4))
    a_inv = m @ m.transpose(0, 1, 3, 2)
    ucb = linalg.ucb_index(z, theta, a_inv, 0.7)
    normal = rng.standard_normal((2, 3))
    ts = linalg.ts_index(z, theta, a_inv, 0.3, normal)
    for r in range(2):
        for k in range(3):
            w = math.sqrt(z[r, k] @ a_inv[r, k] @ z[r, k])
            assert ucb[r, k] == pytest.approx(theta[r, k] @ z[r, k] + 0.7 * w)
            assert ts[r, k] == pytest.approx(theta[r, k] @ z[r, k] + 0.3 * w * normal[r, k])
    # a shared model broadcasts one (theta, A^-1) over the arms
    shared = linalg.ucb_index(z, theta[:, :1], a_inv[:, :1], 0.7)
    assert shared[1, 2] == pytest.approx(theta[1, 0] @ z[1, 2] + 0.7 * math.sqrt(z[1, 2] @ a_inv[1, 0] @ z[1, 2]))


def test_lin_ucb_alpha():
    assert linalg.lin_ucb_alpha(0.05) == pytest.approx(1 + math.sqrt(math.log(40) / 2))


def test_regularized_inverse_is_the_inverse_above_the_floor():
    rng = np.random.default_rng(4)
    m = rng.standard_normal((3, 4, 4))
    a = m @ m.transpose(0, 2, 1) + 2.0 * np.eye(4)  # every eigenvalue > 1: no shift
    w, v = np.linalg.eigh(a)
    np.testing.assert_allclose(linalg.regularized_inverse(a, 1.0), np.einsum("bij,bj,bkj->bik", v, 1 / w, v),
                               rtol=1e-10)
