"""Throughput of the linear contextual policies through the engine (pulls per second).

A pull is one (round, replicate). Synthetic disjoint linear environment (shared for the shared-model
rows); the environment's own cost (context sampling, means) is included, as in a real run. Best of
``--repeat`` runs of the engine's round loop (``SimulationResult.seconds``: selection, environment,
update with the tree mechanisms and the ledger, 2 tracked replicates; the certificate, computed once
after the loop, is excluded). Usage: python bench/bench_contextual.py [--rounds 400] [--repeat 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privbandit.contextual import LinearContextual  # noqa: E402
from privbandit.engine import simulate  # noqa: E402
from privbandit.policies.linear import JointDPLinUCB, LinTS, LinUCB, PrivateLinTS, PrivateLinUCB  # noqa: E402
from privbandit.cli_checks import whole


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=whole(1), default=400)
    ap.add_argument("--repeat", type=whole(1), default=2)
    args = ap.parse_args()
    grid = [(5, 10, 50), (20, 50, 10), (50, 100, 2)]
    print("| d | K | replicates | policy | pulls/s |")
    print("|---|---|---|---|---|")
    for d, k, r in grid:
        for make, model in [(lambda: LinUCB(), "disjoint"), (lambda: LinTS(), "disjoint"),
                            (lambda: PrivateLinUCB(epsilon=1.0, dim=d), "disjoint"),
                            (lambda: PrivateLinTS(epsilon=1.0, dim=d), "disjoint"),
                            (lambda: JointDPLinUCB(epsilon=1.0, dim=d), "shared")]:
            pol = make()
            env = LinearContextual(d, k, noise=0.1, model=model)
            best = float("inf")
            for i in range(args.repeat):
                res = simulate(pol, env, args.rounds, r, seed=i, ledger_replicates=2)
                best = min(best, res.seconds)  # the round loop (the certificate is computed once, after)
            print(f"| {d} | {k} | {r} | {pol.name} | {args.rounds * r / best:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
