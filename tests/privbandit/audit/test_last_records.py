"""``whitebox_audit(last_records=...)`` (session 13, lead): coupled replicates whose changed record is the one
revealed in the run's last round. Round 15's blind ``exp3_lap_last_round_double`` (the horizon's last record
released at twice its sensitivity) was CONSISTENT on every earlier run: no later decision reads that release, and
no replicate changed that record. The planted case here is our own (Private-UCB, the last record tripled)."""

from __future__ import annotations

import numpy as np

from privbandit.audit import whitebox_audit
from privbandit.policies import PrivateUCB


class PrivateUCBLastTripled(PrivateUCB):
    """Private-UCB whose tree takes the record of the horizon's last round as 3 r (after the mechanism's [0, 1]
    check), still reported at sensitivity 1: true eps 3x the claim for that record."""

    name = "t_private_ucb_last_tripled"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        tree, inner, state = run.tree, run.update, {"t": 0}

        def insert(v, f, rr, kk):  # the class's (traced) _insert, the validated values tripled at T
            return type(tree)._insert(tree, v * 3.0 if state["t"] == horizon else v, f, rr, kk)

        def update(t, arms, rewards):
            state["t"] = t
            return inner(t, arms, rewards)

        tree._insert = insert
        run.update = update
        return run


def test_last_round_record_is_reached():
    kwargs = dict(seed=11, law=False, observer=False, sweep_records=16)
    bad = PrivateUCBLastTripled(epsilon=1.0)
    assert whitebox_audit(bad, 300, 2, 4, **kwargs).verdict == "CONSISTENT"  # without last_records: a miss
    caught = whitebox_audit(bad, 300, 2, 4, last_records=8, **kwargs)
    assert caught.verdict == "VIOLATION" and "sensitivity" in caught.checks, caught.summary()
    clean = whitebox_audit(PrivateUCB(epsilon=1.0), 300, 2, 4, last_records=8, **kwargs)
    assert clean.verdict == "CONSISTENT", clean.summary()
    assert any("last round" in n for n in clean.notes)


def test_last_records_must_be_a_multiple_of_four():
    import pytest
    with pytest.raises(ValueError, match="last_records"):
        whitebox_audit(PrivateUCB(epsilon=1.0), 50, 2, 4, last_records=3)
