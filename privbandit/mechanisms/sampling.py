"""Noise samplers: every Laplace / Gaussian draw of the toolkit goes through :class:`NoiseSampler`.

Two modes.

* **Float mode** (default): ``Generator.laplace`` / ``Generator.normal``, vectorised. Fast, but a
  float sample is not a sample of the continuous distribution: Mironov (2012), "On significance of
  the least significant bits for differential privacy" (CCS), shows that the low-order bits of
  ``statistic + float_noise`` can reveal the statistic. The certified privacy is that of the ideal
  continuous mechanism, as in every paper this toolkit implements.

* **Exact mode** (``exact=True``, opt-in, floating-point safe): the statistic is rounded to the grid
  ``GRID = 2**-20`` and integer noise is added on that grid, sampled exactly with integer
  arithmetic driven by the Generator's ``integers`` (Canonne, Kamath & Steinke 2020, "The Discrete
  Gaussian for Differential Privacy", NeurIPS; Algorithm 1 = Bernoulli(exp(-x)) for rational x,
  Algorithm 2 = discrete Laplace, Algorithm 3 = discrete Gaussian). Outputs are exact multiples of
  the grid, exactly representable in float64 while ``|value| < 2**33``.

  What exact mode certifies (sensitivity measured on the grid):

  - Discrete Laplace with integer parameter ``t = ceil(scale / GRID)`` (P(z) ~ exp(-|z|/t)) on a
    statistic whose grid values of neighbours differ by at most ``u`` grid units is exactly
    ``u / t``-DP. The mechanism reports ``Laplace(scale=t*GRID, sensitivity=u*GRID)`` to the ledger,
    i.e. eps = u*GRID / (t*GRID) -- the rounded-up scale can only lower eps.
  - ``u`` is exact (``sensitivity / GRID``) when the statistic is a sum of inputs already quantized
    to the grid (``on_grid=True``: the counting mechanisms quantize their [0, 1] inputs, so sums are
    exact and neighbours differ by at most ``2**20`` units). Otherwise the statistic is rounded to
    the nearest grid point and ``u = floor(sensitivity/GRID * (1 + 1e-12)) + 1`` (rounding can add
    one unit; the factor absorbs float error in computing the statistic).
  - Discrete Gaussian with integer ``sigma_units = ceil(sigma / GRID)`` and integer sensitivity
    ``u`` is ``u^2 / (2 sigma_units^2)``-zCDP (CKS Theorem 4): exactly the Renyi curve of the
    continuous Gaussian. The ledger records it as ``Gaussian(sigma_units*GRID, u*GRID)``; CKS show
    numerically that its (eps, delta) curve is essentially that of the continuous Gaussian, but the
    proven statement is the Renyi / zCDP one -- use an RDP accountant for a fully proven number.

  Cost: discrete Laplace is vectorised rejection sampling, about 5-20x slower than
  ``Generator.laplace``; the discrete Gaussian draws its proposals vectorised but runs its
  acceptance test in a per-sample Python loop with big integers (see docs/benchmarks.md for the
  measured cost). Both refuse scales above ``2**30`` (grid units would overflow
  int64 in the Bernoulli steps).

Test hook: ``_noise_scale_factor`` (class attribute, default 1.0) multiplies every drawn noise
value. It exists only so that tests can switch noise off (0.0) to check a mechanism's exact
arithmetic, or halve it to check that the goodness-of-fit tests notice; the ledger is always told
the declared scale, never the hooked one.
"""

from __future__ import annotations

import math

import numpy as np

from accountants._validate import shown

GRID_BITS = 20
GRID = 2.0 ** -GRID_BITS
"""Spacing of the exact-mode output grid (2**-20 ~ 9.5e-7)."""

_MAX_UNITS = 2 ** 50  # scale / GRID must stay below this (scale < 2**30)


def _as_positive_array(name: str, value) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.size and (np.any(np.isnan(arr)) or np.any(~(arr > 0)) or np.any(~np.isfinite(arr))):
        raise ValueError(f"{name} must lie in (0, inf) elementwise")
    return arr


