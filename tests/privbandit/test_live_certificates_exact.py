"""Live certificates of the graph-feedback, adversarial and contextual private policies against exact
references built from the releases each run actually made (session 10, docs/accountants.md).

A run with a tight ledger gives, per record (per round under the "round" relation), the multiset of
mechanisms whose footprint holds it (DESIGN.md, "Per-record composition"). Their composition's true
privacy curve lies above a rigorous lower bound (tests/accountants/_exact.py,
``event_log_delta_lower``: rounded-down Laplace losses composed with a proven error bound subtracted,
exact GDP in mpmath for Gaussians). The run's certified epsilon at delta -- the live certificate, the
schedule evaluated at the horizon -- must therefore have that lower bound <= delta, at every delta.
"""

import math
import warnings

import numpy as np
import pytest

import privbandit.ledger as ledger_module
from privbandit.contextual import LinearContextual
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.envs.graph import GraphFeedback
from privbandit.envs.graphs import ErdosRenyi
from privbandit.policies import REGISTRY
from privbandit.policies.base import schedule_for

from tests.accountants._exact import event_log_delta_lower

GRAPH = GraphFeedback(Bernoulli(np.linspace(0.1, 0.9, 5)), ErdosRenyi(5, 0.5), graph_seed=3)
CONTEXTS = LinearContextual(5, 3, noise=0.1)  # the policies default to dim = 5
ARMS = Bernoulli([0.2, 0.4, 0.6, 0.8])
DELTAS = (1e-3, 1e-10, 1e-100)
RUN_DELTA = 1e-10  # the run reports its live certificate at this delta; the others from the same schedule

CASES = [("dp_ucb_n", GRAPH, "entry"), ("dp_ucb_n", GRAPH, "round"), ("lazy_dp_ts_n", GRAPH, "round"),
         ("gaussian_ts_n", GRAPH, "round"), ("dp_exp3_lap", ARMS, "entry"), ("private_exp3", ARMS, "entry"),
         ("private_lin_ucb", CONTEXTS, "entry"), ("joint_dp_lin_ucb", CONTEXTS, "entry")]


def _run(name, env, relation, horizon, replicates=2):
    """(the run's result, its tight ledger)."""
    books = []

    class Capturing(ledger_module.Ledger):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            books.append(self)

    original = ledger_module.Ledger
    ledger_module.Ledger = Capturing  # simulate imports the class from the module at run time
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = simulate(REGISTRY[name](), env, horizon, replicates, seed=5, delta=RUN_DELTA, ledger="tight",
                           ledger_replicates=None, relation=relation, progress=False)
    finally:
        ledger_module.Ledger = original
    assert len(books) == 1
    return res, books[0]


@pytest.mark.parametrize("name, env, relation", CASES, ids=[f"{n}-{r}" for n, _, r in CASES])
def test_live_certificate_never_below_the_exact_curve_of_the_releases(name, env, relation):
    horizon = 48
    res, book = _run(name, env, relation, horizon)
    sched = schedule_for(REGISTRY[name](), horizon, env.n_arms, env.structure(), relation)
    assert res.certified_epsilon[-1] == sched.epsilon(horizon, RUN_DELTA).value  # the live certificate
    events = [ev for r in range(res.replicates) for ev in book.maximal_record_events(r, relation)]
    assert events  # the run released something
    for delta in DELTAS:
        cert = sched.epsilon(horizon, delta).value
        for ev in events:
            assert event_log_delta_lower(ev, cert) <= math.log(delta), (delta, cert, ev)
