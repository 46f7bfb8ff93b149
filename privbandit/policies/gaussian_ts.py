"""Gaussian-prior Thompson sampling, which is differentially private as it is.

Ou, Cummings & Avella Medina, "Thompson Sampling Itself is Differentially Private" (arXiv
2407.14879): Algorithm 1 is Agrawal & Goyal's (2017) Gaussian-prior TS, theta_i ~ N(S_i/(k_i+1),
1/(k_i+1)); Algorithm 2 ("Modified TS") pre-pulls every arm ``b`` times and multiplies the sampling
variance by ``c``. Restored formulas: shared ALGORITHMS.md 5.1-5.2.

Privacy (Lemmas 3-5, per record): a reward enters only its own arm's mean; each round that arm's
draw is a Gaussian release with sensitivity 1/(k+1) and sigma sqrt(c/(k+1)), i.e. 1/sqrt(c(k+1))-GDP,
and k >= max(b, 1) whenever the arm holds a record. The argmax is post-processing, and the
pre-pull rounds release nothing. So after t rounds the worst record has been in at most

* t - K b releases when b >= 1 (only rounds after the pre-pull phase release), and
* t - 1 releases when b = 0 (a record observed in round h is first released in round h + 1),

each at most 1/sqrt(c (max(b, 1) + 1))-GDP: mu(t) = sqrt(n(t) / (c (max(b, 1) + 1))). The paper's
claim charges all T rounds, mu = sqrt(T / (c (b + 1))) (with b = 0 read as b = 1, its Remark 2); ours
is never larger and is attained by a record whose arm is never pulled again.
"""

from __future__ import annotations

import math

import numpy as np

from accountants._validate import NOT_NUMBERS, shown
from accountants import Gaussian, _validate, gdp_conversion
from accountants.events import NO_EVENT
from privbandit.mechanisms.posterior import GaussianPosteriorRelease
from privbandit.policies._ts_kernels import add_pulled, pulled_arrays, row_argmax
from privbandit.policies.base import Policy, PolicyRun, check_arms
from privbandit.schedule import PrivacySchedule


class GaussianTSSchedule(PrivacySchedule):
    """n(t) Gaussian releases of 1/sqrt(c (max(b,1)+1))-GDP each (see the module docstring)."""

    def __init__(self, b: int, c: float, n_arms: int):
        self.b, self.c, self.n_arms = b, c, n_arms
        self.k_min = max(b, 1)

    def releases(self, rounds: int) -> int:
        if self.b == 0:
            return max(0, rounds - 1)
        return max(0, rounds - self.n_arms * self.b)

    def events(self, rounds):
        n = self.releases(rounds)
        if n == 0:
            return NO_EVENT
        denom = self.k_min + 1.0
        return Gaussian(sigma=math.sqrt(self.c / denom), sensitivity=1.0 / denom) * n

    def mu(self, rounds: int) -> float:
        return math.sqrt(self.releases(rounds) / (self.c * (self.k_min + 1)))


