"""The tracer on the release paths added after the white-box audit was built: the shared ``_insert``
behind ``insert``/``insert_pulled``, ``LaplaceRelease.release_records`` (the adversarial policies) and
the vector tree of the contextual policies. For each: the clean path pairs every draw with its report
(so the white-box checks see it), and a planted release that skips its report is caught."""

import numpy as np

from privbandit.audit.tracing import ReleaseTracer
from privbandit.audit.whitebox import whitebox_audit
from privbandit.ledger import Ledger
from privbandit.mechanisms.laplace import LaplaceRelease
from privbandit.mechanisms.tree import TreeMechanism
from privbandit.mechanisms.vector_tree import VectorTreeMechanism
from privbandit.policies import DPEXP3Lap

from _whitebox_planted import HalvedRecordNoise


def _tree_run(pulled: bool, silent_redraw: bool = False):
    ledger = Ledger(3, 2, tight=True)
    tree = TreeMechanism(3, 2, epsilon=1.0, horizon=16, rng=np.random.default_rng(0), ledger=ledger)
    if silent_redraw:  # planted on the shared path: every insert also re-noises the sums, unreported
        insert = tree._insert

        def noisy_insert(v, f, rr, kk):
            insert(v, f, rr, kk)
            tree.noisy_sum[rr, kk] = tree.sampler._sum_release(tree.noisy_sum[rr, kk], tree.scale)

        tree._insert = noisy_insert
    rewards = np.random.default_rng(1).random((5, 3))
    with ReleaseTracer(ledger) as tr:
        for t in range(5):
            arms = np.array([t % 2, 0, 1])
            if pulled:
                tree.insert_pulled(arms, rewards[t])
            else:
                values, mask = np.zeros((3, 2)), np.zeros((3, 2), dtype=bool)
                values[np.arange(3), arms], mask[np.arange(3), arms] = rewards[t], True
                tree.insert(values, mask)
    return tr


def test_insert_pulled_and_insert_trace_the_same_releases():
    a, b = _tree_run(True), _tree_run(False)
    ra, rb = a.released(), b.released()
    assert ra["stat"].size == 15 and not a.unreported() and not a.orphans
    for key in ("stat", "out", "lo", "hi", "param", "node"):
        assert np.array_equal(ra[key], rb[key]), key


def test_a_silent_release_on_the_shared_insert_path_is_unreported():
    assert _tree_run(True, silent_redraw=True).unreported()
    assert _tree_run(False, silent_redraw=True).unreported()


def test_release_records_pairs_each_record_with_its_footprint():
    ledger = Ledger(2, 2, tight=True)
    rel = LaplaceRelease(np.random.default_rng(0), ledger, "x")
    with ReleaseTracer(ledger) as tr:
        out = rel.release_records(np.array([0.25, 0.75]), 2.0, np.array([0, 1]), np.array([1, 0]), np.array([4, 7]))
    r = tr.released()
    assert np.array_equal(r["out"], out) and r["stat"].tolist() == [0.25, 0.75]
    assert r["lo"].tolist() == [4, 7] and r["hi"].tolist() == [5, 8] and r["param"].tolist() == [2.0, 2.0]
    assert not tr.unreported() and not tr.orphans
    unreported = LaplaceRelease(np.random.default_rng(0), None, "x")  # planted: no ledger to tell
    with ReleaseTracer(ledger) as tr2:
        unreported.release_records(np.array([0.5]), 2.0, np.array([0]), np.array([0]), np.array([0]))
    assert tr2.unreported()


def test_release_records_policy_clean_and_with_halved_noise():
    # DP-EXP3-Lap releases every observed reward through release_records: 64 x 150 releases, Laplace
    # residuals tested by DKW at alpha 1e-4 (the halved scale has distance 1/8, far above the
    # critical value ~0.02 at n ~ 9,600; the clean twin passes unless a 1e-4 event occurs, fixed seed)
    bug = whitebox_audit(HalvedRecordNoise(), 150, 2, 64, seed=0)
    assert bug.verdict == "VIOLATION" and "noise_law" in bug.checks, bug.summary()
    twin = whitebox_audit(DPEXP3Lap(), 150, 2, 64, seed=0)
    assert twin.verdict == "CONSISTENT" and twin.releases == 64 * 150, twin.summary()


def _vector_run(noise: str, silent: bool = False):
    ledger = Ledger(4, 2, tight=True)
    vt = VectorTreeMechanism(4, 2, 3, horizon=8, noise=noise, scale=2.0, sensitivity=1.0,
                             rng=np.random.default_rng(0), ledger=ledger, name="vt")
    with ReleaseTracer(ledger) as tr:
        for t in range(6):
            vt.insert(np.full((4, 3), 0.5), np.array([t % 2, 0, 1, 1]))
            if silent:  # planted: one extra vector of node noise, never reported
                vt.noise_sum[:, 0] += vt._draw(4)
    return tr


def test_vector_tree_nodes_pair_with_their_reports():
    for noise in ("laplace", "gaussian"):
        tr = _vector_run(noise)
        r = tr.released()
        assert r["stat"].size == 6 * 4 * 3 and not tr.unreported() and not tr.orphans, noise
        assert set(r["width"].tolist()) == {3} and r["entry"].tolist()[:3] == [0, 1, 2]
        assert _vector_run(noise, silent=True).unreported(), noise
