"""Throughput of the TS-family policies (GaussianTS, DP-TS, Lazy-DP-TS, Private-TS) at 100
replicates x 5 Bernoulli arms, against (a) the raw RNG limit and (b) a plain per-round Python loop.

Run: ``python bench/bench_ts_family.py [--rounds N] [--replicates R]``. Prints a Markdown table of
pulls per second (one pull = one replicate-round):

* ``engine``: ``privbandit.engine.simulate`` with the ledger tracking every replicate per record
  (``ledger=True, ledger_replicates=None``) and without it (``ledger=False``).
* ``RNG limit``: only the random numbers a round of the policy needs -- the (R, K) posterior draws
  (Beta, or standard normal for GaussianTS) plus the R reward uniforms -- drawn with one numpy call
  per round, and as one bulk call for all rounds (the absolute limit of numpy's generator).
* ``plain loop``: the same algorithm written as a per-round, per-replicate, per-arm Python loop with
  the ``random`` module (no ledger), timed on a few replicates and reported per pull.
"""

from __future__ import annotations

import argparse
import math
import random
import time

import numpy as np

from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.policies.gaussian_ts import GaussianTS
from privbandit.policies.hu_hegde import DPTS, LazyDPTS
from privbandit.policies.private_ts import PrivateTS
from privbandit.cli_checks import whole

ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]
K = len(ARMS)
EPS = 1.0


def lap(rnd, b):
    u = rnd.random() - 0.5
    return -b * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))


class _Tree:
    """Binary mechanism, plain Python (Chan et al. Alg. 2)."""

    def __init__(self, levels, scale, rnd):
        self.L, self.b, self.rnd = levels, scale, rnd
        self.alpha, self.noisy, self.t = [0.0] * levels, [0.0] * levels, 0

    def insert(self, x):
        self.t += 1
        i = (self.t & -self.t).bit_length() - 1
        self.alpha[i] = sum(self.alpha[:i]) + x
        for j in range(i):
            self.alpha[j] = self.noisy[j] = 0.0
        self.noisy[i] = self.alpha[i] + lap(self.rnd, self.b)
        return sum(self.noisy[j] for j in range(self.L) if (self.t >> j) & 1)


class _Split:
    def __init__(self, rnd):
        self.rnd, self.c, self.pending, self.o, self.tree, self.out = rnd, 0.0, 0.0, 0, None, 0.0

    def insert(self, x):
        self.o += 1
        self.pending += x
        if (self.o + 1) & self.o == 0:
            self.c += self.pending + lap(self.rnd, 2 / EPS)
            self.pending = 0.0
            r = (self.o + 1).bit_length() - 2
            self.tree = _Tree(r + 1, 2 * (r + 1) / EPS, self.rnd)
            self.out = self.c
        else:
            self.out = self.c + self.tree.insert(x)


