"""delta = 0 (session 15) survives copies, deep copies and pickles of every accountant.

``Accountant.pure_epsilon`` answers epsilon at delta = 0 from a record ``compose`` keeps beside each
accountant's own state. A copy that rebuilt the accountant without that record (the PLD's
``__deepcopy__`` did) answered epsilon 0 at delta 0 for any composition -- Gaussians included: a
certificate below the truth. A state pickled before the record existed must not read as "nothing
composed" either: its releases' purity is unknown, so it answers ``inf`` (valid) at delta 0.
"""
import copy
import math
import pickle

import pytest

import accountants as A
from accountants.events import Gaussian, Laplace, PureDP

ACCOUNTANTS = [A.PureAccountant, A.GDPAccountant, A.AdvancedCompositionAccountant, A.KOVHeterogeneousAccountant,
               A.OptimalHomogeneousAccountant, A.RDPAccountant, A.PLDAccountant]
EVENTS = [PureDP(0.5), Laplace(scale=2.0), Gaussian(sigma=3.0)]
COPIES = {"copy": lambda a: a.copy(), "deepcopy": copy.deepcopy, "pickle": lambda a: pickle.loads(pickle.dumps(a))}


# every (accountant, event) pair the accountant bounds (KOV and the optimal composition take no Gaussian)
SUPPORTED = [(cls, event) for cls in ACCOUNTANTS for event in EVENTS if cls().supports(event)]


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("cls, event", SUPPORTED, ids=lambda x: getattr(x, "__name__", repr(x)))
def test_copies_answer_delta_zero_as_the_original(cls, event, how):
    acc = cls().compose(event, 3)
    twin = COPIES[how](acc)
    expected = 3 * event.epsilon_delta()[0] if event.epsilon_delta() and event.epsilon_delta()[1] == 0 else math.inf
    assert acc.epsilon(0) >= expected and twin.epsilon(0) == acc.epsilon(0)
    assert twin.epsilon(1e-6) == acc.epsilon(1e-6)
    # composing into the copy leaves the original's answer alone
    twin.compose(event)
    assert acc.epsilon(0) >= expected and twin.epsilon(0) >= acc.epsilon(0)


@pytest.mark.parametrize("cls", ACCOUNTANTS, ids=lambda c: c.__name__)
def test_nothing_composed_is_zero_in_every_copy(cls):
    for how, f in COPIES.items():
        assert f(cls()).epsilon(0) == 0.0, how


@pytest.mark.parametrize("cls", ACCOUNTANTS, ids=lambda c: c.__name__)
def test_a_state_saved_before_the_record_answers_inf_at_delta_zero(cls):
    acc = cls().compose(PureDP(0.5), 3)
    state = {k: v for k, v in vars(acc).items() if not k.startswith("_pure")}
    old = cls.__new__(cls)  # what unpickling does: __new__, then __setstate__ with the saved dict
    old.__setstate__(state)
    assert old.epsilon(0) == math.inf
    # (session 17: a pure accountant that knows its releases are pure answers their exact sum at every delta; the
    # restored state does not know it and answers its running sum rounded up by 1e-13, as before -- both valid)
    assert old.epsilon(1e-6) == (acc.total_epsilon if cls is A.PureAccountant else acc.epsilon(1e-6))
