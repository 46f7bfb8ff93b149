"""Samplers: n independent runs of a mechanism or a policy on one input, vectorised.

* :class:`MechanismSampler` -- ``mechanism(x, n, rng) -> (n,) or (n, m)`` released values on the
  neighbouring statistics ``x`` and ``x_prime``.
* :class:`PolicySampler` -- a :class:`~privbandit.policies.base.Policy` on two reward tapes, run through
  :func:`run_policy`: a thin lock-step loop over ``policy.start / select / update`` whose n replicates
  are n independent runs (the engine's semantics; AUDIT.md 3.1 "run_batch"). Rewards are clipped to
  [0, 1] as the engine does; ``clip=False`` exists only so that tests can plant the unclipped-rewards
  bug. A *trace instrument* (:func:`trace_method`, :func:`trace_attribute`, :func:`auto_trace`) records
  internal released values after every ``select``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from accountants._validate import real_array, shown
from privbandit.audit.raised import Clock, policy_code
from privbandit.policies.base import Policy


class MechanismSampler:
    """Runs of ``mechanism(x, n, rng)`` on D (``x``) and D' (``x_prime``)."""

    def __init__(self, mechanism: Callable, x, x_prime, label: str = ""):
        if not callable(mechanism):
            raise ValueError(f"mechanism must be callable as mechanism(x, n, rng), got {shown(mechanism)}")
        self.mechanism, self.x, self.x_prime = mechanism, x, x_prime
        self.label = label or f"x={x!r} vs x'={x_prime!r}"
        self.observation = "value"

    def sample(self, side: int, n: int, rng: np.random.Generator) -> dict:
        x = self.x if side == 0 else self.x_prime
        out = np.asarray(self.mechanism(x, n, rng), dtype=float)
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != n:
            raise ValueError(f"mechanism must return shape (n,) or (n, m) with n={n}, got {out.shape}")
        return {"value": out}


def _resolve(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def trace_method(path: str) -> Callable:
    """Instrument: record the return value of the run's method at ``path`` (e.g. ``"posterior.release"``)
    every time it is called. Each call's output must have shape (replicates, m)."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"path must be a dotted attribute path such as 'posterior.release', got {shown(path)}")

    def instrument(run):
        owner_path, _, name = path.rpartition(".")
        owner = _resolve(run, owner_path) if owner_path else run
        original = getattr(owner, name)
        buffer = []

        @functools.wraps(original)
        def wrapped(*args, **kwargs):
            out = original(*args, **kwargs)
            buffer.append(np.asarray(out, dtype=float).reshape(np.shape(out)[0], -1))
            return out

        setattr(owner, name, wrapped)

        def collect(t):
            if not buffer:
                return None
            out = np.concatenate(buffer, axis=1)
            buffer.clear()
            return out

        return collect

    instrument.description = f"trace of {path}"
    return instrument


def trace_attribute(name: str) -> Callable:
    """Instrument: record the run's attribute ``name`` (shape (replicates, m)) after every select,
    e.g. a statistic the policy publishes next to its action."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be an attribute name, got {shown(name)}")

    def instrument(run):
        def collect(t):
            value = getattr(run, name, None)
            if value is None:
                return None
            value = np.asarray(value, dtype=float)
            return value.reshape(value.shape[0], -1).copy()

        return collect

    instrument.description = f"published attribute {name}"
    return instrument


KNOWN_TRACES = ("posterior.release",)
"""Method paths of the toolkit's policies whose return values are the releases the accountant pays for."""


def auto_trace(run) -> Callable:
    """Instrument: the first of :data:`KNOWN_TRACES` that the run has; otherwise every release the
    run's mechanisms make (:func:`privbandit.audit.tracing.release_trace`), which needs the
    draw-count ledger :func:`run_policy` gives a traced run."""
    for path in KNOWN_TRACES:
        try:
            _resolve(run, path)
        except AttributeError:
            continue
        return trace_method(path)(run)
    if getattr(run, "_audit_ledger", None) is None:
        raise ValueError(f"{type(run).__name__} has none of the known trace methods {KNOWN_TRACES} and no audit "
                         "ledger; run it through run_policy, or pass trace=trace_method('attr.method')")
    from privbandit.audit.tracing import release_trace

    return release_trace(run)


auto_trace.description = "trace (auto)"


