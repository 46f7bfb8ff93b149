"""Conversion between this package's events and ``dp_accounting`` DpEvents (Google dp-accounting).

``to_dp_accounting`` lets users feed a composed event to Google's own accountants (``PLDAccountant``,
``RdpAccountant``); ``from_dp_accounting`` accepts theirs. Structure (``ComposedDpEvent``,
``SelfComposedDpEvent``) is preserved both ways. Sensitivities are folded into the noise multiplier
(dp_accounting's events have unit sensitivity), which leaves every privacy curve unchanged.

Neighbouring relation. dp-accounting's accountants interpret an event under a
``NeighboringRelation``, and 0.6 refuses some pairs: ``RandomizedResponseDpEvent`` (our ``PureDP``)
only under ``REPLACE_ONE``/``REPLACE_SPECIAL``, ``LaplaceDpEvent`` only under
``ADD_OR_REMOVE_ONE``/``REPLACE_SPECIAL``. Our events state their guarantee for this toolkit's own
neighbouring relation (one record changed), i.e. they *are* the pair of output distributions:
``REPLACE_ONE`` is that reading for randomized response, ``ADD_OR_REMOVE_ONE`` for additive noise
with the sensitivity folded in. :func:`neighboring_relation` picks it, and
:func:`dp_accounting_accountant` builds a dp-accounting accountant with it and composes the event.
(``REPLACE_SPECIAL`` is *not* equivalent: dp-accounting 0.6 then reports about half the epsilon of a
randomized response.) A mix of ``PureDP`` with Laplace/Gaussian events has no common relation in
dp-accounting 0.6 and is refused with a ValueError.

dp-accounting 0.6 defect (docs/accountants.md): its ``PLDAccountant`` ignores the count of a
``SelfComposedDpEvent`` of ``RandomizedResponseDpEvent`` (and the ``count`` argument of
``compose``): 1000 x eps = 0.1 certifies 0.100 instead of 19.3. :func:`dp_accounting_accountant`
works around it by composing such releases one at a time (up to ``max_sequential`` of them).
"""

from __future__ import annotations

import math

from accountants._validate import shown
from accountants.events import NO_EVENT, Composed, Event, Gaussian, Laplace, LeafEvent, PureDP, SelfComposed, ZCDP


def to_dp_accounting(event: Event):
    """The equivalent ``dp_accounting.DpEvent`` of ``event``."""
    import dp_accounting

    _check_event(event)
    if isinstance(event, LeafEvent):
        return event.to_dp_accounting()
    if isinstance(event, Composed):
        return dp_accounting.ComposedDpEvent([to_dp_accounting(e) for e in event.events])
    if isinstance(event, SelfComposed):
        return dp_accounting.SelfComposedDpEvent(to_dp_accounting(event.event), event.count)
    raise ValueError(f"cannot convert event of type {type(event).__name__} to dp_accounting")


def _rr_epsilon(p: float) -> float:
    """log(2/p - 1), the epsilon of binary randomized response with noise parameter p, rounded up.

    1 - p is exact for p >= 1/2 (Sterbenz), the quotient and log1p add ~1 ulp each: a relative
    margin of 4 ulps keeps the result at or above the exact value for the float p (never optimistic).
    """
    return math.log1p(2.0 * (1.0 - p) / p) * (1.0 + 4 * 2.0 ** -52)


def _check_event(event) -> None:
    if not isinstance(event, Event):
        raise ValueError(f"event must be an Event (e.g. Laplace(scale=...)), got {shown(event)}")


def neighboring_relation(event: Event):
    """The ``dp_accounting.NeighboringRelation`` under which ``event``'s dp-accounting form means what
    it means here: REPLACE_ONE for pure-DP (randomized response) events, ADD_OR_REMOVE_ONE for
    additive-noise events. ValueError for a mix (no common relation in dp-accounting 0.6)."""
    import dp_accounting

    _check_event(event)
    kinds = {isinstance(leaf, PureDP) for leaf in event.grouped()}
    if kinds == {True, False}:
        raise ValueError("dp_accounting 0.6 has no neighbouring relation under which both randomized "
                         "response (PureDP) and Laplace/Gaussian events keep their meaning; account "
                         "for the mix with accountants.best_epsilon or accountants.PLDAccountant")
    if kinds == {True}:
        return dp_accounting.NeighboringRelation.REPLACE_ONE
    return dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


def dp_accounting_accountant(event: Event, kind: str = "pld", *, max_sequential: int = 100_000, **kwargs):
    """A dp-accounting ``PLDAccountant`` (``kind="pld"``) or ``RdpAccountant`` (``"rdp"``) with the
    right :func:`neighboring_relation`, ``event`` composed into it (``kwargs`` go to its constructor).

    Self-compositions of PureDP are composed one release at a time in the PLD (dp-accounting 0.6
    ignores their count, see the module docstring); more than ``max_sequential`` of them raise.
    """
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    _check_event(event)
    if not isinstance(kind, str):
        raise ValueError(f"kind must be 'pld' or 'rdp', got {shown(kind)}")
    relation = neighboring_relation(event)
    if kind == "pld":
        acc = pld_privacy_accountant.PLDAccountant(neighboring_relation=relation, **kwargs)
    elif kind == "rdp":
        acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation, **kwargs)
    else:
        raise ValueError(f"kind must be 'pld' or 'rdp', got {shown(kind)}")
    if kind == "pld" and relation == dp_accounting.NeighboringRelation.REPLACE_ONE:
        grouped = event.grouped()
        total = sum(grouped.values())
        if total > max_sequential:
            raise ValueError(f"{total} randomized-response releases exceed max_sequential={max_sequential} "
                             "(dp_accounting 0.6 ignores self-composition counts of them); use "
                             "accountants.PLDAccountant")
        for leaf, n in grouped.items():
            single = leaf.to_dp_accounting()
            for _ in range(n):
                acc.compose(single)
        return acc
    acc.compose(to_dp_accounting(event))
    return acc


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
            raise ValueError(f"RandomizedResponseDpEvent noise_parameter must lie in (0, 1], got {shown(p)}")
        # outputs the true bit w.p. 1 - p/2: eps = log((1 - p/2) / (p/2)) = log(2/p - 1)
        eps = _rr_epsilon(p) if p < 1 else 0.0
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
