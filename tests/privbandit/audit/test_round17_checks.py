"""Session 15 (s15/reach): the auditor's documented blind spots closed as classes -- each new check here with a
planted case of our own (not round 16's or round 17's, which are written blind elsewhere) that the runs before it
miss, beside its clean twin.

* the contextual long run tests the noise law (``privbandit.audit.cli.contextual_long_run``): a draw made small
  inside the sampler at deep vector-tree levels only;
* check 5e (seed dependence) in the contextual main run and the graph feedback run (``seed_runs``);
* a coupled window whose round clock jumps far out (``privbandit.audit.fast_forward.clock_jump_audit``).
"""

from __future__ import annotations

import numpy as np

from privbandit.audit.cli import contextual_long_run
from privbandit.audit.contextual import contextual_whitebox_audit
from privbandit.audit.fast_forward import clock_jump_audit, fast_forward_audit, jump_rounds
from privbandit.audit.graph import graph_whitebox_audit
from privbandit.audit.whitebox import whitebox_audit
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.mechanisms.vector_tree import VectorTreeMechanism
from privbandit.policies import DPUCB, PrivateUCB
from privbandit.policies.graph_private import DPUCBN
from privbandit.policies.linear import JointDPLinUCB, PrivateLinUCB


# --- the noise law at deep vector-tree levels ---------------------------------------------------------------
class _ShrunkDeepSampler(NoiseSampler):
    """Laplace vector draws whose rows flagged ``deep`` come out at 0.3 of the handed scale (inside the draw: the
    handed scale, hence the ledger's, is right)."""

    deep = None

    def laplace(self, scale, size=None):
        out = NoiseSampler.laplace(self, scale, size)
        if self.deep is not None and size is not None and len(size) == 2 and self.deep.size == size[0]:
            out = out * np.where(self.deep, 0.3, 1.0)[:, None]
        return out


class _DeepShrunkTree(VectorTreeMechanism):
    """A vector tree telling its sampler which inserted rows complete a node of level >= 8 (256 records)."""

    def insert(self, values, streams, mask=None):
        rows = np.arange(self.replicates) if mask is None else np.flatnonzero(mask)
        n = self.count[rows, np.asarray(streams)[rows].astype(np.int64)] + 1
        self.sampler.deep = np.bitwise_count((n & -n) - 1) >= 8
        try:
            return VectorTreeMechanism.insert(self, values, streams, mask)
        finally:
            self.sampler.deep = None


class LinUCBDeepLevelsShrunk(PrivateLinUCB):
    """Private LinUCB whose vector-tree nodes of level >= 8 are drawn at 0.3 of their scale (an arm's 256th,
    512th, 768th ... record completes one): only a stream of >= 256 records reaches it -- the contextual main run
    (T = 200) never does, the long run (T = 2,000) does, but tested for exact checks only before session 15."""

    name = "t_lin_ucb_deep_levels_shrunk"

    def tree(self, n_arms, replicates, horizon, rng, ledger):
        tree = super().tree(n_arms, replicates, horizon, rng, ledger)
        tree.__class__ = _DeepShrunkTree
        tree.sampler.__class__ = _ShrunkDeepSampler
        return tree


def test_long_run_law_refutes_deep_level_noise():
    bug, clean = LinUCBDeepLevelsShrunk(), PrivateLinUCB()
    # before: the long run's exact checks alone, and the main run's law at T = 200, see nothing
    assert contextual_whitebox_audit(bug, 2000, 2, 8, seed=1, law=False).verdict == "CONSISTENT"
    assert contextual_whitebox_audit(bug, 200, 2, 64, seed=0).verdict == "CONSISTENT"
    res = contextual_long_run(bug, 2000, 2, 8, 1)
    assert res.verdict == "VIOLATION" and res.checks == ["noise_law"], res.findings
    deep = [g for g in res.groups if g.rejected]
    assert deep and min(g.octave for g in deep) >= 8
    assert contextual_long_run(clean, 2000, 2, 8, 1).verdict == "CONSISTENT"


# --- check 5e beyond the K-armed runs ----------------------------------------------------------------------------
class JointFixedGenerator(JointDPLinUCB):
    """Joint-DP LinUCB drawing its Gaussian tree noise from a generator it seeds itself with a constant (the run's
    generator ignored): each draw right in law and independent of the others, and the coupled runs share the seed
    anyway -- anyone can recompute the noise and subtract it."""

    name = "t_joint_fixed_generator"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        return super().start(n_arms, replicates, horizon, np.random.default_rng(2025), ledger)


