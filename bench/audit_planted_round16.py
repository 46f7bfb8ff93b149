"""Round 16 of the planted bugs (session 14, s14/blind), written blind: from docs/audit.md's description and
Limitations ("Remaining limits after session 13", check 5d's limits, the contextual section), the bench harness
and the code of the policies, mechanisms, accountants and deployment modules the bugs live in -- never from the
auditor's check code (privbandit/audit/).

Like rounds 11-15, each policy bug is a subclass of a private policy with one mistake made inside ``start`` (an
instance-level patch, so the clean twin -- the parent's ``start`` on the same configuration -- is the unmodified
policy), or, for a certificate bug, a schedule subclass; it keeps its parent's claim unless the mistake *is* the
claim. Aimed at what docs/audit.md says the auditor does not reach: the **contextual** policies (a deep tree level,
one coordinate of the context, the horizon's last round, exact index ties, node noise tied across far-apart nodes), noise right in
law per draw but **tied across releases 64 apart** in one stream, noise **seeded by the round** (the run's seed
ignored), a sensitivity error **past round 2^16**, noise drawn small for **arms >= 16** inside the draw, a batch
record at **position 19**, a record whose arm's running sum **crosses an integer**, certificates wrong only at the
**configured delta** or through a **PureDP-only** composition, and three deployment mistakes (an odometer counting
from the last reopen, a reward applied again at a reopen, exploit decisions read off the rewards).

Each class docstring states the true epsilon of the buggy code against its claim. ``CONTROLS16`` are correct but
unusual variants (each must stay CONSISTENT); they are listed before the bugs, as ``bench/audit_planted.py --only
round16`` runs them. Nothing here is imported by the package.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

from accountants import Certificate, gdp_conversion
from accountants.advanced import AdvancedCompositionAccountant, _closed_form
from accountants.best import default_accountants
from privbandit.contextual import linalg
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import DPUCB, DPUCBBound, EXP3, JointDPLinUCB, PrivateLinTS, PrivateLinUCB, PrivateUCB
from privbandit.policies.adversarial import ExponentialWeightsSchedule
from privbandit.policies.elimination import AnytimeLazyUCB
from privbandit.policies.hu_hegde import LazyDPTS
from privbandit.policies.linear import JointDPSchedule

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from audit_planted_bugs import _named, _on_statistics  # noqa: E402
from audit_planted_round12 import _closing_arms  # noqa: E402
from audit_planted_round15 import _TO_BALL, _joint_gdp_init, _validated_then_mapped  # noqa: E402

LATE_ROUND = 2 ** 16
"""Records revealed after this round (65,536) are the late bugs' (beyond the fast-forward window at 2^15)."""

WIDE_ARM = 16
"""Arm indices >= 16: past the far one-replicate run's 16 arms, inside the 33-arm coupled run."""

DEEP_LEVEL = 9
"""Vector-tree nodes of level >= 9 (512 records): only the contextual long run (2,000 rounds) completes them."""

LAG = 64
"""The ring of uniforms the lagged-noise bugs keep per stream: node k + 64 re-uses node k's uniform."""

ROTATION = (math.sqrt(5.0) - 1.0) / 2.0
"""The golden-ratio turn added to a re-used uniform on each lap of the ring (no value ever repeats exactly)."""


def _laplace_inverse_cdf(u: np.ndarray) -> np.ndarray:
    """Standard Laplace by the inverse CDF of a uniform in (0, 1) (u = 0 clipped: it would be infinite)."""
    u = np.clip(u, 1e-300, 1.0 - 2.0 ** -53)
    return -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))


def _lagged_uniforms(ring: np.ndarray, seen: np.ndarray, rows, streams, positions, fresh: np.ndarray) -> np.ndarray:
    """Uniforms for releases at stream ``positions`` (0-based) of (``rows``, ``streams``): on a stream's first lap
    (position < LAG) the ``fresh`` ones, kept in slot position mod LAG of ``ring``; later, the slot's uniform turned
    by ROTATION per lap. Each value alone is Uniform(0, 1); release k + LAG is a fixed function of release k."""
    slot, lap = positions % LAG, positions // LAG
    first = lap == 0
    u = fresh.copy()
    ring[rows[first], streams[first], slot[first]] = fresh[first]
    seen[rows[first], streams[first], slot[first]] = True
    later = ~first & seen[rows, streams, slot]
    turn = (lap[later] * ROTATION) % 1.0
    turn = turn.reshape(turn.shape + (1,) * (fresh.ndim - 1))
    u[later] = (ring[rows[later], streams[later], slot[later]] + turn) % 1.0
    return u


