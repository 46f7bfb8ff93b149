"""Claims, certificate types, event selection and certification on fresh samples.

* :class:`Claim` -- the guarantee under test, in the accountant's own currency: a GDP ``mu`` and/or an
  ``epsilon(delta)`` function (a pure eps-DP claim is eps at every delta, and mu_from_pure_epsilon(eps)
  as GDP).
* :class:`EpsAtDelta` / :class:`GDP` -- certificate types. Each gives a selection objective (Wilson
  bounds at a Bonferroni z, approximate) and a certified lower bound (Clopper-Pearson, rigorous).
* :func:`select_event` -- search thresholds of every score, both directions ({s >= t}, {s <= t}) and
  both orderings ((D, D') and (D', D)), on the selection sample.
* :func:`certify_event` -- count the chosen event on fresh test runs and turn the counts into a lower
  bound at the certificate's share of the family-wise alpha.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from scipy import special

from accountants._validate import shown
from accountants import gdp_conversion
from privbandit.audit import stats


@dataclasses.dataclass(frozen=True)
class Claim:
    """A privacy guarantee to refute.

    ``mu``: the claimed GDP parameter (inf or None: no GDP claim). ``epsilon``: a pure-DP epsilon, or
    ``epsilon_of_delta``: the claimed epsilon at each delta. ``label`` describes where it came from.
    """

    mu: float | None = None
    epsilon: float | None = None
    epsilon_of_delta: Callable[[float], float] | None = None
    label: str = ""

    def __post_init__(self):
        if self.mu is None and self.epsilon is None and self.epsilon_of_delta is None:
            raise ValueError("a Claim needs mu, epsilon or epsilon_of_delta")
        if self.mu is not None and not (self.mu > 0):
            raise ValueError(f"mu must lie in (0, inf], got {shown(self.mu)}")
        if self.epsilon is not None and not (self.epsilon > 0):
            raise ValueError(f"epsilon must lie in (0, inf], got {shown(self.epsilon)}")

    @classmethod
    def pure(cls, epsilon: float, label: str = "") -> "Claim":
        """A pure eps-DP claim (e.g. one Laplace release at scale sensitivity/eps)."""
        return cls(epsilon=float(epsilon), label=label or f"{epsilon:g}-DP")

    @classmethod
    def gdp(cls, mu: float, label: str = "") -> "Claim":
        """A mu-GDP claim; its epsilon at delta is the exact GDP conversion."""
        return cls(mu=float(mu), label=label or f"{mu:g}-GDP")

    @classmethod
    def from_schedule(cls, schedule, rounds: int, label: str = "") -> "Claim":
        """The certificate of a policy's privacy schedule after ``rounds`` rounds."""
        mu = schedule.mu(rounds)
        mu = None if not math.isfinite(mu) or mu <= 0 else float(mu)
        return cls(mu=mu, epsilon_of_delta=lambda d: float(schedule.epsilon(rounds, d).value),
                   label=label or f"schedule at t={rounds}")

    def epsilon_at(self, delta: float) -> float:
        if self.epsilon_of_delta is not None:
            return float(self.epsilon_of_delta(delta))
        if self.epsilon is not None:
            return float(self.epsilon)
        if self.mu is None or not math.isfinite(self.mu):
            return math.inf
        if delta <= 0:
            return math.inf
        return gdp_conversion.epsilon_for_delta(self.mu, delta)

    def gdp_mu(self) -> float:
        if self.mu is not None:
            return float(self.mu)
        if self.epsilon is not None:
            return float(gdp_conversion.mu_from_pure_epsilon(self.epsilon))
        return math.inf

    def describe(self) -> str:
        parts = []
        if self.mu is not None:
            parts.append(f"mu={self.mu:.4g}")
        if self.epsilon is not None:
            parts.append(f"eps={self.epsilon:.4g}")
        return (self.label + " " if self.label else "") + "(" + ", ".join(parts or ["eps(delta)"]) + ")"


