"""Shared pieces of the deployment tests: configurations, a deterministic reward function and the
call script (a deterministic interleaving of selects and delayed, out-of-order updates)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("_deploy_worker.py")

# Every private policy of the registry, with parameters that make it release within a few dozen rounds.
PRIVATE_POLICIES = {
    "private_ucb": {}, "private_ts": {}, "dp_ucb_bound": {}, "dp_ucb": {}, "dp_ucb_int": {"rate": 0.5},
    "gaussian_ts": {"b": 2, "c": 50.0}, "dp_ts": {}, "lazy_dp_ts": {}, "dp_se": {}, "anytime_lazy_ucb": {},
}
MEANS = (0.2, 0.5, 0.8)


def reward(decision: int, arm: int) -> float:
    """A Bernoulli(MEANS[arm]) reward that depends only on (decision, arm): the same in every run."""
    u = np.random.default_rng([12345, decision]).random()
    return float(u < MEANS[arm])


def scripted(dep, steps: int, seed: int = 7, reopen_every: int | None = None, reopen=None):
    """Drive ``dep`` for ``steps`` calls: with up to 3 decisions outstanding, select or deliver one
    outstanding reward (chosen at random: delayed, out of order). With ``reopen_every``, the
    deployment is closed and reopened (``reopen()``) every that many calls. Returns the deployment."""
    rng = np.random.default_rng(seed)
    pending: list[tuple[int, int]] = []
    for step in range(1, steps + 1):
        if pending and (len(pending) >= 3 or rng.random() < 0.5):
            d, arm = pending.pop(int(rng.integers(len(pending))))
            dep.update(d, reward(d, arm))
        else:
            dec = dep.select()
            pending.append((dec.decision, dec.arm))
        if reopen_every and step % reopen_every == 0:
            dep.close()
            dep = reopen()
    return dep


def run_worker(*args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, str(WORKER), *args], cwd=str(ROOT), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def feeding(dep, decision, reward, fed_of):
    """``Deployment.update`` with the value fed to the policy replaced by ``fed_of(dep, raw)`` (the log keeps the raw
    value beside it): the shape of a deployment that maps rewards before the policy sees them (sessions 17, 18)."""
    import privbandit.deploy.deployment as _deployment
    from privbandit.deploy import Deployment

    raw = float(reward)
    fed = float(fed_of(dep, raw))
    check = _deployment.check_reward
    _deployment.check_reward = lambda value, strict: (raw, fed)
    try:
        return Deployment.update(dep, decision, reward)
    finally:
        _deployment.check_reward = check
