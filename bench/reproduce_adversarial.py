"""The named experiment ``tossou2017-adversarial``: regret with its 95% band and the certified epsilon
of EXP3, EXP3-tau, DP-EXP3-Lap, Agarwal & Singh's private EXP3 and Asi, Raman & Talwar's batched
conversion (eps in {0.1, 1, 10}) on the hard sequences.

``--only SUBSTRING`` runs only the policies whose label contains it (e.g. ``--only Batched``: the rows
a new policy adds, without re-running the others; ``--sequence SUBSTRING`` likewise selects sequences; the sweep then seeds its smaller grid afresh, so
those rows are statistically, not bit-for-bit, the full run's).

Usage: ``python bench/reproduce_adversarial.py [--horizon 100000] [--replicates 20]``; prints the
markdown table recorded in docs/policies_adversarial.md.
"""

from __future__ import annotations

import argparse
import time

from privbandit.experiments import DELTA, EXPERIMENTS, run_experiment
from privbandit.sweep import sweep
from privbandit.cli_checks import whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=whole(1), default=100_000)
    parser.add_argument("--replicates", type=whole(1), default=20)
    parser.add_argument("--seed", type=whole(0), default=2017)
    parser.add_argument("--only", default=None, help="run only the policies whose label contains this")
    parser.add_argument("--sequence", default=None, help="run only the sequences whose label contains this")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.only is None and args.sequence is None:
        result = run_experiment("tossou2017-adversarial", horizon=args.horizon, replicates=args.replicates,
                                seed=args.seed)
    else:
        policies, envs = EXPERIMENTS["tossou2017-adversarial"](args.horizon)
        policies = {label: p for label, p in policies.items() if (args.only or "") in label}
        envs = {label: e for label, e in envs.items() if (args.sequence or "") in label}
        if not policies or not envs:
            parser.error(f"--only {args.only!r} / --sequence {args.sequence!r} select nothing of the experiment")
        result = sweep(policies, envs, args.horizon, args.replicates, args.seed, delta=DELTA, ledger=False)
    T = args.horizon
    print(f"T = {T}, {args.replicates} replicates, seed {args.seed}, delta 1e-6 "
          f"({time.perf_counter() - start:.0f} s)\n")
    print("| sequence | policy | regret (95% band) | regret / T | certified eps | claimed eps |")
    print("|---|---|---:|---:|---:|---:|")
    for policy, env, r in result:
        s = r.summary()
        band = (s["regret_upper"] - s["regret_lower"]) / 2
        claim = "-" if s["claimed_epsilon"] is None else f"{s['claimed_epsilon']:g}"
        print(f"| {env} | {policy} | {s['regret']:.0f} +- {band:.0f} | {s['regret'] / T:.4f} | "
              f"{s['certified_epsilon']:.4g} | {claim} |")


if __name__ == "__main__":
    main()
