"""Privacy events: small frozen values that describe what one record went through.

The vocabulary mirrors ``dp_accounting.DpEvent`` (``LaplaceDpEvent``, ``GaussianDpEvent``,
``ComposedDpEvent``, ``SelfComposedDpEvent``). Each leaf event knows its own privacy curves, so an
accountant asks the event ("what is your pure epsilon? your RDP curve? your mu?") instead of
switching on its type; adding a new kind of event touches this module only.

A curve method returns ``None`` when the event does not have that kind of guarantee (a Gaussian has
no pure epsilon; an (eps, delta) event has no RDP curve); accountants treat ``None`` as "unsupported"
and never approximate it.
"""

from __future__ import annotations

import abc
import dataclasses
import fractions
import math
import sys
from collections.abc import Iterator

import numpy as np

from accountants._validate import shown
from accountants import _validate, gdp_conversion, rdp_curves

_LARGEST_FLOAT = fractions.Fraction(sys.float_info.max)


class Event(abc.ABC):
    """A privacy-loss event. Leaves describe one release; ``Composed``/``SelfComposed`` combine them."""

    @abc.abstractmethod
    def leaves(self) -> Iterator[tuple["LeafEvent", int]]:
        """Yield ``(leaf, count)`` pairs whose sequential composition is this event."""

    def grouped(self) -> dict["LeafEvent", int]:
        """The multiset of leaves: identical leaves merged with their counts added."""
        out: dict[LeafEvent, int] = {}
        for leaf, n in self.leaves():
            if n:
                out[leaf] = out.get(leaf, 0) + n
        return out

    def __mul__(self, count: int) -> "SelfComposed":
        return SelfComposed(self, count)

    __rmul__ = __mul__

    def __add__(self, other: "Event") -> "Composed":
        if not isinstance(other, Event):
            return NotImplemented
        return Composed((self, other))


class LeafEvent(Event):
    """One release. Subclasses implement the curve methods that apply to them."""

    def leaves(self) -> Iterator[tuple["LeafEvent", int]]:
        yield self, 1

    # --- privacy curves (None = this guarantee does not apply) ---------------------------------
    def pure_epsilon(self) -> float | None:
        """eps such that the release is eps-DP, or None."""
        return None

    def epsilon_delta(self) -> tuple[float, float] | None:
        """A single (eps, delta) point the release satisfies, or None (no canonical point)."""
        eps = self.pure_epsilon()
        return None if eps is None else (eps, 0.0)

    def gdp_mu(self) -> float | None:
        """mu such that the release is mu-GDP (exact for Gaussians, via conversion for pure DP)."""
        eps = self.pure_epsilon()
        return None if eps is None else gdp_conversion.mu_from_pure_epsilon(eps)

    def rdp(self, alphas: np.ndarray) -> np.ndarray | None:
        """RDP epsilon at each order in ``alphas`` (all > 1), or None."""
        return None

    @abc.abstractmethod
    def to_dp_accounting(self):  # -> dp_accounting.DpEvent
        """The equivalent ``dp_accounting`` event (see :mod:`accountants.interop`)."""


def _ratio_up(sensitivity: float, scale: float) -> float:
    """sensitivity / scale, never rounded down to 0: a ratio below the least subnormal (sensitivity 5e-324,
    scale 2) is reported as that subnormal, not as 0, which no leaf may claim. Among the subnormals it is
    rounded up exactly (session 16): to nearest it can lie up to half an absolute ulp below the exact
    ratio -- relatively far more than the accountants' relative margins cover (Laplace(3, 2026 x 5e-324)
    reads 675 ulps for 675.33: epsilon at delta = 0 below the truth). Normal ratios are to nearest, within
    the margins (2^-53 relative)."""
    ratio = sensitivity / scale
    if not ratio > 0.0:
        return math.ulp(0.0)
    return _quotient_up(ratio, sensitivity, scale) if ratio < _LEAST_NORMAL else ratio


_LEAST_NORMAL = 2.2250738585072014e-308


def _quotient_up(ratio: float, numerator, denominator) -> float:
    """``ratio`` (a float quotient of ``numerator`` / ``denominator``) moved up to the least float at or
    above the exact quotient (exact arithmetic; used among the subnormals only, where it is rare)."""
    if fractions.Fraction(ratio) < fractions.Fraction(numerator) / fractions.Fraction(denominator):
        return math.nextafter(ratio, math.inf)
    return ratio


