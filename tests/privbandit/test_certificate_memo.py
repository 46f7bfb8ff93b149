"""The memoised certificates of schedules never answer one query with another's accountants.

CachedSchedule (DP-TS, Lazy-DP-TS, Private-TS) and StreamsSchedule (the graph policies) memoise
certificates by event, delta and accountants. The accountants were keyed by ``id``: a factory freed
after one query could hand its recycled id to a different factory of the next query, which then got
the first one's certificate (an optimistic PLD's value returned for the pure accountant).
"""

import pytest

from accountants import KOVHeterogeneousAccountant, PureAccountant, RDPAccountant
from privbandit import budget
from privbandit.policies import REGISTRY


class _Factory:
    """A callable accountant factory (hashable by identity, like a lambda or a partial)."""

    def __init__(self, make):
        self.make = make

    def __call__(self):
        return self.make()


def _schedules():
    yield REGISTRY["lazy_dp_ts"]().privacy_schedule(1000, 2)
    yield budget._schedule(REGISTRY["lazy_dp_ts_n"](), 1000, 3, {"max_degree": 2}, "round")


def _query(sched, make):
    return sched.epsilon(1000, 1e-6, [_Factory(make)])  # the factory is freed on return


@pytest.mark.parametrize("index", [0, 1])
def test_a_fresh_factory_never_gets_a_freed_factorys_certificate(index):
    sched = list(_schedules())[index]
    makers = [("pure", PureAccountant), ("rdp", RDPAccountant), ("kov", KOVHeterogeneousAccountant)]
    for i in range(9):
        name, make = makers[i % 3]
        cert = _query(sched, make)
        assert cert.by == name and set(cert.values) == {name}
