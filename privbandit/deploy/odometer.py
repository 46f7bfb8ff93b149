"""The privacy filter and odometer of a deployment.

Every policy in ``privbandit.policies`` declares a *data-independent* privacy schedule
(DESIGN.md, "Certified (eps, delta) at round t"): ``cert(t)``, the certified epsilon at ``delta`` of
the worst record after t policy rounds, is a function of t, the number of arms, the horizon and the
parameters -- never of the rewards or of the arms played. Hence:

* **Filter.** The last round the budget affords, ``stop = max{t <= horizon : cert(t) <= budget}``, is
  fixed before the first decision. Opening policy round t is allowed iff ``t <= stop``, i.e. iff the
  certificate of everything released so far plus this round's releases fits the budget. The
  deployment is therefore the policy run for the first ``stop`` rounds followed by post-processing
  of its released arms, and its guarantee is the ordinary composition of a fixed multiset of
  releases: ``cert(stop) <= budget`` -- no adaptive-composition theorem is needed, because nothing
  data-dependent decides whether a release happens.
* **Odometer.** After t policy rounds the odometer reads ``cert(t)``: the guarantee of the first t
  rounds for a t not chosen from the released arms (e.g. read at a wall-clock time). Whatever
  stopping rule an operator applies to the released arms, the filter's bound ``cert(stop)`` holds.
  A data-dependent stopping rule certified at the odometer's *current* reading would need a
  fully adaptive odometer (Rogers, Roth, Ullman & Vadhan 2016; Whitehouse, Ramdas, Rogers & Wu
  2023), which this module does not claim.
* **Realized spend.** The ledger's per-record spend of this transcript is data-dependent (which
  records a release touches depends on the arms played). It is reported, never used to decide a
  release: a filter on it would need an individual / fully adaptive filter (Feldman & Zrnic 2021;
  Whitehouse et al. 2023) that the policies' mechanisms are not built for.

The certificates are the minimum over every accountant except the PLD one (whose FFT costs up to a
second per evaluation): a minimum over a subset of valid bounds is a valid bound, never smaller
than the full minimum.
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

from accountants.best import Certificate, default_accountants

THEOREM = ("ordinary (non-adaptive) composition of the data-independent privacy schedule {schedule} "
           "over a stopping round fixed in advance (filter); accountant: {by}")
ANYTIME_MAX_HORIZON = 1_000_000
"""Without a horizon, a deployment runs the longest horizon the budget affords, up to this cap."""


def filter_accountants():
    """Every accountant but PLD (see the module docstring)."""
    return [f for f in default_accountants() if getattr(f, "name", "") != "pld"]


class Odometer:
    """``cert(t)`` of one (policy, horizon, n_arms, delta), cached per t."""

    def __init__(self, policy, horizon: int, n_arms: int, delta: float) -> None:
        self.policy, self.horizon, self.n_arms, self.delta = policy, horizon, n_arms, delta
        self.schedule = policy.privacy_schedule(horizon, n_arms)
        self._accountants = filter_accountants()
        self._cert = lru_cache(maxsize=4096)(self._certify)

    def _certify(self, rounds: int) -> Certificate:
        if rounds <= 0:
            return Certificate(0.0, "none", {})
        return self.schedule.epsilon(int(rounds), self.delta, self._accountants)

    def certificate(self, rounds: int) -> Certificate:
        return self._cert(int(rounds))

    def epsilon(self, rounds: int) -> float:
        return float(self._cert(int(rounds)).value)

    def theorem(self, rounds: int) -> str:
        return THEOREM.format(schedule=type(self.schedule).__name__, by=self.certificate(rounds).by)

    def stop_round(self, budget: float) -> int:
        """The largest t in [0, horizon] with cert(t) <= budget < cert(t + 1) (bisection: cert is
        non-decreasing because the schedule is monotone in t; the invariant holds at every step, so
        the result satisfies it even if rounding made cert non-monotone somewhere)."""
        lo, hi = 0, self.horizon  # cert(lo) <= budget always (cert(0) = 0)
        if self.epsilon(hi) <= budget:
            return hi
        while hi - lo > 1:  # invariant: cert(lo) <= budget < cert(hi)
            mid = (lo + hi) // 2
            if self.epsilon(mid) <= budget:
                lo = mid
            else:
                hi = mid
        return lo  # cert(lo) <= budget < cert(lo + 1): the next round would exceed the budget


@dataclasses.dataclass(frozen=True)
class Plan:
    """The horizon the policy is started with and the last round the budget affords."""

    horizon: int
    stop_round: int
    anytime: bool


def plan(policy, n_arms: int, budget: float, delta: float, horizon: int | None) -> Plan:
    """With a ``horizon``: the filter's stop round within it. Without (anytime): the longest horizon
    T <= ANYTIME_MAX_HORIZON whose own schedule certifies T rounds within the budget (bisection over
    T, re-checked), so the policy is started with the horizon the budget can pay for."""
    if horizon is not None:
        return Plan(horizon, Odometer(policy, horizon, n_arms, delta).stop_round(budget), False)

    def fits(T: int) -> bool:
        return Odometer(policy, T, n_arms, delta).epsilon(T) <= budget

    if fits(ANYTIME_MAX_HORIZON):
        return Plan(ANYTIME_MAX_HORIZON, ANYTIME_MAX_HORIZON, True)
    if not fits(n_arms):
        # not even one round per arm fits: start with the least horizon and let the filter cut it
        return Plan(n_arms, Odometer(policy, n_arms, n_arms, delta).stop_round(budget), True)
    lo, hi = n_arms, ANYTIME_MAX_HORIZON
    while hi - lo > 1:  # fits(lo), not fits(hi); a horizon-dependent schedule may make fits()
        mid = (lo + hi) // 2  # non-monotone: the bisection then returns some T that fits, still valid
        if fits(mid):
            lo = mid
        else:
            hi = mid
    stop = Odometer(policy, lo, n_arms, delta).stop_round(budget)
    return Plan(lo, stop, True)


def finite(x: float) -> float | None:
    """JSON-friendly: None for inf / NaN."""
    return float(x) if math.isfinite(x) else None
