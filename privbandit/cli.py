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
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import privbandit
from privbandit.cli_checks import (plain_number_text, positive, print_message, probability, delta_or_zero, real, refuse_repeated_options,
                                   require_extra, staged_outputs, whole, writable_dir, writable_file)

#: the budget helpers' longest horizon (privbandit.budget.HORIZON_MAX, not imported: the parser is built
#: before any computing module loads)
HORIZON_MAX = 10**30

FIVE_ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]
#: ``certify`` skips these accountants above these numbers of releases (their cost grows with it)
SLOW_ACCOUNTANTS = {"pld": 100_000, "optimal": 1_000_000}


def parse_params(items: Sequence[str]) -> dict:
    """``NAME=VALUE`` strings to a dict; values become int, float, bool or str, in that order."""
    params = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--param takes NAME=VALUE, got {item!r}")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key.isidentifier():
            raise ValueError(f"--param takes NAME=VALUE with NAME a parameter name, got {item!r}")
        if key in params:
            raise ValueError(f"--param {key} given twice")
        for cast in (int, float) if plain_number_text(raw) else ():  # ("1_0" stays text: refused as a number)
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


REALIZED_FOOTNOTE = (
    "* realized / certified: the worst tracked record's spend in these runs, divided by the certificate\n"
    "  composed for it by the SAME accountants (the ledger's: pure, KOV and GDP composition) at the same\n"
    "  checkpoints, maximised over the checkpoints; <= 100% exactly when the ledger check is ok. The\n"
    "  'certified eps' column is the best of ALL accountants (PLD, optimal composition, ...), so it can\n"
    "  be smaller than the ledger's own currency: compare realized with certified only as this ratio.")


def print_table(rows: list[dict], file=None) -> None:
    """Regret with its band next to certified and claimed epsilon and the realized spend, one row per
    run. The realized spend is shown as a fraction of the certificate in the ledger's own currency
    (``realized_fraction``), never as a raw epsilon beside the best certificate: the two are composed
    by different accountants, and a raw realized value above a passing certificate reads as an
    overspend. A footnote says so whenever that column is filled."""
    width = max([26] + [len(s["label"]) for s in rows])
    # the two ledger columns only when some run tracked its ledger (experiments' sweeps do not:
    # two columns of dashes read as a check that was skipped)
    ledger = any(s.get("realized_fraction") is not None or s.get("realized_within_certificate") is not None
                 for s in rows)
    header = (f"{'policy':<{width}} {'regret (95% band)':>26} {'certified eps':>14} {'claimed eps':>12}"
              + (f" {'realized/certified*':>20} {'ledger check':>13}" if ledger else ""))
    print(header, file=file)
    print("-" * len(header), file=file)
    footnote = False
    for s in rows:
        band = f"{s['regret']:.1f} [{s['regret_lower']:.1f}, {s['regret_upper']:.1f}]"
        cert = "inf (non-private)" if math.isinf(s["certified_epsilon"]) else f"{s['certified_epsilon']:.4g}"
        fraction = s.get("realized_fraction")
        real = "-" if fraction is None else f"{100 * fraction:.1f}%"
        if fraction is not None and fraction > 1 and real == "100.0%":  # a violation never reads as 100%
            real = ">100%"
        footnote |= fraction is not None
        claim = "-" if s["claimed_epsilon"] is None else f"{s['claimed_epsilon']:.4g}"
        check = {None: "-", True: "ok", False: "VIOLATION"}[s.get("realized_within_certificate")]
        print(f"{s['label']:<{width}} {band:>26} {cert:>14} {claim:>12}" + (f" {real:>20} {check:>13}" if ledger else ""),
              file=file)
    if footnote:
        print(REALIZED_FOOTNOTE, file=file)


