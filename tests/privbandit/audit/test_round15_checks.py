"""Session 13's coupled runs (docs/audit.md, "Session 13 (s13/audit)"), each against one representative planted
case written here and its clean twin (the planted cases are not round 14's: they sit at other arms, positions
and rounds, so that a check tailored to round 14's bugs would miss them):

* 33 arms (``reach_runs``' first run): a DP-EXP3-Lap whose records of arms >= 20 are released at three times
  their value, reported as sensitivity 1 -- past the 8-arm run's last arm;
* every position inside the policy's own batches (``whitebox_audit(sweep_records=...)``,
  :func:`~privbandit.audit.whitebox.sweep_positions`): a Lazy-DP-TS whose tenth record of a batch of 16 or more
  enters the batch sum three times;
* a coupled window far into the run behind an untraced prefix (:mod:`privbandit.audit.fast_forward`): a private
  EXP3 whose loss release doubles for records revealed in rounds = 2 mod 3 past round 8,000.

Each test fails without its check (the run or the option does not exist, or -- checked by hand, docs -- the
ordinary placements miss the case at the same seed).
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.audit import whitebox_audit
from privbandit.audit.cli import FAST_FORWARD, WB_SWEEP, WB_WIDE, reach_runs
from privbandit.audit.fast_forward import fast_forward_audit
from privbandit.audit.whitebox import SWEEP_OFFSETS, _run, sweep_positions
from privbandit.policies import DPEXP3Lap, GaussianTS, LazyDPTS, PrivateEXP3


class HighArmsTripled(DPEXP3Lap):
    """DP-EXP3-Lap releasing the records of arms >= 20 at three times their value (a per-arm "unit" table
    of twenty entries, divided out after the release), still reported with sensitivity 1: true eps = 3 for
    those records, claimed 1."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        release = run.noise.release_records
        unit = np.where(np.arange(n_arms) >= 20, 3.0, 1.0)

        def release_in_units(values, scale, replicate, stream, position, *args, **kwargs):
            u = unit[np.asarray(stream)]
            return release(np.asarray(values, dtype=float) * u, scale, replicate, stream, position, *args, **kwargs) / u

        run.noise.release_records = release_in_units
        return run


class TenthRecordThrice(LazyDPTS):
    """Lazy-DP-TS whose tenth record of an open doubling batch (9 records pending: a batch of 16 or more) enters the
    batch sum three times; the release reports sensitivity 1: true eps = 3 for those records, claimed 1."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        batches, inner = run.batches, run.update

        def update(t, arms, rewards):
            arms, values = np.asarray(arms), np.asarray(rewards, dtype=float)
            tenth = batches.pending[run.rows, arms] == 9  # only a batch of 16 or more holds 10 records
            inner(t, arms, rewards)
            batches._open_sum[run.rows[tenth], arms[tenth]] += 2.0 * values[tenth]

        run.update = update
        return run


class LateRoundLossDoubled(PrivateEXP3):
    """Private EXP3 whose loss release doubles for the records of rounds t > 8,000 with t = 2 mod 3,
    reported with sensitivity 1: true eps = 2 for those records, claimed 1. Past every coupled run traced
    from round 1 at the command's sizes for this policy (200, 2,000 and 8,000 rounds)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        release, inner, now = run.noise.release_records, run.update, {"t": 0}

        def update(t, arms, rewards):
            now["t"] = t
            return inner(t, arms, rewards)

        def release_late(values, *args, **kwargs):
            t = now["t"]
            return release(np.asarray(values, dtype=float) * (2.0 if t > 8000 and t % 3 == 2 else 1.0), *args, **kwargs)

        run.update, run.noise.release_records = update, release_late
        return run


def _sensitivity(res) -> bool:
    return res.verdict == "VIOLATION" and "sensitivity" in res.checks


# --- 33 arms ----------------------------------------------------------------------------------------------
def test_the_wide_run_reaches_arms_past_twenty():
    """reach_runs' 33-arm run (its sizes, a shorter far window for speed) refutes the high-arm bug; the
    clean twin is CONSISTENT with releases on every arm."""
    small_ff = dict(FAST_FORWARD, start=256, window=32)
    wide, _, _, _ = reach_runs(HighArmsTripled(), 2, 200, 400, 0, fast_forward=small_ff, clock_jump=None)
    assert wide is not None and wide.n_arms == WB_WIDE["arms"] > 20
    assert _sensitivity(wide), wide.summary()
    clean, sweep, ff, _ = reach_runs(DPEXP3Lap(), 2, 200, 400, 0, fast_forward=small_ff, clock_jump=None)
    for res in (clean, sweep, ff):
        assert res.verdict == "CONSISTENT", res.summary()


