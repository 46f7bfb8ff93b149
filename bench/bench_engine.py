"""Engine throughput: simulated pulls per second, as ratios measured in one run.

For Beta-TS and UCB1 on the 5-arm instance [0.75, 0.625, 0.5, 0.375, 0.25] with 100 replicates:

* privbandit's vectorised engine;
* (a) a plain per-round Python loop (``privbandit.testing.reference``, one replicate at a time);
* (b) the raw numpy cost of drawing the same random numbers in bulk (the practical limit): one
  Beta(a, b) per arm and one uniform per replicate per round for TS (at the parameters of a real
  run's final state), one uniform per replicate per round for UCB1;
* (c) peer libraries where they install and run on current numpy: MABWiser, and SMPyBandits 0.9.7
  (which imports ``scipy.special.btdtri``, removed from SciPy; this script aliases it to the
  identical ``betaincinv`` before importing it, and says so).

Per private policy (issue 19, item 6; ``--policies``; also ``beta_ts``, the non-private reference of item 1, which records nothing: its ledger-on and -off runs are the same run): pulls/s at 100 and 1000 replicates with the
ledger on (default tracking) and off (``simulate(ledger=False)``: since session 11 no recording at
all, docs/engine.md "Ledger off"; before, the mechanisms still staged into an internal ledger that
counted draws, which understated the ledger's cost), the ledger's extra time, the policy's *own* raw RNG limit
(drawing, in bulk with numpy, exactly the random numbers that policy consumed in the measured run:
its Laplace / normal / Beta / uniform draws counted by a counting Generator, plus one reward
uniform per replicate per round), the fraction of that limit, and pulls/s and microseconds per
round at 1 replicate (deployment decides one round at a time). Every figure is the best of
``--repeats`` runs, and the runs being compared (ledger on/off, engine/raw) are interleaved, so a
slow spell on a shared machine lands on both sides; report ratios from one run. Each row starts
with an untimed warm-up (``--warmup F``: a ledger-on and a ledger-off run of horizon/F rounds), and
its ledger-on and ledger-off runs come in adjacent pairs (order alternating): the "ledger extra"
column is the median over the pairs of their time ratio. Measured (three runs of dp_ucb,
dp_ucb_bound and private_ts at 100 and 1000 replicates, ``--repeats 3 --clock cpu``, load ~6 on 2
cores): the column's spread across runs fell from 7-50 points (best-of ratio, no warm-up) to 5-15.

Usage: ``python bench/bench_engine.py [--horizon 20000] [--horizon-1000 5000] [--horizon-1 5000]
[--repeats 3] [--warmup 4] [--policies a,b] [--clock wall|cpu] [--peers]`` (``--peers``: also the Beta-TS / UCB1 comparison with a
plain loop and peer libraries, and the Gaussian-TS ledger table, at ``--replicates``).
"""

from __future__ import annotations

import argparse
import random
import time
import types

import numpy as np

from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import REGISTRY, BetaTS, GaussianTS, UCB1
from privbandit.testing import reference
from privbandit.cli_checks import whole

MEANS = [0.75, 0.625, 0.5, 0.375, 0.25]
PRIVATE = ["private_ucb", "dp_ucb_bound", "dp_ucb", "dp_ucb_int", "dp_se", "anytime_lazy_ucb", "dp_ts",
           "private_ts", "lazy_dp_ts", "gaussian_ts"]
REFERENCE = ["beta_ts"]  # issue 19 item 1's non-private reference row (``--policies beta_ts``): no ledger, on = off


def best_interleaved(measures, repeats, warmup=None):
    """The best (largest) rate of each measurement, running them in turn ``repeats`` times, the order
    rotated by one each repeat: a process's first seconds run slower (measured: the same ledger-on run
    of Gaussian TS at 4.4e6 pulls/s first, 6.7e6 a few runs later), and a fixed order put every
    repeat's first run on the same side (ledger on), inflating the "ledger extra" column.

    ``warmup``: untimed calls made once before the timed repeats (shorter runs of the same
    measurements): the first runs of a configuration pay for compiled kernels' loading, scratch
    arrays' first allocation and cold caches, and with only a few repeats a slow first run can
    decide a column."""
    return [max(rates) for rates in interleaved_rates(measures, repeats, warmup)]


