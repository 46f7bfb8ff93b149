"""Gaussian TS's posterior draw and its ledger record in one kernel (session 18, issue 19 item 1):
``posterior_theta_staged`` is ``posterior_theta`` then the ledger's ``prefix_stage`` in one crossing, and
``GaussianPosteriorRelease.release`` takes it where the recorder counts draws at each call and runs compiled --
the same draws, the same ledger -- and calls the recorder itself everywhere else (a wrapped or replaced
record included)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandit import ledger as ledger_module
from privbandit.ledger import Ledger, prefix_slot
from privbandit.mechanisms import _kernels, posterior
from privbandit.mechanisms._kernels import prefix_stage
from privbandit.mechanisms.posterior import GaussianPosteriorRelease, posterior_theta, posterior_theta_staged


@pytest.mark.parametrize("way", ["py_func", "jit"])
def test_staged_kernel_is_the_two_kernels_in_turn(way):
    data = np.random.default_rng(1)
    counts = data.integers(0, 50, 300).astype(float)
    counts[:3] = [np.nan, 0.999, 1.0]
    sums, z = counts * data.random(300), data.standard_normal(300)
    for factor in (1.0, 0.5):
        theta, draws, row = np.empty(300), np.arange(300), np.full(40, -1.0)
        want_theta, want_draws, want_row = np.empty(300), np.arange(300), np.full(40, -1.0)
        getattr(posterior_theta_staged, way)(sums, counts, z, 2.0, factor, theta, draws, row)
        getattr(posterior_theta, way)(sums, counts, z, 2.0, factor, want_theta)
        getattr(prefix_stage, way)(counts, want_draws, want_row)
        for x, y in ((theta, want_theta), (draws, want_draws), (row, want_row)):
            assert np.array_equal(x, y, equal_nan=True)


def _releases(monkeypatch, fused: bool, wrap: bool = False, R=450, K=5, calls=300):
    """Thetas of ``calls`` releases at growing counts and the ledger after them (R x K >= 2048 entries: the
    recorder counts draws at each call); ``fused`` False: the recorder called from Python."""
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 0)
    if not fused:
        monkeypatch.setattr(posterior, "prefix_slot", lambda record: None)
    book = Ledger(R, K, track_replicates=8)
    mech = GaussianPosteriorRelease(R, K, c=1.5, rng=np.random.default_rng(3), ledger=book, block=64)
    if wrap:  # an audit's hook around the record: must still see every call
        seen, record = [], mech._record
        mech._record = lambda counts: seen.append(1) or record(counts)
    data = np.random.default_rng(4)
    counts, sums, thetas = np.zeros((R, K)), np.zeros((R, K)), []
    for _ in range(calls):
        thetas.append(mech.release(sums, counts))
        pulled = data.random((R, K)) < 0.3
        counts += pulled
        sums += pulled * data.random((R, K))
    monkeypatch.undo()
    if wrap:
        assert len(seen) == calls
    return np.array(thetas), book.draws.copy(), book.realized_epsilon(1e-6)


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: the recorder is always called")
def test_release_stages_in_its_kernel_with_the_same_draws_and_ledger(monkeypatch):
    separate = _releases(monkeypatch, fused=False)
    # the fused path never reaches the recorder's own staging call ...
    monkeypatch.setattr(ledger_module, "_PREFIX_STAGE", [None])
    fused = _releases(monkeypatch, fused=True)
    # ... and gives the same thetas, draw counts and realized spend
    for x, y in zip(fused, separate):
        assert np.array_equal(x, y, equal_nan=True)
    assert (separate[1] > 0).any() and (separate[1] < 300).any()
    # a wrapped record is called for every release, with the same result
    for x, y in zip(_releases(monkeypatch, fused=True, wrap=True), separate):
        assert np.array_equal(x, y, equal_nan=True)


def test_prefix_slot_only_for_an_unreplaced_counting_recorder():
    big, small, tight = Ledger(500, 5), Ledger(4, 5), Ledger(500, 5, tight=True)
    record = big.prefix_recorder(lambda k: (np.sqrt(1 / (k + 1.0)), 1 / (k + 1.0)), "m")
    assert prefix_slot(record) is record.__self__
    assert prefix_slot(lambda counts: record(counts)) is None
    for book in (small, tight):
        assert prefix_slot(book.prefix_recorder(lambda k: (1 / (k + 1.0), 1 / (k + 1.0)), "m")) is None
