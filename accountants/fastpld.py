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
  the float masses are built from upward-rounded suffix sums, so the float PMF is stochastically larger
  than that exact one (``_connect_dots``; the two-point and discrete Laplace masses rounded up too);
* all groups are composed with ONE real FFT of length N: the transforms of the group PMFs are
  raised to their counts (self-composition by powering, O(1) transforms per group, any count) and
  multiplied, then inverted once;
* the FFT is circular: a window of N grid points is placed around the composed mean, and the mass
  outside it (bounded above by Chernoff, optimised over a grid of exponents) wraps around. Mass from
  above the window wrapping to its bottom can only lower delta, by at most that bound, which is added
  to delta; mass from below wrapping to the top only raises it (safe);
* negative rounding noise in the inverse transform is clipped to zero (raises delta), and a bound on
  the whole floating-point error of the composition, computed a posteriori from the spectra in hand,
  is added to delta (:class:`_ProductBound`, :func:`_l1_error`; proven under the error model stated at ``_ETA``).

epsilon(delta) solves the affine-in-e^eps piece exactly between grid points and verifies the answer.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from accountants import gdp_conversion
from accountants.events import GDP, ApproxDP, DiscreteLaplace, Gaussian, Laplace, LeafEvent, PureDP

_U = 2.0 ** -52
# Error model of scipy's pocketfft (the only assumption of the rounding bound; docs/accountants.md,
# "Session 10"): a transform of length N whose factorisation has log2 N radix-2-equivalent levels
# is computed with, for every input x,
#   (componentwise) |fl(F x)_k - (F x)_k| <= alpha_N ||x||_1 for every k, and
#   (normwise)      ||fl(F^-1 z) - F^-1 z||_2 <= alpha_N ||F^-1 z||_2,
# alpha_N = L eta / (1 - L eta), L = log2 N + 2 (the +2: the real-data packing and the 1/N scaling).
# For radix 2 this is Higham (2002), "Accuracy and Stability of Numerical Algorithms", Thm 24.2
# (normwise; the componentwise form follows from the same per-stage induction with |partial sums| <=
# ||x||_1) with eta = mu + gamma_4 (sqrt 2 + mu) = 6.7 u for twiddles accurate to mu = u (pocketfft's
# are: measured <= 0.98 u, lengths 120..4096). Its radix-3/4/5 butterflies cost at most ~10 u per
# log2 level by the same count; eta = 16 u per level is taken (>= 1.6x every count).
_ETA = 16.0 * _U
# complex multiplication: |fl(a b) - a b| <= sqrt 2 gamma_2 |a b| (Higham Lemma 3.5)
_MUL = math.sqrt(2.0) * 2.0 * _U / (1.0 - 2.0 * _U)
# np.power(z, n) (binary powering for |n| < 100, else cexp(n clog z)): relative error at most
# _POW (n (|ln|z|| + |arg z|) + 1) -- log and arg to 2 ulp, the product n log z and cexp to 2 ulp more,
# doubled
_POW = 8.0 * _U
_SLACK = 1.01  # the bound's own float evaluation (sums of <= 2^22 positive terms, logs, exps): < 1e-6
_GAUSS_SD = 14.0  # Gaussian leaves: grid from the mean -+ 14 sd (tail beyond: at +inf, ~1e-44)
_TAIL = 1e-22  # target wrap-around mass (its Chernoff bound is added to delta)


def supports(leaf: LeafEvent) -> bool:
    return type(leaf) in (Laplace, Gaussian, GDP, PureDP, ApproxDP, DiscreteLaplace)


