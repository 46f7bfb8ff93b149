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

The feedback contract (privbandit/feedback.py, docs/feedback.md): per round, ``env_run.offer(t)``,
``run.select(t[, offer])``, ``env_run.feedback(t, arms)``, then ``run.update`` (bandit feedback) or
``run.observe`` (side observations). Environments that override none of ``offer``/``feedback`` take
the original fast path (``rewards`` and ``update`` only), with the same calls and random streams.

Planned rounds (policies.base ``plan``/``update_block``, docs/feedback.md): on the plain contract, a
run that commits to the arms of rounds ahead whatever their rewards (DP-SE within an epoch, a batched
EXP3 within a batch) is advanced a stretch at a time -- ``env_run.rewards_block``, one
``update_block`` -- with the same results, bit for bit, as round by round.

Memory is O(T + R K) (plus a bounded block): regret accumulates online -- per-replicate cumulative
regret carried across blocks of rounds, the per-round mean and band written as each block completes
-- and the (T, R) arms array exists only with ``keep_arms=True``.
"""

from __future__ import annotations

import copy
import math
import operator
import os
import sys
import time
from collections.abc import Sequence

import numpy as np

from accountants import _validate as _accountant_validate
from accountants._validate import count as _count, shown
from privbandit import _engine_kernels
from privbandit.envs.base import Environment, EnvironmentRun, library_code, real_values, unit_rewards
from privbandit.feedback import Feedback, check_relation
from privbandit.policies.base import Policy, PolicyRun, schedule_for
from privbandit.results import SimulationResult
from privbandit.run_options import check_run_options
from privbandit.seeding import check_seed

_Z95 = 1.959963984540054
#: Regret is computed in blocks of about this many (round, replicate) cells (arms int16 + regret
#: float64: ~2.5 MB), so memory does not grow with horizon x replicates.
_BLOCK_CELLS = 2**18


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


#: the machine's physical memory (accountants._validate.physical_memory, shared with the array checks)
physical_memory = _accountant_validate.physical_memory


def check_memory(horizon: int, replicates: int, what: str = "replicates") -> None:
    """ValueError naming horizon and replicates when a run's per-round arrays would not fit in the
    machine's physical memory (checked before anything is allocated, instead of a MemoryError)."""
    physical = physical_memory()
    if physical is None:
        return
    need = int(horizon) * int(replicates) * _BYTES_PER_CELL
    if need > physical:
        largest = physical // (_BYTES_PER_CELL * int(replicates))
        # exact integers throughout: a 400-digit horizon (the command line reads numbers exactly) made
        # need / 2**30 an OverflowError; shown by magnitude beyond 10^40 (str() stops at 4300 digits)
        shown = _accountant_validate.shown
        gib = f"{need / 2**30:.3g}" if need.bit_length() < 1000 else f"about 2^{need.bit_length() - 31}"
        if largest < 2:  # no horizon fits: it is the replicates that must come down
            raise ValueError(f"{what} = {shown(int(replicates))} needs more than this machine's "
                             f"{physical / 2**30:.3g} GiB even for 2 rounds: {what} must lie in "
                             f"[1, {physical // (2 * _BYTES_PER_CELL)}]")
        raise ValueError(f"horizon x {what} = {shown(int(horizon))} x {shown(int(replicates))} needs "
                         f"{gib} GiB, more than this machine's "
                         f"{physical / 2**30:.3g} GiB: with {int(replicates)} {what} the horizon must lie in "
                         f"[n_arms, {largest}]")


