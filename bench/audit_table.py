"""Audit every private policy available: empirical lower bounds beside the certificate.

Usage::

    python bench/audit_table.py                 # print the table
    python bench/audit_table.py --write         # also rewrite the table in docs/audit.md and the figures
    python bench/audit_table.py --runs 2000000  # thorough sizes

For every private policy in ``privbandit.policies`` (registered or not; ``privbandit.audit.discover``) it runs, at each listed
configuration (or the default constructor when none is listed): the ledger audit (tight and cheap) and
the black-box audit on the actions and, when the policy's releases can be observed, on the trace. Two
mechanism-level controls (Laplace, Gaussian) head the table. Rerun it whenever a policy lands.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from privbandit.audit import (Audit, Budget, Neighbours, gaussian_release, laplace_release,  # noqa: E402
                              ledger_audit)
from privbandit.audit.discover import default_constructible, private_policies  # noqa: E402
from privbandit.audit.runner import auto_trace  # noqa: E402
from privbandit.envs import Bernoulli  # noqa: E402
from privbandit.cli_checks import positive, whole

CONFIGS = {
    # the configurations of AUDIT.md's prototype, with the pre-pulls inside the horizon
    "gaussian_ts": [dict(b=0, c=1.0), dict(b=4, c=8.0), dict(b=19, c=4.0)],
    # At eps = 1 and T = 20 one reward barely moves these (DP-TS's and Lazy-DP-TS's optimism shift
    # swamps the data; DP-SE's first epoch outlasts T), so the audit has no power there. Larger eps,
    # and for DP-SE a horizon past its first epoch with a witness pair at its elimination threshold,
    # give positive lower bounds to hold against the claims.
    "dp_ts": [dict(epsilon=1.0), dict(epsilon=50.0)],
    "lazy_dp_ts": [dict(epsilon=1.0), dict(epsilon=20.0)],
    "dp_se": [dict(epsilon=1.0), dict(epsilon=5.0, beta=0.5)],
}


def dp_se_threshold_pair(policy, k: int = 2):
    """Tapes whose arm gap sits exactly at DP-SE's first elimination threshold 2 (h_1 + c_1)
    (ALGORITHMS.md 7.1), differing in arm 0's first reward: the one noisy decision then hinges on it."""
    eps, beta = policy.epsilon, policy.beta
    r = math.ceil(max(32 * math.log(8 * k / beta) / 0.25, 8 * math.log(4 * k / beta) / (eps * 0.5)) + 1)
    gap = 2 * (math.sqrt(math.log(8 * k / beta) / (2 * r)) + math.log(4 * k / beta) / (eps * r))
    horizon = k * r + 10
    tape = np.full((k, horizon), 0.5)
    tape[1] = 0.5 + gap
    tape_prime = tape.copy()
    tape_prime[0, 0] = 1.0
    return horizon, Neighbours.pair(tape, tape_prime, label="DP-SE elimination threshold")
START, END = "<!-- audit-table:start -->", "<!-- audit-table:end -->"


def _has_trace(policy, k, horizon):
    run = policy.start(k, 1, horizon, np.random.default_rng(0), ledger=None)
    try:
        auto_trace(run)
        return True
    except ValueError:
        return False


def _fmt(x):
    return "inf" if not math.isfinite(x) else f"{x:.3f}"


def policy_rows(runs: int, seed: int, figures: str | None, seconds: float):
    rows = []
    for name, cls in private_policies().items():
        configs = CONFIGS.get(name)
        if configs is None:
            if not default_constructible(cls):
                print(f"skipping {name}: no default configuration", file=sys.stderr)
                continue
            configs = [{}]
        for params in configs:
            policy = cls(**params)
            k = 2
            horizon = k * int(getattr(policy, "b", 0) or 0) + 20
            pair = None
            if name == "dp_se" and getattr(policy, "beta", None) is not None:
                horizon, pair = dp_se_threshold_pair(policy, k)
            t0 = time.perf_counter()
            env = Bernoulli([0.4, 0.6])
            led_t = ledger_audit(policy, env, horizon, 20, seeds=(seed,), tight=True)
            led_c = ledger_audit(policy, env, horizon, 1000, seeds=(seed + 1,), tight=False)
            ledger = "pass" if led_t.passed and led_c.passed else "FAIL"
            observes = ["actions"] + (["trace"] if _has_trace(policy, k, horizon) else [])
            for i, observe in enumerate(observes):
                search = pair or Neighbours.search(arm_rest=(0.5, 1.0), others=(0.0, 0.5, 1.0), pilot_runs=10_000)
                res = Audit.policy(policy, horizon, k, observe=observe, neighbours=search,
                                   alpha=0.05 / len(observes), budget=Budget(runs, seconds=seconds),
                                   seed=[seed, i]).run()
                mu_row = next((r for r in res.rows if r.certified.certificate.startswith("mu")), None)
                eps_row = next((r for r in res.rows if r.certified.certificate.startswith("eps")), None)
                rows.append(dict(
                    target=repr(policy), T=horizon, observation=observe,
                    claim_mu=_fmt(mu_row.claim_value) if mu_row else "-",
                    mu_lb=_fmt(mu_row.certified.lower_bound) if mu_row else "-",
                    claim_eps=_fmt(eps_row.claim_value) if eps_row else "-",
                    eps_lb=_fmt(eps_row.certified.lower_bound) if eps_row else "-",
                    n=res.rows[0].certified.n_num, ledger=ledger, verdict=res.verdict,
                    seconds=f"{time.perf_counter() - t0:.1f}"))
                print(rows[-1], file=sys.stderr)
                if figures and name == "gaussian_ts" and params.get("b") == 4:
                    res.plot(os.path.join(figures, f"audit_gaussian_ts_{observe}.png"))
    return rows


