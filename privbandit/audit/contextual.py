"""The white-box audit of the linear contextual policies (coupled runs on a contextual tape).

The K-armed white-box audit (:mod:`privbandit.audit.whitebox`) drives ``select(t)`` on reward tapes
indexed by pulls. A contextual policy (``requires = {"contexts"}``: private LinUCB / linear TS,
Mishra & Thakurta 2015; joint-DP LinUCB, Shariff & Sheffet 2018) needs the round's contexts in every
``select``, and its record is one round's (context, reward) of the played arm. Here the tape is
indexed by rounds: replicate r sees contexts ``ctx[r, t]`` (K, d) in round t and the played arm's
reward ``rew[r, t, a]``, whatever it played -- a fixed database of users, one per round.

**Neighbours, as the policy certifies them** (read from its schedule, :func:`audit_relation`). Each
replicate changes one user, round h:

* ``relation="entry"`` (the certificate of private LinUCB / linear TS, and of a disjoint joint-DP
  model): the contexts stay (public); the round's rewards move to the far end of [0, 1] (1 where
  D has < 1/2, else 0), every arm's, so the played arm's revealed entry changes whatever it is.
* ``relation="round"`` (joint-DP LinUCB's shared model): the user's contexts change too -- on even
  replicates each arm's context is replaced by one of the same norm orthogonal to it (the largest
  change of ``x x^T`` for ``x = [z; r]``), on odd ones only the rewards change. Joint DP (Shariff &
  Sheffet, Def. 3) lets the changed user's *own* action differ; every other round's action must
  still be a post-processing of the releases, and that is what the ``decisions`` check asks.

Contexts are adversarial for the sensitivities (kind r mod 4, each of norm exactly the declared
bound L -- or, for a policy that clips (``contexts="clip"``), 1.5 L and 16 L to 2^16 L on every other group of four
replicates, so that the projection onto the ball is exercised; one group in four has norms uniform in
[L/10, L], so that a scale that follows the data's norm shows): dense (every coordinate L / sqrt d: the largest L1 norm, the worst case of the Laplace
tree's ``b`` entries), one-hot (a random coordinate), uniform on the sphere, and intercept-style
(``[1, u] L / sqrt 2``, :class:`privbandit.contextual.LinearContextual`'s form). Rewards: the
K-armed audit's mixed kinds (uniform, Bernoulli, constant per arm, constant 1/2), indexed by round.

The runs on D and D' use the same seed; every node of the policy's vector tree is traced with its
exact node sum, rebuilt by the tracer from the records the tree was handed
(:func:`privbandit.audit.tracing._vector_insert_wrapper`), and D' replays D's released nodes. The
checks are those of the K-armed audit (:func:`privbandit.audit.whitebox._coupled_checks`): decisions,
unreported, sensitivity (a node's whole vector: L1 for Laplace, L2 for Gaussian), footprint and
footprint_position (the changed record is in the tree stream its round's record entered -- the
played arm's for a disjoint model, stream 0 for a shared one -- at the position counted from the
rounds before it), redraw, noise_report, noise_coupling, schedule and the noise law.
"""

from __future__ import annotations

import math
import time

import numpy as np

from accountants._validate import shown
from privbandit.audit.raised import Clock, policy_code
from privbandit.audit.whitebox import (Finding, WhiteBoxResult, _coupled_checks, _mixed_tapes, _SpendCheck, attempt,
                                       check_audit_arguments, raised_result)
from privbandit.audit.seed_dependence import run_generator
from privbandit.audit.tracing import ReleaseTracer
from privbandit.feedback import Offer
from privbandit.ledger import Ledger
from privbandit.policies.base import Policy, schedule_for

STRUCTURE = {"contexts": True}
"""The environment structure of a contextual run (``ContextualEnvironment.structure()``)."""


def is_contextual(policy: Policy) -> bool:
    """True for a policy that needs contexts in every ``select`` (``requires`` holds "contexts")."""
    return "contexts" in frozenset(getattr(policy, "requires", frozenset()))


