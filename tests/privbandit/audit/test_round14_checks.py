"""Session 12's checks (docs/audit.md, "Session 12 (s12/audit)"), each against one representative planted case
and its clean twin; every case here was a traceback or a miss before them:

* an exception raised by the audited policy is an observation (privbandit/audit/raised.py): a policy raising on
  one neighbour only is refuted (coupled white-box runs, black-box single runs), one raising on both alike makes
  the audit INCONCLUSIVE naming the exception (white-box, black-box, ledger, the CLI: exit 3) -- never CONSISTENT,
  never a traceback;
* the contextual far-contexts run (norms to 2^40 L): round 13's ``lin_beyond_far_units`` refuted, round 11's
  ``lin_contexts_unclipped`` (whose Gram matrix goes singular there) INCONCLUSIVE, not a crash;
* the star on 33 arms (a hub of degree 32): round 13's ``graph_hub8_round_tags`` refuted;
* the far schedule check (privbandit/audit/far_schedule.py): round 13's ``ts_schedule_capped_far`` refuted,
  and a schedule whose certificate falls far out.
"""

from __future__ import annotations

import argparse
import contextlib
import io

import numpy as np
import pytest

from privbandit.audit import Audit, Budget, Neighbours, contextual_whitebox_audit, ledger_audit, whitebox_audit
from privbandit.audit.cli import GRAPH, add_parser
from privbandit.audit.far_schedule import far_schedule_check
from privbandit.audit.graph import graph_whitebox_audit
from privbandit.envs import Bernoulli
from privbandit.policies import REGISTRY, GaussianTS, PrivateLinUCB, PrivateUCB
from privbandit.policies.gaussian_ts import GaussianTSSchedule
from privbandit.policies.graph_private import DPUCBN
from _bench import load as _load  # bench/'s planted-bug modules, loaded by file

bugs = _load("audit_planted_bugs")
r13 = _load("audit_planted_round13")


# --- planted: a policy that raises ------------------------------------------------------------------------
class FlatJumpRaises(PrivateUCB):
    """Private-UCB that raises FloatingPointError on a reward of exactly 1 after three rewards of exactly 1/2
    on the same arm ("a flat stream that jumps is corrupt input"): it reads the raw rewards, and on the audit's
    tapes only a neighbour's changed record makes such a jump -- it raises on D' and never on D."""

    name = "t_flat_jump_raises"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        flat = np.zeros((replicates, n_arms), dtype=np.int64)
        inner = run.update

        def update(t, arms, rewards):
            rows, r = np.arange(replicates), np.asarray(rewards, dtype=float)
            if np.any((r == 1.0) & (flat[rows, arms] >= 3)):
                raise FloatingPointError("reward jumped off a flat stream")
            flat[rows, arms] = np.where(r == 0.5, flat[rows, arms] + 1, -(10**9))
            return inner(t, arms, rewards)

        run.update = update
        return run


class FifthRoundRaises(PrivateUCB):
    """Private-UCB with a four-round buffer: it raises IndexError in round 5 whatever the data (both alike)."""

    name = "t_fifth_round_raises"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        inner = run.update

        def update(t, arms, rewards):
            if t == 5:
                raise IndexError("a buffer of four rounds")
            return inner(t, arms, rewards)

        run.update = update
        return run


def _flat_pair():
    """Neighbouring tapes: every reward 1/2 but arm 0's fifth, 0 on D and 1 on D'."""
    tape = np.full((2, 30), 0.5)
    tape[0, 4] = 0.0
    prime = tape.copy()
    prime[0, 4] = 1.0
    return Neighbours.pair(tape, prime)


def test_whitebox_refutes_a_policy_raising_on_one_neighbour_only_and_its_clean_twin_passes():
    res = whitebox_audit(FlatJumpRaises(), 200, 2, 32, seed=0, law=False)
    assert res.verdict == "VIOLATION" and res.checks == ["raised"]
    assert "FloatingPointError" in res.findings[0].detail and "the run on D completed" in res.findings[0].detail
    clean = whitebox_audit(PrivateUCB(), 200, 2, 32, seed=0, law=False)
    assert clean.verdict == "CONSISTENT" and clean.error is None


def test_whitebox_ledger_and_blackbox_are_inconclusive_when_both_neighbours_raise_alike():
    res = whitebox_audit(FifthRoundRaises(), 200, 2, 32, seed=0, law=False)
    assert res.verdict == "INCONCLUSIVE" and not res.findings
    assert "IndexError in round 5" in res.error and "IndexError" in res.summary()
    led = ledger_audit(FifthRoundRaises(), Bernoulli([0.5, 0.5]), 50, 4, tight=False)
    assert led.verdict == "INCONCLUSIVE" and "IndexError in round 5" in led.error
    bb = Audit.policy(FifthRoundRaises(), 20, 2, neighbours=_flat_pair(), budget=Budget(2000), seed=0).run()
    assert bb.verdict == "INCONCLUSIVE" and "IndexError" in bb.error and "ERROR" in bb.summary()