# =============================== controls (correct but unusual) ===============================
class JointSignedRewards(JointDPLinUCB):
    """Control: Joint-DP LinUCB (shared model, L = 4, calibration "gdp") learning each reward as 2 r - 1 in
    [-1, 1] ("a +-1 label, as the classification reduction gives it"): the augmented x = [z; 2r - 1] still has
    ||x||^2 <= L^2 + 1, so ||x x^T - y y^T||_F <= sqrt 2 (L^2 + 1), the declared sensitivity (Shariff & Sheffet
    2018; module docstring of privbandit/policies/linear.py). True eps = claimed eps."""

    __init__ = _joint_gdp_init

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):  # after the policy's [0, 1] check: the statistics' own add
            add = stats.add
            stats.add = lambda rows, groups, z, r: add(rows, groups, z, 2.0 * np.asarray(r, dtype=float) - 1.0)

        _on_statistics(run, patch)
        return run


class JointContextsToSphere(JointDPLinUCB):
    """Control: Joint-DP LinUCB (shared model, L = 4, calibration "gdp") scaling every non-zero context to norm
    exactly L ("only the direction carries information"), the zero context left zero: every context reaching
    the statistics has norm <= L, as the projection guarantees. True eps = claimed eps."""

    __init__ = _joint_gdp_init

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def to_sphere(z, bound):
            norm = np.linalg.norm(z, axis=-1, keepdims=True)
            # a scale below 1 on the ball's far side rounds the norm to <= L (the projection's own arithmetic)
            return _TO_BALL(np.where(norm > 0.0, z * (bound / np.where(norm > 0.0, norm, 1.0)), 0.0), bound, "clip")

        _select_rounds_with(run, lambda t: to_sphere)
        return run


class UCBCounterBasedNoise(PrivateUCB):
    """Control: Private-UCB whose tree noise in round t comes from a generator of its own, seeded by the spawn
    key (t,) under a secret entropy drawn once from the run's generator ("counter-based noise: any round can be
    re-drawn for a replay"): distinct spawn keys give independent streams (numpy SeedSequence), the secret differs
    from run to run, and the law, scale and reports are unchanged. True eps = claimed eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        secret = int(rng.integers(2 ** 63))
        _update_drawing_from(run, run.tree.sampler,
                             lambda t: np.random.Generator(np.random.PCG64(np.random.SeedSequence(secret, spawn_key=(t,)))))
        return run


class UCBLateQuantised(PrivateUCB):
    """Control (the twin of ``ucb_late_double``): Private-UCB inserting each record revealed after round 2^16
    rounded to a multiple of 1/1024 ("late rewards stored in ten bits"): a map of [0, 1] into [0, 1], so every
    node still moves by at most 1 per record. True eps = claimed eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _late_mapped(run, lambda v: np.round(1024.0 * v) / 1024.0)
        return run


CONTROLS16 = {
    "joint_signed_rewards": JointSignedRewards,
    "joint_contexts_to_sphere": JointContextsToSphere,
    "ucb_counter_based_noise": UCBCounterBasedNoise,
    "ucb_late_quantised": UCBLateQuantised,
}
"""Round 16's policy controls (correct variants: each must come out CONSISTENT); listed before the bugs."""


# --- seams shared by the controls and the bugs ---------------------------------------------------
def _select_rounds_with(run, choose) -> None:
    """A linear run's ``select`` in round t with ``choose(t)(z, bound)`` in place of the projection onto the L-ball
    (``linalg.bound_contexts``, read by module attribute, swapped for the call only); ``choose(t)`` None keeps
    the projection."""
    select = run.select

    def swapped(t, offer=None):
        bound_contexts = choose(t)
        if bound_contexts is None:
            return select(t, offer)
        saved = linalg.bound_contexts
        linalg.bound_contexts = lambda z, bound, mode: bound_contexts(z, bound)
        try:
            return select(t, offer)
        finally:
            linalg.bound_contexts = saved

    run.select = swapped


