"""Session 13's three coupled runs alone (``privbandit.audit.cli.reach_runs``: 33 arms, every position in a
batch, a window far into the run behind an untraced prefix) on the controls and, optionally, round 14's bugs,
with exactly the command's arguments (``--tier ci --arms 2 --seed S``: the same horizons and seeds).

Every other run of the command is unchanged by session 13 (bit-identical results, docs/audit.md "Session 13
(s13/audit)"), so a row's verdict moves only through these three: a control stays CONSISTENT iff none of
them is VIOLATION or raised. This is the false-alarm check at a fraction of ``audit_planted.py --only
controls``' cost (~4-7 s CPU per row instead of ~25-30 s), with the added CPU seconds per policy.

Session 14: the batch-positions run also changes records 16 or more into a long batch (``WB_SWEEP["deep"]``), and
the contextual policies (and contextual controls) run their own reach runs
(``privbandit.audit.cli.contextual_reach_runs``: leaf positions and late rounds, edge contexts, a higher
dimension); round 15's controls are included. ``--with-law``: also the command's white-box runs that test the noise
law (the main coupled run and the 8-arm run; a graph policy's feedback-graph, starving, star and redrawn runs; a
contextual policy's main run), with the command's sizes and seeds -- where check 5d's session-14 pairings act --
so that a control's verdict can move through nothing this scan does not run (the ledger, far and black-box audits
are unchanged by session 14).

Session 15: the clock-jump run (``CLOCK_JUMP``, its own column); round 16's controls (and, with ``--round16-bugs``,
its policy bugs); ``--only`` names cases; ``--with-law`` also runs the contextual long run (now law-tested) and check
5e in the contextual main run and the graph feedback run, as the command does.

    python bench/audit_reach_runs.py                  # every K-armed control
    python bench/audit_reach_runs.py --round14-bugs   # and round 14's K-armed bugs
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the worktree's package

from audit_planted_bugs import CONTROLS10, CONTROLS11  # noqa: E402
from audit_planted_round12 import CONTROLS12  # noqa: E402
from audit_planted_round13 import CONTROLS13  # noqa: E402
from audit_planted_round14 import CONTROLS14, ROUND14_BUGS  # noqa: E402
from audit_planted_round15 import CONTROLS15  # noqa: E402
from audit_planted_round16 import CONTROLS16, ROUND16_BUGS  # noqa: E402

from privbandit.audit.cli import WB_LATE, WB_LONG, contextual_reach_runs, reach_runs  # noqa: E402
from privbandit.audit.discover import default_constructible, private_policies  # noqa: E402
from privbandit.audit.whitebox import probe_horizon  # noqa: E402
from privbandit.cli_checks import whole  # noqa: E402
from privbandit.policies import REGISTRY, make_policy  # noqa: E402


def reach_row(name: str, seed: int, k: int = 2) -> dict:
    """The command's session-13 runs on ``name`` (as ``privbandit.audit.cli.run`` sizes them)."""
    policy = make_policy(name)
    if "contexts" in policy.requires:
        cpu, wall = time.process_time(), time.perf_counter()
        out = contextual_reach_runs(policy, k, seed)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        verdicts = {lab: ("skipped" if r is None else r.verdict + (f" {r.checks}" if r.checks else "")
                          + (f" (ERROR: {r.error})" if r.error else "")) for lab, r in out.items()}
        bad = any(r is not None and (r.verdict == "VIOLATION" or r.error) for r in out.values())
        return {"policy": name, "verdict": "VIOLATION/ERROR" if bad else "no finding",
                "runs": {"33 arms": f"leaf positions: {verdicts['positions']}",
                         "batch positions": f"edge contexts: {verdicts['boundary']}",
                         "fast-forward": f"higher dimension: {verdicts['wider']}"},
                "cpu": round(cpu, 1), "wall": round(wall, 1)}
    wb_horizon = probe_horizon(policy, k)
    long_horizon = min(WB_LONG["cap"], max(WB_LONG["minimum"], WB_LONG["factor"] * wb_horizon))
    late_horizon = min(WB_LATE["cap"], WB_LATE["factor"] * long_horizon)
    cpu, wall = time.process_time(), time.perf_counter()
    runs = reach_runs(policy, k, long_horizon, late_horizon, seed)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    labels = ("33 arms", "batch positions", "fast-forward", "clock jump")
    verdicts = [("skipped" if r is None else r.verdict + (f" {r.checks}" if r.checks else "")
                 + (f" (ERROR: {r.error})" if r.error else "")) for r in runs]
    bad = any(r is not None and (r.verdict == "VIOLATION" or r.error) for r in runs)
    return {"policy": name, "verdict": "VIOLATION/ERROR" if bad else "no finding",
            "runs": dict(zip(labels, verdicts)), "cpu": round(cpu, 1), "wall": round(wall, 1),
            "sizes": {lab: None if r is None else f"K={r.n_arms} T={r.horizon} R={r.replicates} "
                                                  f"releases={r.releases}" for lab, r in zip(labels, runs)}}


