"""The white-box audit of the contextual policies (privbandit/audit/contextual.py): coupled runs on
contextual tapes at the relation each policy certifies, the tracer's vector-tree node statistics,
planted bugs of six kinds beside the clean policies, and the command's contextual path."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

import _contextual_planted as planted
from privbandit.audit.contextual import _run, audit_relation, contextual_tapes, contextual_whitebox_audit
from privbandit.audit.tracing import ReleaseTracer
from privbandit.ledger import Ledger
from privbandit.mechanisms.vector_tree import VectorTreeMechanism
from privbandit.policies import REGISTRY
from privbandit.policies.linear import JointDPLinUCB, PrivateLinTS, PrivateLinUCB

T, R, D = 64, 32, 3


@pytest.mark.parametrize("cls", [PrivateLinUCB, PrivateLinTS, JointDPLinUCB])
def test_clean_contextual_policies_are_consistent(cls):
    res = contextual_whitebox_audit(cls(dim=D), T, 2, R, seed=0)
    width = (D + 1) * (D + 2) // 2 - (0 if cls is JointDPLinUCB else 1)  # Mishra's tree drops r^2
    assert res.verdict == "CONSISTENT" and not res.findings, res.summary()
    assert res.releases == R * T * width  # every node of every round traced and paired
    assert {g.family for g in res.groups} == {"gaussian" if cls is JointDPLinUCB else "laplace"}


def test_relations_are_the_certified_ones():
    assert audit_relation(PrivateLinUCB(dim=D), T, 2) == "entry"
    assert audit_relation(PrivateLinTS(dim=D), T, 2) == "entry"
    assert audit_relation(JointDPLinUCB(dim=D), T, 2) == "round"
    assert audit_relation(JointDPLinUCB(dim=D, model="disjoint"), T, 2) == "entry"
    with pytest.raises(ValueError, match="relation='round'.*entry-level"):
        contextual_whitebox_audit(PrivateLinUCB(dim=D), T, 2, R, relation="round")
    with pytest.raises(ValueError, match="does not take contexts"):
        from privbandit.policies import GaussianTS
        contextual_whitebox_audit(GaussianTS(), T, 2, R)


def test_joint_dp_lets_the_changed_users_own_action_differ_and_nothing_else():
    """Round-level neighbours (a user's contexts and rewards): with D's releases replayed, the changed
    user's own action differs on some replicates (joint DP allows it) and no other round's does."""
    policy = JointDPLinUCB(dim=D)
    ctx, ctx_p, rew, rew_p, h = contextual_tapes(2, D, 1.0, T, R, "round", np.random.default_rng(3))
    norms = np.linalg.norm(ctx, axis=3)
    short = (np.arange(R) // 4) % 4 == 2  # round 11: norms uniform in [L/10, L] on one group of four in four
    assert np.any(ctx != ctx_p) and np.allclose(norms[~short], 1.0)
    assert np.all((norms[short] >= 0.1 * (1 - 1e-9)) & (norms[short] <= 1.0)) and not np.allclose(norms[short], 1.0)
    seed = np.random.SeedSequence(0)
    act_d, tr_d = _run(policy, ctx, rew, seed)
    act_p, _ = _run(policy, ctx_p, rew_p, seed, replay=tr_d.draws)
    own = act_d[np.arange(R), h - 1] != act_p[np.arange(R), h - 1]
    others = act_d != act_p
    others[np.arange(R), h - 1] = False
    assert own.any() and not others.any()
    assert contextual_whitebox_audit(policy, T, 2, R, seed=0, relation="entry").verdict == "CONSISTENT"


def test_tracer_logs_each_vector_node_with_its_exact_dyadic_sum():
    ledger = Ledger(3, 2, tight=True)
    w = np.array([1.0, 2.0, 4.0])
    vt = VectorTreeMechanism(3, 2, 3, horizon=16, noise="laplace", scale=1.5, sensitivity=1.0, weights=w,
                             rng=np.random.default_rng(0), ledger=ledger, name="vt")
    rng = np.random.default_rng(1)
    values = rng.random((9, 3, 3))
    streams = rng.integers(0, 2, (9, 3))
    with ReleaseTracer(ledger) as tr:
        for t in range(9):
            vt.insert(values[t], streams[t])
    rel = tr.released()
    assert not tr.unreported() and not tr.orphans and not tr.vector_mismatch
    for i in range(0, rel["stat"].size, 3):  # one node: its records [lo, hi) of its stream, / weights
        r, s, lo, hi = (int(rel[k][i]) for k in ("rep", "st", "lo", "hi"))
        mine = values[streams[:, r] == s, r][lo:hi].sum(axis=0) / w
        assert np.allclose(rel["stat"][i:i + 3], mine) and rel["vector"][i]
        assert np.all(rel["out"][i:i + 3] != rel["stat"][i:i + 3])  # noise was added


def test_tree_output_check_sees_noise_added_outside_the_nodes():
    ledger = Ledger(4, 2, tight=True)
    vt = VectorTreeMechanism(4, 2, 3, horizon=8, noise="gaussian", scale=2.0, sensitivity=1.0,
                             rng=np.random.default_rng(0), ledger=ledger, name="vt")
    with ReleaseTracer(ledger) as tr:
        for t in range(4):
            vt.insert(np.full((4, 3), 0.5), np.array([t % 2, 0, 1, 1]))
            vt.noise_sum[:, 0] *= 0.5  # planted: the released sums lose half their noise
    assert tr.vector_mismatch


@pytest.mark.parametrize("cls, check", [
    (planted.HalfScaleDraw, "noise_report"),
    (planted.HalvedAfterDraw, "tree_output"),
    (planted.ExactGram, "decisions"),
    (planted.NoRewardSensitivity, "sensitivity"),
    (planted.LeavesUnreported, "unreported"),
    (planted.SeededByData, "noise_coupling"),
    (planted.NodesShifted, "footprint_position"),
])
def test_planted_contextual_bugs_are_refuted(cls, check):
    res = contextual_whitebox_audit(cls(dim=D), T, 2, R, seed=0)
    assert res.verdict == "VIOLATION" and check in res.checks, res.summary()


def _cli(argv):
    from privbandit.audit.cli import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["audit", *argv])
    return args.func(args)


def test_audit_command_gives_contextual_policies_a_verdict(monkeypatch, capsys):
    rc = _cli(["private_lin_ts", "--param", "dim=3", "--tier", "smoke", "--horizon", "64"])
    last = capsys.readouterr().out.splitlines()[-1]
    assert rc == 0 and last.startswith("VERDICT: CONSISTENT") and "relation 'entry'" in last
    monkeypatch.setitem(REGISTRY, "bug_exactgram", planted.ExactGram)
    rc = _cli(["bug_exactgram", "--param", "dim=3", "--tier", "smoke", "--horizon", "64"])
    last = capsys.readouterr().out.splitlines()[-1]
    assert rc == 1 and "white-box decisions" in last
    with pytest.raises(ValueError, match="--exact needs the black-box audits"):
        _cli(["joint_dp_lin_ucb", "--tier", "smoke", "--exact"])
    with pytest.raises(ValueError, match="dim must be a whole number"):
        _cli(["private_lin_ucb", "--param", "dim=0", "--tier", "smoke"])


def test_contexts_past_the_bound_are_audited_through_the_clipping(monkeypatch):
    """Half the replicates' contexts are 1.5 L long (the policy projects them onto the ball): a policy
    that skips the projection is refuted by the sensitivity of its Gram matrix (joint DP: round-level
    neighbours; its L2 change grows with ||z||^2)."""
    from privbandit.contextual import linalg

    assert contextual_whitebox_audit(JointDPLinUCB(dim=D), T, 2, R, seed=0).verdict == "CONSISTENT"
    monkeypatch.setattr(linalg, "bound_contexts", lambda z, bound, mode: z)  # planted: never clipped
    res = contextual_whitebox_audit(JointDPLinUCB(dim=D), T, 2, R, seed=0)
    assert res.verdict == "VIOLATION" and res.checks == ["sensitivity"], res.summary()


def test_a_policy_that_rejects_long_contexts_gets_contexts_inside_the_ball():
    res = contextual_whitebox_audit(PrivateLinTS(dim=D, contexts="reject"), T, 3, R, seed=1)
    assert res.verdict == "CONSISTENT" and not res.findings, res.summary()


def test_audit_command_writes_a_contextual_summary(tmp_path, capsys):
    # regression (session 8): the contextual summary.json once referenced the graph audits' results
    import json

    pytest.importorskip("matplotlib")
    rc = _cli(["private_lin_ucb", "--param", "dim=3", "--tier", "smoke", "--horizon", "64", "--out", str(tmp_path)])
    capsys.readouterr()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert rc == 0 and summary["contextual"] and summary["whitebox_graph"] is None