def _validate(policy, env, horizon, replicates, delta):
    if not isinstance(policy, Policy):
        raise ValueError(f"policy must be a privbandit Policy, got {type(policy).__name__}")
    if not isinstance(env, Environment):
        raise ValueError(f"env must be a privbandit Environment, got {type(env).__name__}")
    horizon = _count("horizon", horizon)
    # rounds and replicates index int64 arrays; beyond 2^63 the memory check's arithmetic left the
    # floats (an OverflowError) before it could name them
    if not env.n_arms <= horizon < 2**63:
        raise ValueError(f"horizon must be a whole number >= the number of arms ({env.n_arms}) and below 2^63, "
                         f"got {_accountant_validate.shown(horizon)}")
    rounds = getattr(env, "rounds", None)  # a fixed table: checked now, not at its first missing round
    if isinstance(rounds, int) and horizon > rounds:
        raise ValueError(f"horizon must be at most the {rounds} rounds of the {env.name} environment, got {horizon}")
    replicates = _count("replicates", replicates)
    if not 1 <= replicates < 2**63:
        raise ValueError(f"replicates must be a whole number in [1, 2^63), "
                         f"got {_accountant_validate.shown(replicates)}")
    if isinstance(delta, bool) or not (isinstance(delta, (int, float, np.floating)) and 0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {_accountant_validate.shown(delta)}")
    # the accountants need a normal float (checked here, before the run, not at its first query)
    delta = _accountant_validate.probability("delta", delta)
    check_memory(horizon, replicates)
    # the per-arm state, a lower bound: every policy keeps at least two (replicates, n_arms) arrays (counts and
    # sums, or weights and probabilities); a contextual run draws (replicates, n_arms, dim) contexts every
    # round, and a disjoint linear model keeps a (dim, dim) Gram matrix per arm (session 16: a MemoryError
    # from inside the run, naming nothing, before)
    k, dim = int(env.n_arms), int(getattr(env, "dim", 0) or 0) if "contexts" in policy.requires else 0
    per = 2 + dim + (dim * dim if getattr(policy, "model", None) == "disjoint" else 0)
    _accountant_validate.check_bytes(
        f"the run's state, replicates x n_arms{' x dim^2' if per > 2 + dim else ' x dim' if dim else ''} = "
        f"{replicates} x {k}{f' x {dim}' if dim else ''}", 8 * replicates * k * per,
        "bring replicates, the number of arms" + (" or dim" if dim else "") + " down")
    return horizon, replicates, delta


def _check_capabilities(policy, env) -> None:
    missing = frozenset(getattr(policy, "requires", frozenset())) - frozenset(env.offers)
    if missing:
        raise ValueError(f"policy {policy.name!r} requires {sorted(missing)}, which environment "
                         f"{env.name!r} does not offer (it offers {sorted(env.offers)})")


def _clip(x: np.ndarray, t: int, strict: bool, what: str, source: str, shape: tuple | None = None) -> np.ndarray:
    """``x`` clipped to [0, 1] (or checked, when ``strict``): one round's (R,) values, or the (n, R)
    values of planned rounds t .. t + n - 1 (an error names the round of the first bad value and
    ``source``, the environment that returned it). Only environments whose rewards are not in
    [0, 1] by construction come here (envs.base.unit_rewards): a user's. Their values must be real
    numbers of ``shape`` (when given) and never NaN -- np.clip lets NaN through, and the policy's
    own check then blamed the caller ("clip them first, or run the policy through simulate")."""
    if type(x) is not np.ndarray or x.dtype.kind != "f" or (shape is not None and x.shape != shape):
        x = real_values(x, t, what, source, shape)
    if strict:
        bad = (x < 0) | (x > 1) | np.isnan(x)
        if bad.any():
            where = t + int(np.argwhere(bad)[0][0]) if x.ndim == 2 else t
            raise ValueError(f"{what} {float(x[bad][0])!r} in round {where} lies outside [0, 1] (strict_rewards=True; "
                             f"returned by {source})")
        return x
    # NaN and +-inf are refused, not clipped: np.clip lets NaN through (the policy's own check is off:
    # rewards_checked) and made inf a reward of 1 -- a value no reward source means, refused as
    # non-finite by the deployment's check_reward and by RewardTable / RewardTape. Two reductions: the
    # extremes are finite when every value is (NaN fails both comparisons)
    if x.size and not -math.inf < x.min() <= x.max() < math.inf:
        bad = ~np.isfinite(x)
        where = t + int(np.argwhere(bad)[0][0]) if x.ndim == 2 else t
        raise ValueError(f"{source} returned {what} {float(x[bad][0])!r} in round {where}; rewards must be finite "
                         "real numbers (values outside [0, 1] are clipped, NaN and infinities cannot be)")
    return np.clip(x, 0.0, 1.0)


def _read_only_arms(method, source: str, replicates: int, n_arms: int):
    """``method(t, arms)`` called with a read-only view of ``arms``: for environments that are not the
    library's (envs.base.unit_rewards). An environment writing into the arms it was given changed,
    silently, the arms the policy's update then received and the regret was computed from; numpy now
    refuses the write, and the error names the environment. Arms of a non-integer array are refused
    here too: the library's environments index with them (numpy names a float index), a user's may
    not, and the engine's int16 store truncated 0.7 to arm 0."""
    def call(t, arms):
        if type(arms) is np.ndarray and arms.dtype.kind not in "iu":
            raise _arms_error(arms, replicates, n_arms, t)
        view = arms.view() if type(arms) is np.ndarray else arms
        if view is not arms:
            view.flags.writeable = False
        try:
            return method(t, view)
        except ValueError as exc:
            if view is not arms and "read-only" in str(exc):
                raise ValueError(f"{source} wrote into the arms it was given in round {t}: an environment must not "
                                 "modify its inputs (the policy's update and the regret read those arms)") from None
            raise
    return call


def _frozen(env: Environment) -> tuple[Environment, bool]:
    """The environment a run draws from: for the library's own classes, a copy of ``env`` as it is at
    the run's start. Their promise of rewards in [0, 1] (``rewards_in_unit_interval``, which skips
    the engine's clipping) is judged from their attributes once, at the start (envs.base.unit_rewards);
    code running during the run -- a user's policy, a graph model or another thread holding ``env`` --
    that then set ``env.table[:] = 7``, ``rates[0] = -5`` or ``noise = nan`` fed those rewards to the
    private policies unclipped (their sensitivities assume [0, 1]). The copy costs one pass over the
    environment's arrays per run (the promise's own check reads them all anyway). A user's environment
    is used as it is: its rewards are clipped or checked every round whatever it does.

    Returns ``(environment, trusted)``. A library environment holding something a user attached that
    cannot be copied (a lock, a database connection: ``copy.deepcopy`` raised TypeError, a traceback
    from ``simulate`` in session 11's first version) runs from ``env`` itself with ``trusted`` False:
    nothing about it is then taken on trust -- its rewards are clipped or checked and its reveals
    counted every round, as a user's environment's are."""
    if not library_code(env, ("start",)):
        return env, True  # (its rewards are judged by unit_rewards: a user's class is never trusted)
    try:
        return copy.deepcopy(env), True
    except Exception:  # whatever a user's attribute raises when copied: run live, trust nothing
        return env, False


def _overrides(run, name: str, base=EnvironmentRun) -> bool:
    return getattr(type(run), name) is not getattr(base, name)


def _unchecked(run, name: str):
    """``run.<name>`` without the reward check ``PolicyRun`` wraps around it (policies.base), when
    the engine has set ``rewards_checked`` (the wrapper would skip the check anyway: one call less
    per round). A method set on the instance itself is used as it is."""
    method = getattr(run, name)
    if not run.rewards_checked or name in getattr(run, "__dict__", {}):
        return method
    wrapper = getattr(type(run), name)
    raw = getattr(wrapper, "__wrapped__", None) if getattr(wrapper, "validates_rewards", False) else None
    return method if raw is None else raw.__get__(run)


_NOT_SELECTED = object()  # no round's arms yet (a select that returns None is diagnosed, not this)


def _arms_error(arms, replicates: int, n_arms: int, t: int) -> ValueError | None:
    """A ValueError naming what is wrong with the arms a policy run returned for round ``t``, or None
    when they are an integer array of shape (replicates,) in [0, n_arms)."""
    # (a tuple is not an array of arms to numpy: means[(0, 1, 0)] indexes three dimensions)
    a = np.asarray(arms) if isinstance(arms, (np.ndarray, list)) else None
    if a is None or a.shape != (replicates,) or a.dtype.kind not in "iu":
        got = f"{type(arms).__name__}" if a is None else f"{a.dtype} {a.shape}"
        return ValueError(f"a policy run's select must return an integer array of shape ({replicates},) of arms "
                          f"in [0, {n_arms - 1}], got {got} in round {t}")
    bad = (a < 0) | (a >= n_arms)
    if bad.any():
        return ValueError(f"a policy run's select must return arms in [0, {n_arms - 1}], got arm "
                          f"{shown(int(a[bad][0]))} in round {t}")
    return None


def _check_arms_block(arms: np.ndarray, n_arms: int, first: int) -> None:
    """ValueError naming the first round of rounds ``first`` .. whose stored arm lies outside
    [0, n_arms): a negative arm indexes an environment's arrays from the end (numpy), so it can pass
    a round silently; it is caught here, once per block of rounds, before any result is formed."""
    if arms.size and (arms.min() < 0 or arms.max() >= n_arms):
        row = int(np.argwhere((arms < 0) | (arms >= n_arms))[0][0])
        raise _arms_error(arms[row], arms.shape[1], n_arms, first + row)


def _checked_plan(arms, replicates: int, limit: int) -> np.ndarray:
    """A run's ``plan`` answer (not None), or ValueError: an integer array (n, replicates), 1 <= n <= limit.

    Only the form can be checked here; the commitment (that ``select`` would have returned these
    arms whatever the rewards) cannot -- see policies.base.
    """
    arms = np.asarray(arms)
    if arms.ndim != 2 or arms.shape[1] != replicates or not 1 <= arms.shape[0] <= limit or arms.dtype.kind not in "iu":
        raise ValueError(f"a policy run's plan must return None or an integer array of shape (n, {replicates}) "
                         f"with n in [1, {limit}], got {arms.dtype} {arms.shape}")
    return arms


class _RegretAccumulator:
    """Cumulative pseudo-regret per replicate and its per-round mean and 95% band, block by block.

    Each block holds the instantaneous regret of up to ``block`` rounds (filled from the arms played
    by ``env.best - env.expected``, vectorised, or row by row from ``env_run.regret``); the first
    row gets the carried cumulative regret added and the block is cumsum'd in place. Row by row this
    is the same sequential float accumulation as one cumsum over the whole (T, R) array, and each
    row's mean / std are the same reductions, so the results are bit-identical to it.

    On an instance whose regret depends on the arm only (:meth:`Environment.constant_regrets`: the
    stationary ones) :func:`~privbandit._engine_kernels.engine_regret_rounds` does all of it in one
    compiled pass over the block's arms -- the same additions in the same order, and numpy's own
    pairwise reductions for the mean and band (bit-identical; no (block, R) array; measured per round
    10.6 -> 2.9 us at 1000 replicates, 1.8 -> 0.2 us at 100). Where that kernel would run interpreted
    (one replicate, or no numba) the numpy path runs: a Python loop per cell is slower.
    """

    def __init__(self, env, horizon: int, replicates: int, block: int) -> None:
        self.env, self.replicates = env, replicates
        self.block = block
        self.carry = np.zeros(replicates)
        self.mean = np.empty(horizon)
        self.half = np.zeros(horizon)
        self.pulls = np.zeros(replicates * env.n_arms, dtype=np.int64)
        self._cells = np.arange(replicates, dtype=np.int64) * env.n_arms
        kernel = _engine_kernels.engine_regret_rounds
        regrets = env.constant_regrets()
        self._kernel = None if regrets is None or kernel.at(replicates) is kernel.py_func else kernel
        if self._kernel is not None:
            self._regrets = np.ascontiguousarray(regrets, dtype=float)
            self._scratch = _engine_kernels.scratch(replicates)
            self._root = math.sqrt(replicates)

    def flush(self, first: int, arms: np.ndarray, increments: np.ndarray | None) -> None:
        """Rounds ``first`` .. ``first + len(arms) - 1``: ``arms`` (n, R); ``increments`` (n, R) or None
        (computed here from the environment's expected rewards). Arms outside [0, K) are refused
        first (:func:`_check_arms_block`): the compiled kernel below would index out of bounds."""
        n = arms.shape[0]
        _check_arms_block(arms, self.env.n_arms, first)
        if increments is None and self._kernel is not None:
            if self._kernel.at(self.replicates)(self._regrets, arms, self.carry, self.pulls, self.mean, self.half,
                                                first - 1, _Z95, self._root, *self._scratch) == 0:
                return
        if increments is None:
            rounds = np.arange(first, first + n)
            increments = self.env.best(rounds)[:, None] - self.env.expected(rounds[:, None], arms)
            increments = np.asarray(increments, dtype=float)
        increments[0] += self.carry
        np.cumsum(increments, axis=0, out=increments)
        self.carry = increments[-1].copy()
        sl = slice(first - 1, first - 1 + n)
        self.mean[sl] = increments.mean(axis=1)
        if self.replicates > 1:
            self.half[sl] = _Z95 * increments.std(axis=1, ddof=1) / math.sqrt(self.replicates)
        self.pulls += np.bincount((arms + self._cells).ravel(), minlength=self.pulls.size)


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
    Rounded up like the ledger's per-record closed forms (``REALIZED_ROUND_UP``, session 13): the two
    columns were rounded by 1e-12 and 1e-13, so a record spending exactly the schedule read ~9e-13
    relative above its certificate (276 of 400 readings of the registered policies).
    """
    from privbandit.ledger import CLOSED_FORM_ACCOUNTANTS, REALIZED_ROUND_UP

    out = np.full(checkpoints.size, np.nan)
    names = {factory.name for factory in CLOSED_FORM_ACCOUNTANTS} | {"none"}
    if all(by[i].split(" ", 1)[0] in names for i in np.flatnonzero(queried)):
        out[queried] = certified[queried]
    else:
        out[queried] = schedule.live_certificates(checkpoints[queried], delta, CLOSED_FORM_ACCOUNTANTS)[0]
    return out * (1.0 + REALIZED_ROUND_UP)


def simulate(policy: Policy, env: Environment, horizon: int, replicates: int = 100, seed=None, *,
             delta: float = 1e-6, checkpoints: Sequence[int] | None = None, ledger: bool | str = True,
             strict_rewards: bool = False, keep_arms: bool = False, progress: bool | None = None,
             max_tracked_bytes: int = 256 * 2**20, realized_points: int = 8,
             ledger_replicates: int | None = 8, relation: str = "entry") -> SimulationResult:
    """Run ``policy`` on ``env`` for ``horizon`` rounds in ``replicates`` lock-stepped replicates.

    Args:
        seed: anything ``numpy.random.SeedSequence`` accepts, or a SeedSequence (e.g. a spawned child).
        delta: the delta at which certified and realized epsilons are reported.
        checkpoints: rounds at which privacy is evaluated (default: a geometric grid + the horizon).
        ledger: True to record every noise draw in a per-record ledger, ``"tight"`` to also keep the
            full release list (audits), False to skip it (the certificate does not depend on it).
        strict_rewards: reject rewards outside [0, 1] instead of clipping them.
        keep_arms: keep the (horizon, replicates) array of arms played in the result (otherwise the
            run's memory is O(horizon + replicates x arms)).
        progress: show a progress bar (default: only when stderr is a terminal and tqdm is installed).
        realized_points: how many checkpoints (a geometric subset, always with the horizon) query the
            ledger's realized spend; the others hold NaN. Each query scans every tracked record.
        ledger_replicates: how many replicates (the first ones) keep per-record tracking in the
            ledger (None: as many as ``max_tracked_bytes`` allows). Recording costs time in
            proportion to the tracked streams; the others report NaN realized spend.
        relation: the neighbouring relation certified and realized, "entry" or "round"
            (``privbandit.feedback.RELATIONS``; the same for K-armed bandit feedback).
    """
    # the validated values from here on (session 16): int(horizon) of the caller's object called an int
    # subclass's own __int__, which may lie (validated 12 rounds, ran 10**400)
    horizon, replicates, delta = _validate(policy, env, horizon, replicates, delta)
    check_run_options(horizon, checkpoints=checkpoints, ledger=ledger, strict_rewards=strict_rewards, keep_arms=keep_arms, progress=progress, realized_points=realized_points, max_tracked_bytes=max_tracked_bytes, ledger_replicates=ledger_replicates)
    check_relation(relation)
    _check_capabilities(policy, env)
    env, trusted = _frozen(env)  # (before its structure is read: the schedule and the run see one environment)
    horizon, replicates = int(horizon), int(replicates)
    seed_seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(check_seed("seed", seed))
    policy_seq, env_seq = seed_seq.spawn(2)
    policy_rng, env_rng = np.random.default_rng(policy_seq), np.random.default_rng(env_seq)

    checkpoints = default_checkpoints(horizon) if checkpoints is None else np.unique(np.asarray(checkpoints, dtype=np.int64))
    if checkpoints.size and (checkpoints[0] < 1 or checkpoints[-1] > horizon):
        raise ValueError(f"checkpoints must lie in [1, {horizon}]")
    checkpoints = np.union1d(checkpoints, [horizon])

    n_arms = env.n_arms
    # The schedule first: a policy without a schedule for this structure fails before the run.
    structure = env.structure()
    schedule = schedule_for(policy, horizon, n_arms, structure, relation)
    book = None
    if ledger and policy.private and getattr(policy, "records_releases", True):
        from privbandit.ledger import Ledger

        book = Ledger(replicates, n_arms, tight=(ledger == "tight"), max_tracked_bytes=max_tracked_bytes,
                      track_replicates=ledger_replicates, capacity=horizon)
    run = policy.start(n_arms, replicates, horizon, policy_rng, ledger=book)
    env_run = env.start(replicates, env_rng)

    arms_dtype = np.int16 if n_arms < 2**15 else np.int32
    block = horizon if keep_arms else max(1, min(horizon, _BLOCK_CELLS // replicates))
    arms_played = np.empty((block, replicates), dtype=arms_dtype)
    kept = arms_played if keep_arms else None
    per_round_regret = _overrides(env_run, "regret")
    increments = np.empty((block, replicates)) if per_round_regret else None
    acc = _RegretAccumulator(env, horizon, replicates, block)
    realized = np.full((checkpoints.size, replicates), np.nan) if book is not None else None
    queried = np.isin(checkpoints, _realized_points(checkpoints, max(1, operator.index(realized_points))))
    query = set(checkpoints[queried].tolist())
    next_cp, cp_rounds = 0, checkpoints.tolist() + [0]  # Python ints: a cheap per-round comparison
    bar = _progress(horizon, progress)
    started = time.perf_counter()
    must_check = not (trusted and unit_rewards(env, env_run))
    # The original contract (rewards, update) unless the environment offers or observes more.
    plain = not (_overrides(env_run, "offer") or _overrides(env_run, "feedback"))
    with_offer = bool(getattr(policy, "requires", None))
    # The "round" certificate composes over max_degree + 1 streams: an environment that does not reveal
    # within its declared degree by construction has every round's reveals counted (O(R K)).
    reveal_cap = None if (trusted and env_run.reveals_within_structure) or "max_degree" not in (structure or {}) \
        else int(structure["max_degree"]) + 1
    row, first = 0, 1
    # The rewards fed below are in [0, 1] (guaranteed by the library's environment, or clipped / checked
    # by _clip, which also refuses NaN): the run's own check (policies.base.check_rewards) would be
    # double work.
    run.rewards_checked = True
    source = f"environment {env.name!r}"
    # Planned rounds (policies.base, ``plan``): on the plain contract, when regret needs no per-round
    # call, a run that commits to the arms of rounds ahead gets them as one block -- rewards drawn
    # with env_run.rewards_block (the same variates in the same order), one update_block. A block
    # ends at the next checkpoint (the ledger is queried after the same rounds), at the end of the
    # regret block and at the progress bar's next step.
    planning = plain and not per_round_regret and _overrides(run, "plan", PolicyRun)
    # bound once: the per-round loop below is the engine's fixed cost per round
    select, update = run.select, _unchecked(run, "update")
    regret = env_run.regret if per_round_regret else None
    rewards_of, rewards_block_of, feedback_of = env_run.rewards, env_run.rewards_block, env_run.feedback
    if must_check:  # not the library's environment: it gets read-only arms
        guard = [source, replicates, n_arms]
        rewards_of, rewards_block_of, feedback_of = (_read_only_arms(f, *guard) for f in (rewards_of, rewards_block_of, feedback_of))
        regret = None if regret is None else _read_only_arms(regret, *guard)
    t = 1
    arms, planned = _NOT_SELECTED, None
    try:  # (free unless raised) a policy's bad arms surface in numpy's indexing: named below
        while t <= horizon:
            # A stretch of rounds ends at the next checkpoint, the regret block's end or the progress
            # bar's next step (a multiple of 1000): its bookkeeping happens once, after its last round.
            end = min(cp_rounds[next_cp], t + block - row - 1, t + 999 - (t - 1) % 1000)
            planned = run.plan(t, end - t + 1) if planning else None
            if planned is not None:
                arms = _checked_plan(planned, replicates, end - t + 1)
                n = arms.shape[0]
                rewards = rewards_block_of(t, arms)
                if must_check:
                    rewards = _clip(rewards, t, strict_rewards, "reward", source, arms.shape)
                arms_played[row:row + n] = arms  # (stored before the update: see the round-by-round path)
                run.update_block(t, arms, rewards)
                row += n
                t += n - 1  # the stretch's last round
            else:  # no commitment: round by round to the stretch's end (a run that declined is asked again then)
                if plain:
                    for t in range(t, end + 1):
                        arms = select(t)
                        rewards = rewards_of(t, arms)
                        if must_check:
                            rewards = _clip(rewards, t, strict_rewards, "reward", source, (replicates,))
                        # the arms and the regret are taken before the update: a user's policy that writes
                        # into the arms or rewards it is given changed, silently, the pulls and regret
                        # reported (arms[:] = 0 made UCB1's 20 / 280 pulls read 300 / 0; a OneMemoryAdversary
                        # regret is formed from the rewards array the update received)
                        arms_played[row] = arms
                        if regret is not None:
                            increments[row] = regret(t, arms)
                        update(t, arms, rewards)
                        row += 1
                else:
                    for t in range(t, end + 1):
                        offer = env_run.offer(t)
                        arms = run.select(t, offer) if (with_offer and offer is not None) else select(t)
                        fb = feedback_of(t, arms)
                        rewards, values = fb.rewards, fb.values
                        arms_played[row] = arms  # (before the update, as above)
                        if regret is not None:
                            increments[row] = regret(t, arms)
                        if must_check:
                            rewards = _clip(rewards, t, strict_rewards, "reward", source, (replicates,))
                            if values is not None:
                                values = _clip(values, t, strict_rewards, "side-observation value", source)
                        if fb.observed is None:
                            update(t, fb.arms, rewards)
                        else:
                            if reveal_cap is not None and fb.observed.sum(axis=1).max() > reveal_cap:
                                raise ValueError(f"environment {env.name!r} revealed {int(fb.observed.sum(axis=1).max())} "
                                                 f"entries in round {t}, more than the max_degree + 1 = {reveal_cap} its "
                                                 "structure() declares (the certificate composes over that many streams)")
                            run.observe(t, Feedback(fb.arms, rewards, fb.observed, values))
                        row += 1
            if row == block:
                acc.flush(first, arms_played, increments)
                first += row
                row = 0
            if t == cp_rounds[next_cp]:
                if book is not None and t in query:
                    realized[next_cp] = book.realized_epsilon(delta, relation) if relation != "entry" \
                        else book.realized_epsilon(delta)
                next_cp += 1
            if bar is not None and t % 1000 == 0:
                bar.update(1000)
            t += 1
    except (IndexError, TypeError, ValueError) as exc:
        # (a planned block's form was checked by _checked_plan, its range is checked when stored)
        error = None if arms is _NOT_SELECTED or planned is not None else _arms_error(arms, replicates, n_arms, t)
        if error is None:
            raise
        raise error from exc
    if row:
        acc.flush(first, arms_played[:row], None if increments is None else increments[:row])
    seconds = time.perf_counter() - started
    if bar is not None:
        bar.close()

    mean, half = acc.mean, acc.half
    pulls = acc.pulls.reshape(replicates, n_arms)

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
        final_regret=acc.carry.copy(), pulls=pulls, checkpoints=checkpoints,
        certified_epsilon=certified, certified_by=by, realized_epsilon=realized,
        certified_closed_form=closed_form,
        claimed_epsilon=policy.claimed_epsilon(horizon, n_arms, delta),
        arms=kept, seconds=seconds, relation=relation,
    )
