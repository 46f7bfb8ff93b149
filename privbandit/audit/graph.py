"""The white-box audit of the graph-feedback private policies (coupled runs with side observations).

The K-armed white-box audit (:mod:`privbandit.audit.whitebox`) drives ``select(t)`` without an offer,
so a graph-feedback policy (``requires = {"graph"}``: Lazy-DP-TS-N, DP-UCB-N, Gaussian-TS-N;
docs/policies_graph.md) plays on the edgeless graph there and its side-observation path -- a round's
record entering the stream of *every* observed arm -- is never exercised. Here every round offers a
fixed feedback graph (:func:`audit_graph`: the path 0 - 1 - ... - K-1 with closed neighbourhoods; the
complete graph for K = 2), and the played arm's neighbourhood is revealed through ``observe``.

**Tapes and neighbours.** The tape is indexed by rounds: replicate r's round t reveals ``rew[r, t, j]``
for every observed arm j (the K-armed audit's mixed kinds: uniform, Bernoulli, constant per arm,
constant 1/2). Each replicate changes one round h (early for a quarter of them, log-uniform up to 3T/4
for the others), moving values to the far end of [0, 1]:

* even replicates: one entry (h, j) -- the entry relation (DESIGN.md "Beyond K-armed stochastic
  feedback"); j = (r / 2) mod K, so it is the played arm's entry in some replicates and a side
  observation in others;
* odd replicates, when the policy certifies the round relation: the whole reward vector of round h.

**Checks.** Those of the K-armed audit (:func:`privbandit.audit.whitebox._coupled_checks`: decisions,
unreported, sensitivity, noise_report, noise_coupling, redraw, noise law), with the footprint checks
made per stream (:func:`privbandit.audit.whitebox._footprint_records`): a change enters the stream of
every arm observed in round h, at the position the policy tagged for that stream's record of round h
(``note_rounds``; session 18) or, untagged, at that arm's observation count before h (or, for the played
arm, its pull count -- a policy may keep only its pulls), and every release whose statistic changed must
be reported on one of those streams with a footprint holding that position. Two checks are new:

* **round_records** -- under the round relation the ledger composes, for round h, the releases that
  touch any record it tagged with round h (``note_rounds``; a record never tagged is its own round).
  Every release that changed with round h's vector must touch such a record (or, if none was tagged,
  all of them must share one record): a record of round h that the ledger files under no round or
  another round makes its realized round-level spend too small.
* **schedule** -- realized <= certified on the run on D under both relations: per record (GDP mu and
  pure epsilon, :class:`~privbandit.audit.whitebox._SpendCheck`) against the entry certificate, and per
  round (the largest per-round sum, over the ledger's per-round multisets, of pure epsilon and of
  GDP mu^2 -- both additive, so this is exact -- against the round certificate in the same currency), at the graph's maximum degree.

All checks but the noise law are exact: a finding is a deterministic witness, reproducible from the seed.
"""

from __future__ import annotations

import math
import time

import numpy as np

from accountants import GDPAccountant, PureAccountant
from privbandit.audit.ledger_audit import _exceeds, _pure_certified
from privbandit.audit.raised import Clock, policy_code
from privbandit.audit.seed_dependence import run_generator
from privbandit.audit.tracing import ReleaseTracer
from privbandit.audit.whitebox import (Finding, WhiteBoxResult, _coupled_checks, _mixed_tapes, _SpendCheck, attempt,
                                       check_audit_arguments, raised_result)
from privbandit.feedback import Feedback, Offer
from privbandit.ledger import Ledger
from privbandit.policies.base import Policy, schedule_for


def is_graph_policy(policy: Policy) -> bool:
    """True for a policy that learns from a feedback graph's side observations (``requires`` holds "graph")."""
    return "graph" in frozenset(getattr(policy, "requires", frozenset()))


def audit_graph(n_arms: int) -> np.ndarray:
    """The audit's feedback graph: the path 0 - 1 - ... - K-1, closed neighbourhoods (the complete
    graph for K = 2). Ends reveal two arms, inner arms three: neighbourhoods of different sizes."""
    g = np.eye(n_arms, dtype=bool)
    i = np.arange(n_arms - 1)
    g[i, i + 1] = g[i + 1, i] = True
    return g


