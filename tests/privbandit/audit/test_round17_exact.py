"""Session 17 (s17/exact): the ledger check has no slack -- a schedule short by far less than the old
tolerances (ledger_audit 1e-6 relative, a tight run's realized_within_certificate 1e-9) is caught.

A record's realized spend and its certificate are the same accountants on the record's releases and on the
schedule's; after session 17's fixes (one-Laplace profile an accountant, exact pure sums) none of 3,186
readings of every private policy, nor of 168 ledger audits, sat above its certificate at 0 slack."""

import numpy as np

from accountants import Laplace
from accountants.events import NO_EVENT
from privbandit.audit import ledger_audit
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.schedule import EventSchedule

from _audit_planted import EpochLaplaceGreedy

ENV = Bernoulli([0.45, 0.55])


class _SlightlyShort(EpochLaplaceGreedy):
    """Draws Lap(1/eps) but declares Lap((1 + short)/eps), at the exact count (releases at t = 4, 8, 16, ...
    with two arms; the toy's own schedule counts one more): the certificate ~short relative below the spend."""

    def __init__(self, epsilon=1.0, short=1e-10):
        super().__init__(epsilon)
        self.short = short

    def privacy_schedule(self, horizon, n_arms):
        scale = (1.0 + self.short) / self.epsilon

        def events(t):
            n = int(np.floor(np.log2(t))) - 1 if t >= 4 else 0
            return Laplace(scale, 1.0) * n if n else NO_EVENT

        return EventSchedule(events)


def test_ledger_audit_catches_a_schedule_short_by_1e_9():
    res = ledger_audit(_SlightlyShort(short=1e-9), ENV, 20, 2, seeds=(0,), tight=True)
    assert not res.passed
    assert {v.kind for v in res.violations} >= {"epsilon[PureAccountant]"}
    assert ledger_audit(EpochLaplaceGreedy(), ENV, 20, 2, seeds=(0,), tight=True).passed  # the honest one


def test_a_tight_run_reads_a_schedule_short_by_1e_10_as_above_it():
    short = simulate(_SlightlyShort(short=1e-10), ENV, 20, 2, seed=0, ledger="tight", progress=False,
                     ledger_replicates=None)
    assert not short.realized_within_certificate() and short.realized_fraction() > 1.0
    honest = simulate(EpochLaplaceGreedy(), ENV, 20, 2, seed=0, ledger="tight", progress=False, ledger_replicates=None)
    assert honest.realized_within_certificate()
