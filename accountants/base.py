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
import math
from typing import ClassVar, Self

from accountants import _validate
from accountants._sums import ROUND_UP
from accountants.events import Event, LeafEvent, check_multiplicity


class UnsupportedEventError(ValueError):
    """The accountant has no valid bound for this kind of event."""


#: relative margin of :meth:`Accountant.epsilon_exceeds`' tests (its delta at an epsilon above delta by more
#: than this): far above the accountants' rounding of their non-increasing delta(eps) (~1e-12: the 40-bit delta
#: lattice, compensated sums, log-sums), far below the gaps met in practice (session 15)
CANNOT_REACH_MARGIN = 1e-6


def _zero_above_pure_sum(delta_of):
    """``delta_of(self, epsilon)``, answering exactly 0 where ``epsilon`` is at or above
    :meth:`Accountant.pure_epsilon` (finite only when every composed release is pure (eps_i, 0)-DP).

    Valid: k adaptively composed (eps_i, 0)-DP releases are (sum eps_i, 0)-DP (Dwork & Roth 2014,
    Thm 3.16), hence (epsilon, 0)-DP for every epsilon >= sum eps_i, and ``pure_epsilon`` is at or
    above the exact sum (fsum, then rounded up; subnormal ratios rounded up exactly). Each accountant's
    own curve answered a positive delta there before (session 16: e.g. PureDP(0.1) x 1000 at
    epsilon 100.00000000001: GDP 9.3e-121, advanced 1.3e-174, RDP 1.9e-286, the PLD 4.6e-9, its FFT
    rounding margin, at every epsilon). A delta that is already 0 stays 0; the curve is still asked
    below the pure sum."""
    def delta(self, epsilon: float) -> float:
        epsilon = _validate.nonnegative("epsilon", epsilon)
        # only where compose recorded the pure terms (a release composed through it): a subclass that adds
        # releases by another path leaves the record empty, and an empty record's sum 0 would answer 0 for
        # everything (session 16's review); an accountant with nothing composed answers from its own curve
        if self._pure_only and self._pure_terms and epsilon >= self.pure_epsilon():
            return 0.0
        return delta_of(self, epsilon)

    delta.__name__, delta.__qualname__, delta.__doc__ = delta_of.__name__, delta_of.__qualname__, delta_of.__doc__
    delta._answers_pure = True
    return delta


