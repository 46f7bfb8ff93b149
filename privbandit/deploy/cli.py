"""``privbandit deploy``: init / select / update / status / replay / audit on a deployment store.

Every subcommand prints one JSON object on stdout. Numbers are parsed by the same argparse types
as the rest of the command line (``privbandit.cli_checks``: ``--n-arms 1e3`` is 1000, exactly as
``run --horizon 1e3``). Bad input (an unknown option, a malformed number, a reward out of range under ``--strict-rewards``, a missing, corrupt or foreign store) prints
one line ``privbandit: error: ...`` on stderr and exits 2; a refused decision (``--on-exhausted
stop`` after the budget is spent) prints ``privbandit: budget exhausted: ...`` and exits 3.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import types

from privbandit.cli import _one_line
from privbandit.cli_checks import positive, probability, real, whole  # the numbers of every subcommand
from privbandit.cli import parse_params as _params  # one NAME=VALUE parser for every subcommand

EXIT_BAD_INPUT, EXIT_EXHAUSTED = 2, 3


class _OneLineParser(argparse.ArgumentParser):
    """argparse errors as one line (no usage block), exit 2."""

    def error(self, message: str):
        from privbandit.cli import _one_line  # the offending argument may hold a newline: still one line

        self.exit(EXIT_BAD_INPUT, f"privbandit: error: {self.prog}: {_one_line(message)}\n")

    def parse_known_args(self, args=None, namespace=None):
        from privbandit.cli_checks import refuse_repeated_options

        refuse_repeated_options(self, sys.argv[1:] if args is None else list(args))
        return super().parse_known_args(args, namespace)

    def _print_message(self, message, file=None):
        from privbandit.cli_checks import print_message  # --help that cannot be written: an error, not status 0

        print_message(self, message, file)


def _print(obj) -> None:
    print(json.dumps(obj, sort_keys=False))


def _key(args, new_store: bool = False) -> bytes | None:
    """The key of ``--key-file`` (None without it: the environment's, if any, see store.resolve_key);
    ``new_store`` (``init``): refused, naming the file, when obviously weak."""
    from privbandit.deploy.store import check_key_strength, read_key_file

    if args.key_file is None:
        return None
    key = read_key_file(args.key_file)
    return check_key_strength(key, f"--key-file {os.fsdecode(args.key_file)!r}") if new_store else key


def _open(args):
    """The store of ``args``, opened with its key and --allow-legacy."""
    from privbandit.deploy import Deployment

    return Deployment.open(args.store, key=_key(args), allow_legacy=args.allow_legacy, min_version=args.min_version)


def _init(args) -> int:
    from privbandit.deploy import Deployment

    dep = Deployment.create(
        args.store, args.policy, params=_params(args.param), n_arms=args.n_arms,
        budget=args.budget, delta=args.delta, seed=args.seed, horizon=args.horizon,
        on_exhausted=args.on_exhausted, strict_rewards=args.strict_rewards, synchronous=args.synchronous,
        track_realized=not args.no_realized, key=_key(args, new_store=True))
    with dep:
        keys = ("policy", "params", "n_arms", "horizon", "anytime", "budget_epsilon", "delta", "seed", "stop_round",
                "certified_at_stop", "accountant_at_stop", "next_round_epsilon", "on_exhausted", "synchronous", "track_realized")
        _print({"store": args.store} | {k: dep.config[k] for k in keys} | {"authenticated": dep.authenticated})
    return 0


def _select(args) -> int:
    with _open(args) as dep:
        _print(dep.select().to_dict())
    return 0


def _update(args) -> int:
    with _open(args) as dep:
        _print(dep.update(args.decision, args.reward).to_dict())
    return 0


def _status(args) -> int:
    with _open(args) as dep:
        _print(dep.status(last=args.last))
    return 0


def _replay(args) -> int:
    from privbandit.deploy.replay import replay

    with _open(args) as dep:
        _print(replay(dep, args.log))
    return 0


def _audit(args) -> int:
    """The deployment audit (privbandit.audit.deployment, docs/audit.md "Round 10") of the store: exit 0
    CONSISTENT, 1 VIOLATION, 3 INCONCLUSIVE (a check could not run: named in ``notes``), as ``privbandit audit``."""
    from privbandit.audit.deployment import deployment_audit
    from privbandit.deploy.store import using_key

    with using_key(_key(args)):  # (the audit opens the store itself)
        res = deployment_audit(args.store, min_version=args.min_version)
    _print({"store": args.store, "policy": res.policy, "verdict": res.verdict, "policy_rounds": res.rounds,
            "stop_round": res.stop_round, "checks": res.checks,
            "findings": [{"check": f.check, "detail": f.detail} for f in res.findings], "notes": res.notes})
    return {"CONSISTENT": 0, "VIOLATION": 1}.get(res.verdict, 3)


def run(args) -> int:
    """Dispatch a parsed ``deploy`` command, turning errors into one line and an exit code."""
    from privbandit.deploy import BudgetExhausted, StoreError, StoreUnavailable

    try:
        return int(args.deploy_func(args))
    except BudgetExhausted as exc:
        print(f"privbandit: budget exhausted: {_one_line(exc)}", file=sys.stderr)
        return EXIT_EXHAUSTED
    except StoreUnavailable as exc:  # busy, full, read-only: 1 like any database error, not 2 (bad input)
        print(f"privbandit: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except (ValueError, StoreError, OSError) as exc:  # messages quote paths, which may hold a newline
        print(f"privbandit: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except sqlite3.Error as exc:
        print(f"privbandit: error: {_one_line(f'{args.store}: database error ({exc})')}", file=sys.stderr)
        return 1


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``deploy`` (and its subcommands) on an ``argparse`` subparsers object."""
    p = subparsers.add_parser("deploy", help="run a private policy online from a crash-safe SQLite store "
                                             "(init, select, update, status, replay, audit)")
    p.error = types.MethodType(_OneLineParser.error, p)  # `privbandit deploy` alone: one line too
    sub = p.add_subparsers(dest="deploy_command", required=True, parser_class=_OneLineParser,
                           metavar="{init,select,update,status,replay,audit}")

    init = sub.add_parser("init", help="create a deployment store")
    init.add_argument("store")
    init.add_argument("--policy", required=True, help="registered private policy, e.g. lazy_dp_ts")
    init.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="policy parameter (repeatable)")
    init.add_argument("--n-arms", required=True, type=whole(2), metavar="K", help="number of arms, >= 2")
    init.add_argument("--budget", required=True, type=positive, metavar="EPS",
                      help="epsilon the deployment may spend (at --delta), in (0, inf)")
    init.add_argument("--delta", required=True, type=probability, metavar="D", help="in (0, 1)")
    init.add_argument("--seed", default=None, type=whole(0), metavar="S", help="default: fresh entropy, recorded in the store")
    init.add_argument("--horizon", default=None, type=whole(2), metavar="T",
                      help="rounds the policy is started for (default: the longest the budget affords)")
    init.add_argument("--on-exhausted", choices=["exploit", "stop"], default="exploit",
                      help="after the budget: exploit the released arms (default) or refuse decisions")
    init.add_argument("--synchronous", choices=["full", "normal"], default="full",
                      help="full: fsync per call, durable through a power cut (default); normal: durable "
                           "through a killed process only, faster")
    init.add_argument("--no-realized", action="store_true",
                      help="keep release counts only, not the ledger's per-record sums (smaller snapshots; "
                           "status then reports no realized epsilon)")
    init.add_argument("--strict-rewards", action="store_true", help="refuse rewards outside [0, 1] instead of clipping")
    init.set_defaults(deploy_func=_init)

    sel = sub.add_parser("select", help='next decision: prints {"decision": ID, "arm": A, ...}')
    sel.add_argument("store")
    sel.set_defaults(deploy_func=_select)

    upd = sub.add_parser("update", help="record the reward of a decision (delayed, any order; duplicates are no-ops)")
    upd.add_argument("store")
    upd.add_argument("--decision", required=True, type=whole(1), metavar="ID")
    upd.add_argument("--reward", required=True, type=real(), metavar="R",
                     help="a finite real; clipped to [0, 1] (refused outside it under --strict-rewards)")
    upd.set_defaults(deploy_func=_update)

    st = sub.add_parser("status", help="spent and remaining epsilon, odometer, counts, last releases (JSON)")
    st.add_argument("store")
    st.add_argument("--last", default=5, type=whole(0), metavar="N", help="how many recent policy rounds to list (default 5; more than the rounds lists them all)")
    st.set_defaults(deploy_func=_status)

    rep = sub.add_parser("replay", help="feed a CSV reward table (one column per arm) through the deployment")
    rep.add_argument("store")
    rep.add_argument("log", metavar="LOG.csv")
    rep.set_defaults(deploy_func=_replay)

    aud = sub.add_parser("audit", help="audit the store: filter, rounds, releases, replay from the seed, realized <= "
                                       "certified (JSON; exit 0 CONSISTENT, 1 VIOLATION)")
    aud.add_argument("store")
    aud.set_defaults(deploy_func=_audit)

    key_help = ("file holding the store's authentication key (HMAC-SHA256; at least 16 bytes; default: the "
                "environment's PRIVBANDIT_DEPLOY_KEY or PRIVBANDIT_DEPLOY_KEY_FILE)")
    for parser in (init, sel, upd, st, rep, aud):
        parser.add_argument("--key-file", default=None, metavar="FILE",
                            help=key_help if parser is not init else key_help + ": the store is then authenticated "
                            "and refuses to open without the key")
    for parser in (sel, upd, st, rep):
        parser.add_argument("--allow-legacy", action="store_true",
                            help="read a store written before session 13 (object-pickle snapshot) and migrate it to "
                                 "the data-only format (refused otherwise)")
    aud.set_defaults(allow_legacy=False)
    for parser in (sel, upd, st, rep, aud):
        parser.add_argument("--min-version", default=0, type=whole(0), metavar="V",
                            help="refuse the store if its state version is below V (the `state_version` of the "
                                 "last status, kept elsewhere): a store rolled back to an earlier state of its own "
                                 "(a restored backup) would spend the privacy of the decisions it forgot again")

    p.set_defaults(func=run)
    return p
