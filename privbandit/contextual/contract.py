"""The round objects of the extended feedback contract (CONTRACT.md, docs/feedback.md), re-exported.

Until the engine's ``privbandit.feedback`` module is merged, the same frozen dataclasses are
defined here with the agreed fields; afterwards this module only re-exports them.
"""

from __future__ import annotations

import dataclasses

import numpy as np

try:
    from privbandit.feedback import Feedback, Offer
except ImportError:  # before the feedback-contract branch is merged

    @dataclasses.dataclass(frozen=True)
    class Offer:  # type: ignore[no-redef]
        """What the learner sees before choosing: contexts (R, K, d) and/or a feedback graph."""

        contexts: np.ndarray | None = None
        graph: np.ndarray | None = None

    @dataclasses.dataclass(frozen=True)
    class Feedback:  # type: ignore[no-redef]
        """The round's outcome: played arms (R,), their rewards (R,), optional side observations."""

        arms: np.ndarray
        rewards: np.ndarray
        observed: np.ndarray | None = None
        values: np.ndarray | None = None

__all__ = ["Feedback", "Offer"]
