"""Test-suite configuration.

Hypothesis runs derandomized (a fixed seed per test), as every statistical test here does: a
property test must fail the same way on every run, never by the luck of the draw in CI. Set
``HYPOTHESIS_PROFILE=explore`` to search with fresh randomness locally.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import pytest


@pytest.fixture(autouse=True)
def _whole_interpreted_allowance(monkeypatch):
    """Every test starts with the whole interpreted-call allowance of the kernels' ski-rental switch
    (privbandit.mechanisms._kernels.JIT_RENT_CALLS): a test that forces the interpreted way
    (``JIT_MIN_ROWS`` raised, ``_LOADED`` cleared) must not run compiled because the tests before it
    happened to use the allowance up."""
    from privbandit.mechanisms import _kernels

    monkeypatch.setattr(_kernels, "_RENT", _kernels.JIT_RENT_CALLS)