class Accountant(abc.ABC):
    """Base class: subclasses implement ``_supports_leaf``, ``_add``, ``epsilon`` and ``delta``."""

    name: ClassVar[str] = "accountant"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("delta")
        if callable(own) and not getattr(own, "_answers_pure", False):
            cls.delta = _zero_above_pure_sum(own)

    def compose(self, event: Event, count: int = 1) -> Self:
        """Add ``count`` sequential repetitions of ``event``; returns ``self`` for chaining.

        Atomic: if any leaf is unsupported nothing is added and UnsupportedEventError is raised.
        """
        if not isinstance(event, Event):
            raise ValueError(f"event must be an accountants Event, got {type(event).__name__}")
        count = _validate.count("count", count)
        grouped = event.grouped()
        # the bound every composed event keeps (a release's multiplicity below 2^1000, as events.SelfComposed):
        # accountants multiply a leaf's epsilon or mu^2 by it as a float, and compose(event, 10**400) was an
        # OverflowError from five of them (session 15). Checked on the grouped leaves already at hand: building
        # a SelfComposed walked the event again and doubled compose's cost (2.3 -> 4.1 us a call, measured)
        if count >= 2 and grouped:
            check_multiplicity(max(grouped.values()), count)
        for leaf in grouped:
            if not self._supports_leaf(leaf):
                raise UnsupportedEventError(f"{self.name} accountant cannot bound {leaf!r}")
        if count:
            for leaf, n in grouped.items():
                self._note_pure(leaf, n * count)
                self._add(leaf, n * count)
        return self

    #: what delta = 0 needs (session 15), kept by ``compose``: the releases' pure epsilons (eps_i x count; a
    #: list summed exactly by fsum when asked, compacted every 1024 terms), or that some release has none.
    #: Set on every instance at creation (``__new__``), so a state restored without them -- pickled before
    #: session 15 -- is told apart and answers ``inf`` at delta = 0 (:meth:`__setstate__`): the class-level
    #: "nothing composed yet" would read as epsilon 0 for a history of releases.
    _pure_terms: list | None
    _pure_only: bool

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self._pure_terms, self._pure_only = None, True
        return self

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_pure_only" not in state:  # saved before delta = 0 was answered: the releases' purity is unknown
            self._pure_terms, self._pure_only = None, False

    def _note_pure(self, leaf: LeafEvent, count: int) -> None:
        point = leaf.epsilon_delta()
        if point is None or point[1] > 0:  # an (eps0, delta0 > 0) release, a Gaussian, zCDP: no finite eps at 0
            self._pure_only = False
            return
        terms = self._pure_terms
        if terms is None:
            terms = self._pure_terms = []
        try:
            terms.append(point[0] * count)
        except OverflowError:  # a count beyond the floats: the sum is past them too
            terms.append(math.inf)
        if len(terms) >= 1024:  # (each compaction rounds once: 2^-53 relative, far inside ROUND_UP)
            terms[:] = [math.fsum(terms)]

    def pure_epsilon(self) -> float:
        """The epsilon at delta = 0: sum eps_i over the composed releases when every one is pure
        (eps_i, 0)-DP, rounded up, else ``inf``.

        Exact, not only valid: the worst pair of one pure release (randomized response at eps_i; a
        Laplace release's loss is +eps_i with probability 1/2) reaches its largest loss with positive
        probability, so the composition's loss reaches sum eps_i with positive probability and no smaller
        epsilon has delta 0 (Dwork & Roth 2014, Thm 3.16 for the bound). A release that is not pure has
        an unbounded (or delta0-mass infinite) loss: delta = 0 holds at no finite epsilon. dp-accounting
        answers delta = 0 too (its RDP accountant inf unless every order is 0, its PLD the largest finite
        loss, inf with any infinite mass). Every accountant here answers delta = 0 with this value."""
        if not self._pure_only:
            return math.inf
        total = math.fsum(self._pure_terms or ())  # (an inf term: inf; two would be nan only as inf - inf: none)
        # each term eps_i x count is rounded once (count exactly an int below 2^53, else once more), the sum
        # once per compaction: ROUND_UP (1e-13 relative) covers them, as for the running sums elsewhere
        return total + total * ROUND_UP if math.isfinite(total) else math.inf

    def _zero_delta(self, delta) -> float:
        """``delta`` validated for ``epsilon(delta)``: 0 (pure DP, answered by :meth:`pure_epsilon`) or a
        normal float in (0, 1)."""
        return _validate.delta_or_zero("delta", delta)

    def epsilon_exceeds(self, epsilon: float, delta: float) -> bool:
        """True only where ``self.epsilon(delta) > epsilon`` is certain from a test cheaper than the query
        (``delta`` in (0, 1), validated by the caller); False: not known, ask :meth:`epsilon`.

        A caller that reads only the minimum over accountants and the name of the one that reached it (the
        live certificate, :func:`accountants.best.minimum_epsilon`) need not ask an accountant whose epsilon
        is provably above another's. The default knows nothing; accountants whose epsilon is a root search on
        their own non-increasing delta(eps) answer with one delta evaluation (GDP, the optimal composition)."""
        return False

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
        """A valid epsilon for the composed events at ``delta`` in (0, 1), or at ``delta`` = 0 (pure DP:
        :meth:`pure_epsilon`); ``inf`` if none is known."""

    @abc.abstractmethod
    def delta(self, epsilon: float) -> float:
        """A valid delta for the composed events at ``epsilon`` >= 0; at most 1."""
