"""The simulation engine: every replicate of a run advanced in lock-step with numpy.

``simulate(policy, env, horizon, replicates, seed)`` returns a :class:`SimulationResult`: per-round
cumulative pseudo-regret (mean and 95% band across replicates), pulls per arm, the certified
(eps, delta) curve from the policy's privacy schedule (the *live certificate*: data-independent,
shared by all replicates) and the realized per-record spend from the ledger.

Randomness: one ``numpy.random.SeedSequence`` per run, spawned into independent streams for the
policy and the environment, so the same seed gives bit-identical results and runs spread over a
cluster (``sweep``) stay independent.

Rewards are clipped to [0, 1] before the policy (and so any mechanism) sees them — the sensitivity
analyses of every private policy rely on it. ``strict_rewards=True`` makes an out-of-range reward an
error instead.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Sequence

import numpy as np

from accountants._validate import count as _count
from privbandit.envs.base import Environment
from privbandit.policies.base import Policy
from privbandit.results import SimulationResult

_Z95 = 1.959963984540054


def default_checkpoints(horizon: int, points: int = 48) -> np.ndarray:
    """A geometric grid of rounds from 1 to ``horizon`` (inclusive), at most ``points`` + 1 long."""
    grid = np.unique(np.geomspace(1, horizon, points).round().astype(np.int64))
    return np.union1d(grid, [horizon])


def _realized_points(checkpoints: np.ndarray, points: int) -> np.ndarray:
    """A geometric subset of ``checkpoints`` (always with the last) at which the ledger is queried.

    A worst-record query scans every tracked record, so it is made at a few points only.
    """
    if checkpoints.size <= points:
        return checkpoints
    idx = np.unique(np.geomspace(1, checkpoints.size, points).round().astype(np.int64) - 1)
    return checkpoints[np.union1d(idx, [checkpoints.size - 1])]


#: bytes a run holds per round and replicate: the arms played (int16), the regret increments and
#: their cumulative sums (float64 each), plus slack for the reductions over them
_BYTES_PER_CELL = 24


def check_memory(horizon: int, replicates: int, what: str = "replicates") -> None:
    """ValueError naming horizon and replicates when a run's per-round arrays would not fit in the
    machine's physical memory (checked before anything is allocated, instead of a MemoryError)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system: let numpy be the judge
        return
    if int(horizon) * int(replicates) * _BYTES_PER_CELL > physical:
        largest = physical // (_BYTES_PER_CELL * int(replicates))
        raise ValueError(f"horizon x {what} = {int(horizon)} x {int(replicates)} needs "
                         f"{int(horizon) * int(replicates) * _BYTES_PER_CELL / 2**30:.3g} GiB, more than this machine's "
                         f"{physical / 2**30:.3g} GiB: with {int(replicates)} {what} the horizon must lie in "
                         f"[n_arms, {largest}]")