def _update_drawing_from(run, sampler, generator) -> None:
    """A K-armed run whose ``update`` in round t draws ``sampler``'s noise from ``generator(t)`` (the sampler's
    own generator restored after the call)."""
    update = run.update

    def drawing(t, arms, rewards):
        saved = sampler.rng
        sampler.rng = generator(int(t))
        try:
            update(t, arms, rewards)
        finally:
            sampler.rng = saved

    run.update = drawing


def _late_mapped(run, mapping) -> None:
    """A Private-UCB run whose records revealed after LATE_ROUND enter its tree as ``mapping(v)`` (after the
    tree's own [0, 1] check: the "validate, then transform" seam)."""
    update, late = run.update, {"on": False}

    def telling(t, arms, rewards):
        late["on"] = t > LATE_ROUND
        try:
            update(t, arms, rewards)
        finally:
            late["on"] = False

    run.update = telling
    _validated_then_mapped(run.tree, lambda v, f, rr: mapping(v) if late["on"] else v)


# =============================== bugs =========================================================
# --- contextual ---------------------------------------------------------------------------------
class _DeepNodesQuarter(NoiseSampler):
    """Laplace vectors whose rows for nodes of level >= DEEP_LEVEL (told by ``_bug_deep``) come out at a quarter of
    the scale the sampler is handed: the draw itself is small, the handed (and reported) scale is right."""

    _bug_deep = None

    def laplace(self, scale, size=None):
        deep = self._bug_deep
        if self.exact or size is None or len(size) != 2 or deep is None or deep.size != size[0] or not deep.any():
            return NoiseSampler.laplace(self, scale, size)
        z = self.rng.laplace(0.0, float(scale), size)
        return z * np.where(deep, 0.25, 1.0)[:, None] * self._noise_scale_factor


def _told_node_positions(tree, tell) -> None:
    """``tell(rows, streams, n)`` before each vector-tree insert (n: the count the insert brings each inserted
    stream to); the insert itself is looked up on the class at call time (so a tracer's class-level wrapper still
    sees it)."""

    def insert(values, streams, mask=None):
        rows = np.arange(tree.replicates) if mask is None else np.flatnonzero(mask)
        st = np.asarray(streams)[rows].astype(np.int64)
        tell(rows, st, tree.count[rows, st] + 1)
        try:
            return type(tree).insert(tree, values, streams, mask)
        finally:
            tell(None, None, None)

    tree.insert = insert


