"""Black-box audits of the linear policies' tree releases on small instances (privbandit.audit).

The audited mechanism is the policy's own vector tree (``policy.tree``), fed the packed statistics
of two neighbouring record sequences (d = 1) that differ in their first record, every release of
the sequence observed; the claim is the policy's schedule certificate. The correct mechanism is
CONSISTENT; halving or removing its noise is a VIOLATION.
"""

import numpy as np
import pytest

from privbandit.audit import Audit, Budget
from privbandit.audit.certify import Claim
from privbandit.contextual import linalg
from privbandit.policies.linear import JointDPLinUCB, PrivateLinUCB


def _mechanism(pol, horizon, factor, with_r2):
    def run(records, n, rng):
        tree = pol.tree(1, n, horizon, rng, None)
        tree.sampler._noise_scale_factor = factor  # the planted bug (1.0: the correct mechanism)
        out = []
        for z, r in records:
            packed = linalg.packed_outer(linalg.augmented(np.full((n, 1), z), np.full(n, r)))
            tree.insert(packed if with_r2 else packed[:, :-1], np.zeros(n, dtype=int))
            out.append(tree.noisy_sum()[:, 0] / tree.weights)
        return np.concatenate(out, axis=1)
    return run


def _audit(pol, horizon, factor, d, dp, runs, with_r2=False):
    claim = Claim.from_schedule(pol.privacy_schedule(horizon, 2), horizon)
    return Audit.mechanism(_mechanism(pol, horizon, factor, with_r2), d, dp, claim, budget=Budget(runs), seed=0).run()


# (z, r) records: the first differs; its normalized L1 change is 1.5 of the declared bound 2 (d = 1)
MISHRA_D, MISHRA_DP = [(1.0, 1.0), (0.5, 0.0)], [(0.0, 0.0), (0.5, 0.0)]
# packed [z; r] Gram entries (1, 1, 1) vs (1, -1, 1): L2 change 2 of the declared 2 sqrt 2
JOINT_D, JOINT_DP = [(1.0, 1.0)], [(-1.0, 1.0)]


def test_private_lin_ucb_tree_is_consistent():
    res = _audit(PrivateLinUCB(epsilon=1.0, dim=1), 2, 1.0, MISHRA_D, MISHRA_DP, 40_000)
    assert res.verdict == "CONSISTENT", res.summary()


@pytest.mark.parametrize("factor, runs", [(0.5, 200_000), (0.0, 20_000)], ids=["halved", "removed"])
def test_private_lin_ucb_tree_with_less_noise_is_a_violation(factor, runs):
    # one node (T = 1): claimed 1, the halved mechanism spends 1.5 on these neighbours
    res = _audit(PrivateLinUCB(epsilon=1.0, dim=1), 1, factor, MISHRA_D[:1], MISHRA_DP[:1], runs)
    assert res.verdict == "VIOLATION", res.summary()


@pytest.mark.parametrize("factor, verdict", [(1.0, "CONSISTENT"), (0.5, "VIOLATION")], ids=["correct", "halved"])
def test_joint_dp_tree_audit(factor, verdict):
    pol = JointDPLinUCB(epsilon=1.0, delta=1e-6, dim=1, calibration="gdp")
    res = _audit(pol, 1, factor, JOINT_D, JOINT_DP, 200_000, with_r2=True)
    assert res.verdict == verdict, res.summary()
