"""The certificate check: a schedule's certified epsilon at delta is never below its own events' exact curve.

The white-box ``schedule`` checks compare realized spend with the certificate in pure epsilon and GDP mu
only (both additive, so exact). A schedule may still state its (eps, delta) certificate through its own
``epsilon(rounds, delta)`` -- a closed form, a cache, a conversion -- and be wrong there alone: right in mu
and in pure epsilon, too small at delta > 0 (a GDP conversion at the wrong mu, a round relation composed as
sqrt(streams) times one stream's epsilon). Nothing else compares that number with anything.

The events are the worst record's releases (DESIGN.md "Certified (eps, delta)"); when every one of them is a
concrete Laplace or Gaussian mechanism, their composition has a known privacy curve, and no valid
certificate can lie below it. A lower bound on that curve:

* only Gaussian releases: the exact GDP conversion of their composed mu (Dong, Roth & Su 2022, Cor. 3.3:
  composed Gaussians are exactly mu-GDP), less a relative 10^-9 (the conversion rounds up);
* Laplace (and Gaussian) releases: dp-accounting's *optimistic* privacy-loss distribution
  (:meth:`accountants.pld.PLDAccountant.optimistic`: discretised downwards, its truncated mass dropped), a
  lower reference for the true curve.

Other leaves (``PureDP``, ``ApproxDP``, ``GDP``, ``zCDP``, discrete mechanisms) describe a guarantee, not a
mechanism: a pure eps-DP mechanism may be far better than its epsilon says (Private-TS certifies its
``PureDP`` batch release with the Laplace curve), so they get no lower bound -- they are left out of the
floor, which stays valid (a sub-composition is a post-processing of the whole, so its curve lies below).
Exact in the sense of the other white-box checks: a finding is a deterministic witness (the schedule's
number against a lower bound of the events' true curve).
"""

from __future__ import annotations

import math

import numpy as np

from accountants import GDPAccountant
from accountants.events import Composed, Gaussian, Laplace
from accountants.gdp_conversion import epsilon_for_delta
from accountants.pld import PLDAccountant

CERT_DELTAS = (1e-5, 1e-3, 1e-7, 1e-9, 1e-6)
"""The deltas at which every certificate is compared (the audit's default delta, a large one and, since
session 12, two small ones: round 14's ``ts_tiny_delta_split`` converted its epsilon at 10 delta only below
delta = 1e-6, where only 1e-5 and 1e-3 were compared; since session 14 also 1e-6, the library's default
delta everywhere, where round 16's ``joint_own_delta_root_dropped`` alone was wrong). The Laplace floor is dp-accounting's optimistic PLD,
whose FFT leaves a noise floor near 1e-16 in delta (measured: the composition of two Laplace releases read
eps = inf below delta = 1e-15): 1e-9 keeps that noise 1e-7 of delta away from the answer."""
GDP_DELTAS = (1e-12, 1e-15, 1e-20, 1e-30, 1e-50, 1e-100, 1e-200, 1e-300)
"""Further deltas for events made of Gaussian releases alone, whose floor is the exact GDP conversion (no
FFT): a delta split or conversion wrong only far out (a closed form underflowing, a cached table ending) is
compared down to 1e-300."""
CERT_RTOL = 1e-9
"""Relative slack: the exact GDP conversion rounds up by less than this."""


def epsilon_floor(events, delta: float) -> float | None:
    """A lower bound on the true epsilon at ``delta`` of the composition ``events`` (module docstring): that
    of its concrete Laplace and Gaussian releases alone, or None when it has none. Leaving the other
    releases out can only lower it: the releases kept are a post-processing of the whole composition."""
    floors = _epsilon_floors(events, (delta,))
    return None if floors is None else floors[delta]


def _epsilon_floors(events, deltas) -> dict[float, float] | None:
    """:func:`epsilon_floor` at each of ``deltas`` -- and, when every kept release is Gaussian, also at
    :data:`GDP_DELTAS` -- composing the events once."""
    kept = [(leaf, n) for leaf, n in events.leaves() if n and type(leaf) in (Laplace, Gaussian)]
    if not kept:
        return None
    concrete = Composed(tuple(leaf * n for leaf, n in kept))
    if all(type(leaf) is Gaussian for leaf, _ in kept):
        mu = GDPAccountant().compose(concrete).mu()
        return {d: 0.0 if mu == 0 else epsilon_for_delta(mu, d) * (1.0 - CERT_RTOL)
                for d in dict.fromkeys((*deltas, *GDP_DELTAS))}
    pld = PLDAccountant.optimistic().compose(concrete)
    return {d: float(pld.epsilon(d)) for d in deltas}


