"""Catch table: ``privbandit audit NAME --tier ci`` on the planted bugs and on every unmodified private
policy (the false-alarm controls). Prints the markdown tables of docs/audit.md.

    python bench/audit_planted.py                 # bugs and controls, seed 0
    python bench/audit_planted.py --only bugs --seeds 0 1
    python bench/audit_planted.py --only controls --exact   # controls in exact (grid) mode too
    python bench/audit_planted.py --only round14 --json r14.json   # round 14: its controls, bugs, deployment rows
    python bench/audit_planted.py --only round15 --json r15.json   # round 15 likewise
    python bench/audit_planted.py --only round16 --json r16.json   # round 16 likewise
    python bench/audit_planted.py --only round17 --json r17.json   # round 17 likewise
    python bench/audit_planted.py --only round18 --json r18.json   # round 18 likewise
    python bench/audit_planted.py --only round19 --json r19.json   # round 19 likewise
    python bench/audit_planted.py --only round20 --json r20.json   # round 20 likewise (continuous-reward deployments)

Each row is one full CLI run (ledger audits, the coupled white-box audit, the black-box audits), in
process, with the bug class registered under ``bug_<kind>``. "caught by" lists every check that
refuted the claim; "white-box runs" is 2 coupled runs x replicates x horizon rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the worktree's package

from audit_planted_bugs import (AIMED, BUGS, CONTROLS10, CONTROLS11, DEPLOY_BUGS, DEPLOY_CONTROLS, ROUND4,  # noqa: E402
                                ROUND5, ROUND6, ROUND7, ROUND8, ROUND9, ROUND10, ROUND11, drive_deployment)
from audit_planted_round12 import (CONTROLS12, DEPLOY_BUGS12, DEPLOY_CONTROLS12, ROUND12_BUGS,  # noqa: E402
                                   drive_deployment12)
from audit_planted_round13 import CONTROLS13, ROUND13_BUGS  # noqa: E402
from audit_planted_round14 import CONTROLS14, DEPLOY_BUGS14, DEPLOY_CONTROLS14, ROUND14_BUGS  # noqa: E402
from audit_planted_round15 import CONTROLS15, DEPLOY_BUGS15, DEPLOY_CONTROLS15, ROUND15_BUGS  # noqa: E402
from audit_planted_round16 import CONTROLS16, DEPLOY_BUGS16, DEPLOY_CONTROLS16, ROUND16_BUGS  # noqa: E402
from audit_planted_round17 import (CONTROLS17, DEPLOY_BUGS17, DEPLOY_CONTROLS17, ROUND17_BUGS,  # noqa: E402
                                   drive_deployment17)
from audit_planted_round18 import CONTROLS18, DEPLOY_BUGS18, DEPLOY_CONTROLS18, ROUND18_BUGS  # noqa: E402
from audit_planted_round19 import CONTROLS19, DEPLOY_BUGS19, DEPLOY_CONTROLS19, ROUND19_BUGS  # noqa: E402
from audit_planted_round20 import (CONTROLS20, DEPLOY_BUGS20, DEPLOY_CONTROLS20, ROUND20_BUGS,  # noqa: E402
                                   drive_deployment20)

BUGS = {**BUGS, **ROUND12_BUGS, **ROUND13_BUGS, **ROUND14_BUGS, **ROUND15_BUGS, **ROUND16_BUGS, **ROUND17_BUGS, **ROUND18_BUGS,
        **ROUND19_BUGS, **ROUND20_BUGS}
ROUNDS_ALONE = {"round14": (CONTROLS14, ROUND14_BUGS, DEPLOY_BUGS14, DEPLOY_CONTROLS14),
                "round15": (CONTROLS15, ROUND15_BUGS, DEPLOY_BUGS15, DEPLOY_CONTROLS15),
                "round16": (CONTROLS16, ROUND16_BUGS, DEPLOY_BUGS16, DEPLOY_CONTROLS16),
                "round17": (CONTROLS17, ROUND17_BUGS, DEPLOY_BUGS17, DEPLOY_CONTROLS17),
                "round18": (CONTROLS18, ROUND18_BUGS, DEPLOY_BUGS18, DEPLOY_CONTROLS18),
                "round19": (CONTROLS19, ROUND19_BUGS, DEPLOY_BUGS19, DEPLOY_CONTROLS19),
                "round20": (CONTROLS20, ROUND20_BUGS, DEPLOY_BUGS20, DEPLOY_CONTROLS20)}
"""``--only roundN``: that round's controls, bugs, deployment bugs and deployment controls."""