SHAPES = ("path", "star", "redrawn")
"""The feedback graphs of :func:`graph_sequence`: the closed path (complete for K = 2), a star (arm 0 the hub
of degree K - 1), and a graph redrawn every round (round 11)."""


def star_graph(n_arms: int) -> np.ndarray:
    """Arm 0 joined to every other arm (closed neighbourhoods): the hub reveals every entry, a leaf two."""
    g = np.eye(n_arms, dtype=bool)
    g[0, :] = g[:, 0] = True
    return g


def circulant_graph(n_arms: int) -> np.ndarray:
    """Arm i joined to i +- 1 and i + K // 2 (mod K), closed: degree 3 for even K >= 4 (4 for odd K >= 5),
    every arm a hub of degree >= 3; the complete graph for K <= 3."""
    g = np.eye(n_arms, dtype=bool)
    i = np.arange(n_arms)
    for off in (1, n_arms // 2):
        if off:
            g[i, (i + off) % n_arms] = g[(i + off) % n_arms, i] = True
    return g


def graph_sequence(shape: str, n_arms: int, horizon: int, seed=0):
    """(graph, structure) for :func:`_run`: a fixed adjacency, or for ``"redrawn"`` a callable t -> adjacency
    drawing, every round, a fresh random relabelling of :func:`circulant_graph` (a graph redrawn every round
    with the same number of edges and degrees: hubs of degree >= 3 everywhere, neighbourhoods that change
    each round). The relabellings are drawn from ``seed`` before the runs, so both coupled runs see the same
    graphs. ``structure``: the max degree the schedule is certified at."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    if shape == "path":
        graph = audit_graph(n_arms)
        return graph, structure_of(graph)
    if shape == "star":
        graph = star_graph(n_arms)
        return graph, structure_of(graph)
    base = circulant_graph(n_arms)
    rng = np.random.default_rng(seed)
    perms = np.stack([rng.permutation(n_arms) for _ in range(horizon)])
    graphs = np.ascontiguousarray(base[perms[:, :, None], perms[:, None, :]])  # (T, K, K), each a relabelling
    return (lambda t, gs=graphs: gs[t - 1]), structure_of(base)


def structure_of(graph: np.ndarray) -> dict:
    """The environment structure the policy's schedule takes (``GraphFeedback.structure()``)."""
    return {"max_degree": int(graph.sum(axis=1).max()) - 1}


def certifies_round(policy: Policy, horizon: int, n_arms: int, structure: dict) -> bool:
    try:
        schedule_for(policy, horizon, n_arms, structure, "round")
        return True
    except ValueError:
        return False


def graph_tapes(n_arms: int, horizon: int, replicates: int, rng: np.random.Generator, round_changes: bool):
    """(rew, rew', h, j): tapes (R, T, K), the changed round h (R,) in [1, T] and the changed arm j (R,),
    -1 where the whole round changes (odd replicates, with ``round_changes``). Module docstring."""
    R, T, K = replicates, horizon, n_arms
    rew = np.ascontiguousarray(np.transpose(_mixed_tapes(K, T, R, rng), (0, 2, 1)))
    early = 1 + rng.integers(0, min(T, 2 * K + 6), R)
    top = max(2.0, 0.75 * T)
    late = np.exp(np.log(top) * rng.random(R)).astype(np.int64)
    h = np.clip(np.where((np.arange(R) // 2) % 4 == 0, early, late), 1, T)
    rows = np.arange(R)
    j = np.where((rows % 2 == 1) & round_changes, -1, (rows // 2) % K)
    rew_p = rew.copy()
    far = np.where(rew[rows, h - 1] < 0.5, 1.0, 0.0)  # (R, K)
    whole = j < 0
    rew_p[rows[whole], h[whole] - 1] = far[whole]
    one = rows[~whole]
    rew_p[one, h[one] - 1, j[one]] = far[one, j[one]]
    return rew, rew_p, h, j


def _run(policy: Policy, graph, rew: np.ndarray, seed, replay=None, on_round=None):
    """One traced run: round t offers ``graph`` (a (K, K) adjacency, or a callable t -> adjacency for a
    graph that changes with the round) and reveals ``rew[:, t - 1, j]`` for every arm j in the played
    arm's closed neighbourhood (``observe``). Returns (actions (R, T), observed (R, T, K), tracer,
    ledger)."""
    R, T, K = rew.shape
    ledger = Ledger(R, K, tight=True, capacity=max(1, T))
    rows = np.arange(R)
    graph_at = graph if callable(graph) else (lambda t, g=graph: g)
    observed = np.zeros((R, T, K), dtype=bool)
    clock = Clock()
    with policy_code(clock), ReleaseTracer(ledger, replay) as tracer:  # the policy's exceptions: observations
        clock.tracer = tracer
        run = policy.start(K, R, T, run_generator(seed), ledger=ledger)
        actions = np.empty((R, T), dtype=np.int64)
        tracer.marks = np.zeros(T + 2, dtype=np.int64)
        for t in range(1, T + 1):
            clock.t = t
            graph = graph_at(t)
            arms = np.asarray(run.select(t, Offer(graph=graph))).astype(np.int64)
            obs = graph[arms]
            tracer.marks[t] = len(tracer.reports)
            run.observe(t, Feedback(arms, rew[rows, t - 1, arms], obs, np.where(obs, rew[:, t - 1], 0.0)))
            actions[:, t - 1] = arms
            observed[:, t - 1] = obs
            if on_round is not None:
                on_round(t, ledger)
    return actions, observed, tracer, ledger


class _GraphSpend:
    """Check 8 under both relations on the run on D (module docstring)."""

    def __init__(self, policy: Policy, horizon: int, n_arms: int, structure: dict, round_relation: bool,
                 delta: float = 1e-6) -> None:
        self.entry = _SpendCheck(policy, horizon, n_arms, structure, "entry")
        self.rows = self.entry.rows
        self.round = schedule_for(policy, horizon, n_arms, structure, "round") if round_relation else None
        # the per-round multisets cost a pass over every release: at a quarter, half and all of the run
        self.round_checks = sorted({max(1, horizon // 4), max(1, horizon // 2), horizon})
        self.delta = delta
        self._findings: list[Finding] = []

    def __call__(self, t: int, ledger: Ledger) -> None:
        self.entry(t, ledger)
        if self.round is None or t not in self.round_checks or self._findings:
            return
        # pure epsilon and GDP mu^2 add up over a multiset, so the worst round of a replicate is the
        # largest per-round sum of its leaves' values (the ledger's per-round multisets) -- exact, and
        # between them every Laplace and Gaussian schedule
        for name, value, cert in (("pure epsilon", _leaf_pure, _pure_certified(self.round, t)),
                                  ("GDP mu", _leaf_mu2, float(self.round.mu(t)))):
            if not math.isfinite(cert):
                continue
            realized = np.zeros(ledger.replicates)
            for r in range(ledger.replicates):
                leaves, counts = ledger.record_multisets(r, "round")
                if counts.shape[0]:
                    realized[r] = float((counts @ np.array([value(x) for x in leaves])).max())
            if name == "GDP mu":
                realized = np.sqrt(realized)
            over = _exceeds(realized, cert)
            if over.any():
                r = int(np.flatnonzero(over)[0])
                self._findings.append(Finding("schedule", (
                    f"{int(over.sum())} replicates spent more than the round-relation certificate by round {t}: e.g. "
                    f"replicate {r}'s worst round has {name} {realized[r]:.6g} > certified {cert:.6g} (tight ledger "
                    f"of the run on D, rounds as the policy tagged them)")))
                return

    def findings(self) -> list[Finding]:
        out = self.entry.findings() + list(self._findings)
        if self.round is not None:  # the round certificate's eps at delta (check 11) as well
            from privbandit.audit.certificate import certificate_message, certificate_shortfall

            rounds = sorted({max(1, self.round_checks[-1] // 4), self.round_checks[-1]})
            short = certificate_shortfall(self.round, rounds)
            if short is not None:
                out.append(Finding("certificate", certificate_message(short, "round")))
            from privbandit.audit.certificate import certificate_unreproduced, unreproduced_message

            unrepro = certificate_unreproduced(self.round, rounds)
            if unrepro is not None:
                out.append(Finding("certificate", unreproduced_message(unrepro, "round")))
        return out


def _leaf_pure(leaf) -> float:
    acc = PureAccountant()
    return float(acc.compose(leaf).epsilon(0.5)) if acc.supports(leaf) else math.inf


def _leaf_mu2(leaf) -> float:
    acc = GDPAccountant()
    return float(acc.compose(leaf).sum_mu_squared) if acc.supports(leaf) else math.inf


def _records(observed: np.ndarray, actions: np.ndarray, h: np.ndarray, j: np.ndarray, ledger: Ledger | None = None
             ) -> list[dict]:
    """Per replicate, {stream: candidate positions} of the records its change entered on D: every
    arm observed in round h (only arm j for an entry change). Session 18: where the policy tagged that
    stream's record of round h (``note_rounds``, read from ``ledger``), the tagged position is the
    candidate -- the numbering the ledger composes by, whatever rule of public counts decided which side
    observations became records (round 19's control ``dp_ucb_n_side_thinned_by_counts`` keeps a side
    observation only for arms observed fewer times than the played arm: its streams are numbered by kept
    observations). Otherwise the position is inferred: the arm's observation count before h, and for the
    played arm also its pull count (a policy may keep only its pulls in a stream)."""
    tags: dict = {}
    if ledger is not None:
        rep, st, pos, t = ledger.noted_rounds()
        mine = t == h[rep] if rep.size else np.zeros(0, dtype=bool)
        for r, s, x in zip(rep[mine].tolist(), st[mine].tolist(), pos[mine].tolist()):
            tags.setdefault((r, s), set()).add(x)
    out = []
    for r in range(observed.shape[0]):
        seen = observed[r, h[r] - 1]
        arms = np.flatnonzero(seen) if j[r] < 0 else ([j[r]] if seen[j[r]] else [])
        rec = {}
        for a in arms:
            cands = tags.get((r, int(a)))
            if cands is None:
                cands = {int(observed[r, : h[r] - 1, a].sum())}
                if actions[r, h[r] - 1] == a:
                    cands.add(int(np.count_nonzero(actions[r, : h[r] - 1] == a)))
            rec[int(a)] = cands
        out.append(rec)
    return out


def _round_records(rel_d: dict, changed: np.ndarray, ledger: Ledger, h: np.ndarray, j: np.ndarray,
                   diverged: np.ndarray) -> Finding | None:
    """The round_records check (module docstring) on the replicates whose whole round h changed."""
    rep, st, pos, t = ledger.noted_rounds()
    bad = []
    for r in np.unique(rel_d["rep"][changed]):
        if j[r] >= 0 or diverged[r]:
            continue
        sel = changed[rel_d["rep"][changed] == r]
        mine = (rep == r) & (t == h[r])
        tagged = {}
        for s, x in zip(st[mine], pos[mine]):
            tagged.setdefault(int(s), []).append(int(x))
        ok = True
        if tagged:
            for i in sel:
                xs = np.asarray(tagged.get(int(rel_d["st"][i]), []))
                if not np.any((xs >= rel_d["lo"][i]) & (xs < rel_d["hi"][i])):
                    ok = False
                    break
        else:  # nothing tagged: the ledger treats the round as one record, so the releases must share one
            ok = np.unique(rel_d["st"][sel]).size == 1 and rel_d["lo"][sel].max() < rel_d["hi"][sel].min()
        if not ok:
            bad.append((int(r), tagged))
    if not bad:
        return None
    r, tagged = bad[0]
    shown = ", ".join(f"stream {s} #{sorted(x)}" for s, x in sorted(tagged.items())) or "none"
    return Finding("round_records", (
        f"{len(bad)} replicates: a release that changed with round {h[r]}'s reward vector touches no record the "
        f"ledger files under round {h[r]} (replicate {r}; records tagged with that round: {shown}): the round "
        f"relation's realized spend leaves it out"))


STARVE_ROUNDS = 2
"""The starving run's complete-graph prefix: the changed round is one of these (module docstring)."""


def starving_tapes(n_arms: int, horizon: int, replicates: int, rng: np.random.Generator, round_changes: bool):
    """The starving run's tapes: replicate r's arm r mod K pays 1 every round, the others 0 (the policy
    settles on one arm and the others' streams stay short); the changed round h is in [1, STARVE_ROUNDS]
    (every arm observed), one entry (even replicates) or the whole vector (odd, with ``round_changes``)."""
    R, T, K = replicates, horizon, n_arms
    rows = np.arange(R)
    rew = np.zeros((R, T, K))
    rew[rows, :, rows % K] = 1.0
    h = 1 + rng.integers(0, min(T, STARVE_ROUNDS), R)
    j = np.where((rows % 2 == 1) & round_changes, -1, (rows // 2) % K)
    rew_p = rew.copy()
    whole = j < 0
    rew_p[rows[whole], h[whole] - 1] = 1.0 - rew[rows[whole], h[whole] - 1]
    one = rows[~whole]
    rew_p[one, h[one] - 1, j[one]] = 1.0 - rew[one, h[one] - 1, j[one]]
    return rew, rew_p, h, j


def graph_whitebox_audit(policy: Policy, horizon: int, n_arms: int = 2, replicates: int = 128, *, seed: int = 0,
                         alpha: float = 1e-4, law: bool = True, max_findings: int = 5,
                         starve: bool = False, shape: str = "path", seed_runs: int = 0) -> WhiteBoxResult:
    """Coupled-run white-box audit of a graph-feedback policy with side observations (module docstring).

    ``starve=True``: the worst transcript for a round's record instead -- the complete graph for the first
    ``STARVE_ROUNDS`` rounds (a changed round there enters every arm's stream), the edgeless graph after
    (a stream then grows only when its own arm is played), on tapes where one arm pays 1 and the others
    0 (:func:`starving_tapes`), so the record's other streams stay short and each of their releases
    costs what the per-stream schedule's worst case charges: a round certificate that forgets to
    compose over the streams (certified at max degree K - 1 here) is exceeded. The noise law is not
    tested on this run (its groups would repeat the main run's).

    ``shape`` (round 11, :func:`graph_sequence`): the feedback graph of the ordinary run -- "path" (the
    default), "star" (a hub of degree K - 1) or "redrawn" (a degree->=3 graph relabelled every round).
    Hub rounds and changing neighbourhoods reach code that the path never runs (a buffer of side
    observations, a cached neighbourhood); every check is the same.

    ``seed_runs`` (session 15): check 5e (:mod:`privbandit.audit.seed_dependence`) on this graph -- two more runs
    of that many replicates on D's first tapes with two children of the run's seed, their noise compared draw by
    draw (0: not run; the command's feedback-graph run uses 16). The K-armed run on the edgeless graph runs it
    too, but a noise path taken only for side observations is not taken there."""
    horizon, n_arms, replicates = check_audit_arguments(
        policy, (("horizon", horizon, 2), ("n_arms", n_arms, 2), ("replicates", replicates, 4)), alpha)
    if not is_graph_policy(policy):
        raise ValueError(f"{policy!r} does not learn from a feedback graph: use privbandit.audit.whitebox_audit")
    started = time.perf_counter()
    graph, structure = graph_sequence(shape, n_arms, horizon, np.random.SeedSequence(seed).spawn(3)[2])
    if starve:
        complete, edgeless = np.ones((n_arms, n_arms), dtype=bool), np.eye(n_arms, dtype=bool)
        graph = lambda t: complete if t <= STARVE_ROUNDS else edgeless  # noqa: E731 (one shared object each)
        structure = {"max_degree": n_arms - 1}
        law = False
    round_relation = certifies_round(policy, horizon, n_arms, structure)
    tape_seq, run_seq = np.random.SeedSequence(seed).spawn(2)
    tapes = starving_tapes if starve else graph_tapes
    rew, rew_p, h, j = tapes(n_arms, horizon, replicates, np.random.default_rng(tape_seq), round_relation)
    spend = _GraphSpend(policy, horizon, n_arms, structure, round_relation)
    out_d, exc_d = attempt(_run, policy, graph, rew, run_seq, on_round=spend)
    tr_d = out_d[2] if out_d is not None else exc_d.tracer
    out_p, exc_p = attempt(_run, policy, graph, rew_p, run_seq, replay=tr_d.draws if tr_d is not None else None)
    if exc_d is not None or exc_p is not None:  # an exception is an output (privbandit/audit/raised.py)
        return raised_result(policy, horizon, n_arms, replicates, seed, alpha, exc_d, exc_p,
                             [f"feedback graph: {shape if not starve else 'starving'} on {n_arms} arms"], started, spend)
    act_d, obs_d, tr_d, led_d = out_d
    act_p, _, tr_p, _ = out_p
    records = _records(obs_d, act_d, h, j, led_d)
    rows = np.arange(replicates)
    arm = np.where(j >= 0, j, act_d[rows, h - 1])
    pull = np.array([int(obs_d[r, : h[r] - 1, arm[r]].sum()) for r in rows], dtype=np.int64)

    def describe(r: int) -> str:
        what = f"entry ({h[r]}, arm {j[r]})" if j[r] >= 0 else f"round {h[r]}'s whole reward vector"
        return f"{what} changed; played arm {act_d[r, h[r] - 1]}"

    label = (f"complete for rounds <= {STARVE_ROUNDS}, edgeless after (starving run)" if starve
             else ("complete" if n_arms == 2 and shape == "path" else
                   {"path": "path", "star": "star (hub: arm 0)", "redrawn": "redrawn every round"}[shape]))
    notes = [f"feedback graph: {label} on {n_arms} arms (max degree "
             f"{structure['max_degree']}); side observations through observe(); neighbours: one entry (even "
             f"replicates)" + ("; one round's whole vector (odd replicates)" if round_relation else "")]
    findings, groups, n_rel = _coupled_checks(policy, act_d, act_p, tr_d, tr_p, arm, pull, n_arms, alpha, law, spend,
                                              notes, describe=describe, records=records)
    if seed_runs:  # check 5e with side observations (session 15; privbandit/audit/seed_dependence.py)
        from privbandit.audit.seed_dependence import seed_check

        n = min(int(seed_runs), replicates)
        seeded = seed_check(lambda s: _run(policy, graph, rew[:n], s)[2].draws, run_seq, notes)
        if seeded is not None:
            findings.append(seeded)
    if round_relation and n_rel:
        rel_d, rel_p = tr_d.released(), tr_p.released()
        diverged = np.any(act_d != act_p, axis=1)
        changed = _changed_releases(rel_d, rel_p)
        finding = _round_records(rel_d, changed, led_d, h, j, diverged)
        if finding is not None:
            findings.append(finding)
    if not n_rel:
        notes.append("no traced release was paired with a ledger report: nothing to check")
    return WhiteBoxResult(repr(policy), horizon, n_arms, replicates, seed if isinstance(seed, int) else 0, alpha,
                          n_rel, findings[:max_findings] if max_findings else findings, groups, notes,
                          time.perf_counter() - started, spend.rows)


def _changed_releases(rel_d: dict, rel_p: dict) -> np.ndarray:
    """Indices into ``rel_d`` of releases whose statistic differs from its counterpart on D' (matched by
    the same key as the coupled checks)."""
    from privbandit.audit.whitebox import CHANGE_TOL, _keyed, _row_inverse

    ids: dict = {}
    kd, kp = _keyed(rel_d, ids), _keyed(rel_p, ids)
    both = np.concatenate([kd, kp])
    if not both.size:
        return np.zeros(0, dtype=np.int64)
    inv = _row_inverse(both)
    inv_d, inv_p = inv[: kd.shape[0]], inv[kd.shape[0]:]
    pos_p = np.full(inv.max() + 1, -1)
    pos_p[inv_p] = np.arange(kp.shape[0])
    mate = pos_p[inv_d]
    di = np.flatnonzero(mate >= 0)
    moved = np.abs(rel_d["stat"][di] - rel_p["stat"][mate[di]]) > CHANGE_TOL
    return di[moved]


__all__ = ["SHAPES", "STARVE_ROUNDS", "audit_graph", "circulant_graph", "graph_sequence", "graph_tapes",
           "graph_whitebox_audit", "is_graph_policy", "star_graph", "starving_tapes"]
