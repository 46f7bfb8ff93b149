"""White-box ledger audit: every private policy spends at most its schedule; planted bugs are caught."""

import numpy as np
import pytest

from privbandit.audit import ledger_audit
from privbandit.audit.discover import default_constructible, private_policies
from privbandit.contextual import LinearContextual
from privbandit.envs import Bernoulli, ErdosRenyi, GraphFeedback
from privbandit.policies import REGISTRY
from privbandit.policies.gaussian_ts import GaussianTS

from _audit_planted import EpochLaplaceGreedy, UnderCountingGaussianTS

ENV = Bernoulli([0.45, 0.55])
CONTEXT_ENV = LinearContextual(5, 2, noise=0.1)  # for policies that require contexts (dim 5 = their default)
GRAPH_ENV = GraphFeedback(Bernoulli([0.45, 0.55, 0.5]), ErdosRenyi(3, 0.5), graph_seed=0)  # side observations


def _default_constructible_private():
    return [pytest.param(cls, id=name) for name, cls in private_policies().items() if default_constructible(cls)]


@pytest.mark.parametrize("policy", [GaussianTS(), GaussianTS(b=2, c=1.0), GaussianTS(b=3, c=4.0),
                                    EpochLaplaceGreedy(0.5)], ids=repr)
def test_private_policies_pass_tight_ledger_audit(policy):
    res = ledger_audit(policy, ENV, 40, 12, seeds=(0, 1), tight=True)
    assert res.passed, res.summary()
    assert res.max_realized_mu[-1] > 0  # the ledger did record releases


@pytest.mark.parametrize("cls", _default_constructible_private())
def test_every_private_policy_passes_ledger_audit(cls):
    # every private policy present in privbandit.policies, registered or not, at its defaults
    requires = getattr(cls, "requires", ())
    env = CONTEXT_ENV if "contexts" in requires else GRAPH_ENV if "graph" in requires else ENV
    res = ledger_audit(cls(), env, 60, 200, seeds=(0,), tight=False)
    assert res.passed, res.summary()
    res = ledger_audit(cls(), env, 40, 4, seeds=(1,), tight=True)
    assert res.passed, res.summary()


def test_planted_schedule_undercount_is_caught_with_its_seed():
    res = ledger_audit(UnderCountingGaussianTS(b=2, c=1.0), ENV, 40, 50, seeds=(7,), tight=False)
    assert not res.passed and res.verdict == "VIOLATION"
    v = res.violations[0]
    assert v.kind == "mu" and v.seed == 7 and v.realized > v.certified
    # the reported seed reproduces it
    again = ledger_audit(UnderCountingGaussianTS(b=2, c=1.0), ENV, 40, 50, seeds=(v.seed,), tight=False)
    assert again.violations[0].replicate == v.replicate


def test_planted_redraw_is_caught():
    res = ledger_audit(EpochLaplaceGreedy(1.0, redraw=True), ENV, 40, 8, seeds=(3,), tight=True)
    kinds = {v.kind for v in res.violations}
    assert "redraw" in kinds and "mu" in kinds, kinds
    assert "released twice" in next(v for v in res.violations if v.kind == "redraw").describe()


def test_validation():
    with pytest.raises(ValueError, match="not private"):
        ledger_audit(REGISTRY["ucb1"](), ENV, 20)
    with pytest.raises(ValueError, match="horizon"):
        ledger_audit(GaussianTS(), ENV, 1)
    with pytest.raises(ValueError, match="delta"):
        ledger_audit(GaussianTS(), ENV, 20, delta=2.0)
