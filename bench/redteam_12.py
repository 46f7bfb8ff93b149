"""docs/accountants.md, session 12 (s12/acc): certificates and inversions against per-record truths
derived from the papers (tests/accountants/_paper_refs.py), not from the policies' schedules.

* ``certificates``: the live certificates (``schedule.live_certificates``) of the graph-feedback
  (DP-UCB-N, Lazy-DP-TS-N, Gaussian-TS-N; "entry" and "round" on the complete graph), adversarial
  (DP-EXP3-Lap, private EXP3, batched private EXP3) and contextual (private LinUCB / LinTS, joint-DP
  LinUCB) policies, at 6 checkpoints up to each horizon, 3 epsilons and 8 deltas.
* ``inversions``: affordable_horizon, ts_frontier, invert (per-release epsilon; Gaussian TS's c) and
  the Gaussian noise-scale inversion at targets eps 1e-6..50, delta 1e-300..0.5, horizons to 1e15:
  the answer's forward certificate AND the reference must stay within the target.
* ``dp_ucb_int``: DP-UCB-Int's v (invert) and its epsilon-calibrated interval, against the first
  record's first 150 releases (a sub-multiset: a lower bound on the truth).

A reference value ``log(delta_truth_lower / delta) > 0`` is a certificate below the truth. Prints the
counts and the closest case per family.

Usage (from the repository root; ~7, ~6 and ~11 minutes on the shared 2-core machine):
    PYTHONPATH=. python bench/redteam_12.py certificates --horizons 10,1000,100000,10000000
    PYTHONPATH=. python bench/redteam_12.py inversions
    PYTHONPATH=. python bench/redteam_12.py dp_ucb_int
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict

import mpmath
import numpy as np

from accountants import gdp_conversion
from privbandit import budget
from privbandit.budget import UnreachableTargetError
from privbandit.policies import (DPEXP3Lap, DPUCBInt, DPUCBN, BatchedPrivateEXP3, GaussianTSN, JointDPLinUCB,
                                 LazyDPTSN, PrivateEXP3, PrivateLinTS, PrivateLinUCB)
from tests.accountants import _paper_refs as R

DELTAS = [0.5, 1e-1, 1e-3, 1e-6, 1e-10, 1e-30, 1e-100, 1e-300]


class Tally:
    """Counts answers and the two kinds of overspend; keeps the closest margin per family."""

    def __init__(self) -> None:
        self.counts = defaultdict(int)
        self.closest = defaultdict(lambda: -math.inf)
        self.flags = []

    def answer(self, family: str, info, forward_ok: bool, log_margin: float) -> None:
        self.counts["answers"] += 1
        self.closest[family] = max(self.closest[family], log_margin)
        if not forward_ok:
            self.counts["forward above target"] += 1
            self.flags.append(("forward", family, info))
        if log_margin > 0:
            self.counts["below the truth"] += 1
            self.flags.append(("truth", family, info, log_margin))

    def attempt(self, family: str, info, fn) -> None:
        self.counts["cases"] += 1
        try:
            fn()
        except UnreachableTargetError:
            self.counts["unreachable (named)"] += 1
        except ValueError as exc:
            self.counts["ValueError"] += 1
            self.flags.append(("ValueError", family, info, str(exc)[:160]))
        except Exception as exc:  # noqa: BLE001 - a traceback is what this sweep looks for
            self.counts["traceback"] += 1
            self.flags.append(("traceback", family, info, repr(exc)[:200]))

    def report(self) -> None:
        print(dict(self.counts))
        for family in sorted(self.closest):
            print(f"  {family:44s} closest log(delta_truth / delta) {self.closest[family]:.3g}")
        for flag in self.flags[:40]:
            print("  FLAG", flag)


def certificates(horizons: list[int], n_arms: int = 5, only: str | None = None) -> Tally:
    tally = Tally()

    def check(family, sched, horizon, delta, truth):
        if only and not any(part in family for part in only.split(",")):
            return
        rounds = np.unique(np.geomspace(1, horizon, 6).astype(np.int64))
        values, _ = sched.live_certificates(rounds, delta)
        for t, v in zip(rounds, values):
            if math.isfinite(v):
                tally.answer(family, (horizon, int(t), delta, float(v)), True, truth(int(t), float(v)) - math.log(delta))

    def hybrid(t, v, eps, copies):
        return max([R.laplace_multiset_log_delta_lower({e: n * copies for e, n in c.items()}, v)
                    for c in R.hybrid_candidates(t, eps)] or [-math.inf])

    K = n_arms
    for T in horizons:
        t0 = time.time()
        for eps in (0.05, 1.0, 8.0):
            for delta in DELTAS:
                one = lambda t, v, eps=eps: R.single_laplace_log_delta(1.0 / eps, v)  # noqa: E731
                check("dp_exp3_lap", DPEXP3Lap(eps).privacy_schedule(T, K), T, delta, one)
                check("private_exp3", PrivateEXP3(eps).privacy_schedule(T, K), T, delta, one)
                bp = BatchedPrivateEXP3(eps)
                tau = bp.tau_for(T)  # a record is released at its batch's end
                check("batched_private_exp3", bp.privacy_schedule(T, K), T, delta,
                      lambda t, v, tau=tau, one=one: one(t, v) if t >= tau else -math.inf)
                lz = LazyDPTSN(eps)
                check("lazy_dp_ts_n/entry", lz.privacy_schedule(T, K), T, delta, one)
                check("lazy_dp_ts_n/round", lz.privacy_schedule(T, K, relation="round", max_degree=K - 1), T, delta,
                      lambda t, v, eps=eps: R.laplace_multiset_log_delta_lower({eps: K}, v))
                ub = DPUCBN(eps)
                check("dp_ucb_n/entry", ub.privacy_schedule(T, K), T, delta,
                      lambda t, v, eps=eps: hybrid(t, v, eps, 1))
                check("dp_ucb_n/round", ub.privacy_schedule(T, K, relation="round", max_degree=K - 1), T, delta,
                      lambda t, v, eps=eps: hybrid(t, v, eps, K))
                for dim, bound in ((2, 1.0), (5, 3.0)):
                    for cls in (PrivateLinUCB, PrivateLinTS):
                        p = cls(eps, dim=dim, bound=bound)
                        levels = int(T).bit_length()
                        # session 13: the largest of three achievable pairs' curves (s12: the first only)
                        check(p.name, p.privacy_schedule(T, K), T, delta,
                              lambda t, v, p=p, levels=levels, dim=dim: max(
                                  R.laplace_multiset_log_delta_lower(g, v)
                                  for g in R.mishra_candidates(min(t, T), p.eps0, levels, dim)))
            for d0 in (1e-6, 1e-2):
                for cal in ("paper", "gdp"):
                    for dim, bound in ((2, 1.0), (5, 3.0)):
                        p = JointDPLinUCB(eps, d0, dim=dim, bound=bound, calibration=cal)
                        sigma = p.sigma(T)
                        for delta in DELTAS:
                            check("joint_dp_lin_ucb", p.privacy_schedule(T, K), T, delta,
                                  lambda t, v, sigma=sigma, bound=bound: R.gdp_log_delta(
                                      R.joint_dp_mu2(min(t, T), bound, sigma), v))
        for b, c in ((0, 1.0), (1, 1.0), (3, 50.0)):
            if T < K * b:
                continue
            g = GaussianTSN(b, c)
            truth = lambda t, v, b=b, c=c: R.gdp_log_delta(R.gaussian_ts_mu2(t, K, b, c), v)  # noqa: E731
            for delta in DELTAS:
                check("gaussian_ts_n/entry", g.privacy_schedule(T, K), T, delta, truth)
                # session 13: a star of degree K - 1 (s12 kept only the entry run's releases, ~1/K of them)
                check("gaussian_ts_n/round", g.privacy_schedule(T, K, relation="round", max_degree=K - 1), T, delta,
                      lambda t, v, b=b, c=c: max(truth(t, v), R.gdp_log_delta(R.gaussian_ts_round_star_mu2(t, K, b, c), v)))
        print(f"horizon {T}: {dict(tally.counts)} ({time.time() - t0:.0f} s)", flush=True)
    return tally


def inversions(n_arms: int = 4, max_horizon: int = 10**15) -> Tally:
    tally = Tally()
    K = n_arms
    for target in (1e-6, 1e-3, 0.1, 1.0, 10.0, 50.0):
        for delta in (1e-300, 1e-100, 1e-10, 1e-6, 1e-3, 0.1, 0.5):
            log_d = math.log(delta)
            for b, c in ((0, 1.0), (2, 100.0), (1, 1e6)):
                def f(b=b, c=c):
                    h = budget.affordable_horizon("gaussian_ts", target, K, delta=delta, max_horizon=max_horizon, b=b, c=c)
                    fwd = budget.epsilon("gaussian_ts", h, delta, K, b=b, c=c).value
                    tally.answer("affordable_horizon gaussian_ts", (target, delta, b, c, h), fwd <= target,
                                 R.gdp_log_delta(R.gaussian_ts_mu2(h, K, b, c), target) - log_d)
                tally.attempt("affordable_horizon gaussian_ts", (target, delta, b, c), f)
            for name, kw in (("lazy_dp_ts", {}), ("dp_exp3_lap", {}), ("lazy_dp_ts_n", {"structure": {"max_degree": K - 1}})):
                for e in (target * 0.5, target, target * 2):
                    if e > 700:
                        continue

                    def f(name=name, kw=kw, e=e):
                        h = budget.affordable_horizon(name, target, K, delta=delta, max_horizon=max_horizon, epsilon=e, **kw)
                        fwd = budget.epsilon(name, h, delta, K, epsilon=e, **kw).value
                        tally.answer("affordable_horizon " + name, (target, delta, e, h), fwd <= target,
                                     R.single_laplace_log_delta(1.0 / e, target) - log_d)
                    tally.attempt("affordable_horizon " + name, (target, delta, e), f)
            for e in (target * 0.3, target):
                if e > 300:
                    continue

                def f(e=e):
                    kw = {"structure": {"max_degree": K - 1}}
                    h = budget.affordable_horizon("dp_ucb_n", target, K, delta=delta, max_horizon=max_horizon, epsilon=e, **kw)
                    fwd = budget.epsilon("dp_ucb_n", h, delta, K, epsilon=e, **kw).value
                    ref = max(R.laplace_multiset_log_delta_lower(c, target) for c in R.hybrid_candidates(h, e))
                    tally.answer("affordable_horizon dp_ucb_n", (target, delta, e, h), fwd <= target, ref - log_d)
                tally.attempt("affordable_horizon dp_ucb_n", (target, delta, e), f)
            for T in (10, 10**6, 10**15):
                def f(T=T):
                    for inv in budget.ts_frontier(target, T, K, [0, 1, T // (2 * K)], delta=delta):
                        b, c = inv.policy.b, inv.policy.c
                        tally.answer("ts_frontier", (target, delta, T, b, c), inv.certificate <= target,
                                     R.gdp_log_delta(R.gaussian_ts_mu2(T, K, b, c), target) - log_d)
                tally.attempt("ts_frontier", (target, delta, T), f)

            def f():
                mu = gdp_conversion.mu_for_epsilon_delta(target, delta)
                tally.answer("mu_for_epsilon_delta", (target, delta, mu),
                             gdp_conversion.epsilon_for_delta(mu, delta) <= target,
                             R.gdp_log_delta(mpmath.mpf(mu) ** 2, target) - log_d)
            tally.attempt("mu_for_epsilon_delta", (target, delta), f)
            for name in ("dp_exp3_lap", "lazy_dp_ts"):
                def f(name=name):
                    inv = budget.invert(name, target, 10**12, solve_for="epsilon", bounds=(1e-9, 700.0), n_arms=K, delta=delta)
                    tally.answer("invert epsilon " + name, (target, delta, inv.value), inv.certificate <= target,
                                 R.single_laplace_log_delta(1.0 / inv.value, target) - log_d)
                tally.attempt("invert epsilon " + name, (target, delta), f)
            for T in (100, 10**12):
                def f(T=T):
                    inv = budget.invert("gaussian_ts", target, T, solve_for="c", bounds=(1e-100, 1e100), n_arms=K,
                                        delta=delta, b=1)
                    tally.answer("invert c gaussian_ts", (target, delta, T, inv.value), inv.certificate <= target,
                                 R.gdp_log_delta(R.gaussian_ts_mu2(T, K, 1, inv.value), target) - log_d)
                tally.attempt("invert c gaussian_ts", (target, delta, T), f)
        print(f"target {target}: {dict(tally.counts)}", flush=True)
    return tally


def dp_ucb_int(n_arms: int = 3, cap: int = 150) -> Tally:
    tally = Tally()
    K = n_arms

    def truth(horizon, f, v, eps):
        # the first record of an arm pulled every round after the round robin: in its releases k = 1, 2, ...
        # at pull counts k f, Lap((k f)^(v/2 - 1)) on a mean of sensitivity 1/(k f): eps_k = (k f)^(-v/2)
        # (ALGORITHMS.md 4.4); the first ``cap`` of them, a lower bound
        m = min((horizon - (K - 1) * f) // f, cap)
        groups = defaultdict(int)
        for k in range(1, m + 1):
            groups[(k * f) ** (-v / 2.0)] += 1
        return R.laplace_multiset_log_delta_lower(dict(groups), eps) if m > 0 else -math.inf

    for f in (1, 30):
        for T in (10**3, 10**6, 10**12):
            for target in (0.3, 3.0, 30.0):
                for delta in (1e-300, 1e-10, 1e-3):
                    def run(f=f, T=T, target=target, delta=delta):
                        inv = budget.invert("dp_ucb_int", target, T, solve_for="v", bounds=(1.0001, 1.9999), n_arms=K,
                                            delta=delta, interval=f)
                        fwd = budget.epsilon(DPUCBInt(v=inv.value, interval=f), T, delta, K).value
                        tally.answer("invert v dp_ucb_int", (f, T, target, delta, inv.value), fwd <= target,
                                     truth(T, f, inv.value, target) - math.log(delta))
                    tally.attempt("invert v dp_ucb_int", (f, T, target, delta), run)
    for target in (1e-6, 1e-3, 0.1, 1.0, 10.0, 50.0):
        for delta in (1e-300, 1e-10, 1e-3, 0.5):
            for v in (1.05, 1.5, 1.95):
                def run(target=target, delta=delta, v=v):
                    p = DPUCBInt(epsilon=target, v=v, delta=delta)
                    for T in (10**3, 10**9, 10**15):
                        if T >= K * p.interval:
                            fwd = budget.epsilon(p, T, delta, K).value
                            tally.answer("DPUCBInt(epsilon)", (target, delta, v, T, p.interval), fwd <= target,
                                         truth(T, p.interval, v, target) - math.log(delta))
                tally.attempt("DPUCBInt(epsilon)", (target, delta, v), run)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("certificates", "inversions", "dp_ucb_int"))
    parser.add_argument("--horizons", default="10,1000,100000,10000000",
                        help="comma-separated horizons for 'certificates'")
    parser.add_argument("--only", default=None, help="'certificates': comma-separated family name parts")
    args = parser.parse_args()
    t0 = time.time()
    if args.part == "certificates":
        tally = certificates([int(float(x)) for x in args.horizons.split(",")], only=args.only)
    elif args.part == "inversions":
        tally = inversions()
    else:
        tally = dp_ucb_int()
    tally.report()
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
