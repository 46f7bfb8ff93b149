"""Batched linear algebra of the linear contextual policies, as pure functions.

Every function works on a leading batch of replicates (and arms) at once -- numpy's stacked
``matmul``/``eigh``/``einsum`` -- so a policy never loops over replicates in Python.

Notation (Li, Chu, Langford & Schapire 2010, LinUCB with disjoint models, Alg. 1): for an arm (or
the shared model) ``A = lambda I + sum z z^T`` and ``b = sum r z``; ``theta = A^-1 b``; the UCB
index of a context z is ``theta^T z + alpha sqrt(z^T A^-1 z)``. Linear Thompson sampling (Agrawal &
Goyal 2013, Alg. 1) draws ``theta~ ~ N(theta, v^2 A^-1)``; on one context its index
``theta~^T z`` is ``N(theta^T z, v^2 z^T A^-1 z)``, which :func:`ts_index` samples directly.

Packed statistics. The private policies release the upper triangle of the Gram matrix of the
augmented vector ``x = [z; r]`` (:func:`packed_outer`): entries ``x_i x_j`` for ``i <= j`` in
``numpy.triu_indices`` order. :func:`unpack` rebuilds ``A`` (the z-block) and ``b`` (the r-column).
"""

from __future__ import annotations

import math

import numpy as np

from accountants import _validate


def check_contexts(contexts, dim: int | None = None) -> np.ndarray:
    """``contexts`` as a float array (R, K, d) with finite entries (d = ``dim`` when given). Numbers
    only (``accountants._validate.real_array``): complex contexts lost their imaginary part with a
    ComplexWarning, text ("0.5") and bools were read as numbers."""
    z = _validate.real_array("contexts", contexts)
    if z.ndim != 3:
        raise ValueError(f"contexts must have shape (replicates, arms, dim), got {z.shape}")
    if dim is not None and z.shape[2] != dim:
        raise ValueError(f"contexts must have dimension dim={dim}, got {z.shape[2]}")
    if not np.isfinite(z).all():
        raise ValueError("contexts must be finite")
    return z


def bound_contexts(z: np.ndarray, bound: float, mode: str) -> np.ndarray:
    """Contexts with Euclidean norm at most ``bound`` (the declared L of the privacy analysis).

    ``mode="clip"`` rescales a longer context onto the sphere of radius L (z L / ||z||, the
    projection onto the ball: a deterministic map of the data, so the sensitivity analysis over
    the ball holds); ``mode="reject"`` raises ValueError naming the bound instead."""
    with np.errstate(over="ignore"):
        norms = np.sqrt(np.einsum("...i,...i->...", z, z))
    if not np.isfinite(norms).all():
        # entries past ~1e154 overflow the sum of squares: the norm is inf and the clip below made the
        # context 0 instead of projecting it; scaled by its largest entry first, it is finite
        top = np.abs(z).max(axis=-1)
        safe = np.where(top > 0, top, 1.0)
        norms = top * np.sqrt(np.einsum("...i,...i->...", z / safe[..., None], z / safe[..., None]))
    over = norms > bound
    if not over.any():
        return z
    if mode == "reject":
        raise ValueError(f"contexts: a context has norm {float(norms.max())!r} > bound={bound} "
                         "(declared norm bound L; use contexts='clip' to project onto the ball)")
    scale = np.where(over, bound / np.where(over, norms, 1.0), 1.0)
    return z * scale[..., None]


