"""Before/after check of an engine change: per registry policy (default parameters, epsilon=1 where
required) and three (seed, environment) pairs -- Bernoulli seeds 0 and 7, a RewardTable with values
outside [0, 1] (the clipping path) -- a digest of the arms and one of arms + final regret + regret
mean + pulls + realized epsilon, T = 700, 5 replicates. Policies that require an offer (a feedback
graph, contexts) are skipped and listed.

Usage: ``PYTHONPATH=<tree> python bench/identity_digests.py out.json`` on each tree, then compare
the JSON files (keys present in both must be equal).
"""
import argparse, hashlib, json
import numpy as np
from privbandit import simulate
from privbandit.envs import Bernoulli, RewardTable
from privbandit.policies import REGISTRY

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("out", help="path of the JSON file to write (digests keyed by policy/seed)")
args = parser.parse_args()

MEANS = [0.75, 0.625, 0.5, 0.375, 0.25]
out = {}
names = sorted(REGISTRY)
skipped = []
for name in names:
    cls = REGISTRY[name]
    if getattr(cls, "requires", frozenset()):  # graph / context policies: these K-armed envs offer neither
        skipped.append(name)
        continue
    try:
        pol = cls()
    except TypeError:
        pol = cls(epsilon=1.0)
    table = np.random.default_rng(3).uniform(-0.2, 1.2, size=(700, 5))
    for seed, env in ((0, Bernoulli(MEANS)), (7, Bernoulli(MEANS)), (1, RewardTable(table))):
        res = simulate(pol, env, 700, 5, seed=seed, keep_arms=True, progress=False)
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(res.arms).tobytes())
        ha = h.hexdigest()[:16]
        h.update(res.final_regret.tobytes()); h.update(res.regret_mean.tobytes()); h.update(res.pulls.tobytes())
        r = res.realized_epsilon
        h.update(np.nan_to_num(r if r is not None else np.zeros(1)).tobytes())
        out[f"{name}/{seed}"] = (ha, h.hexdigest()[:16])
with open(args.out, "w") as fh:
    json.dump(out, fh, indent=1)
print(len(out), "digests;", "skipped (need an offer these environments do not make):", ", ".join(skipped) or "none")
