"""A reward tape: the j-th pull of arm k pays ``tape[k, j]``, whatever round it happens in.

This is the neighbouring-input model of the privacy proofs for Thompson sampling and of the
auditor (AUDIT.md 2.1): two tapes that differ in one entry are neighbours, and the changed reward is
seen exactly when its arm is pulled for the j-th time. Every replicate reads the same tape with its
own pull counters, so one engine run with n replicates is n independent runs on the same input.
"""

from __future__ import annotations

import numpy as np

from accountants._validate import real_array

from privbandit.envs.base import Environment, EnvironmentRun


class _TapeRun(EnvironmentRun):
    def __init__(self, tape: np.ndarray, replicates: int):
        self._tape = tape
        self._pulls = np.zeros((replicates, tape.shape[0]), dtype=np.int64)
        self._rows = np.arange(replicates)

    def rewards(self, t, arms):
        j = self._pulls[self._rows, arms]
        if np.any(j >= self._tape.shape[1]):
            raise ValueError(f"the reward tape holds {self._tape.shape[1]} pulls per arm; round {t} needs more")
        self._pulls[self._rows, arms] += 1
        return self._tape[arms, j]


class RewardTape(Environment):
    """Deterministic per-arm reward tapes of shape (arms, pulls); ``means`` are the tape means."""

    name = "reward_tape"

    def __init__(self, tape) -> None:
        tape = real_array("tape", tape)
        if tape.ndim != 2 or tape.shape[0] < 2 or tape.shape[1] < 1:
            raise ValueError(f"tape must have shape (arms >= 2, pulls >= 1), got {tape.shape}")
        if np.any(~np.isfinite(tape)):
            raise ValueError("tape must contain only finite rewards")
        self.tape = tape
        self.means = np.clip(tape, 0.0, 1.0).mean(axis=1)

    @property
    def n_arms(self) -> int:
        return int(self.tape.shape[0])

    def start(self, replicates, rng):
        return _TapeRun(self.tape, replicates)

    def expected(self, t, arms):
        return self.means[arms]

    def best(self, t):
        return np.full(np.shape(t), self.means.max())

    def params(self):
        return {"environment": self.name, "shape": list(self.tape.shape)}
