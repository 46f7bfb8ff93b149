"""Scores: maps from an observed output to one real number per run, thresholded into events.

An *observation* is a dict of arrays with one row per run:

* ``"actions"`` -- (n, T) arms played (policy audits);
* ``"trace"``   -- (n, m) internal noisy releases the caller chose to observe (policy audits);
* ``"value"``   -- (n, m) the released values of a mechanism (mechanism audits).

A score has a ``name``, is called as ``score(obs) -> (n,)`` and, if ``trainable``, is first fitted with
``score.fit(obs_D, obs_Dp)`` on training runs that are never reused for selection or certification.

* :func:`pull_count` -- the number of pulls of one arm (AUDIT.md 2.2: as good as the exact
  likelihood ratio on short horizons);
* :func:`first_pull` -- the first round an arm is played after a given round;
* :func:`output` / :func:`output_sum` -- a coordinate (or the sum) of a mechanism's released values;
* :func:`logreg` -- a logistic regression (DP-Sniper style) on action bits and pull counts, on the
  trace, or on the released values; fitted with L-BFGS on the penalised log-likelihood (numpy/scipy).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from accountants._validate import shown


class Score:
    """Base class: ``name``, ``trainable`` and ``__call__(obs) -> (n,) float``."""

    name = "score"
    trainable = False

    def fit(self, obs_d: dict, obs_dp: dict) -> "Score":
        return self

    def __call__(self, obs: dict) -> np.ndarray:
        raise TypeError(f"{type(self).__name__} does not define __call__")

    def __repr__(self) -> str:
        return self.name


def _get(obs: dict, key: str, who: str) -> np.ndarray:
    if key not in obs or obs[key] is None:
        raise ValueError(f"score {who} needs the observation {key!r}; observed keys: {sorted(k for k in obs if obs[k] is not None)}")
    return obs[key]


class _PullCount(Score):
    def __init__(self, arm):
        self.arm = arm
        self.name = f"pulls(arm {arm})"

    def __call__(self, obs):
        actions = _get(obs, "actions", self.name)
        return (actions == self.arm).sum(axis=1).astype(float)


def pull_count(arm: int = 0) -> Score:
    """Number of pulls of ``arm`` over the horizon."""
    if isinstance(arm, bool) or int(arm) != arm or arm < 0:
        raise ValueError(f"arm must be a whole number in [0, inf), got {shown(arm)}")
    return _PullCount(int(arm))


class _FirstPull(Score):
    def __init__(self, arm, after):
        self.arm, self.after = arm, after
        self.name = f"first pull of arm {arm} after round {after}"

    def __call__(self, obs):
        actions = _get(obs, "actions", self.name)[:, self.after:]
        hit = actions == self.arm
        first = np.argmax(hit, axis=1).astype(float)
        first[~hit.any(axis=1)] = actions.shape[1]
        return first


def first_pull(arm: int = 0, after: int = 0) -> Score:
    """Index (0-based, counted from round ``after`` + 1) of the first pull of ``arm`` after ``after`` rounds."""
    for name, v in (("arm", arm), ("after", after)):
        if isinstance(v, bool) or int(v) != v or v < 0:
            raise ValueError(f"{name} must be a whole number in [0, inf), got {shown(v)}")
    return _FirstPull(int(arm), int(after))


class _Output(Score):
    def __init__(self, index, key):
        self.index, self.key = index, key
        self.name = f"{key}[{index}]"

    def __call__(self, obs):
        v = _get(obs, self.key, self.name)
        return np.asarray(v[:, self.index], dtype=float)


def output(index: int = 0, key: str = "value") -> Score:
    """Coordinate ``index`` of a mechanism's released values (``key="trace"`` for a policy trace)."""
    if isinstance(index, bool) or int(index) != index or index < 0:
        raise ValueError(f"index must be a whole number in [0, inf), got {shown(index)}")
    if key not in ("value", "trace"):
        raise ValueError(f"key must be 'value' or 'trace', got {shown(key)}")
    return _Output(int(index), key)


