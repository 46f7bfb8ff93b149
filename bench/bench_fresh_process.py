"""One replicate in a FRESH process against keirp/private-bandits, on CPU time (issue 19 item 1, last
sentence: "with one replicate, at least the plain-Python peer's speed ... since deployment decides one
round at a time").

bench_engine.py's ``--peer-path`` table times both libraries in one long-lived process, on the wall
clock, best of a few runs: the certificate is then memoised after the first run, the kernels are
warm, and a loaded machine moves wall-clock figures 2x between runs of one tree (docs/benchmarks.md,
session 12). A user who runs one replicate runs it in a fresh process. Here every measurement is its
own process -- ours with only what a user imports (``simulate``, ``Bernoulli``, the registry) -- and
reports ``time.process_time()`` of

* the FIRST ``simulate`` of the process, whole (certificate included), and the certificate's part
  (``PrivacySchedule.live_certificates``: memoised within a process, so paid once per process), and
* the best of the further runs (s12/single's figure: the process warm), and
* the imports (from the script's first statement, numpy included, for both libraries) and import + first
  run: the process's whole cost of one run (session 16: what is imported on first use moves between the two),

for each tree given (``--trees``, each on PYTHONPATH in turn: e.g. /work/wt/base and this checkout)
and each kernel mode (``--modes``: ``auto``, the default ski-rental switch, or ``always``,
PRIVBANDIT_JIT=always: numba imported and every kernel loaded from its disk cache, warmed first by an
untimed process per tree), against the peer's ``Runner.run_all`` in its own fresh process (first run
and best of the further runs). The processes run one after another, the order rotating per pair; the
medians and ranges over ``--pairs`` are printed, with ours/peer as the ratio of the peer's CPU time to
ours (>= 1: at least the peer's speed).

Usage: ``python bench/bench_fresh_process.py --peer-path /tmp/peer_ucb [--peer-pythonpath /tmp/ucb_pylib]
[--trees /work/wt/base,.] [--policies private_ucb,dp_ucb_bound] [--modes auto,always] [--pairs 3]
[--runs 3] [--horizon 10000] [--pycache DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from privbandit.cli_checks import whole

HERE = pathlib.Path(__file__).resolve().parent

#: ours, in a fresh process: argv = policy, horizon, runs, means (JSON); prints one JSON line
OURS = r"""
import json, sys, time
start = time.process_time()
from privbandit import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import REGISTRY
import privbandit.schedule as schedule
imported = time.process_time() - start
name, horizon, runs, means = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
spent = [0.0]
live = schedule.PrivacySchedule.live_certificates

def timed(self, *args, **kwargs):
    begin = time.process_time()
    try:
        return live(self, *args, **kwargs)
    finally:
        spent[0] += time.process_time() - begin

schedule.PrivacySchedule.live_certificates = timed
out = []
for _ in range(runs):
    policy = REGISTRY[name]() if name == "ucb1" else REGISTRY[name](epsilon=1.0)
    spent[0] = 0.0
    begin = time.process_time()
    simulate(policy, Bernoulli(means), horizon, 1, seed=0, progress=False)
    out.append((time.process_time() - begin, spent[0]))
print(json.dumps({"import": imported, "runs": out, "numba": "numba" in sys.modules, "tree": sys.modules["privbandit"].__file__}))
"""

#: the peer, in a fresh process: argv = bench dir, peer path, policy, horizon, runs; one JSON line
PEER = r"""
import importlib, json, sys, time, types
start = time.process_time()
import numpy as np
bench, path, name, horizon, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sys.path.insert(0, path)
solvers = types.SimpleNamespace(private=importlib.import_module("private_bandits.solvers.private"),
                                nonprivate=importlib.import_module("private_bandits.solvers.nonprivate"))
for sub in ("private.private_ucb", "private.dp_ucb_bound", "private.dp_ucb", "private.dp_successive_elimination",
            "nonprivate.ucb"):
    importlib.import_module("private_bandits.solvers." + sub)
bandits = importlib.import_module("private_bandits.bandits.bernoulli_bandits")
runners = importlib.import_module("private_bandits.bandits.runners")
imported = time.process_time() - start
sys.path.remove(path)
sys.path.insert(0, bench)
from bench_engine import MEANS, PEER_SOLVERS
out = []
for _ in range(runs):
    np.random.seed(0)
    runner = runners.Runner(bandits.BernoulliBandits(len(MEANS), list(MEANS)),
                            [PEER_SOLVERS[name](solvers, len(MEANS), 1.0, horizon)])
    begin = time.process_time()
    runner.run_all(horizon)
    out.append(time.process_time() - begin)