def test_contextual_seed_check():
    bug, clean = JointFixedGenerator(), JointDPLinUCB()
    assert contextual_whitebox_audit(bug, 60, 2, 16, seed=0).verdict == "CONSISTENT"
    res = contextual_whitebox_audit(bug, 60, 2, 16, seed=0, seed_runs=8)
    assert res.verdict == "VIOLATION" and res.checks == ["seed"], res.findings
    assert contextual_whitebox_audit(clean, 60, 2, 16, seed=0, seed_runs=8).verdict == "CONSISTENT"


class DPUCBNSideSeededByRound(DPUCBN):
    """DP-UCB-N whose hybrid mechanism draws from ``default_rng(t)`` in rounds where some replicate observes more
    than its own arm (side observations): on the edgeless graph (the K-armed runs, check 5e included) the run's
    own generator is always used; with side observations the noise is a function of the round."""

    name = "t_dp_ucb_n_side_seeded_by_round"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        learn, sampler = run.learn, run.hybrid.sampler

        def learning(t, observed, values):
            saved = sampler.rng
            if np.asarray(observed).sum(axis=1).max() > 1:
                sampler.rng = np.random.default_rng(int(t))
            try:
                learn(t, observed, values)
            finally:
                sampler.rng = saved

        run.learn = learning
        return run


def test_graph_seed_check():
    bug, clean = DPUCBNSideSeededByRound(), DPUCBN()
    # the K-armed run (the edgeless graph) with its check 5e, and the graph run without it, see nothing
    assert whitebox_audit(bug, 100, 2, 32, seed=0).verdict == "CONSISTENT"
    assert graph_whitebox_audit(bug, 60, 2, 16, seed=0).verdict == "CONSISTENT"
    res = graph_whitebox_audit(bug, 60, 2, 16, seed=0, seed_runs=8)
    assert res.verdict == "VIOLATION" and res.checks == ["seed"], res.findings
    assert graph_whitebox_audit(clean, 60, 2, 16, seed=0, seed_runs=8).verdict == "CONSISTENT"


# --- a round clock that jumps far out ---------------------------------------------------------------------------
class DPUCBSixteenBitWrap(DPUCB):
    """DP-UCB whose hybrid mechanism takes the round's items twice over in the first four rounds of every block of
    2^16 rounds past the first (t >= 2^16, t mod 2^16 < 4: "a 16-bit round counter wrapped, the new epoch's first
    rounds are merged twice"),
    still declared at sensitivity 1. Rounds 65,536 .. 65,539 are the first such rounds: past every coupled run
    (the fast-forward window ends at 2^15 + 512), and no threshold -- the rounds after are exact again."""

    name = "t_dp_ucb_sixteen_bit_wrap"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        update, hybrid, state = run.update, run.hybrid, {"t": 0}

        def insert(v, f, rr, kk):  # the validated entries (after the [0, 1] check)
            wrapped = state["t"] >= 65536 and state["t"] % 65536 < 4
            return type(hybrid)._insert(hybrid, v * 2.0 if wrapped else v, f, rr, kk)

        def updating(t, arms, rewards):
            state["t"] = int(t)
            update(t, arms, rewards)

        hybrid._insert = insert
        run.update = updating
        return run


class UCBRefusesJumps(PrivateUCB):
    """Private-UCB that insists on consecutive rounds (a policy is not promised a jumping clock)."""

    name = "t_ucb_refuses_jumps"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        select, last = run.select, {"t": 0}

        def selecting(t):
            if t != last["t"] + 1:
                raise ValueError(f"round {t} after round {last['t']}")
            last["t"] = t
            return select(t)

        run.select = selecting
        return run


SMALL_JUMP = dict(prefix=256, window=16)


def test_jump_rounds():
    rounds = jump_rounds(256, 16)
    assert rounds.size == 256 + 4 * 16 and np.all(np.diff(rounds) > 0)
    assert rounds[255] == 256 and rounds[256] == 2**16 - 8 and rounds[-1] == 2**31 + 7


def test_clock_jump_refutes_a_wrapping_round_counter():
    bug, clean = DPUCBSixteenBitWrap(), DPUCB()
    # the fast-forward window (2^15 .. 2^15 + 511) holds no round with t mod 2^16 < 4
    assert fast_forward_audit(bug, 2**15, 512, 2, 16, seed=12).verdict == "CONSISTENT"
    res = clock_jump_audit(bug, 2, 16, seed=13, **SMALL_JUMP)
    assert res.verdict == "VIOLATION" and "sensitivity" in res.checks, res.findings
    assert clock_jump_audit(clean, 2, 16, seed=13, **SMALL_JUMP).verdict == "CONSISTENT"


def test_clock_jump_refused_is_skipped_not_reported():
    res = clock_jump_audit(UCBRefusesJumps(), 2, 8, seed=0, **SMALL_JUMP)
    assert res.verdict == "INCONCLUSIVE" and res.error is None and not res.findings
    assert any("outside its contract" in n for n in res.notes)