def _policy_params(args: argparse.Namespace) -> dict:
    """``--param`` pairs plus ``--epsilon``; giving epsilon both ways is an error, not an override."""
    params = parse_params(args.param)
    if getattr(args, "epsilon", None) is not None:
        if "epsilon" in params:
            raise ValueError(f"epsilon given twice (--epsilon {args.epsilon:g} and --param epsilon={params['epsilon']}); "
                             "give it once")
        params["epsilon"] = args.epsilon
    return params


def _check_plot_and_save(save: str | None, plot: str | None) -> None:
    """Output paths and the extras they need, checked before any computing."""
    if save is not None:
        path = writable_file(save, "--save", (".parquet", ".csv"))
        require_extra("pandas", "--save")
        if path.suffix.lower() == ".parquet":
            require_extra("pyarrow", "--save to .parquet")
    if plot is not None:
        writable_file(plot, "--plot", (".png", ".pdf", ".svg", ".jpg", ".jpeg"))
        require_extra("matplotlib", "--plot")


def _run(args: argparse.Namespace) -> int:
    from privbandit.engine import check_memory, simulate
    from privbandit.policies import make_policy

    policy = make_policy(args.policy, **_policy_params(args))
    env = _environment(args)
    check_memory(args.horizon, args.replicates)
    if args.horizon < env.n_arms:
        raise ValueError(f"--horizon must be >= the number of arms ({env.n_arms}), got {args.horizon}")
    _check_plot_and_save(args.save, args.plot)
    result = simulate(policy, env, args.horizon, args.replicates, seed=args.seed, delta=args.delta,
                      progress=None if not args.quiet else False)
    summary = result.summary() | {"label": repr(policy)}
    print(f"{env.name} arms={env.means.round(4).tolist()} horizon={args.horizon} "
          f"replicates={args.replicates} seed={args.seed} delta={args.delta:g}")
    print_table([summary])
    if math.isfinite(summary["certified_epsilon"]):
        print(f"certified by: {summary['certified_by']}")
    if summary["realized_epsilon_max"] is not None:
        print(f"realized at the horizon: worst tracked record {summary['realized_epsilon_max']:.6g} against "
              f"{summary['certified_same_currency']:.6g} certified by the same accountants*")
    if args.save:  # (staged: a symlink at the path, or at its .json, is replaced, not written through)
        save = Path(args.save)
        with staged_outputs(save.parent, "--save") as stage:
            result.save(stage.path(save.name))
        print(f"saved {save}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        fig = result.plot_figure()
        plot = Path(args.plot)
        with staged_outputs(plot.parent, "--plot") as stage:
            fig.savefig(stage.path(plot.name), dpi=110)
        print(f"plot written to {args.plot}")
    return 0


def _certify(args: argparse.Namespace) -> int:
    from accountants import Laplace, best_epsilon
    from privbandit.policies.base import check_epsilon

    # the per-release epsilon becomes a noise scale 1 / epsilon: below the policies' floor it is not a
    # finite float, which the scale check would have reported under the wrong name
    event = Laplace(scale=1.0 / check_epsilon(args.epsilon)) * args.releases
    from accountants.best import default_accountants

    # accountants whose cost grows with N (PLD's FFT: 25 s at 10^6; optimal composition's sum over
    # k): skipped above their limit, and said so -- every other accountant's bound is still valid
    skipped = [name for name, limit in SLOW_ACCOUNTANTS.items() if args.releases > limit]
    accountants = [f for f in default_accountants() if getattr(f, "name", "") not in skipped]
    cert = best_epsilon(event, args.delta, accountants)
    print(f"{args.releases} Laplace releases at eps={args.epsilon} each, delta={args.delta}")
    if skipped:
        print(f"({', '.join(skipped)} skipped at this many releases: too slow; the others' bounds are valid)")
    print(f"{'accountant':<12} {'certified epsilon':>18}")
    for name, value in cert.values.items():
        shown = "unsupported" if value is None else f"{value:.6g}"
        print(f"{name:<12} {shown:>18}")
    print(f"best: {cert.value:.6g} (by {cert.by})")
    return 0


def _add_structure_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-degree", type=whole(0), help="graph feedback: the feedback graph's maximum degree, >= 0")
    parser.add_argument("--relation", choices=["entry", "round"], default="entry",
                        help="neighbouring relation certified (round: one round's whole reward vector)")


def _structure(args: argparse.Namespace) -> dict:
    """Schedule keywords and relation from --max-degree / --relation (docs/feedback.md)."""
    structure = {} if args.max_degree is None else {"max_degree": args.max_degree}
    return {"structure": structure, "relation": args.relation}


def _budget(args: argparse.Namespace) -> int:
    from privbandit import budget
    from privbandit.policies import make_policy

    policy = make_policy(args.policy, **_policy_params(args))
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
    try:
        claim = policy.claimed_epsilon(args.horizon, args.n_arms, args.delta)
    except ValueError:
        if args.delta != 0.0:
            raise
        claim = None  # an (eps, delta) paper bound with log(1/delta) in it has no delta = 0 form
    print(f"paper's claim: {'none' if claim is None else f'{claim:.6g}'}")
    return 0


def _frontier_bs(text: str) -> list[int]:
    parsed = whole(0)
    try:
        return [parsed(b.strip()) for b in text.split(",")]
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"--frontier takes comma-separated whole numbers b >= 0: {exc}") from None


