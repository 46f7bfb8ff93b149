"""The contextual named experiments run end to end at a small size."""

import numpy as np

from privbandit.experiments import EXPERIMENTS, mishra2015_contextual_replay, run_experiment


def test_contextual_experiments_are_registered_and_run():
    assert {"mishra2015-contextual", "chowdhury2022-linear"} <= set(EXPERIMENTS)
    res = run_experiment("chowdhury2022-linear", horizon=150, replicates=2)
    assert len(res) == 4
    for _, _, cell in res:
        assert np.isfinite(cell.regret_mean[-1])
        if cell.claimed_epsilon is not None and np.isfinite(cell.certified_epsilon[-1]):
            assert cell.certified_epsilon[-1] <= cell.claimed_epsilon * (1 + 1e-9)


def test_mishra2015_contextual_on_policy_and_replay():
    policies, envs = EXPERIMENTS["mishra2015-contextual"](200)
    assert next(iter(envs.values())).dim == 6 and policies["private_lin_ucb eps=2.7"].eps0 == 0.1
    out = mishra2015_contextual_replay(horizon=30, replicates=2)
    assert set(out) == set(policies)
    for res in out.values():
        assert np.all(res.kept > 0) and np.all((res.value >= 0) & (res.value <= 1))
