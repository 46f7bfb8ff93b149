"""bench/bench_ledger_hold.py: its modes act on the reports of ledger-off runs only (a ledger-on run is
recorded as always), ``hold`` keeps exactly a staging batch alive, ``ring`` copies the reports' values,
and the hook is removed on exit (small runs: the figures are only as good as this)."""

from __future__ import annotations

import pathlib
import runpy
import types

import numpy as np
import pytest

from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.ledger import _STAGE_ROUNDS, Ledger

_PATH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "bench_ledger_hold.py"


@pytest.fixture(scope="module")
def hold():
    return types.SimpleNamespace(**runpy.run_path(str(_PATH), run_name="bench_ledger_hold"))


def test_modes_see_every_report_of_the_unrecorded_ledger_and_none_of_a_recording_one(hold):
    original = Ledger._store
    with hold.Hooked(12) as hook:
        hook.rate("private_ucb", 12, 600, "hold")
        held_reports = hook.reports
        assert held_reports == 600  # one tree release per round, every round
        assert hook.most_held == _STAGE_ROUNDS
        hook.rate("private_ucb", 12, 600, "on")  # recorded by the ledger, not by the hook
        assert hook.reports == held_reports
        ledger_on = simulate(hold.make("private_ucb"), Bernoulli(hold.MEANS), 600, 12, seed=0, progress=False)
    assert Ledger._store is original
    plain = simulate(hold.make("private_ucb"), Bernoulli(hold.MEANS), 600, 12, seed=0, progress=False)
    assert ledger_on.realized_epsilon.tobytes() == plain.realized_epsilon.tobytes()


def test_ring_copies_the_reported_rows(hold):
    with hold.Hooked(4) as hook:
        hook.mode = "ring"
        st, lo, hi, scale = np.array([0, 1, 2, 3]), np.arange(4) * 2, np.arange(4) * 2 + 1, np.full(4, 3.0)
        hook.handle((0, None, st, lo, hi, scale, 1.0))
        st[:] = 9  # a caller reusing its array: the copy keeps what was reported
        assert hook._ring[0][0].tolist() == [0, 1, 2, 3] and hook._ring[2][0].tolist() == [1, 3, 5, 7]
        assert hook._ring[3][0].tolist() == [3.0] * 4 and not hook.held


def test_measure_reports_every_mode(hold):
    got = hold.measure("dp_ucb_bound", 8, 300, 1)
    assert set(got["extra"]) == set(hold.MODES) and got["extra"]["off"].tolist() == [0.0]
    assert all(len(v) == 1 and v[0] > 0 for v in got["rates"].values())
