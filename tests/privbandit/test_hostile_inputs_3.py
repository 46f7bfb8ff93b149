"""Hostile inputs, third round (session 6): every constructor parameter of every registered policy,
fed values at the edges of the numbers (a whole number beyond int64, the largest and a subnormal
float, infinities, NaN, -1, a bool, a string). Each must either be refused at construction with a
ValueError naming the parameter, or give a policy that runs (a short simulate on an environment
offering what the policy requires) without any other exception.

Before the fixes of this round, four of them surfaced mid-run or as the wrong error:
DPUCBInt(interval=2**70) and PrivateTS(random_pulls=2**70) an OverflowError from int64,
DPUCBInt(rate=1e-320) an OverflowError at construction, GaussianTS(c=1e308) / c=1e-320 the GDP
conversion's "mu must lie in (0, inf)" naming the internal mu.
"""

from __future__ import annotations

import inspect
import warnings

import networkx as nx
import numpy as np
import pytest

from privbandit.contextual import LinearContextual
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.envs.graph import GraphFeedback
from privbandit.policies import REGISTRY, DPUCBInt, GaussianTS, PrivateTS

HOSTILE = [2**70, 1e308, 5e-324, float("inf"), float("nan"), -1, True, "1"]


def _environment(policy):
    requires = frozenset(getattr(policy, "requires", frozenset()))
    if "contexts" in requires:
        params = policy.params()
        model = "shared" if params.get("model") == "shared" else "disjoint"
        return LinearContextual(params.get("dim") or 3, 3, noise=0.1, model=model)
    if "graph" in requires:
        return GraphFeedback(Bernoulli([0.6, 0.4, 0.5]), nx.path_graph(3))
    return Bernoulli([0.6, 0.4])


def _parameters(cls):
    return [name for name, p in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_parameter_at_the_edges_is_named_or_runs(name):
    cls = REGISTRY[name]
    for parameter in _parameters(cls):
        for value in HOSTILE:
            try:
                policy = cls(**{parameter: value})
            except ValueError as exc:
                assert parameter in str(exc), (name, parameter, value, str(exc))
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a warning is not the defect looked for here
                try:
                    simulate(policy, _environment(policy), 24, 2, seed=0, progress=False)
                except ValueError as exc:
                    # a run may refuse what the constructor could not check alone (horizon vs b), but
                    # then by the parameter's name, never by an internal one
                    assert parameter in str(exc) or "horizon" in str(exc), (name, parameter, value, str(exc))


def test_the_four_defects_of_this_round():
    with pytest.raises(ValueError, match=r"interval must be a whole number in \[1, 1e\+18\]"):
        DPUCBInt(interval=2**70)
    with pytest.raises(ValueError, match=r"rate must lie in \[1e-18, 1\]"):
        DPUCBInt(rate=1e-320)
    for c in (1e308, 5e-324):
        with pytest.raises(ValueError, match=r"c must lie in \[1e-100, 1e\+100\]"):
            GaussianTS(c=c)
    # a random-pull count beyond the horizon is the horizon (no run outlasts it): no overflow, and
    # the same pulls as random_pulls = horizon
    a = simulate(PrivateTS(random_pulls=2**70), Bernoulli([0.6, 0.4]), 60, 3, seed=1, progress=False)
    b = simulate(PrivateTS(random_pulls=60), Bernoulli([0.6, 0.4]), 60, 3, seed=1, progress=False)
    assert np.array_equal(a.arms, b.arms)
    # the formula's count at the epsilon floor (ln^3 T / 1e-300) wrapped to a negative int64
    counts = PrivateTS(epsilon=1e-300).random_pull_count(1000, np.array([1.0, 1e-200]))
    assert counts.tolist() == [1000, 1000]
