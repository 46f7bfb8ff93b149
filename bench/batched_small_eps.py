"""The batched private conversion (Asi, Raman & Talwar, ICML 2025) against the per-round private EXP3s
at small epsilon, the regime the paper is about (docs/policies_adversarial.md).

For each eps: ``batched_private_exp3`` (tau = ceil(1/eps)), Agarwal & Singh's ``private_exp3`` and
``dp_exp3_lap``, on the switching sequence (5 arms, m = 4, seed 2017) and on Bernoulli
[0.75, 0.625, 0.5, 0.375, 0.25]; regret with its 95% band, and uniform play's expected regret on the
same instance for reference (a policy near it has learned nothing).

Usage: ``PYTHONPATH=. python bench/batched_small_eps.py [--horizon 100000] [--replicates 20]
[--eps 0.1 0.01 0.003]``.
"""

from __future__ import annotations

import argparse

import numpy as np

from privbandit.engine import simulate
from privbandit.envs import Bernoulli, switching_best_arm
from privbandit.policies import BatchedPrivateEXP3, DPEXP3Lap, PrivateEXP3
from privbandit.cli_checks import positive, whole

FIVE_ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=whole(1), default=100_000)
    parser.add_argument("--replicates", type=whole(1), default=20)
    parser.add_argument("--eps", type=positive, nargs="+", default=[0.1, 0.01, 0.003])
    args = parser.parse_args()
    T, R = args.horizon, args.replicates
    switching = switching_best_arm(T, 5, 4, seed=2017)
    table = switching.table
    envs = {"switching (m=4)": (switching, (table.sum(axis=0).max() - table.mean(axis=1).sum())),
            "Bernoulli 5 arms": (Bernoulli(FIVE_ARMS), T * (max(FIVE_ARMS) - float(np.mean(FIVE_ARMS))))}
    print(f"T = {T}, {R} replicates, seed 1\n")
    print("| sequence | eps | policy | regret (95% band) | regret / uniform play's |")
    print("|---|---:|---|---:|---:|")
    for label, (env, uniform) in envs.items():
        for eps in args.eps:
            for pol in (BatchedPrivateEXP3(epsilon=eps), PrivateEXP3(epsilon=eps), DPEXP3Lap(epsilon=eps)):
                r = simulate(pol, env, T, R, seed=1, ledger=False, progress=False)
                band = (r.regret_upper[-1] - r.regret_lower[-1]) / 2
                print(f"| {label} | {eps:g} | {pol.name} | {r.regret_mean[-1]:.0f} +- {band:.0f} | "
                      f"{r.regret_mean[-1] / uniform:.2f} |", flush=True)


if __name__ == "__main__":
    main()
