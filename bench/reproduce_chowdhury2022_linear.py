"""chowdhury2022-linear at the paper's size: K = 100, d = 5, eps = 0.2, delta = 0.1, T = 2e4, 50 runs.

Usage: python bench/reproduce_chowdhury2022_linear.py [--horizon 20000] [--replicates 50]
Prints final regret (95% band) and the certified epsilon at delta = 0.1 of every policy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privbandit.experiments import run_experiment  # noqa: E402
from privbandit.cli_checks import whole


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--horizon", type=whole(1), default=20_000)
    ap.add_argument("--replicates", type=whole(1), default=50)
    args = ap.parse_args()
    res = run_experiment("chowdhury2022-linear", args.horizon, args.replicates, seed=0, delta=0.1)
    print("| policy | final regret | certified eps at delta = 0.1 | seconds |")
    print("|---|---|---|---|")
    for label, _, cell in res:
        print(f"| {label} | {cell.regret_mean[-1]:.0f} [{cell.regret_lower[-1]:.0f}, {cell.regret_upper[-1]:.0f}] | "
              f"{cell.certified_epsilon[-1]:.4g} | {cell.seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