def loop_pulls_per_second(kind, rounds, replicates=4, seed=0):
    rnd = random.Random(seed)
    start = time.perf_counter()
    for _ in range(replicates):
        if kind == "gaussian_ts":
            s, k = [0.0] * K, [0] * K
        elif kind == "dp_ts":
            mech = [_Split(rnd) for _ in range(K)]
        elif kind == "lazy_dp_ts":
            bs, bn, bj, ns, no = [0.0] * K, [0] * K, [0] * K, [0.0] * K, [0] * K
        else:  # private_ts without gap estimation, 10 random pulls per arm
            trees = [_Tree(rounds.bit_length(), rounds.bit_length() * 2 * K / EPS, rnd) for _ in range(K)]
            tot, cnt = [0.0] * K, [0] * K
        for t in range(1, rounds + 1):
            if kind == "gaussian_ts":
                th = [rnd.gauss(s[i] / (k[i] + 1), math.sqrt(1.0 / (k[i] + 1))) for i in range(K)]
            elif kind == "dp_ts":
                if t <= K:
                    th = [float(i == t - 1) for i in range(K)]
                else:
                    th = []
                    for m in mech:
                        o = m.o
                        mb = min(1.0, max(0.0, m.out / o + 6 * math.sqrt(8) * math.log2(o + 1) * math.log2(t) / (EPS * o)))
                        th.append(rnd.betavariate(mb * o + 1, (1 - mb) * o + 1))
            elif kind == "lazy_dp_ts":
                if t <= K:
                    th = [float(i == t - 1) for i in range(K)]
                else:
                    th = []
                    for i in range(K):
                        mb = min(1.0, max(0.0, ns[i] / no[i] + 3 * math.log2(t) / (EPS * no[i])))
                        th.append(rnd.betavariate(mb * no[i] + 1, (1 - mb) * no[i] + 1))
            else:
                if t <= 10 * K:
                    th = [float(i == (t - 1) % K) for i in range(K)]
                else:
                    th = []
                    for i in range(K):
                        r = min(float(cnt[i]), max(0.0, tot[i]))
                        th.append(rnd.betavariate(r + 1, cnt[i] - r + 1))
            a = max(range(K), key=th.__getitem__)
            x = 1.0 if rnd.random() < ARMS[a] else 0.0
            if kind == "gaussian_ts":
                s[a] += x
                k[a] += 1
            elif kind == "dp_ts":
                mech[a].insert(x)
            elif kind == "lazy_dp_ts":
                bs[a] += x
                bn[a] += 1
                if bn[a] == 1 << bj[a]:
                    ns[a], no[a] = bs[a] + lap(rnd, 1 / EPS), bn[a]
                    bs[a], bn[a], bj[a] = 0.0, 0, bj[a] + 1
            else:
                tot[a] = trees[a].insert(x)
                cnt[a] += 1
    return rounds * replicates / (time.perf_counter() - start)


def rng_limit(kind, rounds, R):
    rng = np.random.default_rng(0)
    a = np.full((R, K), 3.0)
    start = time.perf_counter()
    for _ in range(rounds):
        th = rng.standard_normal((R, K)) if kind == "gaussian_ts" else rng.beta(a, a)
        np.argmax(th, axis=1)
        rng.random(R)
    per_round = rounds * R / (time.perf_counter() - start)
    start = time.perf_counter()
    if kind == "gaussian_ts":
        rng.standard_normal((rounds, R, K))
    else:
        rng.beta(np.full((rounds, R, K), 3.0), 3.0)
    rng.random((rounds, R))
    bulk = rounds * R / (time.perf_counter() - start)
    return per_round, bulk


POLICIES = {
    "gaussian_ts": lambda: GaussianTS(b=10, c=5.0),
    "dp_ts": lambda: DPTS(EPS),
    "lazy_dp_ts": lambda: LazyDPTS(EPS),
    "private_ts": lambda: PrivateTS(EPS, gap_estimation=False, random_pulls=10),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=whole(1), default=4000)
    ap.add_argument("--replicates", type=whole(1), default=100)
    args = ap.parse_args(argv)
    T, R = args.rounds, args.replicates
    env = Bernoulli(ARMS)
    print(f"pulls per second, {R} replicates x {K} arms, {T} rounds (loop: 4 replicates)\n")
    print("| policy | engine + ledger | engine, no ledger | RNG limit (per round / bulk) | plain loop "
          "| engine+ledger / loop | RNG per-round / engine+ledger |")
    print("|---|---|---|---|---|---|---|")
    for name, make in POLICIES.items():
        v1 = v0 = 0.0
        for _ in range(2):  # best of two interleaved runs each (the first also pays one-time imports)
            with_ledger = simulate(make(), env, T, R, seed=0, checkpoints=[T], realized_points=1,
                                   ledger_replicates=None)  # every replicate tracked per record
            no_ledger = simulate(make(), env, T, R, seed=0, checkpoints=[T], ledger=False)
            v1, v0 = max(v1, T * R / with_ledger.seconds), max(v0, T * R / no_ledger.seconds)
        per_round, bulk = rng_limit(name, T, R)
        loop = loop_pulls_per_second(name, T)
        print(f"| {name} | {v1:,.0f} | {v0:,.0f} | {per_round:,.0f} / {bulk:,.0f} | {loop:,.0f} | "
              f"{v1 / loop:.1f}x | {per_round / v1:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
