"""The ``privbandit`` command line.

* ``privbandit demo`` — the README's main job: a short private-bandit run on an embedded default,
  printing regret next to the certified epsilon.
* ``privbandit run POLICY --arms ... --horizon ... --replicates ... --seed ...`` — simulate a policy
  and print final regret (with a 95% band), certified epsilon at ``--delta`` and the realized spend.
* ``privbandit budget POLICY --horizon T [--param k=v]`` — certified epsilon per accountant and the
  paper's claim; ``privbandit invert POLICY --epsilon E --delta D --horizon T --solve-for NAME
  --bounds LO HI`` — the least-noise parameter meeting the target, verified.
* ``privbandit certify --epsilon E --releases N`` — certify N Laplace releases with every accountant.
* ``privbandit deploy init|select|update|status|replay STORE ...`` — a private policy online
  (``privbandit.deploy.cli``).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

import privbandit

FIVE_ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]


def parse_params(items: Sequence[str]) -> dict:
    """``NAME=VALUE`` strings to a dict; values become int, float, bool or str, in that order."""
    params = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--param takes NAME=VALUE, got {item!r}")
        key, raw = item.split("=", 1)
        for cast in (int, float):
            try:
                params[key] = cast(raw)
                break
            except ValueError:
                continue
        else:
            params[key] = {"true": True, "false": False}.get(raw.lower(), raw)
    return params


def _environment(args):
    from privbandit.envs import Bernoulli, TruncatedExponential

    if args.env == "bernoulli":
        return Bernoulli(args.arms or FIVE_ARMS)
    return TruncatedExponential(args.arms or [0.1, 1, 2, 5, 10])


def print_table(rows: list[dict]) -> None:
    """Regret with its band next to certified, realized and claimed epsilon, one row per run."""
    width = max([26] + [len(s["label"]) for s in rows])
    header = (f"{'policy':<{width}} {'regret (95% band)':>26} {'certified eps':>14} {'claimed eps':>12} "
              f"{'realized eps':>13} {'ledger check':>13}")
    print(header)
    print("-" * len(header))
    for s in rows:
        band = f"{s['regret']:.1f} [{s['regret_lower']:.1f}, {s['regret_upper']:.1f}]"
        cert = "inf (non-private)" if math.isinf(s["certified_epsilon"]) else f"{s['certified_epsilon']:.4g}"
        real = "-" if s["realized_epsilon_max"] is None else f"{s['realized_epsilon_max']:.4g}"
        claim = "-" if s["claimed_epsilon"] is None else f"{s['claimed_epsilon']:.4g}"
        check = {None: "-", True: "ok", False: "VIOLATION"}[s.get("realized_within_certificate")]
        print(f"{s['label']:<{width}} {band:>26} {cert:>14} {claim:>12} {real:>13} {check:>13}")


def _run(args: argparse.Namespace) -> int:
    from privbandit.engine import simulate
    from privbandit.policies import make_policy

    params = parse_params(args.param)
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    policy = make_policy(args.policy, **params)
    env = _environment(args)
    result = simulate(policy, env, args.horizon, args.replicates, seed=args.seed, delta=args.delta,
                      progress=None if not args.quiet else False)
    summary = result.summary() | {"label": repr(policy)}
    print(f"{env.name} arms={env.means.round(4).tolist()} horizon={args.horizon} "
          f"replicates={args.replicates} seed={args.seed} delta={args.delta:g}")
    print_table([summary])
    if math.isfinite(summary["certified_epsilon"]):
        print(f"certified by: {summary['certified_by']}")
    if args.save:
        print(f"saved {result.save(args.save)}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        ax = result.plot()
        ax.figure.tight_layout()
        ax.figure.savefig(args.plot, dpi=120)
        print(f"plot written to {args.plot}")
    return 0


def _certify(args: argparse.Namespace) -> int:
    from accountants import Laplace, best_epsilon

    event = Laplace(scale=1.0 / args.epsilon) * args.releases
    cert = best_epsilon(event, args.delta)
    print(f"{args.releases} Laplace releases at eps={args.epsilon} each, delta={args.delta}")
    print(f"{'accountant':<12} {'certified epsilon':>18}")
    for name, value in cert.values.items():
        shown = "unsupported" if value is None else f"{value:.6g}"
        print(f"{name:<12} {shown:>18}")
    print(f"best: {cert.value:.6g} (by {cert.by})")
    return 0


def _add_structure_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-degree", type=int, help="graph feedback: the feedback graph's maximum degree")
    parser.add_argument("--relation", choices=["entry", "round"], default="entry",
                        help="neighbouring relation certified (round: one round's whole reward vector)")


def _structure(args: argparse.Namespace) -> dict:
    """Schedule keywords and relation from --max-degree / --relation (docs/feedback.md)."""
    structure = {} if args.max_degree is None else {"max_degree": args.max_degree}
    return {"structure": structure, "relation": args.relation}


def _budget(args: argparse.Namespace) -> int:
    from privbandit import budget
    from privbandit.policies import make_policy

    params = parse_params(args.param)
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    policy = make_policy(args.policy, **params)
    structure = _structure(args)
    cert = budget.epsilon(policy, args.horizon, args.delta, args.n_arms, **structure)
    print(f"{policy!r}: {args.n_arms} arms, horizon {args.horizon}, delta {args.delta:g}"
          + (f", {args.relation} relation, max degree {args.max_degree}" if args.max_degree is not None else ""))
    print(f"{'accountant':<12} {'certified epsilon':>18}")
    for name, value in cert.values.items():
        shown = "unsupported" if value is None else f"{value:.6g}"
        print(f"{name:<12} {shown:>18}")
    print(f"best: {cert.value:.6g} (by {cert.by})")
    mu = budget.mu(policy, args.horizon, args.n_arms, **structure)
    if mu < float("inf"):
        print(f"GDP mu: {mu:.6g}")
    claim = policy.claimed_epsilon(args.horizon, args.n_arms, args.delta)
    print(f"paper's claim: {'none' if claim is None else f'{claim:.6g}'}")
    return 0


def _invert(args: argparse.Namespace) -> int:
    from privbandit import budget

    params = parse_params(args.param)
    if (args.epsilon is None) == (args.mu is None):
        raise ValueError("give exactly one target: --epsilon (with --delta) or --mu")
    target, target_mu = (args.mu, True) if args.mu is not None else (args.epsilon, False)
    if args.frontier:
        bs = [int(b) for b in args.frontier.split(",")]
        points = budget.ts_frontier(target, args.horizon, args.n_arms, bs, delta=None if target_mu else args.delta)
        print(f"Modified TS frontier c_min(b) for {'mu' if target_mu else 'epsilon'} = {target:g}, horizon {args.horizon}")
        for p in points:
            print(f"  b = {p.policy.b:<6d} c_min = {p.value:<14.8g} certified {p.certificate:.6g}")
        return 0
    if not args.solve_for or not args.bounds:
        raise ValueError("--solve-for NAME and --bounds LO HI are required (or --frontier for gaussian_ts)")
    inv = budget.invert(args.policy, target, args.horizon, solve_for=args.solve_for, bounds=tuple(args.bounds),
                        n_arms=args.n_arms, delta=args.delta, target_mu=target_mu, integer=args.integer,
                        **_structure(args), **params)
    print(inv)
    return 0


def _experiment(args: argparse.Namespace) -> int:
    import os

    from privbandit.experiments import run_experiment

    executor = None
    if args.dask:
        from dask.distributed import Client

        executor = Client(args.dask)
    result = run_experiment(args.name, args.horizon, args.replicates, args.seed, executor=executor)
    print(f"experiment {args.name}: horizon {args.horizon}, {args.replicates} replicates, seed {args.seed}, "
          f"delta {result.cells[0][2].delta:g}")
    rows = [s | {"label": f"{s['policy_label']} | {s['environment_label']}"} for s in result.summary()]
    print_table(rows)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        result.summary_frame().to_csv(os.path.join(args.out, "summary.csv"), index=False)
        result.plot(os.path.join(args.out, "regret.png"))
        print(f"wrote {args.out}/summary.csv and {args.out}/regret.png")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from privbandit.demo import run_demo

    return run_demo(quick=args.quick)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="privbandit", description="Privacy accounting for private bandits.")
    parser.add_argument("--version", action="version", version=f"privbandit {privbandit.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    from privbandit.audit.cli import add_parser as add_audit_parser

    add_audit_parser(sub)
    from privbandit.deploy.cli import add_parser as add_deploy_parser

    add_deploy_parser(sub)

    demo = sub.add_parser("demo", help="run the embedded default: private and non-private policies, regret and certified epsilon")
    demo.add_argument("--quick", action="store_true", help="a smaller horizon, for smoke tests")
    demo.set_defaults(func=_demo)

    run = sub.add_parser("run", help="simulate a policy and print regret next to its certified epsilon")
    run.add_argument("policy", help="policy name (see privbandit.policies.REGISTRY)")
    run.add_argument("--arms", type=float, nargs="+", help="arm means (bernoulli) or rates (truncated-exponential); default: the 5-arm instance")
    run.add_argument("--env", choices=["bernoulli", "truncated-exponential"], default="bernoulli")
    run.add_argument("--horizon", type=int, default=10_000)
    run.add_argument("--replicates", type=int, default=100)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--epsilon", type=float, help="the policy's privacy parameter, as its paper defines it")
    run.add_argument("--delta", type=float, default=1e-6, help="delta of the reported certificate (default 1e-6)")
    run.add_argument("--param", action="append", metavar="NAME=VALUE", help="another policy parameter (repeatable)")
    run.add_argument("--save", help="write the per-round results to a .parquet or .csv file")
    run.add_argument("--plot", help="write a regret / certified-epsilon plot to this image file")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=_run)

    exp = sub.add_parser("experiment", help="run one of the source papers' experiments (see privbandit.experiments)")
    exp.add_argument("name", help="tossou2016-2arm, tossou2016-10arm, huhegde2022, ou2024 or mishra2015")
    exp.add_argument("--horizon", type=int, default=10_000, help="rounds (the papers use 100000; default 10000)")
    exp.add_argument("--replicates", type=int, default=20)
    exp.add_argument("--seed", type=int, default=0)
    exp.add_argument("--out", help="directory for summary.csv and regret.png")
    exp.add_argument("--dask", metavar="ADDRESS", help="run the cells on this Dask scheduler")
    exp.set_defaults(func=_experiment)

    bud = sub.add_parser("budget", help="certified epsilon of a configured policy over a horizon, per accountant")
    bud.add_argument("policy")
    bud.add_argument("--horizon", type=int, required=True)
    bud.add_argument("--n-arms", type=int, default=2, help="number of arms (default 2)")
    bud.add_argument("--delta", type=float, default=1e-6)
    bud.add_argument("--epsilon", type=float, help="the policy's own privacy parameter")
    bud.add_argument("--param", action="append", metavar="NAME=VALUE")
    _add_structure_arguments(bud)
    bud.set_defaults(func=_budget)

    inv = sub.add_parser("invert", help="the least-noise parameter meeting a privacy target (verified)")
    inv.add_argument("policy")
    inv.add_argument("--horizon", type=int, required=True)
    inv.add_argument("--n-arms", type=int, default=2)
    inv.add_argument("--epsilon", type=float, help="target epsilon (at --delta)")
    inv.add_argument("--delta", type=float, default=1e-6)
    inv.add_argument("--mu", type=float, help="target GDP mu instead of an epsilon")
    inv.add_argument("--solve-for", help="the parameter to solve for, e.g. v, c, epsilon")
    inv.add_argument("--bounds", type=float, nargs=2, metavar=("LO", "HI"))
    inv.add_argument("--integer", action="store_true", help="search whole numbers only")
    inv.add_argument("--frontier", help="gaussian_ts: comma-separated b values; prints c_min(b) for each")
    inv.add_argument("--param", action="append", metavar="NAME=VALUE", help="fixed policy parameters")
    _add_structure_arguments(inv)
    inv.set_defaults(func=_invert)

    cert = sub.add_parser("certify", help="certify N Laplace releases with every accountant")
    cert.add_argument("--epsilon", type=float, default=0.1, help="per-release epsilon (default 0.1)")
    cert.add_argument("--releases", type=int, default=1000, help="number of releases (default 1000)")
    cert.add_argument("--delta", type=float, default=1e-6, help="target delta (default 1e-6)")
    cert.set_defaults(func=_certify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ValueError as exc:  # bad input: a clear message, no traceback
        print(f"privbandit: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # an optional extra is missing: say which one
        extra = {"matplotlib": "plot", "pandas": "frames", "pyarrow": "frames", "dask": "dask",
                 "distributed": "dask", "tqdm": "progress"}.get((exc.name or "").split(".")[0], "all")
        print(f"privbandit: error: {exc}. Install the optional extra: pip install 'privbandit[{extra}]'",
              file=sys.stderr)
        return 2
