"""Round 10's planted bugs on the graph-feedback private policies (side observations; the larger zoo with
its catch table is bench/audit_planted_bugs.py): each keeps its parent's claim except
``RoundCertEntry``, whose claim is the bug."""

from __future__ import annotations

import math

import numpy as np

from privbandit.policies.base import note_rounds
from privbandit.policies.gaussian_ts import GaussianTSSchedule
from privbandit.policies.graph_private import (DPUCBN, GaussianTSN, LazyDPTSN, StreamsSchedule, _explore_first,
                                               streams_per_record)
from privbandit.policies.hu_hegde import LAZY_SHIFT, beta_draw


def _remember(run):
    choose = run.choose

    def remembering(t, graph):
        run.bug_arms = choose(t, graph)
        return run.bug_arms

    run.choose = remembering


def _pulled(run):
    mask = np.zeros((run.replicates, run.n_arms), dtype=bool)
    mask[run.rows, run.bug_arms] = True
    return mask


class SideReleaseOnPulled(LazyDPTSN):
    """footprint: a side-observed arm's batch release is reported on the played arm's stream."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember(run)
        record = run.batches._record
        run.batches._record = lambda rr, kk, lo, hi, scale, m, node: record(
            rr, np.asarray(run.bug_arms)[rr].astype(kk.dtype), lo, hi, scale, m, node)
        return run


class RoundsPulledOnly(DPUCBN):
    """round_records: only the played arm's record is tagged with its round."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember(run)

        def learn(t, observed, values):
            positions = run.counts.copy()
            run.hybrid.insert(values, observed)
            run.counts += observed
            note_rounds(run.ledger, t, observed & _pulled(run), positions)

        run.learn = learn
        return run


class SideObsRaw(LazyDPTSN):
    """decisions: only the played arm's reward enters the batch mechanism; side observations go raw into
    the posterior (mean and count), never released."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        side_sum, side_n = np.zeros((replicates, n_arms)), np.zeros((replicates, n_arms))
        b, learn = run.batches, run.learn

        def choose(t, graph):
            o = np.maximum(b.batch_size, 1).astype(float)
            shift = LAZY_SHIFT * math.log2(t) / (run.eps * o)
            mubar = np.clip((b.noisy_sum + side_sum) / (o + side_n) + shift, 0.0, 1.0)
            run.bug_arms = _explore_first(b.batch_size > 0, beta_draw(run.rng, mubar, o + side_n).argmax(axis=1))
            return run.bug_arms

        def raw_side(t, observed, values):
            pulled = observed & _pulled(run)
            side = observed & ~pulled
            side_sum[side] += values[side]
            side_n[side] += 1
            learn(t, pulled, np.where(pulled, values, 0.0))

        run.choose, run.learn = choose, raw_side
        return run


class OwnCounts(GaussianTSN):
    """footprint: the posterior count is the arm's own pulls while its sum takes every observation."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember(run)
        seen = np.zeros((replicates, n_arms), dtype=np.int64)

        def learn(t, observed, values):
            positions = seen.copy()
            run.sums += values
            run.counts += _pulled(run)
            seen[...] += observed
            note_rounds(run.ledger, t, observed, positions)

        run.learn = learn
        return run


class RoundCertEntry(GaussianTSN):
    """schedule (starving run): the round relation certified with the entry relation's schedule."""

    def privacy_schedule(self, horizon, n_arms, *, relation="entry", max_degree=None, graph=None):
        streams_per_record(n_arms, relation, max_degree, graph)
        return StreamsSchedule(GaussianTSSchedule(self.b, self.c, n_arms), 1, relation)


class IgnoresSide(DPUCBN):
    """Control (correct): side observations are ignored; only the played arm's reward enters a stream."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember(run)
        learn = run.learn

        def pulled_only(t, observed, values):
            mask = observed & _pulled(run)
            learn(t, mask, np.where(mask, values, 0.0))

        run.learn = pulled_only
        return run