import functools  # noqa: E402

import numpy as np  # noqa: E402

from privbandit.audit.cli import add_parser  # noqa: E402

try:  # the long white-box run's horizon rule (trees older than round 4 lack it: the same numbers)
    from privbandit.audit.cli import WB_LONG  # noqa: E402
except ImportError:
    WB_LONG = dict(factor=10, minimum=2_000, cap=20_000)
try:  # round 11's more-arms and late runs (older trees lack them: the guard then drives what they drive)
    from privbandit.audit.cli import WB_LATE, WB_MANY_ARMS  # noqa: E402
except ImportError:
    WB_LATE, WB_MANY_ARMS = dict(factor=1, cap=0), 2
try:  # round 12's far ledger run and graph shape size (older trees: none, 6 arms)
    from privbandit.audit.cli import FAR, GRAPH  # noqa: E402
except ImportError:
    FAR, GRAPH = None, dict(shape_arms=6)
try:  # session 13's 33-arm coupled run (older trees: none)
    from privbandit.audit.cli import WB_WIDE  # noqa: E402
except ImportError:
    WB_WIDE = None
try:  # the contextual audit's sizes (session 12: its far-contexts run)
    from privbandit.audit.cli import CONTEXTUAL  # noqa: E402
except ImportError:
    CONTEXTUAL = {}
from privbandit.audit.whitebox import _run, neighbour_tapes, probe_horizon  # noqa: E402
from privbandit.audit.discover import default_constructible, private_policies  # noqa: E402
from privbandit.policies import REGISTRY  # noqa: E402
from privbandit.cli_checks import whole


def cli(argv: list[str]) -> tuple[int, dict, float]:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command", required=True))
    with tempfile.TemporaryDirectory() as out:
        args = parser.parse_args(["audit", *argv, "--out", out])
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = args.func(args)
        seconds = time.perf_counter() - started
        with open(os.path.join(out, "summary.json")) as fh:
            summary = json.load(fh)
    return rc, summary, seconds


def _contextual(policy) -> bool:
    return "contexts" in frozenset(getattr(policy, "requires", frozenset()))


def _graph(policy) -> bool:
    return "graph" in frozenset(getattr(policy, "requires", frozenset()))


