"""Round 12's checks (docs/audit.md, "Round 12"), each against a representative planted bug of
bench/audit_planted_round12.py (loaded from the bench, not copied) and a clean policy:

* ``ledger_observer``: the run repeated without a ledger must act as the run with one
  (privbandit/audit/whitebox.py, check 12);
* the noise law per stream (every mechanism of one stream pooled), where a scale wrong on a few arms is
  not diluted by the others;
* the runs that reach more: 8 arms (arm indices 6, 7; a star whose hub has degree 7), contexts
  log-uniform up to 2^16 L, and the far ledger run (2^17 rounds on a starving environment).

Every bug here was missed by the audit before round 12 (docs/audit.md's table "before")."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

from privbandit.audit import ledger_audit
from privbandit.audit.cli import FAR, GRAPH, WB_MANY_ARMS
from privbandit.audit.contextual import contextual_whitebox_audit
from privbandit.audit.discover import default_constructible, private_policies
from privbandit.audit.graph import graph_whitebox_audit
from privbandit.audit.whitebox import _ledger_observer, _run, _stream_law, neighbour_tapes, whitebox_audit
from privbandit.envs import Bernoulli
from privbandit.policies import make_policy

_BENCH = pathlib.Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(_BENCH))  # the round-12 module imports the earlier rounds' helpers by name
_spec = importlib.util.spec_from_file_location("audit_planted_round12", _BENCH / "audit_planted_round12.py")
bugs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bugs)


# --- check 12: ledger_observer ------------------------------------------------------------------------
def test_a_path_taken_only_without_a_ledger_is_refuted():
    bug = whitebox_audit(bugs.HybridNoLedgerHalf(), 200, 2, 32, seed=0, law=False)
    assert "ledger_observer" in bug.checks, bug.summary()
    assert bug.checks == ["ledger_observer"]  # every other check reads the run with a ledger
    clean = whitebox_audit(make_policy("dp_ucb_bound"), 200, 2, 32, seed=0, law=False)
    assert clean.checks == [], clean.summary()


def test_every_unmodified_k_armed_policy_acts_the_same_without_a_ledger():
    tape, _, _, _ = neighbour_tapes(2, 60, 8, np.random.default_rng(1))
    for name, cls in private_policies().items():
        if not default_constructible(cls) or "contexts" in getattr(cls, "requires", ()):
            continue
        policy = cls()
        seq = np.random.SeedSequence(3)
        actions, _ = _run(policy, tape, 60, seq)
        assert _ledger_observer(policy, tape, 60, seq, actions) is None, name


# --- noise law per stream -------------------------------------------------------------------------------
def _rel(resid, streams, scale=1.0):
    n = resid.size
    return {"stat": np.zeros(n), "out": resid * scale, "param": np.full(n, scale), "exact": np.zeros(n, np.int64),
            "kind": np.array(["laplace"] * n), "st": streams}


def test_stream_law_rejects_one_stream_at_half_scale_and_not_the_law():
    rng = np.random.default_rng(0)
    streams = np.repeat(np.arange(8), 500)
    z = rng.laplace(size=streams.size)
    fam = np.array(["laplace"] * streams.size)
    idx = np.arange(streams.size)
    clean = _stream_law(_rel(z, streams), idx, fam, 1e-4)
    assert len(clean) == 8 and not any(g.rejected for g in clean)
    # the pooled distance of one stream in eight at half the scale is ~0.016: no pooled test would see it
    z[streams == 6] *= 0.5
    bad = _stream_law(_rel(z, streams), idx, fam, 1e-4)
    assert [g.mechanism for g in bad if g.rejected] == ["stream 6 (every mechanism)"]


def test_a_scale_wrong_only_for_arms_six_and_up_is_refuted_with_eight_arms():
    assert WB_MANY_ARMS >= 8  # arm indices 6 and 7 hold records in the more-arms run
    bug = whitebox_audit(bugs.LazyArmSevenHalf(), 200, WB_MANY_ARMS, 124, seed=4)
    assert bug.checks == ["noise_law"], bug.summary()
    assert "stream 6" in bug.findings[0].detail or "stream 7" in bug.findings[0].detail, bug.summary()
    clean = whitebox_audit(make_policy("lazy_dp_ts"), 200, WB_MANY_ARMS, 124, seed=4)
    assert clean.checks == [], clean.summary()


# --- more reach: a hub of degree 7, contexts far above 16 L, the far ledger run ---------------------------
def test_star_on_eight_arms_reaches_a_hub_of_degree_seven():
    assert GRAPH["shape_arms"] >= 8
    bug = graph_whitebox_audit(bugs.GraphHub7RoundTags(), 200, GRAPH["shape_arms"], 16, seed=0, shape="star")
    assert bug.checks == ["round_records"], bug.summary()
    before = graph_whitebox_audit(bugs.GraphHub7RoundTags(), 200, 6, 16, seed=0, shape="star")  # degree 5
    assert before.checks == [], before.summary()


def test_contexts_far_above_16_l_reach_a_clip_that_fails_past_64_l():
    bug = contextual_whitebox_audit(bugs.LinOutlierUnits(), 100, 2, 32, seed=0)
    assert "sensitivity" in bug.checks, bug.summary()
    clean = contextual_whitebox_audit(bugs.LinHugeContextsStable(), 100, 2, 32, seed=0)
    assert clean.checks == [], clean.summary()


@pytest.mark.parametrize("cls, passed", [("TSScheduleCappedRounds", False), ("GaussianTS", True)])
def test_far_ledger_run_exceeds_a_schedule_that_stops_counting(cls, passed):
    policy = getattr(bugs, cls)()
    starving = Bernoulli([1.0, 0.0])
    # one replicate, as round 12's far run (cli.FAR has 8 since round 13, for the far noise law): a schedule
    # that stops counting is exceeded by any replicate
    res = ledger_audit(policy, starving, FAR["horizon"], 1, seeds=(7,), tight=False)
    assert res.passed is passed, res.summary()
    if not passed:
        assert res.violations[0].kind == "mu"


class _NeedsALedger(type(make_policy("dp_ucb_bound"))):
    """Correct with a ledger; raises without one (its update reads the ledger)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        update = run.update

        def upd(t, arms, rewards):
            ledger.draws  # AttributeError when there is none
            return update(t, arms, rewards)

        run.update = upd
        return run


def test_a_run_that_cannot_go_without_a_ledger_is_noted_not_refuted():
    res = whitebox_audit(_NeedsALedger(), 100, 2, 16, seed=0, law=False)
    assert res.checks == [], res.summary()
    assert any(n.startswith("ledger_observer: the run without a ledger raised AttributeError") for n in res.notes)
