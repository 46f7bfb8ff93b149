"""The best certificate: the minimum over every accountant that supports the events.

Each accountant returns a valid upper bound, so their minimum is valid too (DESIGN.md, "Best
certificate"). Accountants that cannot bound the events are skipped and reported as such, never
approximated.

Exact and cheap first (issue 12): the closed-form accountants run first; when one of them is exact
for the events -- GDP for compositions of Gaussian/GDP releases (Dong, Roth & Su 2022, Cor. 3.3),
the optimal composition for identical eps-DP releases (Kairouz, Oh & Viswanath 2015, Thm 3.3) --
nothing can improve on it and the PLD is not run. The PLD runs only where it can improve, only if
its predicted grid fits (:meth:`PLDAccountant.feasible`), and only if its predicted cost fits the
remaining ``time_budget``; every skip is recorded in ``Certificate.notes``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

from accountants._validate import shown
from accountants import _validate
from accountants.base import Accountant, UnsupportedEventError
from accountants.events import Composed, Event


@dataclasses.dataclass(frozen=True)
class Certificate:
    """A certified privacy value and where it came from.

    ``value`` is an epsilon (``kind == "epsilon"``, from :func:`best_epsilon`) or a delta
    (``kind == "delta"``, from :func:`best_delta`); ``by`` names the accountant that achieved it;
    ``values`` maps every accountant tried to its value, or to ``None`` when it does not support
    the events. :attr:`epsilon` and :attr:`delta` read ``value`` only when it is of that kind, so a
    delta is never read as an epsilon (or the reverse).
    """

    value: float
    by: str
    values: dict[str, float | None]
    notes: dict[str, str] = dataclasses.field(default_factory=dict)
    kind: str = "epsilon"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {shown(self.kind)}")

    @property
    def epsilon(self) -> float:
        """The certified epsilon; ValueError on a delta certificate (read ``.delta`` or ``.value``)."""
        if self.kind != "epsilon":
            raise ValueError(f"this certificate's value is a {self.kind} (from best_delta), not an epsilon; "
                             f"read .{self.kind} or .value")
        return self.value

    @property
    def delta(self) -> float:
        """The certified delta; ValueError on an epsilon certificate (read ``.epsilon`` or ``.value``)."""
        if self.kind != "delta":
            raise ValueError(f"this certificate's value is a {self.kind} (from best_epsilon), not a delta; "
                             f"read .{self.kind} or .value")
        return self.value


#: what a :class:`Certificate`'s ``value`` can be
KINDS = ("epsilon", "delta")


def default_accountants() -> list[Callable[[], Accountant]]:
    """Factories of every accountant ``best_*`` tries, cheapest first."""
    from accountants.gdp import GDPAccountant
    from accountants.laplace_exact import LaplaceExactAccountant
    from accountants.pure import PureAccountant

    # the exact one-Laplace profile first: where it applies nothing is below it, and the first of equal values
    # names the certificate (session 17)
    factories: list[Callable[[], Accountant]] = [LaplaceExactAccountant, PureAccountant, GDPAccountant]
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
    if isinstance(events, (str, bytes)) or not hasattr(events, "__iter__"):
        raise ValueError(f"events must be an Event or a sequence of Events, got {shown(events)}")
    try:
        items = tuple(events)
    except TypeError:  # (a 0-d numpy array has __iter__ but is not iterable: "iteration over a 0-d array")
        raise ValueError(f"events must be an Event or a sequence of Events, got {shown(events)}") from None
    for i, item in enumerate(items):
        if not isinstance(item, Event):
            raise ValueError(f"events[{i}] must be an Event (e.g. Laplace(scale=...)), got {shown(item)}")
    return Composed(items)


_PLD_SECONDS_PER_BIN = 2e-6  # measured: ~0.3 s for a 1.7e5-bin Gaussian self-composition, 2 cores


def exact_accountant(event: Event) -> str | None:
    """The name of an accountant that is exact for ``event`` (no other can improve on it), or None.

    GDP is exact for compositions of Gaussian mechanisms and mu-GDP releases; the optimal
    homogeneous composition is exact for identical ``PureDP`` releases (randomized response is their
    worst case); one Laplace release has its exact profile (:mod:`accountants.laplace_exact`, session 17).
    Two or more Laplace releases have no such closed form (the PLD can improve on every other).
    """
    from accountants.events import GDP, Gaussian, Laplace, PureDP

    grouped = event.grouped()
    if not grouped:
        return None
    if all(type(leaf) in (Gaussian, GDP) for leaf in grouped):
        return "gdp"
    if len(grouped) == 1 and type(next(iter(grouped))) is PureDP:
        return "optimal"
    if len(grouped) == 1 and type(next(iter(grouped))) is Laplace and next(iter(grouped.values())) == 1:
        return "laplace-exact"
    return None


def _best(events, query: Callable[[Accountant], float], accountants, time_budget,
          kind: str = "epsilon", exceeds: Callable[[Accountant, float], bool] | None = None) -> Certificate:
    """The minimum of ``query`` over the accountants that support ``events``, in the order given with the
    PLD last (the first of equal values names it), and every accountant's value.

    ``exceeds(acc, value)`` (no ``time_budget``): for a caller that reads only the minimum and its name
    (:func:`minimum_epsilon`). An accountant whose own class answers :meth:`Accountant.epsilon_exceeds` (not
    one inherited: a subclass may answer its queries differently) and that is not exact for the events is
    asked after the others; where ``exceeds`` is True at their minimum so far, its value is provably above
    the minimum and is not computed (recorded as inf, with a note). So the minimum and its name are those
    computed without it, bit for bit; the PLD's skips read only the exact accountant's value, computed as
    before (session 16; session 15 did this for GDP alone in ``privbandit.schedule``)."""
    from accountants.pld import PLDAccountant

    if exceeds is not None and time_budget is not None:
        raise ValueError("exceeds needs time_budget=None: skipping work would move the PLD's time budget")
    event = _as_event(events)
    start = time.monotonic()
    values: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    queried: list[list] = []  # [name, value] in the accountants' order (a deferred value is filled in later)
    deferred: list[tuple[Accountant, list]] = []
    exact = exact_accountant(event)
    factories = default_accountants() if accountants is None else _factories(accountants)
    # closed forms first, the PLD last: an exact answer makes it unnecessary
    factories.sort(key=lambda f: isinstance(f, type) and issubclass(f, PLDAccountant))
    for factory in factories:
        acc = factory()
        try:
            acc.compose(event)
        except UnsupportedEventError:
            values[acc.name] = None
            continue
        if isinstance(acc, PLDAccountant) and acc.pessimistic:
            if exact is not None and exact in values and values[exact] is not None:
                values[acc.name] = None
                notes[acc.name] = f"skipped: {exact} is exact for these events"
                continue
            if not acc.feasible():
                values[acc.name] = None
                notes[acc.name] = (f"skipped: predicted grid of {acc.estimated_bins():.3g} points "
                                   f"exceeds max_bins={acc.max_bins}")
                continue
            if time_budget is not None:
                predicted = acc.estimated_bins() * _PLD_SECONDS_PER_BIN * max(1, len(acc.groups))
                remaining = time_budget - (time.monotonic() - start)
                if predicted > remaining:
                    values[acc.name] = None
                    notes[acc.name] = (f"skipped: predicted {predicted:.3g} s exceeds the remaining "
                                       f"time budget {max(remaining, 0.0):.3g} s")
                    continue
        entry = [acc.name, None]
        queried.append(entry)
        if exceeds is not None and acc.name != exact and "epsilon_exceeds" in type(acc).__dict__:
            values[acc.name] = math.inf  # (a placeholder: an exact accountant's None is what the PLD reads)
            deferred.append((acc, entry))
            continue
        entry[1] = values[acc.name] = query(acc)
    for acc, entry in deferred:
        least = min((v for _, v in queried if v is not None), default=math.inf)
        if exceeds(acc, least):
            entry[1] = values[acc.name] = math.inf
            notes[acc.name] = "skipped: provably above the minimum"
        else:
            entry[1] = values[acc.name] = query(acc)
    best_value, best_name = math.inf, "none"
    for name, v in queried:
        if v < best_value:
            best_value, best_name = v, name
    return Certificate(best_value, best_name, values, notes, kind)


def _factories(accountants) -> list:
    """``accountants`` as a non-empty list of accountant factories (classes or callables); an empty
    list used to mean "all of them" silently, and a string failed with "'str' object is not callable"."""
    if isinstance(accountants, (str, bytes)) or not isinstance(accountants, Sequence):
        raise ValueError(f"accountants must be a sequence of accountant classes (e.g. [PureAccountant]) or None "
                         f"for all of them, got {shown(accountants)}")
    factories = list(accountants)
    if not factories:
        raise ValueError("accountants must hold at least one accountant class (None: all of them), got an empty sequence")
    wrong = [f for f in factories if not callable(f)]
    if wrong:
        raise ValueError(f"accountants must be accountant classes (e.g. PureAccountant), got {wrong[0]!r}")
    return factories


def _budget(time_budget: float | None) -> float | None:
    return None if time_budget is None else _validate.positive("time_budget", time_budget)


def best_epsilon(events: Event | Sequence[Event], delta: float,
                 accountants: Sequence[Callable[[], Accountant]] | None = None,
                 time_budget: float | None = None) -> Certificate:
    """The smallest valid epsilon at ``delta`` over ``accountants`` (default: all of them).

    ``time_budget`` (seconds): the PLD is skipped when its predicted cost exceeds what is left of it
    (the closed-form accountants answer in milliseconds at any count). The PLD is also skipped when an
    exact accountant answers (:func:`exact_accountant`) or its grid would exceed ``max_bins``.
    """
    delta = _validate.delta_or_zero("delta", delta)  # 0: pure DP (every accountant's pure_epsilon; session 15)
    return _best(events, lambda a: a.epsilon(delta), accountants, _budget(time_budget))


def minimum_epsilon(events: Event | Sequence[Event], delta: float,
                    accountants: Sequence[Callable[[], Accountant]] | None = None) -> tuple[float, str]:
    """``(cert.value, cert.by)`` of ``best_epsilon(events, delta, accountants)``, bit for bit, without the
    root searches that provably cannot reach the minimum (:meth:`Accountant.epsilon_exceeds`: GDP, the optimal
    composition). The per-accountant values are not returned (the skipped ones are not computed): for
    callers that report only the minimum and its accountant, the live certificate
    (``PrivacySchedule.live_certificates``)."""
    delta = _validate.delta_or_zero("delta", delta)
    cert = _best(events, lambda a: a.epsilon(delta), accountants, None,
                 exceeds=(lambda a, e: a.epsilon_exceeds(e, delta)) if delta > 0.0 else None)
    return cert.value, cert.by


def best_delta(events: Event | Sequence[Event], epsilon: float,
               accountants: Sequence[Callable[[], Accountant]] | None = None,
               time_budget: float | None = None) -> Certificate:
    """The smallest valid delta at ``epsilon`` over ``accountants`` (default: all of them)."""
    epsilon = _validate.nonnegative("epsilon", epsilon)
    return _best(events, lambda a: a.delta(epsilon), accountants, _budget(time_budget), "delta")
