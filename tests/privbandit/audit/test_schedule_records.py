"""Schedule-aware changed records (docs/audit.md, "Round 7"): ``whitebox_audit(schedule_records=S)`` adds S
coupled replicates whose changed record sits on the policy's own release boundaries, read off the run on D
(the newest record at each sparse release, or the one after it). Bugs acting only there -- an interval's
newest record counted twice from the second interval on, a gap batch carrying its closing record into the
next, an index reading the first record after a release raw -- are missed by the early and the late (log-uniform, power-of-two) placements at these seeds and
refuted with the schedule replicates; the clean twins stay CONSISTENT (the checks are exact: no alpha).

The seeds are fixed: a witness needs a replicate whose changed record sits on the one boundary the bug
acts on (measured at these sizes: 7 of 8 seeds for the gap-batch bug, 4 of 4 for the interval bug, 6 of 6 for
the peeking index, against 0 of 8, 1 of 4 and 2 of 6 without schedule replicates; the small interval 23
keeps the tests short and makes the log-uniform picks hit a boundary more often than at the default 197)."""

import numpy as np
import pytest

from privbandit.audit.whitebox import _run, neighbour_tapes, release_boundaries, schedule_positions, whitebox_audit
from privbandit.policies import AnytimeLazyUCB, DPUCBInt, PrivateTS, PrivateUCB

from _whitebox_planted import GapBatchCarriesLast, IntervalNewestTwice, IntervalPeeksFirstAfter

CASES = [
    # (bug, clean twin, horizon, seed, the checks that refute it)
    (IntervalNewestTwice(), DPUCBInt(interval=23), 1000, 1, ["sensitivity"]),
    (GapBatchCarriesLast(), PrivateTS(), 1000, 0, ["footprint", "footprint_position"]),
    (IntervalPeeksFirstAfter(), DPUCBInt(interval=23), 1000, 1, ["decisions"]),
]


@pytest.mark.parametrize("bug, clean, horizon, seed, checks", CASES, ids=[type(c[0]).__name__ for c in CASES])
def test_schedule_records_refute_bugs_on_release_boundaries(bug, clean, horizon, seed, checks):
    # without the schedule replicates: early and late (log-uniform, 2^j) changed records miss the bug
    old = whitebox_audit(bug, horizon, 2, 32, seed=seed, law=False, late_records=True)
    assert old.verdict == "CONSISTENT", old.summary()
    res = whitebox_audit(bug, horizon, 2, 32, seed=seed, law=False, late_records=True, schedule_records=32)
    assert res.verdict == "VIOLATION" and res.checks == checks, res.summary()
    assert res.replicates == 64
    twin = whitebox_audit(clean, horizon, 2, 32, seed=seed, law=False, late_records=True, schedule_records=32)
    assert twin.verdict == "CONSISTENT" and not twin.findings, twin.summary()


def _boundaries(policy, horizon, reps=8, n_arms=2):
    tape, _, _, _ = neighbour_tapes(n_arms, horizon, reps, np.random.default_rng(4))
    actions, tracer = _run(policy, tape, horizon, np.random.SeedSequence(2))
    arm = np.arange(reps) % n_arms
    return release_boundaries(tracer, actions, arm), actions, arm


def test_boundaries_are_the_policys_own_release_schedule_in_pull_numbering():
    # DP-UCB-Int with interval 23 releases an arm's mean at its pulls 23, 46, ...: the newest records
    # then are 22, 45, ... (every one the arm reached by the horizon, and nothing else)
    events, actions, arm = _boundaries(DPUCBInt(interval=23), 400)
    for r, ev in enumerate(events):
        pulls = int((actions[r] == arm[r]).sum())
        assert np.array_equal(ev, np.arange(22, pulls, 23)), (r, ev, pulls)
    # doubling fresh batches (1, 2, 4, ... records): the batch ends 2^j - 2 (the one-record first batch,
    # at record 0, is not a jump of two records)
    events, actions, arm = _boundaries(AnytimeLazyUCB(), 300)
    for r, ev in enumerate(events):
        pulls = int((actions[r] == arm[r]).sum())
        assert np.array_equal(ev, [(1 << j) - 2 for j in range(2, 12) if (1 << j) - 2 < pulls]), (r, ev)
    # a tree releases at every record: no boundary is marked
    events, _, _ = _boundaries(PrivateUCB(), 200)
    assert all(ev.size == 0 for ev in events)


def test_schedule_positions_sit_on_a_boundary_or_the_next_record():
    events = [np.array([22, 45, 68]), np.zeros(0, np.int64), np.array([5])] * 20
    pull, placed = schedule_positions(events, 500, np.random.default_rng(0), first=6, late=250)
    assert placed == 40
    for p, ev in zip(pull, events):
        if ev.size:
            assert p in set(ev) | set(ev + 1)
        else:
            assert 6 <= p < 250
    on_last = np.mean([p in set(ev) for p, ev in zip(pull, events) if ev.size])
    assert 0.4 < on_last < 0.95  # the last record with probability 2/3 (40 draws: a 4-sigma band)


def test_schedule_replicates_are_neighbours_of_their_unchanged_tapes():
    # the schedule replicates' D' differs from D in exactly one record, by at least 1/2
    import privbandit.audit.whitebox as wb

    seen = {}
    run = wb._run

    def spy(policy, tapes, horizon, seed, **kw):
        seen.setdefault("tapes", []).append(tapes.copy())
        return run(policy, tapes, horizon, seed, **kw)

    wb._run = spy
    try:
        res = whitebox_audit(DPUCBInt(interval=23), 300, 2, 8, seed=3, law=False, schedule_records=8,
                             seed_runs=0)  # (the seed check's two runs would be spied too)
    finally:
        wb._run = run
    assert res.verdict == "CONSISTENT"
    d, p = seen["tapes"]
    diff = np.abs(d - p)
    assert np.array_equal((diff > 0).sum(axis=(1, 2)), np.ones(16))
    assert diff.max(axis=(1, 2)).min() >= 0.5


def test_schedule_records_must_be_a_multiple_of_four():
    with pytest.raises(ValueError, match="schedule_records"):
        whitebox_audit(DPUCBInt(interval=23), 100, 2, 8, schedule_records=6)
