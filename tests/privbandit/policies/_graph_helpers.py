"""Shared helpers of the graph-feedback policy tests."""

import numpy as np


def drive_graph(policy, env, horizon, replicates, seed=0, ledger=None, rounds=None):
    """Run ``policy`` on the graph environment ``env`` round by round through the feedback contract's
    calls (offer with the round's graph; observe with every revealed entry) -- the engine's loop,
    keeping what the engine does not (the run, per-replicate regret, the masks). Returns
    (run, per-replicate cumulative pseudo-regret, arms (T, R), observed masks (T, R, K)); only the
    first ``rounds`` rounds are played when given."""
    policy_seq, env_seq = np.random.SeedSequence(seed).spawn(2)
    run = policy.start(env.n_arms, replicates, horizon, np.random.default_rng(policy_seq), ledger=ledger)
    env_run = env.start(replicates, np.random.default_rng(env_seq))
    regret = np.zeros(replicates)
    arms_played = np.empty((horizon, replicates), dtype=np.int64)
    masks = np.empty((horizon, replicates, env.n_arms), dtype=bool)
    horizon_played = rounds or horizon
    arms_played = arms_played[:horizon_played]
    masks = masks[:horizon_played]
    for t in range(1, horizon_played + 1):
        arms = run.select(t, env_run.offer(t))
        fb = env_run.feedback(t, arms)
        run.observe(t, fb)
        observed = fb.observed
        regret += env.means.max() - env.means[arms]
        arms_played[t - 1] = arms
        masks[t - 1] = observed
    return run, regret, arms_played, masks
