"""Reward sources: stochastic arms on [0, 1], fixed reward tables and adversarial sequences."""

from privbandit.envs.adversarial import (OneMemoryAdversary, auer_lower_bound, shifted_stochastic,
                                         switching_best_arm)
from privbandit.envs.base import Environment, EnvironmentRun, StationaryEnvironment
from privbandit.envs.stochastic import Bernoulli, ClippedGaussian, TruncatedExponential
from privbandit.envs.table import RewardTable
from privbandit.envs.tape import RewardTape

__all__ = ["Environment", "EnvironmentRun", "StationaryEnvironment", "Bernoulli", "ClippedGaussian",
           "TruncatedExponential", "RewardTable", "RewardTape",
           "OneMemoryAdversary", "auer_lower_bound", "shifted_stochastic", "switching_best_arm"]
