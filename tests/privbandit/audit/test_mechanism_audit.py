"""Mechanism-level audits: controls (known answer, soundness self-test) and planted bugs."""

import math

import numpy as np
import pytest

from privbandit.audit import Audit, Budget, Claim, clipped_sum_laplace, gaussian_release, laplace_release, stats
from privbandit.mechanisms.sampling import NoiseSampler

from _audit_planted import redrawing_laplace


def test_laplace_known_answer_at_1e6_runs_per_side():
    mech, claim = laplace_release(1.0)
    res = Audit.mechanism(mech, 0.0, 1.0, claim, budget=Budget(1_000_000, split=(0.0, 0.2, 0.8)), seed=11).run()
    assert res.verdict == "CONSISTENT"
    assert 0.98 <= res.eps_lb <= 1.0, res.eps_lb
    assert res.rows[0].certified.n_num == 800_000


def test_soundness_self_test_correct_laplace():
    # 40 independent audits of a correct mechanism: exceedances of the claim must stay within the
    # binomial allowance of alpha (a winner's-curse selection or an anti-conservative bound fails this)
    mech, claim = laplace_release(1.0)
    lbs = [Audit.mechanism(mech, 0.0, 1.0, claim, budget=Budget(10_000), seed=1000 + i).run().eps_lb
           for i in range(40)]
    exceed = sum(lb > 1.0 for lb in lbs)
    assert exceed <= stats.binomial_allowance(40, 0.05), (exceed, max(lbs))
    assert np.median(lbs) > 0.8  # and the audits have power


def _verdict(mech, claim, x=0.0, xp=1.0, n=100_000, seed=3):
    return Audit.mechanism(mech, x, xp, claim, budget=Budget(n), seed=seed).run()


@pytest.fixture
def noise_factor(monkeypatch):
    def set_factor(f):
        monkeypatch.setattr(NoiseSampler, "_noise_scale_factor", f)
    return set_factor


def test_planted_noise_removed(noise_factor):
    mech, claim = laplace_release(1.0)
    noise_factor(0.0)  # one-line mutation: noise switched off, claim unchanged
    res = _verdict(mech, claim)
    assert res.verdict == "VIOLATION" and res.eps_lb > 5


def test_planted_laplace_scale_halved_at_eps_half(noise_factor):
    mech, claim = laplace_release(0.5)
    ok = _verdict(mech, claim)
    assert ok.verdict == "CONSISTENT" and ok.eps_lb <= 0.5
    noise_factor(0.5)  # scale halved: true eps = 1.0 against the claim 0.5
    bad = _verdict(mech, claim)
    assert bad.verdict == "VIOLATION" and bad.eps_lb > 0.9, bad.eps_lb


def test_planted_laplace_scale_eps_instead_of_one_over_eps():
    eps = 0.5
    claim = Claim.pure(eps)

    def correct(x, n, rng):
        return NoiseSampler(rng).laplace_release(np.full(n, x), np.full(n, 1.0 / eps))

    def buggy(x, n, rng):
        return NoiseSampler(rng).laplace_release(np.full(n, x), np.full(n, eps))  # scale = eps (bug)

    assert _verdict(correct, claim).verdict == "CONSISTENT"
    bad = _verdict(buggy, claim)
    assert bad.verdict == "VIOLATION" and bad.eps_lb > 1.5, bad.eps_lb


def test_planted_gaussian_variance_for_std():
    sigma = 0.5
    mech, claim = gaussian_release(sigma)  # claim mu = 2

    def buggy(x, n, rng):
        return NoiseSampler(rng).gaussian_release(np.full(n, x), np.full(n, sigma ** 2))  # variance as std

    ok = _verdict(mech, claim)
    assert ok.verdict == "CONSISTENT" and 1.7 < ok.mu_lb <= 2.0, ok.mu_lb
    bad = _verdict(buggy, claim)
    assert bad.verdict == "VIOLATION" and bad.mu_lb > 3.0, bad.mu_lb


def test_planted_rewards_not_clipped():
    # neighbouring reward vectors differ in one reward, 0 -> 5 (out of range on purpose)
    x, xp = [0.2, 0.0, 0.7], [0.2, 5.0, 0.7]
    mech, claim = clipped_sum_laplace(1.0, clip=True)
    assert _verdict(mech, claim, x, xp).verdict == "CONSISTENT"
    mech, claim = clipped_sum_laplace(1.0, clip=False)  # one-line mutation: the clip is gone
    bad = _verdict(mech, claim, x, xp)
    assert bad.verdict == "VIOLATION" and bad.eps_lb > 2.0, bad.eps_lb


def test_planted_noise_redrawn_after_restart():
    claim = Claim.pure(1.0)

    def correct(x, n, rng):  # after the restart the *stored* noisy value is published again
        first = NoiseSampler(rng).laplace_release(np.full(n, x), np.full(n, 1.0))
        return np.stack([first, first], axis=1)

    assert _verdict(correct, claim, n=200_000).verdict == "CONSISTENT"
    bad = _verdict(redrawing_laplace(1.0), claim, n=200_000)
    assert bad.verdict == "VIOLATION" and bad.eps_lb > 1.2, bad.eps_lb


def test_result_table_and_plot(tmp_path):
    mech, claim = gaussian_release(1.0)
    res = Audit.mechanism(mech, 0.0, 1.0, claim, budget=Budget(20_000), seed=5).run()
    md = res.table()
    assert md.startswith("| claim |") and "mu (GDP)" in md
    csv = res.table("csv")
    assert csv.splitlines()[0].startswith("claim,neighbours")
    rows = res.table("rows")
    assert {r["alpha"] for r in rows} == {0.025}  # Bonferroni over the two certificates
    assert res.verdict in ("CONSISTENT", "INCONCLUSIVE", "VIOLATION")
    path = res.plot(str(tmp_path / "audit.png"))
    assert (tmp_path / "audit.png").stat().st_size > 1000
    assert "CONSISTENT" in res.summary() or "INCONCLUSIVE" in res.summary()


def test_invalid_configuration_raises():
    mech, claim = laplace_release(1.0)
    with pytest.raises(ValueError, match="runs_per_side"):
        Budget(10)
    with pytest.raises(ValueError, match="split"):
        Budget(10_000, split=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="alpha"):
        Audit.mechanism(mech, 0.0, 1.0, claim, alpha=1.5)
    with pytest.raises(ValueError, match="epsilon"):
        laplace_release(-1.0)
    with pytest.raises(ValueError, match="claim"):
        Audit.mechanism(mech, 0.0, 1.0, 1.0)
