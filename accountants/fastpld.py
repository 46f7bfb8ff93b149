"""A lean privacy-loss-distribution engine for Laplace, Gaussian/GDP and PureDP releases.

Same mathematics as dp-accounting's pessimistic PLD (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi
2022, "Connect the Dots", PETS, Algorithm 1; Koskela, Jalko & Honkela 2020 for FFT composition),
organised for speed and for an explicit error budget:

* each distinct release gets its connect-the-dots PMF on a common loss grid h Z from its closed-form
  hockey-stick curve, vectorised (Laplace: delta(eps) = 1 - e^{(eps - eps0)/2} on [-eps0, eps0];
  Gaussian: the exact GDP curve of :mod:`accountants.gdp_conversion`, cut 14 sd out with the cut
  tail put at +infinity; PureDP: the two atoms +-eps0 rounded up to the grid). Matching the
  true curve at every grid point and interpolating affinely in e^eps between them lies above the
  true curve (it is convex in e^eps), and the result is a dominating pair (Doroshenko et al., Thm 4);
* all groups are composed with ONE real FFT of length N: the transforms of the group PMFs are
  raised to their counts (self-composition by powering, O(1) transforms per group, any count) and
  multiplied, then inverted once;
* the FFT is circular: a window of N grid points is placed around the composed mean, and the mass
  outside it (bounded above by Chernoff, optimised over a grid of exponents) wraps around. Mass from
  above the window wrapping to its bottom can only lower delta, by at most that bound, which is added
  to delta; mass from below wrapping to the top only raises it (safe);
* negative rounding noise in the inverse transform is clipped to zero (raises delta), and the FFT
  rounding margin of :mod:`accountants.pld` (8 u log2 N (sum of counts + groups)) is added.

epsilon(delta) solves the affine-in-e^eps piece exactly between grid points and verifies the answer.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft as sfft

from accountants import gdp_conversion
from accountants.events import GDP, Gaussian, Laplace, LeafEvent, PureDP

_U = 2.0 ** -52
_FFT_MARGIN = 8.0 * _U
_GAUSS_SD = 14.0  # Gaussian leaves: grid from the mean -+ 14 sd (tail beyond: at +inf, ~1e-44)
_TAIL = 1e-22  # target wrap-around mass (its Chernoff bound is added to delta)


def supports(leaf: LeafEvent) -> bool:
    return type(leaf) in (Laplace, Gaussian, GDP, PureDP)


def _connect_dots(idx: np.ndarray, deltas: np.ndarray, h: float) -> tuple[np.ndarray, float]:
    """Connect-the-dots masses on consecutive grid indices ``idx`` (uniform step h) from the
    hockey-stick values ``deltas`` there; returns (masses, mass at +infinity).

    mass_1 = 1 - d_1 + (d_2 - d_1)/(e^h - 1), mass_i = (d_i - d_{i-1})/(e^{-h} - 1) + (d_{i+1} - d_i)/(e^h - 1),
    mass_n = (d_n - d_{n-1})/(e^{-h} - 1), mass_inf = d_n (Doroshenko et al. 2022, Alg. 1).
    """
    d = np.minimum.accumulate(np.clip(deltas, 0.0, 1.0))
    diff = np.diff(d)  # <= 0
    m = np.zeros(len(d))
    m[0] = 1.0 - d[0]
    m[1:] += diff / math.expm1(-h)
    m[:-1] += diff / math.expm1(h)
    return np.maximum(m, 0.0), float(d[-1])


def leaf_pmf(leaf: LeafEvent, h: float) -> tuple[int, np.ndarray, float]:
    """(first grid index, masses, mass at +infinity) of one release's pessimistic PMF on h Z."""
    if isinstance(leaf, PureDP):
        eps0 = leaf.epsilon
        m_f = eps0 / h
        m = round(m_f)
        if m >= 1 and abs(m_f - m) <= 1e-9 * m and m * h >= eps0:
            # h is one ulp-scale above eps0/m (PLDAccountant.interval aligns it): atoms at +-m h scale
            # every loss by the same factor >= 1, which can only raise delta(eps) for eps >= 0
            lo, hi = -m, m
        else:  # round both atoms up to the grid (pessimistic)
            lo, hi = math.ceil(-eps0 / h), math.ceil(eps0 / h)
        p, q = 1.0 / (1.0 + math.exp(-eps0)), 1.0 / (1.0 + math.exp(eps0))
        masses = np.zeros(hi - lo + 1)
        masses[0] += q
        masses[-1] += p
        return lo, masses, 0.0
    if isinstance(leaf, Laplace):
        eps0 = leaf.pure_epsilon()
        lo, hi = math.floor(-eps0 / h), math.ceil(eps0 / h)
        idx = np.arange(lo, hi + 1)
        e = idx * h
        with np.errstate(over="ignore"):  # -expm1(e) of the unselected branch at a huge grid step
            d = np.where(e >= eps0, 0.0,
                         np.where(e >= -eps0, -np.expm1(np.minimum(e - eps0, 0.0) / 2.0), -np.expm1(e)))
        masses, inf = _connect_dots(idx, d, h)
        return lo, masses, inf
    if isinstance(leaf, (Gaussian, GDP)):
        mu = leaf.gdp_mu()
        mean = mu * mu / 2.0
        lo = math.floor((mean - _GAUSS_SD * mu) / h)
        hi = math.ceil((mean + _GAUSS_SD * mu) / h)
        idx = np.arange(lo, hi + 1)
        e = idx * h
        neg = np.minimum(e, 0.0)  # each branch sees only its own side: e^e of a grid point at
        # loss 870 (mu = 30: mean 450 + 14 sd) overflowed into a warning, and inf * 0 into a NaN
        d = np.where(e <= 0.0,
                     # for eps <= 0: delta(eps) = 1 - e^eps (1 - delta_Q(-eps)) by symmetry of the
                     # Gaussian pair; computed from the eps >= 0 curve at |eps|
                     -np.expm1(neg) + np.exp(neg) * gdp_conversion.delta_for_epsilon(mu, -neg),
                     gdp_conversion.delta_for_epsilon(mu, np.maximum(e, 0.0)))
        masses, inf = _connect_dots(idx, d, h)
        return lo, masses, inf
    raise ValueError(f"fastpld does not support {leaf!r}")


