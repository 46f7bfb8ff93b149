"""Check 5e on every replicate (session 16, s16/reach): the command's main white-box run now repeats the seed check
on all of its replicates when the first ``SEED_RUNS`` show nothing (``whitebox_audit(seed_wide=True)``). This scan
runs exactly those two seed checks (the main run's tapes, horizon, replicates and seed children, as
``privbandit.audit.cli.run`` sizes them at ``--tier ci``) on every clean K-armed private policy and every K-armed
control of rounds 10-18 -- the only runs through which session 16's change can move a control's verdict (the
per-run seed copy is bit-identical for a policy that never spawns from its generator) -- and, with ``--bugs``,
on round 18's ``dp_ts_replicates_past_sixteen_fixed_seed``. Prints per case the narrow and wide findings and the
CPU seconds of the wide runs (the added cost per policy).

``--choices``: instead, check 13 with its session-16 choice tests (``privbandit.audit.weights._choice_seed``, a third
run on D with another seed, and ``_choice_lags``) at the main run's and the long run's sizes, on the cases whose
schedule declares a sampling floor (EXP3, EXP3-tau and their controls; with ``--bugs``, round 18's
``exp3_tau_choice_seeded_by_batch`` and ``exp3_uniforms_cycled``): the findings and the CPU seconds of
``sampling_check`` (three runs where there were two).

    python bench/audit_seed_wide.py [--seed 0] [--only NAME ...] [--bugs] [--choices]
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

from privbandit.audit.cli import TIERS, WB_LONG, WB_RELEASES  # noqa: E402
from privbandit.audit.discover import default_constructible, private_policies  # noqa: E402
from privbandit.audit.weights import declared, sampling_check  # noqa: E402
from privbandit.audit.whitebox import _seed_check, neighbour_tapes, probe_horizon, release_profile  # noqa: E402
from privbandit.cli_checks import whole  # noqa: E402
from privbandit.policies import REGISTRY, make_policy  # noqa: E402


def main_run_checks(policy, seed: int, k: int = 2, seed_runs: int = 16) -> dict:
    """The main run's narrow and wide seed checks, with ``whitebox_audit``'s tapes and seed children."""
    horizon, reps = main_run_sizes(policy, k)
    tape_seq, run_seq = np.random.SeedSequence(seed).spawn(2)
    span = int(getattr(policy, "b", 0) or 0) + 6
    tape = neighbour_tapes(k, horizon, reps, np.random.default_rng(tape_seq), first=0, window=span)[0]
    notes: list[str] = []
    narrow = _seed_check(policy, tape[:seed_runs], horizon, run_seq, False, notes)
    cpu = time.process_time()
    wide = _seed_check(policy, tape, horizon, run_seq, False, notes)
    return {"T": horizon, "R": reps, "narrow": narrow, "wide": wide, "cpu": time.process_time() - cpu,
            "notes": notes}


def main_run_sizes(policy, k: int = 2) -> tuple[int, int]:
    """(horizon, replicates) of the command's main white-box run at --tier ci."""
    budget = TIERS["ci"]["wb_budget"]
    horizon = probe_horizon(policy, k)
    _, per_rep = release_profile(policy, k, horizon)
    reps = budget // horizon
    if per_rep and reps * per_rep < WB_RELEASES:
        reps = min(4 * budget // horizon, -(-WB_RELEASES // per_rep))
    return horizon, int(min(1024, max(32, reps)))


def choice_row(policy, seed: int, k: int = 2, long: bool = False) -> dict:
    """check 13 with the choice tests at the main run's sizes (``long``: the long run's, where a horizon past
    1,024 choices is reached), and its CPU seconds (three runs: the choice-seed test's run on D with another seed is
    a third of them; the lag test is a sum per lag)."""
    horizon, reps = main_run_sizes(policy, k)
    if long:
        horizon = min(WB_LONG["cap"], max(WB_LONG["minimum"], WB_LONG["factor"] * horizon))
        reps, seed = WB_LONG["replicates"], seed + 1
    sampling_check(policy, 8, k, 4, seed)  # compile the policy's kernels outside the timing
    cpu = time.process_time()
    found = sampling_check(policy, horizon, k, reps, seed)
    return {"T": horizon, "R": reps, "found": found, "cpu": time.process_time() - cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=whole(0), default=0, help="the command's --seed, a whole number >= 0")
    ap.add_argument("--only", nargs="*", default=None, help="only these cases (registered names or the rounds' row names)")
    ap.add_argument("--bugs", action="store_true", help="also round 18's bug of the table (see above)")
    ap.add_argument("--choices", action="store_true", help="check 13's choice-seed test instead of check 5e")
    opts = ap.parse_args()
    cases = [(name, "clean", name) for name, cls in private_policies().items() if default_constructible(cls)]
    variants = {**CONTROLS10, **CONTROLS11, **CONTROLS12, **CONTROLS13, **CONTROLS14, **CONTROLS15, **CONTROLS16,
                **CONTROLS17, **CONTROLS18}
    rows = (("exp3_tau_choice_seeded_by_batch", "exp3_uniforms_cycled") if opts.choices
            else ("dp_ts_replicates_past_sixteen_fixed_seed",))
    bugs = {row: ROUND18_BUGS[row] for row in rows}
    for key, cls in {**variants, **(bugs if opts.bugs else {})}.items():
        REGISTRY[cls.name] = cls
        cases.append((cls.name, "control" if key in variants else "bug", key))
    if opts.choices:
        print("| case | kind | T | R | check 13 findings | check 13 CPU s |\n|---|---|---:|---:|---|---:|")
    else:
        print("| case | kind | T | R | narrow (16) | wide (all R) | wide CPU s |\n|---|---|---:|---:|---|---|---:|")
    total = 0.0
    for name, kind, key in cases:
        if opts.only is not None and name not in opts.only and key not in opts.only:
            continue
        policy = make_policy(name)
        if policy.requires & {"contexts", "graph"}:
            continue  # the contextual and graph audits keep the narrow check (docs/audit.md, Session 16)
        if opts.choices:
            if declared(policy, 200, 2) is None:
                continue
            for long in (False, True):
                out = choice_row(policy, opts.seed, long=long)
                total += out["cpu"]
                found = "; ".join(m[:70] for m in out["found"]) or "-"
                print(f"| `{name}`{' (long run)' if long else ''} | {kind} | {out['T']} | {out['R']} | {found} | "
                      f"{out['cpu']:.2f} |", flush=True)
            continue
        out = main_run_checks(policy, opts.seed)
        total += out["cpu"]
        show = lambda f: "-" if f is None else "**seed**: " + f.detail[:60]  # noqa: E731
        print(f"| `{name}` | {kind} | {out['T']} | {out['R']} | {show(out['narrow'])} | {show(out['wide'])} | "
              f"{out['cpu']:.2f} |{' ' + '; '.join(out['notes']) if out['notes'] else ''}", flush=True)
    print(f"\ntotal CPU s of the {'check 13 calls' if opts.choices else 'wide seed runs'}: {total:.2f}")


if __name__ == "__main__":
    main()
