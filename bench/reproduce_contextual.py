"""Regret of the private linear contextual policies against their non-private baselines.

Synthetic linear bandits, d = 5, K = 10, T = 1e4 (issue 16 acceptance): the disjoint-arm model for
``private_lin_ucb`` / ``private_lin_ts`` at eps = 1 against ``lin_ucb`` / ``lin_ts``; the shared model
for ``joint_dp_lin_ucb`` at (1, 1e-6) (paper calibration and GDP calibration) against shared LinUCB.
Prints final regret with 95% bands (across replicates), the ratio to the baseline with a band
(ratio of the band ends), certified and realized epsilon, and seconds. Usage:

    python bench/reproduce_contextual.py [--horizon 10000] [--replicates 20]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privbandit.contextual import LinearContextual  # noqa: E402
from privbandit.engine import simulate  # noqa: E402
from privbandit.policies.linear import JointDPLinUCB, LinTS, LinUCB, PrivateLinTS, PrivateLinUCB  # noqa: E402
from privbandit.cli_checks import positive, whole


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--horizon", type=whole(1), default=10_000)
    ap.add_argument("--replicates", type=whole(1), default=20)
    ap.add_argument("--dim", type=whole(1), default=5)
    ap.add_argument("--arms", type=whole(1), default=10)
    ap.add_argument("--epsilon", type=positive, default=1.0)
    args = ap.parse_args()
    d, k, eps = args.dim, args.arms, args.epsilon
    cells = [
        ("disjoint", "lin_ucb", LinUCB(), None),
        ("disjoint", "lin_ts", LinTS(), None),
        ("disjoint", f"private_lin_ucb eps={eps:g}", PrivateLinUCB(epsilon=eps, dim=d), "lin_ucb"),
        ("disjoint", f"private_lin_ts eps={eps:g}", PrivateLinTS(epsilon=eps, dim=d), "lin_ts"),
        ("shared", "lin_ucb shared", LinUCB(model="shared"), None),
        ("shared", f"joint_dp_lin_ucb ({eps:g}, 1e-6) paper", JointDPLinUCB(epsilon=eps, dim=d), "lin_ucb shared"),
        ("shared", f"joint_dp_lin_ucb ({eps:g}, 1e-6) gdp", JointDPLinUCB(epsilon=eps, dim=d, calibration="gdp"),
         "lin_ucb shared"),
    ]
    final = {}
    print(f"d = {d}, K = {k}, T = {args.horizon}, {args.replicates} replicates; regret mean [95% band]")
    print("| model | policy | final regret | x baseline | certified eps | realized eps (max) | seconds |")
    print("|---|---|---|---|---|---|---|")
    for model, label, pol, base in cells:
        env = LinearContextual(d, k, noise=0.1, model=model)
        res = simulate(pol, env, args.horizon, args.replicates, seed=16, delta=1e-6, ledger_replicates=2)
        m, lo, hi = res.regret_mean[-1], res.regret_lower[-1], res.regret_upper[-1]
        final[label] = (m, lo, hi)
        ratio = ""
        if base is not None:
            bm, blo, bhi = final[base]
            ratio = f"{m / bm:.1f} [{lo / bhi:.1f}, {hi / blo:.1f}]"
        cert = res.certified_epsilon[-1]
        realized = "" if res.realized_epsilon is None else f"{np.nanmax(res.realized_epsilon[-1]):.4g}"
        print(f"| {model} | {label} | {m:.1f} [{lo:.1f}, {hi:.1f}] | {ratio} | "
              f"{'' if not np.isfinite(cert) else f'{cert:.4g}'} | {realized} | {res.seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