def _discounted_suffix(y: np.ndarray, h: float) -> np.ndarray:
    """S_j = sum_{l > j} y_l e^{-(l - j) h}, vectorised in blocks of at most 30/h points (the
    exponents stay within e^{+-30}, so nothing overflows or underflows harmfully)."""
    n = len(y)
    out = np.zeros(n)
    block = max(1, int(30.0 / h))
    carry = 0.0  # S at the first index of the block above, i.e. sum_{l > b1 - 1} ... seen from b1 - 1
    carry_idx = n  # index that ``carry`` refers to (n: nothing above)
    for b1 in range(n, 0, -block):
        b0 = max(0, b1 - block)
        idx = np.arange(b0, b1)
        w = y[b0:b1] * np.exp(-(idx - b0) * h)  # y_l e^{-(l - b0) h}, exponent in [-30, 0]
        after = np.concatenate((np.cumsum(w[::-1])[::-1][1:], [0.0]))  # sum over l in (j, b1)
        inner = after * np.exp((idx - b0) * h)
        # contribution of l >= b1: y_{b1} e^{-(b1-j)h} + e^{-(b1-j)h} S_{b1} = e^{-(b1 - j) h}(y_b1 + S_b1)
        if carry_idx < n:
            inner = inner + np.exp(-(b1 - idx) * h) * (y[b1] + carry)
        out[b0:b1] = inner
        carry, carry_idx = out[b0], b0
    return out


