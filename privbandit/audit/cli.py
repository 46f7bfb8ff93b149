"""``privbandit audit POLICY``: the ledger audit and the black-box audit of one configured policy.

Wiring (in ``privbandit/cli.py``'s ``build_parser``)::

    from privbandit.audit.cli import add_parser as add_audit_parser
    add_audit_parser(sub)

Exit status (:data:`EXIT_CODES`): 0 CONSISTENT (no audit refutes the claim and at least one had
power), 1 VIOLATION, 3 INCONCLUSIVE (nothing refuted, but no audit had power: a CI gate must not pass
this silently; ``--allow-inconclusive`` turns it into 0), 2 bad input (raised as ValueError and
reported by ``privbandit.cli.main``). The final ``VERDICT:`` line states the power reached: the best
black-box lower bound as a fraction of the claim, and the white-box audit's power.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time

import numpy as np

from privbandit.audit import false_alarms
from privbandit.cli import parse_params as _parse_params
from privbandit.cli_checks import positive, probability, require_extra, staged_outputs, whole, writable_dir

EXIT_CODES = {"CONSISTENT": 0, "VIOLATION": 1, "INCONCLUSIVE": 3}
"""Exit status per verdict (2 is bad input)."""

TIERS = {
    # AUDIT.md 3.4: CI ~ 2e5 runs per side with mu certificates; nightly/thorough: template scan + 2e6.
    # wb_budget: replicate-rounds of each coupled white-box run (replicates = budget / horizon).
    "ci": dict(runs=200_000, pilot=6_000, arm_rest=(0.5,), others=(0.5, 0.0, 1.0), tight_reps=20,
               cheap_reps=500, wb_budget=100_000, seconds=75.0),
    # smoke: seconds-scale sizes for tests of the command itself (no power to speak of)
    "smoke": dict(runs=5_000, pilot=1_000, arm_rest=(0.5,), others=(0.5,), tight_reps=4, cheap_reps=50,
                  wb_budget=4_000, seconds=None),
    "thorough": dict(runs=2_000_000, pilot=100_000, arm_rest=(0.0, 0.5, 1.0), others=(0.0, 0.25, 0.5, 0.75, 1.0),
                     tight_reps=100, cheap_reps=5000, wb_budget=800_000, seconds=None),
}


WB_LONG = dict(factor=10, minimum=2_000, cap=20_000, replicates=32, schedule=32)
"""The long, thin white-box run: the exact checks (no noise-law test) on 32 coupled replicates at ten
times the white-box horizon (at least 2,000 rounds, at most 20,000), so that code paths that only run
late (a scale that changes after round 1,000, the hybrid's later blocks, the interval mean's later
releases) are checked too; the exact checks need a witness, not a sample size. ``schedule``: 32 more
replicates whose changed record sits on the policy's own release boundaries (an interval's or a
batch's last record, or the next one), read from a clean probe run (``whitebox_audit``'s
``schedule_records``)."""

WB_LATE = dict(factor=4, cap=40_000, replicates=4)
"""The late, thinner white-box run (round 11): the exact checks on 4 coupled replicates at four times the long
run's horizon (8,000 rounds for most policies, at most 40,000), changing late records: a bug that waits past
the long run's last round (a scale cut at round 3,000) is reached. Skipped when it would not go further."""

WB_MANY_ARMS = 8
"""The white-box audit's extra coupled run with this many arms when ``--arms`` is smaller (round 11, 6
arms; round 12, 8): the replicates change arm ``r mod K``, so arms 3-7 hold changed records, and a leak
keyed to a high arm index (>= 3 in round 11, >= 6 in round 12) or to K >= 5 (a 4-column noise buffer) is
reached. A quarter of the tier's white-box budget (125 replicates at T = 200), with the noise law (its
own family-wise alpha)."""

WB_WIDE = dict(arms=33, budget=13_200, min_replicates=33)
"""Session 13: one more coupled white-box run on ``arms`` = 33 arms (indices up to 32; the run above on
:data:`WB_MANY_ARMS` stops at arm 7), exact checks only (no alpha), at the policy's probe horizon for 33
arms with max(``min_replicates``, ``budget`` / horizon) replicates (66 at T = 200: every arm holds the changed
record of two replicates). Skipped where one run on a 0.5 tape makes no release within 20,000 rounds on 33
arms (DP-SE: its first epoch holds ~1,600 pulls per arm)."""

WB_SWEEP = dict(replicates=128, last=8, deep=32)
"""Session 13: one more coupled white-box run at the long run's horizon, exact checks only, whose
``replicates`` changed records walk the first 16 positions of the policy's own batches
(``whitebox_audit(sweep_records=...)``, :func:`~privbandit.audit.whitebox.sweep_positions`), and whose
``last`` more replicates change the record revealed in the run's last round (``last_records``). Session 14:
``deep`` more replicates change a record 16 or more into one of the policy's long batches (``deep_records``,
:func:`~privbandit.audit.whitebox.deep_positions`: a batch's second to fourth last records, and a stratified
draw over the rest), and ``replicates`` walk offsets 0 .. 31 (64, offsets 0 .. 15, in session 13)."""

FAST_FORWARD = dict(start=2**15, window=512, replicates=16)
"""Session 13: a coupled window of ``window`` rounds from round max(``start``, the power of two above the late
run's horizon), behind an untraced prefix (:mod:`privbandit.audit.fast_forward`); its ``replicates`` change
the records of that many consecutive rounds."""

CLOCK_JUMP = dict(prefix=2**12, window=256, replicates=32)
"""Session 15: the clock-jump run (:func:`~privbandit.audit.fast_forward.clock_jump_audit`): ``prefix`` real rounds
untraced, then windows of ``window`` rounds told as the rounds around 2^16, 2^20, 2^24 and 2^31, holding the
changed records of ``replicates`` coupled replicates (8 a window); exact checks only, no alpha. Reaches code
keyed to the round number far past the fast-forward window (2^15) at ~0.5-2 s CPU a policy; the 2^20 window
measured in session 14 (a faithful prefix of 2^20 rounds) would cost ~80-110 s."""

FAR = dict(horizon=2**17, replicates=8, single=2**13, single_arms=16)
"""The far ledger run (round 12): the cheap ledger audit (mu and pure epsilon, realized <= certified) on
2^17 = 131,072 rounds, on a *starving* environment -- arm 0 pays 1 every round, every other arm 0 -- so
that a record of a starved arm stays in (nearly) every later release: the worst case a schedule must
bound. A schedule that stops counting releases late (a cap at 10,000 rounds) is exceeded there; the
white-box runs end by 40,000 rounds and, on the mixed tapes, rarely starve a stream. Round 12 ran one
replicate untraced (the engine's own run and ledger: 7-15 s per policy on the shared 2-core machine).
Round 13: ``replicates`` = 8 under :class:`~privbandit.audit.far_law.FarLawTracer`, whose noise-law test
(:func:`~privbandit.audit.far_law.far_law`) sees every release's residual in units of its reported scale
far into the run (an arm's 2^13-th to ~2^17-th record; a tree's level >= 13 nodes number ~15 per
replicate there, hence 8 replicates); and ``single``: the same traced test on one replicate of 2^13
rounds with ``single_arms`` arms, the *last* one paying 1 (a code path taken only with one replicate --
a deployment's shape -- is driven by no other run of the audit, and most of this run's releases are on
arm 15: past the white-box runs' 8 arms). The two share the test's budget FAR_LAW_ALPHA."""

