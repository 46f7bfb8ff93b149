"""The ledger's own cost, replayed from a real run's reports (issue 19 item 1, "ledger extra <= 15%").

Whole-run pairs (bench_engine.py's ledger on / off) move by +-10 points between runs of one tree on
a shared machine (docs/benchmarks.md, sessions 11-13), so a change worth 1-3% of a run cannot be
seen there. This script isolates the ledger: it runs ``simulate`` once per policy with the default
ledger, records every report the run's ledger receives, in order -- ``Ledger._store`` (listed and
pulled releases), ``Ledger._record_dense`` and the calls of prefix recorders (the Gaussian
posterior) -- then replays them into fresh ledgers built as the engine builds its ledger, and times
(CPU time of this thread) the replay with its drains, and the engine's realized-spend queries (made
where the run made them: a query drains what is staged, so it decides which reports one drain folds,
and that moves DP-TS's sums in the last bits -- a drain's Laplace statistics are Python floats when
all its releases of a kind share one epsilon, numpy's elementwise values otherwise, and
``e * math.tanh(e / 2)`` differs from numpy's in the last bit for some e: docs/benchmarks.md,
session 13).

Each replayed ledger is checked against the run's own, bit for bit (difference arrays, draw counts,
marked positions, realized epsilon at delta = 1e-6): a replay that missed a report, or reordered
two, says so and exits 1. The figures are per report and per run. Measured (3 replays each, R = 100,
T = 2e4, load ~7 on 2 cores): reports + drains 4.61-4.95 us a report for DP-TS, 3.63-4.16 for
DP-UCB-Bound, 1.58-1.70 for Gaussian TS -- a spread of a few percent; the queries spread more
(DP-TS 22-97 ms a run: they first write megabytes of per-record totals, see Ledger._kept_totals).
To compare two trees, run it under each tree's PYTHONPATH in turn, alternating (the same seed gives
the same reports).

Not replayed: ``note_rounds`` / ``note_observed`` (side-observation policies) and tight ledgers.

Usage: ``python bench/bench_ledger_replay.py [--policies dp_ts,dp_ucb_bound] [--replicates 100]
[--horizon 20000] [--repeats 5] [--track 8]``
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from privbandit.cli_checks import whole
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.ledger import Ledger
from privbandit.policies import REGISTRY, GaussianTS

MEANS = [0.75, 0.625, 0.5, 0.375, 0.25]


def make(name):
    return GaussianTS(b=10, c=4.0) if name == "gaussian_ts" else REGISTRY[name]()


def _own(x):
    """A copy owning its data of a writeable array (the caller may reuse it), the rest as it is: the
    ledger's shared read-only layouts stay the very same objects, as the ledger recognises them by
    identity."""
    return x.copy() if isinstance(x, np.ndarray) and x.ndim and x.flags.writeable else x


def capture(policy, replicates: int, horizon: int, track: int):
    """Run ``policy`` once; return (the run's ledger, its constructor arguments, the reports in order)."""
    calls, books = [], []
    store, dense, prefix, init = Ledger._store, Ledger._record_dense, Ledger.prefix_recorder, Ledger.__init__
    query = Ledger.realized_epsilon

    def ours(book):
        return bool(books) and book is books[0]

    def init_hook(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if not books and kwargs.get("capacity") == horizon:  # the engine's ledger (capacity = horizon)
            books.append(self)
            calls.append(("init", args, kwargs))

    def store_hook(self, kind, rep, st, lo, hi, p, s, mechanism, nd, *, fresh=False):
        if ours(self):
            calls.append(("store", (kind, _own(rep), *map(_own, (st, lo, hi, p, s)), mechanism, _own(nd)), fresh))
        return store(self, kind, rep, st, lo, hi, p, s, mechanism, nd, fresh=fresh)

    def dense_hook(self, mask, lo, hi, param, sensitivity, mechanism, *, gaussian, discrete=False):
        if ours(self):
            calls.append(("dense", tuple(map(_own, (mask, lo, hi, param, sensitivity))) + (mechanism,),
                          (gaussian, discrete)))
        return dense(self, mask, lo, hi, param, sensitivity, mechanism, gaussian=gaussian, discrete=discrete)

    def query_hook(self, *args, **kwargs):
        if ours(self):  # where the engine queried: a query drains the staged reports there
            calls.append(("query", args, kwargs))
        return query(self, *args, **kwargs)

    def prefix_hook(self, parameters, mechanism, *, gaussian=True, discrete=False):
        record = prefix(self, parameters, mechanism, gaussian=gaussian, discrete=discrete)
        if not ours(self):
            return record
        index = sum(1 for c in calls if c[0] == "prefix_new")
        calls.append(("prefix_new", (parameters, mechanism), (gaussian, discrete)))

        def logged(counts):
            calls.append(("prefix", index, np.array(counts)))
            record(counts)
        return logged

    Ledger.__init__, Ledger._store, Ledger._record_dense, Ledger.prefix_recorder, Ledger.realized_epsilon = (
        init_hook, store_hook, dense_hook, prefix_hook, query_hook)
    try:
        res = simulate(policy, Bernoulli(MEANS), horizon, replicates, seed=0, progress=False,
                       ledger_replicates=track)
    finally:
        Ledger.__init__, Ledger._store, Ledger._record_dense, Ledger.prefix_recorder, Ledger.realized_epsilon = (
            init, store, dense, prefix, query)
    if not books:
        raise SystemExit(f"{policy.name}: the run made no ledger (a non-private policy?)")
    return books[0], res, calls


def replay(calls) -> tuple[Ledger, float, float]:
    """Replay ``calls`` into a fresh ledger; (the ledger, CPU seconds of the reports and their
    drains, CPU seconds of the realized-spend queries, made where the run made them: a query drains
    what is staged, so it decides which reports a drain folds together). Arrays are copied before
    the clock starts: the mechanisms hand fresh arrays."""
    _, args, kwargs = calls[0]
    book = Ledger(*args, **kwargs)
    todo = []
    for c in calls[1:]:  # fresh copies, as a mechanism's per-call arrays are
        if c[0] == "store":
            todo.append(("store", tuple(map(_own, c[1])), c[2]))
        elif c[0] == "dense":
            todo.append(("dense", tuple(map(_own, c[1][:5])) + c[1][5:], c[2]))
        else:
            todo.append(c)
    recorders = []
    report_s = query_s = 0.0
    clock = time.thread_time
    start = clock()
    for c in todo:
        if c[0] == "store":
            book._store(*c[1], fresh=c[2])
        elif c[0] == "dense":
            book._record_dense(*c[1], gaussian=c[2][0], discrete=c[2][1])
        elif c[0] == "prefix_new":
            recorders.append(book.prefix_recorder(*c[1], gaussian=c[2][0], discrete=c[2][1]))
        elif c[0] == "prefix":
            recorders[c[1]](c[2])
        else:  # a query
            mid = clock()
            book.realized_epsilon(*c[1], **c[2])
            end = clock()
            report_s += mid - start
            query_s += end - mid
            start = clock()
    book._settle()
    report_s += clock() - start
    return book, report_s, query_s


def same_bits(a: Ledger, b: Ledger) -> list[str]:
    """What differs between two ledgers' folded state (empty: nothing, bit for bit)."""
    a._settle(), b._settle()
    bad = [name for name in ("_draws", "_marked") if not np.array_equal(getattr(a, name), getattr(b, name))]
    if a._top != b._top:
        bad.append("_top")
    if a._diff.keys() != b._diff.keys() or any(
            not np.array_equal(a._diff[k].view(np.uint64), b._diff[k].view(np.uint64)) for k in a._diff):
        bad.append("_diff")
    ea, eb = a.realized_epsilon(1e-6), b.realized_epsilon(1e-6)
    if not np.array_equal(ea, eb, equal_nan=True):
        bad.append("realized_epsilon")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policies", default="dp_ts,dp_ucb_bound,private_ucb,dp_ucb,gaussian_ts")
    ap.add_argument("--replicates", type=whole(1), default=100, help="replicates of the run (default 100)")
    ap.add_argument("--horizon", type=whole(1), default=20000)
    ap.add_argument("--repeats", type=whole(1), default=5, help="replays per policy (default 5)")
    ap.add_argument("--track", type=whole(0), default=8, help="tracked replicates, the engine's default 8")
    args = ap.parse_args()
    R, T, repeats, track = args.replicates, args.horizon, args.repeats, args.track
    names = [p for p in args.policies.split(",") if p]
    unknown = [p for p in names if p not in REGISTRY]
    if unknown:
        raise SystemExit(f"--policies: unknown {unknown}; valid: {sorted(REGISTRY)}")
    print(f"Ledger replay, R = {R}, T = {T}, {track} tracked replicates, the engine's queries; CPU time of "
          f"this thread, median (min-max) of {repeats} replays\n")
    print("| policy | reports | reports + drains, us/report | per run, ms | queries per run, ms | identical |")
    print("|---|---:|---:|---:|---:|---|")
    failed = False
    for name in names:
        live, _, calls = capture(make(name), R, T, track)
        n_reports = sum(1 for c in calls if c[0] not in ("init", "query", "prefix_new"))
        rep_s, q_s, bad = [], [], []
        for _ in range(repeats):
            book, a, b = replay(calls)
            rep_s.append(a)
            q_s.append(b)
            bad = bad or same_bits(live, book)
        failed |= bool(bad)
        rep, q = np.array(rep_s), np.array(q_s)
        per = rep / max(1, n_reports) * 1e6
        print(f"| {name} | {n_reports} | {np.median(per):.2f} ({per.min():.2f}-{per.max():.2f}) | "
              f"{np.median(rep) * 1e3:.1f} | {np.median(q) * 1e3:.1f} ({q.min() * 1e3:.1f}-{q.max() * 1e3:.1f}) | "
              f"{'yes' if not bad else 'NO: ' + ', '.join(bad)} |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
