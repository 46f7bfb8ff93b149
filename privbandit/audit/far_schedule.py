"""The far schedule check: a certificate evaluated where no run reaches (session 12).

The runs of the audit end by 2^17 rounds; a schedule is a *function* of the rounds, and a schedule wrong only
past every run's horizon (a release count that stops at 2^18 -- "nobody runs longer") is refuted by no run.
This check evaluates the policy's schedule, built for a horizon of :data:`FAR_HORIZON` = 10^12 rounds, at
the far rounds :data:`FAR_ROUNDS` (2^18 ... 2^39 and 10^12) without playing them, and asks two deterministic
questions (no alpha: every finding is a witness computed from the schedule and the mechanisms' own
formulas; the false-alarm budget is zero):

1. **monotone** -- the worst record's releases only accumulate (privbandit/schedule.py: "schedules must be
   monotone in t"; DESIGN.md, per-record composition), so the certificate may not fall as the rounds grow:
   GDP mu, pure epsilon, eps at delta = 1e-5 (``epsilon`` and the engine's ``live_certificates``) and every
   leaf's release count are non-decreasing over the far rounds (and so is each reference below, in its
   mechanism's records); the certificate at the horizon,
   ``schedule_for(policy, H)`` at H is *not* required to grow with H (a policy may spread its noise over
   the horizon it is told: Private-UCB's mu at T falls from 0.1435 at T = 2^17 to 0.1399 at 2^18).

2. **releases** -- the certificate covers the releases the policy's *declared mechanisms* make by then,
   computed from the mechanisms, not from the policy's schedule. The run is started (not played) at the
   far horizon and its mechanisms are found among the run's attributes:

   * a stream mechanism (``privacy_schedule(n)``: the worst record's releases when its stream holds n
     items -- the tree's ``n.bit_length()`` nodes, Chan, Shi & Song 2010 / ALGORITHMS.md 2.1; the hybrid's
     and the split's two parts, 2.3 and 6.1; the interval mean's releases, 4.4; a fresh batch's one release,
     6.2 / 7) that a short probe run shows taking at least one record in *every* round after its first
     (a mechanism fed each pull: Private-UCB's trees, the hybrids, the interval mean; not Private-TS's tree,
     fed once per batch). After t rounds its streams hold >= t - t0 + 1 records together, so one of them
     holds n >= ceil((t - t0 + 1) / streams) (pigeonhole, on every transcript): the certificate is at least
     ``privacy_schedule(n)``'s;
   * the Gaussian posterior release (Ou, Cummings & Avella Medina 2024, Alg. 1-2; ALGORITHMS.md 5.1-5.2), which
     a probe run shows releasing every round after the pre-pulls: every arm's posterior is sampled every
     round, so a record of an arm held at k = max(b, 1) records (a starved arm: under Gaussian sampling
     every arm sequence after the pre-pulls has positive probability) is in t - max(K b, 1) releases of
     sensitivity 1/(k + 1) and sigma sqrt(c / (k + 1)) (the mechanism's own ``_release_parameters``).

   Compared in the certificate's own currencies: mu (all-Gaussian reference), pure epsilon (all-Laplace),
   and eps at delta against :func:`privbandit.audit.certificate.epsilon_floor` of the reference (a lower
   bound of its true curve), each with the certificate check's relative slack of 1e-9.

A mechanism the probe does not show releasing or inserting every round gets no reference (its count depends
on the data: batches, epochs), and policies whose mechanisms sit deeper than the run's own attributes
(the contextual policies' vector trees) get the monotonicity questions only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import threading
import time

import numpy as np

from accountants import GDPAccountant, PureAccountant
from accountants.events import Composed, Gaussian, Laplace
from privbandit.audit.certificate import CERT_RTOL, certificate_shortfall, epsilon_floor
from privbandit.audit.raised import Clock, PolicyRaised, policy_code
from privbandit.ledger import Ledger
from privbandit.mechanisms._base import StreamMechanism
from privbandit.mechanisms.posterior import GaussianPosteriorRelease
from privbandit.policies.base import Policy, schedule_for

FAR_HORIZON = 10**12
"""The horizon the far schedule is built for (the runs reach 2^17 rounds)."""
FAR_ROUNDS = tuple(2**j for j in range(17, 40)) + (FAR_HORIZON,)
"""The rounds it is evaluated at: 2^17 (the far run's horizon, an anchor), 2^18 ... 2^39 and 10^12."""
DELTA = 1e-5
"""The delta of the eps-at-delta comparisons (the audit's default)."""
PROBE = 2**11
"""Rounds of the probe run that tells which declared mechanisms take a record / release every round."""
FAR_EPS_ROUNDS = (2**18, 2**24, 2**30, 2**36, FAR_HORIZON)
"""The far rounds at which eps at delta is compared (each costs the accountants' best answer)."""


EVAL_SECONDS = 2.0
"""Wall-clock limit on one evaluation of the schedule's events at a far round (and on one reference floor)."""
EPS_SECONDS = 30.0
"""Wall-clock limit on the eps-at-delta certificates at the far rounds together."""


class _OutOfTime(Exception):
    """An evaluation ran past its limit (:func:`_time_limit`)."""


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Raise :class:`_OutOfTime` in the block after ``seconds`` of wall clock (SIGALRM; in the main thread
    only -- elsewhere the block runs unlimited)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum, frame):
        raise _OutOfTime()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclasses.dataclass
