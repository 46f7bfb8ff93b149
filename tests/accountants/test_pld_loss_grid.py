"""The fast PLD engine computes its query grid of losses once (session 16): epsilon() and each delta() of its
verified walk read the same read-only array, equal to the grid computed afresh, so every answer is unchanged."""

import numpy as np
import pytest

from accountants import fastpld
from accountants.events import Composed, Laplace, PureDP
from accountants.pld import PLDAccountant


@pytest.mark.parametrize("event", [Laplace(scale=70.0) * 14, Composed((Laplace(scale=2.0), PureDP(0.5)))])
def test_loss_grid_computed_once_and_read_only(event, monkeypatch):
    acc = PLDAccountant()
    acc.compose(event)
    engine = acc._engine()
    calls = []
    grid = fastpld._grid_above

    def counted(idx, h):
        calls.append(len(idx))
        return grid(idx, h)

    monkeypatch.setattr(fastpld, "_grid_above", counted)
    eps = engine.epsilon(1e-6)
    assert engine.delta(eps) <= 1e-6 and engine.delta(eps * 0.99) > 1e-6
    assert len(calls) == 1  # (990ee7c: one per epsilon() and one per delta(), 4 here)
    losses = engine._losses()
    assert losses is engine._losses() and not losses.flags.writeable
    assert np.array_equal(losses, grid(np.arange(engine.n_fft) + engine.base, engine.h))
