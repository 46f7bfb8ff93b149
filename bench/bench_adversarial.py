"""Adversarial policies' throughput against their own raw RNG limit (issue 19, items 1 and 3).

For EXP3, DP-EXP3-Lap (eps = 1), EXP3-tau and the batched conversion of Asi, Raman & Talwar (eps = 1:
tau = 1; eps = 0.1: tau = 10) on the switching sequence (5 arms, T = 2e4): pulls per second of CPU
time (``time.process_time``: the machine is shared, CPU time is what the policy costs) at 100 and
1000 replicates, ledger on (default tracking) and off, and the raw limit: drawing in bulk exactly
the random numbers the policy consumes (EXP3: one uniform per replicate per round; DP-EXP3-Lap: plus
one Laplace; EXP3-tau: one uniform per replicate per batch of ceil(T^(1/3)); the batched conversion:
one uniform and one Laplace per replicate per batch of ceil(1/eps)).

Usage: ``python bench/bench_adversarial.py [--horizon 20000] [--repeats 3] [--only NAME]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from privbandit.engine import simulate
from privbandit.envs import switching_best_arm
from privbandit.policies import BatchedPrivateEXP3, DPEXP3Lap, EXP3, EXP3Tau
from privbandit.cli_checks import whole


def engine_rate(policy, env, T, R, ledger):
    start = time.process_time()
    simulate(policy, env, T, R, seed=0, ledger=ledger, progress=False)
    return T * R / (time.process_time() - start)


def raw_rate(tau, laplace, T, R):
    """Pulls/s of drawing, in blocks of 500 rounds, one uniform per replicate per batch of ``tau``
    rounds and (``laplace``) one Laplace with it."""
    rng = np.random.default_rng(0)
    block = 500
    start = time.process_time()
    rounds = 0
    while rounds < T:
        rng.random((max(1, block // tau), R))
        if laplace:
            rng.laplace(0.0, 1.0, (max(1, block // tau), R))
        rounds += block
    return rounds * R / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=whole(1), default=20_000)
    parser.add_argument("--repeats", type=whole(1), default=3)
    parser.add_argument("--only", default=None, help="bench only the policies whose name contains this")
    args = parser.parse_args()
    T = args.horizon
    env = switching_best_arm(T, 5, 4, seed=0)
    # name: (policy, batch length of its choices, one Laplace per choice?)
    policies = {"exp3": (EXP3(), 1, False), "dp_exp3_lap": (DPEXP3Lap(epsilon=1.0), 1, True),
                "exp3_tau": (EXP3Tau(), math.ceil(T ** (1 / 3)), False),
                "batched_private_exp3 eps=1": (BatchedPrivateEXP3(epsilon=1.0), 1, True),
                "batched_private_exp3 eps=0.1": (BatchedPrivateEXP3(epsilon=0.1), 10, True)}
    only = [n for n in policies if args.only is None or args.only in n]
    print(f"T = {T}, 5 arms (switching sequence), pulls per CPU second, best of {args.repeats}\n")
    print("| policy | replicates | ledger on | ledger off | raw RNG limit | on / raw | ledger overhead |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in only:
        pol, tau, laplace = policies[name]
        for R in (100, 1000):
            on = max(engine_rate(pol, env, T, R, True) for _ in range(args.repeats))
            off = max(engine_rate(pol, env, T, R, False) for _ in range(args.repeats))
            raw = max(raw_rate(tau, laplace, T, R) for _ in range(args.repeats))
            print(f"| {name} | {R} | {on:.3g} | {off:.3g} | {raw:.3g} | {on / raw:.1%} | {off / on - 1:+.0%} |",
                  flush=True)


if __name__ == "__main__":
    main()
