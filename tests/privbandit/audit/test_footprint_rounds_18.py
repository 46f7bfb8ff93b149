"""The graph audit's footprint check reads a record's position from the policy's round tags (session 18).

Round 19's control ``dp_ucb_n_side_thinned_by_counts`` (bench/audit_planted_round19.py) keeps a side observation
only for arms observed fewer times than the played arm -- a rule of public counts, so each stream is numbered by its
*kept* observations and is private. The footprint check inferred positions from the revealed entries and flagged it
on the star, path, redrawn and hub graphs (a false alarm); the tags (``note_rounds``) name the position the ledger
composes by. Its twin ``dp_ucb_n_zero_side_observations_skipped`` (the keep rule reads the values) is still refuted.

The certificate checks of ``_GraphSpend`` (~3 s of the ~3.2 s a run takes) are stubbed here: they do not read the
footprints; the bench runs keep them (``bench/audit_planted.py --only round19``).
"""

from __future__ import annotations

import _bench  # noqa: F401 -- puts bench/ on sys.path
import pytest

import audit_planted_round19 as r19  # noqa: E402
from privbandit.audit import graph


@pytest.fixture
def no_certificate(monkeypatch):
    monkeypatch.setattr(graph._GraphSpend, "findings", lambda self: [])


def _checks(policy, shape, n_arms):
    res = graph.graph_whitebox_audit(policy, 40, n_arms, 8, seed=0, shape=shape, law=False)
    return {f.check: f.detail for f in res.findings}


@pytest.mark.parametrize("shape", ["star", "redrawn"])
def test_counts_thinned_side_observations_not_flagged(no_certificate, shape):
    # 6 arms, 8 replicates, 40 rounds: footprint flagged 2 releases on each shape before the tags were read
    assert _checks(r19.DPUCBNSideThinnedByCounts(epsilon=1.0), shape, 6) == {}


def test_value_thinned_side_observations_still_refuted(no_certificate):
    found = _checks(r19.DPUCBNZeroSideObservationsSkipped(epsilon=1.0), "star", 6)
    assert "decisions" in found, found


def test_tags_name_the_position(no_certificate):
    # tags one past the position each record was inserted at (the releases' footprints number it right): the
    # footprint check now holds the releases to the tags -- the numbering the round relation composes by -- and
    # flags them (10 releases); before, only round_records saw it, on the whole-round replicates
    from privbandit.policies import DPUCBN

    class TagsShifted(DPUCBN):
        def start(self, n_arms, replicates, horizon, rng, ledger=None):
            run = super().start(n_arms, replicates, horizon, rng, ledger)
            learn = run.learn

            def learning(t, observed, values):
                run.counts += 1  # the tag is taken from the counts before the insert ...
                try:
                    learn(t, observed, values)
                finally:
                    run.counts -= 1

            run.learn = learning
            return run

    found = _checks(TagsShifted(epsilon=1.0), "star", 6)
    assert "footprint" in found, found