def _invert(args: argparse.Namespace) -> int:
    from privbandit import budget

    params = parse_params(args.param)
    if (args.epsilon is None) == (args.mu is None):
        raise ValueError("give exactly one target: --epsilon (with --delta) or --mu")
    target, target_mu = (args.mu, True) if args.mu is not None else (args.epsilon, False)
    if args.frontier:
        if args.policy.replace("-", "_").lower() != "gaussian_ts":
            raise ValueError(f"--frontier is for gaussian_ts (Modified TS), not {args.policy!r}")
        if args.solve_for or args.bounds or params:
            raise ValueError("--frontier solves for c at each b; it takes no --solve-for, --bounds or --param")
        bs = _frontier_bs(args.frontier)
        points = budget.ts_frontier(target, args.horizon, args.n_arms, bs, delta=None if target_mu else args.delta)
        print(f"Modified TS frontier c_min(b) for {'mu' if target_mu else 'epsilon'} = {target:g}, horizon {args.horizon}")
        for p in points:
            print(f"  b = {p.policy.b:<6d} c_min = {p.value:<14.8g} certified {p.certificate:.6g}")
        return 0
    if not args.solve_for or not args.bounds:
        raise ValueError("--solve-for NAME and --bounds LO HI are required (or --frontier for gaussian_ts)")
    import inspect

    # budget.invert passes unknown keywords on to the policy: a --param named like one of its own
    # keywords (DPUCBInt's delta, say) would arrive twice, a TypeError instead of a usage error
    own = set(inspect.signature(budget.invert).parameters) - {"fixed"}
    clash = sorted(own & set(params))
    if clash:
        raise ValueError(f"--param {clash[0]}: invert cannot fix a policy parameter named {clash[0]!r}, the name "
                         f"of one of its own settings (--{clash[0].replace('_', '-')}); "
                         f"evaluate such a configuration with `privbandit budget` instead")
    inv = budget.invert(args.policy, target, args.horizon, solve_for=args.solve_for, bounds=tuple(args.bounds),
                        n_arms=args.n_arms, delta=None if target_mu else args.delta, target_mu=target_mu,
                        integer=args.integer, **_structure(args), **params)
    print(inv)
    return 0


def _dask_client(address: str):
    """A Dask client for ``--dask ADDRESS``, connected (or refused) before any computing."""
    if not address.strip():
        raise ValueError("--dask needs a scheduler address HOST:PORT, got an empty string")
    require_extra("dask.distributed", "--dask")
    from dask.distributed import Client

    try:
        return Client(address, timeout="5s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise ValueError(f"--dask {address!r}: cannot connect to a Dask scheduler there "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'})") from None


