"""The best certificate: the minimum over every accountant that supports the events.

Each accountant returns a valid upper bound, so their minimum is valid too (DESIGN.md, "Best
certificate"). Accountants that cannot bound the events are skipped and reported as such, never
approximated.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from accountants import _validate
from accountants.base import Accountant, UnsupportedEventError
from accountants.events import Composed, Event


@dataclasses.dataclass(frozen=True)
class Certificate:
    """A certified privacy value and where it came from.

    ``value`` is epsilon (for :func:`best_epsilon`) or delta (for :func:`best_delta`); ``by`` names
    the accountant that achieved it; ``values`` maps every accountant tried to its value, or to
    ``None`` when it does not support the events.
    """

    value: float
    by: str
    values: dict[str, float | None]

    @property
    def epsilon(self) -> float:
        return self.value


def default_accountants() -> list[Callable[[], Accountant]]:
    """Factories of every accountant ``best_*`` tries, cheapest first."""
    from accountants.gdp import GDPAccountant
    from accountants.pure import PureAccountant

    factories: list[Callable[[], Accountant]] = [PureAccountant, GDPAccountant]
    try:  # accountants added by later modules register here
        from accountants.advanced import AdvancedCompositionAccountant
        from accountants.kov import KOVHeterogeneousAccountant
        from accountants.optimal import OptimalHomogeneousAccountant
        from accountants.pld import PLDAccountant
        from accountants.rdp import RDPAccountant

        factories += [
            AdvancedCompositionAccountant,
            KOVHeterogeneousAccountant,
            OptimalHomogeneousAccountant,
            RDPAccountant,
            PLDAccountant,
        ]
    except ImportError:  # pragma: no cover - during bootstrapping of the package
        pass
    return factories


def _as_event(events: Event | Sequence[Event]) -> Event:
    if isinstance(events, Event):
        return events
    return Composed(tuple(events))


def _best(events, query: Callable[[Accountant], float], accountants) -> Certificate:
    event = _as_event(events)
    values: dict[str, float | None] = {}
    best_value, best_name = math.inf, "none"
    for factory in accountants or default_accountants():
        acc = factory()
        try:
            acc.compose(event)
        except UnsupportedEventError:
            values[acc.name] = None
            continue
        v = query(acc)
        values[acc.name] = v
        if v < best_value:
            best_value, best_name = v, acc.name
    return Certificate(best_value, best_name, values)


def best_epsilon(events: Event | Sequence[Event], delta: float,
                 accountants: Sequence[Callable[[], Accountant]] | None = None) -> Certificate:
    """The smallest valid epsilon at ``delta`` over ``accountants`` (default: all of them)."""
    delta = _validate.probability("delta", delta)
    return _best(events, lambda a: a.epsilon(delta), accountants)


def best_delta(events: Event | Sequence[Event], epsilon: float,
               accountants: Sequence[Callable[[], Accountant]] | None = None) -> Certificate:
    """The smallest valid delta at ``epsilon`` over ``accountants`` (default: all of them)."""
    epsilon = _validate.nonnegative("epsilon", epsilon)
    return _best(events, lambda a: a.delta(epsilon), accountants)
