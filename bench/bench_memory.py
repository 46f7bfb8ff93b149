"""Peak memory of a long simulation (issue 19, item 5): O(T + R K), not O(T R).

Each configuration runs in a fresh subprocess and reports its peak resident set size
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, kB on Linux) next to the wall time.

Usage: ``python bench/bench_memory.py [--policy beta_ts] [--horizons 1e6 1e7] [--replicates 100]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from privbandit.cli_checks import whole
from privbandit.policies import policy_class

CHILD = r"""
import json, resource, sys, time
from privbandit import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import make_policy
name, T, R = sys.argv[1], int(float(sys.argv[2])), int(sys.argv[3])
start = time.perf_counter()
r = simulate(make_policy(name), Bernoulli([0.75, 0.625, 0.5, 0.375, 0.25]), T, R, seed=0, progress=False)
print(json.dumps({"policy": name, "horizon": T, "replicates": R, "seconds": time.perf_counter() - start,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "regret": float(r.regret_mean[-1])}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="beta_ts", help="a registry name (privbandit.policies.REGISTRY)")
    parser.add_argument("--horizons", nargs="+", type=whole(1), default=[10**6, 10**7])
    parser.add_argument("--replicates", type=whole(1), default=100)
    args = parser.parse_args()
    try:
        policy_class(args.policy)  # an unknown name: the registry's message, before any child starts
    except ValueError as err:
        parser.error(f"argument --policy: {err}")
    print("| policy | horizon | replicates | peak RSS (MB) | seconds | final regret |")
    print("|---|---:|---:|---:|---:|---:|")
    for horizon in args.horizons:
        out = subprocess.run([sys.executable, "-c", CHILD, args.policy, str(horizon), str(args.replicates)],
                             capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {row['policy']} | {row['horizon']:.0e} | {row['replicates']} | {row['peak_rss_mb']:.0f} | "
              f"{row['seconds']:.0f} | {row['regret']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
