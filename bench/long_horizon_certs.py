"""Long-horizon validity of certificates (run: ``python bench/long_horizon_certs.py``): DP-UCB-Int's
variants at T = 1e8 .. 1e12 and the private graph policies at K >= 3, every degree and both relations.

For each certificate (``privbandit.budget.epsilon``) it prints the value, the accountant, the seconds it took,
and checks: finite and not NaN, and never below a rigorous lower bound on the truth --

* delta = 0: the exact pure sum is the truth (each release's largest loss has positive probability). For
  DP-UCB-Int it is bounded below without one term per release: the counts are arithmetic runs
  (``interval_plan.ReleasePlan``) and eps(c) falls with c, so a run a, a + s, ... of L releases sums to at
  least (1/s) int_a^{a + sL} eps(x) dx (closed form for c^(-v/2); in exact mode eps(c) = u/t is at least
  both c^(-v/2) / (1 + c^(1 - v/2) 2^-20), falling, and 1 / (2^20 c^(v/2 - 1) + 1), rising -- the grid's
  one-step sensitivity -- each integrated by mpmath over the run, the larger kept). Graph policies: the
  exact fraction sum of their schedule's releases.
* delta > 0: the composition is at least as bad as its largest single release (post-processing), and one
  eps0-DP Laplace or discrete Laplace release has loss +eps0 with probability >= 1/2, so
  delta(e) >= (1 - e^(e - eps0)) / 2, i.e. the truth is >= eps0 + ln(1 - 2 delta); for Gaussian-only
  schedules the exact GDP conversion at sqrt(streams) mu, evaluated in mpmath (50 digits).

Last, every DP-UCB-Int variant's grouped event release by release at T = 2e6: each release charged at least
its own eps (exact fractions where floats cannot tell), the validity behind the grouping.

``--quick``: T up to 1e10 and fewer deltas (a smoke run). Prints markdown tables (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import mpmath  # noqa: E402

from accountants.events import Gaussian, exact_pure_epsilon  # noqa: E402
from privbandit import budget  # noqa: E402
from privbandit.policies import make_policy  # noqa: E402
from privbandit.policies.base import schedule_for  # noqa: E402

DELTAS = (0.0, 1e-300, 1e-6, 0.1)
INT_VARIANTS = [
    {},  # the default: epsilon=1 calibrated, fixed interval
    {"interval": 1},
    {"interval": 10, "decay": 0.5},
    {"interval": 197, "decay": 0.1},
    {"exact": True},
    {"interval": 200, "decay": 0.2, "exact": True},
]
GRAPH_POLICIES = [("lazy_dp_ts_n", {"epsilon": 1.0}), ("dp_ucb_n", {"epsilon": 1.0}), ("gaussian_ts_n", {})]


def _int_pure_lower(sched, rounds: int) -> float:
    """A lower bound on DP-UCB-Int's exact pure sum after ``rounds`` (module docstring)."""
    m = sched._releases(rounds)
    if m == 0:
        return 0.0
    v, exact = sched.policy.v, sched.policy.exact
    if sched._fixed:
        runs = [(sched.first, sched.first, m)]
    else:
        plan = sched.plan
        plan.releases_upto(plan.count(m))
        runs = []
        for j, c, s, n in zip(plan._j, plan._c, plan._s, plan._n):
            if j > m:
                break
            runs.append((c, s, m - j + 1 if n is None else min(n, m - j + 1)))
    total = mpmath.mpf(0)
    with mpmath.workdps(30):
        k = mpmath.mpf(1) - mpmath.mpf(v) / 2
        for a, s, n in runs:
            lo, hi = mpmath.mpf(a), mpmath.mpf(a) + s * n
            if exact:  # the larger of two lower bounds of u/t: falling (u >= 2^20/c) and rising (u >= 1) in c
                falling = mpmath.quad(lambda x: x ** (-mpmath.mpf(v) / 2) / (1 + x ** k * mpmath.mpf(2) ** -20),
                                      [lo, hi]) / s
                rising = mpmath.quad(lambda x: 1 / (mpmath.mpf(2) ** 20 * x ** -k + 1), [lo - s, hi - s]) / s
                total += max(falling, rising)
            else:
                total += (hi ** k - lo ** k) / k / s
    return float(total) * (1 - 1e-9)  # (the drawn eps within ulps of c^(-v/2); quadrature error far below)


