"""Contextual linear bandits: context environments, the supervised-to-bandit reduction, logged
feedback with replay evaluation (Li, Chu, Langford & Wang 2011), and the batched linear algebra of
the linear policies (``privbandit.policies.linear``). Contextual runs use the engine's feedback
contract (docs/feedback.md): ``privbandit.simulate(policy, env, ...)``."""

from privbandit.contextual.envs import DATASETS, ClassificationBandit, LinearContextual, load_dataset
from privbandit.contextual.replay import LoggedData, ReplayResult, ips_value, load_log, replay, uniform_log

__all__ = ["ClassificationBandit", "DATASETS", "LinearContextual", "LoggedData", "ReplayResult", "ips_value",
           "load_dataset", "load_log", "replay", "uniform_log"]
