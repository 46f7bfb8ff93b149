"""The contextual round loop (the extended feedback contract) for environments that offer contexts.

``simulate_contextual(policy, env, horizon, replicates, seed)`` advances every replicate in
lock-step: ``offer = env_run.offer(t)``; ``arms = run.select(t, offer)``; ``feedback =
env_run.feedback(t, arms)``; ``run.update(t, arms, rewards)``; the round's pseudo-regret
``env_run.regret(t, arms)`` accumulates online. It returns the engine's ``SimulationResult``
(regret mean and 95% band, pulls, live certificate, the ledger's realized spend), with the same
seeding (policy and environment streams spawned from one SeedSequence).
"""

from __future__ import annotations

import math
import time

import numpy as np

from privbandit.engine import _Z95, _closed_form_certificate, _realized_points, _validate, default_checkpoints
from privbandit.results import SimulationResult


def simulate_contextual(policy, env, horizon: int, replicates: int = 20, seed=None, *, delta: float = 1e-6,
                        ledger: bool | str = True, ledger_replicates: int | None = 4, realized_points: int = 6,
                        keep_arms: bool = False) -> SimulationResult:
    """Run a contextual ``policy`` on ``env`` (which must offer contexts); see the module docstring."""
    _validate(policy, env, horizon, replicates, delta)
    if "contexts" not in getattr(env, "offers", frozenset()):
        raise ValueError(f"env {env.name!r} offers no contexts, which policy {policy.name!r} requires")
    horizon, replicates = int(horizon), int(replicates)
    seed_seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    policy_seq, env_seq = seed_seq.spawn(2)
    policy_rng, env_rng = np.random.default_rng(policy_seq), np.random.default_rng(env_seq)
    checkpoints = default_checkpoints(horizon)
    n_arms = env.n_arms
    book = None
    if ledger and policy.private:
        from privbandit.ledger import Ledger

        book = Ledger(replicates, n_arms, tight=(ledger == "tight"), track_replicates=ledger_replicates,
                      capacity=horizon)
    run = policy.start(n_arms, replicates, horizon, policy_rng, ledger=book)
    env_run = env.start(replicates, env_rng)
    realized = np.full((checkpoints.size, replicates), np.nan) if book is not None else None
    queried = np.isin(checkpoints, _realized_points(checkpoints, realized_points))
    query = set(checkpoints[queried].tolist())
    cp_index = {int(c): i for i, c in enumerate(checkpoints)}
    cumulative = np.zeros(replicates)
    mean, half = np.empty(horizon), np.empty(horizon)
    pulls = np.zeros((replicates, n_arms), dtype=np.int64)
    arms_played = np.empty((horizon, replicates), dtype=np.int32) if keep_arms else None
    rows = np.arange(replicates)
    started = time.perf_counter()
    for t in range(1, horizon + 1):
        offer = env_run.offer(t)
        arms = run.select(t, offer)
        fb = env_run.feedback(t, arms)
        run.update(t, arms, np.clip(fb.rewards, 0.0, 1.0))
        cumulative += env_run.regret(t, arms)
        pulls[rows, arms] += 1
        mean[t - 1] = cumulative.mean()
        half[t - 1] = _Z95 * cumulative.std(ddof=1) / math.sqrt(replicates) if replicates > 1 else 0.0
        if keep_arms:
            arms_played[t - 1] = arms
        if book is not None and t in query:
            realized[cp_index[t]] = book.realized_epsilon(delta)
    seconds = time.perf_counter() - started
    schedule = policy.privacy_schedule(horizon, n_arms)
    certified, by = schedule.live_certificates(checkpoints, delta)
    closed_form = None
    if book is not None and not book.tight:
        closed_form = _closed_form_certificate(schedule, checkpoints, queried, delta, certified, by)
    return SimulationResult(
        policy=policy.params(), environment=env.params(), horizon=horizon, replicates=replicates,
        seed=seed if not isinstance(seed, np.random.SeedSequence) else seed_seq, delta=float(delta),
        regret_mean=mean, regret_lower=mean - half, regret_upper=mean + half, final_regret=cumulative.copy(),
        pulls=pulls, checkpoints=checkpoints, certified_epsilon=certified, certified_by=by,
        realized_epsilon=realized, certified_closed_form=closed_form,
        claimed_epsilon=policy.claimed_epsilon(horizon, n_arms, delta), arms=arms_played, seconds=seconds)
