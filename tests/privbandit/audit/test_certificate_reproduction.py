"""The certificate's reproduction (session 14): a certificate attributed to one of the library's accountants
is never below the best the library's accountants give on the schedule's own events (worst record kind),
at the audit's deltas -- now including 1e-6 -- and at the policy's own delta. Our own planted variants,
not round 16's."""

from __future__ import annotations

import math

import pytest

from accountants import Certificate, RDPAccountant
from accountants.best import default_accountants
from privbandit.audit.certificate import CERT_DELTAS, certificate_shortfall, certificate_unreproduced
from privbandit.audit.whitebox import _with_own_delta
from privbandit.policies import make_policy
from privbandit.policies.adversarial import EXP3
from privbandit.policies.private_ucb import PrivateUCB


class _RDPHalfOrders(RDPAccountant):
    """An RDP accountant whose conversion forgets the log(1/delta)/(alpha - 1) term's factor (halved)."""

    def epsilon(self, delta: float) -> float:
        return 0.5 * super().epsilon(delta)


def _swapped(schedule_cls, method_owner):
    class Swapped(schedule_cls):
        def epsilon(self, rounds, delta, accountants=None):
            chosen = [(_RDPHalfOrders if f is RDPAccountant else f) for f in default_accountants()]
            return method_owner.epsilon(self, rounds, delta, chosen)
    return Swapped


def _rebuilt(schedule, cls):
    bad = object.__new__(cls)
    bad.__dict__.update(schedule.__dict__)
    return bad


def test_an_accountant_swapped_inside_a_pure_dp_schedule_is_refuted():
    # EXP3's events are PureDP guarantees: no floor exists for them, only the reproduction sees this
    good = EXP3().privacy_schedule(300, 3)
    assert certificate_shortfall(good, [75, 300]) is None and certificate_unreproduced(good, [75, 300]) is None
    bad = _rebuilt(good, _swapped(type(good), type(good)))
    assert certificate_shortfall(bad, [75, 300]) is None  # the floor is blind to it
    t, delta, cert, again, by = certificate_unreproduced(bad, [75, 300])
    assert by == "rdp" and cert < again


class _WrongAtOwnDelta:
    """A schedule wrapper: right everywhere but at one delta, where it claims 0.9 x its certificate."""

    def __init__(self, inner, own):
        self.inner, self.own = inner, own

    def events(self, rounds):
        return self.inner.events(rounds)

    def record_kinds(self, rounds):
        return self.inner.record_kinds(rounds)

    def epsilon(self, rounds, delta, accountants=None):
        cert = self.inner.epsilon(rounds, delta, accountants)
        if delta != self.own:
            return cert
        return Certificate(0.9 * cert.value, cert.by, {cert.by: 0.9 * cert.value})


def test_a_certificate_wrong_only_at_the_policys_own_delta_is_refuted_there():
    inner = PrivateUCB(epsilon=1.0).privacy_schedule(400, 2)
    odd = 3.7e-6  # not one of the audit's deltas
    bad = _WrongAtOwnDelta(inner, odd)
    assert odd not in CERT_DELTAS and certificate_unreproduced(bad, [100, 400]) is None

    class Policy:
        delta = odd
    assert certificate_unreproduced(bad, [100, 400], _with_own_delta(Policy())) is not None
    assert 1e-6 in CERT_DELTAS  # the library's default delta is always compared
    assert certificate_unreproduced(_WrongAtOwnDelta(inner, 1e-6), [100, 400]) is not None


@pytest.mark.parametrize("name", ["private_ts", "private_ucb", "dp_ucb_int", "exp3", "gaussian_ts", "lazy_dp_ts",
                                  "private_lin_ucb", "joint_dp_lin_ucb"])
def test_clean_schedules_reproduce(name):
    # Private-TS certifies its two record kinds separately (record_kinds), its events() is a looser PureDP:
    # reproducing on events() alone flagged it (0.24999999 vs 0.25002 at delta 1e-9, T = 200)
    policy = make_policy(name)
    for horizon, arms in ((200, 2), (2000, 5)):
        schedule = policy.privacy_schedule(horizon, arms)
        assert certificate_unreproduced(schedule, [horizon // 4, horizon], _with_own_delta(policy)) is None


def test_own_delta_is_read_only_when_it_is_a_probability():
    class P:
        delta = True
    assert _with_own_delta(P()) == CERT_DELTAS
    P.delta = 2.0
    assert _with_own_delta(P()) == CERT_DELTAS
    P.delta = math.nan
    assert _with_own_delta(P()) == CERT_DELTAS


def test_a_schedule_without_record_kinds_is_reproduced_on_its_events():
    class Bare:  # duck-typed: events and epsilon only
        def __init__(self, inner):
            self.inner = inner

        def events(self, rounds):
            return self.inner.events(rounds)

        def epsilon(self, rounds, delta, accountants=None):
            cert = self.inner.epsilon(rounds, delta, accountants)
            return Certificate(0.5 * cert.value, cert.by, {cert.by: 0.5 * cert.value})
    inner = PrivateUCB(epsilon=1.0).privacy_schedule(400, 2)
    assert certificate_unreproduced(Bare(inner), [100, 400]) is not None