class FarScheduleResult:
    """Findings of :func:`far_schedule_check` (each a deterministic witness) and what was compared."""

    policy: str
    findings: list[str]
    references: list[str]
    notes: list[str]
    seconds: float

    @property
    def passed(self) -> bool:
        return not self.findings

    @property
    def verdict(self) -> str:
        return "CONSISTENT" if self.passed else "VIOLATION"

    def summary(self) -> str:
        head = (f"far schedule check of {self.policy}: rounds 2^17 .. 10^12 (no run), references: "
                f"{', '.join(self.references) or 'none (monotonicity only)'}, {self.seconds:.1f} s")
        if self.passed:
            return f"{head}: CONSISTENT" + (f" ({'; '.join(self.notes)})" if self.notes else "")
        return f"{head}: VIOLATION ({len(self.findings)} findings; first: {self.findings[0]})"


def _pure(events) -> float:
    acc = PureAccountant()
    return float(acc.compose(events).epsilon(0.5)) if acc.supports(events) else math.inf


def _mu(events) -> float:
    acc = GDPAccountant()
    return float(acc.compose(events).mu()) if acc.supports(events) else math.inf


def _below(value: float, floor: float) -> bool:
    """``value`` below ``floor`` beyond the certificate check's slack (both finite numbers)."""
    return math.isfinite(floor) and value < floor * (1.0 - CERT_RTOL) - 1e-12


def _mechanisms(run) -> dict[str, object]:
    """The run's declared mechanisms: its attributes (or items of list / tuple attributes) that are stream
    mechanisms or Gaussian posterior releases, by attribute path."""
    found = {}
    for name, value in vars(run).items():
        items = value if isinstance(value, (list, tuple)) else (value,)
        for i, item in enumerate(items):
            if isinstance(item, (StreamMechanism, GaussianPosteriorRelease)):
                found[name if item is value else f"{name}[{i}]"] = item
    return found


def _probe(policy: Policy, n_arms: int, names) -> dict[str, tuple[int, bool]]:
    """Per mechanism path: (first round it grew, whether it grew in every round from then on) over a probe
    run of :data:`PROBE` rounds on the starving environment of the far run (arm 0 pays 1, the others 0).
    A stream mechanism grows when its streams take a record; the posterior when it releases. A policy that
    raises in the probe gives no reference (the audits proper report the exception)."""
    ledger = Ledger(1, n_arms, track_replicates=0)
    clock = Clock()
    size = {name: [] for name in names}
    try:
        with policy_code(clock):
            run = policy.start(n_arms, 1, PROBE, np.random.default_rng(0), ledger=ledger)
            mechs = _mechanisms(run)
            for t in range(1, PROBE + 1):  # K-armed feedback (a graph policy without an offer: the edgeless graph)
                clock.t = t
                arms = np.asarray(run.select(t))
                run.update(t, arms, (arms == 0).astype(float))
                for name in names:
                    m = mechs.get(name)
                    if isinstance(m, StreamMechanism):
                        size[name].append(int(m.count.sum()))
                    elif m is not None:
                        size[name].append(int(ledger.draws.sum()))
    except PolicyRaised:
        return {}
    out = {}
    for name, sizes in size.items():
        if len(sizes) < PROBE:
            continue
        grew = np.diff(np.concatenate([[0], sizes])) > 0
        if not grew.any():
            continue
        t0 = int(np.argmax(grew)) + 1
        out[name] = (t0, bool(grew[t0 - 1:].all()))
    return out


