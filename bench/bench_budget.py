"""Budget and inversion latency for horizons 1e3 to 1e7 (privbandit.budget), one run.

For each policy (5 arms, delta = 1e-6): the time of ``budget.epsilon`` with the closed-form
accountants (pure, KOV heterogeneous, advanced, GDP), with every accountant but PLD, and with all of
them; and the time of one inversion (Modified TS: ``ts_frontier`` for one b; the others:
``invert(..., solve_for="epsilon")`` with the accountants but PLD).

Usage: python bench/bench_budget.py [--max-exponent 7]
"""

from __future__ import annotations

import argparse
import time

from accountants.advanced import AdvancedCompositionAccountant
from accountants.best import default_accountants
from accountants.gdp import GDPAccountant
from accountants.kov import KOVHeterogeneousAccountant
from accountants.pure import PureAccountant
from privbandit import budget
from privbandit.policies import DPSE, DPUCBInt, GaussianTS, LazyDPTS, PrivateTS, PrivateUCB
from privbandit.cli_checks import whole

K, DELTA = 5, 1e-6
CLOSED = [PureAccountant, KOVHeterogeneousAccountant, AdvancedCompositionAccountant, GDPAccountant]
NO_PLD = [f for f in default_accountants() if f.name != "pld"]
POLICIES = [
    ("gaussian_ts b=10 c=400", GaussianTS(b=10, c=400.0), None),
    ("private_ucb eps=1", PrivateUCB(epsilon=1.0), PrivateUCB),
    ("private_ts eps=1", PrivateTS(epsilon=1.0), PrivateTS),
    ("lazy_dp_ts eps=1", LazyDPTS(epsilon=1.0), LazyDPTS),
    ("dp_se eps=1", DPSE(epsilon=1.0), DPSE),
    ("dp_ucb_int rate=1 v=1.1", DPUCBInt(rate=1.0, v=1.1), DPUCBInt),
]


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-exponent", type=whole(1), default=7)
    args = ap.parse_args()
    print("| policy | horizon | eps (closed form) | ms | eps (all but PLD) | ms | eps (all) | ms | inversion ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, pol, cls in POLICIES:
        for e in range(3, args.max_exponent + 1):
            T = 10**e
            sched_eps = lambda accs: pol.privacy_schedule(T, K).epsilon(T, DELTA, accs)
            c_closed, t_closed = timed(lambda: sched_eps(CLOSED))
            c_fast, t_fast = timed(lambda: sched_eps(NO_PLD))
            if T <= 10**6:
                c_all, t_all = timed(lambda: sched_eps(None))
                all_cells = f"{c_all.value:.4g} | {t_all:.0f}"
            else:
                all_cells = "skipped | -"
            if cls is None:
                _, t_inv = timed(lambda: budget.ts_frontier(5.0, T, K, [10]))
            elif T > 10**5:
                t_inv = None
            elif cls is DPUCBInt:  # invert the release interval itself
                _, t_inv = timed(lambda: budget.invert(cls, 1.0, T, solve_for="interval", bounds=(1, 10**5),
                                                       n_arms=K, delta=DELTA, accountants=NO_PLD, integer=True,
                                                       v=1.1))
            else:
                _, t_inv = timed(lambda: budget.invert(cls, 1.0, T, solve_for="epsilon", bounds=(0.5, 64.0),
                                                       n_arms=K, delta=DELTA, accountants=NO_PLD))
            print(f"| {name} | {T:.0e} | {c_closed.value:.4g} | {t_closed:.1f} | {c_fast.value:.4g} | "
                  f"{t_fast:.0f} | {all_cells} | {'-' if t_inv is None else f'{t_inv:.0f}'} |")


if __name__ == "__main__":
    main()
