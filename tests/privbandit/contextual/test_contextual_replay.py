"""Replay evaluation (Li et al. 2011) on the digits reduction, logs from files, IPS."""

import numpy as np
import pandas as pd
import pytest

from privbandit.contextual import ClassificationBandit
from privbandit.contextual.replay import LoggedData, ips_value, load_log, replay, uniform_log
from privbandit.ledger import Ledger
from privbandit.policies.linear import FixedLinear, PrivateLinUCB


@pytest.fixture(scope="module")
def digits():
    env = ClassificationBandit("digits", dim=20)
    centroids = np.stack([env.features[env.labels == a].mean(axis=0) for a in range(env.n_arms)])
    return env, FixedLinear(centroids)


def test_replay_of_a_fixed_policy_covers_its_on_policy_value(digits):
    # Under uniform logging the kept events are an i.i.d. sample of on-policy rounds (Li et al.
    # 2011, Thm 1): the mean kept reward is unbiased and its 95% normal interval (kept ~ 2000 events,
    # half-width ~ 0.016) covers the true value (the rule's accuracy over the dataset).
    env, rule = digits
    value = env.value(rule.choose)
    assert 0.7 < value < 0.95  # a non-trivial rule
    log = uniform_log(env, 20_000, seed=3)
    res = replay(rule, log, replicates=1, seed=4)
    assert 1700 < res.kept[0] < 2300  # about n / K events kept
    assert abs(res.value[0] - value) <= res.half_width[0]
    est, half = ips_value(rule.choose, log)
    assert abs(est - value) <= half


def test_replay_order_does_not_change_a_fixed_policy_estimate(digits):
    env, rule = digits
    log = uniform_log(env, 2_000, seed=1)
    res = replay(rule, log, replicates=3, seed=0)
    # a fixed rule keeps the same events in any order
    assert np.all(res.kept == res.kept[0]) and np.allclose(res.value, res.value[0])


def test_private_policy_under_replay_records_only_kept_events(digits):
    env, _ = digits
    log = uniform_log(env, 300, seed=2)
    book = Ledger(2, env.n_arms)
    res = replay(PrivateLinUCB(epsilon=1.0, dim=20), log, replicates=2, seed=0, ledger=book)
    np.testing.assert_array_equal(book.draws.sum(axis=1), res.kept)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_load_log_round_trip(tmp_path, suffix):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.random(20), "income": rng.random(20), "action": rng.integers(0, 3, 20),
                          "reward": rng.integers(0, 2, 20).astype(float), "propensity": np.full(20, 1 / 3)})
    path = tmp_path / f"log{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    log = load_log(path, n_arms=3)
    assert len(log) == 20 and log.uniform and log.contexts.shape == (20, 2)
    np.testing.assert_allclose(log.contexts[:, 1], frame["income"])
    only = load_log(path, context_columns=["income"], n_arms=3)
    assert only.contexts.shape == (20, 1)
    with pytest.raises(ValueError, match="context_columns"):
        load_log(path, context_columns=["height"])
    frame.drop(columns="propensity").to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ValueError, match="propensity"):
        load_log(tmp_path / "bad.csv")
    with pytest.raises(ValueError, match="path"):
        load_log(tmp_path / "log.json")


def test_logged_data_validation_and_non_uniform_logs():
    x = np.zeros((3, 2))
    with pytest.raises(ValueError, match="actions"):
        LoggedData(x, np.array([0, 1, 5]), np.zeros(3), np.full(3, 0.5), 2)
    with pytest.raises(ValueError, match="rewards"):
        LoggedData(x, np.array([0, 1, 1]), np.array([0, 2.0, 0]), np.full(3, 0.5), 2)
    with pytest.raises(ValueError, match="propensities"):
        LoggedData(x, np.array([0, 1, 1]), np.zeros(3), np.zeros(3), 2)
    skewed = LoggedData(x, np.array([0, 1, 1]), np.ones(3), np.array([0.9, 0.1, 0.1]), 2)
    with pytest.raises(ValueError, match="uniform"):
        replay(FixedLinear(np.eye(2)), skewed)
    est, _ = ips_value(lambda c: np.ones(3, dtype=int), skewed)
    assert est == pytest.approx((0 + 10 + 10) / 3)
