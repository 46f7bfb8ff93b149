"""Budgets before running, and their inversions: ``privbandit.budget``.

Everything here evaluates a policy's *privacy schedule* (the worst-case multiset of releases one
record can be part of in T rounds; see :mod:`privbandit.schedule`) with the accountant layer — the
same function the engine evaluates live during a run — so a budget computed here is exactly the
certificate a run will report.

* :func:`epsilon`, :func:`delta`, :func:`mu` — the certified spend of a configured policy.
* :func:`curve` — certified epsilon as a function of the horizon, cheap enough for every round of
  a 10^6 horizon (a step function from exact evaluations, valid because schedules are monotone).
* :func:`invert` — the least-noise value of one parameter whose certificate meets a target, never
  overshooting (re-evaluated and verified); :func:`affordable_horizon` — the largest horizon a
  budget affords; :func:`ts_frontier` — Modified Thompson sampling's whole (b, c_min(b)) frontier.
* :func:`tune` — among parameter sets that meet a target, the one with the lowest *simulated*
  regret on a user-supplied prior instance (simulated data only: tuning on real rewards would
  itself leak).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from accountants._validate import exact_text as _num, shown
from accountants import Certificate, _validate, calibrate, gdp_conversion
from accountants.calibrate import UnreachableTargetError, _lattice_boundary
from privbandit.policies import Policy, make_policy, policy_class
from privbandit.policies.base import HORIZON_MAX as _policy_horizon_max
from privbandit.policies.gaussian_ts import C_RANGE, GaussianTS
from privbandit.seeding import check_seed

__all__ = [
    "epsilon", "delta", "mu", "curve", "invert", "affordable_horizon", "ts_frontier", "tune",
    "Inversion", "UnreachableTargetError",
]


def _policy(policy: Policy | str, params: Mapping[str, Any] | None = None) -> Policy:
    if isinstance(policy, Policy):
        if params:
            raise ValueError("params may only be given with a policy name, not a configured policy")
        return policy
    if isinstance(policy, str):
        # (make_policy names an unknown keyword and its close matches: called directly, the class's
        # TypeError "got an unexpected keyword argument 'epsilom'" escaped budget.epsilon)
        return make_policy(policy, **dict(params or {}))
    raise ValueError(f"policy must be a Policy or a registered name, got {type(policy).__name__}")


def _schedule(pol: Policy, horizon: int, n_arms: int, structure: Mapping[str, Any] | None, relation: str):
    """``pol``'s schedule for a feedback ``structure`` (e.g. ``{"max_degree": 3}`` or ``{"graph": G}``
    for graph feedback; None: K-armed bandit feedback) under ``relation`` ("entry" or "round")."""
    from privbandit.policies.base import schedule_for

    if structure is not None and not isinstance(structure, Mapping):
        raise ValueError(f"structure must be a mapping of schedule keywords (e.g. {{'max_degree': 3}}), got {shown(structure)}")
    try:
        return schedule_for(pol, horizon, n_arms, dict(structure or {}), relation)
    except MemoryError:  # a horizon too long to lay out is a ValueError naming it, not a MemoryError
        raise ValueError(f"horizon {horizon} is too long to lay out {pol!r}'s schedule in memory; "
                         "give a smaller horizon") from None


HORIZON_MAX = _policy_horizon_max
"""The longest horizon the budget helpers certify (the policies' own ceiling,
``privbandit.policies.base.HORIZON_MAX``). 10^30 rounds is more than 10^12 rounds per second for the
age of the universe (4.4e17 s), so no deployment is refused; beyond it the schedules' closed forms
leave the floats (a 400-digit horizon: OverflowError converting it, DP-UCB-Int's grouped events a
ZeroDivisionError) or their grouping slows to ~30 s per certificate at 1e308, which made ``invert``
(dozens of certificates) hang."""


def _horizon(horizon, n_arms: int, name: str = "horizon") -> int:
    valid = f"{name} must be a whole number in [n_arms = {n_arms}, {HORIZON_MAX:.0e}]"
    try:
        h = _validate.count(name, horizon)
    except ValueError:
        raise ValueError(f"{valid}, got {_validate.shown(horizon)}") from None
    if not n_arms <= h <= HORIZON_MAX:
        # (a many-digit int neither converts to float nor, past 4300 digits, to str: shown gives its size)
        raise ValueError(f"{valid}, got {_validate.shown(h)}")
    return h


def _arms(n_arms) -> int:
    try:
        k = _validate.count("n_arms", n_arms)
    except ValueError:
        k = -1
    if k < 2:
        raise ValueError(f"n_arms must be a whole number in [2, inf), got {shown(n_arms)}")
    if k > HORIZON_MAX:  # no horizon (at least one round per arm) could be certified
        raise ValueError(f"n_arms must be at most the longest horizon certified, {HORIZON_MAX:.0e} (a horizon "
                         f"has at least one round per arm), got {shown(n_arms)}")
    return k


def _delta(delta) -> float:
    """0 (pure DP: the accountants' exact ``pure_epsilon``, inf with any release that is not pure; session
    15) or a normal float in (0, 1)."""
    return _validate.delta_or_zero("delta", delta)


def _flag(name: str, value) -> bool:
    """True or False exactly: ``target_mu=1`` or ``integer="yes"`` are not read by truthiness."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {shown(value)}")
    return bool(value)


