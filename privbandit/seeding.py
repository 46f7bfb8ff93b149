"""Seed validation shared by the engine, the environments and replay.

Every seed in the toolkit is handed to ``numpy.random.SeedSequence`` (or ``default_rng``); numpy's
own errors ("expected non-negative integer", "SeedSequence expects int ...") name no parameter, and
numpy quietly takes ``True`` for 1. :func:`check_seed` rejects both with a ValueError naming the
parameter and returns every valid seed unchanged, so streams are bit-identical to before.
"""

from __future__ import annotations

import numpy as np

from accountants._validate import shown


def check_seed(name: str, seed, *, generator: bool = False):
    """``seed`` unchanged if numpy accepts it as a seed (None, a whole number >= 0, a sequence of
    them, a ``SeedSequence``; a ``Generator`` too when ``generator``), else ValueError naming ``name``."""
    if seed is None or isinstance(seed, np.random.SeedSequence) or (generator and isinstance(seed, np.random.Generator)):
        return seed
    what = "None, a whole number in [0, inf), a sequence of them or a numpy SeedSequence"
    if generator:
        what += " or Generator"
    if isinstance(seed, (bool, np.bool_)) or (isinstance(seed, (list, tuple, np.ndarray))
                                             and any(isinstance(s, (bool, np.bool_)) for s in np.ravel(seed).tolist())):
        raise ValueError(f"{name} must be {what}, got {shown(seed)}")
    try:
        np.random.SeedSequence(seed)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be {what}, got {shown(seed)}") from None
    except Exception as exc:  # noqa: BLE001 -- an int subclass whose __index__ / __int__ raises (session 16)
        raise ValueError(f"{name} must be {what}; numpy could not read {shown(seed)} "
                         f"({type(exc).__name__}: {exc})") from exc
    return seed