class Certificate:
    """A certificate type: lower bounds in one privacy currency."""

    name = "certificate"

    def claim_value(self, claim: Claim) -> float:
        raise TypeError(f"{type(self).__name__} does not define claim_value")

    def objective(self, k_num, k_den, n_num, n_den, z):
        raise TypeError(f"{type(self).__name__} does not define objective")

    def bound(self, p_lo_num, p_hi_den):
        raise TypeError(f"{type(self).__name__} does not define bound")


class EpsAtDelta(Certificate):
    """eps_lb = ln((p_lo(D) - delta) / p_hi(D')); compared with the claim's epsilon at ``delta``."""

    def __init__(self, delta: float = 0.0):
        if not (isinstance(delta, (int, float)) and 0.0 <= delta < 1.0):
            raise ValueError(f"delta must lie in [0, 1), got {shown(delta)}")
        self.delta = float(delta)
        self.name = f"eps@delta={self.delta:g}"

    def claim_value(self, claim):
        return claim.epsilon_at(self.delta)

    def objective(self, k_num, k_den, n_num, n_den, z):
        lo = stats.wilson_lower(k_num, n_num, z)
        hi = stats.wilson_upper(k_den, n_den, z)
        num = lo - self.delta
        with np.errstate(divide="ignore", invalid="ignore"):
            val = np.log(np.maximum(num, 1e-300)) - np.log(np.maximum(hi, 1e-300))
        return np.where(num > 0, val, -np.inf)

    def bound(self, p_lo_num, p_hi_den):
        return stats.eps_lower_bound(p_lo_num, p_hi_den, self.delta)


class GDP(Certificate):
    """mu_lb = Phi^-1(1 - FPR_hi) - Phi^-1(FNR_hi) with FPR = P[S|D'], FNR = 1 - P[S|D]."""

    name = "mu (GDP)"

    def claim_value(self, claim):
        return claim.gdp_mu()

    def objective(self, k_num, k_den, n_num, n_den, z):
        lo = stats.wilson_lower(k_num, n_num, z)
        hi = stats.wilson_upper(k_den, n_den, z)
        with np.errstate(divide="ignore", invalid="ignore"):
            val = special.ndtri(lo) - special.ndtri(hi)
        return np.where(np.isnan(val), -np.inf, val)

    def bound(self, p_lo_num, p_hi_den):
        return stats.mu_lower_bound(p_hi_den, 1.0 - p_lo_num)


@dataclasses.dataclass(frozen=True)
class Event:
    """``{score >= threshold}`` or ``{score <= threshold}``; ``numerator`` is the side whose
    probability is bounded from below ("D" or "D'")."""

    score_index: int
    score_name: str
    threshold: float
    direction: str  # ">=" or "<="
    numerator: str  # "D" or "D'"

    def indicator(self, values: np.ndarray) -> np.ndarray:
        if self.direction == ">=":
            return values >= self.threshold
        return values <= self.threshold

    def describe(self) -> str:
        return f"{{{self.score_name} {self.direction} {self.threshold:.6g}}}, P[.|{self.numerator}] high"


def _thresholds(a: np.ndarray, b: np.ndarray, max_thresholds: int) -> np.ndarray:
    pooled = np.concatenate([a, b])
    pooled = pooled[np.isfinite(pooled)]
    uniq = np.unique(pooled)
    if uniq.size <= max_thresholds:
        return uniq
    # Order statistics over the bulk, plus every value among the most extreme ones (the tails win,
    # AUDIT.md 2.2). Values (not interpolated quantiles), so each threshold is attained.
    pooled.sort()
    q = pooled[np.linspace(0, pooled.size - 1, max_thresholds - 400).astype(np.int64)]
    tails = np.concatenate([uniq[:200], uniq[-200:]])
    return np.unique(np.concatenate([q, tails]))


