"""UCB-family and elimination policies: simulated pulls per second, as ratios measured in one run.

On the 5-arm instance [0.75, 0.625, 0.5, 0.375, 0.25] with 100 replicates, for Private-UCB,
DP-UCB-Bound, DP-UCB, DP-UCB-Int, DP-SE and Anytime-Lazy-UCB (all at eps = 1):

* privbandit's vectorised engine (``simulate``), with the cheap per-record ledger (default) and
  without it (``ledger=False``);
* (a) a plain per-round Python loop: the same algorithm for one replicate at a time, Python floats,
  ``random.Random``, no ledger (written here, below);
* (b) the raw numpy cost of drawing the same random numbers in bulk (one uniform per pull plus the
  number of Laplace draws the vectorised run made), the practical limit.

Usage: ``python bench/bench_ucb_family.py [--horizon 20000] [--replicates 100] [--loop-runs 5]``.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privbandit.engine import simulate  # noqa: E402
from privbandit.envs import Bernoulli  # noqa: E402
from privbandit.ledger import Ledger  # noqa: E402
from privbandit.policies.dp_ucb import DPUCB, DPUCBBound, DPUCBInt  # noqa: E402
from privbandit.policies.elimination import DPSE, AnytimeLazyUCB  # noqa: E402
from privbandit.policies.private_ucb import PrivateUCB  # noqa: E402
from privbandit.cli_checks import whole

MEANS = [0.75, 0.625, 0.5, 0.375, 0.25]
EPS = 1.0


# ----------------------------------------------------------------------------- plain Python loops


def lap(rng: random.Random, b: float) -> float:
    u = rng.random() - 0.5
    return -b * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))


class PyBinary:
    """Binary mechanism with ``levels`` levels and node noise Lap(scale)."""

    def __init__(self, levels, scale, rng):
        self.alpha, self.noisy = [0.0] * max(levels, 1), [0.0] * max(levels, 1)
        self.scale, self.rng, self.t, self.out = scale, rng, 0, 0.0

    def insert(self, x):
        self.t += 1
        i = (self.t & -self.t).bit_length() - 1
        s = x
        for j in range(i):
            s += self.alpha[j]
            self.alpha[j] = self.noisy[j] = 0.0
        self.alpha[i] = s
        self.noisy[i] = s + lap(self.rng, self.scale)
        self.out = sum(self.noisy)


class PyHybrid:
    def __init__(self, eps, rng):
        self.eps, self.rng, self.n, self.log_sum, self.pending, self.block, self.out = eps, rng, 0, 0.0, 0.0, None, 0.0

    def insert(self, x):
        self.n += 1
        n = self.n
        if n & (n - 1) == 0:
            self.log_sum += self.pending + x + lap(self.rng, 2.0 / self.eps)
            self.pending = 0.0
            k = n.bit_length() - 1
            self.block = PyBinary(k, 2.0 * k / self.eps, self.rng) if k >= 1 else None
            self.out = self.log_sum
        else:
            self.pending += x
            self.block.insert(x)
            self.out = self.log_sum + self.block.out


def hybrid_bound(n, lg, eps):
    k = n.bit_length() - 1
    tau = n - (1 << k)
    total = max(lg, math.sqrt((k + 1) * lg))
    if tau:
        total += k * max(lg, math.sqrt(bin(tau).count("1") * lg))
    return 2.0 * math.sqrt(8.0) / eps * total


def loop_private_ucb(T, rng):
    K = len(MEANS)
    trees = [PyBinary(T.bit_length(), T.bit_length() / (EPS / K), rng) for _ in range(K)]
    gam = PrivateUCB(EPS).relaxation(T, K)
    n = [0] * K
    for t in range(1, T + 1):
        if t <= K:
            a = t - 1
        else:
            lt = 2.0 * math.log(t)
            a = max(range(K), key=lambda i: (trees[i].out + gam) / n[i] + math.sqrt(lt / n[i]))
        trees[a].insert(1.0 if rng.random() < MEANS[a] else 0.0)
        n[a] += 1


def loop_dp_ucb(T, rng, bound):
    K = len(MEANS)
    mechs = [PyHybrid(EPS, rng) for _ in range(K)]
    n = [0] * K
    for t in range(1, T + 1):
        if t <= K:
            a = t - 1
        else:
            lt = 2.0 * math.log(t)
            lg = math.log(4.0) + 4.0 * math.log(t)
            if bound:
                a = max(range(K), key=lambda i: (mechs[i].out + hybrid_bound(n[i], lg, EPS)) / n[i] + math.sqrt(lt / n[i]))
            else:
                a = max(range(K), key=lambda i: mechs[i].out / n[i] + math.sqrt(lt / n[i]))
        r = 1.0 if rng.random() < MEANS[a] else 0.0
        n[a] += 1
        if bound:
            mechs[a].insert(r)
        else:
            for i in range(K):
                mechs[i].insert(r if i == a else 0.0)


def loop_dp_ucb_int(T, rng, v=1.1):
    K, f = len(MEANS), math.ceil(1.0 / EPS)
    n, s, mu = [0] * K, [0.0] * K, [0.0] * K
    for t in range(1, T + 1):
        if t <= K * f:
            a = (t - 1) % K
        else:
            lt = 2.0 * math.log(t)
            a = max(range(K), key=lambda i: mu[i] + math.sqrt(lt / n[i]))
        s[a] += 1.0 if rng.random() < MEANS[a] else 0.0
        n[a] += 1
        if n[a] % f == 0:
            mu[a] = s[a] / n[a] + lap(rng, n[a] ** (v / 2 - 1))


def loop_dp_se(T, rng):
    K = len(MEANS)
    beta = 1.0 / T
    active, e, t = list(range(K)), 1, 0
    while t < T:
        if len(active) == 1:
            for _ in range(T - t):
                rng.random()
            return
        S = len(active)
        gap = 2.0 ** -e
        R = int(max(32 * math.log(8 * S * e * e / beta) / gap ** 2, 8 * math.log(4 * S * e * e / beta) / (EPS * gap))) + 1
        sums = {i: 0.0 for i in active}
        for _ in range(R):
            for i in active:
                if t >= T:
                    return
                t += 1
                sums[i] += 1.0 if rng.random() < MEANS[i] else 0.0
        mu = {i: sums[i] / R + lap(rng, 1.0 / (EPS * R)) for i in active}
        h = math.sqrt(math.log(8 * S * e * e / beta) / (2 * R))
        c = math.log(4 * S * e * e / beta) / (EPS * R)
        best = max(mu.values())
        active = [i for i in active if best - mu[i] <= 2 * (h + c)]
        e += 1


def loop_anytime(T, rng, alpha=3.1):
    K = len(MEANS)
    pending, psum, size, noisy, batch = [0] * K, [0.0] * K, [0] * K, [0.0] * K, [1] * K
    for t in range(1, T + 1):
        if t <= K:
            a = t - 1
        else:
            al = alpha * math.log(t)
            a = max(range(K), key=lambda i: noisy[i] / size[i] + math.sqrt(al / (2 * size[i])) + al / (EPS * size[i]))
        psum[a] += 1.0 if rng.random() < MEANS[a] else 0.0
        pending[a] += 1
        if pending[a] == batch[a]:
            noisy[a], size[a] = psum[a] + lap(rng, 1.0 / EPS), pending[a]
            psum[a], pending[a], batch[a] = 0.0, 0, 2 * batch[a]


CASES = [
    ("private_ucb", lambda: PrivateUCB(EPS), loop_private_ucb),
    ("dp_ucb_bound", lambda: DPUCBBound(EPS), lambda T, rng: loop_dp_ucb(T, rng, True)),
    ("dp_ucb", lambda: DPUCB(EPS), lambda T, rng: loop_dp_ucb(T, rng, False)),
    ("dp_ucb_int", lambda: DPUCBInt(rate=EPS), loop_dp_ucb_int),
    ("dp_se", lambda: DPSE(EPS), loop_dp_se),
    ("anytime_lazy_ucb", lambda: AnytimeLazyUCB(EPS), loop_anytime),
]


def engine_rate(policy, T, R, ledger):
    start = time.perf_counter()
    simulate(policy, Bernoulli(MEANS), T, R, seed=0, ledger=ledger, progress=False, realized_points=1)
    return T * R / (time.perf_counter() - start)


def draws_of(policy, T, R):
    """Laplace draws a vectorised run makes (from its ledger)."""
    ledger = Ledger(R, len(MEANS), max_tracked_bytes=0)
    run = policy.start(len(MEANS), R, T, np.random.default_rng(0), ledger=ledger)
    env = Bernoulli(MEANS).start(R, np.random.default_rng(1))
    for t in range(1, T + 1):
        arms = run.select(t)
        run.update(t, arms, env.rewards(t, arms))
    return int(ledger.draws.sum())


def raw_rate(T, R, draws):
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    block = 1000
    for _ in range(T // block):
        rng.random((block, R))
    rng.laplace(0.0, 1.0, draws)
    return (T // block) * block * R / (time.perf_counter() - start)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=whole(1), default=20_000)
    ap.add_argument("--replicates", type=whole(1), default=100)
    ap.add_argument("--loop-runs", type=whole(1), default=5)
    args = ap.parse_args(argv)
    T, R = args.horizon, args.replicates
    print(f"5-arm instance, eps = {EPS}, T = {T}, {R} replicates; pulls per second\n")
    print("| policy | vectorised + ledger | vectorised, no ledger | (a) plain loop | ratio (vectorised no ledger / loop) | "
          "ratio (with ledger / loop) | (b) raw numpy RNG | fraction of (b) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, make, loop in CASES:
        # best of two interleaved runs each (the first run of a process also pays one-time imports)
        with_ledger = no_ledger = 0.0
        for _ in range(2):
            with_ledger = max(with_ledger, engine_rate(make(), T, R, True))
            no_ledger = max(no_ledger, engine_rate(make(), T, R, False))
        rng = random.Random(0)
        start = time.perf_counter()
        for _ in range(args.loop_runs):
            loop(T, rng)
        plain = T * args.loop_runs / (time.perf_counter() - start)
        raw = raw_rate(T, R, draws_of(make(), min(T, 5000), R) * max(1, T // 5000))
        print(f"| {name} | {with_ledger:,.0f} | {no_ledger:,.0f} | {plain:,.0f} | {no_ledger / plain:.1f}x | "
              f"{with_ledger / plain:.1f}x | {raw:,.0f} | {no_ledger / raw:.3f} |", flush=True)


if __name__ == "__main__":
    main()
