"""Reward sources: stochastic arms on [0, 1], fixed reward tables, and arms with graph feedback."""

from privbandit.envs.base import Environment, EnvironmentRun, StationaryEnvironment
from privbandit.envs.graph import GraphFeedback
from privbandit.envs.graphs import BarabasiAlbert, DisjointCliques, ErdosRenyi, GraphModel, PlantedPartition
from privbandit.envs.stochastic import Bernoulli, ClippedGaussian, TruncatedExponential
from privbandit.envs.table import RewardTable
from privbandit.envs.tape import RewardTape

__all__ = ["Environment", "EnvironmentRun", "StationaryEnvironment", "Bernoulli", "ClippedGaussian",
           "TruncatedExponential", "RewardTable", "RewardTape", "GraphFeedback", "GraphModel", "ErdosRenyi",
           "BarabasiAlbert", "PlantedPartition", "DisjointCliques"]