def _reference(mech, t: int, t0: int, n_arms: int, prepulls: int):
    """The reference events of mechanism ``mech`` after t rounds (module docstring), or None."""
    if isinstance(mech, GaussianPosteriorRelease):
        k = max(prepulls, 1)
        n = t - max(n_arms * prepulls, 1)
        if n <= 0:
            return None
        sigma, sens = mech._release_parameters(np.array(float(k)))
        return Gaussian(sigma=float(sigma), sensitivity=float(sens)) * n
    n = -(-(t - t0 + 1) // mech.streams)
    if n <= 0:
        return None
    return mech.privacy_schedule(min(n, int(getattr(mech, "horizon", n) or n)))


def far_schedule_check(policy: Policy, n_arms: int = 2, structure: dict | None = None,
                       max_findings: int = 5) -> FarScheduleResult:
    """The far schedule check of ``policy`` on ``n_arms`` arms (module docstring). ``structure``: the
    feedback structure the schedule is certified for (None: K-armed bandit feedback; the audit passes
    the edgeless graph's for a graph policy)."""
    started = time.perf_counter()
    findings: list[str] = []
    notes: list[str] = []
    refs: list[str] = []
    try:
        sched = schedule_for(policy, FAR_HORIZON, n_arms, structure, "entry")
    except (ValueError, ArithmeticError) as exc:  # a schedule that refuses such a horizon certifies nothing there
        notes.append(f"the schedule for T = 10^12 raised {type(exc).__name__}: {exc}; not checked")
        return FarScheduleResult(repr(policy), [], [], notes, time.perf_counter() - started)

    # 1. monotone in the rounds, over the far rounds the schedule can be evaluated at in time (a schedule listing
    # one leaf per release -- DP-UCB-Int's intervals, ~5e9 of them by 10^12 rounds -- cannot be at every one)
    prev: dict[str, tuple[int, float]] = {}
    events_at: dict[int, object] = {}
    mu_at: dict[int, float] = {}
    for t in FAR_ROUNDS:
        try:
            with _time_limit(EVAL_SECONDS):
                events = sched.events(t)
                values = {"mu": float(sched.mu(t)), "pure epsilon": _pure(events)}
                for leaf, n in events.grouped().items():
                    values[f"releases of {leaf!r}"] = float(n)
        except _OutOfTime:
            notes.append(f"the schedule's events at round {t} took over {EVAL_SECONDS:g} s: rounds from {t} on not checked")
            break
        except (ValueError, ArithmeticError) as exc:
            notes.append(f"the schedule at round {t} raised {type(exc).__name__}: {exc}; rounds from {t} on not checked")
            break
        events_at[t], mu_at[t] = events, values["mu"]
        for what, v in values.items():
            if what in prev and v < prev[what][1] * (1.0 - CERT_RTOL) - 1e-12:
                findings.append(f"{what} falls from {prev[what][1]:.6g} at round {prev[what][0]} to {v:.6g} at round "
                                f"{t}: a schedule's worst record only gathers releases")
            prev[what] = (t, v)
    eps_rounds = [t for t in FAR_EPS_ROUNDS if t in events_at]
    cert_at: dict[int, float] = {}
    try:
        with _time_limit(EPS_SECONDS):
            for t in eps_rounds:
                cert_at[t] = float(sched.epsilon(t, DELTA).value)
            live = np.asarray(sched.live_certificates(np.asarray(eps_rounds, dtype=np.int64), DELTA)[0], dtype=float)
            for label, series in (("epsilon", [cert_at[t] for t in eps_rounds]), ("live certificate", live.reshape(-1).tolist())):
                for (t1, a), (t2, b) in zip(zip(eps_rounds, series), zip(eps_rounds[1:], series[1:])):
                    if b < a * (1.0 - CERT_RTOL) - 1e-12:
                        findings.append(f"the {label} at delta {DELTA:g} falls from {a:.6g} at round {t1} to {b:.6g} at "
                                        f"round {t2}")
                        break
            # the certificates at the far rounds against the floor of the schedule's own events (check 11, far)
            short = certificate_shortfall(sched, eps_rounds, (DELTA,))
            if short is not None:
                t, delta, c, floor = short
                findings.append(f"the schedule certifies eps {c:.6g} at delta {delta:g} by round {t}, below {floor:.6g}, "
                                f"a lower bound on the true curve of its own events")
    except _OutOfTime:
        notes.append(f"eps at delta {DELTA:g} at the far rounds took over {EPS_SECONDS:g} s: compared where computed")
    except (ValueError, ArithmeticError) as exc:
        notes.append(f"eps at delta {DELTA:g} at the far rounds raised {type(exc).__name__}: {exc}; compared where computed")

    # Not asked: that the certificate *at the horizon* grow with the horizon a schedule is built for. A policy may
    # spread its noise over the horizon it is told (Private-UCB's tree nodes draw Lap(L / eps), L = log2 T): its
    # mu at T falls from 0.1435 (T = 2^17) to 0.1399 (T = 2^18), correctly.

    # 2. the declared mechanisms' releases
    try:
        with policy_code(Clock()):
            far_run = policy.start(n_arms, 1, FAR_HORIZON, np.random.default_rng(0), ledger=Ledger(1, n_arms))
            mechs = _mechanisms(far_run)
    except PolicyRaised as exc:
        mechs = {}
        notes.append(f"starting a run at T = 10^12 {exc.raised.describe()}: no mechanism reference")
    probed = _probe(policy, n_arms, list(mechs)) if mechs else {}
    prepulls = int(getattr(policy, "b", 0) or 0)
    for name, mech in mechs.items():
        t0, every = probed.get(name, (None, False))
        if not every:
            notes.append(f"{name} ({type(mech).__name__}): not fed / released every round in the probe: no reference")
            continue
        refs.append(f"{name} ({type(mech).__name__}, from round {t0})")
        last = None
        for t in events_at:
            try:
                ref = _reference(mech, t, t0, n_arms, prepulls)
            except (ValueError, ArithmeticError) as exc:  # the mechanism refuses the count: no reference there
                notes.append(f"{name}: its schedule at round {t} raised {type(exc).__name__}: {exc}")
                break
            if ref is None:
                continue
            # the mechanism's own count, monotone in its records too
            count = sum(n for _, n in ref.leaves())
            if last is not None and count < last[1]:
                findings.append(f"mechanism {name} ({type(mech).__name__}): its worst record's releases fall from "
                                f"{last[1]} by round {last[0]} to {count} by round {t}")
                break
            last = (t, count)
            events = events_at[t]
            kept = [(leaf, n) for leaf, n in ref.leaves() if n and type(leaf) in (Laplace, Gaussian)]
            if not kept:
                break
            ref = Composed(tuple(leaf * n for leaf, n in kept))
            gaussian = all(type(leaf) is Gaussian for leaf, _ in kept)
            laplace = all(type(leaf) is Laplace for leaf, _ in kept)
            got = None
            if gaussian and _below(mu_at[t], _mu(ref)):
                got = f"mu {mu_at[t]:.6g} < {_mu(ref):.6g}"
            elif laplace and _below(_pure(events), _pure(ref)):
                got = f"pure epsilon {_pure(events):.6g} < {_pure(ref):.6g}"
            elif t in cert_at:
                try:
                    with _time_limit(EVAL_SECONDS):
                        floor = epsilon_floor(ref, DELTA)
                except (_OutOfTime, ValueError, ArithmeticError):  # no floor in time: nothing to compare
                    floor = None
                if floor is not None and _below(cert_at[t], floor):
                    got = f"eps {cert_at[t]:.6g} < {floor:.6g} at delta {DELTA:g}"
            if got is not None:
                findings.append(f"by round {t} the schedule certifies {got}, the releases its mechanism {name} "
                                f"({type(mech).__name__}) makes by then on every (or some) transcript -- the schedule "
                                f"stops counting them past the runs' horizons")
                break
    return FarScheduleResult(repr(policy), findings[:max_findings] if max_findings else findings, refs, notes,
                             time.perf_counter() - started)


__all__ = ["FAR_HORIZON", "FAR_ROUNDS", "FarScheduleResult", "far_schedule_check"]