def _int_largest(sched, rounds: int) -> float:
    """The largest single release's eps (the first release in float mode; the largest u/t in exact mode
    lies among the first releases or the last, eps = 1/t rising past 2^20 pulls)."""
    m = sched._releases(rounds)
    if m == 0:
        return 0.0
    if sched._fixed:
        return float(sched._fixed_eps(1)) * (1 - 1e-12)
    js = sorted({1, 2, 3, m})
    scale, sens = sched._leaf_parts([sched.plan.count(j) for j in js])
    return float(max(sens / scale)) * (1 - 1e-12)


def _events_lower(sched, rounds: int, delta: float) -> float:
    """Lower bound from a schedule's own (compact) event: exact pure sum at delta 0; the largest release's
    one-release bound at delta > 0; exact GDP for Gaussian-only events."""
    grouped = sched.events(rounds).grouped()
    if not grouped:
        return 0.0
    if all(isinstance(leaf, Gaussian) for leaf in grouped):
        if delta == 0.0:
            return math.inf
        mu2 = sum(Fraction(leaf.sensitivity) ** 2 / Fraction(leaf.sigma) ** 2 * n for leaf, n in grouped.items())
        return _gdp_epsilon_lower(math.sqrt(float(mu2)) * (1 - 1e-12), delta)
    pure = [exact_pure_epsilon(leaf) for leaf in grouped]
    if any(p is None for p in pure):
        return 0.0
    if delta == 0.0:
        return float(sum(p * n for p, n in zip(pure, grouped.values()))) * (1 - 1e-15)
    return max(0.0, float(max(pure)) + math.log1p(-2 * delta)) * (1 - 1e-12) if delta < 0.5 else 0.0


def _gdp_epsilon_lower(mu: float, delta: float) -> float:
    """The exact mu-GDP epsilon at ``delta`` (50-digit mpmath bisection), rounded down."""
    with mpmath.workdps(50):
        m = mpmath.mpf(mu)

        def d(e):
            return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
        if d(0) <= delta:
            return 0.0
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        while d(hi) > delta:
            lo, hi = hi, 2 * hi
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if d(mid) > delta else (lo, mid)
        return float(lo) * (1 - 1e-12)


def _check(value: float, lower: float) -> str:
    if math.isnan(value) or math.isinf(value) and lower < math.inf:
        return "NaN/inf"
    return "ok" if value >= lower else "BELOW"


def dp_ucb_int(horizons, deltas) -> int:
    bad = 0
    print("\n### DP-UCB-Int at long horizons (K = 2)\n")
    print("| variant | T | releases | delta | certificate | by | lower bound | check | seconds |")
    print("|---|---:|---:|---:|---:|---|---:|---|---:|")
    for params in INT_VARIANTS:
        pol = make_policy("dp_ucb_int", **params)
        last = {}
        for T in horizons:
            sched = schedule_for(pol, T, 2)
            for delta in deltas:
                t0 = time.perf_counter()
                cert = budget.epsilon(pol, T, delta, 2)
                dt = time.perf_counter() - t0
                lower = _int_pure_lower(sched, T) if delta == 0.0 else \
                    max(0.0, _int_largest(sched, T) + math.log1p(-2 * delta))
                verdict = _check(cert.value, lower)
                if delta in last and cert.value < last[delta]:
                    verdict += ", below a shorter T"
                last[delta] = cert.value
                bad += verdict != "ok"
                print(f"| {params or 'default'} | {T:.0e} | {sched._releases(T):.4g} | {delta:g} | {cert.value:.6g} "
                      f"| {cert.by} | {lower:.6g} | {verdict} | {dt:.2f} |", flush=True)
    return bad


