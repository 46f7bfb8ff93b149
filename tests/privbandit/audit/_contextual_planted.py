"""Small planted bugs in the contextual policies for the white-box tests (one per check kind; the bench
suite, bench/audit_planted_bugs.py round 9, holds the CLI-sized versions). Each keeps its parent's
claim and patches the run's statistics when the run builds them (at its first select)."""

from __future__ import annotations

import math

import numpy as np

from privbandit.contextual import linalg
from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies.linear import JointDPLinUCB, PrivateLinTS, PrivateLinUCB


def _patched(cls, patch, name):
    """A subclass of ``cls`` whose runs apply ``patch(policy, stats)`` to their statistics."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = cls.start(self, n_arms, replicates, horizon, rng, ledger)
        build = run._start_statistics

        def patched(dim):
            build(dim)
            patch(self, run.stats)

        run._start_statistics = patched
        return run

    return type(name, (cls,), {"start": start, "name": "bug_" + name.lower()})


def _half_scale(policy, stats):  # node noise drawn at half the reported scale
    tree = stats.tree
    tree._draw = lambda m: tree.sampler.laplace(tree.scale / 2.0, size=(m, tree.size)) * tree.weights


def _halved_after(policy, stats):  # node noise halved after the (full-scale) draw
    draw = stats.tree._draw
    stats.tree._draw = lambda m: draw(m) * 0.5


def _exact_gram(policy, stats):  # index on the exact Gram matrix and b
    add = stats.add

    def exact_add(rows, groups, z, r):
        add(rows, groups, z, r)
        packed = stats.tree.exact_sum[rows, groups]
        packed = np.concatenate([packed, np.zeros((packed.shape[0], 1))], axis=1)
        a, b = linalg.split_gram(linalg.unpack(packed, stats.dim + 1), stats.dim)
        a_inv = np.linalg.inv(a + stats.diag * np.eye(stats.dim))
        stats.a_inv[rows, groups] = a_inv
        stats.theta[rows, groups] = np.einsum("bij,bj->bi", a_inv, b)

    stats.add = exact_add


def _no_reward_sensitivity(policy, stats):  # sqrt 2 L^2 declared: the reward's entries forgotten
    stats.tree.sensitivity = math.sqrt(2.0) * policy.bound ** 2


def _leaves_unreported(policy, stats):  # single-record nodes never reach the ledger
    book = stats.tree.ledger
    record = book._record_from_mechanism

    def dropped(rep, st, lo, hi, scale, sensitivity, mechanism, node, gaussian=False, discrete=False):
        keep = (np.asarray(hi) - np.asarray(lo)) > 1
        if keep.any():
            record(rep[keep], st[keep], lo[keep], hi[keep], scale, sensitivity, mechanism, node[keep],
                   gaussian=gaussian, discrete=discrete)

    book._record_from_mechanism = dropped


def _nodes_shifted(policy, stats):  # every node reported one record later, [lo + 1, hi + 1)
    book = stats.tree.ledger
    record = book._record_from_mechanism

    def shifted(rep, st, lo, hi, scale, sensitivity, mechanism, node, gaussian=False, discrete=False):
        record(rep, st, lo + 1, hi + 1, scale, sensitivity, mechanism, node, gaussian=gaussian, discrete=discrete)

    book._record_from_mechanism = shifted


def _seeded_by_data(policy, stats):  # node noise from a generator seeded by the exact sums
    tree = stats.tree
    insert = tree.insert

    def seeded(values, streams, mask=None):
        tree.sampler = NoiseSampler(np.random.default_rng(int(np.abs(tree.exact_sum).sum() * 1e6) % 2 ** 32))
        return insert(values, streams, mask)

    tree.insert = seeded


HalfScaleDraw = _patched(PrivateLinTS, _half_scale, "HalfScaleDraw")
HalvedAfterDraw = _patched(PrivateLinUCB, _halved_after, "HalvedAfterDraw")
ExactGram = _patched(PrivateLinUCB, _exact_gram, "ExactGram")
NoRewardSensitivity = _patched(JointDPLinUCB, _no_reward_sensitivity, "NoRewardSensitivity")
LeavesUnreported = _patched(JointDPLinUCB, _leaves_unreported, "LeavesUnreported")
SeededByData = _patched(PrivateLinTS, _seeded_by_data, "SeededByData")
NodesShifted = _patched(PrivateLinUCB, _nodes_shifted, "NodesShifted")
