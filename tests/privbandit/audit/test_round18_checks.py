"""Session 15 (s15/reach2): the checks that close round 17's misses as classes, each against a planted case of our
own (not round 17's rows) and its clean twin.

* check 5d's near pairings (privbandit/audit/noise_dependence.py ``near_pairs``): one draw used by two mechanisms
  of one stream (DP-UCB's hybrid: the logarithmic release takes the *negated* noise of the stream's last binary
  node), and across streams at a small lag (Private EXP3: arm 1's k-th noise the negation of arm 0's (k - 2)-th);
* check 13 (privbandit/audit/weights.py): EXP3 whose exploration floor is halved every tenth round, and EXP3-tau
  whose batch gain is divided by tau / 2 instead of tau;
* the noise law's message (the lead's decision on round 17's ``joint_gram_symmetrised_noise``): a draw off its
  reported law is a finding of the ledger contract, and says so (Private EXP3 drawing at 0.7 of its scale).

Each planted case is VIOLATION by the new check's own finding (the test fails without the check); the clean twins
(the unmodified policies, same sizes and seed) have no finding of it.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.audit.weights import sampling_check
from privbandit.audit.whitebox import whitebox_audit
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import DPUCB, EXP3, EXP3Tau, PrivateEXP3


class _NegatedLast(NoiseSampler):
    """A logarithmic release's standard noise = minus the stream's last binary node's (told ``_ctx``)."""

    _ctx = None
    _last = None

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or self._ctx is None or self._ctx[1].size != statistic.size:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        kind, rr, kk = self._ctx
        z = self.rng.laplace(0.0, 1.0, statistic.size)
        last, have = self._last
        if kind == "binary":
            last[rr, kk], have[rr, kk] = z, True
        else:
            z = np.where(have[rr, kk], -last[rr, kk], z)
        return statistic + z.reshape(statistic.shape) * np.asarray(scale, dtype=float) * self._noise_scale_factor


class DPUCBLogNegatesBinary(DPUCB):
    name = "test_dp_ucb_log_negates_binary"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        hybrid = run.hybrid
        sampler = hybrid.sampler
        sampler.__class__ = _NegatedLast
        sampler._last = (np.zeros((replicates, n_arms)), np.zeros((replicates, n_arms), dtype=bool))
        for kind, name in (("log", "_log_release"), ("binary", "_binary_release")):
            call = getattr(hybrid, name)

            def told(f, rr, kk, *rest, call=call, kind=kind):
                sampler._ctx = (kind, np.asarray(rr), np.asarray(kk))
                try:
                    return call(f, rr, kk, *rest)
                finally:
                    sampler._ctx = None

            setattr(hybrid, name, told)
        return run


class _LaggedAcross(NoiseSampler):
    """Arm 1's k-th standard noise = minus arm 0's (k - 2)-th (told ``_where`` = (rows, arms, positions))."""

    _where = None
    _kept = None

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or self._where is None or self._where[0].size != statistic.size:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        rows, arms, pos = self._where
        z = self.rng.laplace(0.0, 1.0, statistic.size)
        kept = self._kept
        tied = (arms == 1) & (pos >= 2)
        src = kept[rows, 0, np.maximum(pos - 2, 0)]
        z = np.where(tied & np.isfinite(src), -src, z)
        kept[rows, arms, pos] = z
        return statistic + z.reshape(statistic.shape) * np.asarray(scale, dtype=float) * self._noise_scale_factor


class PrivateExp3LaggedAcross(PrivateEXP3):
    name = "test_private_exp3_lagged_across"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.noise.sampler
        sampler.__class__ = _LaggedAcross
        sampler._kept = np.full((replicates, n_arms, horizon + 1), np.nan)
        update = run.update

        def told(t, arms, rewards):
            a = np.asarray(arms, dtype=np.int64)
            sampler._where = (run.core.rows, a, run.pulls[run.core.rows, a].copy())
            try:
                return update(t, arms, rewards)
            finally:
                sampler._where = None

        run.update = told
        return run


class Exp3FloorHalvedEveryTenth(EXP3):
    name = "test_exp3_floor_halved_every_tenth"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core, select = run.core, run.select

        def select_halved(t):
            g = core.gamma / 2 if t % 10 == 0 else core.gamma
            core.keep, core.floor = 1.0 - g, g / core.k
            return select(t)

        run.select = select_halved
        return run


class Exp3TauGainHalfAveraged(EXP3Tau):
    name = "test_exp3_tau_gain_half_averaged"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def end_batch():
            run.core.learn(run.arms, np.minimum(run.total / (run.tau / 2), 1.0))
            run.total[:] = 0.0

        run._end_batch = end_batch
        return run


