"""Every policy's ``epsilon`` is the privacy it certifies (issue 17): for every registered policy
with an ``epsilon`` parameter, the certificate at delta = 1e-6 never exceeds it, whatever the
horizon (DP-UCB-Int's ``epsilon`` used to be 1/interval and certified 12.9 at epsilon = 1)."""

import inspect

import pytest

from privbandit.policies import REGISTRY

WITH_EPSILON = sorted(name for name, cls in REGISTRY.items() if "epsilon" in inspect.signature(cls).parameters)


def test_the_private_policies_with_an_epsilon_are_all_covered():
    assert "dp_ucb_int" in WITH_EPSILON and len(WITH_EPSILON) >= 9


@pytest.mark.parametrize("name", WITH_EPSILON)
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_certificate_never_exceeds_epsilon(name, eps):
    policy = REGISTRY[name](epsilon=eps)
    for horizon, k in ((1_000, 2), (20_000, 5)):
        cert = policy.privacy_schedule(horizon, k).epsilon(horizon, 1e-6).value
        assert cert <= eps * (1 + 1e-9), (name, horizon, k, cert)
