"""Validation of :func:`privbandit.simulate`'s run options (checkpoints, ledger mode, flags, counts).

numpy and Python coerce quietly where these options are used: ``np.asarray([2.5], dtype=int64)``
truncates a checkpoint, ``int(1.5)`` a count, and any truthy object (``"no"``, ``nan``) turns the
ledger on. DESIGN.md "Inputs": no silent coercion -- a ValueError names the option and its range.
Valid values pass unchanged, so runs are bit-identical to before.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from accountants import _validate
from accountants._validate import NOT_NUMBERS, shown, unmasked


def _flag(name: str, value) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {shown(value)}")


_whole = _validate.whole  # (one shared check of a whole-number parameter)


def check_run_options(horizon: int, *, checkpoints, ledger, strict_rewards, keep_arms, progress,
                      realized_points, max_tracked_bytes, ledger_replicates=None) -> None:
    """ValueError naming the first invalid option; nothing is returned or changed."""
    if checkpoints is not None:
        unmasked("checkpoints", checkpoints)
        raw = np.asarray(checkpoints, dtype=object).ravel() if not isinstance(checkpoints, (str, bytes)) else None
        if raw is None or np.ndim(checkpoints) > 1:
            raise ValueError(f"checkpoints must be a 1-D sequence of whole numbers in [1, {horizon}], got {shown(checkpoints)}")
        for c in raw.tolist():
            # (an int beyond the floats is whole -- and out of range -- without float(c) overflowing)
            whole = (not isinstance(c, NOT_NUMBERS) and isinstance(c, (numbers.Real, np.integer, np.floating))
                     and (isinstance(c, (numbers.Integral, np.integer)) or (math.isfinite(float(c)) and float(c) == int(c))))
            if not whole or not 1 <= int(c) <= horizon:
                raise ValueError(f"checkpoints must be whole numbers in [1, {horizon}], got {shown(c)}")
    if not (ledger == "tight" if isinstance(ledger, str) else isinstance(ledger, (bool, np.bool_))):
        raise ValueError(f"ledger must be True, False or 'tight', got {shown(ledger)}")
    _flag("strict_rewards", strict_rewards)
    _flag("keep_arms", keep_arms)
    if progress is not None:
        _flag("progress", progress)
    _whole("realized_points", realized_points, 1)
    _whole("max_tracked_bytes", max_tracked_bytes, 0)
    if ledger_replicates is not None:  # else the ledger refused it as "track_replicates", its own name
        _whole("ledger_replicates", ledger_replicates, 0)
