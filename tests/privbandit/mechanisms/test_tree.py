"""Tree (binary) mechanism: exact arithmetic with noise off, node membership, horizon."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandit.ledger import Ledger
from privbandit.mechanisms import HybridMechanism, SplitMechanism, TreeMechanism


def _noise_off(m):
    m.sampler._noise_scale_factor = 0.0
    return m


@settings(max_examples=40, deadline=None)
@given(horizon=st.one_of(st.integers(1, 300), st.sampled_from([1, 2, 4, 8, 16, 64, 128, 256])),
       data=st.data())
def test_every_prefix_sum_exact_with_noise_off(horizon, data):
    n = data.draw(st.integers(1, horizon))
    seed = data.draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    R, K = 2, 3
    m = _noise_off(TreeMechanism(R, K, epsilon=0.7, horizon=horizon, rng=rng, ledger=Ledger(R, K)))
    vals = rng.integers(0, 1025, size=(n, R, K)) / 1024.0  # dyadic: sums are exact in float64
    masks = rng.random((n, R, K)) < 0.8
    truth = np.zeros((R, K))
    for t in range(n):
        m.insert(vals[t], masks[t])
        truth += np.where(masks[t], vals[t], 0.0)
        assert np.array_equal(m.noisy_sum, truth)
    assert np.array_equal(m.count, masks.sum(axis=0))


@pytest.mark.parametrize("cls", [HybridMechanism, SplitMechanism])
def test_unbounded_mechanisms_exact_with_noise_off(cls):
    rng = np.random.default_rng(5)
    m = _noise_off(cls(2, 2, epsilon=1.0, rng=rng, ledger=Ledger(2, 2)))
    truth = np.zeros((2, 2))
    for _ in range(300):
        v = rng.integers(0, 9, size=(2, 2)) / 8.0
        mask = rng.random((2, 2)) < 0.9
        m.insert(v, mask)
        truth += np.where(mask, v, 0.0)
        assert np.array_equal(m.noisy_sum, truth)


@pytest.mark.parametrize("horizon", [1, 2, 3, 7, 8, 9, 64, 100, 128])
def test_each_record_in_at_most_L_nodes_and_one_draw_per_insert(horizon):
    L = int(np.floor(np.log2(horizon))) + 1
    led = Ledger(1, 1, tight=True)
    m = TreeMechanism(1, 1, epsilon=1.0, horizon=horizon, rng=np.random.default_rng(0), ledger=led)
    for _ in range(horizon):
        m.insert(np.ones((1, 1)), np.ones((1, 1), dtype=bool))
    assert m.levels == L
    assert led.draws[0, 0] == horizon  # each insert completes exactly one node
    _, counts = led.record_multisets(0)
    assert counts.sum(axis=1).max() == L  # the first record is in the nodes [0, 2^j), j < L
    assert led.redraws() == []
    assert led.realized_pure_epsilon()[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"horizon"):
        m.insert(np.ones((1, 1)), np.ones((1, 1), dtype=bool))


def test_power_of_two_horizon_has_floor_log2_plus_one_levels():
    m = TreeMechanism(1, 1, epsilon=2.0, horizon=64, rng=np.random.default_rng(0), ledger=Ledger(1, 1))
    assert m.levels == 7 and m.scale == pytest.approx(3.5)


def test_unmasked_streams_are_untouched():
    led = Ledger(2, 2)
    m = TreeMechanism(2, 2, epsilon=1.0, horizon=10, rng=np.random.default_rng(0), ledger=led)
    mask = np.array([[True, False], [False, False]])
    m.insert(np.full((2, 2), 0.5), mask)
    assert led.draws.tolist() == [[1, 0], [0, 0]]
    assert m.count.tolist() == [[1, 0], [0, 0]]
    assert m.noisy_sum[0, 1] == 0.0 and m.noisy_sum[1, 0] == 0.0


@pytest.mark.parametrize("pulled", [True, False])
@pytest.mark.parametrize("replicates", [1, 3])
def test_a_full_tree_refuses_the_insert_and_changes_nothing(pulled, replicates):
    """The horizon check runs in the core's kernel (binary_prepare): the insert that would exceed it
    raises before any state -- counts, outputs, nodes, ledger, random stream -- changes."""
    import copy

    book = Ledger(replicates, 2, tight=True)
    m = TreeMechanism(replicates, 2, epsilon=1.0, horizon=3, rng=np.random.default_rng(0), ledger=book)
    arms = np.zeros(replicates, dtype=np.intp)
    for _ in range(3):
        m.insert_pulled(arms, np.full(replicates, 0.5))
    before = copy.deepcopy((m.count, m.noisy_sum, m._core.nodes, m.sampler.rng.bit_generator.state))
    n_releases = {key: len(value) for key, value in book.releases().items()}
    with pytest.raises(ValueError, match=r"horizon: a stream already holds 3 items"):
        if pulled:
            m.insert_pulled(arms, np.full(replicates, 0.5))
        else:
            mask = np.zeros((replicates, 2), dtype=bool)
            mask[:, 0] = True
            m.insert(np.full((replicates, 2), 0.5), mask)
    after = (m.count, m.noisy_sum, m._core.nodes, m.sampler.rng.bit_generator.state)
    for x, y in zip(before[:3], after[:3]):
        assert np.array_equal(x, y)
    assert before[3] == after[3]
    assert {key: len(value) for key, value in book.releases().items()} == n_releases
    m.insert_pulled(np.ones(replicates, dtype=np.intp), np.full(replicates, 0.5))  # the other stream has room
    assert m.count[:, 1].tolist() == [1] * replicates


def test_tree_count_and_output_are_its_cores_state_across_pickles():
    """The tree's count and noisy_sum are its core's tau and total (one state, no copy kept in step),
    after a pickle round trip too; a state pickled when they were separate arrays (and the core's
    flat views were pickled as copies) re-links and resumes bit for bit."""
    import pickle

    data = np.random.default_rng(4)
    m = TreeMechanism(4, 3, epsilon=1.0, horizon=500, rng=np.random.default_rng(3), ledger=None)
    for _ in range(37):
        m.insert_pulled(data.integers(0, 3, 4), data.random(4))
    assert m.count is m._core.tau and m.noisy_sum is m._core.total
    loaded = pickle.loads(pickle.dumps(m))
    assert loaded.count is loaded._core.tau and loaded.noisy_sum is loaded._core.total
    # the old layout: separate count / noisy_sum arrays and the core's views pickled as copies
    old = pickle.loads(pickle.dumps(m))
    old.__dict__["count"], old.__dict__["noisy_sum"] = m.count.copy(), m.noisy_sum.copy()
    core_state = dict(old._core.__dict__)
    core_state["_tau_flat"], core_state["_total_flat"] = m.count.reshape(-1).copy(), m.noisy_sum.reshape(-1).copy()
    core_state["tau"], core_state["total"] = np.zeros_like(m.count), np.zeros_like(m.noisy_sum)  # stale 2-D arrays
    core = type(old._core).__new__(type(old._core))
    core.__setstate__(core_state)
    state = dict(old.__dict__, _core=core)
    resumed = type(m).__new__(type(m))
    resumed.__setstate__(state)
    assert resumed.count is resumed._core.tau
    for _ in range(60):
        arms, vals = data.integers(0, 3, 4), data.random(4)
        for mech in (m, loaded, resumed):
            mech.insert_pulled(arms, vals)
        assert np.array_equal(m.noisy_sum.view(np.int64), loaded.noisy_sum.view(np.int64))
        assert np.array_equal(m.noisy_sum.view(np.int64), resumed.noisy_sum.view(np.int64))
        assert np.array_equal(m.count, resumed.count)