def audit_relation(policy: Policy, horizon: int, n_arms: int) -> str:
    """The widest neighbouring relation the policy certifies: "round" (a user's contexts and rewards)
    when its schedule accepts it, else "entry" (rewards only, contexts public)."""
    try:
        schedule_for(policy, horizon, n_arms, STRUCTURE, "round")
        return "round"
    except ValueError:
        schedule_for(policy, horizon, n_arms, STRUCTURE, "entry")  # no certificate at all: raises
        return "entry"


FAR_CONTEXTS = 40
"""Session 12: the far-contexts run (``far=True``) stretches every replicate's contexts log-uniformly per
round over [16 L, 2^FAR_CONTEXTS L] (round 12's groups stop at 2^16 L)."""


def _contexts(replicates: int, horizon: int, n_arms: int, dim: int, bound: float,
              rng: np.random.Generator, clip: bool = False, far: bool = False) -> np.ndarray:
    """Contexts (R, T, K, d) of norm exactly ``bound``, kind r mod 4: dense, one-hot, sphere, intercept,
    except replicates with floor(r / 4) = 2 mod 4, whose norms are uniform in [bound / 10, bound] (round 11);
    ``clip``: those with floor(r / 4) = 1 mod 4 of norm 1.5 ``bound``, 3 mod 4 of norm log-uniform in
    [16, 2^16] ``bound`` per round (round 12; 16 ``bound`` in round 11) -- the policy clips them."""
    R, T, K, d = replicates, horizon, n_arms, dim
    kind = np.arange(R) % 4
    z = np.empty((R, T, K, d))
    sign = rng.choice([-1.0, 1.0], size=(R, T, K, d))
    z[kind == 0] = (np.abs(sign) / math.sqrt(d))[kind == 0]  # dense, non-negative: the largest L1 norm
    hot = np.zeros((R, T, K, d))
    np.put_along_axis(hot, rng.integers(0, d, (R, T, K, 1)), 1.0, axis=3)
    z[kind == 1] = hot[kind == 1]
    g = rng.standard_normal((R, T, K, d))
    z[kind == 2] = (g / np.linalg.norm(g, axis=3, keepdims=True))[kind == 2]
    if d >= 2:
        u = rng.standard_normal((R, T, K, d - 1))
        u /= np.linalg.norm(u, axis=3, keepdims=True)
        icpt = np.concatenate([np.ones((R, T, K, 1)), u], axis=3) / math.sqrt(2.0)
    else:
        icpt = np.ones((R, T, K, 1))
    z[kind == 3] = icpt[kind == 3]
    if far and clip:
        # session 12: every replicate's unit contexts (the four kinds) stretched by one factor per round, log-uniform
        # in [16, 2^40] -- a clip that misbehaves only past 2^17 L is reached. Unit contexts and one factor for every
        # arm, so that the dense kind's identical contexts stay identical to the last bit (see round 12's note below
        # on ties). An unclipped policy's Gram matrix overflows or goes singular there and the policy raises: an
        # observation (privbandit/audit/raised.py), which is why this is a run of its own -- the ordinary run's
        # witnesses at <= 2^16 L stand whatever happens here
        return z * (16.0 * np.exp2(rng.uniform(0.0, FAR_CONTEXTS - 4.0, size=(R, T, 1, 1)))) * bound
    group = (np.arange(R) // 4) % 4
    # round 11: one group of four in four has shorter contexts, norm uniform in [L / 10, L] per round and arm:
    # a noise scale or a sensitivity that follows the context's norm (legitimate only if it never goes below
    # the declared L's) shows only where norms vary
    z[group == 2] *= rng.uniform(0.1, 1.0, size=(int(np.count_nonzero(group == 2)), T, K, 1))
    if clip:
        # every other group of four: norm 1.5 L, and (round 11) 16 L on one of them, which the policy projects
        # onto the ball (contexts="clip") before any statistic sees it -- the clipping path is audited too, and
        # an unclipped context of 16 L exceeds even the sensitivity declared for the round relation
        z[group % 2 == 1] *= 1.5
        z[group == 3] *= 16.0 / 1.5
        # round 12: those of 16 L stretched log-uniformly per round over [16 L, 2^16 L], so that a clip that
        # misbehaves only past some norm (a "units" guard above 64 L) is reached at any threshold up to 2^16 L
        # (far beyond, an unclipped context overflows the Gram matrix: a crash, not a witness). One factor for
        # every arm of a round: per arm, the dense kind's identical contexts (exact ties of the index) would be
        # clipped by different factors and tie only up to rounding, and the coupled runs' replay (whose sums
        # differ in the last bits) would then break the ties differently -- a float artefact, not a leak
        z[group == 3] *= np.exp2(rng.uniform(0.0, 12.0, size=(int(np.count_nonzero(group == 3)), T, 1, 1)))
        return z * bound
    # a policy that rejects longer contexts: a hair inside the ball (a norm of L can round above L)
    return z * (bound * (1.0 - 1e-9))


def _orthogonal(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per row of z (..., d), a vector of the same norm orthogonal to it (d >= 2; -z when d = 1)."""
    d = z.shape[-1]
    norm = np.linalg.norm(z, axis=-1, keepdims=True)
    if d == 1:
        return -z
    g = rng.standard_normal(z.shape)
    unit = z / np.where(norm > 0, norm, 1.0)
    g -= np.sum(g * unit, axis=-1, keepdims=True) * unit
    return g / np.linalg.norm(g, axis=-1, keepdims=True) * norm


def _boundary_contexts(replicates: int, horizon: int, n_arms: int, dim: int, bound: float,
                       rng: np.random.Generator, clip: bool) -> np.ndarray:
    """Session 14: contexts (R, T, K, d) at the edges the four ordinary kinds never produce, kind r mod 4:
    one-hot on the *last* coordinate with a random sign (norm exactly ``bound``: no rounding); dense with
    random signs (every coordinate +-L / sqrt d); tiny norms, log-uniform in [2^-60, 1] L (a scale or a clip
    that divides by the norm); and on the *edge of the ball*: for a policy that clips, norms L (1 + 2^-u),
    u uniform in [1, 52] (a clip with a tolerance, or one that tests >= for >, leaves them unprojected), for
    one that rejects, one-hot contexts of norm exactly L on a random coordinate (the largest it must accept).
    Every arm of a round shares its context's kind; each arm draws its own direction."""
    R, T, K, d = replicates, horizon, n_arms, dim
    kind = np.arange(R) % 4
    sign = rng.choice([-1.0, 1.0], size=(R, T, K, d))
    z = np.zeros((R, T, K, d))
    z[kind == 0, ..., d - 1] = sign[kind == 0, ..., d - 1]
    z[kind == 1] = sign[kind == 1] / math.sqrt(d)
    g = rng.standard_normal((R, T, K, d))
    g /= np.linalg.norm(g, axis=3, keepdims=True)
    tiny = np.exp2(-rng.uniform(0.0, 60.0, size=(R, T, K, 1)))
    z[kind == 2] = (g * tiny)[kind == 2]
    if clip:
        z[kind == 3] = (g * (1.0 + np.exp2(-rng.uniform(1.0, 52.0, size=(R, T, K, 1)))))[kind == 3]
    else:
        hot = np.zeros((R, T, K, d))
        np.put_along_axis(hot, rng.integers(0, d, (R, T, K, 1)), 1.0, axis=3)
        z[kind == 3] = (hot * sign)[kind == 3]
    z *= bound
    if not clip:  # the dense and sphere kinds may round above L: pulled a hair inside the ball
        norms = np.linalg.norm(z, axis=3, keepdims=True)
        z = np.where(norms > bound, z * (bound * (1.0 - 1e-12) / np.where(norms > 0, norms, 1.0)), z)
    return z


def contextual_tapes(n_arms: int, dim: int, bound: float, horizon: int, replicates: int, relation: str,
                     rng: np.random.Generator, rounds: np.ndarray | None = None, clip: bool = False,
                     far: bool = False, boundary: bool = False):
    """R neighbouring contextual tapes: (ctx, ctx', rew, rew', h) with contexts (R, T, K, d), rewards
    (R, T, K) and the changed round h (R,) in [1, T] (module docstring). ``rounds``: the changed rounds
    (default: log-uniform over [1, 3T/4], so early and late records of every stream are changed).
    ``clip``: half the replicates' contexts are 1.5 times too long, for a policy that clips them; ``far``
    (with ``clip``): every context of norm in [16 L, 2^40 L] (:data:`FAR_CONTEXTS`); ``boundary`` (session 14):
    the edge contexts of :func:`_boundary_contexts` instead."""
    R, T = replicates, horizon
    ctx = (_boundary_contexts(R, T, n_arms, dim, bound, rng, clip) if boundary
           else _contexts(R, T, n_arms, dim, bound, rng, clip, far))
    rew = np.ascontiguousarray(np.transpose(_mixed_tapes(n_arms, T, R, rng), (0, 2, 1)))
    if rounds is None:
        top = max(2.0, 0.75 * T)
        rounds = np.exp(np.log(top) * rng.random(R)).astype(np.int64)
    ctx_p, rew_p, h = _neighbours(ctx, rew, rounds, relation, rng)
    return ctx, ctx_p, rew, rew_p, h


def _neighbours(ctx: np.ndarray, rew: np.ndarray, rounds, relation: str, rng: np.random.Generator):
    """(ctx', rew', h): each replicate's user of round h = ``rounds`` changed as the relation allows (module
    docstring): every arm's reward of that round moved to the far end of [0, 1]; for ``relation="round"``,
    on even replicates, each arm's context replaced by one of the same norm orthogonal to it."""
    R, T = rew.shape[:2]
    h = np.clip(np.asarray(rounds, dtype=np.int64), 1, T)
    rows = np.arange(R)
    ctx_p, rew_p = ctx.copy(), rew.copy()
    rew_p[rows, h - 1] = np.where(rew[rows, h - 1] < 0.5, 1.0, 0.0)
    if relation == "round":
        even = rows[rows % 2 == 0]
        ctx_p[even, h[even] - 1] = _orthogonal(ctx[even, h[even] - 1], rng)
    return ctx_p, rew_p, h


def _target_rounds(act_d: np.ndarray, targets: tuple[np.ndarray, np.ndarray], shared: bool) -> np.ndarray:
    """The round (1-based) whose record is each replicate's target (``contextual_whitebox_audit``'s
    ``targets``), read off the run on D's actions (R, T)."""
    R, T = act_d.shape
    streams, positions = (np.asarray(x, dtype=np.int64) for x in targets)
    h = np.full(R, T, dtype=np.int64)
    for r in range(R):
        if streams[r] < 0:
            continue  # the run's last round
        rounds = np.arange(1, T + 1) if shared else np.flatnonzero(act_d[r] == streams[r]) + 1
        if rounds.size:
            h[r] = rounds[min(int(positions[r]), rounds.size - 1) if positions[r] >= 0
                          else max(0, rounds.size + int(positions[r]))]
    return h


def _run(policy: Policy, ctx: np.ndarray, rew: np.ndarray, seed, replay=None, on_round=None):
    """One traced run on a contextual tape: round t offers ``ctx[:, t - 1]`` and pays the played arm's
    ``rew[:, t - 1, arm]``. Returns (actions (R, T), tracer) as :func:`privbandit.audit.whitebox._run`."""
    R, T, K, _ = ctx.shape
    ledger = Ledger(R, K, tight=True, capacity=max(1, T))
    rows = np.arange(R)
    clock = Clock()
    with policy_code(clock), ReleaseTracer(ledger, replay) as tracer:  # the policy's exceptions: observations
        clock.tracer = tracer
        run = policy.start(K, R, T, run_generator(seed), ledger=ledger)
        actions = np.empty((R, T), dtype=np.int64)
        tracer.marks = np.zeros(T + 2, dtype=np.int64)
        for t in range(1, T + 1):
            clock.t = t
            arms = np.asarray(run.select(t, Offer(contexts=ctx[:, t - 1]))).astype(np.int64)
            tracer.marks[t] = len(tracer.reports)
            run.update(t, arms, rew[rows, t - 1, arms])
            actions[:, t - 1] = arms
            if on_round is not None:
                on_round(t, ledger)
    return actions, tracer


def contextual_whitebox_audit(policy: Policy, horizon: int, n_arms: int = 2, replicates: int = 256, *, seed: int = 0,
                              alpha: float = 1e-4, law: bool = True, relation: str | None = None,
                              rounds: np.ndarray | None = None, max_findings: int = 5,
                              far: bool = False, boundary: bool = False,
                              targets: tuple[np.ndarray, np.ndarray] | None = None,
                              seed_runs: int = 0) -> WhiteBoxResult:
    """Coupled-run white-box audit of a contextual policy (module docstring). ``relation``: the
    neighbours to audit (default :func:`audit_relation`, the widest the policy certifies; a relation it
    does not certify is refused). ``law=False`` keeps the exact checks only (the long, thin run).
    ``rounds``: the changed round of each replicate (default log-uniform). ``far`` (session 12; a policy
    that clips its contexts only): every context's norm log-uniform in [16 L, 2^40 L] per round.
    ``boundary`` (session 14): the edge contexts of :func:`_boundary_contexts` (last coordinate, signs, tiny
    norms, the ball's edge). ``targets`` (session 14) = (streams, positions), one pair per replicate: the changed
    record is placed by the run on D, like the K-armed sweep's (its tapes do not depend on where the change
    will be): the record #position of that stream (a negative position counts from the stream's end: -1 its
    last record), or, for stream -1, the record of the run's last round; a shared model's records are all in
    stream 0, so only the position counts. A stream too short for its position gives its last record.
    ``seed_runs`` (session 15): check 5e (:mod:`privbandit.audit.seed_dependence`) -- two more runs of that many
    replicates on D's first tapes with two children of the run's seed, their noise compared draw by draw
    (0: not run; the command's main contextual run uses 16)."""
    horizon, n_arms, replicates = check_audit_arguments(
        policy, (("horizon", horizon, 2), ("n_arms", n_arms, 2), ("replicates", replicates, 4)), alpha)
    if not is_contextual(policy):
        raise ValueError(f"{policy!r} does not take contexts: use privbandit.audit.whitebox_audit")
    widest = audit_relation(policy, horizon, n_arms)
    if relation is None:
        relation = widest
    elif relation not in ("entry", "round"):
        raise ValueError(f"relation must be 'entry' or 'round', got {shown(relation)}")
    elif relation == "round" and widest != "round":
        raise ValueError(f"relation='round': {policy!r} certifies entry-level neighbours only (contexts public)")
    dim = getattr(policy, "dim", None)
    if not isinstance(dim, int):
        raise ValueError(f"{policy!r} declares no context dimension (dim): the audit cannot build its contexts")
    clips = getattr(policy, "contexts", "reject") == "clip"
    if far and not clips:
        raise ValueError(f"far=True needs a policy that clips its contexts (contexts='clip'); {policy!r} rejects "
                         "contexts longer than its bound")
    started = time.perf_counter()
    tape_seq, run_seq = np.random.SeedSequence(seed).spawn(2)
    tape_rng = np.random.default_rng(tape_seq)
    if targets is not None:
        rounds = np.ones(replicates, dtype=np.int64)  # placed after the run on D (below)
        if len(targets[0]) != replicates or len(targets[1]) != replicates:
            raise ValueError(f"targets must hold one (stream, position) per replicate ({replicates}), got "
                             f"{len(targets[0])} and {len(targets[1])}")
    ctx, ctx_p, rew, rew_p, h = contextual_tapes(n_arms, dim, float(policy.bound), horizon, replicates, relation,
                                                 tape_rng, rounds, clip=clips, far=far, boundary=boundary)
    spend = _SpendCheck(policy, horizon, n_arms, STRUCTURE, relation)
    out_d, exc_d = attempt(_run, policy, ctx, rew, run_seq, on_round=spend)
    tr_d = out_d[1] if out_d is not None else exc_d.tracer
    if targets is not None and out_d is not None:
        shared = getattr(policy, "model", "disjoint") == "shared"
        h = _target_rounds(out_d[0], targets, shared)
        ctx_p, rew_p, h = _neighbours(ctx, rew, h, relation, tape_rng)
    out_p, exc_p = attempt(_run, policy, ctx_p, rew_p, run_seq, replay=tr_d.draws if tr_d is not None else None)
    if exc_d is not None or exc_p is not None:  # an exception is an output (privbandit/audit/raised.py)
        return raised_result(policy, horizon, n_arms, replicates, seed, alpha, exc_d, exc_p,
                             [f"contextual tape: relation {relation!r}" + (", contexts up to 2^40 L" if far else "")],
                             started, spend, own_rounds=h if relation == "round" else ())
    (act_d, tr_d), (act_p, tr_p) = out_d, out_p
    rows = np.arange(replicates)
    # the stream each round's record entered (the played arm's tree for a disjoint model, stream 0 of
    # a shared one), the changed record's stream and its index among that stream's records
    shared = getattr(policy, "model", "disjoint") == "shared"
    streams_d = np.zeros_like(act_d) if shared else act_d
    arm = streams_d[rows, h - 1]
    pull = np.array([int(np.count_nonzero(streams_d[r, :h[r] - 1] == arm[r])) for r in rows], dtype=np.int64)
    context_changed = np.any(ctx != ctx_p, axis=(1, 2, 3))

    def describe(r: int) -> str:
        what = "contexts and rewards" if context_changed[r] else "rewards"
        return f"round {h[r]}'s {what} changed; its record is #{pull[r]} of stream {arm[r]}"

    change = ("the changed user's own action may differ" if relation == "round"
              else "contexts public, one round's rewards changed")
    model = "shared model: every record in stream 0" if shared else "disjoint model: a record in the played arm's stream"
    notes = [f"contextual tape: relation {relation!r} ({change}); {model}",
             "tree_output: every vector tree's released sums checked against its traced node releases after "
             "every insert (exact)"]
    findings, groups, n_rel = _coupled_checks(
        policy, act_d, act_p, tr_d, tr_p, arm, pull, n_arms, alpha, law, spend, notes,
        own_round=h if relation == "round" else None, streams_d=streams_d, describe=describe)
    if seed_runs:
        from privbandit.audit.seed_dependence import seed_check

        n = min(int(seed_runs), replicates)
        seeded = seed_check(lambda s: _run(policy, ctx[:n], rew[:n], s)[1].draws, run_seq, notes)
        if seeded is not None:
            findings.append(seeded)
    if not n_rel:
        notes.append("no traced release was paired with a ledger report: nothing to check")
    return WhiteBoxResult(repr(policy), horizon, n_arms, replicates, seed if isinstance(seed, int) else 0, alpha,
                          n_rel, findings[:max_findings] if max_findings else findings, groups, notes,
                          time.perf_counter() - started, spend.rows)


__all__ = ["Finding", "audit_relation", "contextual_tapes", "contextual_whitebox_audit", "is_contextual"]
