"""A coupled white-box window far into a run, behind an untraced prefix (session 13).

The coupled runs of :mod:`privbandit.audit.whitebox` are traced from round 1, which costs about ten
times the engine's own speed per round: they end by 40,000 rounds (8,000 for most policies), and a
sensitivity or footprint error that starts later (a second accumulator past round 2^14, a scale
switched at round 50,000) had no coupled witness -- the far ledger run and the far noise law
(:mod:`privbandit.audit.far_law`) reach 2^17 rounds but see one run, so a statistic that moves by
twice its declared sensitivity with the scale and the footprint right leaves them exact.

Two neighbouring tapes D and D' differ in one record; if that record is revealed in round t0 or
later, both runs are *identical* before t0 (same tapes up to it, same seed, so the same random
stream and the same releases). Only the window from t0 on needs the tracer. So
:func:`fast_forward_audit` runs each side's prefix (rounds 1 .. t0 - 1) untraced, at the engine's
speed, on a ledger that records nothing (:meth:`~privbandit.ledger.Ledger.unrecorded`: every report still
passes the entry points the tracer wraps), and switches the tracer on at round t0 (:func:`~privbandit.audit.whitebox._run`'s
``traced_from``); D' replays D's released values from there. The checks are the white-box audit's
exact ones (``decisions`` over the whole run -- the prefixes must act identically --, ``unreported``,
``sensitivity``, ``footprint``, ``redraw``, ``noise_report``, ``noise_coupling``); not the noise law
(no alpha is spent), not ``footprint_position`` (the prefix's inserts are not logged, so a stream's
record positions cannot be counted) and not the spend schedule (the far ledger run's job).

Where the changed record sits: the run on D is its own probe (its tapes are fixed before any noise,
as for the schedule replicates of :func:`~privbandit.audit.whitebox.whitebox_audit`). Replicate j
changes the record revealed in round t0 + j -- of whichever arm D played then -- so the R replicates
cover R consecutive rounds: every position of a batch of at most R rounds (a batched EXP3's tau-th
round, a round-keyed phase), whatever the batch's phase at t0. The tapes are Bernoulli (one p per
replicate and arm, uniform), and D' flips the record (0 <-> 1): every change is the largest a
reward in [0, 1] allows, so a statistic counting one record twice moves by 2 sensitivities.
"""

from __future__ import annotations

import time

import numpy as np

from privbandit.audit.whitebox import (Finding, WhiteBoxResult, _coupled_checks, _run, attempt,
                                       check_audit_arguments, raised_result)
from privbandit.policies.base import Policy


class _BernoulliTape:
    """Reward tapes (R, K, pulls) that hold no array: the j-th pull of arm k on replicate r pays 1 when a
    counter-based uniform u(seed, r, k, j) (SplitMix64's finaliser, Steele, Lea & Flood 2014) is below
    ``p[r, k]``, else 0 -- so a window far into a run on many arms costs no R x K x T memory (16 x 33 x
    2^15 float tapes were 140 MB each). ``flip``: at most one (arm, pull) per replicate whose value is
    flipped (0 <-> 1): the neighbour D'. Indexed as :func:`~privbandit.audit.whitebox._run` indexes a
    tape: ``tape[rows, arms, pulls]``."""

    _GOLDEN = np.uint64(0x9E3779B97F4A7C15)

    def __init__(self, p: np.ndarray, seed: int, pulls: int, flip: tuple[np.ndarray, np.ndarray] | None = None):
        self.p = p
        self.seed = np.uint64(seed)
        self.shape = (p.shape[0], p.shape[1], int(pulls))
        self.flip = flip

    def uniform(self, rows, arms, pulls) -> np.ndarray:
        rows, arms, pulls = (np.asarray(x, dtype=np.uint64) for x in (rows, arms, pulls))
        x = self.seed + (rows * np.uint64(self.shape[1]) + arms) * np.uint64(1 << 40) + pulls
        x = x * self._GOLDEN  # wraps modulo 2^64, as SplitMix64's state does
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
        return (x >> np.uint64(11)).astype(float) * 2.0 ** -53

    def __getitem__(self, index) -> np.ndarray:
        rows, arms, pulls = (np.asarray(x, dtype=np.int64) for x in index)
        value = (self.uniform(rows, arms, pulls) < self.p[rows, arms]).astype(float)
        if self.flip is not None:
            at = (arms == self.flip[0][rows]) & (pulls == self.flip[1][rows])
            value = np.where(at, 1.0 - value, value)
        return value


class _NoSpend:
    """No spend schedule is checked on a window (the far ledger run checks realized <= certified far out)."""

    rows: tuple = ()

    @staticmethod
    def findings() -> list[Finding]:
        return []