def _claims_differ(bug, clean, horizon: int = 200) -> bool:
    """The certificate differs from the clean twin's (a claim-only bug): its events, its mu or its eps at
    delta = 1e-5 or 1e-9, for K = 2 and 6 arms; a graph policy's under either relation (max degree 1 and 3)."""
    from privbandit.policies.base import schedule_for

    def cert(policy, k, structure, rel):
        sch = schedule_for(policy, horizon, k, structure, rel)
        # round 13: the live certificate a run reports too (check `certificate` compares it)
        live = tuple(np.asarray(sch.live_certificates(np.array([horizon // 4, horizon]), 1e-5)[0]).tolist())
        # round 14: eps at a small delta too (a certificate wrong only below the deltas the audit checks)
        # round 16: eps at the policy's own delta too (a certificate wrong only at the delta it is configured with)
        own = getattr(policy, "delta", None)
        own = sch.epsilon(horizon, own).value if isinstance(own, float) and 0.0 < own < 1.0 else None
        return (sch.events(horizon), sch.mu(horizon), sch.epsilon(horizon, 1e-5).value, sch.epsilon(horizon, 1e-9).value,
                live, own)

    cases = [(k, None, "entry") for k in (2, 6)]
    if _graph(bug):
        cases = [(k, {"max_degree": d}, rel) for k, d in ((2, 1), (6, 3)) for rel in ("entry", "round")]
    if any(cert(bug, *c) != cert(clean, *c) for c in cases):
        return True
    # round 12: the far ledger run's horizon (a schedule wrong only late); K-armed policies only
    if FAR and not (_graph(bug) or _contextual(bug)):
        far = FAR["horizon"]
        if (schedule_for(bug, far, 2).mu(far), schedule_for(bug, far, 2).events(far)) != \
                (schedule_for(clean, far, 2).mu(far), schedule_for(clean, far, 2).events(far)):
            return True
    try:  # session 12: the far schedule check (the schedule at 2^17 .. 10^12 rounds, no run)
        from privbandit.audit.far_schedule import far_schedule_check
    except ImportError:
        return False
    if _contextual(bug):
        from privbandit.audit.contextual import STRUCTURE as structure
    else:
        structure = {"max_degree": 0} if _graph(bug) else None  # the edgeless graph the audit uses
    return far_schedule_check(bug, 2, structure).findings != far_schedule_check(clean, 2, structure).findings


def behaviour(policy, n_arms: int = 2, replicates: int = 64, seed: int = 0, horizon: int | None = None,
              planned: bool = False, shape: str = "path", far: bool = False) -> dict:
    """What one traced run does on fixed mixed tapes: actions, every traced draw (statistic and
    released value) and every ledger report (stream, footprint, scale, sensitivity). ``planned``: the
    run's planned rounds go through its update_block, as in simulate. A contextual policy runs on a
    fixed contextual tape (privbandit/audit/contextual.py); a graph-feedback policy with side
    observations on the audit's feedback graph (privbandit/audit/graph.py), and its ledger's round
    tags count as reports. ``far`` (session 12): a contextual policy's far contexts (norms to 2^40 L). A run
    that raises returns what it raised (the audit's observation, privbandit/audit/raised.py)."""
    try:
        return _behaviour(policy, n_arms, replicates, seed, horizon, planned, shape, far)
    except Exception as exc:  # noqa: BLE001 -- PolicyRaised (trees before session 12: the exception itself)
        raised = getattr(exc, "raised", None)
        what = (raised.kind, raised.round) if raised is not None else (type(exc).__name__,)
        return {"actions": np.array([hash(what)]), "draws": [], "reports": []}


def _behaviour(policy, n_arms, replicates, seed, horizon, planned, shape, far) -> dict:
    noted = []
    if _graph(policy):
        from privbandit.audit.graph import _run as _run_graph, audit_graph, graph_tapes

        horizon = 200 if horizon is None else horizon
        rew, _, _, _ = graph_tapes(n_arms, horizon, replicates, np.random.default_rng(12345), True)
        try:  # round 11: the audit's other graph shapes (a star, a graph redrawn every round)
            from privbandit.audit.graph import graph_sequence
            # round 15: the edgeless graph (every played arm isolated), which the ledger and black-box audits drive
            graph = np.eye(n_arms, dtype=bool) if shape == "edgeless" else graph_sequence(shape, n_arms, horizon, 12345)[0]
        except ImportError:
            graph = audit_graph(n_arms)
        actions, _, tracer, ledger = _run_graph(policy, graph, rew, np.random.SeedSequence(seed))
        noted = [a.astype(float) for a in ledger.noted_rounds()]  # the round tags the round relation reads
    elif _contextual(policy):
        from privbandit.audit.contextual import _run as _run_ctx, contextual_tapes

        horizon = 200 if horizon is None else horizon
        extra = {"far": True} if far else {}  # trees before session 12 lack the keyword
        ctx, _, rew, _, _ = contextual_tapes(n_arms, policy.dim, policy.bound, horizon, replicates, "entry",
                                             np.random.default_rng(12345),
                                             clip=getattr(policy, "contexts", "reject") == "clip", **extra)  # as the audit
        actions, tracer = _run_ctx(policy, ctx, rew, np.random.SeedSequence(seed))
    else:
        horizon = probe_horizon(policy, n_arms) if horizon is None else horizon
        tape, _, _, _ = neighbour_tapes(n_arms, horizon, replicates, np.random.default_rng(12345))
        extra = {"planned": True} if planned else {}  # trees older than session 5 lack the keyword
        actions, tracer = _run(policy, tape, horizon, np.random.SeedSequence(seed), **extra)
    draws = [np.concatenate([d.stat for d in tracer.draws] or [np.zeros(0)]),
             np.concatenate([d.out for d in tracer.draws if d.out is not None] or [np.zeros(0)])]
    reports = [np.concatenate([getattr(r, k).astype(float) for r in tracer.reports] or [np.zeros(0)])
               for k in ("rep", "st", "lo", "hi", "param", "sens")] + noted
    return {"actions": actions, "draws": draws, "reports": reports}


def armed(cls) -> str:
    """'' when the planted bug changes behaviour, else why not. The clean twin is the bug's own
    configuration started by its parent's (unmodified) ``start``, so a refactor that routes the
    policy around the patched seam shows up here as a no-op instead of a silently passing row."""
    bug = cls()
    clean = cls()
    clean.start = functools.partial(cls.__mro__[1].start, clean)
    probe = 200 if (_contextual(bug) or _graph(bug)) else probe_horizon(bug, 2)  # the contextual audit's horizon (cli.CONTEXTUAL)
    # the white-box horizon, then the long run's (a bug may wait for late rounds, as the long run does)
    # and round by round, then with planned rounds (a bug may sit on the engine's update_block path only)
    long = min(WB_LONG["cap"], max(WB_LONG["minimum"], WB_LONG["factor"] * probe))
    parent = object.__new__(cls.__mro__[1])  # a claim-only bug: the parent's schedule on the bug's configuration
    parent.__dict__.update(bug.__dict__)
    if _claims_differ(bug, parent):
        return ""
    runs = [(2, probe, 64, False, "path"), (2, long, 8, False, "path"), (2, long, 8, True, "path")]
    # round 11: the audit's more-arms and late runs (K-armed), its star and redrawn graphs (graph policies)
    if _graph(bug):
        shape_arms = GRAPH["shape_arms"]
        runs += [(shape_arms, 200, 16, False, "star"), (shape_arms, 200, 16, False, "redrawn")]
        if "hub_arms" in GRAPH:  # session 12: the star with a hub of degree 32
            runs += [(GRAPH["hub_arms"], 200, 16, False, "star")]
        runs += [(2, 200, 16, False, "edgeless")]  # round 15: isolated played arms (the ledger / black-box graph)
    elif _contextual(bug) and getattr(bug, "contexts", "reject") == "clip" and "far_replicates" in CONTEXTUAL:
        runs += [(2, 200, 16, False, "far")]  # session 12: the far-contexts run (norms to 2^40 L)
    elif not _contextual(bug) and WB_MANY_ARMS > 2:
        late = min(WB_LATE["cap"], WB_LATE["factor"] * long)
        runs += [(WB_MANY_ARMS, probe, 16, False, "path")] + ([(2, late, 4, False, "path")] if late > long else [])
        if WB_WIDE:  # round 16: the 33-arm coupled run (a bug keyed to arm indices 16 .. 32)
            runs += [(WB_WIDE["arms"], probe_horizon(bug, WB_WIDE["arms"]), 8, False, "path")]
    for k, horizon, reps, planned, shape in runs:
        if planned and (_contextual(bug) or _graph(bug)):  # contextual and graph runs do not plan
            continue
        far = shape == "far"
        shape = "path" if far else shape
        a = behaviour(bug, n_arms=k, replicates=reps, horizon=horizon, planned=planned, shape=shape, far=far)
        b = behaviour(clean, n_arms=k, replicates=reps, horizon=horizon, planned=planned, shape=shape, far=far)
        for key in ("actions", "draws", "reports"):
            x, y = a[key], b[key]
            if key == "actions":
                equal = x.shape == y.shape and np.array_equal(x, y)
            else:
                equal = all(u.shape == v.shape and np.array_equal(u, v, equal_nan=True) for u, v in zip(x, y))
            if not equal:
                return ""
    if not (_contextual(bug) or _graph(bug)):
        try:  # round 12: the white-box run repeated without a ledger (check ledger_observer)
            from privbandit.audit.whitebox import _run_unobserved
        except ImportError:
            _run_unobserved = None
        if _run_unobserved is not None:
            tape, _, _, _ = neighbour_tapes(2, probe, 64, np.random.default_rng(12345))
            if not np.array_equal(_run_unobserved(bug, tape, probe, np.random.SeedSequence(0)),
                                  _run_unobserved(clean, tape, probe, np.random.SeedSequence(0))):
                return ""
        # round 13: the far runs' traced residuals (the far noise law: 8 replicates x 2^17 rounds; one replicate
        # x 2^13 rounds on 16 arms), the cheap one first
        if "single" in FAR:
            for horizon, reps, arms in ((FAR["single"], 1, FAR["single_arms"]), (FAR["horizon"], FAR["replicates"], 2)):
                if not _same_residuals(_far_residuals(bug, horizon, reps, arms), _far_residuals(clean, horizon, reps, arms)):
                    return ""
    return ("no-op: actions, draws and ledger reports identical to the clean twin (white-box and long horizons, "
            "planned too, and the audit's extra runs: more arms, late rounds, other graphs, no ledger, the far "
            "schedule, the far runs' residuals)")


def _far_residuals(policy, horizon: int, replicates: int, arms: int) -> list:
    """The residuals (z, stream, lo, hi per mechanism) a far run's FarLawTracer files (privbandit/audit/far_law.py)
    on the starving environment the audit drives (arm 0 pays 1 on 2 arms, the last arm on more)."""
    from privbandit.audit.far_law import FarLawTracer
    from privbandit.audit.ledger_audit import ledger_audit
    from privbandit.envs import Bernoulli

    env = Bernoulli([1.0, 0.0] if arms == 2 else [0.0] * (arms - 1) + [1.0])
    tracer = FarLawTracer()
    with tracer:
        ledger_audit(policy, env, horizon, replicates, seeds=(7,), tight=False)
    return [(key, [np.concatenate([p[i] for p in parts]) for i in range(4)])
            for key, parts in sorted(tracer.residuals.items())]


def _same_residuals(a: list, b: list) -> bool:
    return len(a) == len(b) and all(ka == kb and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(va, vb))
                                    for (ka, va), (kb, vb) in zip(a, b))


def row(name: str, argv: list[str], label: str) -> dict:
    rc, s, seconds = cli(argv)
    wb = s["whitebox"]
    return {"case": label, "policy": name, "verdict": s["verdict"], "exit": rc,
            "caught_by": ", ".join(s["refuted_by"]) or "-",
            "wb_runs": f"2 x {wb['replicates']} x {wb['horizon']}", "seconds": round(seconds, 1),
            "power": s["power"], "reach_seconds": s.get("reach_seconds")}


def _round_of(key: str) -> str:
    """The 'aimed' column: which round planted ``key`` (AIMED: 'yes')."""
    if key in AIMED:
        return "yes"
    for label, keys in (("round 4", ROUND4), ("round 5", ROUND5), ("round 6", ROUND6), ("round 7", ROUND7),
                        ("round 8", ROUND8), ("round 9", ROUND9), ("round 10", ROUND10), ("round 11", ROUND11),
                        ("round 12", ROUND12_BUGS), ("round 13", ROUND13_BUGS), ("round 14", ROUND14_BUGS),
                        ("round 15", ROUND15_BUGS), ("round 16", ROUND16_BUGS), ("round 17", ROUND17_BUGS),
                        ("round 18", ROUND18_BUGS), ("round 19", ROUND19_BUGS), ("round 20", ROUND20_BUGS)):
        if key in keys:
            return label
    return "no"


def bugs(opts, rows: list) -> None:
    """The planted bugs' rows (``opts.bugs``: only these), each after the armed guard."""
    print("| bug | aimed | policy copied | verdict | exit | caught by | white-box runs | seconds |")
    print("|---|---|---|---|---:|---|---|---:|")
    for key, cls in BUGS.items():
        if opts.bugs is not None and key not in opts.bugs:
            continue
        REGISTRY[cls.name] = cls
        why = armed(cls)
        if why:  # a refactor disarmed the bug: say so loudly instead of reporting a verdict
            print(f"| {key} | DISARMED | {cls.__mro__[1].name} | {why} | | | | |", flush=True)
            rows.append({"case": key, "policy": cls.__mro__[1].name, "verdict": "DISARMED", "exit": None})
            continue
        for seed in opts.seeds:
            r = row(cls.__mro__[1].name, [cls.name, "--tier", "ci", "--seed", str(seed)], key)
            rows.append(r)
            print(f"| {key} | {_round_of(key)} | {r['policy']} | **{r['verdict']}** | "
                  f"{r['exit']} | {r['caught_by']} | {r['wb_runs']} | {r['seconds']} |", flush=True)


def deployments(rows: list, cases: dict, bug_keys) -> None:
    """Deployment rows: each store driven by its round's drive, then audited from the store."""
    from privbandit.audit.deployment import deployment_audit

    print("\n| deployment case | kind | verdict | caught by | seconds |")
    print("|---|---|---|---|---:|")
    round12 = {**DEPLOY_BUGS12, **DEPLOY_CONTROLS12}
    round17 = {**DEPLOY_BUGS17, **DEPLOY_CONTROLS17}  # round 17's drive: crashes between a decision and its reward
    round20 = {**DEPLOY_BUGS20, **DEPLOY_CONTROLS20}  # round 20's drive: continuous rewards (no raw value repeats)
    for key, cls in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            drive = (drive_deployment20 if key in round20 else drive_deployment17 if key in round17
                     else drive_deployment12 if key in round12 else drive_deployment)
            refused = drive(cls, os.path.join(tmp, "store.db"))
            res = deployment_audit(os.path.join(tmp, "store.db"), deployment=cls)
            seconds = round(time.perf_counter() - started, 1)
        kind = "bug" if key in bug_keys else "control"
        # (session 14: "refused" -- the deployment itself refused to continue after a reopen, its counters or
        # release counts disagreeing with its log; the drive stopped there and the store was audited as it stood)
        caught = ", ".join([*res.checks, *(["refused"] if refused else [])]) or "-"
        rows.append({"case": key, "policy": "deploy", "verdict": res.verdict, "exit": None,
                     "caught_by": caught, "seconds": seconds, "refused": refused})
        print(f"| {key} | {kind} | **{res.verdict}** | {caught} | {seconds} |", flush=True)


def controls(opts, rows: list, unmodified: dict, variants: dict) -> None:
    """The false-alarm rows: the unmodified private policies, then the rounds' correct variants."""
    print("\n| control (unmodified) | mode | verdict | exit | white-box runs | seconds | power |")
    print("|---|---|---|---:|---|---:|---|")
    for name, cls in unmodified.items():
        if not default_constructible(cls) or (opts.controls is not None and name not in opts.controls):
            continue
        for exact in ((False, True) if opts.exact else (False,)):
            for seed in opts.seeds:
                argv = [name, "--tier", "ci", "--seed", str(seed)] + (["--param", "exact=true"] if exact else [])
                try:
                    r = row(name, argv, name)
                except ValueError as exc:  # e.g. a policy without an exact mode
                    print(f"| {name} | {'exact' if exact else 'float'} | skipped: {exc} | | | | |")
                    continue
                rows.append(r)
                print(f"| {name} | {'exact' if exact else 'float'} | {r['verdict']} | {r['exit']} | {r['wb_runs']} | "
                      f"{r['seconds']} | {r['power']} |", flush=True)
    # round 10's to 18's correct variants (subclasses of the policies with a privacy-neutral change)
    rounds = ((10, CONTROLS10), (11, CONTROLS11), (12, CONTROLS12), (13, CONTROLS13), (14, CONTROLS14),
              (15, CONTROLS15), (16, CONTROLS16), (17, CONTROLS17), (18, CONTROLS18),
              (19, CONTROLS19), (20, CONTROLS20))
    for key, cls in variants.items():
        if opts.controls is not None and key not in opts.controls:
            continue
        REGISTRY[cls.name] = cls
        label = next(n for n, keys in rounds if key in keys)
        for seed in opts.seeds:
            r = row(cls.__mro__[1].name, [cls.name, "--tier", "ci", "--seed", str(seed)], key)
            rows.append(r)
            print(f"| {key} (round {label} control) | float | {r['verdict']} | {r['exit']} | {r['wb_runs']} | "
                  f"{r['seconds']} | {r['power']} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", choices=("bugs", "controls", "all", *ROUNDS_ALONE), default="all",
                    help="round14 .. round20: that round's controls (first), then its bugs and deployment rows")
    ap.add_argument("--seeds", type=whole(0), nargs="+", default=[0])
    ap.add_argument("--exact", action="store_true", help="controls also in exact mode")
    ap.add_argument("--bugs", nargs="+", default=None, choices=sorted(BUGS), help="only these planted bugs")
    ap.add_argument("--controls", nargs="+", default=None, help="only these unmodified policies")
    ap.add_argument("--json", default=None, help="write the rows here as JSON")
    opts = ap.parse_args()
    rows = []
    # the unmodified policies, listed before any bug class is registered: a bug registered for its own
    # row would otherwise be audited again as a "control" (--only all)
    unmodified = private_policies()
    if opts.only in ROUNDS_ALONE:  # one round alone: its controls first (registered before any bug), then its
        # bugs and deployments
        variants, round_bugs, deploy_bugs, deploy_controls = ROUNDS_ALONE[opts.only]
        opts.bugs = list(round_bugs) if opts.bugs is None else opts.bugs
        controls(opts, rows, {}, variants)
        bugs(opts, rows)
        deployments(rows, {**deploy_bugs, **deploy_controls}, deploy_bugs)
    if opts.only in ("bugs", "all"):
        bugs(opts, rows)
    if opts.only in ("bugs", "all") and opts.bugs is None:
        # round 10's deployment path: a store served with holds and restarts, audited from the store
        deployments(rows, {**DEPLOY_BUGS, **DEPLOY_CONTROLS, **DEPLOY_BUGS12, **DEPLOY_CONTROLS12, **DEPLOY_BUGS14,
                           **DEPLOY_CONTROLS14, **DEPLOY_BUGS15, **DEPLOY_CONTROLS15, **DEPLOY_BUGS16,
                           **DEPLOY_CONTROLS16, **DEPLOY_BUGS17, **DEPLOY_CONTROLS17, **DEPLOY_BUGS18, **DEPLOY_CONTROLS18,
                           **DEPLOY_BUGS19, **DEPLOY_CONTROLS19, **DEPLOY_BUGS20, **DEPLOY_CONTROLS20},
                    {**DEPLOY_BUGS, **DEPLOY_BUGS12, **DEPLOY_BUGS14, **DEPLOY_BUGS15, **DEPLOY_BUGS16, **DEPLOY_BUGS17, **DEPLOY_BUGS18,
                     **DEPLOY_BUGS19, **DEPLOY_BUGS20})
    if opts.only in ("controls", "all"):
        controls(opts, rows, unmodified, {**CONTROLS10, **CONTROLS11, **CONTROLS12, **CONTROLS13, **CONTROLS14,
                                               **CONTROLS15, **CONTROLS16, **CONTROLS17, **CONTROLS18,
                                               **CONTROLS19, **CONTROLS20})
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