def graph_policies(horizons, deltas, arms=(3, 5)) -> int:
    bad = n = 0
    slowest = 0.0
    rows = {}
    for name, params in GRAPH_POLICIES:
        pol = make_policy(name, **params)
        for k in arms:
            for degree in range(k):
                for relation in ("entry", "round"):
                    structure = {"max_degree": degree}
                    for T in horizons:
                        sched = schedule_for(pol, T, k, structure, relation)
                        for delta in deltas:
                            t0 = time.perf_counter()
                            cert = budget.epsilon(pol, T, delta, k, structure=structure, relation=relation)
                            slowest = max(slowest, time.perf_counter() - t0)
                            lower = _events_lower(sched, T, delta)
                            verdict = _check(cert.value, lower) if lower < math.inf else \
                                ("ok" if math.isinf(cert.value) else "finite at delta 0 for Gaussians")
                            n += 1
                            bad += verdict != "ok"
                            key = (name, k)
                            worst = rows.get(key, (0, math.inf))
                            margin = cert.value / lower if 0 < lower < math.inf else math.inf
                            rows[key] = (worst[0] + (verdict != "ok"), min(worst[1], margin))
                            if verdict != "ok":
                                print(f"  {verdict}: {name} K={k} d={degree} {relation} T={T:.0e} delta={delta:g}: "
                                      f"{cert.value!r} vs lower {lower!r}")
    print("\n### Graph policies at K >= 3 (every max_degree, entry and round relations)\n")
    print("| policy | K | certificates | below a lower bound / NaN / inf | least certificate / lower bound |")
    print("|---|---:|---:|---:|---:|")
    per = len(horizons) * len(deltas) * 2
    for (name, k), (nbad, margin) in rows.items():
        print(f"| {name} | {k} | {per * k} | {nbad} | {margin:.4g} |")
    print(f"\n{n} graph certificates, {bad} failing; slowest {slowest:.2f} s")
    return bad


def dominance(horizon: int = 2 * 10**6) -> int:
    """Every release of every DP-UCB-Int variant charged at least its own eps by the grouped event, release by
    release at ``horizon`` (the grouped event's validity: each accountant is monotone in a release's eps);
    prints the largest charge / own ratio."""
    import numpy as np

    print(f"\n### DP-UCB-Int grouped events, release by release (T = {horizon:.0e}, K = 2)\n")
    print("| variant | releases | groups | below own eps | largest charge / own eps |")
    print("|---|---:|---:|---:|---:|")
    bad = 0
    for params in INT_VARIANTS:
        sched = schedule_for(make_policy("dp_ucb_int", **params), horizon, 2)
        m = sched._releases(horizon)
        leaves = list(sched.grouped_events(horizon).leaves())
        charges = [exact_pure_epsilon(leaf) for leaf, _ in leaves]
        charged = np.repeat(np.array([float(c) for c in charges]), [n for _, n in leaves])
        group = np.repeat(np.arange(len(leaves)), [n for _, n in leaves])
        if sched._fixed:
            counts = np.arange(1, m + 1, dtype=np.int64) * sched.first
            from privbandit.mechanisms.interval import interval_scales
            scale, sens = interval_scales(counts, sched.policy.v), 1.0 / counts.astype(float)
        else:
            scale, sens = sched._leaf_parts(sched.plan.counts(sched.plan.count(m)))
        own = sens / scale
        close = np.flatnonzero(charged < own * (1 + 2.0 ** -50))  # within float noise: decided exactly
        below = sum(charges[group[i]] < Fraction(float(sens[i])) / Fraction(float(scale[i])) for i in close)
        bad += below
        print(f"| {params or 'default'} | {m} | {len(leaves)} | {below} | {float(np.max(charged / own)):.6f} |",
              flush=True)
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="T up to 1e10, deltas 0 and 1e-6")
    parser.add_argument("--only", choices=("int", "graph", "dominance"), default=None)
    args = parser.parse_args()
    horizons = [10**8, 10**9, 10**10] + ([] if args.quick else [10**11, 10**12])
    deltas = (0.0, 1e-6) if args.quick else DELTAS
    print(f"load average {os.getloadavg()[0]:.1f}")
    bad = 0
    if args.only in (None, "int"):
        bad += dp_ucb_int(horizons, deltas)
    if args.only in (None, "graph"):
        bad += graph_policies([10**6] + horizons, deltas)
    if args.only in (None, "dominance"):
        bad += dominance()
    print(f"\n{bad} failing certificates")


if __name__ == "__main__":
    main()