def mechanism_rows(seed: int, figures: str | None):
    rows = []
    mech, claim = laplace_release(1.0)
    t0 = time.perf_counter()
    res = Audit.mechanism(mech, 0.0, 1.0, claim, budget=Budget(1_000_000, split=(0.0, 0.2, 0.8)), seed=seed).run()
    rows.append(dict(target="Laplace release, eps = 1 (NoiseSampler)", T="-", observation="value",
                     claim_mu="-", mu_lb="-", claim_eps="1.000", eps_lb=_fmt(res.eps_lb),
                     n=res.rows[0].certified.n_num, ledger="-", verdict=res.verdict,
                     seconds=f"{time.perf_counter() - t0:.1f}"))
    if figures:
        res.plot(os.path.join(figures, "audit_laplace.png"))
    mech, claim = gaussian_release(1.0)
    t0 = time.perf_counter()
    res = Audit.mechanism(mech, 0.0, 1.0, claim, budget=Budget(1_000_000, split=(0.0, 0.2, 0.8)), seed=seed).run()
    rows.append(dict(target="Gaussian release, sigma = 1 (NoiseSampler)", T="-", observation="value",
                     claim_mu="1.000", mu_lb=_fmt(res.mu_lb), claim_eps=_fmt(res.rows[1].claim_value),
                     eps_lb=_fmt(res.eps_lb), n=res.rows[0].certified.n_num, ledger="-", verdict=res.verdict,
                     seconds=f"{time.perf_counter() - t0:.1f}"))
    return rows


def markdown(rows) -> str:
    head = ["target", "T", "observation", "claim mu", "mu_lb", "claim eps@1e-5", "eps_lb@1e-5", "test runs/side",
            "ledger audit", "verdict", "seconds"]
    keys = ["target", "T", "observation", "claim_mu", "mu_lb", "claim_eps", "eps_lb", "n", "ledger", "verdict",
            "seconds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[k]) for k in keys) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=whole(1), default=200_000, help="runs per side per policy audit (default 2e5)")
    ap.add_argument("--seed", type=whole(0), default=0)
    ap.add_argument("--seconds", type=positive, default=30.0, help="wall-clock cap per black-box audit (default 30)")
    ap.add_argument("--write", action="store_true", help="rewrite the table in docs/audit.md and the figures")
    args = ap.parse_args(argv)
    figures = os.path.join(ROOT, "docs", "figures") if args.write else None
    if figures:
        os.makedirs(figures, exist_ok=True)
    started = time.perf_counter()
    rows = mechanism_rows(args.seed, figures) + policy_rows(args.runs, args.seed, figures, args.seconds)
    covered = list(private_policies())
    table = markdown(rows)
    stamp = (f"Generated by `python bench/audit_table.py --write` ({args.runs} runs per side per policy audit, "
             f"capped at {args.seconds:g} s per audit, seed {args.seed}, {time.perf_counter() - started:.0f} s in all "
             f"on the shared 2-core machine). Private policies present at the time: {', '.join(covered) or 'none'}.")
    print(table)
    print()
    print(stamp)
    if args.write:
        path = os.path.join(ROOT, "docs", "audit.md")
        text = open(path).read()
        block = f"{START}\n{stamp}\n\n{table}\n{END}"
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda m: block, text, flags=re.S)
        with open(path, "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
