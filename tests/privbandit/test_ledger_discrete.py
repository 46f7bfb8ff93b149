"""Exact (floating-point-safe) mode records discrete Laplace releases as ``DiscreteLaplace`` events
(issue 12 item 4): their own, slightly worse, curves -- never the continuous Laplace's."""

import numpy as np

from accountants import DiscreteLaplace, Laplace, best_epsilon
from privbandit.ledger import Ledger
from privbandit.mechanisms.laplace import LaplaceRelease
from privbandit.mechanisms.tree import TreeMechanism


def _leaves(exact: bool):
    led = Ledger(1, 2, tight=True)
    rel = LaplaceRelease(np.random.default_rng(0), led, "one-off", exact=exact)
    rel.release(np.array([0.5, 0.25]), np.array([4.0, 4.0]), np.array([1.0, 1.0]), 0, np.array([0, 1]), 0, 3)
    leaves, _ = led.record_multisets(0)
    return leaves


def test_exact_mode_records_discrete_laplace():
    (leaf,) = _leaves(exact=True)
    assert isinstance(leaf, DiscreteLaplace)
    assert leaf.pure_epsilon() <= 1.0 / 4.0 * (1 + 1e-5)  # grid-rounded scale and sensitivity


def test_float_mode_records_continuous_laplace():
    (leaf,) = _leaves(exact=False)
    assert type(leaf) is Laplace and leaf == Laplace(4.0, 1.0)


def test_exact_mode_schedule_uses_discrete_curve():
    tree = TreeMechanism(1, 1, epsilon=1.0, horizon=64, rng=np.random.default_rng(0), ledger=None, exact=True)
    sched = tree.privacy_schedule(64)
    (leaf,) = sched.grouped()
    assert isinstance(leaf, DiscreteLaplace)
    float_tree = TreeMechanism(1, 1, epsilon=1.0, horizon=64, rng=np.random.default_rng(0), ledger=None)
    # the discrete curve is never certified below the continuous one
    assert best_epsilon(sched, 1e-6).value >= best_epsilon(float_tree.privacy_schedule(64), 1e-6).value
