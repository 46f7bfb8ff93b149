"""Session 16 (s16/reach): the auditor's answers to round 18 (written blind), each against cases of our own.

* The coupled runs' seed (privbandit/audit/seed_dependence.py ``run_generator``): round 18's control
  ``dp_ts_replicates_spawned_generators`` -- correct noise from generators spawned off the run's generator -- was
  refuted by check 7 (noise_coupling), because the runs on D and D' were handed one ``SeedSequence`` object and
  the run on D' spawned the children after D's. Here: DP-UCB whose sampler draws from a generator spawned from the
  run's generator at start (clean: CONSISTENT; VIOLATION by noise_coupling without the copy), and its planted
  twin spawning a new generator at the releases whose statistic's integer part is odd (noise keyed to the data:
  still caught by noise_coupling with the copy).
* Check 5e on every replicate (``whitebox_audit(seed_wide=True)``, the command's main run): round 18's
  ``dp_ts_replicates_past_sixteen_fixed_seed`` drew public noise for replicates 16.. only, and the seed check's
  runs had 16 replicates. Here: DP-UCB whose draws take their elements past the 40th from a generator of a fixed
  seed (public noise for the replicates a draw holds past 40), against the unmodified DP-UCB.
* Check 13's choice-seed test (privbandit/audit/weights.py ``_choice_seed``): round 18's
  ``exp3_tau_choice_seeded_by_batch`` drew EXP3-tau's choice uniforms from a generator the seed does not reach.
  Here: EXP3 whose sampler generator is seeded with a constant, against EXP3 and EXP3-tau.
* Check 13's choice-lag test (``_choice_lags``): round 18's ``exp3_uniforms_cycled`` re-read EXP3's uniform
  buffer as a ring (choice t + 1024 used choice t's uniform). Here: EXP3 whose odd choices use 1 - u of the choice
  before (antithetic pairs: a lag of 1, negatively correlated), against EXP3 and EXP3-tau.
"""

from __future__ import annotations

import numpy as np

from privbandit.audit.false_alarms import tally
from privbandit.audit.seed_dependence import run_generator
from privbandit.audit.weights import CHOICE_ALPHA, sampling_check
from privbandit.audit.whitebox import whitebox_audit
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import DPUCB, EXP3, EXP3Tau


class DPUCBSpawnedSampler(DPUCB):
    """Clean: the sampler's generator spawned from the run's at start (independent, secret: DESIGN.md's way)."""

    name = "test_dp_ucb_spawned_sampler"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.hybrid.sampler.rng = rng.spawn(1)[0]
        return run


class _SpawnedOnOdd(NoiseSampler):
    """A new generator spawned from the run's before each release whose statistic sums to an odd integer part."""

    _root = None

    def _sum_release(self, statistic, scale, on_grid=True):
        if self._root is not None and int(np.floor(np.sum(statistic))) % 2:
            self.rng = self._root.spawn(1)[0]
        return NoiseSampler._sum_release(self, statistic, scale, on_grid)


class DPUCBSpawnKeyedToData(DPUCB):
    """Planted: how many generators are spawned reads the data, so the noise after the changed record differs."""

    name = "test_dp_ucb_spawn_keyed_to_data"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.hybrid.sampler
        sampler.__class__ = _SpawnedOnOdd
        sampler._root = rng
        return run


class _PublicPastForty(NoiseSampler):
    """Each draw's elements past the 40th: standard Laplace from a generator of a fixed seed (public)."""

    _public = None

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        if self._public is None or self.exact or statistic.size <= 40:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        z = self.rng.laplace(0.0, 1.0, statistic.size)
        z[40:] = self._public.laplace(0.0, 1.0, statistic.size - 40)
        return statistic + z.reshape(statistic.shape) * np.asarray(scale, dtype=float) * self._noise_scale_factor


class DPUCBPublicPastForty(DPUCB):
    name = "test_dp_ucb_public_past_forty"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.hybrid.sampler
        sampler.__class__ = _PublicPastForty
        sampler._public = np.random.default_rng(2024)
        return run


def test_run_generator_copies_a_seed_sequence():
    seq = np.random.SeedSequence(7)
    a, b = run_generator(seq), run_generator(seq)
    assert a.spawn(1)[0].random() == b.spawn(1)[0].random()  # one object shared: the second child differs
    assert seq.n_children_spawned == 0
    assert run_generator(3).random() == np.random.default_rng(3).random()


def test_spawning_policy_is_coupled():
    res = whitebox_audit(DPUCBSpawnedSampler(1.0), 120, 2, 16, seed=0, law=False)
    assert res.verdict == "CONSISTENT", res.findings


def test_spawn_keyed_to_data_still_refuted():
    res = whitebox_audit(DPUCBSpawnKeyedToData(1.0), 120, 2, 16, seed=0, law=False)
    assert res.verdict == "VIOLATION" and "noise_coupling" in res.checks, res.findings
    assert whitebox_audit(DPUCB(1.0), 120, 2, 16, seed=0, law=False).verdict == "CONSISTENT"


def test_seed_check_on_every_replicate():
    bug = DPUCBPublicPastForty(1.0)
    assert whitebox_audit(bug, 120, 2, 48, seed=0, law=False).verdict == "CONSISTENT"  # 16 replicates, K = 2: 32 values a draw at most
    res = whitebox_audit(bug, 120, 2, 48, seed=0, law=False, seed_wide=True)
    assert res.verdict == "VIOLATION" and res.checks == ["seed"], res.findings
    assert whitebox_audit(DPUCB(1.0), 120, 2, 48, seed=0, law=False, seed_wide=True).verdict == "CONSISTENT"


class EXP3FixedSamplerSeed(EXP3):
    """Planted: EXP3 whose sampler generator is seeded with a constant (public choices)."""

    name = "test_exp3_fixed_sampler_seed"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.core.rng = np.random.default_rng(12345)
        run.core.pos = run.core.uniforms.shape[0]  # the buffer refills from the constant-seeded generator
        return run


def test_choice_seed_test():
    with tally() as spent:
        found = sampling_check(EXP3FixedSamplerSeed(), 200, 2, 64, 0)
    assert len(found) == 1 and "every choice alike" in found[0], found
    assert spent.by_family() == {"choice_seed": (1, CHOICE_ALPHA), "choice_lags": (1, CHOICE_ALPHA)}
    for clean in (EXP3(), EXP3Tau()):
        assert not sampling_check(clean, 200, 2, 64, 0)
    assert not sampling_check(EXP3(), 200, 4, 64, 1)


class EXP3Antithetic(EXP3):
    """Planted: EXP3 refilling its uniform buffer with antithetic pairs u, 1 - u (choice 2j + 1 reads choice 2j's
    uniform reflected)."""

    name = "test_exp3_antithetic"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core = run.core
        choose = core.choose

        def antithetic():
            if core.pos == core.uniforms.shape[0]:
                half = core.rng.random((core.block // 2 + 1, core.rows.size))
                core.uniforms = np.stack([half, 1.0 - half], axis=1).reshape(-1, core.rows.size)[:core.block]
                core.pos = 0
            return choose()

        core.choose = antithetic
        return run


def test_choice_lag_test():
    with tally() as spent:
        found = sampling_check(EXP3Antithetic(), 200, 2, 64, 0)
    assert len(found) == 1 and found[0].startswith("choices 1 apart are correlated"), found
    assert spent.by_family() == {"choice_seed": (1, CHOICE_ALPHA), "choice_lags": (1, CHOICE_ALPHA)}
    for clean in (EXP3(), EXP3Tau()):
        assert not sampling_check(clean, 400, 2, 64, 2)
