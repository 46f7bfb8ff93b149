"""Reproduce the qualitative regret results of the UCB-family and elimination papers.

* Tossou & Dimitrakakis (AAAI 2016), Section 5: Bernoulli arms, 100 runs, eps in {0.1, 1}:
  scenario 1 = 2 arms (0.9, 0.6), scenario 2 = 10 arms (0.1 x 8, 0.55, 0.2). Policies: UCB1,
  Private-UCB (Mishra & Thakurta, gamma = T^-4), DP-UCB-Bound, DP-UCB, DP-UCB-Int with the public
  reproduction's interval f = ceil(1/eps) ("input eps"), and DP-UCB-Int calibrated so that its
  paper-form bound is eps at delta' = e^-10, v = 1.1 (the paper's "overall privacy" choice).
  Paper's findings: DP-UCB-Int best among the private ones with a gap to UCB that stops growing,
  Private-UCB worst.
* Sajed & Sheffet's 5-arm instance (0.75, 0.625, 0.5, 0.375, 0.25), eps in {0.1, 0.25, 0.5, 1}:
  DP-SE (beta = 1/T) and Anytime-Lazy-UCB (stand-in, alpha = 3.1). Expected: Anytime-Lazy-UCB below
  DP-SE.

Usage: python bench/reproduce_ucb_family.py [--horizon 100000] [--replicates 100] [--json out.json]
       [--only tossou|sheffet|all] [--sheffet-eps 0.1 0.25 ...]
Prints one markdown table per experiment (regret at T/100, T/10 and T with a 95% half-width, the
gap to UCB1, the certified epsilon at T (delta = 1e-6) and the paper's claim).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privbandit.engine import simulate  # noqa: E402
from privbandit.envs import Bernoulli  # noqa: E402
from privbandit.policies.dp_ucb import DPUCB, DPUCBBound, DPUCBInt  # noqa: E402
from privbandit.policies.elimination import DPSE, AnytimeLazyUCB  # noqa: E402
from privbandit.policies.private_ucb import PrivateUCB  # noqa: E402
from privbandit.policies.ucb import UCB1  # noqa: E402
from privbandit.cli_checks import positive, whole

DELTA = 1e-6
DELTA_INT = math.exp(-10)  # delta' conjectured for the paper's DP-UCB-Int calibration (ALGORITHMS.md 4.5)


def tossou_policies(eps):
    return [("UCB1", UCB1()), ("Private-UCB", PrivateUCB(eps)), ("DP-UCB-Bound", DPUCBBound(eps)),
            ("DP-UCB", DPUCB(eps)), ("DP-UCB-Int (rate=eps: f=ceil(1/eps))", DPUCBInt(rate=eps)),
            ("DP-UCB-Int (calibrated)", DPUCBInt.calibrated(eps, DELTA_INT))]


def run_one(label, policy, env, T, R, seed):
    started = time.perf_counter()
    marks = sorted({max(1, T // 100), max(1, T // 10), T})
    r = simulate(policy, env, T, R, seed=seed, ledger=False, delta=DELTA, checkpoints=marks)
    half = (r.regret_upper - r.regret_lower) / 2
    row = {"policy": label, "params": r.policy, "regret": {m: float(r.regret_mean[m - 1]) for m in marks},
           "half_width": {m: float(half[m - 1]) for m in marks},
           "certified": float(r.certified_epsilon[-1]), "certified_by": r.certified_by[-1],
           "claimed": r.claimed_epsilon, "seconds": time.perf_counter() - started}
    print(f"  {label:30s} regret(T)={row['regret'][T]:10.1f}  cert={row['certified']:.4g}  "
          f"claim={row['claimed']}  [{row['seconds']:.0f} s]", file=sys.stderr, flush=True)
    return row


def table(title, rows, T, baseline=None):
    marks = sorted({max(1, T // 100), max(1, T // 10), T})
    head = "| policy | " + " | ".join(f"regret t={m}" for m in marks)
    if baseline is not None:
        head += " | gap to UCB1 t=" + " | gap t=".join(str(m) for m in marks)
    head += " | certified eps (T) | claimed eps |"
    cols = head.count("|") - 1
    out = [f"### {title}", "", head, "|" + "---|" * cols]
    for row in rows:
        cells = [row["policy"]] + [f"{row['regret'][m]:.1f} ± {row['half_width'][m]:.1f}" for m in marks]
        if baseline is not None:
            cells += [f"{row['regret'][m] - baseline['regret'][m]:.1f}" for m in marks]
        cert = "—" if math.isinf(row["certified"]) else f"{row['certified']:.4g} ({row['certified_by']})"
        claim = "—" if row["claimed"] is None else f"{row['claimed']:.4g}"
        out.append("| " + " | ".join(cells + [cert, claim]) + " |")
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=whole(1), default=100_000)
    ap.add_argument("--replicates", type=whole(1), default=100)
    ap.add_argument("--seed", type=whole(0), default=2016)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--only", choices=["tossou", "sheffet", "all"], default="all")
    ap.add_argument("--sheffet-eps", type=positive, nargs="+", default=[0.1, 0.25, 0.5, 1.0])
    args = ap.parse_args(argv)
    T, R = args.horizon, args.replicates
    results, md = {}, []
    if args.only in ("tossou", "all"):
        for name, means in [("2 arms (0.9, 0.6)", [0.9, 0.6]), ("10 arms (0.1 x 8, 0.55, 0.2)", [0.1] * 8 + [0.55, 0.2])]:
            for eps in (1.0, 0.1):
                title = f"Tossou & Dimitrakakis, {name}, eps = {eps}, T = {T}, {R} runs"
                print(title, file=sys.stderr, flush=True)
                env = Bernoulli(means)
                rows = [run_one(label, p, env, T, R, [args.seed, len(means), int(eps * 100)])
                        for label, p in tossou_policies(eps)]
                results[title] = rows
                md.append(table(title, rows, T, baseline=rows[0]))
                print(md[-1], flush=True)
    if args.only in ("sheffet", "all"):
        env = Bernoulli([0.75, 0.625, 0.5, 0.375, 0.25])
        for eps in args.sheffet_eps:
            title = f"Sajed & Sheffet 5-arm instance, eps = {eps}, T = {T}, {R} runs"
            print(title, file=sys.stderr, flush=True)
            rows = [run_one(label, p, env, T, R, [args.seed, 5, int(eps * 100)])
                    for label, p in [("DP-SE (beta=1/T)", DPSE(eps)), ("Anytime-Lazy-UCB (alpha=3.1)", AnytimeLazyUCB(eps))]]
            results[title] = rows
            md.append(table(title, rows, T))
            print(md[-1], flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return results


if __name__ == "__main__":
    main()
