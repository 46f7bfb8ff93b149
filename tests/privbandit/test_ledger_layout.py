"""The ledger's stream-major difference arrays (session 11, s11/ledger) against numbers the old
(position, replicate, stream) layout produced, recorded from d72499f by
fixtures/make_ledger_layout_fixtures.py: realized epsilon bit for bit at every checkpoint, and a
deployment store written by d72499f loads (migrated on unpickling), verifies its digests and
continues as it would have."""

import json
import pickle
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from privbandit.deploy.deployment import Deployment
from privbandit.ledger import Ledger

FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
import make_ledger_layout_fixtures as make  # noqa: E402

REALIZED = json.loads((FIXTURES / "ledger_layout_realized.json").read_text())


def _hex(values) -> list:
    return [float(x).hex() for x in np.asarray(values).reshape(-1)]


@pytest.mark.parametrize("case", make.CASES, ids=[f"{c[0]}-{c[2]}-{c[5]}" for c in make.CASES])
def test_realized_epsilon_at_every_checkpoint_equals_the_old_layouts(case):
    key = "/".join(map(str, (case[0], case[2], case[3], case[4], case[5])))
    got = make.run_case(*case)
    assert [[float(x).hex() for x in row] for row in np.asarray(got)] == REALIZED[key]


def test_direct_queries_equal_the_old_layouts():
    assert make.direct_queries() == REALIZED["direct"]


def test_the_difference_arrays_are_stream_major():
    led = Ledger(2, 3, capacity=8)
    led.record_laplace(1, 2, 3, 5, 2.0, 1.0, mechanism="m")
    led._settle()
    diff = led._diff[0]  # sum eps
    assert diff.shape == (2, 3, 9) and diff.flags.c_contiguous
    assert diff[1, 2, 3] == 0.5 and diff[1, 2, 5] == -0.5 and np.count_nonzero(diff) == 2


def test_a_ledger_pickled_in_the_old_layout_is_migrated():
    """The state a d72499f ledger pickles: the same difference arrays as (position, replicate,
    stream) and no layout marker; unpickled, every query answers as the ledger it was taken from."""
    led = Ledger(3, 2, capacity=16)
    rng = np.random.default_rng(2)
    for n in range(1, 12):
        led.record_laplace(np.arange(3), n % 2, max(n - 3, 0), n, rng.uniform(1, 3, 3), 1.0, mechanism="m")
        led.record_gaussian(np.arange(3), 0, 0, n, 2.0, 1.0, mechanism="g")
    led._settle()
    state = led.__getstate__()
    del state["_stream_major"]
    state["_diff"] = {stat: np.ascontiguousarray(np.moveaxis(d, 2, 0)) for stat, d in state["_diff"].items()}
    old = Ledger.__new__(Ledger)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    for stat, diff in led._diff.items():
        assert old._diff[stat].tobytes() == diff.tobytes()
    assert _hex(old.realized_epsilon(1e-6)) == _hex(led.realized_epsilon(1e-6))
    assert _hex(old.realized_mu()) == _hex(led.realized_mu())
    again = pickle.loads(pickle.dumps(old))  # migrated once: pickled again, it is not moved twice
    assert all(again._diff[s].tobytes() == d.tobytes() for s, d in led._diff.items())


def test_a_deployment_store_written_by_d72499f_loads_and_continues(tmp_path):
    expected = json.loads((FIXTURES / "ledger_layout_deploy.json").read_text())
    path = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "ledger_layout_d72499f.db", path)
    # the snapshot's digest is checked on load; an object-pickle snapshot is read only when allowed (session 14),
    # and is then written back in the data format at once
    dep = Deployment.open(path, allow_legacy=True)
    assert dep.snapshot()["ledger"]._stream_major
    assert make.status_of(dep) == expected["stored"]
    make.drive(dep, make.DEPLOY_MORE)
    assert make.status_of(dep) == expected["more"]
    dep.close()
    dep = Deployment.open(path)  # written back in the new layout, read again
    assert make.status_of(dep) == expected["more"]
    dep.close()