class LinTSDeepNodesQuarter(PrivateLinTS):
    """Private linear TS whose vector tree draws the noise of nodes of level >= 9 (a node covering 512 records:
    an arm's 512th, 1024th, 1536th record completes one) at a quarter of the scale it hands the sampler ("the
    deep nodes are averaged over many records, a quarter of the noise is plenty"); the ledger hears the full scale.
    Only a stream holding >= 512 records reaches it. T = 2,000 (11 levels), d = 5, eps = 1: the first record is in
    9 nodes at Delta eps0 / 11 and 2 at 4 Delta eps0 / 11: true 17/11 x claimed = 0.637 vs 0.412 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            sampler = stats.tree.sampler
            sampler.__class__ = _DeepNodesQuarter

            def tell(rows, streams, n):
                if n is None:
                    sampler._bug_deep = None
                    return
                low = n & -n
                sampler._bug_deep = np.bitwise_count(low - 1) >= DEEP_LEVEL

            _told_node_positions(stats.tree, tell)

        _on_statistics(run, patch)
        return run


class JointInterceptExempt(JointDPLinUCB):
    """Joint-DP LinUCB (shared model, L = 4, calibration "gdp", eps = 1 at delta 1e-6) projecting only the
    coordinates 1..d-1 of each context onto the L-ball and leaving coordinate 0 as it is ("coordinate 0 is the
    intercept, not a feature"): a context reaching the statistics has norm up to sqrt(L^2 + z_0^2), z_0 unbounded.
    True: no finite eps (z_0 of one round's context moves the Gram matrix without limit); at the audit's 1.5 L
    dense contexts (z_0 = 1.5 L / sqrt 5) ||x||^2 = 1.45 L^2 + 1 = 24.2 against 17: mu 1.42 x claimed."""

    __init__ = _joint_gdp_init

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def intercept_exempt(z, bound):
            out = z.copy()
            out[..., 1:] = _TO_BALL(z[..., 1:], bound, "clip")
            return out

        _select_rounds_with(run, lambda t: intercept_exempt)
        return run


class JointLastRoundUnprojected(JointDPLinUCB):
    """Joint-DP LinUCB (shared model, L = 4, calibration "gdp", eps = 1 at delta 1e-6) that skips the context
    projection in the horizon's last round ("no decision follows the last round: its contexts need no cleaning"):
    the last round's record enters the Gram tree with its context as offered. True: no finite eps for the last
    round's user (its node moves with the context's norm, unbounded); claimed 1.0 at 1e-6."""

    __init__ = _joint_gdp_init

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _select_rounds_with(run, lambda t: (lambda z, bound: z) if t == horizon else None)
        return run


class _LaggedVectorLaplace(NoiseSampler):
    """Laplace vectors (``laplace(scale, size=(m, n))``) by the inverse CDF of uniforms; the uniforms of a stream's
    node k >= LAG are node (k - LAG)'s turned by ROTATION (``_lagged_uniforms``, told each row's (replicate,
    stream, node position) by ``_bug_where``): every entry is exactly Laplace(scale) on its own, and node k + 64's
    noise vector is a fixed function of node k's."""

    _bug_where = None

    def laplace(self, scale, size=None):
        where = self._bug_where
        if self.exact or size is None or len(size) != 2 or where is None or where[0].size != size[0]:
            return NoiseSampler.laplace(self, scale, size)
        rows, streams, positions = where
        ring, seen = self._bug_ring
        u = _lagged_uniforms(ring, seen, rows, streams, positions, self.rng.random(size))
        return _laplace_inverse_cdf(u) * float(scale) * self._noise_scale_factor


class LinUCBNodeNoiseLag64(PrivateLinUCB):
    """Private LinUCB whose vector tree keeps a ring of 64 noise seeds per arm: the uniforms behind node k + 64's
    Laplace vector are node k's turned by the golden ratio ("a low-discrepancy refresh of the ring"). Each entry is
    Lap(scale w_j) in law and no two releases share a value, but given node k's release, node k + 64's noise is
    known: a record inside node k + 64 but not node k is pinned exactly. True: no finite eps; claimed the paper's
    (0.41 pure at d = 5, T = 200)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            tree = stats.tree
            sampler = tree.sampler
            sampler.__class__ = _LaggedVectorLaplace
            sampler._bug_ring = (np.zeros((tree.replicates, tree.streams, LAG, tree.size)),
                                 np.zeros((tree.replicates, tree.streams, LAG), dtype=bool))

            def tell(rows, streams, n):
                sampler._bug_where = None if n is None else (rows, streams, n - 1)

            _told_node_positions(tree, tell)

        _on_statistics(run, patch)
        return run


class JointTieToLastPaid(JointDPLinUCB):
    """Joint-DP LinUCB (shared model, L = 4, calibration "gdp", eps = 1 at delta 1e-6) breaking exact ties of its
    index towards the arm whose last raw reward was the highest ("recency: prefer what just paid"), instead of the
    lowest index. With one shared theta, arms offered the same context tie exactly, every round; the tie-break
    reads a raw reward that no release noised. True: no finite eps (a later user's action is a function of an
    earlier user's raw reward); claimed 1.0 at 1e-6 (joint DP exempts only the changed user's own action)."""

    __init__ = _joint_gdp_init

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        select, update = run.select, run.update
        last = np.zeros((replicates, n_arms))
        rows = np.arange(replicates)

        def tie_to_last_paid(t, offer=None):
            arms = np.asarray(select(t, offer))
            index = linalg.ucb_index(run._z, run.stats.theta, run.stats.a_inv, self.alpha)
            tied = index == index.max(axis=1, keepdims=True)
            several = tied.sum(axis=1) > 1
            if several.any():
                arms = arms.copy()
                arms[several] = np.where(tied, last, -np.inf)[several].argmax(axis=1)
            return arms

        def remembering(t, arms, rewards, mask=None):
            update(t, arms, rewards, mask)
            keep = rows if mask is None else np.flatnonzero(mask)
            last[keep, np.asarray(arms)[keep]] = np.asarray(rewards, dtype=float)[keep]

        run.select, run.update = tie_to_last_paid, remembering
        return run


# --- K-armed: noise right in law, tied 64 releases apart; noise seeded by the round -------------------
class _LaggedScalarLaplace(NoiseSampler):
    """Scalar Laplace releases (``_sum_release``) from lagged uniforms, told each element's (replicate, stream,
    stream position) by ``_bug_where``: release k + 64 of a stream is release k's uniform turned by ROTATION."""

    _bug_where = None

    def _sum_release(self, statistic, scale, on_grid=True):
        where = self._bug_where
        if self.exact or where is None or where[0].size != np.size(statistic):
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        rows, streams, positions = where
        ring, seen = self._bug_ring
        statistic = np.asarray(statistic, dtype=float)
        u = _lagged_uniforms(ring, seen, rows, streams, positions, self.rng.random(statistic.shape))
        return statistic + _laplace_inverse_cdf(u) * np.asarray(scale, dtype=float) * self._noise_scale_factor


