"""Throughput of the vectorised mechanisms (100 replicates x 5 streams, ledger attached) against a
plain per-element Python loop implementation of the same mechanism (no ledger), in one process.

Run: ``python bench/bench_mechanisms.py [--steps N]``. Prints a Markdown table (inserts per second
and the ratio vectorised / loop) and the cost of the floating-point-safe (exact) samplers.
"""

from __future__ import annotations

import argparse
import math
import random
import time

import numpy as np

from privbandit.ledger import Ledger
from privbandit.mechanisms import (FreshBatchMean, HybridMechanism, IntervalMean, LogarithmicMechanism,
                                   NoiseSampler, SplitMechanism, TreeMechanism)
from privbandit.cli_checks import whole

R, K = 100, 5  # overridden by --replicates
EPS = 1.0


def lap(rnd: random.Random, b: float) -> float:
    u = rnd.random() - 0.5
    return -b * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))


# --- plain per-element loop implementations ---------------------------------------------------------
class LoopTree:
    def __init__(self, horizon, rnd):
        self.L = horizon.bit_length()
        self.b = self.L / EPS
        self.alpha = [0.0] * self.L
        self.noisy = [0.0] * self.L
        self.t = 0
        self.rnd = rnd

    def insert(self, x):
        self.t += 1
        i = (self.t & -self.t).bit_length() - 1
        s = x
        for j in range(i):
            s += self.alpha[j]
            self.alpha[j] = 0.0
            self.noisy[j] = 0.0
        self.alpha[i] = s
        self.noisy[i] = s + lap(self.rnd, self.b)
        return sum(self.noisy)


class LoopLog:
    def __init__(self, rnd):
        self.t, self.pending, self.out, self.rnd = 0, 0.0, 0.0, rnd

    def insert(self, x):
        self.t += 1
        self.pending += x
        if self.t & (self.t - 1) == 0:
            self.out += self.pending + lap(self.rnd, 1 / EPS)
            self.pending = 0.0
        return self.out


class LoopHybrid:
    def __init__(self, rnd):
        self.log = LoopLog(rnd)
        self.log_b = 2 / EPS
        self.rnd = rnd
        self.tree = None
        self.t = 0

    def insert(self, x):
        self.t += 1
        t = self.t
        if t & (t - 1) == 0:
            self.log.pending += x
            self.log.out += self.log.pending + lap(self.rnd, self.log_b)
            self.log.pending = 0.0
            k = t.bit_length() - 1
            self.tree = LoopTree((1 << k) - 1, self.rnd) if k >= 1 else None
            if self.tree is not None:
                self.tree.b = 2 * k / EPS
            return self.log.out
        self.log.pending += x
        return self.log.out + self.tree.insert(x)


class LoopSplit:
    def __init__(self, rnd):
        self.rnd, self.c, self.pending, self.o, self.tree = rnd, 0.0, 0.0, 0, None

    def insert(self, x):
        self.o += 1
        self.pending += x
        if (self.o + 1) & self.o == 0:
            self.c += self.pending + lap(self.rnd, 2 / EPS)
            self.pending = 0.0
            r = (self.o + 1).bit_length() - 2
            self.tree = LoopTree((1 << (r + 1)) - 1, self.rnd)
            self.tree.b = 2 * (r + 1) / EPS
            return self.c
        return self.c + self.tree.insert(x)


class LoopFresh:
    def __init__(self, rnd):
        self.rnd, self.s, self.n, self.j, self.out = rnd, 0.0, 0, 0, 0.0

    def insert(self, x):
        self.s += x
        self.n += 1
        if self.n == 1 << self.j:
            self.out = self.s + lap(self.rnd, 1 / EPS)
            self.s, self.n, self.j = 0.0, 0, self.j + 1
        return self.out


class LoopInterval:
    def __init__(self, rnd, interval=3, v=1.1):
        self.rnd, self.s, self.n, self.f, self.v, self.out = rnd, 0.0, 0, interval, v, 0.0

    def insert(self, x):
        self.s += x
        self.n += 1
        if self.n % self.f == 0:
            self.out = self.s / self.n + lap(self.rnd, self.n ** (self.v / 2 - 1))
        return self.out


