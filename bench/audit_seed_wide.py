"""Check 5e on every replicate (session 16, s16/reach): the command's main white-box run now repeats the seed check
on all of its replicates when the first ``SEED_RUNS`` show nothing (``whitebox_audit(seed_wide=True)``). This scan
runs exactly those two seed checks (the main run's tapes, horizon, replicates and seed children, as
``privbandit.audit.cli.run`` sizes them at ``--tier ci``) on every clean K-armed private policy and every K-armed
control of rounds 10-18 -- the only runs through which session 16's change can move a control's verdict (the
per-run seed copy is bit-identical for a policy that never spawns from its generator) -- and, with ``--bugs``,
on round 18's ``dp_ts_replicates_past_sixteen_fixed_seed``. Prints per case the narrow and wide findings and the
CPU seconds of the wide runs (the added cost per policy).

    python bench/audit_seed_wide.py [--seed 0] [--only NAME ...] [--bugs]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the worktree's package

from audit_planted_bugs import CONTROLS10, CONTROLS11  # noqa: E402
from audit_planted_round12 import CONTROLS12  # noqa: E402
from audit_planted_round13 import CONTROLS13  # noqa: E402
from audit_planted_round14 import CONTROLS14  # noqa: E402
from audit_planted_round15 import CONTROLS15  # noqa: E402
from audit_planted_round16 import CONTROLS16  # noqa: E402
from audit_planted_round17 import CONTROLS17  # noqa: E402
from audit_planted_round18 import CONTROLS18, ROUND18_BUGS  # noqa: E402

from privbandit.audit.cli import TIERS, WB_RELEASES  # noqa: E402
from privbandit.audit.discover import default_constructible, private_policies  # noqa: E402
from privbandit.audit.whitebox import _seed_check, neighbour_tapes, probe_horizon, release_profile  # noqa: E402
from privbandit.cli_checks import whole  # noqa: E402
from privbandit.policies import REGISTRY, make_policy  # noqa: E402


def main_run_checks(policy, seed: int, k: int = 2, seed_runs: int = 16) -> dict:
    """The main run's narrow and wide seed checks, with ``whitebox_audit``'s tapes and seed children."""
    budget = TIERS["ci"]["wb_budget"]
    horizon = probe_horizon(policy, k)
    _, per_rep = release_profile(policy, k, horizon)
    reps = budget // horizon
    if per_rep and reps * per_rep < WB_RELEASES:
        reps = min(4 * budget // horizon, -(-WB_RELEASES // per_rep))
    reps = int(min(1024, max(32, reps)))
    tape_seq, run_seq = np.random.SeedSequence(seed).spawn(2)
    span = int(getattr(policy, "b", 0) or 0) + 6
    tape = neighbour_tapes(k, horizon, reps, np.random.default_rng(tape_seq), first=0, window=span)[0]
    notes: list[str] = []
    narrow = _seed_check(policy, tape[:seed_runs], horizon, run_seq, False, notes)
    cpu = time.process_time()
    wide = _seed_check(policy, tape, horizon, run_seq, False, notes)
    return {"T": horizon, "R": reps, "narrow": narrow, "wide": wide, "cpu": time.process_time() - cpu,
            "notes": notes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=whole(0), default=0, help="the command's --seed, a whole number >= 0")
    ap.add_argument("--only", nargs="*", default=None, help="only these cases (registered names or the rounds' row names)")
    ap.add_argument("--bugs", action="store_true", help="also round 18's dp_ts_replicates_past_sixteen_fixed_seed")
    opts = ap.parse_args()
    cases = [(name, "clean", name) for name, cls in private_policies().items() if default_constructible(cls)]
    variants = {**CONTROLS10, **CONTROLS11, **CONTROLS12, **CONTROLS13, **CONTROLS14, **CONTROLS15, **CONTROLS16,
                **CONTROLS17, **CONTROLS18}
    bugs = {"dp_ts_replicates_past_sixteen_fixed_seed": ROUND18_BUGS["dp_ts_replicates_past_sixteen_fixed_seed"]}
    for key, cls in {**variants, **(bugs if opts.bugs else {})}.items():
        REGISTRY[cls.name] = cls
        cases.append((cls.name, "control" if key in variants else "bug", key))
    print("| case | kind | T | R | narrow (16) | wide (all R) | wide CPU s |\n|---|---|---:|---:|---|---|---:|")
    total = 0.0
    for name, kind, key in cases:
        if opts.only is not None and name not in opts.only and key not in opts.only:
            continue
        policy = make_policy(name)
        if policy.requires & {"contexts", "graph"}:
            continue  # the contextual and graph audits keep the narrow check (docs/audit.md, Session 16)
        out = main_run_checks(policy, opts.seed)
        total += out["cpu"]
        show = lambda f: "-" if f is None else "**seed**: " + f.detail[:60]  # noqa: E731
        print(f"| `{name}` | {kind} | {out['T']} | {out['R']} | {show(out['narrow'])} | {show(out['wide'])} | "
              f"{out['cpu']:.2f} |{' ' + '; '.join(out['notes']) if out['notes'] else ''}", flush=True)
    print(f"\ntotal wide CPU s: {total:.1f}")


if __name__ == "__main__":
    main()
