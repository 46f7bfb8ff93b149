"""Context environments: rewards in [0, 1], regret against the best arm, the classification reduction."""

import numpy as np
import pytest

from privbandit.contextual import DATASETS, ClassificationBandit, LinearContextual, load_dataset


@pytest.mark.parametrize("model", ["disjoint", "shared"])
def test_linear_environment_rewards_and_regret(model):
    env = LinearContextual(4, 6, noise=0.2, model=model)
    run = env.start(50, np.random.default_rng(0))
    for t in range(1, 4):
        offer = run.offer(t)
        z = offer.contexts
        assert z.shape == (50, 6, 4)
        np.testing.assert_allclose(np.linalg.norm(z, axis=2), 1.0)
        means = env.means(z)
        assert means.min() >= 0 and means.max() <= 1
        best = means.argmax(axis=1)
        np.testing.assert_allclose(run.regret(t, best), 0.0)
        arms = np.zeros(50, dtype=int)
        np.testing.assert_allclose(run.regret(t, arms), means.max(axis=1) - means[:, 0])
        fb = run.feedback(t, arms)
        assert fb.rewards.min() >= 0 and fb.rewards.max() <= 1
    if model == "disjoint":  # every arm sees the user's context
        np.testing.assert_array_equal(z[:, 0], z[:, 5])


def test_linear_environment_noise_free_rewards_are_the_means():
    env = LinearContextual(3, 2, noise=0.0)
    run = env.start(5, np.random.default_rng(1))
    z = run.offer(1).contexts
    np.testing.assert_allclose(run.rewards(1, np.ones(5, dtype=int)), env.means(z)[:, 1])


def test_linear_environment_validation():
    for kwargs, name in [(dict(dim=1, n_arms=3), "dim"), (dict(dim=3, n_arms=1), "n_arms"),
                         (dict(dim=3, n_arms=2, noise=-1.0), "noise"), (dict(dim=3, n_arms=2, model="x"), "model"),
                         (dict(dim=3, n_arms=2, theta=np.ones((2, 3))), "theta")]:
        with pytest.raises(ValueError, match=name):
            LinearContextual(**kwargs)
    run = LinearContextual(3, 2).start(2, np.random.default_rng(0))
    run.offer(1)
    with pytest.raises(ValueError, match="round of the last offer"):
        run.rewards(2, np.zeros(2, dtype=int))


@pytest.mark.parametrize("name", DATASETS)
def test_bundled_datasets_load_with_bounded_norm(name):
    x, y = load_dataset(name)
    assert x.shape[0] == y.size and np.linalg.norm(x, axis=1).max() == pytest.approx(1.0)
    assert np.all(x[:, 0] > 0)  # the intercept


def test_classification_reduction_rewards_the_label():
    env = ClassificationBandit("iris")
    assert (env.n_arms, env.dim) == (3, 5)
    run = env.start(200, np.random.default_rng(0))
    run.offer(1)
    labels = env.labels[run._idx]
    np.testing.assert_array_equal(run.rewards(1, labels), 1.0)
    np.testing.assert_array_equal(run.regret(1, (labels + 1) % 3), 1.0)
    assert ClassificationBandit("digits", dim=20).dim == 20
    with pytest.raises(ValueError, match="dim"):
        ClassificationBandit("iris", dim=9)
    with pytest.raises(ValueError, match="dataset"):
        load_dataset("mnist")