def run_policy(policy: Policy, tape: np.ndarray, horizon: int, n: int, rng: np.random.Generator, *,
               trace: Callable | None = None, clip: bool = True, chunk: int = 250_000) -> dict:
    """``n`` independent runs of ``policy`` on the reward tape: the j-th pull of arm k pays tape[k, j].

    ``tape`` has shape (arms, pulls), shared by every run, or (n, arms, pulls): run i reads its own
    tape ``tape[i]`` (one-run audits: independent canary bits per run, in one lock-stepped call).
    Returns {"actions": (n, horizon) int8/int16, "trace": (n, m) or None, "n_arms": K}.
    """
    tape = real_array("tape", tape, bools=True)
    per_run = tape.ndim == 3
    if tape.ndim not in (2, 3) or tape.shape[-2] < 2:
        raise ValueError(f"tape must have shape (arms >= 2, pulls) or (n, arms >= 2, pulls), got {tape.shape}")
    if tape.shape[-1] < horizon:
        raise ValueError(f"tape must hold at least horizon={horizon} pulls per arm, got {tape.shape[-1]}")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a whole number in [1, inf), got {shown(n)}")
    if per_run and tape.shape[0] != n:
        raise ValueError(f"a tape per run needs shape (n={n}, arms, pulls), got {tape.shape}")
    k = tape.shape[-2]
    dtype = np.int8 if k < 127 else np.int32
    actions = np.empty((n, horizon), dtype=dtype)
    traces = []
    used = tape if not clip else np.clip(tape, 0.0, 1.0)
    clock = Clock()
    for start in range(0, n, chunk):
        r = min(chunk, n - start)
        tapes = used[start:start + r] if per_run else None
        with policy_code(clock):  # the policy's exceptions leave as PolicyRaised (privbandit/audit/raised.py)
            _chunk(policy, k, r, horizon, rng, trace, tapes, per_run, used, start, actions, traces, clock)
    return {"actions": actions, "trace": np.concatenate(traces) if traces else None, "n_arms": k}


def _chunk(policy, k, r, horizon, rng, trace, tapes, per_run, used, start, actions, traces, clock) -> None:
    """``r`` lock-stepped runs of :func:`run_policy` from row ``start`` (``clock.t``: the round played)."""
    clock.t = 0
    if trace is not None:
        # a draw-count-only ledger: every mechanism then reports, so a trace can pair releases
        # with their (replicate, stream); it changes no draw and no decision
        from privbandit.ledger import Ledger

        book = Ledger(r, k, track_replicates=0)
        run = policy.start(k, r, horizon, rng, ledger=book)
        run._audit_ledger = book
    else:
        run = policy.start(k, r, horizon, rng, ledger=None)
    # The tape was clipped above (as the engine clips), so the run's own per-update reward check
    # is skipped; with clip=False this vouching is the planted bug itself (an engine that forgot
    # to clip but tells the policy its rewards are checked).
    run.rewards_checked = True
    collect = trace(run) if trace is not None else None
    try:
        _steps(run, collect, horizon, r, k, tapes, per_run, used, start, actions, traces, clock)
    finally:
        close = getattr(collect, "close", None)
        if close is not None:
            close()


def _steps(run, collect, horizon, r, k, tapes, per_run, used, start, actions, traces, clock) -> None:
    """One lock-stepped chunk of ``run_policy``: ``r`` runs from row ``start``."""
    pulls = np.zeros((r, k), dtype=np.int64)
    rows = np.arange(r)
    parts = []
    for t in range(1, horizon + 1):
        clock.t = t
        arms = np.asarray(run.select(t))
        if collect is not None:
            got = collect(t)
            if got is not None:
                parts.append(got)
        j = pulls[rows, arms]
        pulls[rows, arms] += 1
        run.update(t, arms, tapes[rows, arms, j] if per_run else used[arms, j])
        actions[start:start + r, t - 1] = arms
    if collect is not None:
        if not parts:
            raise ValueError("the trace instrument recorded nothing during the run")
        traces.append(np.concatenate(parts, axis=1))


class PolicySampler:
    """Runs of a policy on the reward tapes ``tape`` (D) and ``tape_prime`` (D')."""

    def __init__(self, policy: Policy, tape, tape_prime, horizon: int, *, trace: Callable | None = None,
                 clip: bool = True, label: str = ""):
        if not isinstance(policy, Policy):
            raise ValueError(f"policy must be a privbandit Policy, got {type(policy).__name__}")
        self.policy, self.horizon, self.trace, self.clip = policy, int(horizon), trace, bool(clip)
        self.tape = real_array("tape", tape, bools=True)
        self.tape_prime = real_array("tape_prime", tape_prime, bools=True)
        if self.tape.shape != self.tape_prime.shape:
            raise ValueError(f"tape and tape_prime must have the same shape, got {self.tape.shape} and "
                             f"{self.tape_prime.shape}")
        self.label = label or "tape pair"
        self.observation = "actions" + (f" + {getattr(trace, 'description', 'trace')}" if trace else "")

    def sample(self, side: int, n: int, rng: np.random.Generator) -> dict:
        return run_policy(self.policy, self.tape if side == 0 else self.tape_prime, self.horizon, n, rng,
                          trace=self.trace, clip=self.clip)