def _experiment(args: argparse.Namespace) -> int:
    from accountants._validate import unknown_name
    from privbandit.engine import check_memory
    from privbandit.experiments import EXPERIMENTS, run_experiment

    if args.name not in EXPERIMENTS:
        raise unknown_name("experiment", args.name, EXPERIMENTS, "privbandit.experiments.EXPERIMENTS")
    check_memory(args.horizon, args.replicates)
    if args.out is not None:
        require_extra("pandas", "--out (summary.csv)")
        require_extra("matplotlib", "--out (regret.png)")
        writable_dir(args.out, "--out")
    executor = _dask_client(args.dask) if args.dask is not None else None  # --dask '' is an error, not "local"
    result = run_experiment(args.name, args.horizon, args.replicates, args.seed, executor=executor)
    print(f"experiment {args.name}: horizon {args.horizon}, {args.replicates} replicates, seed {args.seed}, "
          f"delta {result.cells[0][2].delta:g}")
    rows = [s | {"label": f"{s['policy_label']} | {s['environment_label']}"} for s in result.summary()]
    print_table(rows)
    if args.out:  # (staged: a symlink planted at DIR/summary.csv is replaced, not written through)
        with staged_outputs(args.out, "--out") as stage:
            result.summary_frame().to_csv(stage.path("summary.csv"), index=False)
            result.plot(stage.path("regret.png"), title=f"{args.name} (horizon {args.horizon}, "
                                                        f"{args.replicates} replicates)")
            # (session 18: the pair's digests, read back by privbandit.saved.load_summary; moved last)
            from privbandit.saved import write_summary_metadata

            write_summary_metadata(stage.path("summary.csv.json"), stage.path("summary.csv"),
                                   stage.path("regret.png"), experiment=args.name, horizon=args.horizon,
                                   replicates=args.replicates, seed=args.seed)
        print(f"wrote {args.out}/summary.csv, regret.png and summary.csv.json (privbandit.saved.load_summary "
              "reads them)")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from privbandit.demo import run_demo

    return run_demo(quick=args.quick)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line, ``privbandit: error: ...``, exit status 2
    (argparse's default prints the usage block first); ``--help`` still shows the full usage."""

    def error(self, message: str):
        where = self.prog.split(" ", 1)[1] + ": " if " " in self.prog else ""
        # argparse quotes the offending argument, which may hold a newline: still one line
        self.exit(2, f"privbandit: error: {where}{_one_line(message)} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        refuse_repeated_options(self, sys.argv[1:] if args is None else list(args))
        return super().parse_known_args(args, namespace)

    _print_message = print_message  # (help / version that cannot be written is an error, not status 0)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="privbandit", description="Privacy accounting for private bandits.")
    parser.add_argument("--version", action="version", version=f"privbandit {privbandit.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    from privbandit.audit.cli import add_parser as add_audit_parser

    add_audit_parser(sub)
    from privbandit.deploy.cli import add_parser as add_deploy_parser

    add_deploy_parser(sub)
    for add in (_add_demo, _add_run, _add_experiment, _add_budget, _add_invert, _add_certify):
        add(sub)
    return parser


def _add_demo(sub) -> None:
    demo = sub.add_parser("demo", help="run the embedded default: private and non-private policies, regret and certified epsilon")
    demo.add_argument("--quick", action="store_true", help="a smaller horizon, for smoke tests")
    demo.set_defaults(func=_demo)


def _add_run(sub) -> None:
    run = sub.add_parser("run", help="simulate a policy and print regret next to its certified epsilon")
    run.add_argument("policy", help="policy name (see privbandit.policies.REGISTRY)")
    run.add_argument("--arms", type=real(), nargs="+",
                     help="arm means in [0, 1] (bernoulli) or rates in (0, inf) (truncated-exponential); default: the 5-arm instance")
    run.add_argument("--env", choices=["bernoulli", "truncated-exponential"], default="bernoulli")
    run.add_argument("--horizon", type=whole(2), default=10_000, help="rounds, >= the number of arms (default 10000)")
    run.add_argument("--replicates", type=whole(1), default=100, help="independent runs, >= 1 (default 100)")
    run.add_argument("--seed", type=whole(0), default=0)
    run.add_argument("--epsilon", type=positive, help="the privacy level the policy certifies (its `epsilon`)")
    run.add_argument("--delta", type=probability, default=1e-6, help="delta in (0, 1) of the reported certificate (default 1e-6)")
    run.add_argument("--param", action="append", metavar="NAME=VALUE", help="another policy parameter (repeatable)")
    run.add_argument("--save", help="write the per-round results to a .parquet (extra: frames) or .csv file (pandas)")
    run.add_argument("--plot", help="write a regret / epsilon figure to this .png/.pdf/.svg file (extra: plot)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=_run)


def _add_experiment(sub) -> None:
    from privbandit.experiments import EXPERIMENTS

    exp = sub.add_parser("experiment", help="run one of the source papers' experiments (see privbandit.experiments)")
    exp.add_argument("name", help="one of: " + ", ".join(sorted(EXPERIMENTS)))
    exp.add_argument("--horizon", type=whole(10), default=10_000, help="rounds (the papers use 100000; default 10000)")
    exp.add_argument("--replicates", type=whole(1), default=20)
    exp.add_argument("--seed", type=whole(0), default=0)
    exp.add_argument("--out", help="directory for summary.csv and regret.png (extras: frames, plot)")
    exp.add_argument("--dask", metavar="ADDRESS", help="run the cells on the Dask scheduler at HOST:PORT (extra: dask)")
    exp.set_defaults(func=_experiment)


def _add_budget(sub) -> None:
    bud = sub.add_parser("budget", help="certified epsilon of a configured policy over a horizon, per accountant")
    bud.add_argument("policy")
    bud.add_argument("--horizon", type=whole(2, HORIZON_MAX), required=True, help="rounds, in [2, 1e30]")
    bud.add_argument("--n-arms", type=whole(2), default=2, help="number of arms, >= 2 (default 2)")
    bud.add_argument("--delta", type=delta_or_zero, default=1e-6, help="delta in (0, 1), or 0 (pure DP) (default 1e-6)")
    bud.add_argument("--epsilon", type=positive, help="the privacy level the policy certifies (its `epsilon`)")
    bud.add_argument("--param", action="append", metavar="NAME=VALUE")
    _add_structure_arguments(bud)
    bud.set_defaults(func=_budget)


def _add_invert(sub) -> None:
    inv = sub.add_parser("invert", help="the least-noise parameter meeting a privacy target (verified)")
    inv.add_argument("policy")
    inv.add_argument("--horizon", type=whole(2, HORIZON_MAX), required=True, help="rounds, in [2, 1e30]")
    inv.add_argument("--n-arms", type=whole(2), default=2)
    inv.add_argument("--epsilon", type=positive, help="target epsilon (at --delta)")
    inv.add_argument("--delta", type=delta_or_zero, default=1e-6, help="delta in (0, 1), or 0 (pure DP) (default 1e-6)")
    inv.add_argument("--mu", type=positive, help="target GDP mu instead of an epsilon")
    inv.add_argument("--solve-for", help="the parameter to solve for, e.g. v, c, epsilon")
    inv.add_argument("--bounds", type=real(), nargs=2, metavar=("LO", "HI"),
                     help="search range; both ends must be valid values of the parameter")
    inv.add_argument("--integer", action="store_true", help="search whole numbers only")
    inv.add_argument("--frontier", help="gaussian_ts: comma-separated b values; prints c_min(b) for each")
    inv.add_argument("--param", action="append", metavar="NAME=VALUE", help="fixed policy parameters")
    _add_structure_arguments(inv)
    inv.set_defaults(func=_invert)


def _add_certify(sub) -> None:
    cert = sub.add_parser("certify", help="certify N Laplace releases with every accountant")
    cert.add_argument("--epsilon", type=positive, default=0.1, help="per-release epsilon in (0, inf) (default 0.1)")
    cert.add_argument("--releases", type=whole(1, 10**300), default=1000,
                      help="number of releases, in [1, 1e300] (default 1000)")
    cert.add_argument("--delta", type=delta_or_zero, default=1e-6, help="target delta in (0, 1), or 0 (pure DP) (default 1e-6)")
    cert.set_defaults(func=_certify)


def _one_line(exc: BaseException | str) -> str:
    """An error message as one line, every word of it at most ~100 characters: a newline in a quoted
    argument becomes a space, and a word longer than 80 (a 5000-digit number or text quoted by
    argparse's "invalid choice" or by a message deep in the package) is shortened to its start, its
    length and its end, so no error echoes thousands of characters. The end is kept because a long
    word is most often a path, and its file name is at the end (session 18: a log path of 99
    characters under pytest-xdist's longer temporary directory lost ``log.csv'`` from its message)."""
    words = [w if len(w) <= 80 else f"{w[:30]}...({len(w)} characters)...{w[-30:]}" for w in str(exc).split()]
    return " ".join(words) or type(exc).__name__


def _delivered(code: int) -> int:
    """``code``, once everything printed has reached standard output; otherwise one line on stderr and
    exit status 2. A closed stdout (``privbandit budget ... >&-``: sys.stdout is None, print() writes
    nothing) and ``--help`` / ``--version`` into a full device (argparse swallows the OSError) ended
    with status 0 and no output: a script reading the result saw success."""
    if code != 0:
        return code
    if sys.stdout is None:
        print("privbandit: error: standard output is closed: the result could not be written", file=sys.stderr)
        return 2
    try:
        sys.stdout.flush()
    except OSError as exc:
        # (the unwritten text stays buffered: the interpreter's flush at exit would fail again, and print
        # "Exception ignored ...": standard output is pointed at the null device instead)
        sys.stdout = open(os.devnull, "w")
        print(f"privbandit: error: the result could not be written to standard output ({exc.strerror or exc})",
              file=sys.stderr)
        return 2
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """The ``privbandit`` command. Bad input never ends in a traceback: a ValueError (the package's
    bad-input error), a missing extra, an unusable path or too little memory is one line,
    ``privbandit: error: ...``, with exit status 2; anything else is reported the same way (as an
    internal error) unless PRIVBANDIT_TRACEBACK=1 asks for the traceback."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage error (one line, see OneLineParser) or --help / --version
        return _delivered(exc.code if isinstance(exc.code, int) else 2)
    except OSError as exc:  # --help / --version could not be written (cli_checks.print_message)
        print(f"privbandit: error: the result could not be written to standard output ({exc.strerror or exc})",
              file=sys.stderr)
        return 2
    try:
        return _delivered(int(args.func(args)))
    except ValueError as exc:  # bad input: a clear message, no traceback
        print(f"privbandit: error: {_one_line(exc)}", file=sys.stderr)
    except ImportError as exc:  # an optional extra is missing: say which one
        extra = {"matplotlib": "plot", "pandas": "frames", "pyarrow": "frames", "dask": "dask",
                 "distributed": "dask", "tqdm": "progress"}.get((exc.name or "").split(".")[0], "all")
        print(f"privbandit: error: {_one_line(exc)}. Install the optional extra: pip install 'privbandit[{extra}]'",
              file=sys.stderr)
    except MemoryError:
        print("privbandit: error: not enough memory for this request (a smaller --horizon or --replicates "
              "needs less)", file=sys.stderr)
    except OSError as exc:
        print(f"privbandit: error: {_one_line(exc)}", file=sys.stderr)
    except KeyboardInterrupt:
        print("privbandit: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # no traceback, ever; but say it is ours, not the user's
        if os.environ.get("PRIVBANDIT_TRACEBACK"):
            raise
        print(f"privbandit: error: internal error {type(exc).__name__}: {_one_line(exc)} "
              "(please report it; PRIVBANDIT_TRACEBACK=1 shows the traceback)", file=sys.stderr)
    return 2
