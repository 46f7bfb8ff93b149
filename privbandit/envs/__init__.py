"""Reward sources: stochastic arms on [0, 1] and fixed reward tables."""

from privbandit.envs.base import Environment, EnvironmentRun, StationaryEnvironment
from privbandit.envs.stochastic import Bernoulli, ClippedGaussian, TruncatedExponential
from privbandit.envs.table import RewardTable
from privbandit.envs.tape import RewardTape

__all__ = ["Environment", "EnvironmentRun", "StationaryEnvironment", "Bernoulli", "ClippedGaussian",
           "TruncatedExponential", "RewardTable", "RewardTape"]
