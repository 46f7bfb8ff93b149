"""What keeping the staged reports alive costs a run, apart from the ledger's own work (issue 19 item 1).

The ledger stages each listed report's arrays uncopied and folds ~256 of them in at once
(privbandit/ledger.py, ``_store`` / ``_drain``); replayed alone, its functions explain only part of the
ledger-on extra (docs/benchmarks.md, session 13). This script tests the rest in a ledger-off run (which
records nothing and keeps nothing, ``Ledger.unrecorded``) by giving its ``_store`` -- the seam every
listed report passes -- one of these behaviours, alternated in one process (CPU clock) with a plain
ledger-off run and a ledger-on run:

* ``hold``: keep references to the report's arrays for ``_STAGE_ROUNDS`` reports, then drop them all
  (what the ledger's staging keeps alive, with none of its work);
* ``drop``: the same Python work (a tuple appended), dropped at once (the control of ``hold``);
* ``ring``: copy the report's (R,) arrays into rows of preallocated (``_STAGE_ROUNDS``, R) buffers and
  keep nothing (a ledger that stages by copying into buffers of its own).

Each mode's extra is plain-off / mode - 1 per round (the runs of a round are adjacent; the order rotates).
Measured (session 14, R = 100, T = 2e4, load 6-10 on 2 cores): ``hold`` +5..+16% (medians),
``drop`` -3..+2%, ``ring`` about as much as ``hold``. Not measured: the prefix recorder (Gaussian TS)
stages counts into a buffer already and passes no arrays through ``_store``.

Usage: ``python bench/bench_ledger_hold.py [--policies private_ucb,dp_ucb_bound] [--replicates 100]
[--horizon 20000] [--rounds 5]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from privbandit.cli_checks import whole
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.ledger import _STAGE_ROUNDS, Ledger
from privbandit.policies import REGISTRY, GaussianTS

MEANS = [0.75, 0.625, 0.5, 0.375, 0.25]
MODES = ("on", "off", "hold", "drop", "ring")


def make(name):
    return GaussianTS(b=10, c=4.0) if name == "gaussian_ts" else REGISTRY[name]()


class Hooked:
    """``Ledger._store`` with a behaviour for the reports of a ledger that records nothing (``mode``);
    a recording ledger's reports go to the original. A context manager: the class attribute is restored
    on exit."""

    def __init__(self, replicates: int) -> None:
        self.mode = "off"
        self.held: list[tuple] = []
        self.reports = 0  # reports of non-recording ledgers seen (any mode)
        self.most_held = 0
        self._ring = None
        self._replicates = replicates
        self._slot = 0

    def __enter__(self) -> "Hooked":
        original = self._original = Ledger._store
        hook = self

        def store(book, kind, rep, st, lo, hi, p, s, mechanism, nd, *, fresh=False):
            if book._recording:
                return original(book, kind, rep, st, lo, hi, p, s, mechanism, nd, fresh=fresh)
            hook.reports += 1
            hook.handle((kind, rep, st, lo, hi, p, s))
            return None

        Ledger._store = store
        return self

    def __exit__(self, *exc) -> None:
        Ledger._store = self._original

    def handle(self, entry: tuple) -> None:
        if self.mode == "hold":
            self.held.append(entry)
            self.most_held = max(self.most_held, len(self.held))
            if len(self.held) >= _STAGE_ROUNDS:
                self.held.clear()
        elif self.mode == "drop":
            self.held.append(entry)
            self.held.clear()
        elif self.mode == "ring":
            if self._ring is None:
                self._ring = [np.empty((_STAGE_ROUNDS, self._replicates), dtype=t)
                              for t in (np.int64, np.int64, np.int64, float)]
            i, self._slot = self._slot, (self._slot + 1) % _STAGE_ROUNDS
            for field, buf in zip(entry[2:6], self._ring):  # streams, lo, hi, scale: rows of R values
                if type(field) is np.ndarray and field.shape == (self._replicates,):
                    np.copyto(buf[i], field, casting="unsafe")

    def rate(self, name: str, replicates: int, horizon: int, mode: str) -> float:
        """Pulls per CPU second of one run in ``mode``."""
        self.mode, self.held = mode, []
        policy = make(name)
        start = time.process_time()
        simulate(policy, Bernoulli(MEANS), horizon, replicates, seed=0, progress=False, ledger=mode == "on")
        seconds = time.process_time() - start
        self.held = []
        return horizon * replicates / seconds


def measure(name: str, replicates: int, horizon: int, rounds: int) -> dict:
    """Every mode's rates over ``rounds`` rounds (order rotating, after one untimed run of each), and
    each mode's extra over the plain ledger-off run of its round."""
    rates = {mode: [] for mode in MODES}
    with Hooked(replicates) as hook:
        for mode in MODES:
            hook.rate(name, replicates, horizon, mode)
        for r in range(rounds):
            for j in range(len(MODES)):
                mode = MODES[(j + r) % len(MODES)]
                rates[mode].append(hook.rate(name, replicates, horizon, mode))
    off = np.asarray(rates["off"])
    return {"rates": rates, "extra": {mode: off / np.asarray(rates[mode]) - 1.0 for mode in MODES},
            "most_held": hook.most_held, "reports": hook.reports}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policies", default="private_ucb,dp_ucb_bound,dp_ts")
    ap.add_argument("--replicates", type=whole(1), default=100)
    ap.add_argument("--horizon", type=whole(1), default=20000)
    ap.add_argument("--rounds", type=whole(1), default=5, help="timed rounds of every mode (default 5)")
    args = ap.parse_args()
    print(f"R = {args.replicates}, T = {args.horizon}; extra over the plain ledger-off run of the same round, "
          f"median (min..max) of {args.rounds} rounds; CPU time\n")
    print("| policy | " + " | ".join(MODES[:1] + MODES[2:]) + " | ledger off, pulls/s |")
    print("|---|" + "---:|" * (len(MODES)) )
    for name in args.policies.split(","):
        got = measure(name, args.replicates, args.horizon, args.rounds)
        cells = [f"{np.median(got['extra'][m]):+.1%} ({got['extra'][m].min():+.0%}..{got['extra'][m].max():+.0%})"
                 for m in MODES if m != "off"]
        print(f"| {name} | " + " | ".join(cells) + f" | {np.median(got['rates']['off']):.3g} |")


if __name__ == "__main__":
    main()
