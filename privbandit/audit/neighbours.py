"""Neighbouring reward tapes (AUDIT.md 2.1).

Two tapes are neighbours when they differ in exactly one entry (replace-one), and that entry stays in
the declared reward range [0, 1] -- the relation the accountants' proofs use. Out-of-range values are
refused unless ``allow_out_of_range=True``, which exists for one purpose: showing that a policy that
forgets to clip rewards leaks more than it claims (the auditor's runner clips by default, exactly as
the engine does, so a correct policy is unaffected by it).

:meth:`Neighbours.search` builds candidate pairs: the changed entry is the first pre-pull or the first
adaptive pull of one arm (where the change is exposed earliest), flipped between two values, and the
rest of the tape follows a simple template (a constant for the rest of the audited arm and a constant
for every other arm). The audit ranks the candidates with a cheap pilot and certifies only the chosen
pair, so the search costs no alpha.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from accountants._validate import real_array, shown


@dataclasses.dataclass(frozen=True)
class NeighbourPair:
    """Two tapes (arms, pulls) differing in entry (arm, position)."""

    tape: np.ndarray
    tape_prime: np.ndarray
    arm: int
    position: int
    label: str


def _in_range(values, allow: bool, what: str):
    arr = np.asarray(values, dtype=float)
    if np.any(~np.isfinite(arr)):
        raise ValueError(f"{what} must be finite")
    if not allow and (np.any(arr < 0) or np.any(arr > 1)):
        raise ValueError(f"{what} must lie in [0, 1] (the declared reward range); pass allow_out_of_range=True "
                         "only to test a policy that does not clip rewards")


class NeighbourSearch:
    """Candidate neighbour pairs; see :meth:`Neighbours.search`."""

    def __init__(self, arm, positions, values, arm_rest, others, allow_out_of_range, pilot_runs):
        self.arm = arm
        self.positions = tuple(positions)
        self.values = tuple(float(v) for v in values)
        self.arm_rest = tuple(float(v) for v in arm_rest)
        self.others = tuple(float(v) for v in others)
        self.allow_out_of_range = allow_out_of_range
        self.pilot_runs = pilot_runs

    def _position(self, pos, policy) -> int:
        prepulls = int(getattr(policy, "b", 0) or 0)
        if pos == "first_prepull":
            if prepulls == 0:
                return -1
            return 0
        if pos == "first_adaptive":
            return prepulls
        if isinstance(pos, (int, np.integer)) and not isinstance(pos, bool) and pos >= 0:
            return int(pos)
        raise ValueError(f"positions must be 'first_prepull', 'first_adaptive' or whole numbers >= 0, got {shown(pos)}")

    def candidates(self, policy, n_arms: int, horizon: int) -> list[NeighbourPair]:
        if self.arm >= n_arms:
            raise ValueError(f"arm must lie in [0, {n_arms}), got {self.arm}")
        out = []
        seen = set()
        for pos, rest, other in itertools.product(self.positions, self.arm_rest, self.others):
            p = self._position(pos, policy)
            if p < 0 or p >= horizon or (p, rest, other) in seen:
                continue  # no pre-pulls: 'first_prepull' does not exist
            seen.add((p, rest, other))
            tape = np.full((n_arms, horizon), other)
            tape[self.arm] = rest
            tape_prime = tape.copy()
            tape[self.arm, p] = self.values[0]
            tape_prime[self.arm, p] = self.values[1]
            label = (f"arm {self.arm} pull #{p} ({pos}): {self.values[0]:g} vs {self.values[1]:g}; "
                     f"rest of arm {self.arm} = {rest:g}, other arms = {other:g}")
            out.append(NeighbourPair(tape, tape_prime, self.arm, p, label))
        if not out:
            raise ValueError(f"no neighbour candidates: positions {self.positions} do not fit the policy/horizon")
        return out


class Neighbours:
    """Constructors for the neighbour specification of a policy audit."""

    @staticmethod
    def pair(tape, tape_prime, *, allow_out_of_range: bool = False, label: str = "") -> list[NeighbourPair]:
        """One given pair of tapes; they must differ in exactly one entry."""
        tape = real_array("tape", tape, bools=True)
        tape_prime = real_array("tape_prime", tape_prime, bools=True)
        if tape.shape != tape_prime.shape or tape.ndim != 2:
            raise ValueError(f"tape and tape_prime must be 2-D of equal shape, got {tape.shape}, {tape_prime.shape}")
        _in_range(tape, allow_out_of_range, "tape")
        _in_range(tape_prime, allow_out_of_range, "tape_prime")
        diff = np.argwhere(tape != tape_prime)
        if diff.shape[0] != 1:
            raise ValueError(f"neighbouring tapes must differ in exactly one entry, got {diff.shape[0]}")
        arm, pos = (int(v) for v in diff[0])
        return [NeighbourPair(tape, tape_prime, arm, pos,
                              label or f"arm {arm} pull #{pos}: {tape[arm, pos]:g} vs {tape_prime[arm, pos]:g}")]

    @staticmethod
    def search(arm: int = 0, positions=("first_prepull", "first_adaptive"), values=(0.0, 1.0),
               arm_rest=(0.0, 0.5, 1.0), others=(0.0, 0.25, 0.5, 0.75, 1.0), *,
               allow_out_of_range: bool = False, pilot_runs: int = 20_000) -> NeighbourSearch:
        """Templates x positions; the audit ranks them with ``pilot_runs`` runs per side each."""
        if isinstance(arm, bool) or int(arm) != arm or arm < 0:
            raise ValueError(f"arm must be a whole number in [0, inf), got {shown(arm)}")
        if len(values) != 2 or values[0] == values[1]:
            raise ValueError(f"values must be two different rewards (D, D'), got {shown(values)}")
        _in_range(values, allow_out_of_range, "values")
        _in_range(arm_rest, False, "arm_rest")
        _in_range(others, False, "others")
        if not arm_rest or not others or not positions:
            raise ValueError("positions, arm_rest and others must be non-empty")
        if isinstance(pilot_runs, bool) or int(pilot_runs) != pilot_runs or pilot_runs < 100:
            raise ValueError(f"pilot_runs must be a whole number in [100, inf), got {shown(pilot_runs)}")
        return NeighbourSearch(int(arm), positions, values, arm_rest, others, bool(allow_out_of_range),
                               int(pilot_runs))