def _validate(policy, env, horizon, replicates, delta):
    if not isinstance(policy, Policy):
        raise ValueError(f"policy must be a privbandit Policy, got {type(policy).__name__}")
    if not isinstance(env, Environment):
        raise ValueError(f"env must be a privbandit Environment, got {type(env).__name__}")
    horizon = _count("horizon", horizon)
    if horizon < env.n_arms:
        raise ValueError(f"horizon must be a whole number >= the number of arms ({env.n_arms}), got {horizon!r}")
    replicates = _count("replicates", replicates)
    if replicates < 1:
        raise ValueError(f"replicates must be a whole number >= 1, got {replicates!r}")
    if isinstance(delta, bool) or not (isinstance(delta, (int, float, np.floating)) and 0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    check_memory(horizon, replicates)


def _progress(total: int, enabled: bool | None):
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # the progress bar is an optional extra
        return None
    return tqdm(total=total, unit="round", mininterval=0.5, leave=False)


def _closed_form_certificate(schedule, checkpoints, queried, delta, certified, by) -> np.ndarray:
    """The live certificate in the cheap ledger's currency (pure, KOV, GDP accountants only), at the
    ``queried`` checkpoints (where the ledger reports realized spend; NaN elsewhere).

    Where every queried checkpoint of the full certificate was won by one of those accountants it is
    that certificate: the full one minimises over a superset of them, so neither can be smaller.
    """
    from privbandit.ledger import CLOSED_FORM_ACCOUNTANTS

    out = np.full(checkpoints.size, np.nan)
    names = {factory.name for factory in CLOSED_FORM_ACCOUNTANTS} | {"none"}
    if all(by[i].split(" ", 1)[0] in names for i in np.flatnonzero(queried)):
        out[queried] = certified[queried]
    else:
        out[queried] = schedule.live_certificates(checkpoints[queried], delta, CLOSED_FORM_ACCOUNTANTS)[0]
    return out


def simulate(policy: Policy, env: Environment, horizon: int, replicates: int = 100, seed=None, *,
             delta: float = 1e-6, checkpoints: Sequence[int] | None = None, ledger: bool | str = True,
             strict_rewards: bool = False, keep_arms: bool = False, progress: bool | None = None,
             max_tracked_bytes: int = 256 * 2**20, realized_points: int = 8,
             ledger_replicates: int | None = 8) -> SimulationResult:
    """Run ``policy`` on ``env`` for ``horizon`` rounds in ``replicates`` lock-stepped replicates.

    Args:
        seed: anything ``numpy.random.SeedSequence`` accepts, or a SeedSequence (e.g. a spawned child).
        delta: the delta at which certified and realized epsilons are reported.
        checkpoints: rounds at which privacy is evaluated (default: a geometric grid + the horizon).
        ledger: True to record every noise draw in a per-record ledger, ``"tight"`` to also keep the
            full release list (audits), False to skip it (the certificate does not depend on it).
        strict_rewards: reject rewards outside [0, 1] instead of clipping them.
        keep_arms: keep the (horizon, replicates) array of arms played in the result.
        progress: show a progress bar (default: only when stderr is a terminal and tqdm is installed).
        realized_points: how many checkpoints (a geometric subset, always with the horizon) query the
            ledger's realized spend; the others hold NaN. Each query scans every tracked record.
        ledger_replicates: how many replicates (the first ones) keep per-record tracking in the
            ledger (None: as many as ``max_tracked_bytes`` allows). Recording costs time in
            proportion to the tracked streams; the others report NaN realized spend.
    """
    _validate(policy, env, horizon, replicates, delta)
    horizon, replicates = int(horizon), int(replicates)
    seed_seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    policy_seq, env_seq = seed_seq.spawn(2)
    policy_rng, env_rng = np.random.default_rng(policy_seq), np.random.default_rng(env_seq)

    checkpoints = default_checkpoints(horizon) if checkpoints is None else np.unique(np.asarray(checkpoints, dtype=np.int64))
    if checkpoints.size and (checkpoints[0] < 1 or checkpoints[-1] > horizon):
        raise ValueError(f"checkpoints must lie in [1, {horizon}]")
    checkpoints = np.union1d(checkpoints, [horizon])

    n_arms = env.n_arms
    book = None
    if ledger and policy.private:
        from privbandit.ledger import Ledger

        book = Ledger(replicates, n_arms, tight=(ledger == "tight"), max_tracked_bytes=max_tracked_bytes,
                      track_replicates=ledger_replicates, capacity=horizon)
    run = policy.start(n_arms, replicates, horizon, policy_rng, ledger=book)
    env_run = env.start(replicates, env_rng)

    arms_dtype = np.int16 if n_arms < 2**15 else np.int32
    arms_played = np.empty((horizon, replicates), dtype=arms_dtype)
    realized = np.full((checkpoints.size, replicates), np.nan) if book is not None else None
    queried = np.isin(checkpoints, _realized_points(checkpoints, max(1, int(realized_points))))
    query = set(checkpoints[queried].tolist())
    next_cp, cp_rounds = 0, checkpoints.tolist() + [0]  # Python ints: a cheap per-round comparison
    bar = _progress(horizon, progress)
    started = time.perf_counter()
    must_check = not env.rewards_in_unit_interval
    # The rewards fed below are in [0, 1] (guaranteed by the environment, or checked under
    # strict_rewards): the run's own check (policies.base.check_rewards) would be double work. After
    # plain clipping the run still checks, as np.clip lets NaN through.
    run.rewards_checked = not must_check or strict_rewards
    for t in range(1, horizon + 1):
        arms = run.select(t)
        rewards = env_run.rewards(t, arms)
        if not must_check:
            pass  # the environment guarantees [0, 1]: clipping would be the identity
        elif strict_rewards:
            bad = (rewards < 0) | (rewards > 1) | np.isnan(rewards)
            if bad.any():
                raise ValueError(f"reward {rewards[bad][0]!r} in round {t} lies outside [0, 1] (strict_rewards=True)")
        else:
            rewards = np.clip(rewards, 0.0, 1.0)
        run.update(t, arms, rewards)
        arms_played[t - 1] = arms
        if t == cp_rounds[next_cp]:
            if book is not None and t in query:
                realized[next_cp] = book.realized_epsilon(delta)
            next_cp += 1
        if bar is not None and t % 1000 == 0:
            bar.update(1000)
    seconds = time.perf_counter() - started
    if bar is not None:
        bar.close()

    # Pseudo-regret from the arms played, vectorised once at the end.
    rounds = np.arange(1, horizon + 1)
    increments = env.best(rounds)[:, None] - env.expected(rounds[:, None], arms_played)
    cumulative = np.cumsum(increments, axis=0)
    mean = cumulative.mean(axis=1)
    half = _Z95 * cumulative.std(axis=1, ddof=1) / math.sqrt(replicates) if replicates > 1 else np.zeros(horizon)
    pulls = np.stack([np.bincount(arms_played[:, r], minlength=n_arms) for r in range(replicates)])

    schedule = policy.privacy_schedule(horizon, n_arms)
    certified, by = schedule.live_certificates(checkpoints, delta)
    # The cheap ledger composes each record with the closed-form accountants only (pure, KOV, GDP);
    # the certificate in that same currency is what its realized spend must stay below.
    closed_form = None
    if book is not None and not book.tight:
        closed_form = _closed_form_certificate(schedule, checkpoints, queried, delta, certified, by)

    return SimulationResult(
        policy=policy.params(), environment=env.params(), horizon=horizon, replicates=replicates,
        seed=seed if not isinstance(seed, np.random.SeedSequence) else seed_seq, delta=float(delta),
        regret_mean=mean, regret_lower=mean - half, regret_upper=mean + half,
        final_regret=cumulative[-1].copy(), pulls=pulls, checkpoints=checkpoints,
        certified_epsilon=certified, certified_by=by, realized_epsilon=realized,
        certified_closed_form=closed_form,
        claimed_epsilon=policy.claimed_epsilon(horizon, n_arms, delta),
        arms=arms_played if keep_arms else None, seconds=seconds,
    )
