"""Check 5e (session 14, lead): the noise depends on the run's seed. Our own planted variants (round 16's
``dp_ucb_bound_seeded_by_round`` re-seeds from the round; these use a constant and the replicate index)
and clean twins, one of them in exact (grid) mode and one whose decisions diverge from round 1 (EXP3)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.audit.seed_dependence import seed_coincidences
from privbandit.audit.whitebox import _mixed_tapes, _run, _seed_check, whitebox_audit
from privbandit.policies import make_policy
from privbandit.policies.adversarial import DPEXP3Lap
from privbandit.policies.private_ucb import PrivateUCB


class UCBFixedNoiseSeed(PrivateUCB):
    """Private-UCB whose tree draws from default_rng(2024) ("a fixed noise seed for reproducible runs")."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.tree.sampler.rng = np.random.default_rng(2024)
        return run


class EXP3LapNoiseFromRound(DPEXP3Lap):
    """DP-EXP3-Lap whose round-t noise comes from default_rng(t) in odd rounds only (half the releases public)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        update, sampler = run.update, run.noise.sampler

        def drawing(t, arms, rewards):
            saved = sampler.rng
            if t % 2:
                sampler.rng = np.random.default_rng(t)
            try:
                update(t, arms, rewards)
            finally:
                sampler.rng = saved
        run.update = drawing
        return run


def _check(policy, arms=2, horizon=200):
    tapes = _mixed_tapes(arms, horizon, 16, np.random.default_rng(5))
    notes = []
    return _seed_check(policy, tapes, horizon, np.random.SeedSequence(11), False, notes), notes


@pytest.mark.parametrize("policy", [UCBFixedNoiseSeed(), EXP3LapNoiseFromRound()], ids=type)
def test_noise_that_ignores_the_seed_is_refuted(policy):
    found, notes = _check(policy)
    assert found is not None and found.check == "seed" and not notes, notes


@pytest.mark.parametrize("name, params", [("private_ucb", {}), ("private_ucb", {"exact": True}), ("dp_exp3_lap", {}),
                                          ("gaussian_ts", {}), ("dp_ucb", {"exact": True})])
def test_correctly_seeded_noise_passes_and_is_compared(name, params):
    policy = make_policy(name, **params)
    found, notes = _check(policy)
    assert found is None and not notes
    tapes = _mixed_tapes(2, 200, 16, np.random.default_rng(5))
    a, b = np.random.SeedSequence(11).spawn(2)
    same, compared, draws = seed_coincidences(_run(policy, tapes, 200, a, recorded=False)[1].draws,
                                              _run(policy, tapes, 200, b, recorded=False)[1].draws)
    assert compared >= 32 and same == 0  # the check had values to compare, and none coincided


def test_whitebox_audit_reports_it_and_can_skip_it():
    res = whitebox_audit(UCBFixedNoiseSeed(), 120, 2, 16)
    assert "seed" in {f.check for f in res.findings}
    assert "seed" not in {f.check for f in whitebox_audit(UCBFixedNoiseSeed(), 120, 2, 16, seed_runs=0).findings}
