"""Reproduce the TS-family experiments of Hu & Hegde (UAI 2022) and Ou, Cummings & Avella Medina
(arXiv 2407.14879) with privbandit's policies; results feed docs/policies_ts.md.

Run once: ``python bench/reproduce_ts_family.py [--horizon 100000] [--replicates 20] [--out FILE]``.
Prints Markdown tables and writes the raw numbers as JSON (default bench/results_ts_family.json).

1. Hu & Hegde's setting: Bernoulli arms [0.75, 0.625, 0.5, 0.375, 0.25], eps in {0.1, 0.25, 0.5, 1,
   500}: Lazy-DP-TS, DP-SE, Anytime-Lazy-UCB (privbandit.policies.elimination), Private-TS; DP-TS at
   eps in {1, 500} (the paper omits it at eps <= 1 because it is worse).
2. Ou et al.'s settings: the same Bernoulli arms and TruncatedExponential rates [0.1, 1, 2, 5, 10];
   GaussianTS(b, c) on the frontier c = T/(mu^2 (b+1)) for mu in {1, 5, 10}, plus standard TS.
3. GaussianTS's GDP (certificate) / RDP (Thm 8) / advanced-composition (Thm 7 + Cor. 1) routes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


from privbandit.engine import simulate
from privbandit.envs import Bernoulli, TruncatedExponential
from privbandit.policies.gaussian_ts import GaussianTS
from privbandit.policies.hu_hegde import DPTS, LazyDPTS
from privbandit.policies.private_ts import PrivateTS
from privbandit.cli_checks import whole

ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]
RATES = [0.1, 1, 2, 5, 10]
EPSILONS = [0.1, 0.25, 0.5, 1.0, 500.0]
MUS = [1.0, 5.0, 10.0]
B_GRID = [1, 10, 100, 1000, 3000, 10000]
DELTA = 1e-5


def _elimination():
    try:
        from privbandit.policies.elimination import DPSE, AnytimeLazyUCB
    except ImportError:  # not landed yet
        return []
    return [("DP-SE", DPSE), ("Anytime-Lazy-UCB", AnytimeLazyUCB)]


def run(policy, env, T, R, seed):
    t0 = time.perf_counter()
    r = simulate(policy, env, T, R, seed=seed, delta=DELTA, checkpoints=[T], ledger=False)
    return {"regret": float(r.regret_mean[-1]), "half_width": float(r.regret_upper[-1] - r.regret_mean[-1]),
            "certified_eps": float(r.certified_epsilon[-1]), "by": r.certified_by[-1],
            "claimed_eps": None if r.claimed_epsilon is None else float(r.claimed_epsilon),
            "seconds": time.perf_counter() - t0}


def hu_hegde(T, R, log):
    env = Bernoulli(ARMS)
    rows = []
    for eps in EPSILONS:
        candidates = [("Lazy-DP-TS", LazyDPTS(eps))]
        candidates += [(name, cls(eps)) for name, cls in _elimination()]
        candidates.append(("Private-TS", PrivateTS(eps)))
        if eps >= 1:
            candidates.append(("DP-TS", DPTS(eps)))
        for name, pol in candidates:
            res = run(pol, env, T, R, seed=[1, int(eps * 100)])
            res.update(policy=name, epsilon=eps)
            rows.append(res)
            log(f"  eps={eps:g} {name}: regret {res['regret']:.1f} +- {res['half_width']:.1f}, "
                f"certified {res['certified_eps']:.4g} ({res['by']}), {res['seconds']:.0f}s")
    return rows


def ou(T, R, log):
    rows = []
    for env_name, env in [("Bernoulli", Bernoulli(ARMS)), ("TruncExp", TruncatedExponential(RATES))]:
        res = run(GaussianTS(), env, T, R, seed=[2, 0])
        sched = GaussianTS().privacy_schedule(T, env.n_arms)
        res.update(env=env_name, mu_target=None, b=0, c=1.0, mu=sched.mu(T))
        rows.append(res)
        log(f"  {env_name} standard TS: regret {res['regret']:.1f}, mu {res['mu']:.1f}")
        for mu in MUS:
            for b in B_GRID:
                if env.n_arms * b > T:
                    continue
                c = T / (mu * mu * (b + 1))
                pol = GaussianTS(b=b, c=c)
                res = run(pol, env, T, R, seed=[2, b, int(mu)])
                res.update(env=env_name, mu_target=mu, b=b, c=c, mu=pol.privacy_schedule(T, env.n_arms).mu(T))
                rows.append(res)
                log(f"  {env_name} mu={mu:g} b={b} c={c:.4g}: regret {res['regret']:.1f} +- "
                    f"{res['half_width']:.1f}, certified mu {res['mu']:.3f}")
    return rows


def routes(T):
    rows = []
    for mu in MUS:
        for b in B_GRID:
            c = T / (mu * mu * (b + 1))
            pol = GaussianTS(b=b, c=c)
            sched = pol.privacy_schedule(T, 5)
            rows.append({"mu_target": mu, "b": b, "c": c, "certified": sched.epsilon(T, DELTA).value,
                         "gdp_claim": pol.claimed_epsilon(T, 5, DELTA), "rdp": pol.rdp_route_epsilon(T, DELTA),
                         "advanced": pol.advanced_route_epsilon(T, DELTA)})
    pol = GaussianTS()
    rows.append({"mu_target": None, "b": 0, "c": 1.0, "certified": pol.privacy_schedule(T, 5).epsilon(T, DELTA).value,
                 "gdp_claim": pol.claimed_epsilon(T, 5, DELTA), "rdp": pol.rdp_route_epsilon(T, DELTA),
                 "advanced": pol.advanced_route_epsilon(T, DELTA)})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=whole(1), default=100_000)
    ap.add_argument("--replicates", type=whole(1), default=20)
    ap.add_argument("--out", default="bench/results_ts_family.json")
    ap.add_argument("--only", choices=["hu_hegde", "ou", "routes"], default=None)
    args = ap.parse_args(argv)
    T, R = args.horizon, args.replicates

    def log(msg):
        print(msg, flush=True)

    out = {"horizon": T, "replicates": R, "delta": DELTA}
    started = time.perf_counter()
    if args.only in (None, "routes"):
        log("GaussianTS privacy routes")
        out["routes"] = routes(T)
        for row in out["routes"]:
            log(f"  mu={row['mu_target']} b={row['b']}: certified {row['certified']:.4g} claim "
                f"{row['gdp_claim']:.4g} rdp {row['rdp']:.4g} advanced {row['advanced']:.4g}")
    if args.only in (None, "ou"):
        log("Ou et al. settings")
        out["ou"] = ou(T, R, log)
    if args.only in (None, "hu_hegde"):
        log("Hu & Hegde setting")
        out["hu_hegde"] = hu_hegde(T, R, log)
    out["seconds"] = time.perf_counter() - started
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    log(f"done in {out['seconds']:.0f}s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
