"""Session 14 (s14/audit): the auditor's reach, closed as classes -- each check here with a planted case of our own
(not round 16's, which was written blind elsewhere) that the earlier runs miss, and its clean twin.

* the contextual policies' reach runs (``privbandit.audit.cli.contextual_reach_runs``): changed records placed on
  tree-leaf positions and late rounds by the run on D, edge contexts, and a higher context dimension;
* records 16 or more into a long batch (``whitebox_audit(deep_records=...)``);
* check 5d's pairings across replicates and far apart along a stream (``noise_dependence.FAR_PAIRINGS``).
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.audit.cli import contextual_reach_runs, reach_targets
from privbandit.audit.contextual import contextual_whitebox_audit
from privbandit.audit.noise_dependence import FAR_PAIRINGS, noise_dependence
from privbandit.audit.whitebox import deep_positions, whitebox_audit
from privbandit.contextual import linalg
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import DPUCB, LazyDPTS
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


# --- item 2: positions 16 or more into a long batch (whitebox_audit(deep_records=...)) ----------------------------


class LazySecondLastTwice(LazyDPTS):
    """Lazy-DP-TS whose doubling batch of 32 or more records takes its second-last record twice (a "closing
    correction"), still released at sensitivity 1: true eps 2 for those records against 1. Offsets n - 2 >= 30:
    past the sweep's 0 .. 15, beside the schedule replicates' last record and the one after it."""

    name = "t_lazy_second_last_twice"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        batches, update = run.batches, run.update

        def update_twice(t, arms, rewards):
            arms_a, values = np.asarray(arms), np.asarray(rewards, dtype=float)
            pending = batches.pending[run.rows, arms_a]
            size = batches.count[run.rows, arms_a] - pending + 1  # doubling: batch b opens at 2^b - 1 records
            hit = (size >= 32) & (pending == size - 2)
            update(t, arms, rewards)
            if hit.any():
                batches._open_sum[run.rows[hit], arms_a[hit]] += values[hit]

        run.update = update_twice
        return run


def test_deep_positions_stratify_a_long_batch():
    ev = np.array([0, 2, 6, 14, 30, 62, 126, 254])  # doubling batches: the last one holds 128 records
    pos, placed = deep_positions([ev] * 32, np.full(32, 255), np.random.default_rng(0))
    assert placed == 32
    ends = np.concatenate([[-1], ev])
    offset = pos - ends[np.searchsorted(ev, pos)] - 1  # offset inside the batch holding pos
    size = np.diff(ends)[np.searchsorted(ev, pos)]
    group = np.arange(32) // 4
    assert np.all(offset >= 16) and np.all(offset[group == 0] == size[group == 0] - 2)
    assert np.all((offset[group == 1] >= size[group == 1] - 4) & (offset[group == 1] <= size[group == 1] - 3))
    # no batch: dyadic blocks of at least 32 leaves, wholly revealed
    pos, placed = deep_positions([np.zeros(0, np.int64)] * 8, np.full(8, 300), np.random.default_rng(1))
    assert placed == 0 and np.all((pos >= 48) & (pos < 256))


def test_deep_records_reach_a_long_batchs_second_last_record():
    kwargs = dict(seed=3, law=False, observer=False, sweep_records=16, schedule_records=8, last_records=4)
    bad = LazySecondLastTwice(epsilon=1.0)
    assert whitebox_audit(bad, 400, 2, 4, **kwargs).verdict == "CONSISTENT"  # without deep_records: a miss
    caught = whitebox_audit(bad, 400, 2, 4, deep_records=32, **kwargs)
    assert caught.verdict == "VIOLATION" and "sensitivity" in caught.checks, caught.summary()
    clean = whitebox_audit(LazyDPTS(epsilon=1.0), 400, 2, 4, deep_records=32, **kwargs)
    assert clean.verdict == "CONSISTENT", clean.summary()
    assert any(n.startswith("deep: 32") for n in clean.notes)


# --- item 3: check 5d across replicates and far apart along a stream ---------------------------------------------


def _laplace_from(self, statistic, scale, u):
    u = np.clip(u, 1e-300, 1.0 - 2.0 ** -53)
    z = -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))
    return np.asarray(statistic, dtype=float) + z * np.asarray(scale, dtype=float)


class _NextReplicateShifted(NoiseSampler):
    """DP-UCB on two arms releases both arms' items of every replicate in one flat (R, K) call: here replicate
    2j+1's uniforms are replicate 2j's shifted by 1/2 mod 1 ("one stream of uniforms per pair of replicates").
    Each value is Laplace(scale) in law; given both replicates' releases their statistics' difference is known."""

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or statistic.size % 4:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        u = self.rng.random(statistic.shape).reshape(-1, 2)
        u[1::2] = np.mod(u[0::2] + 0.5, 1.0)
        return _laplace_from(self, statistic, scale, u.reshape(statistic.shape))


class _CursorWraps(NoiseSampler):
    """A sampler whose calls 8..15 of every 16 re-use the uniforms of the call 8 earlier, shifted by 1/2 mod 1 (a
    ring buffer of 8 calls whose cursor wraps): on DP-UCB, which releases every stream every round, a stream's
    k-th and (k + 8)-th releases share one uniform."""

    def _sum_release(self, statistic, scale, on_grid=True):
        statistic = np.asarray(statistic, dtype=float)
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        ring = self.__dict__.setdefault("_ring", [])
        u = self.rng.random(statistic.shape)
        c = len(ring)
        if c % 16 >= 8 and ring[c - 8].shape == u.shape:
            u = np.mod(ring[c - 8] + 0.5, 1.0)
        ring.append(u)
        return _laplace_from(self, statistic, scale, u)


def _dpucb_with(sampler_class, name):
    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = DPUCB.start(self, n_arms, replicates, horizon, rng, ledger)
        for m in [v for v in vars(run).values() if isinstance(getattr(v, "sampler", None), NoiseSampler)]:
            m.sampler.__class__ = sampler_class
        return run

    return type(name, (DPUCB,), {"start": start, "name": "t_" + name.lower()})


DPUCBNextReplicate = _dpucb_with(_NextReplicateShifted, "DPUCBNextReplicate")
DPUCBCursorWraps = _dpucb_with(_CursorWraps, "DPUCBCursorWraps")


@pytest.mark.parametrize("bad_class, pairing", [(DPUCBNextReplicate, "across replicates"),
                                                (DPUCBCursorWraps, "along a stream, lag 8")])
def test_far_pairings_refute_dependence_the_three_pairings_miss(bad_class, pairing, monkeypatch):
    bad = whitebox_audit(bad_class(epsilon=1.0), 120, 2, 64, seed=0, observer=False)
    assert bad.verdict == "VIOLATION" and any(pairing + ":" in f.detail for f in bad.findings), bad.summary()
    import privbandit.audit.noise_dependence as nd

    monkeypatch.setattr(nd, "FAR_PAIRINGS", ())  # session 13's three pairings only: a miss
    monkeypatch.setattr(nd, "LAGS", ())
    # (session 15, s15/reach2: the near pairings see the replicate tie too -- pairs of replicates 2j and 2j + 1
    # across the hybrid's two parts give identical (U + V) mod 1 -- so they are left out with the far ones)
    monkeypatch.setattr(nd, "near_pairs", lambda *a: {})
    real = nd.noise_dependence
    monkeypatch.setattr(nd, "noise_dependence", lambda rel, alpha, usable, far_alpha=None: [
        m for m in real(rel, alpha, usable, far_alpha) if "across replicates" not in m])
    import privbandit.audit.whitebox as wb

    monkeypatch.setattr(wb, "noise_dependence", nd.noise_dependence)
    assert whitebox_audit(bad_class(epsilon=1.0), 120, 2, 64, seed=0, observer=False).verdict == "CONSISTENT"


def test_far_pairings_pass_the_clean_twin():
    clean = whitebox_audit(DPUCB(epsilon=1.0), 120, 2, 64, seed=0, observer=False)
    assert clean.verdict == "CONSISTENT", clean.summary()
    assert len(FAR_PAIRINGS) == 11


@pytest.mark.parametrize("seed", range(3))
def test_far_pairings_hold_their_level_on_independent_noise(seed):
    rng = np.random.default_rng(seed)
    R, S, n = 8, 3, 1500  # releases of one mechanism: 8 replicates x 3 streams x 1500 ranks, each its own call
    rep, st, k = (a.reshape(-1) for a in np.meshgrid(np.arange(R), np.arange(S), np.arange(n), indexing="ij"))
    u = rng.random(rep.size)
    from scipy import stats as sps

    stat = np.zeros(rep.size)
    rel = {"out": stat + 2.0 * sps.laplace.ppf(u), "stat": stat, "param": np.full(rep.size, 2.0),
           "kind": np.full(rep.size, "laplace", dtype=object), "mechanism": np.full(rep.size, "m", dtype=object),
           "rep": rep, "st": st, "draw": np.arange(rep.size), "seq": k, "entry": np.zeros(rep.size, np.int64)}
    assert noise_dependence(rel, 1e-4, np.ones(rep.size, dtype=bool)) == []


def test_far_lags_count_vector_releases_not_entries():
    """A vector release's j-th entry paired with the j-th entry of the release L later (L counted in releases): a
    node noise vector derived from the one 8 nodes earlier (3 entries a node: 24 entries apart, no power of two)."""
    from scipy import stats as sps

    rng = np.random.default_rng(5)
    R, n, size = 4, 600, 3
    u = rng.random((R, n, size))
    for k in range(n):
        if (k // 8) % 2:
            u[:, k] = np.mod(u[:, k - 8] + 0.618, 1.0)
    rep, k, entry = (a.reshape(-1) for a in np.meshgrid(np.arange(R), np.arange(n), np.arange(size), indexing="ij"))
    m = rep.size
    stat = np.zeros(m)
    rel = {"out": sps.laplace.ppf(u.reshape(-1)), "stat": stat, "param": np.ones(m),
           "kind": np.full(m, "laplace", dtype=object), "mechanism": np.full(m, "m", dtype=object), "rep": rep,
           "st": np.zeros(m, np.int64), "draw": rep * n + k, "seq": k, "entry": entry}
    found = noise_dependence(rel, 1e-4, np.ones(m, dtype=bool))
    assert any("along a stream, lag 8:" in f for f in found), found


def test_sweep_walks_every_offset_of_a_batch_of_32():
    """128 sweep replicates (WB_SWEEP) walk offsets 0 .. 31 of the policy's batches: every position of a batch of up
    to 32 records (session 13 walked 0 .. 15), four replicates (the tape kinds) per offset."""
    from privbandit.audit.cli import WB_SWEEP
    from privbandit.audit.whitebox import sweep_positions

    ev = np.array([39, 79])  # two batches of 40 records
    pos, placed = sweep_positions([ev] * WB_SWEEP["replicates"], np.full(WB_SWEEP["replicates"], 80),
                                  np.random.default_rng(0))
    assert placed == WB_SWEEP["replicates"]
    offsets = np.where(pos > 39, pos - 40, pos)
    assert np.array_equal(np.bincount(offsets, minlength=32), np.full(32, 4))
