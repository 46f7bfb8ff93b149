"""The replay of a vector tree's released prefix sums (session 14, lead; privbandit/audit/tracing.py
``_vector_sum_wrapper``): a run on D' whose node releases equal D's reaches D's sums only to ~1e-13 (the tree
keeps exact and noise sums incrementally), so indices tied to that precision split differently -- a false
witness of the decisions check (round 16's control ``joint_contexts_to_sphere``). Our own variant: a Joint-DP
LinUCB that plays every context scaled to the sphere of radius L (correct: the contexts stay in the ball)."""

from __future__ import annotations

import dataclasses

import numpy as np

import privbandit.audit.tracing as tracing
from privbandit.audit.contextual import contextual_whitebox_audit
from privbandit.policies.linear import JointDPLinUCB


class SphereContexts(JointDPLinUCB):
    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        select, bound = run.select, self.bound

        def on_sphere(t, offer=None):
            z = offer.contexts
            norm = np.linalg.norm(z, axis=-1, keepdims=True)
            scaled = np.where(norm > 0, z * (bound / np.where(norm > 0, norm, 1.0)), 0.0)
            scaled *= np.minimum(1.0, bound / np.maximum(np.linalg.norm(scaled, axis=-1, keepdims=True), 1e-300))
            return select(t, dataclasses.replace(offer, contexts=scaled))
        run.select = on_sphere
        return run


def test_tied_indices_are_no_witness_once_the_sums_replay_exactly(monkeypatch):
    policy = SphereContexts(epsilon=1.0, bound=4.0)
    res = contextual_whitebox_audit(policy, 200, 2, 64, seed=0)
    assert "decisions" not in {f.check for f in res.findings}, [f.detail for f in res.findings]
    monkeypatch.setattr(tracing, "SUM_RTOL", -1.0)  # the sums as computed: the false witness is back
    res = contextual_whitebox_audit(policy, 200, 2, 64, seed=0)
    assert "decisions" in {f.check for f in res.findings}
