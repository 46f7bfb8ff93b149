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
import dataclasses
import functools
import math
from fractions import Fraction
from typing import ClassVar, Self

from accountants import _validate
from accountants._sums import ROUND_UP
from accountants.events import Event, LeafEvent, ceil_float as _ceil_float, check_multiplicity, exact_pure_epsilon


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


_MAX_PURE_TERMS = 1024
"""Distinct pure releases an accountant keeps for its exact sum before folding them into one rounded-up term."""


@dataclasses.dataclass(frozen=True)
class _Sum:
    """A folded part of the pure sum: an epsilon already rounded up (a float, exact as a rational)."""

    epsilon: float


@functools.lru_cache(maxsize=4096)
def _exact_ratio(leaf) -> tuple[int, int]:
    """(numerator, denominator) of one pure release's exact epsilon (events.exact_pure_epsilon); cached: a
    record's few distinct releases recur in every accountant and every query."""
    if isinstance(leaf, _Sum):
        return leaf.epsilon.as_integer_ratio()
    value = exact_pure_epsilon(leaf)
    return value.numerator, value.denominator


def _exact_sum_up(terms: dict) -> float:
    """The least float at or above sum count x exact epsilon over ``terms`` (ints only: no Fraction per term)."""
    num, den = 0, 1
    for leaf, count in terms.items():
        a, b = _exact_ratio(leaf)
        num, den = num * b + count * a * den, den * b
    try:
        x = num / den  # (int / int true division: correctly rounded)
    except OverflowError:
        return math.inf
    xn, xd = x.as_integer_ratio()
    return math.nextafter(x, math.inf) if xn * den < num * xd else x


def _noting_pure(add, shadows: bool = True):
    """``add(self, leaf, count)`` (a subclass's ``_add``), recording the release for :meth:`Accountant.pure_epsilon`
    first. Session 17: the record was kept by ``compose`` alone, so a subclass that added releases through its
    ``_add`` by a path of its own left it empty, and an empty record is "nothing composed": ``pure_epsilon()`` 0,
    ``epsilon(0)`` 0 for a PureDP(1) release (session 16 guarded only ``delta``'s shortcut). Every release that
    enters an accountant's state goes through ``_add`` (the abstract method), so the record is now complete
    whatever calls it. An ``_add`` that calls its parent's (``super()._add``) is recorded once: only the
    outermost call records.

    ``shadows`` (session 18): whether a parent class has a recording ``_add`` of its own, which this one may
    reach through ``super()``. Where none has and this is the instance's own class's ``_add`` -- every
    accountant of this package -- no call can be nested in another, so it records without the flag set in
    and deleted from the instance's ``__dict__`` around every call: cachegrind, one ``compose(Laplace(100))``
    into PureAccountant, GDP and KOV (mean of 12,000) 38,403 -> 36,446 instructions; 57774e4, before the
    record, 31,256."""
    def _add(self, leaf, count):
        if not shadows and type(self)._add is _add:
            self._note_pure(leaf, count)
            return add(self, leaf, count)
        state = self.__dict__
        if "_adding" in state:
            return add(self, leaf, count)
        self._note_pure(leaf, count)
        state["_adding"] = True  # (removed after: the instance's state, pickled or copied, is as before)
        try:
            return add(self, leaf, count)
        finally:
            del state["_adding"]

    _add.__name__, _add.__qualname__, _add.__doc__ = add.__name__, add.__qualname__, add.__doc__
    _add._notes_pure = True
    return _add


