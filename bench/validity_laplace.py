"""docs/accountants.md, session 9: every certificate for Laplace compositions against a rigorous lower
bound on the truth (tests/accountants/_exact.py, ``laplace_log_delta_lower``).

For each composition and delta, the smallest epsilon over all accountants is checked: the lower bound
on delta at that epsilon must not exceed delta (it is increasing as epsilon falls, so every larger
certificate passes too). Prints log(delta_lower / delta) per case: > 0 would be a certificate below
the truth; near 0, a tight one.

Usage (from the repository root):
    PYTHONPATH=. python bench/validity_laplace.py --ks 100,1000 --e0s 0.001,0.01,0.1,1
    PYTHONPATH=. python bench/validity_laplace.py --mixes 40      # random dyadic mixes, seed 9
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from accountants import Composed, Laplace
from privbandit.cli_checks import whole
from tests.accountants._exact import laplace_log_delta_lower
from tests.accountants.test_exact_extremes import _every_epsilon as every_epsilon

DELTAS = [1e-1, 1e-3, 1e-6, 1e-12, 1e-30, 1e-100, 1e-300]


def check(groups, deltas=DELTAS, grid_sd=3.0e4) -> int:
    """Prints one line per delta; returns the number of certificates below the lower bound."""
    event = Composed(tuple(Laplace(1.0, sensitivity=e0) * n for e0, n in groups))  # eps0 = e0 exactly
    spread = math.sqrt(sum(n * e0 * e0 for e0, n in groups))
    e0min = min(e0 for e0, _ in groups)
    # e0 / h a power of two (the atoms +-e0 on the grid), the composed sd ~ grid_sd grid points
    h = e0min / 2.0 ** max(5, math.ceil(math.log2(e0min * grid_sd / spread)))
    below = 0
    for d in deltas:
        values = every_epsilon(event, d)
        name = min(values, key=values.get)
        eps = values[name]
        if not math.isfinite(eps):
            continue
        t = time.time()
        ratio = laplace_log_delta_lower(groups, eps, h) - math.log(d)
        below += ratio > 0
        print(f"{groups} delta={d:.0e} min={name} eps={eps:.6g} log(delta_lower/delta)={ratio:.4g} "
              f"({time.time() - t:.1f} s){'  BELOW THE TRUTH' if ratio > 0 else ''}", flush=True)
    return below


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", default="100,1000,10000")
    ap.add_argument("--e0s", default="0.001,0.01,0.1,1")
    ap.add_argument("--mixes", type=whole(0), default=0, help="random heterogeneous mixes instead (seed 9)")
    args = ap.parse_args()
    below = 0
    if args.mixes:
        rng = np.random.default_rng(9)
        for _ in range(args.mixes):
            groups: dict[float, int] = {}
            for _ in range(int(rng.integers(2, 5))):
                e0 = float(rng.integers(1, 16)) * 2.0 ** -int(rng.integers(0, 11))  # dyadic: on the grid
                groups[e0] = groups.get(e0, 0) + int(10 ** rng.uniform(0, 5))
            below += check(sorted(groups.items()))
    else:
        for k in (int(float(x)) for x in args.ks.split(",")):
            for e0 in (float(x) for x in args.e0s.split(",")):
                below += check([(e0, k)])
    print(f"certificates below the lower bound: {below}")


if __name__ == "__main__":
    main()
