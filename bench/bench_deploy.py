"""Load test of ``privbandit.deploy``: decisions per second with one and with two processes on one
store, and the p50 / p99 latency of ``select`` and ``update``.

Usage::

    python bench/bench_deploy.py                          # lazy_dp_ts and dp_ucb_bound, 2000 decisions
    python bench/bench_deploy.py --policy dp_ucb_bound --decisions 5000

Each process opens the store, waits at a barrier (so imports are not timed), then serves its share
of the decisions: ``select()`` then ``update(decision, reward)`` with a Bernoulli reward, each call
one acknowledged SQLite transaction (WAL; ``--synchronous full``: fsync per commit, ``normal``:
none -- durable through a killed process, not a power cut). A decision is a
select and its update; decisions/s = all decisions / wall time from the barrier to the last process
done. With two processes a select while a policy round awaits its reward is a *hold* (no policy
call); the share of holds is reported. Results go to docs/deploy.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from privbandit.deploy import Deployment  # noqa: E402
from privbandit.cli_checks import whole

MEANS = (0.2, 0.4, 0.6, 0.8, 0.5)


def worker(store: str, n: int, go: str, seed: int) -> None:
    dep = Deployment.open(store)
    rng = np.random.default_rng(seed)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    sel, upd, holds = [], [], 0
    start = time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter_ns()
        d = dep.select()
        t1 = time.perf_counter_ns()
        dep.update(d.decision, float(rng.random() < MEANS[d.arm]))
        t2 = time.perf_counter_ns()
        sel.append(t1 - t0)
        upd.append(t2 - t1)
        holds += d.kind == "hold"
    end = time.perf_counter()
    dep.close()
    print(json.dumps({"select": sel, "update": upd, "holds": holds, "start": start, "end": end}), flush=True)


def measure(policy: str, params: dict, decisions: int, processes: int, arms: int, synchronous: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store, go = os.path.join(tmp, "bench.db"), os.path.join(tmp, "go")
        Deployment.create(store, policy, params=params, n_arms=arms, budget=1e9, delta=1e-6,
                          horizon=max(decisions, arms), seed=1, synchronous=synchronous).close()
        share = decisions // processes
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", store, str(share), go, str(i)],
                                  stdout=subprocess.PIPE, text=True) for i in range(processes)]
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        wall0 = time.perf_counter()
        open(go, "w").close()
        results = [json.loads(p.communicate()[0]) for p in procs]
        wall = time.perf_counter() - wall0
        with Deployment.open(store) as dep:
            status = dep.status(last=0)
        size = os.path.getsize(store)
    sel = np.concatenate([r["select"] for r in results]) / 1e6
    upd = np.concatenate([r["update"] for r in results]) / 1e6
    busy = max(r["end"] for r in results) - min(r["start"] for r in results)
    assert status["decisions"] == status["updates"] == share * processes
    return {"policy": policy, "synchronous": synchronous, "processes": processes, "decisions": share * processes,
            "decisions_per_s": share * processes / busy, "wall_s": wall,
            "select_p50_ms": float(np.percentile(sel, 50)), "select_p99_ms": float(np.percentile(sel, 99)),
            "update_p50_ms": float(np.percentile(upd, 50)), "update_p99_ms": float(np.percentile(upd, 99)),
            "hold_share": sum(r["holds"] for r in results) / (share * processes),
            "policy_rounds": status["policy_rounds"], "store_bytes": size}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", action="append", help="policy name (repeatable; default lazy_dp_ts and dp_ucb_bound)")
    ap.add_argument("--decisions", type=whole(1), default=2000)
    ap.add_argument("--arms", type=whole(1), default=5)
    ap.add_argument("--synchronous", action="append", choices=["full", "normal"],
                    help="store durability (repeatable; default both)")
    args = ap.parse_args()
    rows = []
    for policy in args.policy or ["lazy_dp_ts", "dp_ucb_bound"]:
        for sync in args.synchronous or ["full", "normal"]:
            for processes in (1, 2):
                r = measure(policy, {}, args.decisions, processes, args.arms, sync)
                print(f"{r['policy']:<14} sync={sync:<6} procs={r['processes']} decisions={r['decisions']:<6} "
                      f"{r['decisions_per_s']:7.1f} decisions/s  select p50 {r['select_p50_ms']:.2f} ms "
                      f"p99 {r['select_p99_ms']:.2f} ms  update p50 {r['update_p50_ms']:.2f} ms "
                      f"p99 {r['update_p99_ms']:.2f} ms  holds {100 * r['hold_share']:.0f}%  "
                      f"policy rounds {r['policy_rounds']}  store {r['store_bytes'] / 1e6:.2f} MB", flush=True)

if __name__ == "__main__":
    main()