def vec_factory(name, steps, exact=False):
    led = Ledger(R, K, max_tracked_bytes=2 ** 31)
    rng = np.random.default_rng(0)
    kw = dict(rng=rng, ledger=led, exact=exact)
    return {
        "tree": lambda: TreeMechanism(R, K, epsilon=EPS, horizon=steps, **kw),
        "logarithmic": lambda: LogarithmicMechanism(R, K, epsilon=EPS, **kw),
        "hybrid": lambda: HybridMechanism(R, K, epsilon=EPS, **kw),
        "split": lambda: SplitMechanism(R, K, epsilon=EPS, **kw),
        "fresh_batch": lambda: FreshBatchMean(R, K, epsilon=EPS, **kw),
        "interval": lambda: IntervalMean(R, K, v=1.1, interval=3, **kw),
    }[name]()


def loop_factory(name, steps, rnd):
    return {
        "tree": lambda: LoopTree(steps, rnd),
        "logarithmic": lambda: LoopLog(rnd),
        "hybrid": lambda: LoopHybrid(rnd),
        "split": lambda: LoopSplit(rnd),
        "fresh_batch": lambda: LoopFresh(rnd),
        "interval": lambda: LoopInterval(rnd),
    }[name]()


def bench_vectorised(name, steps, exact=False):
    m = vec_factory(name, steps, exact)
    vals = np.random.default_rng(1).random((steps, R, K))
    mask = np.ones((R, K), dtype=bool)
    t0 = time.perf_counter()
    for t in range(steps):
        m.insert(vals[t], mask)
    m.ledger.realized_pure_epsilon()  # one checkpoint query
    return steps * R * K / (time.perf_counter() - t0)


def bench_loop(name, steps, n_streams):
    rnd = random.Random(0)
    mechs = [loop_factory(name, steps, rnd) for _ in range(n_streams)]
    vals = [[rnd.random() for _ in range(n_streams)] for _ in range(steps)]
    t0 = time.perf_counter()
    for t in range(steps):
        row = vals[t]
        for j, m in enumerate(mechs):
            m.insert(row[j])
    return steps * n_streams / (time.perf_counter() - t0)


def bench_samplers(n=100_000):
    out = {}
    for label, exact in (("float", False), ("exact", True)):
        s = NoiseSampler(np.random.default_rng(0), exact=exact)
        t0 = time.perf_counter()
        s.laplace(np.full(n, 3.0))
        out[f"laplace_{label}"] = n / (time.perf_counter() - t0)
    s = NoiseSampler(np.random.default_rng(0))
    t0 = time.perf_counter()
    s.gaussian(np.full(n, 1.0))
    out["gaussian_float"] = n / (time.perf_counter() - t0)
    m = 5000
    s = NoiseSampler(np.random.default_rng(0), exact=True)
    t0 = time.perf_counter()
    s.gaussian(np.full(m, 1.0))
    out["gaussian_exact"] = m / (time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=whole(1), default=1024, help="inserts per stream (default 1024)")
    ap.add_argument("--loop-streams", type=whole(1), default=100, help="streams run by the Python loop")
    ap.add_argument("--replicates", type=whole(1), default=100, help="replicates of the vectorised run (default 100)")
    args = ap.parse_args()
    global R
    R = args.replicates
    names = ["tree", "logarithmic", "hybrid", "split", "fresh_batch", "interval"]
    print(f"vectorised: {R} replicates x {K} streams, {args.steps} inserts per stream, cheap ledger attached")
    print(f"loop: plain Python per element, {args.loop_streams} streams, no ledger\n")
    print("| mechanism | vectorised inserts/s | exact-mode inserts/s | Python loop inserts/s | ratio (vectorised / loop) |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        v = bench_vectorised(name, args.steps)
        e = bench_vectorised(name, args.steps, exact=True)
        lp = bench_loop(name, args.steps, args.loop_streams)
        print(f"| {name} | {v:,.0f} | {e:,.0f} | {lp:,.0f} | {v / lp:.1f}x |")
    print("\n| sampler | draws/s |")
    print("|---|---:|")
    for k, val in bench_samplers().items():
        print(f"| {k} | {val:,.0f} |")


if __name__ == "__main__":
    main()
