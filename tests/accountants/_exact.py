"""Exact references for the accountant tests, computed independently of the package's code paths.

* GDP: Dong, Roth & Su (2022) Cor. 2.13 in mpmath at 50 digits (``gdp_delta``), and its inverse.
* Identical eps0-DP releases: Kairouz, Oh & Viswanath (2015) Thm 3.3 summed with ``scipy.stats``
  log-pmfs over +-45 standard deviations (``rr_delta``; the omitted mass is < e^-1000) -- a different
  code path from :mod:`accountants.optimal` (gammaln window plus Chernoff bounds).
* Laplace compositions of any size: a rigorous lower bound on log delta(eps)
  (``laplace_log_delta_lower``; rounded-down losses, tilted FFT composition with its float error
  subtracted).
"""

import math
from fractions import Fraction

import mpmath
import numpy as np
from scipy import fft as sfft
from scipy import stats



@mpmath.workdps(50)  # a local precision: the global mpmath context is left to each test
def gdp_delta(mu: float, eps: float) -> mpmath.mpf:
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    a = -eps / mu + mu / 2
    return mpmath.ncdf(a) - mpmath.exp(eps) * mpmath.ncdf(a - mu)


@mpmath.workdps(50)
def gdp_epsilon(mu: float, delta: float) -> float:
    """The exact eps(delta) of mu-GDP (bisection in mpmath; 1e-14 relative)."""
    lo, hi = mpmath.mpf(0), mpmath.mpf(mu) * (mpmath.mpf(mu) / 2 + 40)
    if gdp_delta(mu, 0) <= delta:
        return 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if gdp_delta(mu, mid) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo < mpmath.mpf(10) ** -16 * hi:
            break
    return float(hi)


def rr_log_delta(k: int, eps0: float, eps: float) -> float:
    """log of the exact delta(eps) of k-fold eps0-DP composition (KOV Thm 3.3)."""
    q = 1.0 / (1.0 + math.exp(eps0))
    sd = math.sqrt(k * q * (1 - q))
    jmax = math.ceil((k - eps / eps0) / 2.0) - 1
    if jmax < 0:
        return -math.inf
    lo = max(0, math.floor(min(k * q, jmax) - 45 * sd - 50))
    j = np.arange(lo, jmax + 1)
    j = j[j <= min(jmax, math.ceil(k * q + 45 * sd + 50))]
    if len(j) == 0:
        return -math.inf
    logpmf = stats.binom.logpmf(j, k, q)
    x = eps - (k - 2.0 * j) * eps0
    terms = logpmf + np.log(-np.expm1(x))
    m = terms.max()
    return float(m + math.log(math.fsum(np.exp(terms - m))))


# --- a rigorous LOWER bound on delta(eps) of a composition of Laplace releases (validity round 2) ---
# Where no exact reference exists (k = 1e2 .. 1e7, heterogeneous mixes), a certificate is checked
# against a bound that provably lies below the truth: delta(eps) = E[(1 - e^{eps - L})_+] is
# increasing in the loss L, so rounding every release's loss DOWN to a grid (a coupling) and dropping
# mass (a sub-measure) can only lower it. One Laplace release with eps0 = e0 has loss +e0 with
# probability 1/2, -e0 with e^-e0 / 2 and density e^{(l - e0)/2} / 4 on (-e0, e0). The k-fold
# composition is computed exponentially tilted at the saddle point of eps (so a delta of 1e-300 is
# the centre of the computed distribution, not its underflowed tail), by exponentiation by squaring
# with linear FFT convolutions from which a proven bound on their float error is subtracted; choose
# h so that +-e0 lie on the grid (e0 / h a power of two) or the atoms lose a grid step each.
U = 2.0 ** -52