def ceil_float(value: fractions.Fraction) -> float:
    """The least float at or above the exact rational ``value`` (inf past the largest float)."""
    try:
        x = float(value)  # (int / int true division: correctly rounded)
    except OverflowError:
        return math.inf
    if math.isfinite(x) and fractions.Fraction(x) < value:
        x = math.nextafter(x, math.inf)
    return x


def exact_pure_epsilon(leaf: "LeafEvent") -> fractions.Fraction | None:
    """A pure release's epsilon as an exact rational (a Laplace release's sensitivity / scale, whose float
    quotient is to nearest), None when the release is not pure (eps, 0)-DP."""
    point = leaf.epsilon_delta()
    if point is None or point[1] > 0:
        return None
    exact = getattr(leaf, "exact_pure_epsilon", None)
    return exact() if exact is not None else fractions.Fraction(point[0])


@dataclasses.dataclass(frozen=True)
class Laplace(LeafEvent):
    """Laplace mechanism: a statistic with L1 sensitivity ``sensitivity`` plus Lap(``scale``) noise.

    Pure (sensitivity/scale)-DP (Dwork & Roth 2014, Thm 3.6).
    """

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _validate.positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", _validate.positive("sensitivity", self.sensitivity))

    def pure_epsilon(self) -> float:
        return _ratio_up(self.sensitivity, self.scale)

    def exact_pure_epsilon(self) -> fractions.Fraction:
        """sensitivity / scale exactly (``pure_epsilon`` is its float, to nearest)."""
        return fractions.Fraction(self.sensitivity) / fractions.Fraction(self.scale)

    def rdp(self, alphas: np.ndarray) -> np.ndarray:
        return rdp_curves.laplace(alphas, self.pure_epsilon())

    def to_dp_accounting(self):
        import dp_accounting

        return dp_accounting.LaplaceDpEvent(noise_multiplier=self.scale / self.sensitivity)


@dataclasses.dataclass(frozen=True)
class Gaussian(LeafEvent):
    """Gaussian mechanism: sensitivity ``sensitivity`` plus N(0, ``sigma``^2) noise; (sensitivity/sigma)-GDP."""

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _validate.positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", _validate.positive("sensitivity", self.sensitivity))

    def gdp_mu(self) -> float:
        return _ratio_up(self.sensitivity, self.sigma)

    def rdp(self, alphas: np.ndarray) -> np.ndarray:
        return rdp_curves.gaussian(alphas, self.gdp_mu())

    def to_dp_accounting(self):
        import dp_accounting

        return dp_accounting.GaussianDpEvent(noise_multiplier=self.sigma / self.sensitivity)


def _whole_multiple(name: str, value: float, grid: float) -> int:
    units = value / grid
    if not (units >= 1 and float(units).is_integer()):
        raise ValueError(f"{name} must be a whole multiple (>= 1) of grid={grid!r}, got {shown(value)}")
    return int(units)