SEED_RUNS = 16
"""Session 15: check 5e (noise that ignores the run's seed) also in the contextual main run and the graph
feedback run, with this many replicates per seed (the K-armed runs' ``whitebox_audit(seed_runs=16)``)."""

WB_RELEASES = 2_000
"""Traced releases the coupled white-box run aims at: about 2,000 Laplace residuals give the DKW test at
alpha 1e-4 power ~1 against a factor-2 scale error (its distance 1/8 vs a critical value ~0.05)."""

def _false_alarms() -> str:
    """The VERDICT line's statement of the white-box false-alarm budget as this audit spent it (session 16,
    :mod:`privbandit.audit.false_alarms`: each statistical family of each white-box run -- checks 5, its tails,
    the per-stream law, the coincidences, 5d's pairings, 5f, the far law -- tallied where its test is made)."""
    t = false_alarms.current()
    return t.statement() if t is not None else "white-box false alarms not tallied"


def _false_alarm_summary() -> dict:
    """The ``--out`` summary's record of the same tally: the bound and each family's tests and level."""
    t = false_alarms.current()
    if t is None:
        return {}
    return {"bound": t.total, "tests": t.families,
            "families": {name: {"tests": n, "alpha": a} for name, (n, a) in t.by_family().items()}}


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``audit`` subcommand on an ``argparse`` subparsers object."""
    p = subparsers.add_parser("audit", help="audit a policy: ledger check (white-box) and empirical lower "
                                            "bounds (black-box) against its certificate",
                              epilog="exit status: 0 CONSISTENT, 1 VIOLATION, 3 INCONCLUSIVE (0 with "
                                     "--allow-inconclusive), 2 bad input")
    p.add_argument("policy", help="registered policy name, e.g. gaussian_ts")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="policy parameter (repeatable)")
    # every run holds per-arm state and the white-box environment one mean per arm: 10^4 arms is far
    # beyond any audit (1e30 arms was numpy's "Maximum allowed size exceeded", naming no option)
    p.add_argument("--arms", type=whole(2, 10**4), default=2, help="number of arms, in [2, 10000] (default 2)")
    p.add_argument("--horizon", type=whole(1), default=None,
                   help="rounds per run (default: the policy's pre-pull rounds + 20)")
    p.add_argument("--tier", choices=sorted(TIERS), default="ci", help="sample sizes (default ci)")
    p.add_argument("--seconds", type=positive, default=None, help="wall-clock cap for the black-box audits")
    p.add_argument("--seed", type=whole(0), default=0, help="seed (default 0)")
    p.add_argument("--alpha", type=probability, default=0.05, help="family-wise error of the black-box audits (default 0.05)")
    p.add_argument("--delta", type=probability, default=1e-5, help="delta of the eps-at-delta certificate (default 1e-5)")
    p.add_argument("--exact", action="store_true",
                   help="add the exact known answer to the actions audit where one exists (2-arm Gaussian TS, "
                        "at most 22 adaptive rounds): the bounds ladder audit <= exact <= claim")
    p.add_argument("--one-run", type=whole(0), default=0, metavar="CANARIES",
                   help="also run a one-run canary audit (Steinke, Nasr & Jagielski 2023) with this many "
                        "canaries per run: a smoke test for expensive policies (default: off)")
    p.add_argument("--one-run-runs", type=whole(1), default=1, metavar="RUNS",
                   help="independent runs pooled by the one-run audit, each with fresh canaries (default 1)")
    p.add_argument("--allow-inconclusive", action="store_true",
                   help="exit 0 instead of 3 when the verdict is INCONCLUSIVE (no audit had power)")
    p.add_argument("--out", default=None, help="directory for tables (md, csv), plots and summary.json")
    p.set_defaults(func=run)
    return p


def _print_audit(heading: str, res, notes: bool = False) -> None:
    """One white-box section of the report: its heading, summary, findings (and notes)."""
    print(heading)
    print(res.summary())
    for f in res.findings:
        print(f"- [{f.check}] {f.detail}")
    for note in (res.notes if notes else ()):
        print(f"- note: {note}")
    print()


def _plans(policy, n_arms: int, horizon: int) -> bool:
    """Whether runs of ``policy`` can plan rounds ahead (their class overrides ``PolicyRun.plan``)."""
    from privbandit.policies.base import PolicyRun

    try:
        run = policy.start(n_arms, 1, horizon, np.random.default_rng(0))
    except Exception:  # noqa: BLE001 -- the policy raised: the audits proper observe it (privbandit/audit/raised.py)
        return False
    return type(run).plan is not PolicyRun.plan


def _has_trace(policy, n_arms, horizon) -> bool:
    """True when a traced run records something (every policy whose mechanisms draw through the
    toolkit's sampler and report: the known trace methods, or every release)."""
    from privbandit.audit.raised import PolicyRaised
    from privbandit.audit.runner import auto_trace, run_policy

    try:
        out = run_policy(policy, np.full((n_arms, horizon), 0.5), horizon, 2, np.random.default_rng(0),
                         trace=auto_trace)
    except (ValueError, PolicyRaised):  # a policy that raises: the actions audit observes it
        return False
    return out["trace"] is not None and out["trace"].shape[1] > 0


def run(args: argparse.Namespace) -> int:
    """``privbandit audit``: every audit of the tier, the statistical tests' levels tallied for the VERDICT line."""
    with false_alarms.tally():
        return _run_audit(args)


def _run_audit(args: argparse.Namespace) -> int:
    from privbandit.audit import Audit, Budget, Neighbours, ledger_audit
    from privbandit.audit.far_law import FAR_LAW_ALPHA, FarLawTracer, far_law
    from privbandit.envs import Bernoulli
    from privbandit.policies import make_policy

    started = time.perf_counter()
    tier = TIERS[args.tier]
    policy = make_policy(args.policy, **_parse_params(args.param))
    if not policy.private:
        raise ValueError(f"{args.policy} is not private: there is no claim to audit")
    edgeless = policy.requires == frozenset({"graph"})
    contextual = policy.requires == frozenset({"contexts"})
    if policy.requires and not (edgeless or contextual):
        raise ValueError(f"{args.policy} requires {' and '.join(sorted(policy.requires))}, which no audit here "
                         "provides: privbandit audit covers policies on plain bandit feedback, on an edgeless "
                         "feedback graph, or on contexts")
    k = int(args.arms)
    if k < 2:
        raise ValueError(f"--arms must be >= 2, got {k}")
    prepulls = int(getattr(policy, "b", 0) or 0)
    horizon = int(args.horizon) if args.horizon is not None else k * prepulls + 20
    if args.horizon is None and horizon < k and not policy.requires == frozenset({"contexts"}):
        # (the default was refused deep inside as "horizon must be a whole number >= the number of arms (1000),
        # got 20", naming an option the user never gave)
        raise ValueError(f"--arms {k} needs --horizon >= {k}: the default horizon (the policy's pre-pull rounds + 20) "
                         f"is {horizon}")
    if args.seconds is not None and not args.seconds > 0:
        raise ValueError(f"--seconds must lie in (0, inf), got {args.seconds}")
    if contextual:  # contexts in every select: the contextual white-box audit and ledger audits
        return _run_contextual(args, policy, tier, k, started)
    # the black-box audits hold (runs per chunk) x horizon actions, 1 byte each; the ledger audits
    # cheap_reps x horizon per-round arrays: refuse a horizon that cannot fit before running anything
    from privbandit.engine import check_memory

    check_memory(horizon, max(tier["cheap_reps"], -(-min(tier["runs"], 250_000) // 24)),
                 what=f"runs held at once (tier {args.tier})")
    if args.one_run:
        # checked before the audits run (a minute or more), not when the one-run audit starts after them: canary
        # i sits on arm i mod K at pull prepulls + i // K (one_run.design_canaries), so K (horizon - prepulls)
        # fit; the runs are held at once (actions and bits, runs x horizon)
        room = k * max(0, horizon - prepulls)
        if args.one_run > room:
            raise ValueError(f"--one-run must be a whole number in [0, {room}] with --arms {k} and horizon {horizon} "
                             f"(canaries sit at pull positions {prepulls}..{horizon - 1} of each arm), got {args.one_run}")
        check_memory(horizon, args.one_run_runs, what="--one-run-runs")
    if args.out is not None:  # checked (and created) before the audits run, not after
        require_extra("matplotlib", "--out (audit plots)")
        writable_dir(args.out, "--out")

    # 1. White-box: realized <= certified, no re-draws.
    env = Bernoulli(list(np.linspace(0.4, 0.6, k)))
    if edgeless:
        # a graph-feedback policy with no offer plays on the edgeless graph (GraphPolicyRun.select):
        # K-armed bandit feedback, the setting of every audit below; the ledger audits get that graph
        from privbandit.envs.graph import GraphFeedback

        env = GraphFeedback(env, np.eye(k, dtype=bool))
        print(f"note: {args.policy}'s ledger, white-box (K-armed) and black-box audits run on the edgeless feedback "
              "graph (K-armed bandit feedback); its side observations are audited by the graph white-box audit "
              "below (privbandit/audit/graph.py)\n")
    tight = ledger_audit(policy, env, horizon, tier["tight_reps"], seeds=(args.seed,), tight=True)
    cheap = ledger_audit(policy, env, horizon, tier["cheap_reps"], seeds=(args.seed + 1,), tight=False)
    print("## Ledger audit\n")
    for res in (tight, cheap):
        print(res.summary())
    print()
    print(tight.table())
    print()

    # 1b. White-box coupled runs: decisions, unreported releases, sensitivities, footprints, noise law.
    from privbandit.audit.whitebox import probe_horizon, release_profile, whitebox_audit

    wb_horizon = probe_horizon(policy, k)
    # does the black-box horizon see any release, and how many releases does a coupled replicate make?
    first, per_rep = release_profile(policy, k, wb_horizon)
    wb_reps = tier["wb_budget"] // wb_horizon
    if per_rep and wb_reps * per_rep < WB_RELEASES:
        # sparse releases (DP-UCB-Int at its default certified epsilon: ~1 per arm in T = 542; DP-SE):
        # more replicates, up to 4x the budget, so that the noise-law test has power against a factor 2
        wb_reps = min(4 * tier["wb_budget"] // wb_horizon, -(-WB_RELEASES // per_rep))
    wb_reps = int(min(1024, max(32, wb_reps)))
    # check 5e on every replicate too (session 16): noise keyed to a replicate's index past the first 16
    wb = whitebox_audit(policy, wb_horizon, k, wb_reps, seed=args.seed, seed_wide=True)
    _print_audit("## White-box audit (coupled runs, every release traced)\n", wb, notes=True)
    print(wb.table())
    print()
    # the smoke tier tests the command, not the policy: a long run of twice the horizon, 8 replicates
    long = WB_LONG if args.tier != "smoke" else dict(factor=2, minimum=0, cap=WB_LONG["cap"], replicates=8, schedule=8)
    long_horizon = min(long["cap"], max(long["minimum"], long["factor"] * wb_horizon))
    # half its replicates change a late record: footprints wrong only deep in a stream show there; the
    # schedule replicates change a record on the policy's own release boundaries (probe run)
    wb_long = whitebox_audit(policy, long_horizon, k, long["replicates"], seed=args.seed + 1, law=False,
                             late_records=True, schedule_records=long["schedule"])
    _print_audit(f"## White-box audit, long run (exact checks only, T={long_horizon})\n", wb_long)
    # A policy that plans rounds ahead runs them through update_block in simulate, never in the runs
    # above (round by round, a deployment's path): one more long run takes the planned path.
    wb_plan = None
    if _plans(policy, k, long_horizon):
        wb_plan = whitebox_audit(policy, long_horizon, k, long["replicates"], seed=args.seed + 2, law=False,
                                 late_records=True, planned=True, schedule_records=long["schedule"])
        _print_audit(f"## White-box audit, long run with planned rounds (update_block, T={long_horizon})\n", wb_plan)

    # 1b'. More arms and later rounds (round 11): a leak keyed to an arm index >= 3 or to K >= 5, and one
    # that waits past the long run's last round, are reached by one more coupled run each.
    wb_many = wb_late = None
    if k < WB_MANY_ARMS and args.tier != "smoke":
        many_reps = int(min(1024, max(32, tier["wb_budget"] // (4 * wb_horizon))))
        many_reps -= many_reps % 4
        wb_many = whitebox_audit(policy, wb_horizon, WB_MANY_ARMS, many_reps, seed=args.seed + 4)
    late_horizon = min(WB_LATE["cap"], WB_LATE["factor"] * long_horizon)
    if late_horizon > long_horizon and args.tier != "smoke":
        wb_late = whitebox_audit(policy, late_horizon, k, WB_LATE["replicates"], seed=args.seed + 5, law=False,
                                 late_records=True)
    # 1b''. Session 13: arm indices up to 32, every position inside the policy's batches, a coupled window
    # past the late run (behind an untraced prefix); exact checks only, no alpha spent
    wb_wide = wb_sweep = wb_ff = wb_jump = None
    reach_began = time.perf_counter()
    if args.tier != "smoke":
        wb_wide, wb_sweep, wb_ff, wb_jump = reach_runs(policy, k, long_horizon, late_horizon, args.seed)
    reach_seconds = time.perf_counter() - reach_began
    for label, res in (("more arms", wb_many), ("late run, exact checks only", wb_late),
                       ("many arms, exact checks only", wb_wide), ("every position in a batch, exact checks only", wb_sweep),
                       ("a window far into the run behind an untraced prefix, exact checks only", wb_ff),
                       ("windows far out on a jumping round clock, exact checks only", wb_jump)):
        if res is None:
            continue
        _print_audit(f"## White-box audit, {label} (K={res.n_arms}, T={res.horizon})\n", res)
    # 1b''. Round 12: the far ledger run (a starving environment, 2^17 rounds, one replicate).
    far = far_single = far_noise = single_noise = None
    if args.tier != "smoke" and FAR["horizon"] > max(horizon, late_horizon):
        starving = Bernoulli([1.0] + [0.0] * (k - 1))
        if edgeless:
            from privbandit.envs.graph import GraphFeedback

            starving = GraphFeedback(starving, np.eye(k, dtype=bool))
        far_tracer, single_tracer = FarLawTracer(), FarLawTracer()
        with far_tracer:
            far = ledger_audit(policy, starving, FAR["horizon"], FAR["replicates"], seeds=(args.seed + 7,),
                               tight=False)
        single_arms = max(k, FAR["single_arms"])
        starving_last = Bernoulli([0.0] * (single_arms - 1) + [1.0])
        if edgeless:
            starving_last = GraphFeedback(starving_last, np.eye(single_arms, dtype=bool))
        with single_tracer:
            far_single = ledger_audit(policy, starving_last, FAR["single"], 1, seeds=(args.seed + 8,), tight=False)
        far_noise = far_law(far_tracer, FAR_LAW_ALPHA / 2.0)
        single_noise = far_law(single_tracer, FAR_LAW_ALPHA / 2.0)
        print(f"## Far ledger run (starving environment, T={FAR['horizon']}, {FAR['replicates']} replicates)\n")
        print(far.summary())
        print(far_noise.summary())
        print(f"\n## One-replicate run (starving environment, K={single_arms}, T={FAR['single']})\n")
        print(far_single.summary())
        print(single_noise.summary())
        print()

    # 1b'''. Session 12: the far schedule check -- the certificate at 2^17 .. 10^12 rounds, no run (far_schedule.py)
    far_sched = None
    if args.tier != "smoke":
        from privbandit.audit.far_schedule import far_schedule_check

        far_sched = far_schedule_check(policy, k, env.structure() if edgeless else None)
        print("## Far schedule check (the certificate at 2^17 .. 10^12 rounds against its mechanisms' releases)\n")
        print(far_sched.summary())
        print()

    # 1c. A graph-feedback policy: coupled runs with side observations on a real feedback graph (every
    # audit above drives it on the edgeless graph), under the entry and the round relation.
    wb_graph = wb_starve = None
    wb_shapes = {}
    if edgeless:
        from privbandit.audit.graph import graph_whitebox_audit

        # the smoke tier tests the command: a short run with few replicates
        size = GRAPH if args.tier != "smoke" else dict(GRAPH, horizon=60, replicates=16, starve_replicates=8,
                                                             shape_replicates=8)
        wb_graph = graph_whitebox_audit(policy, size["horizon"], k, size["replicates"], seed=args.seed,
                                        seed_runs=SEED_RUNS)
        # the worst transcript for a round's record: revealed to every arm, then its streams starved
        wb_starve = graph_whitebox_audit(policy, size["horizon"], max(k, size["starve_arms"]),
                                         size["starve_replicates"], seed=args.seed + 3, starve=True)
        # round 11: a star (a hub of degree K - 1) and a graph redrawn every round (hubs of degree >= 3
        # everywhere, neighbourhoods that change each round), on at least GRAPH["shape_arms"] arms
        wb_shapes = {shape: graph_whitebox_audit(policy, size["horizon"], max(k, size["shape_arms"]),
                                                 size["shape_replicates"], seed=args.seed + 6 + i, shape=shape)
                     for i, shape in enumerate(("star", "redrawn"))}
        # session 12: a star on GRAPH["hub_arms"] arms, its hub of degree 32 (the star above: 7), exact checks
        # only (no alpha spent): a buffer of side observations, a tag list or a cache sized for small hubs
        # overflows only on a hub round this large
        if args.tier != "smoke":
            wb_shapes["hub"] = graph_whitebox_audit(policy, size["horizon"], max(k, size["hub_arms"]),
                                                    size["hub_replicates"], seed=args.seed + 9, shape="star", law=False)
        for label, res in (("feedback graph", wb_graph), ("starving graph sequence", wb_starve),
                           ("star graph", wb_shapes["star"]), ("graph redrawn every round", wb_shapes["redrawn"]),
                           ("star graph, a hub of high degree", wb_shapes.get("hub"))):
            if res is not None:
                _print_audit(f"## White-box audit with side observations ({label}, K={res.n_arms}, T={res.horizon})\n",
                             res, notes=True)

    # 2. Black-box: actions, and the trace when the policy's releases can be observed.
    observes = ["actions"] + (["trace"] if _has_trace(policy, k, horizon) else [])
    # family-wise over every audit reported (the one-run audit is one more)
    alpha_each = args.alpha / (len(observes) + (1 if args.one_run else 0))
    total = args.seconds if args.seconds else tier["seconds"]
    left = None if total is None else max(5.0, total - (time.perf_counter() - started))
    seconds_each = left / len(observes) if left else None
    search = Neighbours.search(arm_rest=tier["arm_rest"], others=tier["others"], pilot_runs=tier["pilot"])
    results = []
    for i, observe in enumerate(observes):
        # the trace audit costs more per run (every release is traced): half the runs
        runs = tier["runs"] if observe == "actions" else tier["runs"] // 2
        audit = Audit.policy(policy, horizon, k, observe=observe, neighbours=search, alpha=alpha_each,
                             budget=Budget(runs, seconds=seconds_each), seed=[args.seed, i],
                             delta=args.delta, exact=args.exact and observe == "actions")
        res = audit.run()
        results.append(res)
        print(f"## Black-box audit ({observe}), {res.seconds:.1f} s\n")
        print(res.table())
        print()
        print(res.summary())
        if getattr(res, "exact", None) is not None:
            from privbandit.audit.exact import bounds_ladder

            print("bounds ladder (audit <= exact <= claim): "
                  + " <= ".join(f"{name} {value:.4g}" for name, value in bounds_ladder(res)))
        print()
        if args.out:
            _write_black_box(args.out, observe, res)

    # 3. Optional one-run canary audit: observes the trace when there is one (most power).
    one_run = one_run_error = None
    if args.one_run:
        from privbandit.audit.one_run import one_run_audit

        from privbandit.audit.raised import PolicyRaised

        try:
            one_run = one_run_audit(policy, horizon, k, canaries=args.one_run, guesses=max(1, args.one_run // 2),
                                    runs=args.one_run_runs, observe=observes[-1], alpha=alpha_each,
                                    seed=args.seed)  # delta: 0 for a pure claim, else 1e-5 (the module's rule)
        except PolicyRaised as exc:  # canary runs are not neighbours of one another: no witness, an error
            one_run_error = f"the policy {exc.raised.describe()}"
            print(f"## One-run audit ({observes[-1]})\n\nINCONCLUSIVE (ERROR: {one_run_error})\n")
        else:
            print(f"## One-run audit ({observes[-1]}), {one_run.seconds:.2f} s\n")
            print(one_run.summary())
            print()

    bb = [r.verdict for r in results] + ([one_run.verdict] if one_run is not None else [])
    errors = raised_errors((("ledger (tight)", tight), ("ledger (cheap)", cheap), ("ledger (far)", far),
                            ("ledger (one replicate)", far_single), ("white-box", wb), ("white-box (long)", wb_long),
                            ("white-box (planned)", wb_plan), ("white-box (more arms)", wb_many),
                            ("white-box (late)", wb_late), ("white-box (33 arms)", wb_wide),
                            ("white-box (batch positions)", wb_sweep), ("white-box (fast-forward)", wb_ff),
                            ("white-box (clock jump)", wb_jump),
                            ("white-box (graph)", wb_graph),
                            ("white-box (starving graph)", wb_starve),
                            *((f"white-box ({shape} graph)", r) for shape, r in wb_shapes.items()),
                            *((f"black-box {r.observation}", r) for r in results))) \
        + ([f"one-run: {one_run_error}"] if one_run_error else [])
    far_failed = [label for label, r in (("ledger (far, starving)", far), ("ledger (one replicate)", far_single),
                                         ("far noise law", far_noise), ("one-replicate noise law", single_noise),
                                         ("far schedule", far_sched))
                  if r is not None and not r.passed]
    if not tight.passed or not cheap.passed or far_failed \
            or "VIOLATION" in (wb.verdict, wb_long.verdict) or "VIOLATION" in bb \
            or (wb_plan is not None and wb_plan.verdict == "VIOLATION") \
            or (wb_graph is not None and "VIOLATION" in (wb_graph.verdict, wb_starve.verdict)) \
            or any(r is not None and r.verdict == "VIOLATION"
                   for r in (wb_many, wb_late, wb_wide, wb_sweep, wb_ff, wb_jump, *wb_shapes.values())):
        verdict = "VIOLATION"
    elif errors:  # the policy raised where nothing refuted it: outputs went unseen (privbandit/audit/raised.py)
        verdict = "INCONCLUSIVE"
    elif "CONSISTENT" in bb or wb.verdict == "CONSISTENT":
        verdict = "CONSISTENT"
    else:
        verdict = "INCONCLUSIVE"
    refuted_by = ([("ledger (tight)" if r.tight else "ledger (cheap)") for r in (tight, cheap) if not r.passed]
                  + far_failed
                  + [f"white-box {c}" for c in wb.checks]
                  + [f"white-box (long) {c}" for c in wb_long.checks if c not in wb.checks]
                  + ([f"white-box (planned) {c}" for c in wb_plan.checks if c not in wb.checks + wb_long.checks]
                     if wb_plan is not None else [])
                  + ([f"white-box (graph) {c}" for c in wb_graph.checks] if wb_graph is not None else [])
                  + ([f"white-box (starving graph) {c}" for c in wb_starve.checks] if wb_starve is not None else [])
                  + [f"white-box ({shape} graph) {c}" for shape, r in wb_shapes.items() for c in r.checks]
                  + ([f"white-box (K={wb_many.n_arms}) {c}" for c in wb_many.checks] if wb_many is not None else [])
                  + ([f"white-box (late, T={wb_late.horizon}) {c}" for c in wb_late.checks]
                     if wb_late is not None else [])
                  + ([f"white-box (K={wb_wide.n_arms}) {c}" for c in wb_wide.checks] if wb_wide is not None else [])
                  + ([f"white-box (batch positions) {c}" for c in wb_sweep.checks] if wb_sweep is not None else [])
                  + ([f"white-box (fast-forward, T={wb_ff.horizon}) {c}" for c in wb_ff.checks]
                     if wb_ff is not None else [])
                  + ([f"white-box (clock jump, T={wb_jump.horizon}) {c}" for c in wb_jump.checks]
                     if wb_jump is not None else [])
                  + [f"black-box {r.observation}" for r in results if r.verdict == "VIOLATION"]
                  + (["one-run"] if one_run is not None and one_run.verdict == "VIOLATION" else []))
    blind = ""
    if getattr(policy, "records_releases", True) and (first is None or first > horizon):
        # e.g. DP-UCB-Int at its default certified epsilon (interval 197), DP-SE (first epoch ~1,600
        # pulls per arm): the black-box runs end before any noisy release, so they cannot refute
        blind = (f"; the black-box horizon T={horizon} ends before the policy's first release (round "
                 f"{first if first is not None else f'> {wb_horizon}'} on a 0.5 tape): "
                 + (f"this verdict rests on the white-box audit at T={wb.horizon} ({wb.releases} traced releases)"
                    if wb.releases else "no audit saw a release") + "; use --horizon for a black-box audit past it")
    if edgeless:
        blind += ("; ledger and black-box audits on the edgeless feedback graph, side observations audited "
                  "white-box only")
    print(f"POWER: {power_statement(results)}; white-box: {wb.power()}{blind}")
    print(f"VERDICT: {verdict}" + (f" (refuted by: {', '.join(refuted_by)})" if refuted_by else "")
          + (f" (ERROR: {'; '.join(errors)})" if errors and verdict != "VIOLATION" else "")
          + f" (family-wise alpha {args.alpha:g} over the black-box certificates; {_false_alarms()}"
          f"; audits refute, they never certify){blind} -- {time.perf_counter() - started:.1f} s")
    if args.out:
        summary = {
            "policy": repr(policy), "horizon": horizon, "arms": k, "tier": args.tier, "seed": args.seed,
            "verdict": verdict, "refuted_by": refuted_by, "power": power_statement(results), "errors": errors,
            "first_release_round": first, "black_box_sees_releases": not blind,
            "reach_seconds": reach_seconds,  # session 13's three runs (reach_runs), probes included
            "whitebox": {"verdict": wb.verdict, "horizon": wb.horizon, "replicates": wb.replicates,
                         "releases": wb.releases, "findings": [dataclasses.asdict(f) for f in wb.findings],
                         "notes": wb.notes, "power": wb.power(), "seconds": wb.seconds},
            "whitebox_false_alarms": _false_alarm_summary(),
            "whitebox_planned": None if wb_plan is None else {
                "verdict": wb_plan.verdict, "horizon": wb_plan.horizon, "replicates": wb_plan.replicates,
                "releases": wb_plan.releases, "findings": [dataclasses.asdict(f) for f in wb_plan.findings],
                "seconds": wb_plan.seconds},
            "whitebox_graph": None if wb_graph is None else {
                "verdict": wb_graph.verdict, "horizon": wb_graph.horizon, "replicates": wb_graph.replicates,
                "releases": wb_graph.releases, "findings": [dataclasses.asdict(f) for f in wb_graph.findings],
                "notes": wb_graph.notes, "seconds": wb_graph.seconds,
                "starving": {"verdict": wb_starve.verdict, "arms": wb_starve.n_arms, "replicates": wb_starve.replicates,
                             "findings": [dataclasses.asdict(f) for f in wb_starve.findings],
                             "seconds": wb_starve.seconds}},
            "whitebox_long": {"verdict": wb_long.verdict, "horizon": wb_long.horizon,
                              "replicates": wb_long.replicates, "releases": wb_long.releases,
                              "findings": [dataclasses.asdict(f) for f in wb_long.findings],
                              "seconds": wb_long.seconds},
            "whitebox_more": {name: None if r is None else {
                "verdict": r.verdict, "arms": r.n_arms, "horizon": r.horizon, "replicates": r.replicates,
                "releases": r.releases, "findings": [dataclasses.asdict(f) for f in r.findings], "seconds": r.seconds}
                for name, r in (("more_arms", wb_many), ("late", wb_late), ("wide_arms", wb_wide),
                                ("batch_positions", wb_sweep), ("fast_forward", wb_ff), ("clock_jump", wb_jump),
                                *((f"{shape}_graph", r) for shape, r in wb_shapes.items()))},
            "ledger": [{"tight": r.tight, "passed": r.passed, "violations": [v.describe() for v in r.violations]}
                       for r in (tight, cheap)],
            "ledger_far": None if far is None else {"horizon": FAR["horizon"], "passed": far.passed,
                                                    "violations": [v.describe() for v in far.violations]},
            "far_schedule": None if far_sched is None else {
                "passed": far_sched.passed, "findings": far_sched.findings, "references": far_sched.references,
                "notes": far_sched.notes, "seconds": far_sched.seconds},
            "far_law": None if far_noise is None else {
                name: {"passed": r.passed, "releases": r.releases, "groups": r.groups, "alpha": r.alpha,
                       "findings": [f.describe() for f in r.findings[:10]]}
                for name, r in (("far", far_noise), ("one_replicate", single_noise))},
            "black_box": [{"observation": r.observation, "verdict": r.verdict,
                           "rows": [{k2: (v if not isinstance(v, float) or math.isfinite(v) else str(v))
                                     for k2, v in row.items()} for row in r.table("rows")]}
                          for r in results],
            "one_run": one_run.as_dict() if one_run is not None else None,
        }
        _write_summary(args.out, summary)
    if verdict == "INCONCLUSIVE" and args.allow_inconclusive and not errors:  # an error is not a lack of power
        return 0
    return EXIT_CODES[verdict]


def reach_runs(policy, k: int, long_horizon: int, late_horizon: int, seed: int, *, wide: dict = WB_WIDE,
               sweep: dict = WB_SWEEP, fast_forward: dict = FAST_FORWARD, clock_jump: dict | None = CLOCK_JUMP) -> tuple:
    """Session 13's three coupled white-box runs (exact checks only, no alpha spent; docs/audit.md "Session 13
    (s13/audit)"): (1) ``wide["arms"]`` arms (None when ``k`` is not smaller, or when one run on a 0.5 tape
    makes no release on that many arms within 20,000 rounds; since session 14 with the noise-law test, at its own
    alpha 1e-4); (2) changed records on every one of the first 16
    positions of the policy's own batches, at ``long_horizon``; (3) a window of ``fast_forward["window"]``
    rounds from max(``fast_forward["start"]``, the power of two above ``late_horizon``) behind an untraced
    prefix; and since session 15 (4) windows far out on a jumping round clock (``clock_jump``,
    :func:`~privbandit.audit.fast_forward.clock_jump_audit`; None: not run). Returns the four
    :class:`~privbandit.audit.whitebox.WhiteBoxResult` (or None)."""
    from privbandit.audit.fast_forward import clock_jump_audit, fast_forward_audit
    from privbandit.audit.whitebox import probe_horizon, release_round, whitebox_audit

    wb_wide = None
    if k < wide["arms"] and (not getattr(policy, "records_releases", True)
                             or release_round(policy, wide["arms"], releases=wide["arms"]) is not None):
        wide_horizon = probe_horizon(policy, wide["arms"])
        # the noise law too (session 14, lead): a draw at a fraction of its declared scale only on arms >= 16
        # (round 16's anytime_arm16_half_in_draw) is seen nowhere else; its own alpha (whitebox_audit's 1e-4)
        wb_wide = whitebox_audit(policy, wide_horizon, wide["arms"],
                                 max(wide["min_replicates"], wide["budget"] // wide_horizon),
                                 seed=seed + 10, law=True, observer=False)
    wb_sweep = whitebox_audit(policy, long_horizon, k, 4, seed=seed + 11, law=False, observer=False,
                              sweep_records=sweep["replicates"], last_records=sweep.get("last", 0),
                              deep_records=sweep.get("deep", 0))
    start = max(fast_forward["start"], 1 << int(late_horizon).bit_length())
    wb_ff = fast_forward_audit(policy, start, fast_forward["window"], k, fast_forward["replicates"], seed=seed + 12)
    wb_jump = None if clock_jump is None else clock_jump_audit(
        policy, k, clock_jump["replicates"], prefix=clock_jump["prefix"], window=clock_jump["window"], seed=seed + 13)
    return wb_wide, wb_sweep, wb_ff, wb_jump


def raised_errors(results) -> list[str]:
    """``label: error`` of every (label, result) whose audit the policy's exception cut short and left
    unrefuted (privbandit/audit/raised.py; None results skipped). Such a command is INCONCLUSIVE, exit 3
    even with ``--allow-inconclusive``: outputs went unseen, which is not a lack of power."""
    return [f"{label}: {r.error}" for label, r in results
            if r is not None and getattr(r, "error", None) is not None and r.verdict != "VIOLATION"]


GRAPH = dict(horizon=200, replicates=128, starve_arms=4, starve_replicates=64, shape_arms=8, shape_replicates=64,
             hub_arms=33, hub_replicates=64)
"""The graph white-box audits (side observations): T = 200 rounds (seven doubling batches per stream on the
complete 2-arm graph, where every arm is observed every round), 128 coupled replicates -- half change one
entry, half a whole round -- 3-15 s on the shared 2-core machine; and the starving run
(privbandit/audit/graph.py), at least 4 arms (three starved streams per round: Gaussian-TS-N's round
certificate without its sqrt(D + 1) is exceeded on 64 of 64 replicates at K = 4, 58 of 64 at K = 3), 64
replicates, 2-8 s. Round 11: a star and a graph redrawn every round (:func:`privbandit.audit.graph.graph_sequence`)
on at least 6 arms, 64 replicates each; round 12: at least 8 arms (the star's hub has degree 7). Session 12:
one more star on ``hub_arms`` = 33 arms (a hub of degree 32), ``hub_replicates`` = 64, exact checks only (no
alpha), 3.6-8.4 s per graph policy on the shared machine (dp_ucb_n 3.6, lazy_dp_ts_n 3.8, gaussian_ts_n 8.4)."""

CONTEXTUAL = dict(horizon=200, max_replicates=256, far_replicates=64)
"""The contextual white-box audit: T = 200 rounds (every tree level up to 2^7 records is released), at
most 256 coupled replicates (a d = 5 vector tree releases 20-21 entries per round and replicate: 256 x
200 rounds trace about 10^6 released values, 20-40 s on the shared 2-core machine). Session 12:
``far_replicates`` coupled replicates (exact checks only) with every context's norm log-uniform in
[16 L, 2^40 L] for a policy that clips (``contextual_whitebox_audit(far=True)``; ~1-2 s)."""


CONTEXTUAL_REACH = dict(horizon=512, replicates=32, boundary_horizon=200, boundary_replicates=32,
                        wide_replicates=16, wide_horizon=200)
"""Session 14: the contextual policies' reach runs (exact checks only, no alpha; :func:`contextual_reach_runs`):
a run of ``horizon`` rounds whose ``replicates`` changed records are placed on tree-leaf positions and late
rounds by the run on D; a run on ``boundary_replicates`` replicates with edge contexts; and, where the policy
runs there, one at a higher context dimension (``wide_replicates`` replicates, ``wide_horizon`` rounds)."""


def reach_targets(replicates: int, n_arms: int, horizon: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The (stream, position) targets of the contextual positions run (``contextual_whitebox_audit(targets=...)``),
    in groups of four replicates (the four context kinds), group g = (j // 4) mod 8: the last leaf of a dyadic
    block (position 2^m - 1, m in [4, log2 of a stream's expected length]), the first leaf of one (2^m), three
    groups uniform over positions [16, T / K) (beyond the first 16 leaves, which the ordinary runs' log-uniform
    rounds reach densely), the stream's last record, one of its 2nd to 4th last, and the run's last round
    (stream -1). Stream of replicate j: j mod K (a shared model ignores it)."""
    j = np.arange(replicates)
    group = (j // 4) % 8
    streams = (j % n_arms).astype(np.int64)
    expected = max(17, horizon // n_arms)
    top = max(4, int(expected).bit_length() - 1)
    m = rng.integers(4, top + 1, replicates)
    uniform = rng.integers(16, expected, replicates)
    tail = -rng.integers(2, 5, replicates)
    positions = np.select([group == 0, group == 1, group <= 4, group == 5, group == 6],
                          [np.left_shift(1, m) - 1, np.left_shift(1, m), uniform, np.full(replicates, -1), tail],
                          default=-1).astype(np.int64)
    streams = np.where(group == 7, -1, streams)
    return streams, positions


def _wider(policy, n_arms: int, horizon: int):
    """A copy of the contextual ``policy`` at a higher context dimension (2d + 1, else d + 3, else d + 1, at most
    200), the first at which it starts and plays two rounds; None where it refuses every one (ValueError: a
    configuration it does not support, e.g. noise swamping the ridge). Any other exception is a symptom, not a
    refusal: that copy is returned, and the audit's run observes the raise (privbandit/audit/raised.py). A copy,
    not a re-construction: a subclass keeps whatever it overrides."""
    import copy

    from privbandit.audit.contextual import contextual_tapes

    dim = int(policy.dim)
    for wide in dict.fromkeys(min(200, w) for w in (2 * dim + 1, dim + 3, dim + 1)):
        if wide <= dim:
            continue
        wider = copy.copy(policy)
        wider.dim = wide
        try:
            ctx, _, rew, _, _ = contextual_tapes(n_arms, wide, float(policy.bound), 2, 4, "entry",
                                                 np.random.default_rng(0), np.ones(4, np.int64))
            run = wider.start(n_arms, 4, horizon, np.random.default_rng(0))
            for t in (1, 2):
                arms = np.asarray(run.select(t, _offer(ctx[:, t - 1]))).astype(np.int64)
                run.update(t, arms, rew[np.arange(4), t - 1, arms])
        except ValueError:  # refused with a message: the policy does not run at this dimension
            continue
        except Exception:  # noqa: BLE001 -- a crash at a higher dimension is an observation for the audit
            return wider
        return wider
    return None


def _offer(contexts):
    from privbandit.feedback import Offer

    return Offer(contexts=contexts)


def contextual_reach_runs(policy, k: int, seed: int, size: dict = CONTEXTUAL_REACH) -> dict:
    """Session 14: the contextual policies' equivalents of the K-armed reach runs (docs/audit.md "Session 14
    (s14/audit)"), exact checks only (no alpha): "positions" -- changed records on the vector tree's leaf
    positions and late rounds (:func:`reach_targets`, placed by the run on D); "boundary" -- edge contexts
    (``contextual_whitebox_audit(boundary=True)``: the last coordinate, random signs, tiny norms, the ball's
    edge), changed rounds uniform over [1, T]; "wider" -- the policy at a higher context dimension (None where
    it does not run there). Returns {label: WhiteBoxResult or None}."""
    from privbandit.audit.contextual import contextual_whitebox_audit

    rng = np.random.default_rng([seed, 14])
    out = {}
    T, R = size["horizon"], size["replicates"]
    out["positions"] = contextual_whitebox_audit(policy, T, k, R, seed=seed + 20, law=False,
                                                 targets=reach_targets(R, k, T, rng))
    Tb, Rb = size["boundary_horizon"], size["boundary_replicates"]
    rounds = 1 + np.minimum(Tb - 1, ((np.arange(Rb) + rng.random(Rb)) * Tb / Rb).astype(np.int64))
    out["boundary"] = contextual_whitebox_audit(policy, Tb, k, Rb, seed=seed + 21, law=False, boundary=True,
                                                rounds=rounds)
    wider = _wider(policy, k, size["wide_horizon"])
    out["wider"] = None if wider is None else contextual_whitebox_audit(
        wider, size["wide_horizon"], k, size["wide_replicates"], seed=seed + 22, law=False)
    return out


def contextual_long_run(policy, horizon: int, k: int, replicates: int, seed: int):
    """The contextual long, thin run (``horizon`` = ten times the white-box horizon, 2,000 rounds by default):
    the exact checks and, since session 15, the noise law (checks 5-5d) at its own family-wise alpha 1e-4. It is
    the only contextual run whose streams hold 512 records or more (K = 2: ~1,000 a stream), so the only one
    that completes vector-tree nodes of level >= 8; the main run (T = 200) tests the law up to level ~6. A draw
    made small inside the sampler at deep levels only (round 16's ``lin_ts_deep_nodes_quarter``: the handed and
    reported scales right, so ``noise_report`` is silent) shifts the law of the long run's octave-9 and -10
    groups alone (docs/audit.md "Session 15 (s15/reach)"). Costs the tests on ~1.3 x 10^6 traced values, ~3 s
    CPU at d = 5 (the run itself was already traced for the exact checks)."""
    from privbandit.audit.contextual import contextual_whitebox_audit

    return contextual_whitebox_audit(policy, horizon, k, replicates, seed=seed, law=True)


def _run_contextual(args: argparse.Namespace, policy, tier: dict, k: int, started: float) -> int:
    """``privbandit audit`` for a contextual policy (``requires = {"contexts"}``): the ledger audits on
    a :class:`~privbandit.contextual.LinearContextual` environment, and the coupled white-box audit on
    contextual tapes (:mod:`privbandit.audit.contextual`) at the neighbouring relation the policy
    certifies, with its long, thin run. The black-box audits drive K-armed reward tapes without
    contexts and are not run: the verdict rests on the white-box and ledger audits, and says so."""
    from privbandit.audit import ledger_audit
    from privbandit.audit.contextual import audit_relation, contextual_whitebox_audit
    from privbandit.contextual import LinearContextual

    for flag, value in (("--exact", args.exact), ("--one-run", args.one_run)):
        if value:
            raise ValueError(f"{flag} needs the black-box audits, which do not run for the contextual policy "
                             f"{args.policy} (no contexts on their reward tapes)")
    dim = getattr(policy, "dim", None)
    horizon = int(args.horizon) if args.horizon is not None else CONTEXTUAL["horizon"]
    if horizon < 2:
        raise ValueError(f"--horizon must be >= 2 for a contextual policy, got {horizon}")
    if args.out is not None:
        writable_dir(args.out, "--out")
    relation = audit_relation(policy, horizon, k)
    print(f"note: {args.policy} is audited on contextual tapes (white-box) and a LinearContextual environment "
          f"(ledger), neighbours at its certified relation {relation!r}"
          + (" (a user's contexts and rewards; joint DP: that user's own action may differ)" if relation == "round"
             else " (one round's rewards, contexts public)")
          + "; the black-box audits (K-armed reward tapes) do not cover contextual policies\n")

    # 1. Ledger audits on a linear contextual environment (realized <= certified, no re-draws).
    tight = cheap = None
    if isinstance(dim, int) and dim >= 2:
        env = LinearContextual(dim, k, model=getattr(policy, "model", "disjoint"), theta_seed=args.seed)
        tight = ledger_audit(policy, env, horizon, tier["tight_reps"], seeds=(args.seed,), tight=True)
        cheap = ledger_audit(policy, env, horizon, tier["cheap_reps"], seeds=(args.seed + 1,), tight=False)
        print("## Ledger audit\n")
        for res in (tight, cheap):
            print(res.summary())
        print()
        print(tight.table())
        print()
    else:
        print(f"note: no ledger audit (LinearContextual needs dim >= 2, the policy declares dim={dim})\n")

    # 2. Coupled white-box audit on contextual tapes, and its long, thin run (exact checks only).
    reps = int(min(CONTEXTUAL["max_replicates"], max(32, tier["wb_budget"] // horizon)))
    wb = contextual_whitebox_audit(policy, horizon, k, reps, seed=args.seed, seed_runs=SEED_RUNS)
    _print_audit("## White-box audit (coupled runs on contextual tapes, every vector-tree node traced)\n", wb, notes=True)
    print(wb.table())
    print()
    long = WB_LONG if args.tier != "smoke" else dict(factor=2, minimum=0, cap=WB_LONG["cap"], replicates=8)
    long_horizon = min(long["cap"], max(long["minimum"], long["factor"] * horizon))
    wb_long = contextual_long_run(policy, long_horizon, k, long["replicates"], args.seed + 1)
    _print_audit(f"## White-box audit, long run (the exact checks and, at its own alpha {wb_long.alpha:g}, the noise "
                 f"law, T={long_horizon})\n", wb_long)
    # session 12: far contexts, [16 L, 2^40 L], for a policy that clips them -- a run of its own, so that a policy
    # that raises on them (an unclipped Gram matrix) loses none of the witnesses of the runs above
    wb_far = None
    if getattr(policy, "contexts", "reject") == "clip":
        wb_far = contextual_whitebox_audit(policy, horizon, k, CONTEXTUAL["far_replicates"] if args.tier != "smoke"
                                           else 8, seed=args.seed + 2, law=False, far=True)
        _print_audit(f"## White-box audit, far contexts (norms to 2^40 L, exact checks only, T={horizon})\n", wb_far)

    # session 14: tree-leaf positions and late rounds, edge contexts, a higher dimension (exact checks only)
    reach = {}
    reach_began = time.perf_counter()
    if args.tier != "smoke":
        reach = contextual_reach_runs(policy, k, args.seed)
        for label, res in reach.items():
            if res is None:
                print(f"## White-box audit, contexts of a higher dimension: not run ({args.policy} does not start "
                      f"and play at dim 2d + 1, d + 3 or d + 1)\n")
                continue
            what = {"positions": "changed records on tree-leaf positions and late rounds",
                    "boundary": "edge contexts (last coordinate, signs, tiny norms, the ball's edge)",
                    "wider": "contexts of a higher dimension (2d + 1 where the policy runs there)"}[label]
            _print_audit(f"## White-box audit, {what} (exact checks only, T={res.horizon})\n", res)
    reach_seconds = time.perf_counter() - reach_began

    far_sched = None
    if args.tier != "smoke":  # session 12: the certificate at 2^17 .. 10^12 rounds, no run (far_schedule.py)
        from privbandit.audit.contextual import STRUCTURE
        from privbandit.audit.far_schedule import far_schedule_check

        far_sched = far_schedule_check(policy, k, STRUCTURE)
        print("## Far schedule check (the certificate at 2^17 .. 10^12 rounds)\n")
        print(far_sched.summary())
        print()

    ledgers = [r for r in (tight, cheap) if r is not None]
    reach_labels = {"positions": "white-box (leaf positions)", "boundary": "white-box (edge contexts)",
                    "wider": "white-box (higher dimension)"}
    errors = raised_errors((("ledger (tight)", tight), ("ledger (cheap)", cheap), ("white-box", wb),
                            ("white-box (long)", wb_long), ("white-box (far contexts)", wb_far))
                           + tuple((reach_labels[key], r) for key, r in reach.items()))
    if any(not r.passed for r in ledgers) or "VIOLATION" in (wb.verdict, wb_long.verdict) \
            or (wb_far is not None and wb_far.verdict == "VIOLATION") or (far_sched is not None and not far_sched.passed) \
            or any(r is not None and r.verdict == "VIOLATION" for r in reach.values()):
        verdict = "VIOLATION"
    elif errors:  # the policy raised where nothing refuted it (privbandit/audit/raised.py)
        verdict = "INCONCLUSIVE"
    elif wb.verdict == "CONSISTENT":
        verdict = "CONSISTENT"
    else:
        verdict = "INCONCLUSIVE"
    refuted_by = ([("ledger (tight)" if r.tight else "ledger (cheap)") for r in ledgers if not r.passed]
                  + [f"white-box {c}" for c in wb.checks]
                  + [f"white-box (long) {c}" for c in wb_long.checks if c not in wb.checks]
                  + ([f"white-box (far contexts) {c}" for c in wb_far.checks] if wb_far is not None else [])
                  + [f"{reach_labels[key]} {c}" for key, r in reach.items() if r is not None for c in r.checks]
                  + (["far schedule"] if far_sched is not None and not far_sched.passed else []))
    scope = (f"; contextual: relation {relation!r}, white-box and ledger audits only (the black-box audits "
             f"do not cover contextual policies)")
    power = "no black-box audit (contextual policy)"
    print(f"POWER: {power}; white-box: {wb.power()}{scope}")
    print(f"VERDICT: {verdict}" + (f" (refuted by: {', '.join(refuted_by)})" if refuted_by else "")
          + (f" (ERROR: {'; '.join(errors)})" if errors and verdict != "VIOLATION" else "")
          + f" ({_false_alarms()}; audits refute, they never certify){scope} -- "
          f"{time.perf_counter() - started:.1f} s")
    if args.out:
        summary = {
            "policy": repr(policy), "horizon": horizon, "arms": k, "tier": args.tier, "seed": args.seed,
            "verdict": verdict, "refuted_by": refuted_by, "power": power, "relation": relation, "errors": errors,
            "contextual": True, "first_release_round": None, "black_box_sees_releases": False,
            "whitebox": {"verdict": wb.verdict, "horizon": wb.horizon, "replicates": wb.replicates,
                         "releases": wb.releases, "findings": [dataclasses.asdict(f) for f in wb.findings],
                         "notes": wb.notes, "power": wb.power(), "seconds": wb.seconds},
            "whitebox_false_alarms": _false_alarm_summary(),
            "whitebox_planned": None,
            "whitebox_graph": None,
            "whitebox_long": {"verdict": wb_long.verdict, "horizon": wb_long.horizon,
                              "replicates": wb_long.replicates, "releases": wb_long.releases,
                              "findings": [dataclasses.asdict(f) for f in wb_long.findings],
                              "seconds": wb_long.seconds},
            "whitebox_far_contexts": None if wb_far is None else {
                "verdict": wb_far.verdict, "replicates": wb_far.replicates, "releases": wb_far.releases,
                "findings": [dataclasses.asdict(f) for f in wb_far.findings], "error": wb_far.error,
                "seconds": wb_far.seconds},
            "whitebox_reach": {key: None if r is None else {
                "verdict": r.verdict, "horizon": r.horizon, "replicates": r.replicates, "releases": r.releases,
                "findings": [dataclasses.asdict(f) for f in r.findings], "error": r.error, "seconds": r.seconds}
                for key, r in reach.items()},
            "reach_seconds": reach_seconds,
            "ledger": [{"tight": r.tight, "passed": r.passed, "violations": [v.describe() for v in r.violations]}
                       for r in ledgers],
            "black_box": [], "one_run": None,
        }
        _write_summary(args.out, summary)
    if verdict == "INCONCLUSIVE" and args.allow_inconclusive and not errors:
        return 0
    return EXIT_CODES[verdict]


def _write_black_box(out: str, observe: str, res) -> None:
    """A black-box audit's table (md, csv) and plot into ``--out``, staged like :func:`_write_summary`."""
    with staged_outputs(out, "--out") as stage:
        base = stage.path(f"audit_{observe}")
        with open(base + ".md", "w") as fh:
            fh.write(res.table() + "\n")
        with open(base + ".csv", "w") as fh:
            fh.write(res.table("csv"))
        res.plot(base + ".png")


def _write_summary(out: str, summary: dict) -> None:
    """``summary.json`` into ``--out``, staged (``cli_checks.staged_outputs``, as every output of the command
    line): a symlink planted at ``DIR/summary.json`` is replaced, never written through (session 15)."""
    with staged_outputs(out, "--out") as stage, open(stage.path("summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2, default=str)


def power_statement(results) -> str:
    """The power each black-box audit reached: its best certified lower bound as a fraction of the
    claim, per currency (a fraction >= 1 is a refutation; a small one says the audit saw little)."""
    parts = []
    for r in results:
        best = {}
        for row in r.table("rows"):
            lb, claim, cert = row.get("lower_bound"), row.get("claimed"), str(row.get("certificate"))
            if isinstance(lb, (int, float)) and isinstance(claim, (int, float)) and math.isfinite(lb) \
                    and math.isfinite(claim) and claim > 0:
                best[cert] = max(best.get(cert, 0.0), lb / claim)
        shown = ", ".join(f"{cur} lb/claim {v:.2f}" for cur, v in sorted(best.items())) or "no bound"
        parts.append(f"black-box {r.observation}: {shown}")
    return "; ".join(parts) if parts else "no black-box audit"