def candidate_counts(a: np.ndarray, b: np.ndarray, max_thresholds: int = 4000):
    """Thresholds and the counts of {s >= t} and {s <= t} among a (D) and b (D')."""
    t = _thresholds(a, b, max_thresholds)
    sa, sb = np.sort(a), np.sort(b)
    ge_a = a.size - np.searchsorted(sa, t, side="left")
    ge_b = b.size - np.searchsorted(sb, t, side="left")
    le_a = np.searchsorted(sa, t, side="right")
    le_b = np.searchsorted(sb, t, side="right")
    return t, ge_a, ge_b, le_a, le_b


def select_event(scores_d: list[np.ndarray], scores_dp: list[np.ndarray], names: list[str],
                 certificate: Certificate, alpha: float = 0.05, max_thresholds: int = 4000):
    """The event with the best selection objective over every score, threshold, direction and ordering.

    Returns (event, objective value, number of candidates). The objective uses Wilson bounds at the
    Bonferroni z over all candidates (AUDIT.md 2.3); it only *ranks* events.
    """
    per_score = [candidate_counts(np.asarray(a, float), np.asarray(b, float), max_thresholds)
                 for a, b in zip(scores_d, scores_dp)]
    n_cand = sum(4 * c[0].size for c in per_score)
    if n_cand == 0:
        raise ValueError("no candidate events: every score was non-finite")
    z = stats.bonferroni_z(alpha, n_cand)
    best = (-np.inf, None)
    for i, ((t, ge_a, ge_b, le_a, le_b), a, b) in enumerate(zip(per_score, scores_d, scores_dp)):
        na, nb = len(a), len(b)
        for direction, ka, kb in ((">=", ge_a, ge_b), ("<=", le_a, le_b)):
            for numerator, kn, kd, nn, nd in (("D", ka, kb, na, nb), ("D'", kb, ka, nb, na)):
                obj = certificate.objective(kn, kd, nn, nd, z)
                j = int(np.argmax(obj))
                if obj[j] > best[0]:
                    best = (float(obj[j]), Event(i, names[i], float(t[j]), direction, numerator))
    if best[1] is None:  # no event with a positive objective: fall back to the median split
        a = np.asarray(scores_d[0], float)
        best = (-np.inf, Event(0, names[0], float(np.median(a)), ">=", "D"))
    return best[1], best[0], n_cand


@dataclasses.dataclass
class CertifiedBound:
    """Counts and bounds of one event on the test runs."""

    certificate: str
    event: Event
    n_num: int
    n_den: int
    k_num: int
    k_den: int
    p_lo_num: float
    p_hi_den: float
    lower_bound: float
    eps_lb: float
    mu_lb: float
    alpha: float


def certify_event(event: Event, values_d: np.ndarray, values_dp: np.ndarray, certificate: Certificate,
                  alpha: float, delta_for_eps: float = 0.0) -> CertifiedBound:
    """Clopper-Pearson bounds (alpha/2 each) of the event on fresh runs and the resulting lower bound.

    ``eps_lb`` (at ``delta_for_eps``) and ``mu_lb`` are reported for the same counts, whatever the
    certificate, so that a row can be read in both currencies (only ``lower_bound`` is tested).
    """
    ind_d = event.indicator(values_d)
    ind_dp = event.indicator(values_dp)
    if event.numerator == "D":
        k_num, n_num, k_den, n_den = int(ind_d.sum()), ind_d.size, int(ind_dp.sum()), ind_dp.size
    else:
        k_num, n_num, k_den, n_den = int(ind_dp.sum()), ind_dp.size, int(ind_d.sum()), ind_d.size
    p_lo = stats.cp_lower(k_num, n_num, alpha / 2)
    p_hi = stats.cp_upper(k_den, n_den, alpha / 2)
    lb = float(certificate.bound(p_lo, p_hi))
    eps_lb = float(stats.eps_lower_bound(p_lo, p_hi, delta_for_eps))
    mu_lb = float(stats.mu_lower_bound(p_hi, 1.0 - p_lo))
    return CertifiedBound(certificate.name, event, n_num, n_den, k_num, k_den, float(p_lo), float(p_hi),
                          lb, eps_lb, mu_lb, float(alpha))