def law_runs(name: str, seed: int, k: int = 2) -> list:
    """(label, result) of the command's noise-law white-box runs on ``name`` (``privbandit.audit.cli.run``'s sizes:
    the ``ci`` tier's white-box budget)."""
    from privbandit.audit.cli import GRAPH, SEED_RUNS, TIERS, WB_MANY_ARMS, WB_RELEASES
    from privbandit.audit.whitebox import release_profile, whitebox_audit

    policy = make_policy(name)
    budget = TIERS["ci"]["wb_budget"]
    if "contexts" in policy.requires:
        from privbandit.audit.cli import CONTEXTUAL
        from privbandit.audit.contextual import contextual_whitebox_audit

        from privbandit.audit.cli import WB_LONG, contextual_long_run

        reps = int(min(CONTEXTUAL["max_replicates"], max(32, budget // CONTEXTUAL["horizon"])))
        long_horizon = min(WB_LONG["cap"], max(WB_LONG["minimum"], WB_LONG["factor"] * CONTEXTUAL["horizon"]))
        # session 15: the main run's check 5e and the long run's noise law, as the command runs them
        return [("contextual", contextual_whitebox_audit(policy, CONTEXTUAL["horizon"], k, reps, seed=seed,
                                                         seed_runs=SEED_RUNS)),
                ("contextual long", contextual_long_run(policy, long_horizon, k, WB_LONG["replicates"], seed + 1))]
    wb_horizon = probe_horizon(policy, k)
    first, per_rep = release_profile(policy, k, wb_horizon)
    wb_reps = budget // wb_horizon
    if per_rep and wb_reps * per_rep < WB_RELEASES:
        wb_reps = min(4 * budget // wb_horizon, -(-WB_RELEASES // per_rep))
    wb_reps = int(min(1024, max(32, wb_reps)))
    out = [("main", whitebox_audit(policy, wb_horizon, k, wb_reps, seed=seed))]
    many = int(min(1024, max(32, budget // (4 * wb_horizon))))
    out.append(("8 arms", whitebox_audit(policy, wb_horizon, WB_MANY_ARMS, many - many % 4, seed=seed + 4)))
    if policy.requires == frozenset({"graph"}):
        from privbandit.audit.graph import graph_whitebox_audit

        size = GRAPH
        out.append(("graph", graph_whitebox_audit(policy, size["horizon"], k, size["replicates"], seed=seed,
                                                  seed_runs=SEED_RUNS)))
        out.append(("starving graph", graph_whitebox_audit(policy, size["horizon"], max(k, size["starve_arms"]),
                                                           size["starve_replicates"], seed=seed + 3, starve=True)))
        for i, shape in enumerate(("star", "redrawn")):
            out.append((shape, graph_whitebox_audit(policy, size["horizon"], max(k, size["shape_arms"]),
                                                    size["shape_replicates"], seed=seed + 6 + i, shape=shape)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=whole(0), default=0, help="the command's --seed, a whole number >= 0 (default 0)")
    ap.add_argument("--round14-bugs", action="store_true", help="also round 14's K-armed bugs")
    ap.add_argument("--round16-bugs", action="store_true", help="also round 16's policy bugs")
    ap.add_argument("--with-law", action="store_true", help="also the command's noise-law white-box runs (check 5d)")
    ap.add_argument("--skip", nargs="*", default=(), help="cases (registered names) not to run")
    ap.add_argument("--only", nargs="*", default=None, help="only these cases (registered names)")
    opts = ap.parse_args()
    cases = [(name, "control") for name, cls in private_policies().items() if default_constructible(cls)]
    variants = {**CONTROLS10, **CONTROLS11, **CONTROLS12, **CONTROLS13, **CONTROLS14, **CONTROLS15, **CONTROLS16}
    bugs = {**(ROUND14_BUGS if opts.round14_bugs else {}), **(ROUND16_BUGS if opts.round16_bugs else {})}
    for key, cls in {**variants, **bugs}.items():
        REGISTRY[cls.name] = cls
        cases.append((cls.name, "control" if key in variants else "bug"))
    print("| case | kind | verdict | 33 arms | batch positions | fast-forward | clock jump | CPU s | wall s |")
    print("|---|---|---|---|---|---|---|---:|---:|")
    for name, kind in cases:
        if name in opts.skip or (opts.only is not None and name not in opts.only):
            continue
        r = reach_row(name, opts.seed)
        runs = r.get("runs", {})
        law = ""
        if opts.with_law:
            cpu = time.process_time()
            found = [(lab, res) for lab, res in law_runs(name, opts.seed) if res.verdict == "VIOLATION" or res.error]
            law = (" law runs: " + ("; ".join(f"{lab} {res.verdict} {res.checks} {res.error or ''}" for lab, res in found)
                                    if found else "no finding") + f" ({time.process_time() - cpu:.1f} s CPU)")
        print(f"| {name} | {kind} | {r['verdict']}{law} | {runs.get('33 arms', '-')} | {runs.get('batch positions', '-')} | "
              f"{runs.get('fast-forward', '-')} | {runs.get('clock jump', '-')} | {r.get('cpu', '-')} | "
              f"{r.get('wall', '-')} |",
              flush=True)


if __name__ == "__main__":
    main()
