"""White-box check 5's lattice test on decimal grids (session 18).

Round 20 (s18/blind, ``private_lin_ts_noise_fixed_point``) rounded the vector tree's Laplace noise to 10^-9 before it
was added: every released value kept the statistic's offset from the grid 10^-9, a grid no dyadic lattice 2^-k is.
The residual (released - statistic) is then on the grid; a release rounded to the grid *after* the noise
(post-processing, round 20's control ``private_ucb_release_fixed_point``) puts it there only for a statistic already
on the grid, so only statistics off the grid count. Synthetic traces, fixed seed; the Markov bound makes a continuous
law's expected hits ~1e-2 of n, so the clean cases cannot trip at alpha = 0.05.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.audit.whitebox import _noise_coincidences

N, SCALE = 400, 2.0


def _rel(stat, out):
    return {"stat": stat, "out": out, "param": np.full(N, SCALE), "kind": np.array(["laplace"] * N, dtype=object),
            "mechanism": np.array(["tree"] * N, dtype=object), "exact": np.zeros(N, dtype=np.int64)}


def _cases():
    rng = np.random.default_rng(18)
    z = rng.laplace(0.0, SCALE, N)
    frac, whole = rng.random(N) * 20.0, rng.integers(0, 20, N).astype(float)
    return z, frac, whole


@pytest.mark.parametrize("k", [6, 9])
def test_noise_snapped_to_a_decimal_grid_is_found(k):
    z, frac, _ = _cases()
    found = _noise_coincidences(_rel(frac, frac + np.round(z * 10.0 ** k) / 10.0 ** k), 0.05)
    assert [f.check for f in found] == ["noise_law"] and f"10^-{k}" in found[0].detail


@pytest.mark.parametrize("stat", ["frac", "whole"])
def test_a_release_rounded_after_the_noise_and_continuous_noise_pass(stat):
    z, frac, whole = _cases()
    s = frac if stat == "frac" else whole
    assert _noise_coincidences(_rel(s, np.round((s + z) * 1e9) / 1e9), 0.05) == []
    assert _noise_coincidences(_rel(s, s + z), 0.05) == []