def packed_index(dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices (``numpy.triu_indices(dim)``) of a packed symmetric matrix."""
    return np.triu_indices(dim)


def packed_outer(x: np.ndarray) -> np.ndarray:
    """Upper triangles of ``x x^T`` for a batch of vectors ``x`` (..., n): shape (..., n(n+1)/2)."""
    i, j = packed_index(x.shape[-1])
    return x[..., i] * x[..., j]


def unpack(packed: np.ndarray, dim: int) -> np.ndarray:
    """Symmetric matrices (..., dim, dim) from their packed upper triangles (..., dim(dim+1)/2)."""
    i, j = packed_index(dim)
    out = np.empty(packed.shape[:-1] + (dim, dim))
    out[..., i, j] = packed
    out[..., j, i] = packed
    return out


def augmented(z: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``[z; r]`` for a batch: z (..., d), r (...,) -> (..., d + 1)."""
    return np.concatenate([z, np.asarray(r, dtype=float)[..., None]], axis=-1)


def split_gram(gram: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The z-block ``A`` (..., d, d) and the r-column ``b`` (..., d) of an augmented Gram matrix."""
    return gram[..., :dim, :dim], gram[..., :dim, dim]


def sherman_morrison(a_inv: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``(A + z z^T)^-1`` from ``A^-1`` (B, d, d) and z (B, d), batched (Sherman-Morrison)."""
    u = np.einsum("bij,bj->bi", a_inv, z)
    denom = 1.0 + np.einsum("bi,bi->b", z, u)
    return a_inv - u[:, :, None] * u[:, None, :] / denom[:, None, None]


def regularized_inverse(a: np.ndarray, floor: float) -> np.ndarray:
    """``(A + c I)^-1`` for symmetric (B, d, d) matrices, ``c = max(0, floor - lambda_min(A))`` per
    matrix: the least uniform shift whose smallest eigenvalue is at least ``floor``.

    A noisy Gram matrix need not be positive definite; shifting it is post-processing of the
    release (no privacy cost) and keeps the ridge estimate and the widths defined. (``eigvalsh``
    and ``inv`` rather than a full ``eigh``, whose multithreaded LAPACK path is 10x slower on a
    loaded machine at d = 50.)"""
    lowest = np.linalg.eigvalsh(a)[:, 0]
    shift = np.maximum(0.0, floor - lowest)
    return np.linalg.inv(a + shift[:, None, None] * np.eye(a.shape[-1]))


def ucb_index(z: np.ndarray, theta: np.ndarray, a_inv: np.ndarray, alpha: float) -> np.ndarray:
    """LinUCB indices ``theta^T z + alpha sqrt(z^T A^-1 z)`` for contexts (R, K, d), per-arm
    estimates theta (R, K, d) and inverses (R, K, d, d) (or (R, 1, ...) for a shared model)."""
    mean, width = _mean_and_width(z, theta, a_inv)
    return mean + alpha * np.sqrt(np.maximum(width, 0.0))


def _mean_and_width(z: np.ndarray, theta: np.ndarray, a_inv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``theta^T z`` and ``z^T A^-1 z`` per (replicate, arm), by batched matmul (a three-operand
    einsum is several times slower here)."""
    mean = np.einsum("rkd,rkd->rk", z, np.broadcast_to(theta, z.shape))
    width = np.einsum("rkd,rkd->rk", np.matmul(a_inv, z[..., None])[..., 0], z)
    return mean, width


def ts_index(z: np.ndarray, theta: np.ndarray, a_inv: np.ndarray, v: float, normal: np.ndarray) -> np.ndarray:
    """Linear TS indices ``theta~^T z`` with ``theta~ ~ N(theta, v^2 A^-1)`` (Agrawal & Goyal 2013),
    one independent draw per arm: ``theta^T z + v sqrt(z^T A^-1 z) * normal`` with ``normal`` (R, K)
    standard normal -- exactly the law of the index of a disjoint model. For ``v > 1e100`` the indices are
    divided by ``v`` (the same argmax, which is all the policies use; the undivided ones overflow)."""
    mean, width = _mean_and_width(z, theta, a_inv)
    if v > _HUGE_V:
        # v * sqrt(width) * normal overflows to +-inf beyond ~1e206 (sqrt(width) <= 1e100 under the policies'
        # bound / regularization limits, |normal| < 40): arms tied at +inf and argmax took the first of them,
        # with a RuntimeWarning (session 17). The index divided by v > 0 has the same argmax -- the only use of
        # it -- and stays finite: theta^T z / v + sqrt(width) * normal.
        return mean / v + np.sqrt(np.maximum(width, 0.0)) * normal
    return mean + v * np.sqrt(np.maximum(width, 0.0)) * normal


#: above this ``v``, :func:`ts_index` returns the index divided by ``v`` (argmax unchanged, no overflow)
_HUGE_V = 1e100


def lin_ucb_alpha(delta: float) -> float:
    """LinUCB's exploration constant ``1 + sqrt(ln(2 / delta) / 2)`` (Li et al. 2010, eq. 4)."""
    return 1.0 + math.sqrt(math.log(2.0 / delta) / 2.0)