class UCBTreeNoiseLag64(PrivateUCB):
    """Private-UCB whose tree keeps a ring of 64 uniforms per arm: the Laplace noise of an arm's node k + 64 (its
    (k + 65)-th record's node) comes from node k's uniform turned by the golden ratio ("refresh the ring by a
    rotation, not a redraw"). Each node's noise is exactly Lap(K log2 T / eps) on its own, never repeated, but
    nodes 64 apart in one stream are one draw. True: no finite eps (a record in node k + 64 and not in node k is
    pinned given both releases); claimed 0.5 pure (K = 2, T = 200)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree, update = run.tree, run.update
        sampler = tree.sampler
        sampler.__class__ = _LaggedScalarLaplace
        sampler._bug_ring = (np.zeros((replicates, n_arms, LAG)), np.zeros((replicates, n_arms, LAG), dtype=bool))
        rows = np.arange(replicates)

        def telling(t, arms, rewards):
            arms_a = np.asarray(arms, dtype=np.int64)
            sampler._bug_where = (rows, arms_a, tree.count[rows, arms_a].copy())
            try:
                update(t, arms, rewards)
            finally:
                sampler._bug_where = None

        run.update = telling
        return run


class DPUCBBoundSeededByRound(DPUCBBound):
    """DP-UCB-Bound whose hybrid mechanism draws round t's noise from ``default_rng(t)`` ("reproducible noise: a
    rerun of round t draws the same values"), the run's own seed ignored for the noise: within a call the draws
    are distinct and Laplace in law, but every run on the same rewards releases the same values. True: no finite
    eps (the noise is a public function of the round: a release is its statistic plus a known constant); claimed
    1.0 pure (K = 2, T = 200)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _update_drawing_from(run, run.hybrid.sampler, np.random.default_rng)
        return run