def _evaluating(horizon: int, fn):
    try:
        return fn()
    except MemoryError:
        raise ValueError(f"horizon {horizon} is too long to certify in memory; give a smaller horizon") from None


def epsilon(policy: Policy | str, horizon: int, delta: float, n_arms: int = 2, *,
            accountants=None, structure: Mapping[str, Any] | None = None, relation: str = "entry",
            **params) -> Certificate:
    """Certified epsilon at ``delta`` for ``horizon`` rounds: value, accountant, every accountant's value.

    ``policy`` is a configured policy or a registered name with ``params``. ``structure`` and
    ``relation`` describe structured feedback (docs/feedback.md): e.g. a feedback graph's
    ``{"max_degree": 3}`` (or ``{"graph": adjacency}``) with ``relation="round"``.
    """
    pol = _policy(policy, params)
    n_arms = _arms(n_arms)
    h = _horizon(horizon, n_arms)
    delta = _delta(delta)
    return _evaluating(h, lambda: _schedule(pol, h, n_arms, structure, relation).epsilon(h, delta, accountants))


def delta(policy: Policy | str, horizon: int, epsilon: float, n_arms: int = 2, *,
          accountants=None, structure: Mapping[str, Any] | None = None, relation: str = "entry",
          **params) -> Certificate:
    """Certified delta at ``epsilon`` for ``horizon`` rounds (``structure``, ``relation``: as :func:`epsilon`)."""
    pol = _policy(policy, params)
    n_arms = _arms(n_arms)
    h = _horizon(horizon, n_arms)
    epsilon = _validate.nonnegative("epsilon", epsilon)
    return _evaluating(h, lambda: _schedule(pol, h, n_arms, structure, relation).delta(h, epsilon, accountants))


def mu(policy: Policy | str, horizon: int, n_arms: int = 2, *, structure: Mapping[str, Any] | None = None,
       relation: str = "entry", **params) -> float:
    """GDP mu of the worst record over ``horizon`` rounds (inf when some release is not GDP)."""
    pol = _policy(policy, params)
    n_arms = _arms(n_arms)
    h = _horizon(horizon, n_arms)
    return _evaluating(h, lambda: _schedule(pol, h, n_arms, structure, relation).mu(h))


