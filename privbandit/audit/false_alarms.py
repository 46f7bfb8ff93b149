"""The white-box audit's false-alarm budget, tallied as it is spent (session 16).

The white-box checks 1-4 and 6-13 are exact: a finding is a deterministic witness. The statistical ones
(check 5's noise law, its tail test and per-stream law, the coincidence tests, check 5d's pairings, check 5f's
sampler reach, the far noise law) each test at a family-wise level of their own, and each white-box run that
tests the noise law runs several of them. A false alarm on a correct policy therefore has probability at most
the *sum* of the levels actually spent in one audit (Bonferroni over the families; each family is exact at its
level, docs/audit.md "White-box false alarms").

Which families run depends on the policy (a run without two usable streams has no per-stream law, a policy
holding only the library's samplers no check 5f, a run with too few pairs no check 5d), so the sum is counted
where each test is made: a family calls :func:`spend` once, with its level, when it tests at least one group,
and :func:`tally` collects the calls of one audit. A family that tests nothing spends nothing. Nothing is
tallied outside a :func:`tally` block (the functions stay usable alone, e.g. in the tests).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Iterator


@dataclasses.dataclass
class AlphaTally:
    """The (family, level) pairs spent in one audit, in the order the tests ran."""

    spent: list[tuple[str, float]] = dataclasses.field(default_factory=list)

    @property
    def total(self) -> float:
        """Bonferroni bound on the probability of any false alarm among the tallied families (not capped at 1)."""
        return math.fsum(a for _, a in self.spent)

    @property
    def families(self) -> int:
        return len(self.spent)

    def by_family(self) -> dict[str, tuple[int, float]]:
        """family -> (times tested, level spent in total)."""
        out: dict[str, tuple[int, float]] = {}
        for name, a in self.spent:
            n, s = out.get(name, (0, 0.0))
            out[name] = (n + 1, s + a)
        return out

    def statement(self) -> str:
        """The VERDICT line's words for this tally."""
        if not self.spent:
            return "no white-box statistical test was made (exact checks only: no false alarm is possible there)"
        levels = sorted({a for _, a in self.spent})
        each = (f"alpha {levels[0]:g} each" if len(levels) == 1
                else f"alpha {levels[0]:g} to {levels[-1]:g} each")
        return (f"{self.families} white-box statistical tests made ({each}): a white-box false alarm on a correct "
                f"policy has probability at most {self.total:.2g} (their sum; docs/audit.md, 'White-box false alarms')")


_TALLY: contextvars.ContextVar[AlphaTally | None] = contextvars.ContextVar("privbandit_audit_alpha", default=None)


@contextlib.contextmanager
def tally() -> Iterator[AlphaTally]:
    """Collect every :func:`spend` made inside the block (nested blocks each collect their own)."""
    t = AlphaTally()
    token = _TALLY.set(t)
    try:
        yield t
    finally:
        _TALLY.reset(token)


def spend(family: str, alpha: float) -> None:
    """Record that ``family`` made its test(s) at family-wise level ``alpha`` (no-op outside :func:`tally`)."""
    t = _TALLY.get()
    if t is not None:
        t.spent.append((family, float(alpha)))


def current() -> AlphaTally | None:
    """The innermost active tally, or None."""
    return _TALLY.get()
