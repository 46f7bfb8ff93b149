"""The realized-spend queries' per-record sums, in one pass (session 17).

A query sums each difference array along its positions. The sums were made in a copy of the
difference array's first ``top`` positions, summed in place, and the whole-column kept totals were
then copied again into rows of the capacity's width; a query of a long run wrote megabytes two or
three times. Now they are summed straight from the difference array into the array returned, which
is kept as it is. Every sum keeps its order, so every figure keeps its bits:

* ``_totals`` (plain and distinct rows) against the copy summed in place it replaced, bit for bit,
  and the difference arrays only read;
* realized epsilon of runs whose queries take the kept-totals paths (top >= 512 positions, whole
  columns and stream by stream after them) against figures recorded from 57774e4;
* the whole-column kept totals are the very array the query returns (no second copy).
"""

import json
from pathlib import Path

import numpy as np
import pytest

import privbandit.ledger as ledger_mod
from privbandit import simulate
from privbandit.envs import Bernoulli
from privbandit.ledger import Ledger
from privbandit.policies import REGISTRY

FIXTURE = Path(__file__).parent / "fixtures" / "realized_kept_57774e4.json"


def _releases(rng, R, K, rounds):
    """Each round's releases (rows, cols, lo, hi): 60% of the streams insert a record, and each
    release's footprint ends at it and reaches back 1-8 records."""
    counts = np.zeros((R, K), dtype=np.int64)
    for _ in range(rounds):
        inserted = rng.random((R, K)) < 0.6
        counts += inserted
        rr, kk = np.nonzero(inserted)
        yield rr, kk, np.maximum(counts[rr, kk] - rng.integers(1, 9, rr.size), 0), counts[rr, kk]


@pytest.mark.parametrize("R, K, distinct", [(1, 1, False), (3, 2, False), (3, 2, True), (8, 5, False)])
def test_totals_are_the_copy_summed_in_place(monkeypatch, R, K, distinct):
    """Random releases (footprints reaching back, a few scales, -0.0 where sums cancel): every
    statistic's per-record totals as the previous path computed them, bit for bit."""
    monkeypatch.setattr(ledger_mod, "_KEEP_MIN_TOP", 2 ** 62)  # the plain sums (the kept ones: below)
    rng = np.random.default_rng(R * 10 + K)
    led = Ledger(R, K, capacity=256)
    for t, (rr, kk, lo, hi) in enumerate(_releases(rng, R, K, 300)):
        if rr.size == 0:
            continue
        if distinct:  # footprints at a few positions only: the distinct rows are summed
            lo, hi = (lo // 16) * 16, np.maximum((hi // 16) * 16, (lo // 16) * 16)
        led.record_laplace(rr, kk, lo, hi, rng.choice([0.5, 1.0, 3.0], rr.size), 1.0, mechanism="m")
        if t % 9 == 0:
            led.record_gaussian(rr, kk, lo, hi, 2.0, 1.0, mechanism="g")
    led._settle()
    before = {stat: diff.copy() for stat, diff in led._diff.items()}
    stats = sorted(led._diff)
    rows = led._distinct_rows() if distinct else None
    assert (rows is not None) == distinct
    for stat, got in zip(stats, led._totals(*stats, distinct=distinct)):
        old = np.array(before[stat][:, :, : led._top]) if rows is None else before[stat][:, :, rows]
        assert got.tobytes() == np.cumsum(old, axis=2, out=old).tobytes(), stat
    for stat, diff in led._diff.items():
        assert diff.tobytes() == before[stat].tobytes()


def test_realized_epsilon_keeps_its_bits_through_the_kept_totals():
    """T = 3000 on 5 arms: the best arm's stream passes 512 records, so the last query (8 points) sums
    whole columns into kept totals, and with 48 points later queries bring them up to date stream
    by stream from rows of the previous top's width."""
    expected = json.loads(FIXTURE.read_text())
    for key, values in expected.items():
        name, points = key.split("/")
        res = simulate(REGISTRY[name](), Bernoulli([0.75, 0.625, 0.5, 0.375, 0.25]), 3000, 3, seed=1,
                       progress=False, realized_points=int(points))
        r = res.realized_epsilon
        assert [float(x).hex() for x in r[np.isfinite(r)].ravel()] == values, key


def test_whole_column_kept_totals_are_the_returned_sums():
    """A query that sums whole columns keeps its result as it is (no copy into capacity-wide rows),
    and a later query bringing streams up to date past that width widens the rows first: the same
    figures as summing every record."""
    led = Ledger(2, 2, capacity=4096)
    for t in range(1, 1200):
        led.record_laplace([0, 1], [t % 2, 0], t - 1, t, 2.0, 1.0, mechanism="m")
    (totals,) = led._totals(ledger_mod._S_EPS)
    assert led._top >= ledger_mod._KEEP_MIN_TOP and np.shares_memory(totals, led._kept[ledger_mod._S_EPS])
    assert not totals.flags.writeable and led._kept[ledger_mod._S_EPS].shape == (4, led._top)
    for t in range(1200, 1210):  # a few more records: the next query goes stream by stream
        led.record_laplace([0, 1], [t % 2, 0], t - 1, t, 2.0, 1.0, mechanism="m")
    (again,) = led._totals(ledger_mod._S_EPS)
    assert again.tobytes() == np.cumsum(led._diff[ledger_mod._S_EPS][:, :, : led._top], axis=2).tobytes()
    assert led._kept[ledger_mod._S_EPS].shape == (4, led._capacity)


def test_first_kept_query_over_uneven_streams_sums_whole_columns():
    """Streams of very different lengths (a bandit's best arm and the rest): the first query keeping
    totals must write every stream's row up to top (its records past the stream's end too, as its
    total + 0.0), so it sums the whole columns in one pass -- decided on the records to write, not on
    the records to sum (fewer than half here) -- with the same figures as summing every record."""
    led = Ledger(2, 4, capacity=4096)
    for t in range(1, 1500):
        arm = 0 if t % 10 else 1 + (t // 10) % 3  # stream 0 gets 90% of the records
        led.record_laplace([0, 1], [arm, arm], t // 10 if arm else t - 1, t // 10 + 1 if arm else t, 2.0, 1.0,
                           mechanism="m")
    led._settle()
    n_cells, top = 8, led._top
    ends = led._end
    assert 2 * int(np.minimum(ends, top).sum()) < n_cells * top  # fewer than half the records to sum
    (totals,) = led._totals(ledger_mod._S_EPS)
    assert led._kept[ledger_mod._S_EPS].shape == (n_cells, top)  # the whole columns, kept as summed
    assert totals.tobytes() == np.cumsum(led._diff[ledger_mod._S_EPS][:, :, :top], axis=2).tobytes()
