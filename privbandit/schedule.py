"""Privacy schedules: the worst-case multiset of releases one record can be part of in t rounds.

A policy declares its schedule; ``privbandit.budget`` evaluates it before a run and the engine
evaluates the same function at every checkpoint of a run (the *live certificate*). A schedule is
data-independent: it bounds every pair of neighbouring reward streams and every transcript
(DESIGN.md, "Certified (eps, delta) at round t").

Schedules must be monotone in t (more rounds never shrink the worst case); :meth:`curve` relies on
it to fill the rounds between evaluated points with the value of the next evaluated point, which is
a valid upper bound.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from accountants import GDP, Certificate, Event, Gaussian, GDPAccountant, best_delta, best_epsilon
from accountants.events import NO_EVENT


@functools.lru_cache(maxsize=2048)
def _certified_cached(events: Event, delta: float, accountants: tuple | None) -> Certificate:
    return best_epsilon(events, delta, None if accountants is None else list(accountants))


UNHASHABLE = object()


def accountants_key(accountants) -> object:
    """A memo key for an ``accountants`` argument: None, or the tuple of the factories themselves
    (holding them, so a factory freed after one query cannot lend its recycled ``id`` to a different
    one of the next: keyed by ``id``, a query with an optimistic PLD could answer a later one with
    the pure accountant). ``UNHASHABLE`` when a factory cannot be hashed: do not memoise."""
    if accountants is None:
        return None
    try:
        key = tuple(accountants)
        hash(key)
    except TypeError:
        return UNHASHABLE
    return key


def _certified(events: Event, delta: float, accountants) -> Certificate:
    """``best_epsilon(events, delta, accountants)``, memoised: a deterministic function of the
    (immutable, hashable) events, delta and accountant classes, and every run of a sweep or a repeated
    experiment certifies the same schedule at the same checkpoints again. Each caller gets its own
    copy of the certificate's dicts. Unhashable arguments are computed directly."""
    try:
        if isinstance(accountants, (str, bytes)):
            raise TypeError  # not a sequence of accountants: best_epsilon names it
        key = None if accountants is None else tuple(accountants)
        # delta as given (best_epsilon validates it): float() here would silently accept "1e-6" or True
        cert = _certified_cached(events, delta, key)
    except TypeError:  # an unhashable (or not iterable) accountant or event: no memo
        return best_epsilon(events, delta, accountants)
    return dataclasses.replace(cert, values=dict(cert.values), notes=dict(cert.notes))


