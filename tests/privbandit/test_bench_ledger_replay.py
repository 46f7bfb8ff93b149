"""bench/bench_ledger_replay.py replays a run's ledger reports into a ledger equal to the run's own,
bit for bit, and its check sees a replay that lost a report or changed one (small runs: the script's
figures are only as good as this)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "bench_ledger_replay.py"


@pytest.fixture(scope="module")
def replay_module():
    spec = importlib.util.spec_from_file_location("bench_ledger_replay", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# listed and pulled entries (DP-TS's split), hybrid inserts (DP-UCB-Bound), grid inserts of every
# arm (DP-UCB), prefix recorders (Gaussian TS)
@pytest.mark.parametrize("name", ["dp_ts", "dp_ucb_bound", "dp_ucb", "gaussian_ts"])
def test_replay_rebuilds_the_run_ledger(replay_module, name):
    live, _, calls = replay_module.capture(replay_module.make(name), 12, 600, 5)
    kinds = {c[0] for c in calls}
    assert "query" in kinds and ({"store", "prefix"} & kinds)
    book, report_s, query_s = replay_module.replay(calls)
    assert replay_module.same_bits(live, book) == []
    assert report_s > 0.0 and query_s >= 0.0


def test_the_check_sees_a_lost_or_changed_report(replay_module):
    live, _, calls = replay_module.capture(replay_module.make("dp_ts"), 12, 600, 5)
    reports = [i for i, c in enumerate(calls) if c[0] == "store"]
    lost = calls[: reports[40]] + calls[reports[40] + 1:]
    book, _, _ = replay_module.replay(lost)
    assert "_draws" in replay_module.same_bits(live, book)
    # a report of every replicate (tracked ones among them) one record longer: the same draws, other sums
    i = next(i for i in reports[40:] if calls[i][1][1].size == 12)
    kind, rep, st, lo, hi, *rest = calls[i][1]
    longer = calls[:i] + [("store", (kind, rep, st, lo, hi + 1, *rest), calls[i][2])] + calls[i + 1:]
    book, _, _ = replay_module.replay(longer)
    assert "_diff" in replay_module.same_bits(live, book)