def interleaved_rates(measures, repeats, warmup=None):
    """Every rate of :func:`best_interleaved`'s runs: ``rates[i][r]`` of measurement i in repeat r."""
    for run in warmup or ():
        run()
    rates = [[0.0] * repeats for _ in measures]
    for r in range(repeats):
        for j in range(len(measures)):
            i = (j + r) % len(measures)
            rates[i][r] = measures[i]()
    return rates


def ledger_extra(on_rates, off_rates):
    """The ledger's extra time: the median over repeats of each repeat's off/on rate ratio, minus 1.
    The two runs of a repeat are adjacent in time (see policy_table), so a slow spell of a shared
    machine that lasts longer than a run lands on both sides of the ratio; the ratio of the best
    rates instead compares runs minutes apart."""
    return float(np.median(np.asarray(off_rates) / np.asarray(on_rates))) - 1.0


CLOCK = time.perf_counter  # --clock cpu: time.process_time (robust to other processes on a busy machine)
# --warmup: an untimed ledger-on and ledger-off run of 1/WARMUP_FRACTION of the horizon before each
# (policy, replicates) row's timed runs (0: none); see best_interleaved
WARMUP_FRACTION = 4


def ledger_pair(policy, horizon, replicates, flip=False):
    """(ledger-on rate, ledger-off rate) of two adjacent runs, the off run first when ``flip``."""
    if flip:
        off = engine_rate(policy, horizon, replicates, ledger=False)
        return engine_rate(policy, horizon, replicates, ledger=True), off
    on = engine_rate(policy, horizon, replicates, ledger=True)
    return on, engine_rate(policy, horizon, replicates, ledger=False)


def engine_rate(policy, horizon, replicates, **kwargs):
    start = CLOCK()
    simulate(policy, Bernoulli(MEANS), horizon, replicates, seed=0, progress=False, **kwargs)
    return horizon * replicates / (CLOCK() - start)


def plain_rate(fn, horizon, runs):
    rng = random.Random(0)
    start = time.perf_counter()
    for _ in range(runs):
        fn(MEANS, horizon, rng)
    return horizon * runs / (time.perf_counter() - start)


def numpy_loop_rate(horizon, runs):
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(runs):
        reference.beta_ts_numpy(MEANS, horizon, rng)
    return horizon * runs / (time.perf_counter() - start)


