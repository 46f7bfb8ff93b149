"""Session 14 (s14/audit): the auditor's reach, closed as classes -- each check here with a planted case of our own
(not round 16's, which was written blind elsewhere) that the earlier runs miss, and its clean twin.

* the contextual policies' reach runs (``privbandit.audit.cli.contextual_reach_runs``): changed records placed on
  tree-leaf positions and late rounds by the run on D, edge contexts with the Gram matrix's tight neighbour, and a
  higher context dimension;
"""

from __future__ import annotations

import numpy as np

from privbandit.audit.cli import contextual_reach_runs, reach_targets
from privbandit.audit.contextual import contextual_whitebox_audit
from privbandit.contextual import linalg
from privbandit.policies.linear import JointDPLinUCB, PrivateLinUCB

_BOUND = linalg.bound_contexts  # the real projection (the planted clips below call it, swapped in or not)

SMALL = dict(horizon=64, replicates=32, boundary_horizon=48, boundary_replicates=32, wide_replicates=8,
             wide_horizon=40)


class LinUCBLastRoundTenfold(PrivateLinUCB):
    """Private LinUCB whose vector tree takes the record of the horizon's last round ten times over (after
    clipping), still declared at the round-level L1 sensitivity: the entry-level change of that record is ~11
    against a declared 8.24 at d = 5. No decision reads it: only its own node release shows it."""

    name = "t_lin_ucb_last_round_tenfold"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        build, update, state = run._start_statistics, run.update, {"t": 0}

        def patched(dim):
            build(dim)
            tree = run.stats.tree

            def insert(values, streams, mask=None):  # the class's (traced) insert, the values x10 at T
                return type(tree).insert(tree, values * 10.0 if state["t"] == horizon else values, streams, mask)

            tree.insert = insert

        def stepped(t, arms, rewards):
            state["t"] = t
            return update(t, arms, rewards)

        run._start_statistics, run.update = patched, stepped
        return run


def _with_clip(cls, clip, name):
    """A subclass of ``cls`` whose rounds bound their contexts with ``clip(z, bound, mode)`` in place of
    :func:`privbandit.contextual.linalg.bound_contexts` (swapped in for the call only)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = cls.start(self, n_arms, replicates, horizon, rng, ledger)
        select = run.select

        def patched(t, offer=None):
            original = linalg.bound_contexts
            linalg.bound_contexts = clip
            try:
                return select(t, offer)
            finally:
                linalg.bound_contexts = original

        run.select = patched
        return run

    return type(name, (cls,), {"start": start, "name": "t_" + name.lower()})


def _unit_when_degenerate(z, bound, mode):  # "a degenerate context": norm < 1e-8 L normalised to the unit sphere
    z = _BOUND(z, bound, mode)
    norms = np.linalg.norm(z, axis=-1, keepdims=True)
    return np.where((norms > 0) & (norms < 1e-8 * bound), z / np.where(norms > 0, norms, 1.0), z)


def _feature_table(z, bound, mode):  # clipped, then coordinates >= 8 scaled by 2 (a scale table of 8 entries)
    z = _BOUND(z, bound, mode)
    if z.shape[-1] <= 8:
        return z
    z = z.copy()
    z[..., 8:] *= 2.0
    return z


JointDegenerateUnit = _with_clip(JointDPLinUCB, _unit_when_degenerate, "JointDegenerateUnit")
JointWideFeatures = _with_clip(JointDPLinUCB, _feature_table, "JointWideFeatures")


def test_reach_targets_cover_leaf_positions_and_the_last_round():
    streams, positions = reach_targets(32, 2, 512, np.random.default_rng(0))
    group = (np.arange(32) // 4) % 8
    assert np.all(streams[group == 7] == -1) and np.all(streams[group < 7] == np.arange(32)[group < 7] % 2)
    assert np.all(np.isin(positions[group == 0] + 1, 1 << np.arange(4, 9)))  # a dyadic block's last leaf
    assert np.all(np.isin(positions[group == 1], 1 << np.arange(4, 9)))
    assert np.all((positions[(group >= 2) & (group <= 4)] >= 16) & (positions[(group >= 2) & (group <= 4)] < 256))
    assert np.all(positions[group == 5] == -1) and np.all((positions[group == 6] <= -2) & (positions[group == 6] >= -4))


def test_contextual_positions_run_reaches_the_last_round():
    bad = LinUCBLastRoundTenfold()
    # the ordinary contextual run of the same size: its changed rounds are log-uniform in [1, 3T/4] -- a miss
    assert contextual_whitebox_audit(bad, 64, 2, 32, seed=20, law=False).verdict == "CONSISTENT"
    caught = contextual_reach_runs(bad, 2, 0, SMALL)["positions"]
    assert caught.verdict == "VIOLATION" and "sensitivity" in caught.checks, caught.summary()
    clean = contextual_reach_runs(PrivateLinUCB(), 2, 0, SMALL)
    assert all(r is not None and r.verdict == "CONSISTENT" for r in clean.values()), \
        [r.summary() for r in clean.values() if r is not None]


def test_edge_contexts_reach_tiny_norms():
    # L = 1/2: a degenerate context normalised to norm 1 = 2 L; the Gram matrix's node moves by 2.0 > sqrt 2 (L^2 + 1)
    bad = JointDegenerateUnit(bound=0.5)
    # the ordinary run's norms are >= L / 10: the guard never fires -- a miss
    assert contextual_whitebox_audit(bad, 48, 2, 32, seed=21, law=False).verdict == "CONSISTENT"
    caught = contextual_reach_runs(bad, 2, 0, SMALL)["boundary"]
    assert caught.verdict == "VIOLATION" and "sensitivity" in caught.checks, caught.summary()
    clean = contextual_reach_runs(JointDPLinUCB(bound=0.5), 2, 0, SMALL)
    assert all(r is not None and r.verdict == "CONSISTENT" for r in clean.values()), \
        [r.summary() for r in clean.values() if r is not None]


def test_higher_dimension_run_reaches_coordinates_past_eight():
    bad = JointWideFeatures()
    assert contextual_whitebox_audit(bad, 40, 2, 32, seed=22, law=False).verdict == "CONSISTENT"  # d = 5: silent
    caught = contextual_reach_runs(bad, 2, 0, SMALL)["wider"]
    assert caught is not None and caught.verdict == "VIOLATION" and "sensitivity" in caught.checks, caught.summary()
    assert "dim=11" in caught.policy
