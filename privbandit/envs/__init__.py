"""Reward sources: stochastic arms on [0, 1], fixed reward tables, adversarial sequences and arms
with graph feedback."""

from privbandit.envs.adversarial import (OneMemoryAdversary, auer_lower_bound, shifted_stochastic,
                                         switching_best_arm)
from privbandit.envs.base import Environment, EnvironmentRun, StationaryEnvironment
from privbandit.envs.graph import GraphFeedback
from privbandit.envs.graphs import BarabasiAlbert, DisjointCliques, ErdosRenyi, GraphModel, PlantedPartition
from privbandit.envs.stochastic import Bernoulli, ClippedGaussian, TruncatedExponential
from privbandit.envs.table import RewardTable
from privbandit.envs.tape import RewardTape

__all__ = ["Environment", "EnvironmentRun", "StationaryEnvironment", "Bernoulli", "ClippedGaussian",
           "TruncatedExponential", "RewardTable", "RewardTape",
           "OneMemoryAdversary", "auer_lower_bound", "shifted_stochastic", "switching_best_arm",
           "GraphFeedback", "GraphModel", "ErdosRenyi",
           "BarabasiAlbert", "PlantedPartition", "DisjointCliques"]