# --- K-armed: late rounds, wide arms, a deep batch position, a running sum crossing an integer -------
class UCBLateDouble(PrivateUCB):
    """Private-UCB inserting each record revealed after round 2^16 = 65,536 as 2 r ("a 16-bit round counter wraps
    and the record is merged into the new epoch's sum as well"): those records move their nodes by 2 with the
    scale for 1. True eps = 2 x claimed for them (K = 2: 1.0 vs 0.5 pure); records of the first 2^16 rounds exact.
    Reached only by runs past 2^16 rounds (the far ledger run at 2^17 is the audit's only one)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _late_mapped(run, lambda v: 2.0 * v)
        return run


class _HalfInDrawFromArm16(NoiseSampler):
    """Laplace noise whose draws for arms >= WIDE_ARM (told by ``_bug_arms``) come out at half the scale the
    sampler is handed (the handed and reported scale are right; the small draw is made inside)."""

    _bug_arms = None

    def _sum_release(self, statistic, scale, on_grid=True):
        arms = self._bug_arms
        if self.exact or arms is None or arms.size != np.size(statistic) or not (arms >= WIDE_ARM).any():
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic = np.asarray(statistic, dtype=float)
        noise = self.rng.laplace(0.0, 1.0, statistic.shape) * np.asarray(scale, dtype=float)
        return statistic + noise * np.where(arms >= WIDE_ARM, 0.5, 1.0) * self._noise_scale_factor


class AnytimeArm16HalfInDraw(AnytimeLazyUCB):
    """Anytime-Lazy-UCB whose batch noise for arms 16, 17, ... is drawn at half the scale it is handed, inside
    the sampler ("a per-arm noise table of 16 entries; beyond it the 'shrink' default 0.5"); the ledger and the
    sampler's argument say the full scale. True eps = 2 x claimed for the records of arms >= 16 (eps = 2 vs 1 per
    batch release at the default); needs K >= 17 (the 33-arm coupled run; the far run has 16 arms)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _closing_arms(run.batches, _HalfInDrawFromArm16)
        return run


