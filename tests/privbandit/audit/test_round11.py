"""Round 11's checks (docs/audit.md, "Round 11"), each against a representative planted bug of
bench/audit_planted_bugs.py (ROUND11, loaded from the bench, not copied) and a clean policy:

* the noise law's tail test (truncated noise) and coincidence tests (ties of |residual| / scale; dyadic
  lattices), privbandit/audit/whitebox.py;
* the certificate check (eps at delta never below a lower bound of the schedule's own events' curve),
  privbandit/audit/certificate.py;
* the runs that reach more code: six arms, late rounds, a star and a graph redrawn every round, contexts
  shorter than the bound and 16 times longer.

Every bug here was missed by the audit before round 11 (docs/audit.md's table "before")."""

from __future__ import annotations

import importlib.util
import math
import pathlib

import numpy as np
import pytest

from privbandit.audit.certificate import certificate_shortfall, epsilon_floor
from privbandit.audit.contextual import contextual_whitebox_audit
from privbandit.audit.discover import default_constructible, private_policies
from privbandit.audit.graph import SHAPES, graph_sequence, graph_whitebox_audit, star_graph
from privbandit.audit.whitebox import _noise_coincidences, _tail_p, whitebox_audit
from privbandit.policies import make_policy
from privbandit.policies.base import schedule_for
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import LazyDPTS
from privbandit.policies.linear import PrivateLinTS, PrivateLinUCB

_BENCH = pathlib.Path(__file__).resolve().parents[3] / "bench" / "audit_planted_bugs.py"
_spec = importlib.util.spec_from_file_location("audit_planted_bugs", _BENCH)
bugs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bugs)


def _rel(stat, out, scale, kind="laplace", mechanism="m"):
    n = np.asarray(stat).size
    return {"stat": np.asarray(stat, float), "out": np.asarray(out, float), "param": np.full(n, float(scale)),
            "exact": np.zeros(n, dtype=np.int64), "kind": np.array([kind] * n), "mechanism": np.array([mechanism] * n),
            "lo": np.zeros(n, dtype=np.int64), "hi": np.ones(n, dtype=np.int64)}


# --- noise law: tails and coincidences -----------------------------------------------------------------
def test_tail_p_is_the_law_of_the_maximum():
    # P(max of n |Laplace(1)| <= m) = (1 - e^-m)^n; N(0, 1): (2 Phi(m) - 1)^n
    assert math.isclose(_tail_p("laplace", np.full(100, 4.0)), (1 - math.exp(-4.0)) ** 100, rel_tol=1e-12)
    assert math.isclose(_tail_p("gaussian", np.full(100, 2.0)), 0.9544997361036416 ** 100, rel_tol=1e-9)
    assert _tail_p("laplace", np.full(10, 0.1)) == 1.0  # fewer than MIN_GROUP values: not tested


class _TruncatedByRejection(NoiseSampler):
    """Laplace noise re-drawn until |z| <= 3 scales: truncated, with no ties and a CDF within 0.025 of
    Laplace's (below the DKW test's reach at these sizes)."""

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        z = self.rng.laplace(0.0, 1.0, statistic.shape)
        while np.any(np.abs(z) > 3.0):
            far = np.abs(z) > 3.0
            z[far] = self.rng.laplace(0.0, 1.0, int(far.sum()))
        return statistic + z * scale


class _LazyTruncated(LazyDPTS):
    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.batches.sampler.__class__ = _TruncatedByRejection
        return run


def test_truncated_laplace_fails_the_tail_test_and_clean_laplace_passes():
    bug = whitebox_audit(_LazyTruncated(), 200, 2, 200, seed=0)
    assert bug.checks == ["noise_law"] and "tails" in bug.findings[0].detail, bug.summary()
    assert all(g.dkw <= g.critical for g in bug.groups)  # the DKW test alone would pass it
    clamped = whitebox_audit(bugs.LazyNoiseClamped(), 200, 2, 200, seed=0)  # clamped: ties at +-4 as well
    assert clamped.checks == ["noise_law"], clamped.summary()
    clean = whitebox_audit(make_policy("lazy_dp_ts"), 200, 2, 200, seed=0)
    assert clean.verdict == "CONSISTENT", clean.summary()
    assert min(g.tail_p for g in clean.groups) > 1e-4


