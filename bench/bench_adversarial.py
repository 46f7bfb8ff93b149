"""Adversarial policies' throughput against their own raw RNG limit (issue 19, items 1 and 3).

For EXP3, DP-EXP3-Lap (eps = 1) and EXP3-tau on the switching sequence (5 arms, T = 2e4): pulls per
second of CPU time (``time.process_time``: the machine is shared, CPU time is what the policy costs)
at 100 and 1000 replicates, ledger on (default tracking) and off, and the raw limit: drawing in
bulk exactly the random numbers the policy consumes (EXP3: one uniform per replicate per round;
DP-EXP3-Lap: plus one Laplace; EXP3-tau: one uniform per replicate per batch of ceil(T^(1/3))).

Usage: ``python bench/bench_adversarial.py [--horizon 20000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from privbandit.engine import simulate
from privbandit.envs import switching_best_arm
from privbandit.policies import DPEXP3Lap, EXP3, EXP3Tau


def engine_rate(policy, env, T, R, ledger):
    start = time.process_time()
    simulate(policy, env, T, R, seed=0, ledger=ledger, progress=False)
    return T * R / (time.process_time() - start)


def raw_rate(kind, T, R):
    rng = np.random.default_rng(0)
    block = 500
    start = time.process_time()
    rounds = 0
    tau = math.ceil(T ** (1 / 3))
    while rounds < T:
        if kind == "exp3_tau":
            rng.random((max(1, block // tau), R))
        else:
            rng.random((block, R))
            if kind == "dp_exp3_lap":
                rng.laplace(0.0, 1.0, (block, R))
        rounds += block
    return rounds * R / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    T = args.horizon
    env = switching_best_arm(T, 5, 4, seed=0)
    policies = {"exp3": EXP3(), "dp_exp3_lap": DPEXP3Lap(epsilon=1.0), "exp3_tau": EXP3Tau()}
    print(f"T = {T}, 5 arms (switching sequence), pulls per CPU second, best of {args.repeats}\n")
    print("| policy | replicates | ledger on | ledger off | raw RNG limit | on / raw | ledger overhead |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, pol in policies.items():
        for R in (100, 1000):
            on = max(engine_rate(pol, env, T, R, True) for _ in range(args.repeats))
            off = max(engine_rate(pol, env, T, R, False) for _ in range(args.repeats))
            raw = max(raw_rate(name, T, R) for _ in range(args.repeats))
            print(f"| {name} | {R} | {on:.3g} | {off:.3g} | {raw:.3g} | {on / raw:.1%} | {off / on - 1:+.0%} |",
                  flush=True)


if __name__ == "__main__":
    main()
