"""Session 16's review: delta(eps) = 0 at and above the pure sum (s16/acc) is answered only from the pure terms
``compose`` recorded. A subclass that adds releases by a path of its own (not the documented ``_add`` under
``compose``) leaves the record empty, whose sum 0 would have answered delta 0 at every epsilon."""

import math

import accountants as A


class _OwnPath(A.GDPAccountant):
    """Adds releases without the base compose (outside the subclass contract, but possible)."""

    def add_directly(self, leaf, count):
        self._add(leaf, count)
        return self


def test_a_release_added_outside_compose_is_not_read_as_pure_nothing():
    acc = _OwnPath().add_directly(A.Gaussian(1.0), 1)
    assert acc.delta(0.5) > 0.1  # its own curve: N(0, 1)'s delta at 0.5 is ~0.28, not the empty record's 0
    assert acc.delta(0.5) == A.GDPAccountant().compose(A.Gaussian(1.0)).delta(0.5)


def test_pure_compositions_still_answer_zero_above_their_sum():
    acc = A.GDPAccountant().compose(A.PureDP(0.1), 1000)
    assert acc.delta(acc.pure_epsilon()) == 0.0 and acc.delta(math.nextafter(acc.pure_epsilon(), 0.0)) > 0.0
    assert A.GDPAccountant().delta(0.0) == 0.0  # nothing composed: its own curve
