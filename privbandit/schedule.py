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
from accountants.best import minimum_epsilon
from accountants._validate import count, shown, unmasked
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


def _live_entry(events: Event, delta: float, accountants) -> tuple[float, str]:
    """``(cert.value, cert.by)`` of ``PrivacySchedule.epsilon`` on ``events`` -- the live certificate's
    entry -- without the root searches of accountants that provably cannot reach the minimum
    (:func:`accountants.best.minimum_epsilon`: GDP since session 15, the optimal composition since session
    16), bit for bit. Only the minimum and its label leave this function: it serves
    :meth:`PrivacySchedule.live_certificates` alone. Memoised like :func:`_certified`; unhashable arguments
    are computed directly."""
    try:
        key = accountants_key(accountants)
        if key is UNHASHABLE or isinstance(accountants, (str, bytes)):
            raise TypeError
        return _live_entry_cached(events, delta, key)
    except TypeError:
        return minimum_epsilon(events, delta, _narrowed(events, accountants))


def _narrowed(events: Event, accountants):
    """``accountants`` as ``PrivacySchedule.epsilon`` uses them on ``events``: GDP alone for all-Gaussian
    events when it is allowed (it is exact there)."""
    if _all_gaussian(events) and (accountants is None or any(
            a is GDPAccountant or isinstance(a, GDPAccountant) for a in accountants)):
        return [GDPAccountant]
    return accountants


def _epsilon_of(events: Event, delta: float, accountants) -> Certificate:
    """What ``PrivacySchedule.epsilon`` answers on ``events`` (kept in one place with it)."""
    return _certified(events, delta, _narrowed(events, accountants))


@functools.lru_cache(maxsize=2048)
def _live_entry_cached(events: Event, delta: float, accountants: tuple | None) -> tuple[float, str]:
    return minimum_epsilon(events, delta, _narrowed(events, None if accountants is None else list(accountants)))


def _checked_rounds(method):
    """``method(self, rounds, ...)`` with ``rounds`` read by ``accountants._validate.count``: a whole
    number in [0, inf) (2.0 is 2). Schedules compared ``rounds <= 0`` and indexed with it as given: True
    certified one round, -3 certified 0, 10.7 was 10 for one schedule and a ValueError about an inner
    "n" or "count" for another, "10" and None were TypeErrors naming nothing (session 13)."""
    @functools.wraps(method)
    def checked(self, rounds, *args, **kwargs):
        return method(self, rounds if type(rounds) is int and rounds >= 0 else count("rounds", rounds), *args, **kwargs)
    checked._checks_rounds = True
    return checked


def checked_round_list(rounds, *, increasing: bool) -> np.ndarray:
    """``rounds`` as a 1-D int64 array of whole numbers in [0, inf), or a ValueError naming them;
    ``increasing``: also non-decreasing (what :meth:`PrivacySchedule.live_certificates` relies on).
    ``np.asarray(rounds, dtype=int64)`` truncated 10.7 to 10, read "5" and True as rounds and raised
    numpy's OverflowError for 2^70."""
    unmasked("rounds", rounds)
    if isinstance(rounds, (str, bytes)) or np.ndim(rounds) != 1:
        raise ValueError(f"rounds must be a 1-D sequence of whole numbers in [0, inf), got {shown(rounds)}")
    raw = np.asarray(rounds)
    if raw.dtype.kind in "iu" and (raw.size == 0 or raw.min() >= 0):
        out = raw.astype(np.int64, copy=True)  # (a uint64 beyond int64 fails the comparison below)
        if raw.dtype.kind == "u" and raw.size and raw.max() > np.iinfo(np.int64).max:
            raise ValueError(f"rounds must be whole numbers in [0, 2^63), got {shown(int(raw.max()))}")
    else:
        values = [count("rounds", r) for r in (raw.tolist() if raw.dtype.kind != "O" else list(raw))]
        if any(v >= 2**63 for v in values):
            raise ValueError(f"rounds must be whole numbers in [0, 2^63), got {shown(max(values))}")
        out = np.array(values, dtype=np.int64)
    if increasing and out.size > 1 and np.any(out[1:] < out[:-1]):
        i = int(np.flatnonzero(out[1:] < out[:-1])[0])
        # each entry is certified by the least value at it or any later entry (the schedule is monotone):
        # valid only in increasing order -- [1000, 10] certified round 1000 with round 10's epsilon
        raise ValueError(f"rounds must be non-decreasing (each certificate is tightened by the later ones), got "
                         f"{int(out[i])} before {int(out[i + 1])} at position {i + 1}; sort them (curve() takes any order)")
    return out