def test_blackbox_certifies_a_raise_on_one_neighbour_as_a_violation():
    """Single runs per side (core.RAISE_RUNS): raised in every run on D', never on D -> eps_lb ~ 5.8 > claim."""
    bb = Audit.policy(FlatJumpRaises(), 20, 2, neighbours=_flat_pair(), budget=Budget(2000), seed=0).run()
    assert bb.verdict == "VIOLATION" and bb.error is None
    assert bb.rows[0].certified.event.numerator == "D'" and "raised" in bb.rows[0].certified.event.score_name
    assert bb.eps_lb > 4.0


def test_cli_reports_an_exception_raised_alike_as_inconclusive_exit_3(monkeypatch):
    monkeypatch.setitem(REGISTRY, FifthRoundRaises.name, FifthRoundRaises)
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["audit", FifthRoundRaises.name, "--tier", "smoke", "--allow-inconclusive"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = args.func(args)
    text = out.getvalue()
    assert rc == 3  # an exception is not a lack of power: --allow-inconclusive does not make it 0
    verdict = [line for line in text.splitlines() if line.startswith("VERDICT:")][0]
    assert verdict.startswith("VERDICT: INCONCLUSIVE") and "ERROR" in verdict and "IndexError" in verdict


# --- contexts to 2^40 L --------------------------------------------------------------------------------------
def test_far_contexts_refute_lin_beyond_far_units_and_an_unclipped_gram_matrix_is_no_crash():
    bug = contextual_whitebox_audit(r13.LinBeyondFarUnits(), 200, 2, 16, seed=2, law=False, far=True)
    assert bug.verdict == "VIOLATION" and "sensitivity" in bug.checks
    crash = contextual_whitebox_audit(bugs.LinContextsUnclipped(), 200, 2, 16, seed=2, law=False, far=True)
    assert crash.verdict == "INCONCLUSIVE" and "LinAlgError" in crash.error
    clean = contextual_whitebox_audit(PrivateLinUCB(), 200, 2, 16, seed=2, law=False, far=True)
    assert clean.verdict == "CONSISTENT"


# --- a hub of degree 32 --------------------------------------------------------------------------------------
def test_the_high_degree_star_refutes_graph_hub8_round_tags():
    arms = GRAPH["hub_arms"]
    assert arms - 1 >= 16
    bug = graph_whitebox_audit(r13.GraphHub8RoundTags(), 200, arms, 64, seed=9, shape="star", law=False)
    assert bug.verdict == "VIOLATION" and "round_records" in bug.checks
    clean = graph_whitebox_audit(DPUCBN(), 200, arms, 64, seed=9, shape="star", law=False)
    assert clean.verdict == "CONSISTENT"


# --- the far schedule --------------------------------------------------------------------------------------
class _FallingFar(GaussianTSSchedule):
    """A schedule that counts a quarter of the releases past 2^20 rounds ("the early ones are forgotten")."""

    def releases(self, rounds):
        n = GaussianTSSchedule.releases(self, rounds)
        return n if rounds < 2**20 else n // 4


class TSFallingFar(GaussianTS):
    def privacy_schedule(self, horizon, n_arms):
        super().privacy_schedule(horizon, n_arms)
        return _FallingFar(self.b, self.c, n_arms)


def test_far_schedule_refutes_a_capped_count_and_a_falling_certificate_not_the_clean_schedule():
    capped = far_schedule_check(r13.TSScheduleCappedFar(), 2)
    assert not capped.passed and "posterior" in capped.findings[0] and "524288" in capped.findings[0]
    falling = far_schedule_check(TSFallingFar(), 2)
    assert not falling.passed and any("falls" in f for f in falling.findings)
    clean = far_schedule_check(GaussianTS(), 2)
    assert clean.passed and clean.references == ["posterior (GaussianPosteriorRelease, from round 2)"]
    tree = far_schedule_check(PrivateUCB(), 2)  # a stream mechanism's reference: the tree's bit_length(n) nodes
    assert tree.passed and tree.references and "TreeMechanism" in tree.references[0]


@pytest.mark.parametrize("b", [0, 3])
def test_far_schedule_reference_holds_for_gaussian_ts_with_pre_pulls(b):
    assert far_schedule_check(GaussianTS(b=b, c=2.0), 3).passed


class TSShortHorizon(GaussianTS):
    """A schedule that refuses horizons above 2^30 (a policy sized for shorter runs): nothing to check far out."""

    def privacy_schedule(self, horizon, n_arms):
        if horizon > 2**30:
            raise ValueError(f"horizon must be a whole number in [1, 2^30], got {horizon}")
        return super().privacy_schedule(horizon, n_arms)


def test_far_schedule_notes_a_schedule_that_refuses_the_far_horizon_instead_of_raising():
    res = far_schedule_check(TSShortHorizon(), 2)
    assert res.passed and "raised ValueError" in res.notes[0]