def laplace_grid_pmf(e0: float, h: float) -> tuple[int, np.ndarray]:
    """The privacy loss of one Laplace release with eps0 = ``e0``, every loss rounded DOWN to the grid
    h Z and every mass scaled down (a sub-measure): (first grid index, masses)."""
    hi_idx = math.floor(e0 / h)
    while Fraction(hi_idx) * Fraction(h) > Fraction(e0):  # exact: the atom index times h <= e0
        hi_idx -= 1
    lo_idx = math.floor(-e0 / h)
    while Fraction(lo_idx) * Fraction(h) > -Fraction(e0):
        lo_idx -= 1
    idx = np.arange(lo_idx, hi_idx + 1)
    m = np.zeros(len(idx))
    # continuous part: density e^{(L - e0)/2}/4 on (-e0, e0); cell [jh, (j+1)h) -> j
    a = np.maximum(idx * h, -e0)
    b = np.minimum((idx + 1) * h, e0)
    ok = b > a
    # 0.5 (e^{(b-e0)/2} - e^{(a-e0)/2}) = 0.5 e^{(b-e0)/2} (1 - e^{(a-b)/2})
    m[ok] = 0.5 * np.exp((b[ok] - e0) / 2) * -np.expm1((a[ok] - b[ok]) / 2)
    m[-1] += 0.5                      # atom at +e0 (x <= 0), rounded down to floor(e0/h)
    m[0] += 0.5 * math.exp(-e0)       # atom at -e0, rounded down to floor(-e0/h)
    # a sub-measure: float cell boundaries j h are off by <= u |j| h, exp/expm1 by a few ulp
    return lo_idx, m * (1 - 8 * U * (4 + np.abs(idx)))


def _conv_lower(a, b):
    """Linear convolution of non-negative a, b by FFT, minus a bound on its float error (clamped at 0):
    entrywise <= the exact convolution (Higham 2002, Thm 24.2: ||fl(Fx) - Fx||_2 <= L eta ||Fx||_2,
    eta ~ mu + gamma_4 (sqrt2 + mu) ~ 7u, L = log2 N; through the product and the inverse
    ||dz||_inf <= ||dz||_2 <= (3 L eta + 4u) ||a||_1 ||b||_1; we subtract 64 (L + 1) u ||a||_1 ||b||_1)."""
    n = len(a) + len(b) - 1
    N = 1 << max(1, (n - 1).bit_length())
    z = sfft.irfft(sfft.rfft(a, N) * sfft.rfft(b, N), N)[:n]
    err = 64.0 * (math.log2(N) + 1) * U * float(a.sum()) * float(b.sum())
    return np.maximum(z - err, 0.0)


def _trunc(off, arr, center, half):
    lo = max(off, int(math.floor(center - half)))
    hi = min(off + len(arr) - 1, int(math.ceil(center + half)))
    if hi < lo:
        return lo, np.zeros(1)
    return lo, arr[lo - off:hi - off + 1].copy()


def _tilt(lo, m, theta):
    j = np.arange(lo, lo + len(m))
    with np.errstate(divide="ignore"):
        w = np.log(m) + theta * j
    c = float(w[m > 0].max())
    q = np.where(m > 0, np.exp(w - c), 0.0)
    s = float(q.sum())
    log_m = c + math.log(s)
    q = q / s
    mean = float((q * j).sum())
    var = float((q * (j - mean) ** 2).sum())
    r = 8 * U * (2 + abs(theta) * max(abs(lo), abs(lo + len(m))) + abs(c) + abs(math.log(s)))
    return q * (1 - 2 * r), log_m, mean, var


def _power(lo, q, n, mean, var, z):
    """q^{*n} (linear, truncated to mean*n +- z sd), entrywise <= exact."""
    res = None  # (off, arr, copies)
    base = (lo, q, 1)
    k = n
    while k:
        if k & 1:
            if res is None:
                res = base
            else:
                off = res[0] + base[0]
                arr = _conv_lower(res[1], base[1])
                c = res[2] + base[2]
                o, arr = _trunc(off, arr, c * mean, z * math.sqrt(c * var) + 2 * len(q))
                res = (o, arr, c)
        k >>= 1
        if k:
            off = 2 * base[0]
            arr = _conv_lower(base[1], base[1])
            c = 2 * base[2]
            o, arr = _trunc(off, arr, c * mean, z * math.sqrt(c * var) + 2 * len(q))
            base = (o, arr, c)
    return res[0], res[1]