def _connect_dots(d_hi: np.ndarray, d_lo: np.ndarray, h: float) -> tuple[np.ndarray, float]:
    """Connect-the-dots masses on consecutive grid points (uniform step h) from an upper bound ``d_hi`` and
    a lower bound ``d_lo`` on the exact hockey-stick values d there; returns (masses, mass at +infinity).

    Doroshenko et al. 2022, Alg. 1: mass_1 = 1 - d_1 + (d_2 - d_1)/(e^h - 1), mass_i = (d_i - d_{i-1})/
    (e^{-h} - 1) + (d_{i+1} - d_i)/(e^h - 1), mass_n = (d_n - d_{n-1})/(e^{-h} - 1), mass_inf = d_n.
    Summed from the top, the finite masses at or above point i >= 2 are
        F_i = (d_{i-1} - d_n) + b (d_{i-1} - d_i),   b = 1/(e^h - 1),
    (F_1 = 1 - d_n), a sum of two non-negative terms: no cancellation, unlike the masses themselves,
    which are differences of terms ~|slope|/h (their float noise, ~10 u/h per leaf, was the engine's last
    unproven arithmetic until session 13). F_i is increasing in d_{i-1} and decreasing in d_i and d_n,
    so it is bounded above from d_hi and d_lo; each float operation is then rounded up (all terms are
    non-negative: relative error <= 3 u/2, taken as 4 u), the bound made non-increasing (a running max
    from the top), and the masses formed as F_i - F_{i+1} one ulp up (above the exact difference of the
    two floats). So the float masses' own suffix sums are >= the exact connect-the-dots ones at every
    point: the float PMF is stochastically larger than the exact one, and the mass at +infinity d_hi[-1]
    >= d_n. Composed, delta = (1 - prod (1 - inf_i)^n_i) + E[(1 - e^{eps - S})_+; all finite] can only
    grow in each (the weight is non-decreasing in every summand), so the exact composition of the
    exact connect-the-dots PMFs -- a dominating pair (Thm 4) -- is below it, with no allowance.
    """
    hi = np.minimum.accumulate(np.clip(d_hi, 0.0, 1.0))  # still >= d: the exact curve is non-increasing
    lo = np.minimum(np.maximum.accumulate(np.clip(d_lo, 0.0, 1.0)[::-1])[::-1], hi)  # still <= d
    b = (1.0 / math.expm1(h)) * (1.0 + 8.0 * _U)  # expm1 within 2 ulp, the division half an ulp
    up = 1.0 + 4.0 * _U
    n = len(hi)
    f = np.empty(n + 1)
    f[0] = np.nextafter(1.0 - lo[-1], np.inf)
    f[1:n] = np.nextafter(((hi[:-1] - lo[-1]) + b * (hi[:-1] - lo[1:])) * up, np.inf)  # (+ a subnormal's
    # ulp: the relative bounds above do not hold for results below 2^-1022)
    f[n] = 0.0
    f = np.maximum.accumulate(f[::-1])[::-1]
    diff = f[:-1] - f[1:]  # >= 0; rounded to nearest, so one ulp up is >= the exact difference
    masses = np.where(diff > 0.0, np.nextafter(diff, np.inf), 0.0)
    return masses, float(hi[-1])


def _up(x: np.ndarray, ulps: float) -> np.ndarray:
    """x (>= 0, computed within ``ulps`` ulp of a value) raised above that value."""
    return np.where(x > 0.0, np.nextafter(x * (1.0 + 2.0 * ulps * _U), np.inf), 0.0)  # an exact 0 stays


def _down(x: np.ndarray, ulps: float) -> np.ndarray:
    """x (>= 0, computed within ``ulps`` ulp of a value) lowered below that value (never below 0)."""
    return np.maximum(np.nextafter(x * (1.0 - 2.0 * ulps * _U), -np.inf), 0.0)


def _grid_below(idx: np.ndarray, h: float) -> np.ndarray:
    """Float points at or below the real grid points idx h (session 12).

    fl(j h) is within half an ulp of j h but on either side; a hockey-stick curve evaluated above j h
    is below its value there (it is non-increasing), so the connect-the-dots values would not dominate.
    One ulp down from the correctly rounded product is at or below j h for every j (also across a
    power of two, where the ulp below is the smaller one), so every curve value is at least the real
    one. Cost: the curve is read u |j h| early (a delta ~1e-16 relative higher)."""
    return np.nextafter(idx * h, -np.inf)


