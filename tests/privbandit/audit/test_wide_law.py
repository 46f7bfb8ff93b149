"""The 33-arm reach run tests the noise law too (session 14, lead): noise drawn at a fraction of its declared
scale only on high arm indices is seen nowhere else (the ledger and the sampler's argument say the full scale).
Own variant: Private-UCB whose tree noise for arms >= 24 comes out at 0.4 of the scale handed to the sampler."""

from __future__ import annotations

import numpy as np

from privbandit.audit.cli import WB_WIDE, reach_runs
from privbandit.audit.whitebox import probe_horizon, whitebox_audit
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies.private_ucb import PrivateUCB


class _ShrunkHighArms(NoiseSampler):
    arms = None

    def _sum_release(self, statistic, scale, on_grid=True):
        out = NoiseSampler._sum_release(self, statistic, scale, on_grid)
        arms = self.arms
        if arms is None or arms.size != np.size(statistic):
            return out
        statistic = np.asarray(statistic, dtype=float)
        return statistic + (out - statistic) * np.where(arms >= 24, 0.4, 1.0)


class UCBHighArmsShrunk(PrivateUCB):
    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.tree.sampler
        sampler.__class__ = _ShrunkHighArms
        update = run.update

        def telling(t, arms, rewards):
            sampler.arms = np.asarray(arms)
            try:
                update(t, arms, rewards)
            finally:
                sampler.arms = None
        run.update = telling
        return run


def _wide(policy):
    horizon = probe_horizon(policy, WB_WIDE["arms"])
    replicates = max(WB_WIDE["min_replicates"], WB_WIDE["budget"] // horizon)
    return whitebox_audit(policy, horizon, WB_WIDE["arms"], replicates, seed=10, law=True, observer=False)


def test_the_wide_run_sees_a_shrunk_draw_on_high_arms_only_through_the_law():
    wide, _, _, _ = reach_runs(UCBHighArmsShrunk(), 2, 200, 200, 0, clock_jump=None)  # the command's reach runs
    assert "noise_law" in {f.check for f in wide.findings}
    horizon = probe_horizon(UCBHighArmsShrunk(), WB_WIDE["arms"])
    exact_only = whitebox_audit(UCBHighArmsShrunk(), horizon, WB_WIDE["arms"], 66, seed=10, law=False, observer=False)
    assert not exact_only.findings  # session 13's exact-only wide run missed it


def test_the_clean_policy_passes_the_wide_law():
    assert not _wide(PrivateUCB()).findings