def laplace_log_delta_lower(groups, eps: float, h: float, z: float = 12.0) -> float:
    """A lower bound on log delta(eps) of the composition of Laplace releases {e0: count}.

    Each release's privacy loss (atoms 1/2 at +e0 and e^-e0/2 at -e0, density e^{(L-e0)/2}/4 between)
    is rounded DOWN to the grid h Z (a coupling in which every loss only decreases: delta(eps) =
    E[(1 - e^{eps - L})_+] is increasing in L) and every mass is scaled down (a sub-measure); the
    composition is computed exponentially tilted at theta (saddle point at eps) so that tiny deltas are
    resolved, by FFT convolutions from which a proven float error bound is subtracted; mass outside
    the windows is dropped (lower)."""
    pm = [(laplace_grid_pmf(e0, h), n) for e0, n in groups]
    top = sum(n * (lo + len(m) - 1) for (lo, m), n in pm)
    if eps >= top * h:
        return -math.inf
    target = eps / h

    def tmean(t):
        return sum(n * _tilt(lo, m, t)[2] for (lo, m), n in pm)

    # the saddle point: tilted so that the composed loss is centred at eps (any theta gives a valid
    # bound; this one resolves deltas down to 1e-300 and below without underflow)
    if tmean(0.0) >= target:
        theta = 0.0
    else:
        a, b = 0.0, 1.0
        while tmean(b) < target and b < 1e6:
            a, b = b, 2 * b
        for _ in range(60):
            mid = (a + b) / 2
            if tmean(mid) < target:
                a = mid
            else:
                b = mid
        theta = a
    total_off, total, log_mgf, mgf_terms = 0, np.ones(1), 0.0, 0.0
    tot_mean = 0.0
    tot_var = 0.0
    for (lo, m), n in pm:
        q, log_m, mean, var = _tilt(lo, m, theta)
        off, arr = _power(lo, q, n, mean, var, z)
        log_mgf += n * log_m
        mgf_terms += n * (abs(log_m) + 12.0)
        tot_mean += n * mean
        tot_var += n * var
        total = _conv_lower(total, arr)
        total_off += off
        total_off, total = _trunc(total_off, total, tot_mean, z * math.sqrt(tot_var) + 10)
    s = np.arange(total_off, total_off + len(total))
    loss = s * h
    loss = loss - 2 * U * np.abs(loss)  # below the real s h despite the product's rounding
    sel = (loss > eps) & (total > 0)
    if not sel.any():
        return -math.inf
    ex = -theta * s[sel] + np.log(total[sel]) + np.log(-np.expm1(eps - loss[sel]))
    mx = float(ex.max())
    val = log_mgf + mx + math.log(float(np.exp(ex - mx).sum()))
    # rounding of the untilting exponent theta s and of the n-fold log-mgf (each log_m = c + log(sum) to a
    # few ulp of |log_m| + |log sum| <= |log_m| + 12); the tilted pmfs were scaled down for their own
    # rounding in _tilt
    slack = 64 * U * (abs(theta) * float(np.abs(s[sel]).max()) + mgf_terms + 10)
    return val - slack - 1e-9


def event_log_delta_lower(event, eps: float) -> float:
    """A lower bound on log delta(eps) of the releases in ``event`` (an accountants Event): the larger
    of its Laplace releases' rigorous bound (:func:`laplace_log_delta_lower`) and its Gaussian releases'
    exact GDP value (mu composed in mpmath). Other leaves are left out, and each part alone is a lower
    bound: a sub-composition is a post-processing of the whole, so its curve lies below. -inf if none."""
    from accountants.events import Gaussian, Laplace

    lap, mu2 = {}, mpmath.mpf(0)
    for leaf, n in event.leaves():
        if type(leaf) is Laplace:
            e0 = leaf.sensitivity / leaf.scale  # rounded: nudged down below, so the loss only shrinks
            e0 = math.nextafter(e0, 0.0)
            lap[e0] = lap.get(e0, 0) + n
        elif type(leaf) is Gaussian:
            mu2 += n * (mpmath.mpf(leaf.sensitivity) / mpmath.mpf(leaf.sigma)) ** 2
    best = -math.inf
    if mu2 > 0:
        d = gdp_delta(mpmath.sqrt(mu2), eps)
        if d > 0:
            best = float(mpmath.log(d))
    if lap:
        groups = sorted(lap.items())
        spread = math.sqrt(sum(n * e0 * e0 for e0, n in groups))
        e0min = groups[0][0]
        h = e0min / 2.0 ** max(5, math.ceil(math.log2(e0min * 5e3 / spread)))
        best = max(best, laplace_log_delta_lower(groups, eps, h))
    return best