def curve(policy: Policy | str, horizons: Sequence[int] | np.ndarray, delta: float, n_arms: int = 2, *,
          max_evaluations: int = 256, structure: Mapping[str, Any] | None = None, relation: str = "entry",
          **params) -> np.ndarray:
    """Certified epsilon after each entry of ``horizons`` (a valid upper bound at every entry).

    At most ``max_evaluations`` round counts (a geometric grid containing the largest) are certified
    exactly; the others take the value of the next evaluated round above them — valid because a
    schedule is monotone, and within a factor (max/min)^(1/max_evaluations) in rounds of exact.
    ``horizons`` must be whole numbers in [0, inf) (0 rounds certify 0); nothing is truncated.
    """
    pol = _policy(policy, params)
    n_arms = _arms(n_arms)
    delta = _delta(delta)
    raw_evaluations = max_evaluations
    try:
        max_evaluations = _validate.count("max_evaluations", max_evaluations)
    except ValueError:
        max_evaluations = 0
    if max_evaluations < 1:
        raise ValueError(f"max_evaluations must be a whole number in [1, inf), got {shown(raw_evaluations)}")
    # bools are not round counts: np.asarray([True, 5]) would silently read True as 1
    if isinstance(horizons, (bool, np.bool_)) or (isinstance(horizons, (list, tuple))
                                                 and any(isinstance(h, (bool, np.bool_)) for h in horizons)):
        raise ValueError(f"horizons must be whole numbers in [0, inf), not bools; got {shown(horizons)}")
    _validate.unmasked("horizons", horizons)  # (np.asarray drops a mask: the masked horizon was certified)
    raw = np.asarray(horizons)
    # (a broadcast view of 10^10 horizons costs nothing until it is copied below: named first)
    _validate.check_bytes(f"horizons of shape {raw.shape}", 16 * int(raw.size), "give fewer horizons")
    if raw.ndim != 1:  # a bare number is not a sequence (it returned a 0-d result)
        raise ValueError(f"horizons must be a 1-D sequence of whole numbers in [0, inf), got {shown(horizons)}")
    if raw.size == 0:
        return np.empty(0)
    if raw.dtype.kind not in "iuf":
        raise ValueError(f"horizons must be a 1-D sequence of whole numbers in [0, inf), got {shown(horizons)}")
    as_float = raw.astype(float)
    bad = ~np.isfinite(as_float) | (as_float < 0) | (as_float != np.round(as_float))
    if bad.any():
        raise ValueError(f"horizons must be whole numbers in [0, inf), got {raw[bad].ravel()[0]!r}")
    if as_float.max() >= 2.0**63:  # int64 would wrap around to a negative horizon
        raise ValueError(f"horizons must be whole numbers below 2^63, got {raw.ravel()[as_float.ravel().argmax()]!r}")
    rounds = raw.astype(np.int64)
    top = _horizon(int(rounds.max()), n_arms, "max(horizons)")
    return _evaluating(top, lambda: _schedule(pol, top, n_arms, structure, relation).curve(rounds, delta, max_evaluations=max_evaluations))


