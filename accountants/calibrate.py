"""Generic calibration: invert a monotone parameter -> certificate map without overshooting.

Used by every inversion in ``privbandit.budget``. The returned parameter is re-evaluated and its
certificate is guaranteed <= the target (ACCOUNTING.md, "Calibration": autodp's calibrator was
measured to overshoot; dp-accounting's bisects until it does not).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from accountants._validate import shown
from accountants import _validate
from accountants.gdp_conversion import _index_up, _value


class UnreachableTargetError(ValueError):
    """No parameter in the allowed range meets the target."""


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The calibrated ``parameter`` and its re-evaluated ``certificate`` (<= ``target``)."""

    parameter: float
    certificate: float
    target: float


def calibrate(certificate: Callable[[float], float], target: float, lower: float, upper: float,
              *, increasing: bool, integer: bool = False, xtol: float = 1e-12) -> Calibration:
    """The parameter in [lower, upper] closest to the feasibility boundary with certificate <= target.

    ``certificate(p)`` must be monotone in p: ``increasing=True`` if a larger p spends more (then the
    largest feasible p is returned, e.g. a horizon or a per-release epsilon), ``increasing=False`` if
    a larger p spends less (then the smallest feasible p, e.g. a noise scale). With ``integer=True``
    the search runs over whole numbers. Raises :class:`UnreachableTargetError` when even the most
    private end of the range misses the target.
    """
    if not callable(certificate):
        raise ValueError(f"certificate must be a callable p -> certified value, got {shown(certificate)}")
    target = _validate.positive("target", target)
    _validate.finite("lower", lower)  # checked, kept as given (a whole-number search uses them as ints)
    _validate.finite("upper", upper)
    for name, flag in (("increasing", increasing), ("integer", integer)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {shown(flag)}")
    xtol = _validate.positive("xtol", xtol)
    if not lower < upper:
        raise ValueError(f"lower must be < upper, got [{lower}, {upper}]")
    safe_end, risky_end = (lower, upper) if increasing else (upper, lower)

    def feasible(p: float) -> bool:
        c = certificate(p)
        return not math.isnan(c) and c <= target

    if not feasible(safe_end):
        raise UnreachableTargetError(
            f"target {target} is unreachable: even the most private parameter {safe_end} "
            f"certifies {certificate(safe_end)}"
        )
    if feasible(risky_end):
        return Calibration(risky_end, certificate(risky_end), target)
    good, bad = safe_end, risky_end
    if integer:
        good, bad = int(good), int(bad)
        while abs(bad - good) > 1:
            mid = (good + bad) // 2
            if feasible(mid):
                good = mid
            else:
                bad = mid
    else:
        # brentq on the sign change of (certificate - target) finds the boundary fast; then the
        # bisection invariant (good feasible, bad not) is restored around it.
        from scipy import optimize  # (on first use: accountants/rdp.py)

        try:
            root = optimize.brentq(lambda p: certificate(p) - target, min(good, bad), max(good, bad),
                                   xtol=xtol, maxiter=200)
            span = max(xtol, abs(root) * 1e-12)
            for cand in (root, root - span if increasing else root + span):
                if min(good, bad) <= cand <= max(good, bad) and feasible(cand):
                    good = cand
                    break
        except (ValueError, RuntimeError):  # no sign change found numerically, or brentq did not converge
            # in maxiter (a range of 600 decades): fall back to bisection, which keeps the invariant
            pass
        # Bisect down to the feasibility boundary itself (not a point within xtol of it), first in
        # floats to a bracket a few lattice cells wide, then over the 40-bit lattice of
        # gdp_conversion (9e-13 relative apart): see _lattice_boundary.
        for _ in range(400):
            lo, hi = min(good, bad), max(good, bad)
            if lo > 0 and hi <= lo * (1 + 2.0 ** -36):
                break
            # a range over many decades (bounds 1e-300 .. 1e300): halve it in log scale first, or
            # 200 halvings stop at ~1e240 with a valid but uselessly loose parameter
            mid = math.sqrt(lo) * math.sqrt(hi) if lo > 0 and hi > 1e3 * lo else 0.5 * lo + 0.5 * hi
            if not lo < mid < hi:  # adjacent floats
                break
            if feasible(mid):
                good = mid
            else:
                bad = mid
        if min(good, bad) > 0:
            good = _lattice_boundary(feasible, good, bad, increasing)
    value = certificate(good)
    assert value <= target, "calibration invariant broken"  # defensive: feasible() checked it
    return Calibration(float(good), float(value), target)


def _lattice_boundary(feasible: Callable[[float], bool], good: float, bad: float, increasing: bool) -> float:
    """The last lattice point (gdp_conversion's, 40 significant bits) on ``good``'s side of the boundary
    between feasible ``good`` and infeasible ``bad`` (both > 0), or ``good`` if none is feasible nearby.

    Why a lattice: a certificate is monotone in its parameter only up to last-digit noise (a
    Laplace release's certificate at delta 0.1 moved ~60 ulps the wrong way between neighbouring
    epsilons), so the float boundary is not unique and bisection found different points of it for
    neighbouring targets: target t and the next float above it returned per-release epsilons 2.4e-10
    relative apart in the wrong order (a larger budget, a noisier parameter). Lattice points are
    9e-13 relative apart, wider than that noise, so on the lattice the boundary is one point and the
    answer is monotone in the target wherever the certificate is monotone at that resolution
    (session 14, measured; not a theorem). Costs ~40 certificates more than brentq's xtol alone."""
    step = -1 if increasing else 1  # toward the safe side
    g = _index_up(good)
    if _value(g) != good and increasing:
        g -= 1  # the lattice point below good
    b = _index_up(bad) if increasing else _index_up(bad) - (_value(_index_up(bad)) != bad)
    for _ in range(64):  # good's lattice point should be feasible; rounding noise may need a step or two
        if feasible(_value(g)):
            break
        g += step
    else:
        return good
    while abs(b - g) > 1:
        mid = (g + b) // 2
        if feasible(_value(mid)):
            g = mid
        else:
            b = mid
    return _value(g)