def fast_forward_audit(policy: Policy, start: int, window: int, n_arms: int = 2, replicates: int = 16, *,
                       seed: int = 0) -> WhiteBoxResult:
    """The exact white-box checks on a coupled window of ``window`` rounds starting at round ``start``
    (module docstring): ``replicates`` coupled replicates, replicate j's changed record the one revealed in
    round ``start + j`` (so ``replicates`` <= ``window``). The result's horizon is ``start + window - 1``."""
    start, window, n_arms, replicates = check_audit_arguments(
        policy, (("start", start, 1), ("window", window, 1), ("n_arms", n_arms, 2), ("replicates", replicates, 1)),
        1e-4)
    if replicates > window:
        raise ValueError(f"replicates must lie in [1, window = {window}] (one changed round each), got {replicates}")
    began = time.perf_counter()
    horizon = start + window - 1
    tape_seq, run_seq = np.random.SeedSequence(seed).spawn(2)
    rng = np.random.default_rng(tape_seq)
    R, K = replicates, n_arms
    # Bernoulli tapes: the j-th pull of arm k pays tape[r, k, j] (an arm may be pulled every round)
    tape = _BernoulliTape(rng.random((R, K)), int(rng.integers(2**63)), horizon)
    notes = [f"fast-forward: rounds 1..{start - 1} untraced (identical on D and D'), the coupled window traced "
             f"from round {start}; replicate j changes the record revealed in round {start} + j"]
    out_d, exc_d = attempt(_run, policy, tape, horizon, run_seq, traced_from=start, recorded=False)
    if exc_d is not None:
        tr = exc_d.tracer
        _, exc_p = attempt(_run, policy, tape, horizon, run_seq, replay=tr.draws if tr is not None else None,
                           traced_from=start, recorded=False)
        return raised_result(policy, horizon, K, R, seed, 1e-4, exc_d, exc_p, notes, began, _NoSpend())
    act_d, tr_d = out_d
    rows = np.arange(R)
    changed_round = start + rows  # 1-based rounds
    arm = act_d[rows, changed_round - 1]
    # the changed record's index among its arm's pulls: the pulls of that arm before its round
    pull = np.array([int(np.count_nonzero(act_d[r, :changed_round[r] - 1] == arm[r])) for r in rows], dtype=np.int64)
    tape_prime = _BernoulliTape(tape.p, int(tape.seed), horizon, flip=(arm, pull))
    out_p, exc_p = attempt(_run, policy, tape_prime, horizon, run_seq, replay=tr_d.draws, traced_from=start, recorded=False)
    if exc_p is not None:
        return raised_result(policy, horizon, K, R, seed, 1e-4, None, exc_p, notes, began, _NoSpend())
    act_p, tr_p = out_p
    findings, groups, n_rel = _coupled_checks(policy, act_d, act_p, tr_d, tr_p, arm, pull, K, 1e-4, False, _NoSpend(),
                                              notes, positions=False)
    if not n_rel:
        notes.append("no traced release in the window was paired with a ledger report: nothing to check")
    return WhiteBoxResult(repr(policy), horizon, K, R, seed, 1e-4, n_rel, findings, groups, notes,
                          time.perf_counter() - began, [])


CLOCK_JUMPS = (16, 20, 24, 31)
"""Session 15: the powers of two the clock-jump run straddles (:func:`clock_jump_audit`): a window of rounds
centred on 2^16, 2^20, 2^24 and 2^31 (a 16-bit counter's wrap, a threshold past the fast-forward window, a
signed 32-bit round counter's last rounds)."""


def jump_rounds(prefix: int, window: int, jumps=CLOCK_JUMPS) -> np.ndarray:
    """The round numbers a clock-jump run tells the policy: 1 .. ``prefix``, then ``window`` consecutive rounds
    centred on 2^m for each m of ``jumps`` (increasing, each window after the last)."""
    parts = [np.arange(1, prefix + 1, dtype=np.int64)]
    for m in jumps:
        first = (1 << int(m)) - window // 2
        if first <= parts[-1][-1]:
            raise ValueError(f"jumps: the window at 2^{m} starts at round {first}, not after round {parts[-1][-1]}")
        parts.append(first + np.arange(window, dtype=np.int64))
    return np.concatenate(parts)


