"""Conversion between this package's events and ``dp_accounting`` DpEvents (Google dp-accounting).

``to_dp_accounting`` lets users feed a composed event to Google's own accountants (``PLDAccountant``,
``RdpAccountant``); ``from_dp_accounting`` accepts theirs. Structure (``ComposedDpEvent``,
``SelfComposedDpEvent``) is preserved both ways. Sensitivities are folded into the noise multiplier
(dp_accounting's events have unit sensitivity), which leaves every privacy curve unchanged.
"""

from __future__ import annotations

import math

from accountants.events import NO_EVENT, Composed, Event, Gaussian, Laplace, LeafEvent, PureDP, SelfComposed, ZCDP


def to_dp_accounting(event: Event):
    """The equivalent ``dp_accounting.DpEvent`` of ``event``."""
    import dp_accounting

    if isinstance(event, LeafEvent):
        return event.to_dp_accounting()
    if isinstance(event, Composed):
        return dp_accounting.ComposedDpEvent([to_dp_accounting(e) for e in event.events])
    if isinstance(event, SelfComposed):
        return dp_accounting.SelfComposedDpEvent(to_dp_accounting(event.event), event.count)
    raise ValueError(f"cannot convert event of type {type(event).__name__} to dp_accounting")


def from_dp_accounting(dp_event) -> Event:
    """This package's event for a ``dp_accounting.DpEvent``.

    Supported: LaplaceDpEvent, GaussianDpEvent, ZCDpEvent, RandomizedResponseDpEvent with 2 buckets (-> PureDP),
    NoOpDpEvent (-> the empty composition), ComposedDpEvent and SelfComposedDpEvent (recursively).
    Anything else raises ValueError naming the event type.
    """
    import dp_accounting

    if isinstance(dp_event, dp_accounting.LaplaceDpEvent):
        return Laplace(scale=dp_event.noise_multiplier)
    if isinstance(dp_event, dp_accounting.GaussianDpEvent):
        return Gaussian(sigma=dp_event.noise_multiplier)
    if isinstance(dp_event, dp_accounting.RandomizedResponseDpEvent):
        if dp_event.num_buckets != 2:
            raise ValueError(
                f"RandomizedResponseDpEvent with num_buckets={dp_event.num_buckets} is not supported "
                "(only binary randomized response maps to PureDP)")
        p = dp_event.noise_parameter
        if not 0 < p <= 1:
            raise ValueError(f"RandomizedResponseDpEvent noise_parameter must lie in (0, 1], got {p!r}")
        # outputs the true bit w.p. 1 - p/2: eps = log((1 - p/2) / (p/2)) = log(2/p - 1)
        eps = math.log(2.0 / p - 1.0) if p < 1 else 0.0
        if eps <= 0:
            raise ValueError("RandomizedResponseDpEvent with noise_parameter=1 releases nothing; "
                             "it has epsilon 0, which PureDP does not represent")
        return PureDP(eps)
    if isinstance(dp_event, dp_accounting.ZCDpEvent):
        return ZCDP(rho=dp_event.rho)
    if isinstance(dp_event, dp_accounting.NoOpDpEvent):
        return NO_EVENT
    if isinstance(dp_event, dp_accounting.ComposedDpEvent):
        return Composed(tuple(from_dp_accounting(e) for e in dp_event.events))
    if isinstance(dp_event, dp_accounting.SelfComposedDpEvent):
        return SelfComposed(from_dp_accounting(dp_event.event), dp_event.count)
    raise ValueError(f"cannot convert dp_accounting event of type {type(dp_event).__name__}")
