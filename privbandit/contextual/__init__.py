"""Contextual linear bandits: context environments, the supervised-to-bandit reduction, logged
feedback with replay evaluation (Li, Chu, Langford & Wang 2011), and the batched linear algebra of
the linear policies (``privbandit.policies.linear``)."""

from privbandit.contextual.contract import Feedback, Offer
from privbandit.contextual.envs import DATASETS, ClassificationBandit, LinearContextual, load_dataset
from privbandit.contextual.simulate import simulate_contextual

__all__ = ["ClassificationBandit", "DATASETS", "Feedback", "LinearContextual", "Offer", "load_dataset",
           "simulate_contextual"]