def clock_jump_audit(policy: Policy, n_arms: int = 2, replicates: int = 32, *, prefix: int = 2**12,
                     window: int = 256, jumps=CLOCK_JUMPS, seed: int = 0) -> WhiteBoxResult:
    """The exact white-box checks on coupled windows far out on the round clock, without the rounds between
    (session 15; docs/audit.md "Session 15 (s15/reach)"). The policy plays ``prefix`` real rounds 1 .. prefix
    untraced (the same on D and D'), then its clock *jumps*: it is told the rounds of a window of ``window``
    rounds centred on 2^m for each m of ``jumps`` (:func:`jump_rounds`), traced; it is started with the last of
    them as its horizon. Each window holds the changed records of ``replicates`` / len(jumps) replicates: the
    four rounds around its power of two (2^m - 2 .. 2^m + 1) and the rest uniform over the window.

    What it reaches, and what not: every code path keyed to the *round number* t -- a threshold (t > 2^16), a
    counter that wraps (t mod 2^16), a 32-bit round -- at a cost of ``prefix`` untraced and ~4 x ``window``
    traced rounds per side instead of 2^31 rounds. The state the jump carries is a real one (the policy's own
    after ``prefix`` rounds), but a young one: its streams hold ~prefix / K records, as at round ``prefix``,
    not as at round 2^m. So a code path keyed to a *stream's count* past ~2^15 (a tree level >= 16, a count
    crossing 2^16) is not reached here (the far noise law reaches scales to 2^17 records; nothing coupled does).
    A policy is not promised a clock that jumps: one that refuses it (raises at the first jumped round, on D
    and D' alike: nothing differs before it) is skipped with a note, not reported. Checks as
    :func:`fast_forward_audit` (exact, no alpha, no ``footprint_position``); rounds in the findings count the
    rounds *played* (1 .. prefix + len(jumps) x window), the notes map them to the rounds told."""
    prefix, window, n_arms, replicates = check_audit_arguments(
        policy, (("prefix", prefix, 1), ("window", window, 8), ("n_arms", n_arms, 2),
                 ("replicates", replicates, len(jumps))), 1e-4)
    rounds = jump_rounds(prefix, window, jumps)
    began = time.perf_counter()
    played = rounds.size
    tape_seq, run_seq, place_seq = np.random.SeedSequence(seed).spawn(3)
    rng = np.random.default_rng(tape_seq)
    R, K = replicates, n_arms
    tape = _BernoulliTape(rng.random((R, K)), int(rng.integers(2**63)), played)
    # each replicate's changed position (1-based, among the rounds played): per window, the four rounds around
    # its power of two, then uniform draws over the window
    place = np.random.default_rng(place_seq)
    which = np.arange(R) % len(jumps)
    slot = np.arange(R) // len(jumps)
    centre = np.array([-2, -1, 0, 1])
    offset = np.where(slot < centre.size, window // 2 + centre[np.minimum(slot, centre.size - 1)],
                      place.integers(0, window, R))
    changed = prefix + which * window + offset + 1
    notes = [f"clock jump: rounds 1..{prefix} played untraced (identical on D and D'), then the clock told "
             + ", ".join(f"{rounds[prefix + i * window]}..{rounds[prefix + (i + 1) * window - 1]}"
                         for i in range(len(jumps)))
             + f" (played rounds {prefix + 1}..{played}, traced); replicate j changes the record revealed in played "
             f"round {prefix} + 1 + (j mod {len(jumps)}) x {window} + offset; the state is the one {prefix} real "
             "rounds reach (streams of ~prefix / K records): round-keyed code far out, not count-keyed"]
    out_d, exc_d = attempt(_run, policy, tape, played, run_seq, traced_from=prefix + 1, recorded=False, rounds=rounds)
    if exc_d is not None and exc_d.raised.round == prefix + 1:
        notes.append(f"the policy raised at the clock's first jump (told round {rounds[prefix]} after "
                     f"{rounds[prefix - 1]}): a jumping clock is outside its contract; nothing checked "
                     f"({exc_d.raised.describe()})")
        return WhiteBoxResult(repr(policy), int(rounds[-1]), K, R, seed, 1e-4, 0, [], [], notes,
                              time.perf_counter() - began, [])
    if exc_d is not None:
        tr = exc_d.tracer
        _, exc_p = attempt(_run, policy, tape, played, run_seq, replay=tr.draws if tr is not None else None,
                           traced_from=prefix + 1, recorded=False, rounds=rounds)
        return raised_result(policy, int(rounds[-1]), K, R, seed, 1e-4, exc_d, exc_p, notes, began, _NoSpend())
    act_d, tr_d = out_d
    rows = np.arange(R)
    arm = act_d[rows, changed - 1]
    pull = np.array([int(np.count_nonzero(act_d[r, :changed[r] - 1] == arm[r])) for r in rows], dtype=np.int64)
    tape_prime = _BernoulliTape(tape.p, int(tape.seed), played, flip=(arm, pull))
    out_p, exc_p = attempt(_run, policy, tape_prime, played, run_seq, replay=tr_d.draws, traced_from=prefix + 1,
                           recorded=False, rounds=rounds)
    if exc_p is not None:
        return raised_result(policy, int(rounds[-1]), K, R, seed, 1e-4, None, exc_p, notes, began, _NoSpend())
    act_p, tr_p = out_p

    def describe(r: int) -> str:
        return (f"arm {arm[r]} pull #{pull[r]}, revealed in played round {changed[r]} (told round "
                f"{rounds[changed[r] - 1]}): 0 vs 1")

    findings, groups, n_rel = _coupled_checks(policy, act_d, act_p, tr_d, tr_p, arm, pull, K, 1e-4, False, _NoSpend(),
                                              notes, positions=False, describe=describe)
    if not n_rel:
        notes.append("no traced release in the windows was paired with a ledger report: nothing to check")
    return WhiteBoxResult(repr(policy), int(rounds[-1]), K, R, seed, 1e-4, n_rel, findings, groups, notes,
                          time.perf_counter() - began, [])
