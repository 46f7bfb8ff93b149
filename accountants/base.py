"""The accountant interface shared by every composition theorem in this package.

An accountant is a mutable sum of events (``compose``) that answers ``epsilon(delta)`` and
``delta(epsilon)`` with a *valid upper bound*: every numerical shortcut errs toward a larger
epsilon or delta. Accountants that are additive keep sufficient statistics (running sums), so that
composing one more event costs O(1) regardless of how many came before.

An event that an accountant cannot bound (for example a Gaussian in a pure-DP accountant) raises
:class:`UnsupportedEventError`; callers that take a minimum over accountants skip it, never
approximate it.
"""

from __future__ import annotations

import abc
import copy
from typing import ClassVar, Self

from accountants import _validate
from accountants.events import Event, LeafEvent, SelfComposed


class UnsupportedEventError(ValueError):
    """The accountant has no valid bound for this kind of event."""


class Accountant(abc.ABC):
    """Base class: subclasses implement ``_supports_leaf``, ``_add``, ``epsilon`` and ``delta``."""

    name: ClassVar[str] = "accountant"

    def compose(self, event: Event, count: int = 1) -> Self:
        """Add ``count`` sequential repetitions of ``event``; returns ``self`` for chaining.

        Atomic: if any leaf is unsupported nothing is added and UnsupportedEventError is raised.
        """
        if not isinstance(event, Event):
            raise ValueError(f"event must be an accountants Event, got {type(event).__name__}")
        count = _validate.count("count", count)
        # the bound every composed event keeps (a release's multiplicity below 2^1000, events.SelfComposed):
        # accountants multiply a leaf's epsilon or mu^2 by it as a float, and compose(event, 10**400) was an
        # OverflowError from five of them (session 15)
        SelfComposed(event, count)
        grouped = event.grouped()
        for leaf in grouped:
            if not self._supports_leaf(leaf):
                raise UnsupportedEventError(f"{self.name} accountant cannot bound {leaf!r}")
        if count:
            for leaf, n in grouped.items():
                self._add(leaf, n * count)
        return self

    def supports(self, event: Event) -> bool:
        """Whether every leaf of ``event`` has a bound in this accountant."""
        return all(self._supports_leaf(leaf) for leaf, _ in event.leaves())

    def copy(self) -> Self:
        """An independent copy (composing into it leaves this one unchanged)."""
        return copy.deepcopy(self)

    @abc.abstractmethod
    def _supports_leaf(self, leaf: LeafEvent) -> bool: ...

    @abc.abstractmethod
    def _add(self, leaf: LeafEvent, count: int) -> None: ...

    @abc.abstractmethod
    def epsilon(self, delta: float) -> float:
        """A valid epsilon for the composed events at ``delta`` in (0, 1); ``inf`` if none is known."""

    @abc.abstractmethod
    def delta(self, epsilon: float) -> float:
        """A valid delta for the composed events at ``epsilon`` >= 0; at most 1."""
