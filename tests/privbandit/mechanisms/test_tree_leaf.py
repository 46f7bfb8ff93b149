"""The tree's schedule leaf is built once per scale (session 17): a live certificate asks the tree's
schedule at each of its ~50 checkpoints, and each build ran the sampler's numpy checks (~0.1 ms, most of
Private-UCB's memoised certificate, which every run pays). The events, and so the certificates, are
the ones built afresh, bit for bit, in float and exact mode."""

import numpy as np
import pytest

import privbandit.mechanisms.tree as tree_mod
from privbandit.engine import default_checkpoints
from privbandit.mechanisms._base import laplace_event
from privbandit.policies.private_ucb import PrivateUCBSchedule


@pytest.mark.parametrize("exact", [False, True])
def test_live_certificate_builds_the_leaf_once_and_certifies_the_same(monkeypatch, exact):
    rounds = np.union1d(default_checkpoints(5000), [5000])
    built = []

    def counting(*args, **kwargs):
        built.append(args[1])
        return laplace_event(*args, **kwargs)

    monkeypatch.setattr(tree_mod, "laplace_event", counting)
    schedule = PrivateUCBSchedule(0.7, 5000, 4, exact)
    cached = schedule.live_certificates(rounds, 1e-6)
    assert len(built) == 1, built  # one scale, one build (before: one per checkpoint and more)
    assert schedule.events(5000) == schedule.events(5000)

    # the same schedule with every leaf built afresh: the same events and certificates, bit for bit
    def fresh(self):
        return laplace_event(self.sampler, self.scale, 1.0, on_grid=True)

    monkeypatch.setattr(tree_mod.TreeMechanism, "_leaf", fresh)
    reference = PrivateUCBSchedule(0.7, 5000, 4, exact)
    for r in (1, 7, 5000):
        assert reference.events(r) == schedule.events(r)
    want = reference.live_certificates(rounds, 1e-6)
    assert cached[0].tobytes() == want[0].tobytes()
    assert cached[1] == want[1]

