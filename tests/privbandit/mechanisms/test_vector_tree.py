"""Vector tree mechanism: exact sums plus node noise, node footprints in the ledger, validation."""

import numpy as np
import pytest

from accountants.events import Gaussian, PureDP
from privbandit.ledger import Ledger
from privbandit.mechanisms.vector_tree import VectorTreeMechanism


def _tree(noise="laplace", horizon=8, ledger=None, replicates=2, streams=3, **kw):
    params = dict(scale=2.0, sensitivity=1.5, rng=np.random.default_rng(0), ledger=ledger, name="vt")
    params.update(kw)
    return VectorTreeMechanism(replicates, streams, 4, horizon=horizon, noise=noise, **params)


def test_footprints_are_the_dyadic_nodes_and_each_is_one_release():
    book = Ledger(2, 3, tight=True)
    tree = _tree(ledger=book)
    streams = np.array([1, 2])
    for _ in range(8):
        tree.insert(np.ones((2, 4)), streams)
    rel = book.releases()
    mine = (rel["replicate"] == 0)
    assert set(rel["stream"][mine]) == {1}
    spans = list(zip(rel["lo"][mine].tolist(), rel["hi"][mine].tolist()))
    assert spans == [(0, 1), (0, 2), (2, 3), (0, 4), (4, 5), (4, 6), (6, 7), (0, 8)]
    assert np.all(rel["param"] == 2.0) and np.all(rel["sensitivity"] == 1.5)
    # hand-computed footprint: record 0 lies in the nodes [0,1), [0,2), [0,4), [0,8): 4 x 1.5 / 2
    np.testing.assert_allclose(book.realized_pure_epsilon(), 4 * 1.5 / 2.0)
    assert tree.privacy_schedule(8) == PureDP(0.75) * 4
    assert tree.privacy_schedule(7) == PureDP(0.75) * 3


def test_output_is_exact_sum_plus_the_alive_nodes():
    tree = _tree(horizon=16)
    vals = np.random.default_rng(3).random((5, 2, 4))
    for v in vals:
        tree.insert(v, np.array([0, 0]))
    np.testing.assert_allclose(tree.exact_sum[:, 0], vals.sum(axis=0))
    # 5 = 4 + 1: two alive nodes (levels 2 and 0), the others discarded
    alive = tree._nodes[:, 0]
    np.testing.assert_allclose(tree.noise_sum[:, 0], alive[:, 0] + alive[:, 2])
    assert np.all(alive[:, 1] == 0) and np.all(alive[:, 0] != 0) and np.all(alive[:, 2] != 0)
    np.testing.assert_allclose(tree.noisy_sum()[:, 0], vals.sum(axis=0) + tree.noise_sum[:, 0])


def test_mask_and_gaussian_records():
    book = Ledger(2, 3, tight=True)
    tree = _tree("gaussian", ledger=book)
    tree.insert(np.ones((2, 4)), np.array([0, 2]), np.array([False, True]))
    rel = book.releases()
    assert rel["replicate"].tolist() == [1] and rel["stream"].tolist() == [2] and rel["kind"].tolist() == [1]
    assert tree.count.tolist() == [[0, 0, 0], [0, 0, 1]]
    assert tree.privacy_schedule(3) == Gaussian(2.0, 1.5) * 2


def test_validation():
    with pytest.raises(ValueError, match="noise"):
        _tree("uniform")
    with pytest.raises(ValueError, match="weights"):
        _tree(weights=np.ones(3))
    with pytest.raises(ValueError, match="weights"):
        _tree("gaussian", weights=np.full(4, 2.0))
    tree = _tree(horizon=1)
    with pytest.raises(ValueError, match="values"):
        tree.insert(np.ones((2, 3)), np.array([0, 0]))
    with pytest.raises(ValueError, match="streams"):
        tree.insert(np.ones((2, 4)), np.array([0, 3]))
    tree.insert(np.ones((2, 4)), np.array([0, 0]))
    with pytest.raises(ValueError, match="horizon"):
        tree.insert(np.ones((2, 4)), np.array([0, 0]))