def _bernoulli_exp_neg(rng: np.random.Generator, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for int64 arrays with 0 <= num <= den (CKS Algorithm 1).

    Loop: K = 1; draw A ~ Bernoulli(gamma / K) (exactly: integers(0, den*K) < num); stop at the
    first A = 0; the output is 1 iff the final K is odd. Vectorised over the still-running entries.
    """
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    flat_num, flat_den = num.ravel(), den.ravel()
    out = np.zeros(flat_num.size, dtype=bool)
    active = np.arange(flat_num.size)
    k = np.ones(flat_num.size, dtype=np.int64)
    while active.size:
        a = rng.integers(0, flat_den[active] * k[active]) < flat_num[active]
        done = active[~a]
        out[done] = (k[done] % 2) == 1
        active = active[a]
        k[active] += 1
    return out.reshape(num.shape)


def discrete_laplace(rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
    """Exact samples of the discrete Laplace with integer parameter ``t`` >= 1: P(z) ~ exp(-|z|/t).

    CKS Algorithm 2 with (s, t) = (1, t): U ~ Uniform{0..t-1} accepted with probability exp(-U/t),
    V ~ Geometric (P(v) ~ e^-v, exact Bernoulli(e^-1) trials), X = U + t V has P(x) ~ exp(-x/t);
    a fair sign, rejecting "negative zero". Vectorised rejection sampling.
    """
    t = np.asarray(t, dtype=np.int64)
    if t.size and (np.any(t < 1) or np.any(t > _MAX_UNITS)):
        raise ValueError(f"discrete Laplace parameter t must lie in [1, {_MAX_UNITS}]")
    shape = t.shape
    t = t.ravel()
    out = np.zeros(t.size, dtype=np.int64)
    todo = np.arange(t.size)
    while todo.size:
        tt = t[todo]
        u = rng.integers(0, tt)
        accept = _bernoulli_exp_neg(rng, u, tt)
        todo_u, tt, u = todo[accept], tt[accept], u[accept]
        v = np.zeros(todo_u.size, dtype=np.int64)
        running = np.arange(todo_u.size)
        while running.size:  # V: count successes of Bernoulli(e^-1) before the first failure
            ones = np.ones(running.size, dtype=np.int64)
            b = _bernoulli_exp_neg(rng, ones, ones)
            v[running[b]] += 1
            running = running[b]
        x = u + tt * v
        sign = rng.integers(0, 2, size=x.size)
        ok = ~((sign == 1) & (x == 0))
        out[todo_u[ok]] = np.where(sign[ok] == 1, -x[ok], x[ok])
        done = np.zeros(t.size, dtype=bool)
        done[todo_u[ok]] = True
        todo = todo[~done[todo]]
    return out.reshape(shape)


def _py_bernoulli_exp_neg_frac(rng: np.random.Generator, num: int, den: int) -> bool:
    """Exact Bernoulli(exp(-num/den)) for Python ints (any size), CKS Algorithm 1 with gamma > 1 split."""
    while num > den:  # exp(-g) = exp(-1)^floor(g) * exp(-(g - floor g))
        if not _py_bernoulli_exp_neg_frac(rng, 1, 1):
            return False
        num -= den
    k = 1
    while True:
        if _py_randbelow(rng, den * k) >= num:
            return k % 2 == 1
        k += 1


def _py_randbelow(rng: np.random.Generator, n: int) -> int:
    """Uniform integer in [0, n) for a Python int n of any size, by rejection on 62-bit chunks."""
    if n < 2 ** 62:
        return int(rng.integers(0, n))
    bits = n.bit_length()
    while True:
        x = 0
        got = 0
        while got < bits:
            x = (x << 62) | int(rng.integers(0, 2 ** 62))
            got += 62
        x >>= got - bits
        if x < n:
            return x


def discrete_gaussian(rng: np.random.Generator, sigma_units: np.ndarray) -> np.ndarray:
    """Exact samples of the discrete Gaussian N_Z(0, s^2) for integer ``s = sigma_units`` >= 1.

    CKS Algorithm 3: t = s + 1 (> s, so t = floor(s) + 1), Y ~ discrete Laplace(t), accept with
    probability exp(-(|Y| - s^2/t)^2 / (2 s^2)) = exp(-(|Y| t - s^2)^2 / (2 s^2 t^2)), evaluated
    with Python big integers (the acceptance is a per-sample loop; proposals are vectorised).
    """
    s_arr = np.asarray(sigma_units, dtype=np.int64)
    if s_arr.size and (np.any(s_arr < 1) or np.any(s_arr > _MAX_UNITS)):
        raise ValueError(f"discrete Gaussian sigma (grid units) must lie in [1, {_MAX_UNITS}]")
    flat = s_arr.ravel()
    out = np.empty(flat.size, dtype=np.int64)
    pending = np.arange(flat.size)
    while pending.size:  # proposals are drawn vectorised; only the acceptance test is per sample
        t = flat[pending] + 1
        ys = discrete_laplace(rng, t)
        accepted = np.zeros(pending.size, dtype=bool)
        for j, (s, tj, y) in enumerate(zip(flat[pending].tolist(), t.tolist(), ys.tolist())):
            num = (abs(y) * tj - s * s) ** 2
            den = 2 * s * s * tj * tj
            accepted[j] = _py_bernoulli_exp_neg_frac(rng, num, den)
        out[pending[accepted]] = ys[accepted]
        pending = pending[~accepted]
    return out.reshape(s_arr.shape)


class NoiseSampler:
    """The single source of Laplace / Gaussian noise, in float or exact (grid) mode.

    Mechanisms call :meth:`effective_scale` / :meth:`effective_sensitivity` to learn the parameters
    they must report to the ledger (identical to the requested ones in float mode), then
    :meth:`laplace_release` / :meth:`gaussian_release` to add noise to a statistic.
    """

    _noise_scale_factor: float = 1.0

    def __init__(self, rng: np.random.Generator, *, exact: bool = False) -> None:
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if not isinstance(exact, (bool, np.bool_)):
            raise ValueError(f"exact must be True or False, got {shown(exact)}")
        self.rng = rng
        self.exact = bool(exact)

    # --- parameters reported to the ledger --------------------------------------------------
    def effective_scale(self, scale):
        """The Laplace scale actually used: ``scale`` (float mode) or ceil(scale/GRID)*GRID (exact)."""
        scale = _as_positive_array("scale", scale)
        if not self.exact:
            return scale
        return np.ceil(scale / GRID) * GRID

    def effective_sigma(self, sigma):
        """The Gaussian sigma actually used (rounded up to the grid in exact mode)."""
        sigma = _as_positive_array("sigma", sigma)
        if not self.exact:
            return sigma
        return np.ceil(sigma / GRID) * GRID

    def effective_sensitivity(self, sensitivity, *, on_grid: bool = False):
        """The sensitivity certified for the released (possibly grid-rounded) statistic."""
        sensitivity = _as_positive_array("sensitivity", sensitivity)
        if not self.exact:
            return sensitivity
        if on_grid:
            return np.ceil(sensitivity / GRID) * GRID
        return (np.floor(sensitivity / GRID * (1.0 + 1e-12)) + 1.0) * GRID

    def quantize(self, values: np.ndarray) -> np.ndarray:
        """Inputs as the mechanism must store them: unchanged (float) or rounded to the grid (exact)."""
        values = np.asarray(values, dtype=float)
        return np.round(values / GRID) * GRID if self.exact else values

    # --- noise -------------------------------------------------------------------------------
    def laplace(self, scale, size=None) -> np.ndarray:
        """Noise with the Laplace law of ``scale`` (array; elementwise independent draws; or a scalar
        scale and an output ``size``).

        Exact mode: GRID * discrete Laplace with parameter ceil(scale/GRID).
        """
        if size is not None:
            if not (np.ndim(scale) == 0 and 0 < float(scale) < math.inf):
                raise ValueError(f"scale must lie in (0, inf) (a scalar when size is given), got {shown(scale)}")
            if not self.exact:
                return self.rng.laplace(0.0, float(scale), size) * self._noise_scale_factor
            scale = np.full(size, float(scale))
        scale = _as_positive_array("scale", scale)
        if self.exact:
            t = np.ceil(scale / GRID)
            if t.size and np.max(t) > _MAX_UNITS:
                raise ValueError(f"scale must lie in (0, {_MAX_UNITS * GRID:g}] in exact mode")
            noise = discrete_laplace(self.rng, t.astype(np.int64)) * GRID
        else:
            noise = self.rng.laplace(0.0, scale)
        return noise * self._noise_scale_factor

    def gaussian(self, sigma) -> np.ndarray:
        """Noise with the normal law N(0, sigma^2) (exact mode: GRID * discrete Gaussian)."""
        sigma = _as_positive_array("sigma", sigma)
        if self.exact:
            s = np.ceil(sigma / GRID)
            if s.size and np.max(s) > _MAX_UNITS:
                raise ValueError(f"sigma must lie in (0, {_MAX_UNITS * GRID:g}] in exact mode")
            noise = discrete_gaussian(self.rng, s.astype(np.int64)) * GRID
        else:
            noise = self.rng.normal(0.0, sigma)
        return noise * self._noise_scale_factor

    def laplace_release(self, statistic, scale, *, on_grid: bool = False) -> np.ndarray:
        """``statistic`` + Laplace noise; in exact mode the statistic is first rounded to the grid."""
        statistic = np.asarray(statistic, dtype=float)
        if self.exact and not on_grid:
            statistic = np.round(statistic / GRID) * GRID
        if np.ndim(scale) == 0:
            return statistic + self.laplace(scale, size=statistic.shape)
        return statistic + self.laplace(scale)

    def _sum_release(self, statistic: np.ndarray, scale, on_grid: bool = True) -> np.ndarray:
        """``laplace_release(statistic, scale, on_grid=on_grid)`` for the mechanisms' internal path:
        ``statistic`` is a float array they built (with ``on_grid``, the default, on the grid in exact
        mode, as the counting mechanisms' inputs are quantized) and ``scale`` a positive float, or a
        float array of its shape, derived from validated parameters, so there is nothing to
        re-validate. Float mode draws the same values in the same order with the same arithmetic;
        exact mode takes the public path unchanged."""
        if self.exact:
            return self.laplace_release(statistic, scale, on_grid=on_grid)
        # ``np.ndim(scale) == 0`` without its dispatch layer (a fixed ~1 us per release at one
        # replicate): an array of scales is an ndarray of ndim >= 1, anything else one scale
        if isinstance(scale, np.ndarray) and scale.ndim:
            # laplace(0, 1) * scale is laplace(0, scale) bit for bit (numpy draws 0 - s*L or 0 + s*L
            # from one uniform: -(L*s) or L*s either way) without the array-parameter call's
            # broadcasting and argument checks (~5 us at 100 scales)
            noise = self.rng.laplace(0.0, 1.0, scale.shape) * scale
        else:
            noise = self.rng.laplace(0.0, float(scale), statistic.shape)
        if self._noise_scale_factor != 1.0:  # x * 1.0 == x bit for bit: skip the multiplication
            noise = noise * self._noise_scale_factor
        return statistic + noise

    def gaussian_release(self, statistic, sigma, *, on_grid: bool = False) -> np.ndarray:
        """``statistic`` + Gaussian noise; in exact mode the statistic is first rounded to the grid."""
        statistic = np.asarray(statistic, dtype=float)
        if self.exact and not on_grid:
            statistic = np.round(statistic / GRID) * GRID
        return statistic + self.gaussian(sigma)


def laplace_tail(scale: float, gamma: float) -> float:
    """x with P(|Lap(scale)| > x) = gamma: scale * ln(1/gamma)."""
    return scale * math.log(1.0 / gamma)


def laplace_sum_bound(scales: np.ndarray, gamma: float) -> float:
    """Chan, Shi & Song (2011) Corollary 2.9: P(|sum_i Lap(b_i)| > nu sqrt(8 ln(2/gamma))) <= gamma.

    nu = max(sqrt(sum b_i^2), b_max sqrt(ln(2/gamma))). A single term uses the exact Laplace tail.
    """
    scales = np.asarray(scales, dtype=float)
    if scales.size == 0:
        return 0.0
    if scales.size == 1:
        return laplace_tail(float(scales[0]), gamma)
    log_term = math.log(2.0 / gamma)
    nu = max(math.sqrt(float(np.sum(scales ** 2))), float(np.max(scales)) * math.sqrt(log_term))
    return nu * math.sqrt(8.0 * log_term)