class Accountant(abc.ABC):
    """Base class: subclasses implement ``_supports_leaf``, ``_add``, ``epsilon`` and ``delta``."""

    name: ClassVar[str] = "accountant"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("delta")
        if callable(own) and not getattr(own, "_answers_pure", False):
            cls.delta = _zero_above_pure_sum(own)
        own_add = cls.__dict__.get("_add")
        if callable(own_add) and not getattr(own_add, "_notes_pure", False):
            shadows = any(getattr(base.__dict__.get("_add"), "_notes_pure", False) for base in cls.__mro__[1:])
            cls._add = _noting_pure(own_add, shadows)

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
                self._add(leaf, n * count)  # (records the pure term too: _noting_pure)
        return self

    #: what delta = 0 needs (session 15), kept by ``compose``: the pure releases and their counts ({leaf: count},
    #: summed exactly when asked; session 17), or that some release has none.
    #: Set on every instance at creation (``__new__``), so a state restored without them -- pickled before
    #: session 15 -- is told apart and answers ``inf`` at delta = 0 (:meth:`__setstate__`): the class-level
    #: "nothing composed yet" would read as epsilon 0 for a history of releases.
    _pure_terms: dict | None
    _pure_only: bool

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self._pure_terms, self._pure_only, self._pure_sum = None, True, None
        return self

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_pure_only" not in state:  # saved before delta = 0 was answered: the releases' purity is unknown
            self._pure_terms, self._pure_only = None, False
        self._pure_sum = None  # (a cache; absent from states saved before session 17)

    def _note_pure(self, leaf: LeafEvent, count: int) -> None:
        point = leaf.epsilon_delta()
        if point is None or point[1] > 0:  # an (eps0, delta0 > 0) release, a Gaussian, zCDP: no finite eps at 0
            self._pure_only = False
            return
        terms = self._pure_terms
        if isinstance(terms, list):  # a state pickled before session 17: float terms, kept as then (pure_epsilon)
            try:
                terms.append(point[0] * count)
            except OverflowError:
                terms.append(math.inf)
            return
        if terms is None:
            terms = self._pure_terms = {}
        # the leaf itself, its count an int: the sum is taken exactly when asked (pure_epsilon), so one record's
        # sum is the same number whichever grouping or order its releases arrived in (session 17)
        terms[leaf] = terms.get(leaf, 0) + count
        self._pure_sum = None
        if len(terms) > _MAX_PURE_TERMS:  # many distinct releases: one upper term (rounded up once, still valid)
            total = _exact_sum_up(terms)
            terms.clear()
            terms[_Sum(total)] = 1

    def pure_epsilon(self) -> float:
        """The epsilon at delta = 0: sum eps_i over the composed releases when every one is pure
        (eps_i, 0)-DP, rounded up, else ``inf``.

        Exact, not only valid: the worst pair of one pure release (randomized response at eps_i; a
        Laplace release's loss is +eps_i with probability 1/2) reaches its largest loss with positive
        probability, so the composition's loss reaches sum eps_i with positive probability and no smaller
        epsilon has delta 0 (Dwork & Roth 2014, Thm 3.16 for the bound). A release that is not pure has
        an unbounded (or delta0-mass infinite) loss: delta = 0 holds at no finite epsilon. dp-accounting
        answers delta = 0 too (its RDP accountant inf unless every order is 0, its PLD the largest finite
        loss, inf with any infinite mass). Every accountant here answers delta = 0 with this value.

        Session 17: the least float at or above the exact sum of the releases' exact epsilons (a Laplace
        release's sensitivity / scale as a rational, not its rounded quotient), each leaf's count an exact
        int. Before, fsum of the rounded terms x (1 + 1e-13): ~450 ulps above, and not a function of the
        multiset alone (a record in Lap(2) + 6 Lap(12) read 1 + 1e-13 where the schedule's Lap(2) + PureDP(0.5),
        the same sum 1, read 1 + 4 ulps through the optimal composition: realized above certified)."""
        if not self._pure_only:
            return math.inf
        terms = self._pure_terms
        if isinstance(terms, list):  # pickled before session 17: float terms, summed and rounded up as then
            total = math.fsum(terms)
            return total + total * ROUND_UP if math.isfinite(total) else math.inf
        if not terms:
            return 0.0
        if self._pure_sum is None:
            self._pure_sum = _exact_sum_up(terms)
        return self._pure_sum

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