def certificate_shortfall(schedule, rounds, deltas=CERT_DELTAS) -> tuple[int, float, float, float] | None:
    """The first (round, delta, certified, floor) where ``schedule.epsilon(round, delta)`` -- or, since
    round 13, the live certificate a run reports (``schedule.live_certificates``, the engine's per-checkpoint
    path, which a schedule may compute its own way) -- lies below :func:`epsilon_floor` of
    ``schedule.events(round)``, or None."""
    rounds = [int(t) for t in rounds]
    floors: dict[tuple[int, float], float] = {}
    compared: dict[float, None] = {}
    for t in rounds:
        at_t = _epsilon_floors(schedule.events(t), deltas)
        if at_t is None:
            continue
        for delta, floor in at_t.items():
            compared[delta] = None
            floors[t, delta] = floor
            cert = float(schedule.epsilon(t, delta).value)
            if cert < floor * (1.0 - CERT_RTOL) - 1e-12 and math.isfinite(floor):
                return int(t), float(delta), cert, floor
    for delta in compared:
        asked = [t for t in rounds if (t, delta) in floors]
        if not asked:
            continue
        order = sorted(set(asked))  # the engine asks for increasing checkpoints
        live = np.asarray(schedule.live_certificates(np.asarray(order, dtype=np.int64), delta)[0], dtype=float)
        for t, cert in zip(order, live.reshape(-1)):
            floor = floors[t, delta]
            if cert < floor * (1.0 - CERT_RTOL) - 1e-12 and math.isfinite(floor):
                return int(t), float(delta), float(cert), floor
    return None


REPRO_RTOL = 1e-9
"""Relative slack of the reproduction: the same accountant on the same events gives the same float (measured
on every private policy's schedule at 2 rounds x 8 deltas: ratio exactly 1 wherever reproduced)."""


def _reference_accountants() -> dict:
    """The library's own accountants by name (``accountants.best.default_accountants``), imported here, not
    taken from the schedule: a schedule that swapped one for a subclass is what the reproduction looks for."""
    from accountants.best import default_accountants

    out = {}
    for factory in default_accountants():
        name = getattr(factory, "name", None) or factory().name
        out[name] = factory
    return out


def certificate_unreproduced(schedule, rounds, deltas=CERT_DELTAS) -> tuple[int, float, float, float, str] | None:
    """The first (round, delta, certified, reproduced, accountant) where the certificate
    ``schedule.epsilon(round, delta)`` names one of the library's accountants as its source (``by``) but lies
    below what that accountant gives on the schedule's own events -- and below the best of all the library's
    accountants there: the worst over its record kinds (:meth:`privbandit.schedule.PrivacySchedule.record_kinds`)
    of each kind's best -- or None.

    The floor (:func:`certificate_shortfall`) bounds the truth from below only where the releases are concrete
    mechanisms; a certificate over ``PureDP`` / ``ApproxDP`` / ``zCDP`` guarantees (EXP3's choices, Mishra's
    trees) or at a delta the floor skips can be wrong without falling below any floor. What a certificate
    claims, though, is "these events compose to this under that theorem": a number the named theorem does not
    give on those events (a composition term dropped, a conversion at the wrong delta, a node left out) is a
    wrong proof whatever the mechanism's true curve; below every accountant the library has, no proof the
    schedule names supports it. Certificates from accountants outside the library (a
    schedule's own closed form, e.g. ``laplace-exact``) are not reproduced; the floor covers them. Round 16
    (written blind): ``exp3_advanced_expm1_dropped`` and ``joint_own_delta_root_dropped``."""
    reference = _reference_accountants()
    for t in sorted({int(r) for r in rounds if int(r) > 0}):
        kinds = None
        for delta in dict.fromkeys(deltas):
            cert = schedule.epsilon(t, delta)
            factory = reference.get(cert.by)
            if factory is None or not math.isfinite(cert.value):
                continue
            if kinds is None:
                # (a schedule that is not a PrivacySchedule, e.g. a hand-built one: one kind, its events)
                by_kind = getattr(schedule, "record_kinds", None)
                kinds = list(by_kind(t)) if callable(by_kind) else [schedule.events(t)]
            if not kinds or cert.value >= _worst_kind(kinds, delta, [factory]) * (1.0 - REPRO_RTOL) - 1e-12:
                continue  # (the named accountant alone already reaches it: no cheaper accountant can be needed)
            # below the named accountant: a finding only if below every reference accountant too (for a
            # schedule certifying kinds separately, the named one need not be every kind's best)
            again = _worst_kind(kinds, delta, list(reference.values()))
            if cert.value < again * (1.0 - REPRO_RTOL) - 1e-12:
                return t, float(delta), float(cert.value), float(again), str(cert.by)
    return None


def _worst_kind(kinds, delta: float, factories) -> float:
    """max over the record kinds of the best of ``factories`` on each (the certificate a schedule certifying
    kinds separately owes)."""
    from accountants import best_epsilon

    return max(best_epsilon(ev, delta, factories).value for ev in kinds)


def unreproduced_message(found: tuple[int, float, float, float, str], relation: str = "") -> str:
    t, delta, cert, again, by = found
    rel = f" under the {relation} relation" if relation else ""
    return (f"the schedule certifies eps {cert:.6g} at delta {delta:g} by round {t}{rel}, attributed to the {by} "
            f"accountant; on the schedule's own events (the worst record's releases) the library's accountants give "
            f"at least {again:.6g} (the one named more): no theorem the schedule names proves it")


def certificate_message(shortfall: tuple[int, float, float, float], relation: str = "") -> str:
    t, delta, cert, floor = shortfall
    rel = f" under the {relation} relation" if relation else ""
    return (f"the schedule certifies eps {cert:.6g} at delta {delta:g} by round {t}{rel}, below {floor:.6g}, a "
            f"lower bound on the true curve of its own events (the worst record's releases): the (eps, delta) "
            f"certificate is wrong even where its mu and pure epsilon are right")


__all__ = ["CERT_DELTAS", "GDP_DELTAS", "certificate_message", "certificate_shortfall", "certificate_unreproduced",
           "epsilon_floor", "unreproduced_message"]