def _grid_above(idx: np.ndarray, h: float) -> np.ndarray:
    """Float points at or above the real grid points idx h: the query's losses (the weight
    1 - e^{eps - loss} increases with the loss, so a loss read high can only raise delta)."""
    return np.nextafter(idx * h, np.inf)


def leaf_pmf(leaf: LeafEvent, h: float) -> tuple[int, np.ndarray, float]:
    """(first grid index, masses, mass at +infinity) of one release's pessimistic PMF on h Z."""
    if isinstance(leaf, (PureDP, ApproxDP)):
        # an (eps0, delta0) release: the tight pair of Kairouz, Oh & Viswanath 2015 (Thm 3.3's proof) --
        # loss +infinity w.p. delta0, else randomized response (+-eps0 w.p. (1 - delta0) p, (1 - delta0) q);
        # PureDP is delta0 = 0
        eps0 = leaf.epsilon
        keep = 1.0 - leaf.delta if isinstance(leaf, ApproxDP) else 1.0
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
        # each mass rounded up (exp 1 ulp, the sum, division, keep = 1 - delta0 and the product half an ulp
        # each: within 4 ulp; session 13): at or above each atom the float PMF holds at least the exact
        # mass, as ``_connect_dots`` guarantees for curves (fl(p keep) was below in 107 of 171 leaves tried)
        masses[0] += float(_up(np.float64(q * keep), 4.0))
        masses[-1] += float(_up(np.float64(p * keep), 4.0))
        return lo, masses, (leaf.delta if isinstance(leaf, ApproxDP) else 0.0)
    if isinstance(leaf, DiscreteLaplace):
        # P(z) ~ r^|z| (r = e^{-1/t}) against the shift by u: the loss is u/t for z <= 0 (mass 1/(1+r)),
        # -u/t for z >= u (mass r^u/(1+r)) and (u - 2z)/t at 0 < z < u (mass c r^z, c = (1-r)/(1+r)) --
        # u + 1 atoms, no discretisation of a curve. Each atom goes to the grid point at or above its
        # loss, computed exactly (Fraction): delta(eps) is increasing in every loss, so rounding losses up
        # can only raise the composed delta
        t, u = leaf.t, leaf.u
        log_r = -1.0 / t
        r = math.exp(log_r)
        z = np.arange(u + 1)
        masses_z = -math.expm1(log_r) / (1.0 + r) * np.exp(z * log_r)
        masses_z[0] = 1.0 / (1.0 + r)
        masses_z[-1] = math.exp(u * log_r) / (1.0 + r)
        # rounded up (session 13): log_r = fl(-1/t) is within half an ulp, which r^z = e^{z log_r} amplifies
        # by z |log_r|; expm1, exp, the sum, division and product within 8 ulp more
        masses_z = _up(masses_z, z * abs(log_r) + 8.0)
        h_exact = Fraction(h)
        idx = [-((-Fraction(u - 2 * int(k), t)) // h_exact) for k in z]  # ceil((u - 2z)/t / h), exact
        lo = int(min(idx))
        masses = np.zeros(int(max(idx)) - lo + 1)
        pos = np.asarray(idx, dtype=np.int64) - lo
        np.add.at(masses, pos, masses_z)
        # atoms sharing a grid point are summed: half an ulp per addition, rounded up too
        return lo, _up(masses, np.bincount(pos, minlength=len(masses)).astype(float)), 0.0
    if isinstance(leaf, Laplace):
        eps0 = leaf.pure_epsilon()
        lo, hi = math.floor(-eps0 / h), math.ceil(eps0 / h)
        idx = np.arange(lo, hi + 1)

        def curve(e: np.ndarray, direction: float) -> np.ndarray:
            # the argument e - eps0 rounded towards ``direction`` of its exact value (the curve falls
            # in it), expm1 within 1 ulp: evaluated with 2
            arg = np.nextafter(np.minimum(e - eps0, 0.0), direction)
            with np.errstate(over="ignore"):  # -expm1(e) of the unselected branch at a huge grid step
                d = np.where(e >= eps0, 0.0,
                             np.where(e >= -eps0, -np.expm1(np.minimum(arg, 0.0) / 2.0), -np.expm1(e)))
            return _up(d, 2.0) if direction < 0 else _down(d, 2.0)

        # upper values at points at or below j h, lower values at points at or above it (the curve is
        # non-increasing): both sides of the exact d(j h), which the masses need (``_connect_dots``)
        masses, inf = _connect_dots(curve(_grid_below(idx, h), -np.inf), curve(_grid_above(idx, h), np.inf), h)
        return lo, masses, inf
    if isinstance(leaf, (Gaussian, GDP)):
        mu = leaf.gdp_mu()
        mean = mu * mu / 2.0
        lo = math.floor((mean - _GAUSS_SD * mu) / h)
        hi = math.ceil((mean + _GAUSS_SD * mu) / h)
        idx = np.arange(lo, hi + 1)

        def curve(e: np.ndarray, side: int) -> np.ndarray:
            # side 1: an upper bound on the exact curve at e, side 0: a lower bound
            neg = np.minimum(e, 0.0)  # each branch sees only its own side: e^e of a grid point at
            # loss 870 (mu = 30: mean 450 + 14 sd) overflowed into a warning, and inf * 0 into a NaN
            bounds = gdp_conversion.delta_bounds_for_epsilon(mu, np.abs(e))
            # for eps <= 0: delta(eps) = 1 - e^eps (1 - delta_Q(-eps)) by symmetry of the Gaussian pair,
            # computed from the eps >= 0 curve at |eps|: two non-negative terms (expm1, exp within 1 ulp,
            # the product and the sum half an ulp each: within 4 ulp)
            d_neg = -np.expm1(neg) + np.exp(neg) * bounds[side]
            d = np.where(e <= 0.0, d_neg, bounds[side])
            return _up(d, 4.0) if side else _down(d, 4.0)

        masses, inf = _connect_dots(curve(_grid_below(idx, h), 1), curve(_grid_above(idx, h), 0), h)
        return lo, masses, inf
    raise ValueError(f"fastpld does not support {leaf!r}")


def _alpha(n: int) -> float:
    """alpha_N of the FFT error model (see ``_ETA``) for a transform of length ``n``."""
    x = (math.log2(n) + 2.0) * _ETA
    return x / (1.0 - x)


def _norm2(spec: np.ndarray) -> float:
    """An upper bound on the 2-norm of the full (Hermitian) spectrum whose half ``spec`` is."""
    # (not np.dot / np.vdot: OpenBLAS took 12-16 ms for this 225,000-term sum on the loaded machine, 0.4 ms)
    flat = np.ascontiguousarray(spec).view(np.float64)  # real and imaginary parts side by side
    return math.sqrt(2.0 * float((flat * flat).sum()))


class _ProductBound:
    """Per-frequency bounds for a computed product of spectra prod_i fl(F x_i)^{n_i}.

    Each factor comes with its computed half spectrum P^_i and a componentwise bound e_i on its error
    (|P^_ik - P_ik| <= e_i, P_i the exact transform of the exact x_i). With a_ik = |P^_ik| + e_i, which
    bounds both |P_ik| and |P^_ik|, the mean value bound |x^n - y^n| <= n |x - y| max(|x|, |y|)^(n-1)
    telescoped over the factors gives |prod P^^n - prod P^n| <= A_k T_k with A_k = prod a_ik^{n_i},
    T_k = sum n_i e_i / a_ik; the powers add a relative error tau_k and the products rho (see
    ``_POW`` / ``_MUL``), each on at most e^tau_k A_k. Hence |computed - exact|_k <= :meth:`error`.
    Terms below e^-800 are not evaluated (they are 0 in doubles; :func:`_l1_error` adds 1e-300 for
    all of them together).
    """

    def __init__(self, size: int) -> None:
        self.log_a = np.zeros(size)
        self.t = np.zeros(size)
        self.tau = np.zeros(size)
        self.mults = 0

    def add(self, spec: np.ndarray, e, n: int = 1) -> None:
        """One factor (n > 1: raised to the n-th power by np.power) or a block of rows of factors
        (``spec`` 2-D, ``e`` one bound per row, n = 1)."""
        mag = np.abs(spec)
        if spec.ndim == 2:
            e = np.maximum(np.asarray(e, dtype=float), 1e-300)[:, None]  # a > 0, e / a <= 1
            a = mag + e
            # log of the product, clamped upward at 1e-300 (an underflowed product stays finite)
            self.log_a += np.log(np.maximum(np.prod(a, axis=0), 1e-300))
            self.t += (e / a).sum(axis=0)
            self.mults += spec.shape[0]
            return
        e = max(float(e), 1e-300)
        a = mag + e
        log_a = np.log(a)
        self.log_a += n * log_a
        self.t += n * (e / a)
        self.mults += 1
        if n > 1:
            # tau only where the power can matter: elsewhere |P^|^n e^tau <= e^{-800 (1 - _POW) + _POW
            # (n pi + 1)} < e^-750 while n < 5e14 (beyond: everywhere)
            idx = np.flatnonzero(n * log_a > -800.0) if n < 5e14 else np.arange(len(mag))
            m_sel = mag[idx]
            with np.errstate(divide="ignore"):
                log_mag = np.log(m_sel)
            # a zero entry is powered to exactly 0: its true value is within the A T term
            self.tau[idx] += np.where(m_sel > 0,
                                      _POW * (n * (np.abs(log_mag) + np.abs(np.angle(spec[idx]))) + 1.0), 0.0)

    def error(self) -> np.ndarray:
        """Componentwise bound on |computed product - exact product| at the frequencies where it is
        at least e^-800 (the others: 0)."""
        rho = math.expm1((self.mults + 1) * math.log1p(_MUL))
        x = self.log_a + self.tau
        idx = np.flatnonzero(x > -800.0)
        la, tau = self.log_a[idx], self.tau[idx]
        return np.exp(la) * self.t[idx] + np.exp(la + tau) * (tau + rho)


def _l1_error(d_q: np.ndarray, spec: np.ndarray, n_fft: int) -> float:
    """Bound on ||fl(irfft(spec)) - exact inverse of the exact product||_1 over the n_fft outputs,
    given componentwise bounds ``d_q`` on the half spectrum's error (where they are not negligible).

    ||dy||_1 <= sqrt(N) ||dy||_2 (Cauchy-Schwarz); the product's error contributes ||dQ||_2 / sqrt(N)
    to ||dy||_2 (Parseval) and the inverse transform at most alpha_N ||spec||_2 / sqrt(N) (normwise
    model; irfft's projection onto Hermitian spectra cannot move spec away from the exact, Hermitian,
    product). Hence ||dy||_1 <= ||dQ||_2 + alpha_N ||spec||_2 (+ 1e-300 for the terms not evaluated).
    """
    return _SLACK * (math.sqrt(2.0 * float((d_q * d_q).sum())) + _alpha(n_fft) * _norm2(spec)) + 1e-300


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
        from scipy import fft as sfft  # (on first use, like scipy.optimize: accountants/rdp.py)

        self.h = h
        leaves = sorted(groups.items(), key=lambda kv: repr(kv[0]))
        parts = [(leaf_pmf(leaf, h), n) for leaf, n in leaves]
        log_keep_terms = []
        mean = var = 0.0
        offset = 0
        width = 0
        for (lo, m, inf), n in parts:
            tot = float(m.sum())
            if inf > 0:
                log_keep_terms.append(n * math.log1p(-inf))
            j = np.arange(len(m))
            mu_j = float((m * j).sum() / tot)
            mean += n * (lo + mu_j)
            var += n * float((m * (j - mu_j) ** 2).sum() / tot)
            offset += n * lo
            width = max(width, len(m))
        # mass at +infinity, 1 - prod (1 - inf_i)^n_i, rounded up: each term n log1p(-inf) is within 1.5 u
        # (all of one sign), fsum adds 0.5 u, expm1 1 u -- an (eps0, delta0) release puts delta0 there, so
        # this is no longer a Gaussian's 1e-44 tail but up to the whole answer
        log_keep = math.fsum(log_keep_terms) * (1.0 + 4.0 * _U)
        self.inf_mass = min(1.0, -math.expm1(log_keep) * (1.0 + 2.0 * _U))
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
        # the Chernoff bound is for the normalised leaves; the connect-the-dots masses are rounded up
        # (``_connect_dots``), so a leaf's finite mass can exceed 1 - inf by a few ulps per point: the
        # mass above the window is at most prod (total mass)^n times the bound (each sum within n u)
        log_total = sum(n * math.log(float(m.sum()) * (1.0 + len(m) * _U)) for (lo, m, inf), n in parts)
        self.tail_bound = tail * math.exp(max(0.0, log_total)) * (1.0 + 4.0 * _U)
        self.n_fft = n_fft
        self.work = sum(n for _, n in parts) + len(parts)
        alpha = _alpha(n_fft)
        spec = np.ones(n_fft // 2 + 1, dtype=complex)
        bound = _ProductBound(len(spec))
        # (array, bound on its l1 distance from the exact array): leaf PMFs are taken as exact
        singles = [(m, 0.0) for (lo, m, inf), n in parts if n == 1]
        for (lo, m, inf), n in parts:
            if n > 1:
                p = sfft.rfft(m, n_fft)
                bound.add(p, alpha * float(m.sum()), n)
                spec *= np.power(p, n)
        # distinct single releases: pairwise linear convolutions while they are short (total work per
        # round ~ the summed support), then batched transforms of length N, 64 rows at a time; each
        # merged array carries a bound on its l1 distance from the exact convolution: its own rounding
        # (``_l1_error`` at its length, inputs taken as exact) plus its inputs' errors carried by
        # Young's inequality ||a * b - a^ * b^||_1 <= ||a - a^||_1 ||b^||_1 + ||a||_1 ||b - b^||_1
        while len(singles) > 1 and max(len(m) for m, _ in singles) * 2 <= n_fft // 4:
            merged = []
            for i in range(0, len(singles) - 1, 2):
                (a, err_a), (b, err_b) = singles[i], singles[i + 1]
                length = len(a) + len(b) - 1
                size = sfft.next_fast_len(length, real=True)
                fa, fb = sfft.rfft(a, size), sfft.rfft(b, size)
                norm_a, norm_b = float(np.abs(a).sum()), float(np.abs(b).sum())
                e_a, e_b = _alpha(size) * norm_a, _alpha(size) * norm_b
                mag_a, mag_b = np.abs(fa), np.abs(fb)
                prod = fa * fb
                # |A^ B^ - A B| <= e_a |B^| + (|A^| + e_a) e_b, plus the product's own rounding
                d_q = e_a * (mag_b + e_b) + e_b * mag_a + 2.0 * _MUL * (mag_a * mag_b)
                err = _l1_error(d_q, prod, size) + _SLACK * (err_a * norm_b + (norm_a + err_a) * err_b)
                merged.append((sfft.irfft(prod, size)[:length], err))
            if len(singles) % 2:
                merged.append(singles[-1])
            singles = merged
        chunk = 64
        # the merged rows' own errors, carried to the composition by Young's inequality (telescoped:
        # sum_i err_i prod_{j != i} (||m^_j||_1 + err_j), the groups' factors included)
        log_norms, carried = 0.0, 0.0
        for (lo, m, inf), n in parts:
            if n > 1:
                log_norms += n * math.log(float(m.sum()))
        for c0 in range(0, len(singles), chunk):
            rows = singles[c0:c0 + chunk]
            block = np.zeros((len(rows), n_fft))
            for r, (m, _) in enumerate(rows):
                block[r, :len(m)] = m
            norms = np.abs(block).sum(axis=1)
            errs = np.array([err for _, err in rows])
            log_norms += float(np.log(norms + errs).sum())
            carried += float((errs / (norms + errs)).sum())
            rows_spec = sfft.rfft(block, axis=1, workers=-1)
            bound.add(rows_spec, alpha * norms)
            spec *= np.prod(rows_spec, axis=0)
        #: proven bound on the l1 error of the composed grid PMF (hence on the delta it under-states)
        self.rounding_bound = _l1_error(bound.error(), spec, n_fft) + _SLACK * carried * math.exp(log_norms)
        y = sfft.irfft(spec, n_fft)
        base = top - n_fft + 1  # absolute index of window position 0
        rel = base - offset  # relative index (sum minus the offsets) of window position 0
        y = np.roll(y, -(rel % n_fft))
        self.base = base
        self.masses = np.maximum(y, 0.0)
        #: bound on the delta lost where a two-point leaf's atom sits BELOW its real loss: the aligned grid
        #: puts -eps0 at -m h < -eps0 (m h is eps0 (1 + 4u)); uniform scaling of every loss is harmless
        #: alone, but in a mix the shift lowers the sum S. delta(eps) = E[(1 - e^{eps - S})_+] is 1-Lipschitz
        #: in S, so the loss is at most E[downward shift] = sum n (mass x excess) over such atoms (exact)
        self.atom_bound = self._atom_bound(leaves, parts, h)
        self.margin = self.tail_bound + self.rounding_bound + self.atom_bound
        # the sums in ``delta`` have non-negative terms, each within 3 u: numpy's pairwise summation
        # (blocks of 128 with 8 accumulators, then halving) is within gamma_{log2 N + 21} relative
        self.sum_factor = 1.0 + 2.0 * _U * (math.log2(n_fft) + 24.0)

    @staticmethod
    def _atom_bound(leaves, parts, h: float) -> float:
        """sum over PureDP / ApproxDP groups of n x (mass x how far each atom lies below its loss), rounded up
        (session 11; exact in Fractions: the grid point lo h against the real -eps0, hi h against eps0)."""
        total = Fraction(0)
        for (leaf, n), ((lo, m, _), _) in zip(leaves, parts):
            if not isinstance(leaf, (PureDP, ApproxDP)):
                continue
            eps0, hh = Fraction(leaf.epsilon), Fraction(h)
            below_lo = -eps0 - lo * hh  # > 0: the atom at lo h lies below -eps0
            below_hi = eps0 - (lo + len(m) - 1) * hh
            total += n * (max(below_lo, 0) * Fraction(float(m[0])) + max(below_hi, 0) * Fraction(float(m[-1])))
        return float(total) * (1.0 + 2.0 * _U) if total else 0.0

    @staticmethod
    def _chernoff_upper(parts, a: int, mean: float, var: float) -> float:
        """Upper bound on P(S >= a) for the (normalised) composed loss S in grid-index units:
        min over t > 0 of E[e^{t S}] e^{-t a} (Chernoff), over t = t* x {1/4, ..., 4},
        t* = (a - mean)/var the Gaussian optimum, and, where t* > 1, log1p(t*) x {1/4, ..., 4}: a leaf with
        a tiny mass above its mean (GDP mu 1e-300: var ~ 1e-277 grid units^2) has t* ~ 1e300, where the
        Gaussian candidates overflow; the binomial optimum is near log(t*).

        Session 15: the answer is explicit at the extremes. It is 0 only where it is truly 0 -- ``a`` above
        the largest sum carrying mass (each leaf's highest atom with mass, n times, counted in integers).
        Otherwise a candidate t whose exponent left the floats (inf, or nan from inf - inf: it read as a
        bound of 1 through Python's min(0.0, nan), valid only by accident; or -inf from t a overflowing
        alone) gives no bound and is dropped, without a RuntimeWarning; and a bound whose exp underflows is
        the least subnormal, never 0 (the truth is positive there)."""
        if a <= mean:
            return 1.0
        if all((m > 0).any() for (lo, m, inf), n in parts):
            reach = sum(n * (lo + int(np.flatnonzero(m > 0)[-1])) for (lo, m, inf), n in parts)
            if a > reach:  # no atom combination reaches a: P(S >= a) = 0 exactly
                return 0.0
        t_star = (a - mean) / max(var, 1e-300)
        grid = np.array([0.25, 0.5, 1.0, 2.0, 4.0])
        ts = t_star * grid if not t_star > 1.0 else np.concatenate((t_star * grid, math.log1p(t_star) * grid))
        ts = ts[np.isfinite(ts) & (ts > 0)]
        log_mgf = np.zeros(len(ts))
        with np.errstate(over="ignore", invalid="ignore"):  # the non-finite exponents are dropped below
            for (lo, m, inf), n in parts:
                w = ts[:, None] * (np.arange(len(m)) + lo)[None, :]
                # the maximum over atoms that carry mass: at the maximising atom exp(0) = 1 times a positive
                # mass, so the sum below cannot underflow to 0 (log 0 = -inf would be a bound of 0)
                w = np.where(m[None, :] > 0, w, -np.inf)
                mx = w.max(axis=1)
                log_mgf += n * (mx + np.log((m[None, :] * np.exp(w - mx[:, None])).sum(axis=1) / m.sum()))
            exponents = log_mgf - ts * a
        exponents = exponents[np.isfinite(exponents)]
        if not len(exponents):
            return 1.0
        return max(math.exp(min(0.0, float(exponents.min()))), math.ulp(0.0))

    # --- queries --------------------------------------------------------------------------------
    def _losses(self) -> np.ndarray:
        # at or above the real grid losses (session 12: fl(j h) could lie u |j h| below them); computed once and
        # kept read-only: epsilon() and every delta() of its verified walk read them (~1-3 ms each at the 2e5 points
        # of Private-UCB's last checkpoint; session 16)
        losses = self.__dict__.get("_loss_grid")
        if losses is None:
            losses = self._loss_grid = _grid_above(np.arange(self.n_fft) + self.base, self.h)
            losses.setflags(write=False)
        return losses

    def delta(self, epsilon: float) -> float:
        """Pessimistic delta at ``epsilon`` (margins included), capped at 1."""
        # every grid point weighed (0 at or below epsilon), not only those above it: the pairwise sum's
        # tree then does not change with epsilon, and each term is non-increasing in it, so the sum is
        # (session 13: the selection re-shaped the tree, delta rose with eps by an ulp, 1 in ~124 points)
        w = -np.expm1(np.minimum(epsilon - self._losses(), 0.0))
        d = float((self.masses * w).sum()) * self.sum_factor
        return min(1.0, (self.inf_mass + d + self.margin) * (1.0 + 4.0 * _U))

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
        eps = max(0.0, float(losses[j]))
        if j > 0:
            i = j - 1  # on (eps_i, eps_j]: finite delta = A_i - e^{eps - eps_i} S_i
            if s[i] > 0 and a_suffix[i] > target:
                eps = min(eps, max(float(losses[i]), float(losses[i]) + math.log((a_suffix[i] - target) / s[i])))
            eps = min(eps + abs(eps) * 1e-12 + 1e-15, float(losses[j]))
            step = max(abs(eps), 1e-9) * 1e-12
            while eps < float(losses[j]):
                if self.delta(eps) <= delta:
                    return max(0.0, eps)  # verified inside the grid step
                eps = min(eps + step, float(losses[j]))
                step *= 2.0
        # :meth:`delta` decides: the grid point selected above by cumulative sums can lie 1e-14 relative
        # above the target there (Laplace(10) * 100: 108 of 400 constructed targets on 4a5d28b)
        while self.delta(eps) > delta:
            j += 1
            if j >= len(losses):
                return math.inf
            eps = max(eps, float(losses[j]))
        return max(0.0, eps)
