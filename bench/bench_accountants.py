"""Benchmark of the accountant layer (run: ``python bench/bench_accountants.py``).

Reports, in one run:

1. the per-event cost of composing 1e6 events, one ``compose`` call each, into every additive
   accountant (Laplace with a fixed scale);
2. time and epsilon at delta = 1e-6 of every accountant, and of dp-accounting's own
   ``PLDAccountant`` and ``RdpAccountant``, for
   (a) 1e5 identical Laplace(scale=100), (b) 1000 heterogeneous Laplace with eps_i = i^-0.6,
   (c) 1e5 Gaussians with sigma = 300.

Prints markdown tables (pasted into docs/benchmarks.md, section "Accountants").
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import dp_accounting  # noqa: E402
from dp_accounting.pld import PLDAccountant as GooglePLD  # noqa: E402
from dp_accounting.rdp import RdpAccountant as GoogleRDP  # noqa: E402

from accountants import (  # noqa: E402
    AdvancedCompositionAccountant,
    Composed,
    GDPAccountant,
    Gaussian,
    KOVHeterogeneousAccountant,
    Laplace,
    OptimalHomogeneousAccountant,
    PLDAccountant,
    PureAccountant,
    RDPAccountant,
    SelfComposed,
    UnsupportedEventError,
    to_dp_accounting,
)

DELTA = 1e-6
N_LOOP = 1_000_000
ADDITIVE = [PureAccountant, GDPAccountant, AdvancedCompositionAccountant, KOVHeterogeneousAccountant,
            RDPAccountant]
ALL = ADDITIVE[:2] + [AdvancedCompositionAccountant, KOVHeterogeneousAccountant,
                      OptimalHomogeneousAccountant, RDPAccountant, PLDAccountant]


def per_event_cost() -> list[tuple[str, float]]:
    ev = Laplace(scale=100.0)
    rows = []
    for factory in ADDITIVE:
        acc = factory()
        t0 = time.perf_counter()
        for _ in range(N_LOOP):
            acc.compose(ev)
        dt = time.perf_counter() - t0
        rows.append((factory.name, dt / N_LOOP * 1e6, acc.epsilon(DELTA)))
    return rows


def scenarios():
    return {
        "(a) 1e5 x Laplace(scale=100)": SelfComposed(Laplace(scale=100.0), 100_000),
        "(b) 1000 Laplace, eps_i = i^-0.6": Composed(tuple(Laplace(scale=i ** 0.6) for i in range(1, 1001))),
        "(c) 1e5 x Gaussian(sigma=300)": SelfComposed(Gaussian(sigma=300.0), 100_000),
    }


def run_scenario(event) -> list[tuple[str, float | None, float]]:
    rows = []
    for factory in ALL:
        t0 = time.perf_counter()
        try:
            eps = factory().compose(event).epsilon(DELTA)
        except UnsupportedEventError:
            eps = None
        rows.append((factory.name, eps, time.perf_counter() - t0))
    dp_event = to_dp_accounting(event)
    for label, make in [("dp_accounting PLDAccountant", lambda: GooglePLD()),
                        ("dp_accounting RdpAccountant", lambda: GoogleRDP())]:
        t0 = time.perf_counter()
        try:
            eps = make().compose(dp_event).get_epsilon(DELTA)
        except Exception as exc:  # noqa: BLE001 - report what the reference library does
            print(f"  {label}: {type(exc).__name__}: {exc}", file=sys.stderr)
            eps = None
        rows.append((label, eps, time.perf_counter() - t0))
    return rows


def fmt(x: float | None) -> str:
    if x is None:
        return "unsupported"
    if math.isinf(x):
        return "inf"
    return f"{x:.4f}" if x < 1e4 else f"{x:.4g}"


def main() -> None:
    print(f"Python {platform.python_version()}, dp-accounting {dp_accounting.__version__ if hasattr(dp_accounting, '__version__') else '0.6'}, "
          f"{platform.machine()}, {os.cpu_count()} cores\n")
    print(f"### Per-event compose cost ({N_LOOP:.0e} calls of `compose(Laplace(scale=100))`)\n")
    print("| accountant | us / compose | epsilon at delta=1e-6 after 1e6 events |")
    print("|---|---:|---:|")
    for name, us, eps in per_event_cost():
        print(f"| {name} | {us:.2f} | {fmt(eps)} |")
    sc = scenarios()
    results = {label: run_scenario(ev) for label, ev in sc.items()}
    print("\n### Epsilon at delta = 1e-6 (time in seconds, compose + query)\n")
    labels = list(sc)
    print("| accountant | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    names = [r[0] for r in results[labels[0]]]
    for i, name in enumerate(names):
        cells = []
        for label in labels:
            _, eps, dt = results[label][i]
            cells.append(f"{fmt(eps)} ({dt:.3f} s)" if eps is not None else "unsupported")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
