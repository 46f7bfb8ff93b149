"""The named experiment ``tossou2017-adversarial``: regret with its 95% band and the certified epsilon
of EXP3, EXP3-tau and DP-EXP3-Lap (eps in {0.1, 1, 10}) on the hard sequences.

Usage: ``python bench/reproduce_adversarial.py [--horizon 100000] [--replicates 20]``; prints the
markdown table recorded in docs/policies_adversarial.md.
"""

from __future__ import annotations

import argparse
import time

from privbandit.experiments import run_experiment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=100_000)
    parser.add_argument("--replicates", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2017)
    args = parser.parse_args()
    start = time.perf_counter()
    result = run_experiment("tossou2017-adversarial", horizon=args.horizon, replicates=args.replicates,
                            seed=args.seed)
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
