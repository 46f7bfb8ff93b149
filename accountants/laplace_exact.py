"""The exact privacy profile of ONE Laplace release (session 17).

A Laplace mechanism with eps0 = sensitivity / scale has, for its worst pair of neighbours (the two
Laplace laws shifted by the sensitivity), the hockey-stick divergence

    delta(e') = 1 - exp((e' - eps0) / 2)   for 0 <= e' <= eps0,   0 above,

so e'(delta) = eps0 + 2 ln(1 - delta), or 0 once delta >= 1 - exp(-eps0 / 2) (the privacy loss is +eps0
with probability 1/2, -eps0 with probability e^(-eps0)/2 and density e^((l - eps0)/2) / 4 on (-eps0, eps0):
E[(1 - e^(e' - L))_+] integrates to the line above; Dwork & Roth 2014, Thm 3.6 for the pure bound it
attains at delta = 0). Cross-checked against dp-accounting's PLD and an mpmath integral in the tests.

No other accountant is exact for one Laplace release: the PLD rounds its discretised loss up (1.55e-10
relative at eps 1, delta 1e-6), the pure sum ignores delta, the optimal composition assumes randomized
response. Lazy-DP-TS's schedule had this closed form of its own (``laplace-exact``) while the tight ledger's
realized spend of the same single release went through ``best_epsilon`` (the PLD): realized above certified
in 162 readings of session 16. As an accountant, both read the same value (``accountants.best``).

For two or more releases the accountant knows no bound (``epsilon`` inf, ``delta`` 1): compositions of
Laplace releases are the PLD's and the other accountants' job.
"""

from __future__ import annotations

import math

from accountants import _validate
from accountants.base import Accountant, _ceil_float
from accountants.events import Laplace, LeafEvent

_U = 2.0 ** -52


def laplace_epsilon(pure: float, delta: float) -> float:
    """Exact epsilon at ``delta`` of one Laplace mechanism that is ``pure``-DP, rounded up.

    e'(delta) = pure + 2 ln(1 - delta), or 0 once delta >= 1 - exp(-pure/2) (module docstring).
    Rounded up (session 12): rounded to nearest it was up to an ulp below the exact value, a certificate
    below the truth (eps 1 at 1e-10: 0.9999999998, whose exact delta is 1e-10 (1 + 8e-8)). log1p is
    within 1 ulp (glibc's bound), i.e. 2u relative: its magnitude is shrunk by 4u (3.5u after the product's
    rounding), 2 x is exact, and the sum is moved one ulp up. Never above ``pure`` (the release is
    (pure, 0)-DP at every delta; session 17: the ulp moved a tiny delta's answer above it).
    ``pure`` must be at or above the release's eps0.
    """
    value = pure + 2.0 * (math.log1p(-delta) * (1.0 - 4.0 * _U))
    return min(pure, max(0.0, math.nextafter(value, math.inf)))


def laplace_delta(pure: float, epsilon: float) -> float:
    """Exact delta at ``epsilon`` of one Laplace mechanism that is ``pure``-DP, rounded up:
    1 - exp((epsilon - pure)/2) below ``pure``, 0 at and above it. expm1 is within 1 ulp; the result is
    raised by 4u relative and one ulp (``pure`` at or above the release's eps0 only raises it)."""
    if epsilon >= pure:
        return 0.0
    value = -math.expm1((epsilon - pure) / 2.0)
    return min(1.0, math.nextafter(value * (1.0 + 4.0 * _U), math.inf))


class LaplaceExactAccountant(Accountant):
    """One continuous Laplace release: its exact profile (module docstring); no bound for more."""

    name = "laplace-exact"

    def __init__(self) -> None:
        self._count = 0
        self._leaf: Laplace | None = None

    def _supports_leaf(self, leaf: LeafEvent) -> bool:
        # exactly the continuous Laplace: a discrete Laplace's profile is slightly worse (its mass at the
        # largest loss is 1/(1 + e^(-1/t)) > 1/2), the closed form would be below its truth
        return type(leaf) is Laplace

    def _add(self, leaf: LeafEvent, count: int) -> None:
        self._count += count
        self._leaf = leaf

    def _single_pure(self) -> float | None:
        """eps0 of the one release, rounded up from the exact sensitivity / scale; None unless exactly one."""
        if self._count != 1:
            return None
        return _ceil_float(self._leaf.exact_pure_epsilon())

    def epsilon(self, delta: float) -> float:
        """The exact one-release epsilon at ``delta`` (rounded up); 0 with nothing composed; inf for two or
        more releases (no bound known here)."""
        delta = self._zero_delta(delta)
        if self._count == 0:
            return 0.0
        pure = self._single_pure()
        if pure is None:  # (at delta = 0 too: the pure sum of a composition is the pure accountant's to name)
            return math.inf
        return pure if delta == 0.0 else laplace_epsilon(pure, delta)

    def delta(self, epsilon: float) -> float:
        """The exact one-release delta at ``epsilon`` (rounded up); 0 with nothing composed; 1 for two or
        more releases (no bound known here)."""
        epsilon = _validate.nonnegative("epsilon", epsilon)
        if self._count == 0:
            return 0.0
        pure = self._single_pure()
        return 1.0 if pure is None else laplace_delta(pure, epsilon)