print(json.dumps({"import": imported, "runs": out}))
"""


#: ``--pycache DIR``: the children's bytecode cache (PYTHONPYCACHEPREFIX), None: the environment's setting
PYCACHE: str | None = None


def _child(code: str, args: list, pythonpath: str, **env) -> dict:
    environ = dict(os.environ, PYTHONPATH=pythonpath, **env)
    environ.pop("PRIVBANDIT_NO_JIT", None)
    if PYCACHE is not None:
        # an installed package has its bytecode (pip compiles it); PYTHONDONTWRITEBYTECODE=1 (set in some
        # workplaces) made every child compile both libraries from source, ~0.1-0.3 s of our import
        # (session 17). A prefix directory keeps the checkouts untouched.
        environ.pop("PYTHONDONTWRITEBYTECODE", None)
        environ["PYTHONPYCACHEPREFIX"] = PYCACHE
    # cwd: ``python -c`` puts the working directory FIRST on sys.path, so a child started in a checkout imported
    # that checkout's privbandit whatever PYTHONPATH said (session 16: "--trees /work/wt/base,." run from the
    # branch measured the branch twice)
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=environ, capture_output=True,
                          text=True, timeout=3600, cwd=tempfile.gettempdir())
    if done.returncode:
        raise SystemExit(f"a measuring process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _spread(values: list) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-path", required=True, help="a local checkout of keirp/private-bandits")
    parser.add_argument("--peer-pythonpath", default="", help="extra PYTHONPATH for the peer (its tqdm)")
    parser.add_argument("--trees", default=str(HERE.parent), help="comma-separated privbandit checkouts")
    parser.add_argument("--policies", default="private_ucb,dp_ucb_bound")
    parser.add_argument("--modes", default="auto,always", help="kernel modes: auto (default switch), always")
    parser.add_argument("--pairs", type=whole(1), default=3)
    parser.add_argument("--runs", type=whole(1), default=3, help="simulate calls per process (the first is the fresh one)")
    parser.add_argument("--horizon", type=whole(5), default=10_000, help="rounds (>= 5: the five arms' first pulls)")
    parser.add_argument("--pycache", default=None,
                        help="a directory for the children's bytecode (PYTHONPYCACHEPREFIX; warmed first): as an "
                             "installed package runs, where the environment sets PYTHONDONTWRITEBYTECODE")
    args = parser.parse_args(argv)
    global PYCACHE
    PYCACHE = None if args.pycache is None else str(pathlib.Path(args.pycache).resolve())
    modes = args.modes.split(",")
    if not set(modes) <= {"auto", "always"}:
        parser.error(f"--modes takes auto and/or always, got {args.modes!r}")
    trees = [str(pathlib.Path(t).resolve()) for t in args.trees.split(",")]
    sys.path.insert(0, str(HERE))
    from bench_engine import MEANS, PEER_SOLVERS

    policies = args.policies.split(",")
    unknown = [p for p in policies if p not in PEER_SOLVERS]
    if unknown:
        parser.error(f"the peer has no {unknown}; it has {sorted(PEER_SOLVERS)}")
    means = json.dumps(list(MEANS))
    peer_path = os.pathsep.join(p for p in (args.peer_pythonpath, str(HERE.parent)) if p)
    if PYCACHE is not None:  # the bytecode written once, untimed, for every tree and the peer
        for tree in trees:
            _child(OURS, [policies[0], 50, 1, means], tree)
        _child(PEER, [HERE, args.peer_path, policies[0], 50, 1], peer_path)
    if "always" in modes:  # the disk cache warm, as the mode assumes (compiling is not what it measures)
        for tree in trees:
            for name in policies:
                _child(OURS, [name, 50, 1, means], tree, PRIVBANDIT_JIT="always")
    cells = [("peer", None, None)] + [(tree, tree, mode) for tree in trees for mode in modes]
    got: dict = {}
    for pair in range(args.pairs):
        for name in policies:
            order = cells[pair % len(cells):] + cells[:pair % len(cells)]
            for label, tree, mode in order:
                if tree is None:
                    row = _child(PEER, [HERE, args.peer_path, name, args.horizon, args.runs], peer_path)
                    got.setdefault((name, "peer", ""), []).append((row["runs"][0], 0.0, min(row["runs"][1:] or row["runs"]),
                                                                  row["import"]))
                else:
                    env = {"PRIVBANDIT_JIT": "always"} if mode == "always" else {"PRIVBANDIT_JIT": "auto"}
                    row = _child(OURS, [name, args.horizon, args.runs, means], tree, **env)
                    if not pathlib.Path(row["tree"]).resolve().is_relative_to(tree):
                        raise SystemExit(f"a child meant for {tree} imported {row['tree']}")
                    first, cert = row["runs"][0]
                    later = [r[0] for r in row["runs"][1:]] or [first]
                    got.setdefault((name, tree, mode), []).append((first, cert, min(later), row["import"]))
    print(f"\nOne replicate, T = {args.horizon}, eps = 1, 5 Bernoulli arms; CPU seconds per run, median (range) "
          f"over {args.pairs} fresh processes each; ours/peer = peer's CPU time / ours, medians\n")
    # import: CPU from the script's first statement to its imports done (numpy included for both); the process's
    # cost of one run is import + first run (session 16: what the package imports on first use moves between them)
    print("| policy | who | mode | import | first run | import + first run | its certificate | best later run | "
          "ours/peer (first) | ours/peer (import + first) | ours/peer (later) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in policies:
        peer = got[(name, "peer", "")]
        peer_first, peer_later = statistics.median(p[0] for p in peer), statistics.median(p[2] for p in peer)
        peer_whole = statistics.median(p[0] + p[3] for p in peer)
        print(f"| {name} | peer | | {_spread([p[3] for p in peer])} | {_spread([p[0] for p in peer])} | "
              f"{_spread([p[0] + p[3] for p in peer])} | | {_spread([p[2] for p in peer])} | | | |")
        for tree in trees:
            for mode in modes:
                rows = got[(name, tree, mode)]
                print(f"| {name} | {tree} | {mode} | {_spread([r[3] for r in rows])} | {_spread([r[0] for r in rows])} | "
                      f"{_spread([r[0] + r[3] for r in rows])} | {_spread([r[1] for r in rows])} | "
                      f"{_spread([r[2] for r in rows])} | {peer_first / statistics.median(r[0] for r in rows):.2f}x | "
                      f"{peer_whole / statistics.median(r[0] + r[3] for r in rows):.2f}x | "
                      f"{peer_later / statistics.median(r[2] for r in rows):.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
