"""The release tracer: pairs draws with ledger reports, replays, and leaves no trace when off."""

import numpy as np
import pytest

from privbandit.audit.tracing import ReleaseTracer
from privbandit.ledger import Ledger
from privbandit.mechanisms.laplace import LaplaceRelease
from privbandit.mechanisms.posterior import GaussianPosteriorRelease
from privbandit.mechanisms.sampling import NoiseSampler


def test_wrappers_are_removed_on_exit():
    before = (NoiseSampler.__dict__["_sum_release"], Ledger.__dict__["_store"],
              GaussianPosteriorRelease.__dict__["release"])
    with ReleaseTracer(Ledger(1, 1)):
        assert NoiseSampler.__dict__["_sum_release"] is not before[0]
    after = (NoiseSampler.__dict__["_sum_release"], Ledger.__dict__["_store"],
             GaussianPosteriorRelease.__dict__["release"])
    assert after == before


def test_tracers_do_not_nest_and_need_a_ledger():
    with ReleaseTracer(Ledger(1, 1)):
        with pytest.raises(RuntimeError, match="already active"):
            ReleaseTracer(Ledger(1, 1)).__enter__()
    with pytest.raises(ValueError, match="ledger"):
        ReleaseTracer(None)


def test_pairs_a_release_with_its_report():
    ledger = Ledger(1, 2, tight=True)
    rel = LaplaceRelease(np.random.default_rng(0), ledger, "x")
    with ReleaseTracer(ledger) as tr:
        out = rel.release([0.25, 0.75], 2.0, 1.0, 0, [0, 1], 0, [3, 4], node=[7, 8])
    r = tr.released()
    assert np.array_equal(r["out"], out) and np.array_equal(r["stat"], [0.25, 0.75])
    assert r["param"].tolist() == [2.0, 2.0] and r["hi"].tolist() == [3, 4] and r["node"].tolist() == [7, 8]
    assert not tr.unreported() and not tr.orphans


def test_a_release_without_report_is_unreported_and_reports_elsewhere_do_not_count():
    mine, other = Ledger(1, 1, tight=True), Ledger(1, 1, tight=True)
    rel = LaplaceRelease(np.random.default_rng(0), other, "x")
    with ReleaseTracer(mine) as tr:
        rel.release([0.5], 1.0, 1.0, 0, 0, 0, 1)
    assert len(tr.unreported()) == 1 and tr.released()["stat"].size == 0


def test_replay_returns_the_recorded_values_and_consumes_the_stream():
    def go(stat, replay=None):
        ledger = Ledger(1, 1, tight=True)
        rng = np.random.default_rng(5)
        rel = LaplaceRelease(rng, ledger, "x")
        with ReleaseTracer(ledger, replay) as tr:
            a = rel.release([stat], 1.0, 1.0, 0, 0, 0, 1)
            b = rel.release([stat], 1.0, 1.0, 0, 0, 0, 1)
        return tr, np.concatenate([a, b]), rng.random()

    tr0, out0, next0 = go(0.0)
    tr1, out1, next1 = go(1.0, replay=tr0.draws)
    assert np.array_equal(out0, out1) and next0 == next1 and tr1.replay_broken is None
    assert tr1.released()["stat"].tolist() == [1.0, 1.0]


def test_posterior_draws_pair_with_the_dense_prefix_reports():
    ledger = Ledger(2, 2, tight=True)
    post = GaussianPosteriorRelease(2, 2, c=1.0, rng=np.random.default_rng(0), ledger=ledger)
    with ReleaseTracer(ledger) as tr:
        post.release(np.array([[1.0, 0.0], [2.0, 1.0]]), np.array([[2.0, 0.0], [3.0, 1.0]]))
    r = tr.released()
    assert r["stat"].size == 3 and not tr.unreported()  # the empty arm (k = 0) holds no record
    assert np.allclose(r["sens"], 1.0 / (np.array([2, 3, 1]) + 1.0))