def raw_rng_rate(kind, horizon, replicates, state=None):
    rng = np.random.default_rng(0)
    block = 500
    start = time.perf_counter()
    for _ in range(horizon // block):
        if kind == "ts":
            a = np.broadcast_to(state[0], (block,) + state[0].shape)
            b = np.broadcast_to(state[1], (block,) + state[1].shape)
            rng.beta(a, b)
        elif kind == "gts":
            rng.standard_normal((block, replicates, len(MEANS)))
        rng.random((block, replicates))
    return (horizon // block) * block * replicates / (time.perf_counter() - start)


class CountingGenerator(np.random.Generator):
    """A Generator that counts the variates drawn by each sampler (and keeps the last Beta parameters)."""

    def __init__(self, seed):
        super().__init__(np.random.PCG64(seed))
        self.counts = {"laplace": 0, "normal": 0, "beta": 0, "random": 0, "integers": 0}
        self.beta_params = None

    def _count(self, kind, out):
        self.counts[kind] += np.size(out)
        return out

    def laplace(self, *args, **kwargs):
        return self._count("laplace", super().laplace(*args, **kwargs))

    def normal(self, *args, **kwargs):
        return self._count("normal", super().normal(*args, **kwargs))

    def standard_normal(self, *args, **kwargs):
        return self._count("normal", super().standard_normal(*args, **kwargs))

    def beta(self, a, b, size=None):
        self.beta_params = (np.array(a, dtype=float), np.array(b, dtype=float))
        return self._count("beta", super().beta(a, b, size))

    def random(self, *args, **kwargs):
        return self._count("random", super().random(*args, **kwargs))

    def integers(self, *args, **kwargs):
        return self._count("integers", super().integers(*args, **kwargs))


def make(name):
    return GaussianTS(b=10, c=4.0) if name == "gaussian_ts" else REGISTRY[name]()


def policy_draws(name, horizon, replicates):
    """The variates the policy draws in one run (its own Generator, run outside the engine)."""
    policy, env = make(name), Bernoulli(MEANS)
    rng = CountingGenerator(1)
    run = policy.start(env.n_arms, replicates, horizon, rng, ledger=None)
    env_run = env.start(replicates, np.random.default_rng(2))
    for t in range(1, horizon + 1):
        arms = run.select(t)
        run.update(t, arms, env_run.rewards(t, arms))
    return rng.counts, rng.beta_params


def raw_policy_rate(counts, beta_params, horizon, replicates, chunk=2**18):
    """Pulls/s if a run cost only drawing its variates in bulk: the policy's counted draws (Beta at the
    parameters of its last draw, broadcast) plus one reward uniform per replicate per round. Drawn in
    chunks of ``chunk`` variates (as a run draws them, in blocks), so the figure is the samplers' cost,
    not that of allocating one huge array."""
    rng = np.random.default_rng(0)

    def chunks(n):
        for start in range(0, n, chunk):
            yield min(chunk, n - start)

    start = CLOCK()
    for m in chunks(counts["laplace"]):
        rng.laplace(0.0, 1.0, m)
    for m in chunks(counts["normal"]):
        rng.standard_normal(m)
    if counts["beta"]:
        a, b = beta_params
        per = max(1, chunk // a.size)
        done = 0
        total = -(-counts["beta"] // a.size)
        while done < total:
            m = min(per, total - done)
            rng.beta(np.broadcast_to(a, (m,) + a.shape), np.broadcast_to(b, (m,) + b.shape))
            done += m
    for m in chunks(counts["integers"]):
        rng.integers(0, 2**20, m)
    for m in chunks(counts["random"] + horizon * replicates):
        rng.random(m)
    return horizon * replicates / (CLOCK() - start)


def loop_seconds(policy, horizon):
    """The engine's round loop for 1 replicate with the default ledger, timed on ``CLOCK`` (the
    engine's own ``seconds`` is wall-clock)."""
    from privbandit.ledger import Ledger

    env = Bernoulli(MEANS)
    book = Ledger(1, env.n_arms, track_replicates=1, capacity=horizon)
    run = policy.start(env.n_arms, 1, horizon, np.random.default_rng(1), ledger=book)
    env_run = env.start(1, np.random.default_rng(2))
    start = CLOCK()
    for t in range(1, horizon + 1):
        arms = run.select(t)
        run.update(t, arms, env_run.rewards(t, arms))
    return CLOCK() - start


def policy_table(names, horizons, repeats):
    """One row per private policy: see the module docstring."""
    print("Per private policy, 5 Bernoulli arms; pulls/s (best of %d interleaved runs; ledger extra time: "
          "median over those runs of the ratio of adjacent ledger-on and ledger-off runs)\n" % repeats)
    print("| policy | R | T | ledger on | ledger off | ledger extra time | own raw RNG limit | fraction (on) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    single = {}
    for name in names:
        pol = make(name)
        for replicates in (100, 1000):
            T = horizons[replicates]
            counts, beta_params = policy_draws(name, T, replicates)
            warm = max(1, T // WARMUP_FRACTION) if WARMUP_FRACTION else 0
            # ledger on and off as one measurement (adjacent runs, their order alternating by repeat)
            # and the raw limit as the other, interleaved
            pair = []
            on_rates, raw_rates = interleaved_rates(
                [lambda: pair.append(ledger_pair(pol, T, replicates, flip=len(pair) % 2 == 1)) or pair[-1][0],
                 lambda: raw_policy_rate(counts, beta_params, T, replicates)], repeats,
                warmup=[lambda: engine_rate(pol, warm, replicates, ledger=True),
                        lambda: engine_rate(pol, warm, replicates, ledger=False)] if warm else None)
            off_rates = [p[1] for p in pair]
            on, off, raw = max(on_rates), max(off_rates), max(raw_rates)
            print(f"| {name} | {replicates} | {T} | {on:.3g} | {off:.3g} | {ledger_extra(on_rates, off_rates):+.0%} | "
                  f"{raw:.3g} | {on / raw:.1%} |", flush=True)
        T = horizons[1]
        whole, loop = 0.0, 0.0
        for _ in range(repeats):
            start = CLOCK()
            res = simulate(pol, Bernoulli(MEANS), T, 1, seed=0, progress=False)
            whole = max(whole, T / (CLOCK() - start))
            loop = max(loop, T / loop_seconds(pol, T))
        single[name] = whole, loop
    print(f"\n1 replicate, T = {horizons[1]}, ledger on: the whole simulate call (certificate included) and "
          "the round loop alone\n")
    print("| policy | pulls/s (whole simulate) | pulls/s (round loop) | us per round |")
    print("|---|---:|---:|---:|")
    for name, (whole, loop) in single.items():
        print(f"| {name} | {whole:.3g} | {loop:.3g} | {1e6 / loop:.0f} |")


def mabwiser_rate(kind, pulls):
    try:
        from mabwiser.mab import MAB, LearningPolicy
    except ImportError:
        return None, "not installed (pip install mabwiser)"
    lp = LearningPolicy.ThompsonSampling() if kind == "ts" else LearningPolicy.UCB1(alpha=np.sqrt(2))
    mab = MAB(arms=list(range(5)), learning_policy=lp, seed=0)
    mab.fit(decisions=list(range(5)), rewards=[1, 0, 1, 0, 1])
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(pulls):
        arm = mab.predict()
        mab.partial_fit([arm], [int(rng.random() < MEANS[arm])])
    return pulls / (time.perf_counter() - start), "MABWiser " + __import__("importlib.metadata").metadata.version("mabwiser")


def smpybandits_rate(kind, pulls):
    try:
        import scipy.special

        if not hasattr(scipy.special, "btdtri"):
            scipy.special.btdtri = scipy.special.betaincinv  # same function; removed in SciPy 1.14
        from SMPyBandits.Policies import UCB, Thompson
    except ImportError as exc:
        return None, f"not runnable ({exc})"
    policy = Thompson(5) if kind == "ts" else UCB(5)
    policy.startGame()
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(pulls):
        arm = policy.choice()
        policy.getReward(arm, float(rng.random() < MEANS[arm]))
    return pulls / (time.perf_counter() - start), "SMPyBandits 0.9.7 (btdtri shim)"


PEER_SOLVERS = {  # registry name -> keirp/private-bandits solver factory (n_arms, epsilon, T), as its scripts build them
    "ucb1": lambda m, k, e, T: m.nonprivate.ucb.UCB1Solver(n_arms=k),
    "private_ucb": lambda m, k, e, T: m.private.private_ucb.PrivateUCBSolver(n_arms=k, epsilon=e, T=T, gamma=T ** -4),
    "dp_ucb_bound": lambda m, k, e, T: m.private.dp_ucb_bound.DPUCBBoundSolver(n_arms=k, epsilon=e),
    "dp_ucb": lambda m, k, e, T: m.private.dp_ucb.DPUCBSolver(n_arms=k, epsilon=e),
    "dp_se": lambda m, k, e, T: m.private.dp_successive_elimination.DPSuccessiveEliminationSolver(
        n_arms=k, epsilon=e, beta=T ** -1),
}


def peer_one_replicate_table(path: str, horizon: int, repeats: int, epsilon: float = 1.0) -> None:
    """One replicate, ours against keirp/private-bandits (a plain-Python implementation of the same
    policies; a local checkout at ``path``, imported as it is, never vendored): the same instance
    and epsilon, its own Runner loop (one solver, one BernoulliBandits), best of ``repeats``
    interleaved runs. Ours is timed whole (certificate included) and loop-only
    (SimulationResult.seconds). Wall clock throughout (the loop-only time is a wall-clock figure),
    whatever ``--clock`` says."""
    import importlib
    import sys

    sys.path.insert(0, path)
    try:
        solvers = types.SimpleNamespace(
            private=importlib.import_module("private_bandits.solvers.private"),
            nonprivate=importlib.import_module("private_bandits.solvers.nonprivate"))
        for sub in ("private.private_ucb", "private.dp_ucb_bound", "private.dp_ucb",
                    "private.dp_successive_elimination", "nonprivate.ucb"):
            importlib.import_module("private_bandits.solvers." + sub)
        bandits = importlib.import_module("private_bandits.bandits.bernoulli_bandits")
        runners = importlib.import_module("private_bandits.bandits.runners")
    finally:
        sys.path.remove(path)
    print(f"\nOne replicate against keirp/private-bandits ({path}), 5 Bernoulli arms, eps = {epsilon}, "
          f"T = {horizon}; pulls/s (wall clock), best of {repeats}\n")
    print("| policy | peer | ours (whole run) | ours (loop only) | ours/peer (whole) | ours/peer (loop) | ours us/round (loop) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, build in PEER_SOLVERS.items():
        policy = REGISTRY[name]() if name == "ucb1" else REGISTRY[name](epsilon=epsilon)
        peer = whole = loop = 0.0
        for _ in range(repeats):
            np.random.seed(0)
            runner = runners.Runner(bandits.BernoulliBandits(len(MEANS), list(MEANS)),
                                    [build(solvers, len(MEANS), epsilon, horizon)])
            start = time.perf_counter()
            runner.run_all(horizon)
            peer = max(peer, horizon / (time.perf_counter() - start))
            start = time.perf_counter()
            res = simulate(policy, Bernoulli(MEANS), horizon, 1, seed=0, progress=False)
            whole = max(whole, horizon / (time.perf_counter() - start))
            loop = max(loop, horizon / res.seconds)
        print(f"| {name} | {peer:.3g} | {whole:.3g} | {loop:.3g} | {whole / peer:.2f}x | {loop / peer:.2f}x | "
              f"{1e6 / loop:.1f} |")


def final_ts_state(horizon, replicates):
    """Beta parameters at the end of a real run (the RNG cost depends on them)."""
    pulls = simulate(BetaTS(), Bernoulli(MEANS), horizon, replicates, seed=1, progress=False).pulls
    successes = pulls * np.asarray(MEANS)
    return 1 + successes, 1 + pulls - successes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--horizon", type=whole(1), default=20_000)
    parser.add_argument("--horizon-1000", type=whole(1), default=5_000, help="horizon at 1000 replicates")
    parser.add_argument("--horizon-1", type=whole(1), default=5_000, help="horizon at 1 replicate")
    parser.add_argument("--replicates", type=whole(1), default=100, help="replicates of the --peers tables")
    parser.add_argument("--repeats", type=whole(1), default=3)
    parser.add_argument("--policies", default=",".join(PRIVATE))
    parser.add_argument("--peers", action="store_true", help="also the Beta-TS/UCB1 peer and Gaussian-TS tables")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: process time, for a machine shared with other work (ratios stay meaningful)")
    parser.add_argument("--peer-path", default=None,
                        help="a local checkout of keirp/private-bandits: also the one-replicate comparison with it")
    parser.add_argument("--peer-horizon", type=whole(1), default=10_000)
    parser.add_argument("--skip-table", action="store_true", help="skip the per-policy table")
    parser.add_argument("--warmup", type=whole(0), default=4, metavar="F",
                        help="before each row's timed runs, an untimed ledger-on and ledger-off run of "
                             "horizon/F rounds (0: no warm-up; default %(default)s)")
    args = parser.parse_args()
    global CLOCK, WARMUP_FRACTION
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.warmup < 0:
        parser.error(f"--warmup must be a whole number in [0, inf), got {args.warmup}")
    WARMUP_FRACTION = args.warmup
    print(f"clock: {args.clock}\n")
    names = [n for n in args.policies.split(",") if n]
    unknown = sorted(set(names) - set(PRIVATE) - set(REFERENCE))
    if unknown:
        parser.error(f"--policies: unknown private policies {unknown}; known: {', '.join(PRIVATE + REFERENCE)}")
    if not args.skip_table:
        policy_table(names, {100: args.horizon, 1000: args.horizon_1000, 1: args.horizon_1}, args.repeats)
    if args.peer_path:
        peer_one_replicate_table(args.peer_path, args.peer_horizon, args.repeats)
    if not args.peers:
        return
    print()
    T, R = args.horizon, args.replicates
    state = final_ts_state(T, R)
    rows = []
    for kind, policy, plain in (("ts", BetaTS(), reference.beta_ts), ("ucb", UCB1(), reference.ucb1)):
        ours = max(engine_rate(policy, T, R) for _ in range(3))  # best of three: runs vary by ~10%
        loop = plain_rate(plain, T, 3)
        raw = max(raw_rng_rate(kind, T, R, state) for _ in range(3))
        mw, mw_note = mabwiser_rate(kind, 3_000)
        smpy, smpy_note = smpybandits_rate(kind, 20_000)
        rows.append((policy.name, ours, loop, raw, mw, mw_note, smpy, smpy_note))
    print(f"horizon {T}, {R} replicates, 5 Bernoulli arms; pulls per second (ratio = ours / other)\n")
    print("| policy | privbandit | plain loop | ours/loop | raw RNG limit | ours/raw | MABWiser | ours/MABWiser | SMPyBandits | ours/SMPyBandits |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, ours, loop, raw, mw, _, smpy, _ in rows:
        mw_s = f"{mw:.3g} | {ours / mw:.0f}x" if mw else "n/a | n/a"
        sm_s = f"{smpy:.3g} | {ours / smpy:.0f}x" if smpy else "n/a | n/a"
        print(f"| {name} | {ours:.3g} | {loop:.3g} | {ours / loop:.0f}x | {raw:.3g} | {ours / raw:.0%} | {mw_s} | {sm_s} |")
    np_loop = numpy_loop_rate(T, 2)
    print(f"\nbeta_ts against a per-round loop written with numpy calls (one replicate at a time): "
          f"{np_loop:.3g} pulls/s, ours/that = {rows[0][1] / np_loop:.0f}x")
    _, ours, loop, raw = rows[0][:4]
    print(f"beta_ts ceiling against the plain loop: drawing only the random numbers, in bulk, is "
          f"{raw / loop:.0f}x the plain loop; a ratio of 30x needs {30 * loop / raw:.0%} of that limit "
          f"(we run at {ours / raw:.0%})")
    print()
    for row in rows[:1]:
        print(f"peers: {row[5]}; {row[7]}")

    # Gaussian TS (Ou et al., b=10, c=4): the ledger's worst case (every arm of every replicate
    # releases every round); live certificate always on, ledger off / 8 tracked / all tracked.
    # Best of three interleaved runs each: single runs on this (virtual) 2-core machine vary by ~10%,
    # and interleaving keeps a slow spell from landing on one side only.
    gts = GaussianTS(b=10, c=4.0)
    off, on8, on_all = best_interleaved(
        [lambda: engine_rate(gts, T, R, ledger=False), lambda: engine_rate(gts, T, R, ledger=True),
         lambda: engine_rate(gts, T, R, ledger=True, ledger_replicates=None)], repeats=3)
    loop = plain_rate(lambda m, h, r: reference.gaussian_ts(m, h, r, b=10, c=4.0), T, 3)
    raw = max(raw_rng_rate("gts", T, R) for _ in range(3))
    print("\n| gaussian_ts (b=10, c=4) | pulls/s | ratio |")
    print("|---|---:|---:|")
    print(f"| ledger off (certificate only) | {off:.3g} | {off / raw:.0%} of raw RNG, {off / loop:.0f}x plain loop |")
    print(f"| ledger on, 8 tracked replicates (default) | {on8:.3g} | {on8 / off:.0%} of ledger-off speed |")
    print(f"| ledger on, all {R} replicates tracked | {on_all:.3g} | {on_all / off:.0%} of ledger-off speed |")
    print(f"| raw RNG (normals + uniforms in bulk) | {raw:.3g} | |")
    print(f"| plain per-round loop | {loop:.3g} | |")

    # The ledger's cost for every private policy (default: 8 tracked replicates); best of three
    # interleaved runs each.
    print("\n| private policy | ledger off (pulls/s) | ledger on | extra time |")
    print("|---|---:|---:|---:|")
    for name, cls in sorted(REGISTRY.items()):
        if not cls.private:
            continue
        pol = GaussianTS(b=10, c=4.0) if cls is GaussianTS else cls()
        off, on = best_interleaved([lambda: engine_rate(pol, T, R, ledger=False),
                                    lambda: engine_rate(pol, T, R, ledger=True)], repeats=3)
        print(f"| {name} | {off:.3g} | {on:.3g} | {off / on - 1:+.0%} |")


if __name__ == "__main__":
    main()
