"""The realized-spend queries' per-record sums, summed as (stream, position) rows (session 17).

A query sums each difference array along its positions. numpy's cumsum along the last axis of the
3-D (replicate, stream, position) array ran 3-5x slower than along the rows of the (cell, position)
view of the same memory, and the whole-column kept totals were summed into a copy and then copied
again into rows of the capacity's width. Both changes keep every sum's order, so every figure keeps
its bits:

* ``_rows_cumsum`` against the 3-D cumsum (and the copy summed in place it replaced), bit for bit;
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


@pytest.mark.parametrize("shape, top", [((1, 1, 9), 8), ((3, 2, 65), 64), ((3, 2, 65), 17), ((8, 5, 2001), 1500),
                                        ((2, 3, 5), 0), ((0, 3, 5), 4)])
def test_rows_cumsum_is_the_3d_cumsum_bit_for_bit(shape, top):
    rng = np.random.default_rng(sum(shape) + top)
    diff = rng.standard_normal(shape) * 10.0 ** rng.integers(-12, 3, shape)
    diff[rng.random(shape) < 0.3] = 0.0
    diff[rng.random(shape) < 0.05] = -0.0
    before = diff.copy()
    got = ledger_mod._rows_cumsum(diff, top)
    assert got.shape == shape[:2] + (top,)
    assert got.tobytes() == np.cumsum(diff[:, :, :top], axis=2).tobytes()
    old = np.array(diff[:, :, :top])  # the path it replaced: a copy summed in place
    assert got.tobytes() == np.cumsum(old, axis=2, out=old).tobytes()
    assert diff.tobytes() == before.tobytes()  # the difference array is only read


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
