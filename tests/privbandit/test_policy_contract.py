"""Every registered policy honours the policy contract (DESIGN.md): validated parameters, a
monotone data-independent schedule for private policies, no certificate above the paper's claim."""

import inspect

import numpy as np
import pytest

from privbandit.policies import REGISTRY

PRIVATE = sorted(name for name, cls in REGISTRY.items() if cls.private)


def _default(cls):
    return cls(b=2, c=4.0) if cls.__name__ == "GaussianTS" else cls()


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_constructible_with_params_and_repr(name):
    pol = _default(REGISTRY[name])
    assert pol.params()["policy"] == name
    assert name in REGISTRY and repr(pol).startswith(type(pol).__name__)


@pytest.mark.parametrize("name", PRIVATE)
def test_schedule_is_monotone_and_within_the_claim(name):
    pol, K, T = _default(REGISTRY[name]), 3, 4_096
    sched = pol.privacy_schedule(T, K)
    rounds = [1, 2, 3, 16, 100, 1_000, 2_048, 4_096]
    eps = np.array([sched.epsilon(t, 1e-6).value for t in rounds])
    assert np.all(np.isfinite(eps)) and np.all(eps >= 0)
    assert np.all(np.diff(eps) >= -1e-9 * np.maximum(1.0, eps[1:])), eps
    claim = pol.claimed_epsilon(T, K, 1e-6)
    if claim is not None:
        assert eps[-1] <= claim * (1 + 1e-9)


@pytest.mark.parametrize("name", PRIVATE)
def test_bad_parameters_name_themselves(name):
    cls = REGISTRY[name]
    params = inspect.signature(cls).parameters
    if "epsilon" in params:
        for bad in (0.0, -1.0, float("nan"), True):
            with pytest.raises(ValueError, match="epsilon"):
                cls(epsilon=bad)
    if "exact" in params:
        with pytest.raises(ValueError, match="exact"):
            cls(exact="no")
