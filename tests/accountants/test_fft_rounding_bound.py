"""The fast PLD's FFT rounding bound (session 10): proven a posteriori under a stated error model.

``ComposedPLD.rounding_bound`` bounds the l1 distance between the composed grid PMF it computed and
the exact (real-arithmetic) circular composition of the same leaf PMFs (accountants/fastpld.py,
``_ProductBound``, ``_l1_error``; docs/accountants.md "Session 10"). Checked here against EXACT compositions
(Python integers: every double is an integer multiple of 2^-1074), and against the first-order worst
case of the error model, which the session-9 allowance (8 u log2 N (counts + groups)) did not cover.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import fft as sfft

from accountants import Gaussian, Laplace, PureDP
from accountants.fastpld import ComposedPLD, leaf_pmf

from tests.accountants.test_validity_round2 import _direct_power

U = 2.0 ** -52


def _as_ints(masses):
    """(integers I, exponent E) with masses = I / 2^E exactly."""
    e = max(int(Fraction(float(x)).denominator).bit_length() - 1 for x in masses)
    return np.array([int(Fraction(float(x)) * 2 ** e) for x in masses], dtype=object), e


def _exact_l1_error(groups, h):
    """(exact l1 distance between the engine's masses and the exact circular composition, the bound)."""
    eng = ComposedPLD(groups, h, 1 << 20)
    total, scale, offset = np.array([1], dtype=object), 0, 0
    for leaf, n in groups.items():
        lo, m, _ = leaf_pmf(leaf, h)
        ints, e = _as_ints(m)
        total = np.convolve(total, _direct_power(ints, n))
        scale += e * n
        offset += lo * n
    folded = [0] * eng.n_fft  # linear composition folded onto the circular window (exactly)
    for t, v in enumerate(total):
        folded[(offset + t - eng.base) % eng.n_fft] += v
    denom = 2 ** scale
    err = sum(abs(Fraction(float(y)) - Fraction(v, denom)) for y, v in zip(eng.masses, folded))
    return err, eng


CASES = {
    "laplace power": {Laplace(1.0): 40},
    "lattice PureDP (aligned grid)": {PureDP(0.5): 60},
    "skewed Laplace (atom 1e-9)": {Laplace(1.0, sensitivity=20.0): 12},
    "singles merged pairwise + a group": {**{Laplace(float(s)): 1 for s in (1.0, 1.3, 1.7, 2.2, 2.9, 3.1)},
                                          Laplace(2.0): 5},
    "gaussian + PureDP": {Gaussian(2.0): 6, PureDP(0.25): 9},
}
GRID = {"laplace power": 1 / 8, "lattice PureDP (aligned grid)": 0.5 / 4 * (1 + 4 * U),
        "skewed Laplace (atom 1e-9)": 20.0 / 16, "singles merged pairwise + a group": 1 / 16,
        "gaussian + PureDP": 1 / 16}


@pytest.mark.parametrize("name", list(CASES))
def test_bound_covers_the_exact_error(name):
    err, eng = _exact_l1_error(CASES[name], GRID[name])
    assert 0 < err <= Fraction(eng.rounding_bound), name


def test_lattice_grid_is_aligned_in_the_lattice_case():
    # the lattice case really puts PureDP's atoms at -+4 h (|P_k| = 1 at 8 frequencies: the hard case)
    lo, m, _ = leaf_pmf(PureDP(0.5), GRID["lattice PureDP (aligned grid)"])
    assert lo == -4 and len(m) == 9 and np.count_nonzero(m) == 2


def _first_order(leaf, n, h):
    """The first-order worst case of the error model for one self-composed leaf, computed here from the
    spectrum: n alpha_N ||m||_1 sqrt(S), S = sum_k |P_k|^(2(n-1)) over the full spectrum (Parseval)."""
    eng = ComposedPLD({leaf: n}, h, 1 << 22)
    _, m, _ = leaf_pmf(leaf, h)
    mag = np.abs(sfft.fft(m, eng.n_fft))
    alpha = (math.log2(eng.n_fft) + 2) * 16 * U
    return eng, n * alpha * float(m.sum()) * math.sqrt(float(np.sum(mag ** (2 * (n - 1)))))


@pytest.mark.parametrize("leaf, n, h", [(Laplace(1.0), 1000, 1 / 8), (PureDP(0.05), 1000, 0.05 / 16 * (1 + 4 * U)),
                                        (Laplace(100.0), 20000, 1e-4)])
def test_margin_covers_the_first_order_worst_case(leaf, n, h):
    # was: 8 u log2 N (n + 1) -- 6x short of this for the smooth losses and 33x for the lattice PureDP
    eng, need = _first_order(leaf, n, h)
    assert eng.margin - eng.tail_bound >= need


def test_bound_grows_with_the_count_and_stays_tiny():
    h = 1 / 64
    bounds = [ComposedPLD({Laplace(10.0): n}, h, 1 << 22).rounding_bound for n in (10, 100, 1000, 10000)]
    assert all(a < b for a, b in zip(bounds, bounds[1:]))
    # per release, per log2 level, in units of u: a few hundred at most (alpha_N ||m||_1 sqrt(S))
    assert bounds[-1] < 10000 * 25 * 16 * U * 10


def test_epsilon_meets_its_own_delta_at_grid_targets():
    # was: epsilon(delta) returned a grid loss whose delta() exceeded delta by ~1e-14 relative when the
    # target was what the grid selection's cumulative sums saw there (108 of 400 such targets on 4a5d28b)
    eng = ComposedPLD({Laplace(10.0): 100}, 1e-4 * math.sqrt(100) * 0.1, 1 << 22)
    y, losses = eng.masses, eng._losses()
    a_suffix = np.concatenate((np.cumsum(y[::-1])[::-1][1:], [0.0]))
    from accountants.fastpld import _discounted_suffix

    finite = a_suffix - _discounted_suffix(y, eng.h)
    start = int(np.argmax(finite < 1e-3))
    checked = 0
    for j in range(start, len(y), 2000):
        if finite[j] <= 1e-14:
            break
        delta = finite[j] + eng.inf_mass + eng.margin
        eps = eng.epsilon(delta)
        assert eng.delta(eps) <= delta and eps <= losses[min(j + 1, len(y) - 1)]
        checked += 1
    assert checked >= 20