def _constructor_parameters(cls: type[Policy]) -> list[str]:
    """The keyword parameters of a policy class's constructor, in order."""
    import inspect

    return [name for name, p in inspect.signature(cls).parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


@dataclasses.dataclass(frozen=True)
class Inversion:
    """An inverted parameter with its verified certificate (``certificate <= target``)."""

    policy: Policy
    parameter: str
    value: float
    certificate: float
    target: float
    currency: str  # "epsilon at delta=..." or "mu"

    def __str__(self) -> str:
        return (f"{self.parameter} = {self.value:.10g}: certified {self.currency} {self.certificate:.6g} "
                f"<= target {self.target:.6g} ({self.policy!r})")


def _certificate_fn(make: Callable[[float], Policy], horizon: int, n_arms: int, delta: float | None,
                    target_is_mu: bool, accountants=None, structure=None,
                    relation: str = "entry") -> Callable[[float], float]:
    def certify(value: float) -> float:
        try:
            pol = make(value)
        except ValueError:
            return math.inf  # outside the family's valid range: treat as infeasible
        sched = _schedule(pol, horizon, n_arms, structure, relation)
        return sched.mu(horizon) if target_is_mu else sched.epsilon(horizon, delta, accountants).value

    return certify


def invert(policy: str | type[Policy], target: float, horizon: int, *, solve_for: str,
           bounds: tuple[float, float], n_arms: int = 2, delta: float | None = None,
           target_mu: bool = False, integer: bool = False, accountants=None,
           structure: Mapping[str, Any] | None = None, relation: str = "entry", **fixed) -> Inversion:
    """The least-noise value of ``solve_for`` whose certificate meets ``target``; never overshoots.

    Args:
        policy: a registered name or a Policy class; ``fixed`` holds its other parameters.
        target: the epsilon (at ``delta``) or, with ``target_mu=True``, the GDP mu to meet.
        solve_for: the constructor parameter to solve for (e.g. ``"v"``, ``"c"``, ``"epsilon"``).
        bounds: the search range of that parameter.
        integer: search whole numbers only.
        accountants: the accountant factories to certify with (default: all of them). A subset is
            still valid (each gives an upper bound) and can be much faster (PLD's FFT is skipped).
        structure, relation: structured feedback, as :func:`epsilon` (e.g. ``{"max_degree": 3}``,
            ``relation="round"`` for a feedback graph).

    The certificate must be monotone in the parameter over ``bounds``; the direction is found by
    evaluating both ends. "Least noise" is the end of the feasible set next to the infeasible one.
    Where the certificate is flat in the parameter at ``horizon`` (both ends certify the same, e.g. no
    release yet), every value is equally private and the end that adds the least noise is returned: the
    direction is read at the first longer horizon (4x, 16x, ... up to 2^20 x) where the ends differ
    (:func:`_flat_direction`); the upper end of ``bounds`` if none does.
    The returned value is re-evaluated: ``certificate <= target`` is checked, never assumed.
    """
    if isinstance(policy, str):
        cls = policy_class(policy)
    else:
        cls = policy
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise ValueError(f"policy must be a registered name or a Policy class, got {shown(policy)}")
    n_arms = _arms(n_arms)
    horizon = _horizon(horizon, n_arms)
    target = _validate.positive("target", target)
    target_mu, integer = _flag("target_mu", target_mu), _flag("integer", integer)
    if target_mu:
        if delta is not None:
            raise ValueError("delta is for an epsilon target; a mu target (target_mu=True) takes none")
    elif delta is None:
        raise ValueError("delta is required for an epsilon target (or pass target_mu=True)")
    else:
        delta = _delta(delta)
    accepted = _constructor_parameters(cls)
    if not isinstance(solve_for, str) or solve_for not in accepted:
        raise ValueError(f"solve_for must name a parameter of {cls.__name__}: one of {', '.join(accepted)}; "
                         f"got {shown(solve_for)}")
    unknown = sorted(set(fixed) - set(accepted))
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)} for {cls.__name__}; "
                         f"its parameters are {', '.join(accepted)}")
    if solve_for in fixed:
        raise ValueError(f"{solve_for} is both solved for and fixed; give it as solve_for only")
    try:
        lo, hi = (_validate._as_float("bounds", b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be two finite real numbers (lower, upper), got {shown(bounds)}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be two finite numbers with lower < upper, got {shown(bounds)}")

    def make(value: float) -> Policy:
        return cls(**(fixed | {solve_for: int(round(value)) if integer else value}))

    # Both ends must be valid values of the parameter: an invalid end would certify "inf" and flip
    # the inferred direction of the search (e.g. epsilon in [-1, 1] looked like "more is safer").
    for end in (lo, hi):
        try:
            make(end)
        except ValueError as exc:
            raise ValueError(f"bounds: {solve_for}={_num(end)} is outside the parameter's valid range ({exc})") from None

    certify = _certificate_fn(make, horizon, n_arms, delta, target_mu, accountants, structure, relation)
    c_lo, c_hi = certify(lo), certify(hi)
    increasing = c_hi >= c_lo  # spend grows with the parameter: the feasible set is [lo, x*]
    if c_lo == c_hi:  # flat here: every value certifies the same, so the direction is read further out
        increasing = _flat_direction(make, lo, hi, horizon, n_arms, delta, target_mu, accountants, structure,
                                     relation)
    currency = "mu" if target_mu else f"epsilon at delta={_num(delta)}"
    try:
        result = calibrate(certify, target, lo, hi, increasing=increasing, integer=integer)
    except UnreachableTargetError:  # name the parameter and its range, not calibrate's "most private parameter"
        safe = lo if increasing else hi
        raise UnreachableTargetError(
            f"target {currency} {_num(target)} is unreachable for {cls.__name__} over {horizon:.6g} rounds: even "
            f"{solve_for} = {_num(safe)}, the most private end of bounds [{_num(lo)}, {_num(hi)}], certifies "
            f"{_num(certify(safe))}"
        ) from None
    value = int(round(result.parameter)) if integer else result.parameter
    final = certify(value)
    if not final <= target:  # defensive re-verification of the returned parameter
        raise UnreachableTargetError(f"verification failed: {solve_for}={value} certifies {final} > {target}")
    return Inversion(make(value), solve_for, value, final, float(target), currency)


#: how far past the horizon :func:`invert` looks for the direction of a certificate that is flat at it
_FLAT_PROBE_FACTOR, _FLAT_PROBE_MAX = 4, 2**20


def _flat_direction(make, lo, hi, horizon, n_arms, delta, target_mu, accountants, structure, relation) -> bool:
    """Whether a larger parameter spends more, for a certificate that is flat in it at ``horizon``.

    A flat certificate (DP-UCB-Int's ``v`` at T = 2: its one release has eps 1^(-v/2) = 1 for every v;
    Gaussian TS's ``c`` at T = K with b = 1: no release at all) makes every value of ``bounds`` equally
    private at this horizon, so any answer is valid; what a caller wants from "the least-noise value" is
    the end that adds the least noise. That is a property of the parameter, not of the horizon: it is read
    at the first of the horizons 4 T, 16 T, ... (up to 2^20 T) where the two ends certify differently.
    Before (session 15, left then): a tie read as "increasing", so the upper end came back -- for ``v``
    and ``c`` the noisiest. Where no horizon tells them apart, the parameter does not move the
    certificate at all and the upper end of ``bounds`` is returned, as before. The probe certifies with
    the closed-form accountants (no PLD) unless ``accountants`` are given: only the order of the two
    ends is read from it."""
    from accountants.best import default_accountants

    probe_accountants = accountants if accountants is not None else [
        f for f in default_accountants() if getattr(f, "name", "") != "pld"]
    # at a large delta a few small releases certify 0 whatever their noise (DP-UCB-Int, K = 100, interval 5000
    # at delta 0.1: 0 up to 2.6e6 rounds), so an epsilon target is also compared at delta 1e-10
    deltas = [None] if target_mu else sorted({delta, min(delta, 1e-10)}, reverse=True)
    h = horizon
    while h <= horizon * _FLAT_PROBE_MAX // _FLAT_PROBE_FACTOR and h < 2**62 // _FLAT_PROBE_FACTOR:
        h *= _FLAT_PROBE_FACTOR
        for d in deltas:
            certify = _certificate_fn(make, h, n_arms, d, target_mu, probe_accountants, structure, relation)
            c_lo, c_hi = certify(lo), certify(hi)
            if c_lo != c_hi:
                return c_hi > c_lo
    return True


def affordable_horizon(policy: Policy | str, target: float, n_arms: int = 2, *, delta: float | None = None,
                       target_mu: bool = False, max_horizon: int = 10**9,
                       structure: Mapping[str, Any] | None = None, relation: str = "entry", **params) -> int:
    """The largest horizon whose certificate is <= ``target`` (UnreachableTargetError if none >= n_arms)."""
    pol = _policy(policy, params)
    n_arms = _arms(n_arms)
    target = _validate.positive("target", target)
    target_mu = _flag("target_mu", target_mu)
    if not target_mu and delta is None:
        raise ValueError("delta is required for an epsilon target (or pass target_mu=True)")
    if not target_mu:
        delta = _delta(delta)
    max_horizon = _horizon(max_horizon, n_arms, "max_horizon")

    def certify(h: float) -> float:
        h = int(h)
        sched = _schedule(pol, h, n_arms, structure, relation)
        return sched.mu(h) if target_mu else sched.epsilon(h, delta).value

    try:
        return int(calibrate(certify, target, n_arms, max_horizon, increasing=True, integer=True).parameter)
    except UnreachableTargetError:  # name the horizon and its range, not calibrate's "most private parameter"
        currency = "mu" if target_mu else f"epsilon at delta={_num(delta)}"
        raise UnreachableTargetError(
            f"target {currency} {_num(target)} is unreachable for {pol!r}: even the shortest horizon, n_arms = {n_arms} "
            f"(horizons lie in [n_arms, max_horizon = {max_horizon:.6g}]), certifies {_num(certify(n_arms))}"
        ) from None


def ts_frontier(target: float, horizon: int, n_arms: int, bs: Iterable[int], *, delta: float | None = None
                ) -> list[Inversion]:
    """Modified Thompson sampling's frontier: for each b, the least variance factor c_min(b).

    ``target`` is a GDP mu (``delta=None``) or an epsilon at ``delta``. The schedule is
    mu(T)^2 = n(T) / (c (max(b, 1) + 1)) with n(T) = T - K b (b >= 1) or T - 1 (b = 0)
    (:class:`privbandit.policies.gaussian_ts.GaussianTSSchedule`), so

        c_min(b) = n(T) / (mu^2 (max(b, 1) + 1)),

    which is Ou et al.'s T / (mu^2 (b + 1)) where their accounting charges every round, and smaller
    because pre-pull rounds release nothing. An epsilon target is first converted to the largest mu
    that certifies it (rounded down). Every point is the least lattice c whose certificate, re-evaluated
    through the schedule, meets the target (:func:`_least_feasible_c`; session 15).
    """
    n_arms = _arms(n_arms)
    horizon = _horizon(horizon, n_arms)
    target = _validate.positive("target", target)
    if delta is None:
        mu_target = target
    else:
        delta = _delta(delta)  # (kept as given, a Fraction delta was a TypeError in the label's :g)
        # delta = 0 (pure DP): a Gaussian release has no finite epsilon there; only no release at all meets it
        mu_target = 0.0 if delta == 0.0 else gdp_conversion.mu_for_epsilon_delta(target, delta)
    if isinstance(bs, (str, bytes)) or not isinstance(bs, Iterable) or (isinstance(bs, np.ndarray) and bs.ndim == 0):
        # (a 0-d numpy array is Iterable by type and a TypeError when iterated)
        raise ValueError(f"bs must be a sequence of whole numbers, got {shown(bs)}")
    bs = list(bs)
    if not bs:
        raise ValueError("bs must hold at least one b")
    out = []
    for b in bs:
        try:
            b = _validate.count("b", b)
        except ValueError:
            raise ValueError(f"bs must hold whole numbers in [0, horizon / n_arms = {horizon // n_arms}], "
                             f"got {shown(b)}") from None
        if n_arms * b > horizon:
            raise ValueError(f"b must lie in [0, horizon / n_arms = {horizon // n_arms}], got {b}")
        sched = GaussianTS(b=b).privacy_schedule(horizon, n_arms)
        n = sched.releases(horizon)
        # mu ** 2 may overflow (a huge target: c at its floor) or underflow (a tiny one: no float c is enough)
        try:
            denominator = mu_target ** 2 * (max(b, 1) + 1)
        except OverflowError:
            denominator = math.inf
        # c below GaussianTS's range (a huge target) is met by the least valid c, the least noise allowed
        c = (max(n / denominator, C_RANGE[0]) if denominator > 0 else math.inf) if n else 1.0
        if not c <= C_RANGE[1] and delta == 0.0:
            raise UnreachableTargetError(f"an epsilon target at delta = 0 (pure DP) is unreachable with {n:.6g} Gaussian "
                                         f"releases (horizon {horizon:.6g}, b = {b}): a Gaussian release has no finite "
                                         f"epsilon at delta 0; give delta in [{sys.float_info.min:.17g}, 1) or a mu target")
        if not c <= C_RANGE[1]:
            raise UnreachableTargetError(f"target mu {_num(mu_target)} over {n:.6g} releases (horizon {horizon:.6g}) needs a variance factor c "
                                         f"beyond GaussianTS's range [{C_RANGE[0]:g}, {C_RANGE[1]:g}] "
                                         f"(c = {n:.6g} / (mu^2 (max(b, 1) + 1)), b = {b})")

        def certify(c_value: float, b=b) -> float:
            s = GaussianTS(b=b, c=c_value).privacy_schedule(horizon, n_arms)
            return s.mu(horizon) if delta is None else s.epsilon(horizon, delta).value

        if n:  # (no release: any c certifies 0; 1.0 as before)
            c = _least_feasible_c(lambda c_value: certify(c_value) <= target, c, target, b)
        cert = certify(c)
        out.append(Inversion(GaussianTS(b=b, c=c), "c", c, cert, float(target),
                             "mu" if delta is None else f"epsilon at delta={delta:g}"))
    return out


def _least_feasible_c(feasible: Callable[[float], bool], c0: float, target: float, b: int) -> float:
    """The least variance factor with ``feasible(c)`` among GaussianTS's floor ``C_RANGE[0]`` and the
    40-bit lattice points of ``gdp_conversion`` above it (9e-13 relative apart), from the closed form ``c0``.

    Session 15: the closed form was nudged up by (1 + 1e-14) steps until it verified, so a neighbouring
    target could land one nudge higher (a larger budget, a noisier c: 5 of 560 mu ladders, ~1e-14
    relative). The least feasible lattice point is a function of the target alone, monotone wherever the
    certificate is monotone in c at lattice resolution (as ``calibrate``'s answers: measured, not a
    theorem), and at most one cell (9e-13 relative) noisier than the float boundary."""
    if feasible(C_RANGE[0]):  # a huge target: the least noise allowed
        return C_RANGE[0]
    good, step = c0, 2.0 ** -40  # a feasible c at or above the closed form (rounding may need a step)
    while not feasible(good):
        if good >= C_RANGE[1]:
            raise UnreachableTargetError(f"target {_num(target)} needs a variance factor c beyond GaussianTS's "
                                         f"range [{C_RANGE[0]:g}, {C_RANGE[1]:g}] (b = {b})")
        good, step = min(C_RANGE[1], good * (1.0 + step)), min(2.0 * step, 1.0)
    bad, step = good, 2.0 ** -40  # an infeasible c below it (C_RANGE[0] at the latest: checked above)
    while feasible(bad):
        bad, step = max(C_RANGE[0], bad * (1.0 - step)), min(2.0 * step, 0.5)
    return _lattice_boundary(feasible, good, bad, False)


def tune(candidates: Sequence[Policy], env, horizon: int, *, target: float, delta: float | None = None,
         target_mu: bool = False, replicates: int = 50, seed=0) -> tuple[Policy, list[dict]]:
    """Among ``candidates`` that meet the target, the one with the lowest simulated regret.

    ``env`` must be a *simulated* prior instance (e.g. ``Bernoulli([...])`` with guessed means):
    choosing parameters on real rewards would be a data-dependent release in itself. Candidates
    whose certificate exceeds the target are reported and skipped. Returns the winner and one row
    per candidate (certificate, regret and its 95% band).
    """
    from privbandit.engine import simulate

    from privbandit.envs.base import Environment

    target = _validate.positive("target", target)
    target_mu = _flag("target_mu", target_mu)
    if not target_mu and delta is None:
        raise ValueError("delta is required for an epsilon target (or pass target_mu=True)")
    if not target_mu:
        delta = _delta(delta)
    if isinstance(candidates, (str, bytes, Policy, np.ndarray)) or not hasattr(candidates, "__iter__"):
        raise ValueError(f"candidates must be a sequence of configured policies, got {shown(candidates)}")
    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates must hold at least one policy")
    wrong = [c for c in candidates if not isinstance(c, Policy)]
    if wrong:
        raise ValueError(f"candidates must be configured policies (e.g. PrivateUCB(epsilon=1.0)), got {wrong[0]!r}")
    if not isinstance(env, Environment):
        raise ValueError(f"env must be a simulated environment (e.g. Bernoulli([...])), got {shown(env)}")
    horizon = _horizon(horizon, env.n_arms)
    seeds = np.random.SeedSequence(check_seed("seed", seed)).spawn(len(candidates))
    rows, best = [], None
    for pol, child in zip(candidates, seeds):
        sched = pol.privacy_schedule(horizon, env.n_arms)
        cert = sched.mu(horizon) if target_mu else sched.epsilon(horizon, delta).value
        row = {"policy": repr(pol), "certificate": cert, "meets_target": cert <= target}
        if cert <= target:
            res = simulate(pol, env, horizon, replicates, seed=child, delta=delta or 1e-6, ledger=False,
                           progress=False)
            row |= {"regret": float(res.regret_mean[-1]), "regret_lower": float(res.regret_lower[-1]),
                    "regret_upper": float(res.regret_upper[-1])}
            if best is None or row["regret"] < best[1]:
                best = (pol, row["regret"])
        rows.append(row)
    if best is None:
        raise UnreachableTargetError(f"no candidate meets the target {target}")
    return best[0], rows
