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