def test_no_wide_run_when_the_audit_already_has_the_arms():
    small_ff = dict(FAST_FORWARD, start=256, window=32)
    wide, sweep, ff, _ = reach_runs(DPEXP3Lap(), WB_WIDE["arms"], 100, 200, 0, fast_forward=small_ff,
                                   clock_jump=None)
    assert wide is None and sweep.n_arms == ff.n_arms == WB_WIDE["arms"]


# --- every position inside a batch ------------------------------------------------------------------------
def test_sweep_positions_walk_every_offset_of_the_policys_batches():
    # batches 0..0, 1..2, 3..6, 7..14, 15..30 (a doubling schedule); 64 replicates, offsets 0..15
    ev = np.array([0, 2, 6, 14, 30])
    pos, placed = sweep_positions([ev] * 64, np.full(64, 40), np.random.default_rng(0))
    offsets = (np.arange(64) // 4) % SWEEP_OFFSETS
    assert placed == 64
    starts = np.array([0, 1, 3, 7, 15])
    for p, o in zip(pos, offsets):
        batch = np.searchsorted(ev, p)  # the batch holding p
        assert p - starts[batch] == o  # the o-th record of its batch
    # no batch of the policy's own: the tree's dyadic blocks [2^m, 2^(m+1)), the record revealed
    pos, placed = sweep_positions([np.zeros(0, np.int64)] * 64, np.full(64, 100), np.random.default_rng(1))
    assert placed == 0
    for p, o in zip(pos, offsets):
        block = 1 << (int(p - o).bit_length() - 1)
        assert p - o == block > o and p < 100


def test_the_sweep_refutes_a_record_counted_thrice_ten_records_into_a_batch():
    bug = whitebox_audit(TenthRecordThrice(), 2000, 2, 4, seed=0, law=False, observer=False,
                         sweep_records=WB_SWEEP["replicates"])
    assert _sensitivity(bug), bug.summary()
    clean = whitebox_audit(LazyDPTS(), 2000, 2, 4, seed=0, law=False, observer=False,
                           sweep_records=WB_SWEEP["replicates"])
    assert clean.verdict == "CONSISTENT", clean.summary()


def test_sweep_records_must_be_a_multiple_of_four():
    with pytest.raises(ValueError, match="sweep_records"):
        whitebox_audit(LazyDPTS(), 100, 2, 4, sweep_records=6)
    with pytest.raises(ValueError, match="sweep_records"):
        whitebox_audit(LazyDPTS(), 100, 2, 4, sweep_records=-4)


# --- a window far into the run ----------------------------------------------------------------------------
def test_fast_forward_refutes_a_late_round_keyed_sensitivity_error():
    bug = fast_forward_audit(LateRoundLossDoubled(), 8192, 64, 2, 16, seed=0)
    assert _sensitivity(bug), bug.summary()
    clean = fast_forward_audit(PrivateEXP3(), 8192, 64, 2, 16, seed=0)
    assert clean.verdict == "CONSISTENT" and clean.releases, clean.summary()


def test_fast_forward_sees_the_posteriors_reports():
    """The window's ledger records nothing but passes every report through the entry points the tracer wraps:
    Gaussian-TS's posterior reports (a prefix recorder, which a non-tight recording ledger stages past them)
    are paired, so the clean policy is CONSISTENT, not refuted by ``unreported``."""
    res = fast_forward_audit(GaussianTS(), 1024, 32, 2, 16, seed=12)
    assert res.verdict == "CONSISTENT" and res.releases == 32 * 16 * 2, res.summary()


def test_traced_from_traces_only_the_window_and_acts_as_a_traced_run():
    tape = np.random.default_rng(3).random((4, 2, 300))
    full, tr_full = _run(PrivateEXP3(), tape, 300, 7)
    late, tr_late = _run(PrivateEXP3(), tape, 300, 7, traced_from=201, recorded=False)
    assert np.array_equal(full, late)  # the tracer observes, it does not steer
    assert len(tr_late.draws) == 100 and len(tr_full.draws) == 300  # one release per round
    assert np.array_equal(tr_late.draws[0].out, tr_full.draws[200].out)


def test_fast_forward_arguments():
    with pytest.raises(ValueError, match="replicates"):
        fast_forward_audit(PrivateEXP3(), 100, 8, 2, 16)
    with pytest.raises(ValueError, match="start"):
        fast_forward_audit(PrivateEXP3(), 0, 8, 2, 4)