def _near(result) -> list[str]:
    return [f.detail for f in result.findings if f.check == "noise_law" and "across mechanisms of a stream" in f.detail
            or f.check == "noise_law" and "across streams, lag" in f.detail]


@pytest.mark.parametrize("bug, clean, what", [(DPUCBLogNegatesBinary, DPUCB, "across mechanisms of a stream"),
                                              (PrivateExp3LaggedAcross, PrivateEXP3, "across streams, lag +2")])
def test_near_pairings_catch_a_shared_draw(bug, clean, what):
    found = _near(whitebox_audit(bug(), 200, 2, 128, seed=3, seed_runs=0, observer=False))
    assert found and what in found[0]
    assert not _near(whitebox_audit(clean(), 200, 2, 128, seed=3, seed_runs=0, observer=False))


@pytest.mark.parametrize("bug, clean, what", [(Exp3FloorHalvedEveryTenth, EXP3, "below the certificate's sampling floor"),
                                              (Exp3TauGainHalfAveraged, EXP3Tau, "moved a log-weight")])
def test_sampling_check_catches_floor_and_step(bug, clean, what):
    result = whitebox_audit(bug(), 200, 2, 128, seed=3)
    assert result.verdict == "VIOLATION"
    assert any(f.check == "sampling" and what in f.detail for f in result.findings)
    assert not sampling_check(clean(), 200, 2, 128, 3)
    assert not sampling_check(clean(), 200, 8, 64, 4)


def test_sampling_check_only_where_declared():
    """Policies whose certificate declares no sampling floor (noise-based EXP3 variants) are not checked."""
    assert not sampling_check(PrivateExp3LaggedAcross(), 200, 2, 16, 0)


class _Narrower(NoiseSampler):
    """Laplace releases at 0.7 of the scale handed over (and reported)."""

    def _sum_release(self, statistic, scale, on_grid=True):
        return NoiseSampler._sum_release(self, statistic, 0.7 * np.asarray(scale, dtype=float), on_grid)


class PrivateExp3Narrower(PrivateEXP3):
    name = "test_private_exp3_narrower"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.noise.sampler.__class__ = _Narrower
        return run


def test_noise_law_message_names_the_report():
    """The lead's decision (session 15): a draw that does not follow the reported law is a finding of the ledger
    contract (every release recorded as drawn), whether or not the draw is private under another geometry; the
    message says the reported scale does not match the draw."""
    result = whitebox_audit(PrivateExp3Narrower(), 200, 2, 64, seed=3, seed_runs=0, observer=False)
    law = [f.detail for f in result.findings if f.check == "noise_law" and "do not follow the declared law" in f.detail]
    assert law and "the reported scale does not match the draw" in law[0]


class _ClampedAt12(NoiseSampler):
    """Float Laplace draws clamped to +-12 scales ("no outliers in the released values")."""

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        z = np.clip(self.rng.laplace(0.0, 1.0, statistic.shape), -12.0, 12.0)
        return statistic + z * np.asarray(scale, dtype=float)

    def laplace(self, scale, size=None):
        return np.clip(NoiseSampler.laplace(self, 1.0, size=np.shape(scale) if size is None else size), -12.0, 12.0) \
            * (np.asarray(scale, dtype=float) if size is None else float(scale))


class _InverseCdf(NoiseSampler):
    """A correct sampler of its own: Laplace by the inverse CDF of the generator's 53-bit uniforms (full reach)."""

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        u = self.rng.random(statistic.shape) - 0.5
        return statistic - np.sign(u) * np.log1p(-2.0 * np.abs(u)) * np.asarray(scale, dtype=float)


def _with_sampler(cls):
    class Patched(DPUCB):
        name = "test_dp_ucb_" + cls.__name__.lower()

        def start(self, n_arms, replicates, horizon, rng, ledger=None):
            run = super().start(n_arms, replicates, horizon, rng, ledger)
            run.hybrid.sampler.__class__ = cls
            return run

    return Patched()


def test_sampler_reach_refutes_a_clamp_far_out():
    """Check 5f: a clamp at 12 Laplace scales (beyond what the run's ~10^5 residuals per group can see) is refuted
    by 2^23 draws from the sampler itself; a correct sampler of the policy's own (inverse CDF) and the library's
    are not."""
    from privbandit.audit.sampler_reach import reach_check

    found = reach_check(_with_sampler(_ClampedAt12), 2, 200, 0, 1e-4)
    assert found and "never reaches beyond 12 scales" in found[0]
    assert not reach_check(_with_sampler(_InverseCdf), 2, 200, 0, 1e-4)
    assert not reach_check(DPUCB(), 2, 200, 0, 1e-4)