@dataclasses.dataclass(frozen=True)
class DiscreteLaplace(LeafEvent):
    """Discrete Laplace on a grid (Canonne, Kamath & Steinke 2020, Alg. 2): noise t*Z with
    P(z) ~ exp(-|z|/t) on grid units, statistic of grid sensitivity u; ``scale`` = t*grid,
    ``sensitivity`` = u*grid (whole multiples of ``grid``).

    Exactly (u/t)-DP, like the continuous Laplace, but its Renyi and PLD curves are slightly worse
    (1e-6 relative at t ~ 2^20): this event carries its own exact RDP curve
    (:func:`rdp_curves.discrete_laplace`) and its own PLD (dp-accounting's discrete Laplace, for
    u <= 4096; above that the PLD declines and the other accountants answer). The floating-point-safe
    samplers of privbandit record their Laplace releases with it.
    """

    scale: float
    sensitivity: float = 1.0
    grid: float = 2.0 ** -20

    def __post_init__(self) -> None:
        object.__setattr__(self, "grid", _validate.positive("grid", self.grid))
        object.__setattr__(self, "scale", _validate.positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", _validate.positive("sensitivity", self.sensitivity))
        _whole_multiple("scale", self.scale, self.grid)
        _whole_multiple("sensitivity", self.sensitivity, self.grid)

    @property
    def t(self) -> int:
        """The scale in grid units."""
        return int(self.scale / self.grid)

    @property
    def u(self) -> int:
        """The sensitivity in grid units."""
        return int(self.sensitivity / self.grid)

    def pure_epsilon(self) -> float:
        ratio = self.u / self.t
        return _quotient_up(ratio, self.u, self.t) if ratio < _LEAST_NORMAL else ratio

    def exact_pure_epsilon(self) -> fractions.Fraction:
        """u / t exactly (``pure_epsilon`` is its float, to nearest)."""
        return fractions.Fraction(self.u, self.t)

    def rdp(self, alphas: np.ndarray) -> np.ndarray:
        return rdp_curves.discrete_laplace(alphas, float(self.t), self.u)

    def to_dp_accounting(self):
        raise ValueError(
            "dp_accounting has no discrete Laplace DpEvent; use "
            "dp_accounting.pld.privacy_loss_distribution.from_discrete_laplace_mechanism("
            f"parameter=1/{self.t}, sensitivity={self.u}) or accountants.PLDAccountant"
        )


@dataclasses.dataclass(frozen=True)
class DiscreteGaussian(LeafEvent):
    """Discrete Gaussian on a grid (Canonne, Kamath & Steinke 2020, Alg. 3): ``sigma`` and
    ``sensitivity`` in value units (whole multiples of ``grid``).

    Proven: (u^2/(2 s^2))-zCDP, i.e. the continuous Gaussian's Renyi curve (CKS Thm 4), with u, s in
    grid units -- not the continuous Gaussian's GDP curve -- so only RDP-based accountants bound it
    (as :class:`ZCDP` with that rho).
    """

    sigma: float
    sensitivity: float = 1.0
    grid: float = 2.0 ** -20

    def __post_init__(self) -> None:
        object.__setattr__(self, "grid", _validate.positive("grid", self.grid))
        object.__setattr__(self, "sigma", _validate.positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", _validate.positive("sensitivity", self.sensitivity))
        _whole_multiple("sigma", self.sigma, self.grid)
        _whole_multiple("sensitivity", self.sensitivity, self.grid)

    @property
    def rho(self) -> float:
        """(u/s)^2 / 2 as the least float >= its exact value (exact when it is a float, e.g. u/s = 1/2);
        past the largest float rho = inf (vacuous but valid): Python's ``** 2`` raised OverflowError
        there, a traceback from every RDP query (session 14)."""
        exact = (fractions.Fraction(self.sensitivity) / fractions.Fraction(self.sigma)) ** 2 / 2
        if exact > _LARGEST_FLOAT:
            return math.inf
        rho = float(exact)  # nearest: one step up when it fell below
        return rho if fractions.Fraction(rho) >= exact else math.nextafter(rho, math.inf)

    def gdp_mu(self) -> None:
        return None

    def rdp(self, alphas: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):  # rho alpha past 1e308 is inf: a vacuous but valid curve
            return np.asarray(alphas, dtype=float) * self.rho

    def to_dp_accounting(self):
        import dp_accounting

        return dp_accounting.ZCDpEvent(self.rho)


@dataclasses.dataclass(frozen=True)
class PureDP(LeafEvent):
    """A release known only to be ``epsilon``-DP (its RDP curve is randomized response's)."""

    epsilon: float

    @classmethod
    def at_least(cls, value) -> "PureDP":
        """PureDP at the least float at or above the exact ``value`` (a Fraction, int or float): for a
        schedule that covers releases by one pure event, whose float arithmetic (a quotient, a sum) can land
        below the releases' exact epsilon (session 17: a vector tree's node read PureDP(sensitivity / scale)
        to nearest, an ulp below its Laplace release: the certificate at delta = 0 below the truth, and the
        ledger's exact realized spend above it)."""
        return cls(ceil_float(fractions.Fraction(value)))

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _validate.positive("epsilon", self.epsilon))

    def pure_epsilon(self) -> float:
        return self.epsilon

    def rdp(self, alphas: np.ndarray) -> np.ndarray:
        return rdp_curves.randomized_response(alphas, self.epsilon)

    def to_dp_accounting(self):
        import dp_accounting

        # Binary randomized response is the tight eps-DP mechanism (Kairouz, Oh & Viswanath 2015).
        # dp_accounting's RR outputs a uniform bucket with probability p: eps = log((1 - p/2)/(p/2)).
        return dp_accounting.RandomizedResponseDpEvent(
            # rounded down by 4 ulps: a smaller noise parameter can only state a larger epsilon
            noise_parameter=2.0 / (1.0 + float(np.exp(self.epsilon))) * (1.0 - 4 * 2.0 ** -52), num_buckets=2
        )


@dataclasses.dataclass(frozen=True)
class ApproxDP(LeafEvent):
    """A release known only to be (``epsilon``, ``delta``)-DP."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _validate.nonnegative("epsilon", self.epsilon))
        object.__setattr__(self, "delta", _validate.probability_closed("delta", self.delta))

    def epsilon_delta(self) -> tuple[float, float]:
        return self.epsilon, self.delta

    def gdp_mu(self) -> None:
        return None

    def to_dp_accounting(self):
        raise ValueError(
            "dp_accounting has no event for a bare (epsilon, delta) guarantee; "
            "compose ApproxDP events with accountants.PLDAccountant instead"
        )


@dataclasses.dataclass(frozen=True)
class GDP(LeafEvent):
    """A release known to be ``mu``-Gaussian-DP (Dong, Roth & Su 2022)."""

    mu: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", _validate.positive("mu", self.mu))

    def gdp_mu(self) -> float:
        return self.mu

    def rdp(self, alphas: np.ndarray) -> np.ndarray:
        return rdp_curves.gaussian(alphas, self.mu)

    def to_dp_accounting(self):
        import dp_accounting

        return dp_accounting.GaussianDpEvent(noise_multiplier=1.0 / self.mu)


@dataclasses.dataclass(frozen=True)
class ZCDP(LeafEvent):
    """A release known to be ``rho``-zero-concentrated DP (Bun & Steinke 2016): RDP alpha * rho.

    The discrete Gaussian with integer sensitivity u and scale s is u^2/(2 s^2)-zCDP (Canonne, Kamath
    & Steinke 2020, Thm 4) -- proven for this curve, not for the continuous Gaussian's GDP one -- so
    privbandit records floating-point-safe Gaussian releases as ZCDP events. Only RDP-based
    accountants bound it.
    """

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _validate.positive("rho", self.rho))

    def gdp_mu(self) -> None:
        return None

    def rdp(self, alphas: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):  # rho alpha past 1e308 is inf: a vacuous but valid curve
            return np.asarray(alphas, dtype=float) * self.rho

    def to_dp_accounting(self):
        import dp_accounting

        return dp_accounting.ZCDpEvent(self.rho)


@dataclasses.dataclass(frozen=True)
class Composed(Event):
    """Sequential (adaptive) composition of ``events``."""

    events: tuple[Event, ...]

    def __post_init__(self) -> None:
        events = tuple(self.events)
        for i, e in enumerate(events):
            if not isinstance(e, Event):
                raise ValueError(f"events[{i}] must be an accountants Event, got {type(e).__name__}")
        object.__setattr__(self, "events", events)

    def leaves(self) -> Iterator[tuple[LeafEvent, int]]:
        for e in self.events:
            yield from e.leaves()


MAX_MULTIPLICITY = 2**1000
"""The largest number of times one release may be composed with itself (see SelfComposed)."""


def check_multiplicity(top: int, count: int) -> None:
    """Raise unless ``top x count`` -- the largest multiplicity a release reaches when an event whose
    releases repeat at most ``top`` times is composed ``count`` times -- stays below 2^1000 (MAX_MULTIPLICITY):
    accountants multiply a leaf's epsilon, delta or mu^2 by it as a float."""
    if top * count >= MAX_MULTIPLICITY:
        raise ValueError(f"count must keep every release's multiplicity below 2^1000 (~1.07e301), got "
                         f"{top} x a count of {count.bit_length()} bits")


@dataclasses.dataclass(frozen=True)
class SelfComposed(Event):
    """``count``-fold sequential composition of ``event`` with itself (``count`` may be 0)."""

    event: Event
    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.event, Event):
            raise ValueError(f"event must be an accountants Event, got {type(self.event).__name__}")
        object.__setattr__(self, "count", _validate.count("count", self.count))
        if self.count >= 2:
            # accountants multiply a leaf's epsilon, delta or mu^2 by its multiplicity as a float: past
            # the floats' range that was an OverflowError ((Laplace(2) * 5) * 1e308 in the pure
            # accountant). 2^1000 (~1.07e301) releases is beyond any count a run or a schedule makes.
            # (A leaf has multiplicity 1: only a composed event is walked.)
            top = 1 if isinstance(self.event, LeafEvent) else max((n for _, n in self.event.leaves()), default=0)
            check_multiplicity(top, self.count)

    def leaves(self) -> Iterator[tuple[LeafEvent, int]]:
        if self.count == 0:
            return
        for leaf, n in self.event.leaves():
            yield leaf, n * self.count


NO_EVENT = Composed(())
"""The empty composition: a record that no release touched."""
