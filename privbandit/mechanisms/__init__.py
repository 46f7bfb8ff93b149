"""Instrumented noise mechanisms: every noise draw of the toolkit happens here and is reported to a
:class:`privbandit.ledger.Ledger` with its footprint (DESIGN.md, "Privacy semantics").

All mechanisms are vectorised over (replicates, streams), take their randomness from a
``numpy.random.Generator`` and draw noise through :mod:`privbandit.mechanisms.sampling`.
"""

from privbandit.mechanisms.fresh_batch import FreshBatchMean
from privbandit.mechanisms.gaussian import GaussianRelease
from privbandit.mechanisms.hybrid import HybridMechanism
from privbandit.mechanisms.interval import IntervalMean
from privbandit.mechanisms.laplace import LaplaceRelease
from privbandit.mechanisms.logarithmic import LogarithmicMechanism
from privbandit.mechanisms.sampling import GRID, NoiseSampler
from privbandit.mechanisms.split import SplitMechanism
from privbandit.mechanisms.tree import TreeMechanism

__all__ = [
    "FreshBatchMean", "GaussianRelease", "HybridMechanism", "IntervalMean", "LaplaceRelease",
    "LogarithmicMechanism", "GRID", "NoiseSampler", "SplitMechanism", "TreeMechanism",
]