class PrivacySchedule(abc.ABC):
    """Worst-case per-record composition as a function of the number of rounds.

    ``relation`` says which neighbours it bounds (``privbandit.feedback.RELATIONS``): "entry" (one
    revealed (round, arm) entry differs; with bandit feedback the same as "round") or "round" (one
    round's whole reward vector and context differ).

    ``events``, ``epsilon``, ``delta``, ``mu`` and ``record_kinds`` -- here and as any subclass defines them -- read
    ``rounds`` as a whole number in [0, inf) and refuse anything else by name (:func:`_checked_rounds`).
    """

    relation: str = "entry"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("events", "epsilon", "delta", "mu", "record_kinds"):
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_checks_rounds", False):
                setattr(cls, name, _checked_rounds(method))

    @abc.abstractmethod
    def events(self, rounds: int) -> Event:
        """The multiset of releases the worst record can be part of in the first ``rounds`` rounds."""

    @_checked_rounds
    def record_kinds(self, rounds: int) -> list[Event]:
        """The worst record's releases after ``rounds`` rounds, one event per KIND of record when a
        schedule certifies kinds separately (each record is exactly one kind, so the certificate is
        the worst kind's: Private-TS's gap-estimation and tree records); by default one kind,
        :meth:`events`. The auditor reproduces a certificate's accountant on these."""
        return [self.events(rounds)]

    @_checked_rounds
    def epsilon(self, rounds: int, delta: float, accountants=None) -> Certificate:
        """Certified epsilon at ``delta`` after ``rounds`` rounds (minimum over accountants).

        When every release is Gaussian (or GDP) and the GDP accountant is among those allowed (or
        none are named), it is used alone: composing Gaussian mechanisms gives exactly a Gaussian
        trade-off curve (Dong, Roth & Su 2022, Cor. 3.3), so its epsilon is the true one and no
        valid accountant can be smaller.
        """
        return _epsilon_of(self.events(rounds), delta, accountants)

    @_checked_rounds
    def delta(self, rounds: int, epsilon: float, accountants=None) -> Certificate:
        """Certified delta at ``epsilon`` after ``rounds`` rounds (minimum over accountants)."""
        return best_delta(self.events(rounds), epsilon, accountants)

    @_checked_rounds
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

        Only each entry's minimum and the accountant that reached it are reported, so an accountant
        that provably cannot reach it is not asked for its epsilon (:func:`_live_entry`): the values
        and labels are those of ``self.epsilon`` at every entry, bit for bit.
        """
        from accountants.best import default_accountants

        rounds = checked_round_list(rounds, increasing=True)
        cheap = [f for f in default_accountants() if getattr(f, "name", "") != "pld"]
        # a subclass's own epsilon() (a cache, several record kinds, its own accountant choice) is asked as it is
        own = type(self).epsilon is not PrivacySchedule.epsilon
        values, by = [], []
        for i, r in enumerate(rounds):
            if r == 0:
                values.append(0.0)
                by.append("none")
                continue
            chosen = accountants if accountants is not None else (None if i == rounds.size - 1 else cheap)
            if own:
                cert = self.epsilon(int(r), delta, chosen)
                value, name = cert.value, cert.by
            else:
                value, name = _live_entry(self.events(int(r)), delta, chosen)
            values.append(value)
            by.append(name)
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
        rounds = checked_round_list(rounds, increasing=False)
        if rounds.size == 0:
            return np.empty(0)
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
        rounds = checked_round_list(rounds, increasing=True)
        return np.where(rounds > 0, math.inf, 0.0), ["non-private"] * rounds.size
