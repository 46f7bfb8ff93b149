"""Load the planted-bug modules of ``bench/`` by file (they are not a package), for the round tests."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))  # the round modules import the earlier rounds' helpers by name


def load(name: str):
    """The module ``bench/<name>.py``, executed afresh."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
