"""mishra2015-contextual: on-policy regret on the digits reduction (d = 6) and replay estimates.

Usage: python bench/reproduce_mishra2015_contextual.py [--horizon 5000] [--replicates 10]
Prints, per policy: on-policy final regret (95% band), mean per-round reward on-policy, the replay
estimate of the per-round reward (mean over replicates of the kept-reward mean, and the mean kept
count) on a uniform log of 10 x horizon events, and the certified epsilon.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privbandit.experiments import mishra2015_contextual_replay, run_experiment  # noqa: E402
from privbandit.cli_checks import whole


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--horizon", type=whole(1), default=5_000)
    ap.add_argument("--replicates", type=whole(1), default=10)
    args = ap.parse_args()
    on = run_experiment("mishra2015-contextual", args.horizon, args.replicates, seed=0)
    rep = mishra2015_contextual_replay(args.horizon, max(2, args.replicates // 2), seed=0)
    print(f"digits d = 6, K = 10, T = {args.horizon}, {args.replicates} replicates on-policy; replay on "
          f"{10 * args.horizon} uniformly logged events")
    print("| policy | on-policy regret | on-policy reward/round | replay reward/round (kept) | certified eps (1e-6) |")
    print("|---|---|---|---|---|")
    for label, _, cell in on:
        m, lo, hi = cell.regret_mean[-1], cell.regret_lower[-1], cell.regret_upper[-1]
        r = rep[label]
        cert = cell.certified_epsilon[-1]
        print(f"| {label} | {m:.0f} [{lo:.0f}, {hi:.0f}] | {1 - m / args.horizon:.3f} | "
              f"{np.mean(r.value):.3f} ({np.mean(r.kept):.0f}) | {'' if not np.isfinite(cert) else f'{cert:.4g}'} |",
              flush=True)


if __name__ == "__main__":
    main()
