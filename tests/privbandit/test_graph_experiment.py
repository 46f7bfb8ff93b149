"""The tossou2017-graph experiment: builds at K in {100, 1000}, runs small through the sweep."""

import numpy as np

from privbandit import budget
from privbandit.experiments import EXPERIMENTS, graph_instances
from privbandit.sweep import sweep

DELTA = 1e-6


def test_builds_every_family_at_both_sizes_with_calibrated_gaussian_ts():
    policies, envs = EXPERIMENTS["tossou2017-graph"](5_000)
    assert {env.n_arms for env in envs.values()} == {100, 1000} and len(envs) == 6
    assert {"UCB-N", "UCB-MaxN", "TS-N", "TS-MaxN"} <= set(policies)
    for eps in (0.1, 1.0):
        cert = budget.epsilon(policies[f"Gaussian-TS-N eps={eps:g}"], 5_000, DELTA, 100)
        assert eps * (1 - 1e-6) <= cert.value <= eps  # calibrated to the target from below


def test_small_run_through_the_sweep():
    policies, _ = EXPERIMENTS["tossou2017-graph"](300)
    envs = {k: v for k, v in graph_instances(100).items() if k.startswith("Erdos")}
    chosen = {k: policies[k] for k in ("TS-N", "UCB-MaxN", "Lazy-DP-TS-N eps=1")}
    result = sweep(chosen, envs, 300, 3, 0, delta=DELTA, ledger=False)
    rows = {s["policy_label"]: s for s in result.summary()}
    assert set(rows) == set(chosen)
    for s in rows.values():
        assert np.isfinite(s["regret"]) and s["regret_lower"] <= s["regret"] <= s["regret_upper"]
    assert np.isinf(rows["TS-N"]["certified_epsilon"])
    assert rows["Lazy-DP-TS-N eps=1"]["certified_epsilon"] <= 1.0
