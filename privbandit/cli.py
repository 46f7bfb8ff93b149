"""The ``privbandit`` command line. Subcommands grow with the toolkit; ``demo`` is the README's main job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import privbandit


def _demo(args: argparse.Namespace) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="privbandit", description=__doc__)
    parser.add_argument("--version", action="version", version=f"privbandit {privbandit.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="certify an embedded default configuration")
    demo.add_argument("--epsilon", type=float, default=0.1, help="per-release epsilon (default 0.1)")
    demo.add_argument("--releases", type=int, default=1000, help="number of releases (default 1000)")
    demo.add_argument("--delta", type=float, default=1e-6, help="target delta (default 1e-6)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ValueError as exc:  # bad input: a clear message, no traceback
        print(f"privbandit: error: {exc}", file=sys.stderr)
        return 2
