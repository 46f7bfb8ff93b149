"""Check 5d (session 13, privbandit/audit/noise_dependence.py): distinct noise draws are independent.

Round 15's blind bugs included noise that is right in law but derived from another release's noise (arm 2j+1's
uniform = arm 2j's + 1/2 mod 1; a node's noise vector from one uniform): every per-residual check passed them.
Each test below fails without the check (the planted policy's audit was CONSISTENT on a0ec840)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from privbandit.audit import whitebox_audit
from privbandit.audit.noise_dependence import MIN_PAIRS, noise_dependence
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import DPUCB


def _rel(u: np.ndarray, rep: np.ndarray, st: np.ndarray, draw: np.ndarray, seq: np.ndarray) -> dict:
    """A traced-release table whose residuals / scale have the probability integral transforms ``u``."""
    n = u.size
    z = sps.laplace.ppf(u)
    stat = np.linspace(-3.0, 3.0, n)
    return {"out": stat + 2.0 * z, "stat": stat, "param": np.full(n, 2.0), "kind": np.full(n, "laplace", dtype=object),
            "mechanism": np.full(n, "m", dtype=object), "rep": rep, "st": st, "draw": draw, "seq": seq,
            "entry": np.zeros(n, dtype=np.int64), "exact": np.zeros(n)}


def _two_streams(v_of_u, n: int = 3000, seed: int = 0) -> dict:
    """n rounds of one replicate; each round one call releasing stream 0 then stream 1, stream 1's uniform
    ``v_of_u(stream 0's)``."""
    rng = np.random.default_rng(seed)
    u0 = rng.random(n)
    u = np.stack([u0, v_of_u(u0, rng)], axis=1).reshape(-1)
    rounds = np.repeat(np.arange(n), 2)
    return _rel(np.clip(u, 1e-12, 1 - 1e-12), np.zeros(2 * n, dtype=np.int64), np.tile([0, 1], n), rounds, rounds)


@pytest.mark.parametrize("seed", range(5))
def test_independent_noise_passes(seed):
    rel = _two_streams(lambda u, rng: rng.random(u.size), seed=seed)
    assert noise_dependence(rel, 1e-4, np.ones(rel["out"].size, dtype=bool)) == []


@pytest.mark.parametrize("name, v_of_u, test", [
    ("shift by 1/2", lambda u, rng: np.mod(u + 0.5, 1.0), "(V - U) mod 1"),
    ("reflection 0.3 - u", lambda u, rng: np.mod(0.3 - u, 1.0), "(V + U) mod 1"),
    ("shared component", lambda u, rng: sps.norm.cdf(0.6 * sps.norm.ppf(u) + 0.8 * rng.standard_normal(u.size)),
     ""),  # V - U concentrates near 0: the difference's test sees it first
    ("doubling map", lambda u, rng: np.mod(2.0 * u, 1.0), ""),  # caught by the correlation or the grid test
])
def test_dependent_noise_is_refuted(name, v_of_u, test):
    rel = _two_streams(v_of_u)
    found = noise_dependence(rel, 1e-4, np.ones(rel["out"].size, dtype=bool))
    assert found and "dependent" in found[0] and test in found[0], (name, found)


def test_serial_dependence_along_a_stream_is_refuted():
    """Each release on a stream made from the previous one's uniform (a 'stateful' sampler)."""
    rng = np.random.default_rng(3)
    n = 4000
    u = np.empty(n)
    u[0] = rng.random()
    for i in range(1, n):
        u[i] = np.mod(u[i - 1] + 0.381966, 1.0) if i % 2 else rng.random()
    rel = _rel(u, np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.arange(n), np.arange(n))
    found = noise_dependence(rel, 1e-4, np.ones(n, dtype=bool))
    assert found and "along a stream" in found[0]


def test_too_few_pairs_are_not_tested():
    rel = _two_streams(lambda u, rng: np.mod(u + 0.5, 1.0), n=MIN_PAIRS - 1)
    assert noise_dependence(rel, 1e-4, np.ones(rel["out"].size, dtype=bool)) == []


class _DoubledSecondStream(NoiseSampler):
    """A sampler whose every release of an even number of statistics (DP-UCB on two arms releases both arms'
    one-hot items in one flat call) makes each odd entry's Laplace noise from the entry before's uniform by the
    doubling map u -> 2u mod 1 ("one uniform, two variates"): each entry is Laplace(scale) in law, but given
    both releases the pair of statistics lies on a curve (no finite epsilon)."""

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or statistic.size % 2:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        u = self.rng.random(statistic.shape)
        flat = u.reshape(-1)
        flat[1::2] = np.mod(2.0 * flat[0::2], 1.0)
        u = np.clip(u, 1e-300, 1.0 - 2.0 ** -53)
        z = -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))
        return statistic + z * np.asarray(scale, dtype=float)


class DPUCBDoubledNoise(DPUCB):
    name = "t_dp_ucb_doubled_noise"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        for sampler in {id(m.sampler): m.sampler for m in _mechanisms(run)}.values():
            sampler.__class__ = _DoubledSecondStream
        return run


def _mechanisms(run):
    return [v for v in vars(run).values() if hasattr(v, "sampler") and isinstance(v.sampler, NoiseSampler)]


def test_whitebox_refutes_derived_noise_and_passes_its_clean_twin():
    bad = whitebox_audit(DPUCBDoubledNoise(epsilon=1.0), 120, 2, 64, seed=0)
    assert _mechanisms(DPUCBDoubledNoise(epsilon=1.0).start(2, 1, 10, np.random.default_rng(0)))
    assert bad.verdict == "VIOLATION" and any("dependent" in f.detail for f in bad.findings), bad.summary()
    clean = whitebox_audit(DPUCB(epsilon=1.0), 120, 2, 64, seed=0)
    assert clean.verdict == "CONSISTENT", clean.summary()