class PrivacySchedule(abc.ABC):
    """Worst-case per-record composition as a function of the number of rounds.

    ``relation`` says which neighbours it bounds (``privbandit.feedback.RELATIONS``): "entry" (one
    revealed (round, arm) entry differs; with bandit feedback the same as "round") or "round" (one
    round's whole reward vector and context differ).
    """

    relation: str = "entry"

    @abc.abstractmethod
    def events(self, rounds: int) -> Event:
        """The multiset of releases the worst record can be part of in the first ``rounds`` rounds."""

    def epsilon(self, rounds: int, delta: float, accountants=None) -> Certificate:
        """Certified epsilon at ``delta`` after ``rounds`` rounds (minimum over accountants).

        When every release is Gaussian (or GDP) and the GDP accountant is among those allowed (or
        none are named), it is used alone: composing Gaussian mechanisms gives exactly a Gaussian
        trade-off curve (Dong, Roth & Su 2022, Cor. 3.3), so its epsilon is the true one and no
        valid accountant can be smaller.
        """
        events = self.events(rounds)
        if _all_gaussian(events) and (accountants is None or any(
                a is GDPAccountant or isinstance(a, GDPAccountant) for a in accountants)):
            accountants = [GDPAccountant]
        return _certified(events, delta, accountants)

    def delta(self, rounds: int, epsilon: float, accountants=None) -> Certificate:
        """Certified delta at ``epsilon`` after ``rounds`` rounds (minimum over accountants)."""
        return best_delta(self.events(rounds), epsilon, accountants)

    def mu(self, rounds: int) -> float:
        """GDP mu of the worst record after ``rounds`` rounds (inf when some release is not GDP)."""
        acc = GDPAccountant()
        ev = self.events(rounds)
        if not acc.supports(ev):
            return math.inf
        return acc.compose(ev).mu()

    def live_certificates(self, rounds: np.ndarray, delta: float, accountants=None) -> tuple[np.ndarray, list[str]]:
        """Certified epsilon after each of the increasing ``rounds`` (the engine's live certificate).

        Every accountant certifies the last entry; the cheap ones (all but PLD, whose FFT costs up
        to a second) certify the others. With ``accountants`` given, those certify every entry. Then each entry takes the minimum over itself and every
        later entry: valid because the schedule is monotone, so the true epsilon at t is at most the
        true (hence the certified) epsilon at any s >= t. The result is non-decreasing.
        """
        from accountants.best import default_accountants

        rounds = np.asarray(rounds, dtype=np.int64)
        cheap = [f for f in default_accountants() if getattr(f, "name", "") != "pld"]
        values, by = [], []
        for i, r in enumerate(rounds):
            if r == 0:
                values.append(0.0)
                by.append("none")
                continue
            chosen = accountants if accountants is not None else (None if i == rounds.size - 1 else cheap)
            cert = self.epsilon(int(r), delta, chosen)
            values.append(cert.value)
            by.append(cert.by)
        values = np.asarray(values, dtype=float)
        tightened = np.minimum.accumulate(values[::-1])[::-1]
        labels = []
        for i in range(values.size):
            j = i + int(np.argmax(values[i:] == tightened[i]))  # the round whose value was taken
            labels.append(by[j] if j == i else f"{by[j]} (via round {rounds[j]})")
        return tightened, labels

    def curve(self, rounds: Sequence[int] | np.ndarray, delta: float, accountants=None,
              max_evaluations: int = 64) -> np.ndarray:
        """Certified epsilon at each entry of ``rounds``, a valid upper bound at every entry.

        At most ``max_evaluations`` distinct round counts are certified exactly (a geometric grid
        that always contains the largest requested round); every other entry takes the value at
        the next evaluated round above it, valid because the schedule is monotone in t.
        """
        rounds = np.asarray(rounds, dtype=np.int64)
        if rounds.size == 0:
            return np.empty(0)
        if np.any(rounds < 0):
            raise ValueError("rounds must be >= 0")
        unique = np.unique(rounds)
        if unique.size > max_evaluations:
            grid = np.unique(np.geomspace(max(1, unique[0]), unique[-1], max_evaluations).astype(np.int64))
            grid = np.union1d(grid, [unique[-1]])
            grid = grid[grid >= unique[0]]
        else:
            grid = unique
        values = np.array([self._epsilon_value(int(r), delta, accountants) for r in grid])
        # The true curve is monotone, so min over later grid points is also a valid bound.
        values = np.minimum.accumulate(values[::-1])[::-1]
        idx = np.searchsorted(grid, rounds, side="left")
        return values[idx]

    def _epsilon_value(self, rounds: int, delta: float, accountants) -> float:
        if rounds == 0:
            return 0.0
        return self.epsilon(rounds, delta, accountants).value


def _all_gaussian(event: Event) -> bool:
    leaves = event.grouped()
    return bool(leaves) and all(isinstance(leaf, (Gaussian, GDP)) for leaf in leaves)


@dataclasses.dataclass(frozen=True)
class EventSchedule(PrivacySchedule):
    """A schedule given by a function ``rounds -> Event``."""

    function: Callable[[int], Event]
    relation: str = "entry"

    def events(self, rounds: int) -> Event:
        return self.function(rounds) if rounds > 0 else NO_EVENT


class NonPrivateSchedule(PrivacySchedule):
    """A policy that publishes raw statistics: no finite certificate exists."""

    def events(self, rounds: int) -> Event:
        raise ValueError("a non-private policy has no privacy events; its certified epsilon is inf")

    def epsilon(self, rounds, delta, accountants=None) -> Certificate:
        return Certificate(math.inf if rounds > 0 else 0.0, "non-private", {})

    def delta(self, rounds, epsilon, accountants=None) -> Certificate:
        return Certificate(1.0 if rounds > 0 else 0.0, "non-private", {}, kind="delta")

    def mu(self, rounds: int) -> float:
        return math.inf if rounds > 0 else 0.0

    def live_certificates(self, rounds, delta, accountants=None):
        rounds = np.asarray(rounds)
        return np.where(rounds > 0, math.inf, 0.0), ["non-private"] * rounds.size