def test_coincidences_see_antithetic_and_grid_snapped_noise_not_continuous_noise():
    rng = np.random.default_rng(0)
    n, scale = 4000, 2.0
    stat = rng.uniform(0.0, 100.0, n)
    z = rng.laplace(0.0, scale, n)
    assert _noise_coincidences(_rel(stat, stat + z, scale), 1e-4) == []
    anti = np.concatenate([z[: n // 2], -z[: n // 2]])
    found = _noise_coincidences(_rel(stat, stat + anti, scale), 1e-4)
    assert found and "coincide in magnitude" in found[0].detail
    snapped = np.round(z / 2.0 ** -20) * 2.0 ** -20
    found = _noise_coincidences(_rel(stat, stat + snapped, scale), 1e-4)
    assert found and ("lattice 2^-20" in found[0].detail or "coincide" in found[0].detail)
    # exact-mode releases draw on the grid by design: not tested
    rel = _rel(stat, stat + snapped, scale)
    rel["exact"][:] = 1
    assert _noise_coincidences(rel, 1e-4) == []


def test_a_lattice_alone_is_found_when_no_two_values_tie():
    rng = np.random.default_rng(1)
    n, scale = 300, 50.0
    stat = rng.uniform(0.0, 10.0, n)
    snapped = np.round(rng.laplace(0.0, scale, n) / 2.0 ** -12) * 2.0 ** -12
    found = _noise_coincidences(_rel(stat, stat + snapped, scale), 1e-4)
    assert len(found) == 1 and "lattice 2^-12" in found[0].detail, found


@pytest.mark.parametrize("cls", [bugs.AnytimeNoiseFloat32, bugs.HybridNoiseOnGrid], ids=lambda c: c.__name__)
def test_few_valued_or_grid_snapped_samplers_are_refuted(cls):
    res = whitebox_audit(cls(), 200, 2, 250, seed=0)
    assert res.verdict == "VIOLATION" and res.checks == ["noise_law"], res.summary()


def test_a_difference_of_exponentials_is_laplace():
    res = whitebox_audit(bugs.LazyExponentialDifference(), 200, 2, 250, seed=0)
    assert res.verdict == "CONSISTENT", res.summary()


# --- the certificate check ---------------------------------------------------------------------------
def test_certificate_below_its_own_events_is_refuted():
    short = certificate_shortfall(bugs.TSEpsAtDeltaPerArm().privacy_schedule(200, 2), [50, 200])
    assert short is not None and short[2] < short[3]
    res = whitebox_audit(bugs.TSEpsAtDeltaPerArm(), 100, 2, 16, seed=0, law=False)
    assert "certificate" in res.checks, res.summary()
    # the round relation of a graph policy, composed as sqrt(streams) times one stream (a star on 6 arms)
    sched = schedule_for(bugs.GraphRoundEpsSqrtStreams(), 200, 6, {"max_degree": 5}, "round")
    assert certificate_shortfall(sched, [50, 200]) is not None


def test_every_private_policys_certificate_clears_its_events():
    for name, cls in private_policies().items():
        if not default_constructible(cls):
            continue
        policy = cls()
        req = frozenset(getattr(policy, "requires", frozenset()))
        if "contexts" in req:
            schedules = [schedule_for(policy, 200, 2, {"contexts": True}, "entry")]
        elif "graph" in req:
            schedules = [schedule_for(policy, 200, 6, {"max_degree": d}, rel) for d in (1, 5)
                         for rel in ("entry", "round")]
        else:
            schedules = [policy.privacy_schedule(200, 2)]
        for sched in schedules:
            assert certificate_shortfall(sched, [50, 200]) is None, name
    # the exact GDP conversion, called directly, sits on the floor and passes
    assert certificate_shortfall(bugs.TSEpsExactGDP().privacy_schedule(200, 2), [50, 200]) is None


def test_epsilon_floor_leaves_out_what_is_not_a_mechanism():
    from accountants.events import Laplace, PureDP

    assert epsilon_floor(PureDP(1.0) * 3, 1e-5) is None  # a guarantee, not a mechanism: no floor
    one = epsilon_floor(Laplace(1.0, 1.0), 1e-5)
    assert one <= 1.0 + 2 * math.log1p(-1e-5) + 1e-9  # Laplace's exact curve: eps + 2 ln(1 - delta)
    assert epsilon_floor(Laplace(1.0, 1.0) + PureDP(5.0), 1e-5) == one


# --- more code reached: six arms, late rounds ---------------------------------------------------------
def test_a_noise_buffer_of_four_columns_shows_with_six_arms():
    assert whitebox_audit(bugs.PosteriorWrapFour(), 200, 2, 64, seed=0).verdict == "CONSISTENT"
    res = whitebox_audit(bugs.PosteriorWrapFour(), 200, 6, 64, seed=0)
    assert res.verdict == "VIOLATION" and "noise_law" in res.checks, res.summary()
    clean = whitebox_audit(make_policy("gaussian_ts"), 200, 6, 64, seed=0)
    assert clean.verdict == "CONSISTENT", clean.summary()


def test_a_scale_cut_at_round_3000_shows_in_a_late_run():
    assert whitebox_audit(bugs.HybridHalvedLate(), 2000, 2, 4, seed=0, law=False).verdict == "CONSISTENT"
    res = whitebox_audit(bugs.HybridHalvedLate(), 3200, 2, 4, seed=0, law=False)
    assert res.verdict == "VIOLATION" and res.checks == ["noise_report"], res.summary()


# --- graph shapes -------------------------------------------------------------------------------------
def test_graph_shapes():
    star = star_graph(6)
    assert star[0].all() and star.sum() == 6 + 2 * 5
    first, structure = graph_sequence("redrawn", 6, 50, 0)
    graphs = [first(t) for t in range(1, 51)]
    assert structure == {"max_degree": 3}
    assert all((g == g.T).all() and g.diagonal().all() and (g.sum(axis=1) == 4).all() for g in graphs)
    assert len({g.tobytes() for g in graphs}) >= 5  # redrawn (K_{3,3} has 10 labellings), not fixed
    assert graph_sequence("redrawn", 6, 50, 0)[0](7).tobytes() == graphs[6].tobytes()  # same seed, same graphs
    with pytest.raises(ValueError, match="shape must be one of"):
        graph_sequence("ring", 6, 50, 0)
    assert SHAPES == ("path", "star", "redrawn")


@pytest.mark.parametrize("bug, shape, check", [
    (bugs.GraphHubRoundTagsTruncated(), "star", "round_records"),
    (bugs.GraphRoundTagsCachedMask(), "redrawn", "round_records"),
], ids=["hub_tags_on_star", "cached_mask_on_redrawn"])
def test_hub_and_redrawn_graph_bugs_are_caught_and_missed_on_the_path(bug, shape, check):
    assert graph_whitebox_audit(bug, 100, 6, 32, seed=0, law=False).verdict == "CONSISTENT"  # the path
    res = graph_whitebox_audit(bug, 100, 6, 32, seed=0, law=False, shape=shape)
    assert res.verdict == "VIOLATION" and check in res.checks, res.summary()


@pytest.mark.parametrize("shape", ["star", "redrawn"])
@pytest.mark.parametrize("name", ["dp_ucb_n", "gaussian_ts_n", "lazy_dp_ts_n"])
def test_clean_graph_policies_pass_on_a_star_and_a_redrawn_graph(name, shape):
    res = graph_whitebox_audit(make_policy(name), 100, 6, 32, seed=1, law=False, shape=shape)
    assert res.verdict == "CONSISTENT" and not res.findings, res.summary()


# --- contexts: shorter than the bound, and far longer ---------------------------------------------------
def test_a_scale_that_follows_the_context_norm_and_unclipped_long_contexts_are_refuted():
    scaled = contextual_whitebox_audit(bugs.LinTSContextScaledNoise(dim=3), 64, 2, 32, seed=0)
    assert scaled.verdict == "VIOLATION" and "tree_output" in scaled.checks, scaled.summary()
    unclipped = contextual_whitebox_audit(bugs.LinContextsUnclipped(dim=3), 64, 2, 32, seed=0)
    assert unclipped.verdict == "VIOLATION" and "sensitivity" in unclipped.checks, unclipped.summary()
    for clean in (PrivateLinTS(dim=3), PrivateLinUCB(dim=3), bugs.LinContextsHalfBall(dim=3)):
        res = contextual_whitebox_audit(clean, 64, 2, 32, seed=0)
        assert res.verdict == "CONSISTENT", res.summary()
