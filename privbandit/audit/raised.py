"""An exception raised by the audited policy is an observation, not a crash of the audit (session 12).

Every audit here runs code it does not trust. When that code raises -- a ``LinAlgError`` from a Gram
matrix an unclipped context made singular, an ``IndexError`` from a buffer too small for a hub's side
observations, an overflow -- the exception is an *output* of the run, as much as an arm is: a user of the
policy sees it. So the audits catch it at the seam where they call the policy (a run's ``start``,
``select``, ``update``, ``observe``) and turn it into a :class:`Raised`: the exception's type, its
message, the round being played and the policy's line that raised.

* **Coupled runs** (the white-box audits: K-armed, contextual, graph). The run on D' replays D's
  released values (:mod:`privbandit.audit.tracing`), so a policy that decides from its releases alone
  (post-processing, Dwork & Roth Prop. 2.1) behaves identically on both -- *including* whether, when
  and what it raises. An exception on one neighbour and not the other, or at another round, or of
  another type, is a deterministic witness that the output reads the data outside the releases: the
  output "raised X in round t" has probability > 0 under D and, on this coupling, 0 under D'
  (:func:`compare`: a finding, check ``raised``). The same exception at the same round on both is no
  witness, and the runs are cut short: that audit is **INCONCLUSIVE**, naming the exception -- never
  CONSISTENT, never a traceback.
* **Black-box runs** (:class:`privbandit.audit.core.Audit`): the raise is an event whose probability
  is estimated on each side from independent single runs and certified like any other
  (Clopper-Pearson; :meth:`~privbandit.audit.core.Audit._raise_audit`): a violation when the
  certified lower bound exceeds the claim (for a pure claim: raised on D, never on D', with enough
  runs), else INCONCLUSIVE naming the exception.
* **Ledger runs** (one run, no neighbour: :func:`privbandit.audit.ledger_audit`, the far runs): the
  checkpoints passed before the raise are kept (a violation found there stands); the result names the
  exception and is never called CONSISTENT.

What is not a policy's exception: a ``ValueError`` the audit raises about its own arguments before any
policy code runs (bad input), and ``KeyboardInterrupt`` / ``SystemExit`` / ``MemoryError`` (not
observations of the policy; they propagate).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import traceback

NOT_OBSERVED = (MemoryError, RecursionError)
"""Exceptions that say the machine, not the policy's output, failed: they propagate."""


@dataclasses.dataclass(frozen=True)
class Raised:
    """What a run of the audited policy raised: ``kind`` (the exception's qualified type name), its
    ``message``, the ``round`` being played (0: in ``start``) and ``where`` (file:line of the innermost
    frame)."""

    kind: str
    message: str
    round: int
    where: str

    @classmethod
    def of(cls, exc: BaseException, round: int) -> "Raised":
        t = type(exc)
        kind = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else "?"
        message = str(exc)
        return cls(kind, message if len(message) <= 200 else message[:197] + "...", int(round), where)

    def alike(self, other: "Raised | None") -> bool:
        """The same output: the same exception type in the same round (messages may carry addresses)."""
        return other is not None and self.kind == other.kind and self.round == other.round

    def describe(self) -> str:
        when = "in start" if self.round == 0 else f"in round {self.round}"
        return f"raised {self.kind} {when} ({self.where}: {self.message})"


class PolicyRaised(Exception):
    """A run of the audited policy raised (``raised``); ``tracer`` is the run's tracer, holding what was
    traced up to the raise (None when the run raised before it had one)."""

    def __init__(self, raised: Raised, tracer=None):
        super().__init__(raised.describe())
        self.raised = raised
        self.tracer = tracer


@dataclasses.dataclass
class Clock:
    """The round a run is playing (0 before its first) and its tracer, for :func:`policy_code`."""

    t: int = 0
    tracer: object = None


@contextlib.contextmanager
def policy_code(clock: Clock):
    """Run the audited policy's code: any exception it raises leaves as :class:`PolicyRaised` carrying
    the round ``clock.t`` and ``clock.tracer`` (those in :data:`NOT_OBSERVED` propagate unchanged)."""
    try:
        yield clock
    except PolicyRaised:
        raise
    except NOT_OBSERVED:
        raise
    except Exception as exc:  # noqa: BLE001 -- whatever the policy raises is an observation
        raise PolicyRaised(Raised.of(exc, clock.t), clock.tracer) from exc


def compare(raised_d: Raised | None, raised_p: Raised | None, *, coupled: bool = True,
            own_rounds=()) -> tuple[str | None, str | None]:
    """(witness, error) for two coupled runs that replayed the same releases: ``witness`` describes a
    difference (one raised, or not alike) -- a finding; ``error`` the exception both raised alike --
    the audit is inconclusive. Both None when neither raised. ``coupled=False`` (a policy whose
    decisions read the data by design, ``records_releases=False``) or a raise in one of ``own_rounds``
    (joint DP: the changed user's own output may differ) turns a difference into an error too."""
    if raised_d is None and raised_p is None:
        return None, None
    if raised_d is not None and raised_d.alike(raised_p):
        return None, f"both neighbours {raised_d.describe()}: no output to compare after it"
    first = min((r for r in (raised_d, raised_p) if r is not None), key=lambda r: r.round)
    text = (f"the run on D {raised_d.describe() if raised_d else 'completed'}, the run on D' "
            f"{raised_p.describe() if raised_p else 'completed'}")
    if not coupled or first.round in set(int(h) for h in own_rounds):
        return None, text + " (not a witness here: " + (
            "the decisions read the data by design)" if not coupled else "the changed user's own round)")
    return (text + ", although every traced release was identical (D' replays D's): an exception is an output, and "
                   "this one is not a post-processing of the releases -- a distinguishing event (pure-DP witness)"), None


__all__ = ["Clock", "NOT_OBSERVED", "PolicyRaised", "Raised", "compare", "policy_code"]