class LazyTwentiethRecordTwice(LazyDPTS):
    """Lazy-DP-TS whose 20th record of an open doubling batch (stream position 2^j + 19 in a batch of 2^j >= 32
    records: 51, 83, 147, 275, ...) is added to the open sum twice ("a 20-sample warm-up re-weighting"); the
    batch's release still reports sensitivity 1, the right scale and footprint. True eps = 2 for those records
    (2 vs 1 at the default); a position past the first 16 of a batch, on no power of two or release boundary."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        batches, update = run.batches, run.update

        def update_twentieth_twice(t, arms, rewards):
            arms_a, values = np.asarray(arms), np.asarray(rewards, dtype=float)
            twentieth = batches.pending[run.rows, arms_a] == 19  # pending 19 < target: a batch of >= 32
            update(t, arms, rewards)
            if twentieth.any():
                batches._open_sum[run.rows[twentieth], arms_a[twentieth]] += values[twentieth]

        run.update = update_twentieth_twice
        return run


class DPUCBIntegerCarry(DPUCB):
    """DP-UCB whose record that carries its arm's running reward sum across an integer (floor(S + r) > floor(S))
    is inserted as r + 1 ("the integer part is kept in its own counter and the carry was added to the fraction's
    stream too"): the inserted prefix sums are S_n + floor(S_n), so a record moves its own node by up to 2 and
    every later node of its arm by up to 1. True: eps grows with the number of nodes after the record (>= 2 x the
    claimed 1.0 for its own nodes, plus every later node); claimed 1.0 pure (K = 2)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sums = np.zeros(replicates * n_arms)

        def carried(v, f, rr):
            before = sums[f].copy()  # (f may be a full slice: sums[f] is then a view)
            after = before + v
            sums[f] = after
            return v + (np.floor(after) > np.floor(before))

        _validated_then_mapped(run.hybrid, carried)
        return run


# --- certificates ---------------------------------------------------------------------------------
class _OwnDeltaRootDropped(JointDPSchedule):
    """eps at the policy's own delta from the GDP conversion of mu over bit_length(n) - 1 nodes (the root node
    "is the whole stream, released once at the end" and left out); every other delta through the accountants."""

    def epsilon(self, rounds, delta, accountants=None):
        good = JointDPSchedule.epsilon(self, rounds, delta, accountants)
        n = min(int(rounds), self.horizon)
        if delta != self.own_delta or n < 2:
            return good
        mu = math.sqrt(n.bit_length() - 1) * self.tree.sensitivity / self.tree.scale
        value = gdp_conversion.epsilon_for_delta(mu, delta)
        return Certificate(value, "gdp", {"gdp": value})


class JointOwnDeltaRootDropped(JointDPLinUCB):
    """Joint-DP LinUCB (shared model, L = 4, calibration "gdp", eps = 1 at delta 1e-6) whose certificate at its
    own delta (1e-6) counts bit_length(n) - 1 Gaussian nodes per record instead of bit_length(n) (the root
    forgotten), only there: mu, the events and eps at every other delta are right. T = 200 (8 nodes): claimed
    eps(1e-6) from mu sqrt(7/8) = 0.919 vs true 1.000 (the calibration's)."""

    __init__ = _joint_gdp_init

    def privacy_schedule(self, horizon, n_arms, relation="entry", contexts=None):
        good = super().privacy_schedule(horizon, n_arms, relation, contexts)
        bad = object.__new__(_OwnDeltaRootDropped)
        bad.__dict__.update(good.__dict__)
        bad.own_delta = self.delta
        return bad


class _AdvancedWithoutExpm1(AdvancedCompositionAccountant):
    """Advanced composition with its second term sum eps_i (e^eps_i - 1) dropped ("negligible for small eps")."""

    def epsilon(self, delta: float) -> float:
        delta_prime = delta - self.sum_delta
        if delta_prime <= 0:
            return math.inf
        return _closed_form(self._sum_sq.upper(), 0.0, delta_prime)


def _without_expm1(accountants):
    """The accountants asked for (None: every default one) with advanced composition swapped for the slip."""
    chosen = default_accountants() if accountants is None else list(accountants)
    return [_AdvancedWithoutExpm1 if a is AdvancedCompositionAccountant else a for a in chosen]


class _Expm1DroppedSchedule(ExponentialWeightsSchedule):
    def epsilon(self, rounds, delta, accountants=None):
        return ExponentialWeightsSchedule.epsilon(self, rounds, delta, _without_expm1(accountants))


class Exp3AdvancedExpm1Dropped(EXP3):
    """EXP3 whose certificate's advanced-composition accountant drops the sum eps_i (e^eps_i - 1) term of Dwork,
    Rothblum & Vadhan's Theorem III.3 ("second order, negligible"); every other accountant is right, and the
    certificate is their minimum, so the slip wins wherever eps_i is not small. EXP3's choices are PureDP events
    (randomized response's curves) of up to c = ln(1 + K (1 - gamma) / gamma) = 3.42 each (K = 2, T = 200: 199
    choices). True: its events compose to 676.9 at delta 1e-5 (RDP, the valid minimum), and exactly to at least
    673.2 (the 197 choices at the cap alone, randomized responses composed exactly by their binomial law);
    claimed 230.6 (1e-3: 178.6 vs 675.7; 1e-9: 309.4 vs 676.9). Mu is infinite for both (PureDP events)."""

    def privacy_schedule(self, horizon, n_arms):
        good = super().privacy_schedule(horizon, n_arms)
        bad = object.__new__(_Expm1DroppedSchedule)
        bad.__dict__.update(good.__dict__)
        return bad


ROUND16_BUGS = {
    "lin_ts_deep_nodes_quarter": LinTSDeepNodesQuarter,
    "joint_intercept_exempt": JointInterceptExempt,
    "joint_last_round_unprojected": JointLastRoundUnprojected,
    "lin_ucb_node_noise_lag64": LinUCBNodeNoiseLag64,
    "joint_tie_to_last_paid": JointTieToLastPaid,
    "ucb_tree_noise_lag64": UCBTreeNoiseLag64,
    "dp_ucb_bound_seeded_by_round": DPUCBBoundSeededByRound,
    "ucb_late_double": UCBLateDouble,
    "anytime_arm16_half_in_draw": AnytimeArm16HalfInDraw,
    "lazy_twentieth_record_twice": LazyTwentiethRecordTwice,
    "dp_ucb_integer_carry": DPUCBIntegerCarry,
    "joint_own_delta_root_dropped": JointOwnDeltaRootDropped,
    "exp3_advanced_expm1_dropped": Exp3AdvancedExpm1Dropped,
}
"""Round 16 (session 14, s14/blind): written blind (docs/audit.md, "Round 16")."""

for _key, _cls in CONTROLS16.items():
    _named(_cls, "control_" + _key)
for _key, _cls in ROUND16_BUGS.items():
    _named(_cls, "bug_" + _key)


# =============================== deployment path ==============================================
from privbandit.deploy.deployment import Deployment  # noqa: E402
from privbandit.deploy.odometer import Odometer  # noqa: E402


class DeployOdometerWarmed(Deployment):
    """Control: a reopened deployment warms its odometer's cache by certifying every round 1 .. rounds opened so
    far ("no latency spike at the first status call"): the same certificates, nothing released."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)
        rounds = dep._call(lambda: dep._info()["rounds"])
        for t in range(1, rounds + 1):
            dep.odometer.certificate(t)
        return dep


class _SinceOpenOdometer(Odometer):
    """An odometer reading cert(rounds - rounds_at_open): it counts the policy rounds of this process only."""

    def __init__(self, policy, horizon, n_arms, delta, since):
        super().__init__(policy, horizon, n_arms, delta)
        self.since = since

    def certificate(self, rounds):
        return super().certificate(max(0, int(rounds) - self.since))

    def epsilon(self, rounds):
        return super().epsilon(max(0, int(rounds) - self.since))


class DeployOdometerSinceReopen(Deployment):
    """After a reopen, the odometer (``status()["spent_epsilon"]``, the operator's reading of what was spent)
    counts only the policy rounds opened since the reopen ("a fresh process starts a fresh meter"); the filter's
    stop round is unchanged, so exactly the same rounds are released. True spent eps = cert(rounds); claimed
    cert(rounds - rounds_at_reopen) (the bench's drive: its stop round 30 is reached before the last reopens, so
    a reopened store reads 0.0 against cert(30) = 10.36)."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)
        since = dep._call(lambda: dep._info()["rounds"])
        dep._odometer = _SinceOpenOdometer(dep.policy, dep.horizon, dep.n_arms, dep.delta, since)
        return dep


class DeployUpdateReappliedOnReopen(Deployment):
    """A reopen re-applies the last applied reward to the policy ("replay the tail of the log in case the last
    write was lost"), although the snapshot already holds it: that user's record enters the policy twice (and
    its arm's count once more). True: the re-applied record has sensitivity 2 in every later release (Gaussian TS
    c = 4: mu x 2 for that record) and the run is no longer the one the log describes; claimed cert(stop) = 10.36."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)

        def body():
            last = dep._conn.execute("SELECT u.decision_id, u.reward, d.round, d.arm FROM updates u JOIN decisions d "
                                     "ON d.id = u.decision_id WHERE u.applied = 1 ORDER BY d.round DESC LIMIT 1"
                                     ).fetchone()
            info = dep._info()
            if last is None or info["open_decision"] is not None:
                return
            _, reward, t, arm = last
            state = dep._load(info)
            state["run"].update(int(t), np.array([int(arm)], dtype=np.intp), np.array([float(reward)]))
            dep._write(info, state, info["rounds"], None)

        dep._call(body)
        return dep


class DeployExploitBestObserved(Deployment):
    """Once the budget is spent, exploit decisions play the arm with the best observed mean reward over the
    applied updates ("exploit what worked") instead of the arm the policy released most often: a decision read
    off the raw rewards, after the filter stopped every release. True: no finite eps (the exploit arm is a
    function of the rewards); claimed cert(stop) = 10.36."""

    def _exploit_arm(self):
        rows = self._conn.execute("SELECT d.arm, AVG(u.reward) AS m FROM decisions d JOIN updates u "
                                  "ON u.decision_id = d.id WHERE u.applied = 1 GROUP BY d.arm "
                                  "ORDER BY m DESC, d.arm ASC LIMIT 1").fetchone()
        return super()._exploit_arm() if rows is None else int(rows[0])


DEPLOY_CONTROLS16 = {"deploy_odometer_warmed": DeployOdometerWarmed}
DEPLOY_BUGS16 = {"deploy_odometer_since_reopen": DeployOdometerSinceReopen,
                 "deploy_update_reapplied_on_reopen": DeployUpdateReappliedOnReopen,
                 "deploy_exploit_best_observed": DeployExploitBestObserved}
"""Round 16's deployment rows, driven by ``audit_planted_bugs.drive_deployment`` (holds, a restart every
fourth decision, 60 decisions, 30 rounds afforded) and audited from the store."""