class _OutputSum(Score):
    def __init__(self, key):
        self.key = key
        self.name = f"sum({key})"

    def __call__(self, obs):
        return np.asarray(_get(obs, self.key, self.name), dtype=float).sum(axis=1)


def output_sum(key: str = "value") -> Score:
    """Sum of all released values (the natural statistic when one value is released several times)."""
    if key not in ("value", "trace"):
        raise ValueError(f"key must be 'value' or 'trace', got {shown(key)}")
    return _OutputSum(key)


FEATURES = ("action_bits", "trace", "value", "trace+actions")


def features(obs: dict, kind: str) -> np.ndarray:
    """The feature matrix of a learned score.

    * ``action_bits``: for every round and every arm but arm 0, the indicator that the arm was
      played, plus the pull count of every arm;
    * ``trace`` / ``value``: the observed noisy values as they are;
    * ``trace+actions``: both.
    """
    if kind not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}, got {shown(kind)}")
    parts = []
    if kind in ("action_bits", "trace+actions"):
        actions = _get(obs, "actions", f"logreg({kind})")
        k = int(obs.get("n_arms", int(actions.max()) + 1))
        k = max(k, 2)
        bits = [(actions == a).astype(np.float32) for a in range(1, k)]
        counts = [(actions == a).sum(axis=1, keepdims=True).astype(np.float32) for a in range(k)]
        parts.extend(bits + counts)
    if kind in ("trace", "trace+actions"):
        parts.append(np.asarray(_get(obs, "trace", f"logreg({kind})"), dtype=np.float32))
    if kind == "value":
        parts.append(np.asarray(_get(obs, "value", "logreg(value)"), dtype=np.float32))
    return np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]


class _LogReg(Score):
    trainable = True

    def __init__(self, kind, l2, max_iter):
        self.kind, self.l2, self.max_iter = kind, l2, max_iter
        self.name = f"logreg({kind})"
        self.coef = None

    def fit(self, obs_d, obs_dp):
        x1 = features(obs_d, self.kind).astype(float)
        x0 = features(obs_dp, self.kind).astype(float)
        x = np.concatenate([x1, x0])
        y = np.concatenate([np.ones(len(x1)), np.zeros(len(x0))])
        self.mean = x.mean(axis=0)
        sd = x.std(axis=0)
        self.scale = np.where(sd > 0, sd, 1.0)
        z = (x - self.mean) / self.scale
        z = np.concatenate([z, np.ones((len(z), 1))], axis=1)
        n = len(y)
        l2 = self.l2

        def loss(w):
            eta = z @ w
            # log(1 + e^eta) - y eta, numerically stable
            val = np.logaddexp(0.0, eta).sum() - y @ eta
            grad = z.T @ (special.expit(eta) - y)
            val = val / n + 0.5 * l2 * (w[:-1] @ w[:-1])
            grad = grad / n
            grad[:-1] += l2 * w[:-1]
            return val, grad

        res = optimize.minimize(loss, np.zeros(z.shape[1]), jac=True, method="L-BFGS-B",
                                options={"maxiter": self.max_iter})
        self.coef = res.x[:-1] / self.scale
        return self

    def __call__(self, obs):
        if self.coef is None:
            raise ValueError(f"{self.name} must be fitted (Score.fit) before it is evaluated")
        return features(obs, self.kind).astype(float) @ self.coef


def logreg(features: str = "action_bits", l2: float = 1e-4, max_iter: int = 200) -> Score:
    """A linear score learned by penalised logistic regression (label 1 = run on D, 0 = on D')."""
    if features not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}, got {shown(features)}")
    if not (isinstance(l2, (int, float)) and l2 >= 0):
        raise ValueError(f"l2 must lie in [0, inf), got {l2!r}")
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a whole number in [1, inf), got {shown(max_iter)}")
    return _LogReg(features, float(l2), int(max_iter))