class ComposedPLD:
    """The composed pessimistic PMF of a multiset {leaf: count} on the grid h Z."""

    def __init__(self, groups: dict[LeafEvent, int], h: float, max_bins: int) -> None:
        self.h = h
        parts = [(leaf_pmf(leaf, h), n) for leaf, n in sorted(groups.items(), key=lambda kv: repr(kv[0]))]
        log_keep = 0.0
        mean = var = 0.0
        offset = 0
        width = 0
        for (lo, m, inf), n in parts:
            tot = float(m.sum())
            if inf > 0:
                log_keep += n * math.log1p(-inf)
            j = np.arange(len(m))
            mu_j = float((m * j).sum() / tot)
            mean += n * (lo + mu_j)
            var += n * float((m * (j - mu_j) ** 2).sum() / tot)
            offset += n * lo
            width = max(width, len(m))
        self.inf_mass = -math.expm1(log_keep)
        sd = math.sqrt(var)
        # window half-width: grow until the Chernoff bound on the mass above the window is small
        z = 8.0
        while True:
            half = int(math.ceil(z * sd)) + 2 * width + 16
            n_fft = sfft.next_fast_len(2 * half + width, real=True)
            if n_fft > max_bins:
                raise OverflowError(f"composed PLD needs {n_fft} grid points > max_bins={max_bins}")
            top = math.floor(mean) + half  # absolute index: window is [top - n_fft + 1, top]
            tail = self._chernoff_upper(parts, top + 1, mean, var)
            if tail <= _TAIL or z > 60:
                break
            z *= 1.4
        self.tail_bound = tail
        self.n_fft = n_fft
        self.work = sum(n for _, n in parts) + len(parts)
        spec = np.ones(n_fft // 2 + 1, dtype=complex)
        singles = [m for (lo, m, inf), n in parts if n == 1]
        for (lo, m, inf), n in parts:
            if n > 1:
                spec *= np.power(sfft.rfft(m, n_fft), n)
        # distinct single releases: pairwise linear convolutions while they are short (total work per
        # round ~ the summed support), then batched transforms of length N, 64 rows at a time
        while len(singles) > 1 and max(len(m) for m in singles) * 2 <= n_fft // 4:
            merged = []
            for i in range(0, len(singles) - 1, 2):
                a, b = singles[i], singles[i + 1]
                length = len(a) + len(b) - 1
                size = sfft.next_fast_len(length, real=True)
                merged.append(sfft.irfft(sfft.rfft(a, size) * sfft.rfft(b, size), size)[:length])
            if len(singles) % 2:
                merged.append(singles[-1])
            singles = merged
        chunk = 64
        for c0 in range(0, len(singles), chunk):
            rows = singles[c0:c0 + chunk]
            block = np.zeros((len(rows), n_fft))
            for r, m in enumerate(rows):
                block[r, :len(m)] = m
            spec *= np.prod(sfft.rfft(block, axis=1, workers=-1), axis=0)
        y = sfft.irfft(spec, n_fft)
        base = top - n_fft + 1  # absolute index of window position 0
        rel = base - offset  # relative index (sum minus the offsets) of window position 0
        y = np.roll(y, -(rel % n_fft))
        self.base = base
        self.masses = np.maximum(y, 0.0)
        self.margin = self.tail_bound + _FFT_MARGIN * math.log2(n_fft) * self.work

    @staticmethod
    def _chernoff_upper(parts, a: int, mean: float, var: float) -> float:
        """Upper bound on P(S >= a) for the (normalised) composed loss S in grid-index units:
        min over t > 0 of E[e^{t S}] e^{-t a} (Chernoff), over t = t* x {1/4, ..., 4},
        t* = (a - mean)/var the Gaussian optimum."""
        if a <= mean:
            return 1.0
        t_star = (a - mean) / max(var, 1e-300)
        ts = t_star * np.array([0.25, 0.5, 1.0, 2.0, 4.0])
        log_mgf = np.zeros(len(ts))
        for (lo, m, inf), n in parts:
            w = ts[:, None] * (np.arange(len(m)) + lo)[None, :]
            # the maximum over atoms that carry mass: at the maximising atom exp(0) = 1 times a positive
            # mass, so the sum below cannot underflow to 0 (log 0 = -inf would be a bound of 0)
            w = np.where(m[None, :] > 0, w, -np.inf)
            mx = w.max(axis=1)
            log_mgf += n * (mx + np.log((m[None, :] * np.exp(w - mx[:, None])).sum(axis=1) / m.sum()))
        best = min(0.0, float((log_mgf - ts * a).min()))
        return math.exp(best)

    # --- queries --------------------------------------------------------------------------------
    def _losses(self) -> np.ndarray:
        return (np.arange(self.n_fft) + self.base) * self.h

    def delta(self, epsilon: float) -> float:
        """Pessimistic delta at ``epsilon`` (margins included), capped at 1."""
        losses = self._losses()
        sel = losses > epsilon
        d = float((self.masses[sel] * -np.expm1(epsilon - losses[sel])).sum())
        return min(1.0, self.inf_mass + d + self.margin)

    def epsilon(self, delta: float) -> float:
        """Smallest eps with delta(eps) <= ``delta`` (exact on the affine-in-e^eps pieces, verified)."""
        target = delta - self.inf_mass - self.margin
        if not target > 0:
            return math.inf
        y, losses, em = self.masses, self._losses(), math.exp(-self.h)
        # A_j = sum_{l>j} y_l and S_j = sum_{l>j} y_l e^{-(l-j) h} = e^{-h}(y_{j+1} + S_{j+1});
        # the finite part of delta at grid loss j is A_j - S_j
        a_suffix = np.concatenate((np.cumsum(y[::-1])[::-1][1:], [0.0]))
        s = _discounted_suffix(y, self.h)
        ok = np.nonzero(a_suffix - s <= target)[0]
        if len(ok) == 0:
            return math.inf
        j = int(ok[0])
        if j == 0:
            return max(0.0, float(losses[0]))
        i = j - 1  # on (eps_i, eps_j]: finite delta = A_i - e^{eps - eps_i} S_i
        eps = float(losses[j])
        if s[i] > 0 and a_suffix[i] > target:
            eps = min(eps, max(float(losses[i]), float(losses[i]) + math.log((a_suffix[i] - target) / s[i])))
        eps = min(eps + abs(eps) * 1e-12 + 1e-15, float(losses[j]))
        step = max(abs(eps), 1e-9) * 1e-12
        while eps < float(losses[j]) and self.delta(eps) > delta:
            eps = min(eps + step, float(losses[j]))
            step *= 2.0
        return max(0.0, eps)