class _GaussianTSRun(PolicyRun):
    def __init__(self, policy, n_arms, replicates, horizon, rng, ledger):
        self.b, self.n_arms = policy.b, n_arms
        self.sums = np.zeros((replicates, n_arms))
        self.counts = np.zeros((replicates, n_arms))
        releasing_rounds = max(1, horizon - n_arms * policy.b)
        # normals drawn for up to 256 rounds at once, but at most ~2^16 of them (512 kB: a block stays
        # in cache until it is used); the blocks cut one stream of normals, so this changes no draw
        block = min(256, releasing_rounds, max(1, 2**16 // (replicates * n_arms)))
        self.posterior = GaussianPosteriorRelease(replicates, n_arms, c=policy.c, rng=rng, ledger=ledger,
                                                  block=block)

    def select(self, t):
        if t <= self.n_arms * self.b:  # pre-pull phase: arm i is played b times in a row
            return np.full(self.sums.shape[0], (t - 1) // self.b, dtype=np.intp)
        # the arg max of what the release returned (an audit replay may substitute the values)
        return row_argmax(np.asarray(self.posterior.release(self.sums, self.counts), dtype=float))

    def update(self, t, arms, rewards):
        replicates = self.sums.shape[0]
        arms, rewards = pulled_arrays(arms, rewards, replicates, self.n_arms)
        if add_pulled.at(replicates)(self.sums, self.counts, arms, rewards):
            raise ValueError(f"arms must lie in [0, {self.n_arms}) (the arms)")


#: the variance factors c GaussianTS accepts (see its __init__)
C_RANGE = (1e-100, 1e100)


class GaussianTS(Policy):
    """Gaussian-prior Thompson sampling with ``b`` pre-pulls per arm and variance factor ``c``.

    ``GaussianTS()`` (b = 0, c = 1) is Agrawal & Goyal's algorithm (Ou et al. Algorithm 1);
    ``GaussianTS(b, c)`` is Ou et al.'s Modified TS (Algorithm 2).

    There is deliberately no floating-point-safe (discrete Gaussian) mode here: the discrete
    Gaussian is proven to satisfy the Gaussian's RDP / zCDP curve (Canonne, Kamath & Steinke 2020),
    not its GDP trade-off curve, and this policy's certificate is GDP-exact.
    """

    name = "gaussian_ts"
    private = True

    def __init__(self, b: int = 0, c: float = 1.0):
        try:  # a whole number (2.0 is fine; NaN, inf, True, None and strings are not)
            self.b = _validate.count("b", b)
        except ValueError:
            raise ValueError(f"b must be a whole number in [0, inf), got {shown(b)}") from None
        self.c = _validate.positive("c", c)  # (0, inf); True is not a number here
        # beyond these the certificate's mu = sqrt(n / (c (b + 1))) or the ledger's (1/sigma)^2 leaves the
        # float range (c = 1e308 certified mu = 0; c = 1e-320 an infinite mu^2); c is a variance factor,
        # of order 1 to 1e4 in the paper's experiments
        if not C_RANGE[0] <= self.c <= C_RANGE[1]:
            raise ValueError(f"c must lie in [{C_RANGE[0]:g}, {C_RANGE[1]:g}], got {shown(c)}")

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        if horizon < n_arms * self.b:
            raise ValueError(f"horizon must be >= n_arms * b = {shown(n_arms * self.b)} (the pre-pull phase), got {shown(horizon)}")
        return _GaussianTSRun(self, n_arms, replicates, horizon, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        return GaussianTSSchedule(self.b, self.c, n_arms)

    def claimed_mu(self, horizon: int) -> float:
        """Ou et al.'s claim, Lemma 4/5: sqrt(T / (c (b + 1))), with b = 0 read as b = 1."""
        return math.sqrt(horizon / (self.c * (max(self.b, 1) + 1)))

    def claimed_epsilon(self, horizon, n_arms, delta):
        return gdp_conversion.epsilon_for_delta(self.claimed_mu(horizon), delta)

    # --- the paper's appendix routes, for comparison only (the certificate stays GDP-exact) -------
    def rdp_route_epsilon(self, horizon: int, delta: float) -> float:
        """Ou et al. Theorem 8 (RDP route, ALGORITHMS.md 5.3): (alpha, alpha T/(2c(b+1)))-RDP, b = 0
        read as b = 1 (k >= 1), converted with eps = rho + ln(1/delta)/(alpha - 1) at the optimal
        alpha = 1 + sqrt(ln(1/delta)/a), a = T/(2c(b+1)): eps = a + 2 sqrt(a ln(1/delta)).
        (For b = 0, c = 1 this is the paper's T/4 + sqrt(T ln(1/delta)).) A comparison only."""
        _check_route_args(horizon, delta)
        a = horizon / (2.0 * self.c * (max(self.b, 1) + 1))
        return a + 2.0 * math.sqrt(a * math.log(1.0 / delta))

    def advanced_route_epsilon(self, horizon: int, delta: float) -> float:
        """Ou et al. Theorem 7 + Corollary 1 (standard-DP route, as reconstructed in ALGORITHMS.md
        5.3; its constants are uncertain). Per step (Gaussian report-noisy-max, NRS07 lemma):
        eps0 = 5 sqrt(2 ln(2/delta0)) max_i Delta_i/sigma_i with Delta/sigma <= 1/sqrt(c(b+1));
        over T steps (Dwork-Rothblum-Vadhan): eps = sqrt(2 T ln(1/delta')) eps0 + T eps0 (e^eps0 - 1)
        at total delta = T delta0 + delta'. We split delta' = delta/2, delta0 = delta/(2T). A
        comparison only."""
        _check_route_args(horizon, delta)
        ratio = 1.0 / math.sqrt(self.c * (max(self.b, 1) + 1))
        delta0, delta_prime = delta / (2.0 * horizon), delta / 2.0
        eps0 = 5.0 * math.sqrt(2.0 * math.log(2.0 / delta0)) * ratio
        growth = math.expm1(eps0) if eps0 < 700 else math.inf
        return math.sqrt(2.0 * horizon * math.log(1.0 / delta_prime)) * eps0 + horizon * eps0 * growth

    def params(self):
        return {"policy": self.name, "b": self.b, "c": self.c}


def _check_route_args(horizon, delta) -> None:
    if isinstance(horizon, NOT_NUMBERS) or not isinstance(horizon, (int, float, np.integer, np.floating)) \
            or not math.isfinite(horizon) or int(horizon) != horizon or horizon < 1:
        raise ValueError(f"horizon must be a whole number in [1, inf), got {shown(horizon)}")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {shown(delta)}")
