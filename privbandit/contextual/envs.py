"""Context environments: synthetic linear bandits and the supervised-to-bandit reduction.

Both follow the extended feedback contract (docs/feedback.md): ``offer(t)`` shows the contexts of
round t, shape (R, K, d) -- one context per arm per replicate -- before the policy chooses;
``feedback(t, arms)`` returns the played arms' rewards in [0, 1]; ``regret(t, arms)`` the
instantaneous pseudo-regret of the round against the best arm for those contexts.

* :class:`LinearContextual` -- expected reward ``theta^T z`` with a fixed theta:
  ``model="disjoint"`` (Li et al. 2010: one theta per arm, every arm sees the same user context) or
  ``model="shared"`` (one theta, a context per arm: Shariff & Sheffet 2018; Chowdhury & Zhou 2022).
  The first coordinate of every context is the constant ``1/sqrt 2`` (an intercept) and the rest a
  uniform direction of norm ``1/sqrt 2``; theta has the same form, so ``||z|| = 1`` and
  ``theta^T z = (1 + w^T u) / 2`` lies in [0, 1]. Rewards are ``theta^T z`` plus N(0, noise^2),
  clipped to [0, 1] (so the environment guarantees the unit interval); regret uses ``theta^T z``.
* :class:`ClassificationBandit` -- a bundled scikit-learn dataset (digits, wine, breast_cancer,
  iris; no download; optional extra ``contextual``): each round draws an example uniformly, every
  arm (class) sees its features, reward 1 when the arm is the label. Features are standardized,
  optionally projected on their first ``dim - 1`` principal components (public preprocessing, not a
  private release), given an intercept and scaled to norm at most 1.
"""

from __future__ import annotations

import difflib
import math
import operator

import numpy as np

from accountants._validate import NOT_NUMBERS, shown
from accountants import _validate
from accountants._validate import real_array

from privbandit.feedback import Offer
from privbandit.seeding import check_seed
from privbandit.envs.base import Environment, EnvironmentRun

#: reward noise above which ``noise * N(0, 1)`` may overflow (|N(0, 1)| < 40 in float64 draws): rewards are
#: then computed with the overflow silenced, since the clip to [0, 1] of +-inf is the exact clipped reward
_HUGE_NOISE = 1e300

DATASETS = ("digits", "wine", "breast_cancer", "iris")


def _sphere(rng: np.random.Generator, shape: tuple[int, ...], dim: int) -> np.ndarray:
    g = rng.standard_normal(shape + (dim,))
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def _with_intercept(u: np.ndarray) -> np.ndarray:
    """``[1, u] / sqrt 2`` for unit vectors u: norm 1, first coordinate the intercept."""
    ones = np.ones(u.shape[:-1] + (1,))
    return np.concatenate([ones, u], axis=-1) / math.sqrt(2.0)


class ContextualEnvironment(Environment):
    """An environment with contexts: ``offers = {"contexts"}``; rewards in [0, 1] by construction."""

    offers = frozenset({"contexts"})
    rewards_in_unit_interval = True

    @property
    def dim(self) -> int:
        return self._dim

    def structure(self) -> dict:
        """Round-level neighbours (a round's contexts and reward) differ from entry-level ones (its
        reward), so schedules are asked for by relation (docs/feedback.md)."""
        return {"contexts": True}

    def expected(self, t, arms):
        raise ValueError(f"{self.name}: expected rewards depend on the round's contexts; use the run's regret(t, arms)")

    def best(self, t):
        raise ValueError(f"{self.name}: the best arm depends on the round's contexts; use the run's regret(t, arms)")


class LinearContextual(ContextualEnvironment):
    """``LinearContextual(dim, n_arms, noise=0.1, model="disjoint", theta_seed=0)``: a linear
    contextual bandit with fixed parameters drawn once from ``theta_seed`` (see the module docstring).
    ``theta`` (optional) overrides them: (n_arms, dim) for ``disjoint``, (dim,) for ``shared``,
    each of the form ``[1, w] / sqrt 2`` with ``||w|| <= 1`` so that rewards lie in [0, 1]."""

    name = "linear_contextual"

    def __init__(self, dim: int, n_arms: int, noise: float = 0.1, model: str = "disjoint", theta_seed: int = 0,
                 theta=None) -> None:
        if isinstance(dim, NOT_NUMBERS) or not isinstance(dim, (int, np.integer)) or not 2 <= dim <= 1000:
            raise ValueError(f"dim must be a whole number in [2, 1000], got {shown(dim)}")
        # every arm's parameters are drawn up front, (n_arms, dim) of them, and every round's contexts
        # are (replicates, n_arms, dim): 2^20 arms is far beyond any contextual experiment (2^63 was
        # numpy's "Maximum allowed dimension exceeded", naming no parameter)
        if isinstance(n_arms, NOT_NUMBERS) or not isinstance(n_arms, (int, np.integer)) or not 2 <= n_arms <= 2**20:
            raise ValueError(f"n_arms must be a whole number in [2, 2^20 = {2**20}], got {shown(n_arms)}")
        noise = _validate.nonnegative("noise", noise)  # (an int beyond the floats: named, not an OverflowError)
        if not isinstance(model, str) or model not in ("disjoint", "shared"):
            raise ValueError(f"model must be 'disjoint' or 'shared', got {shown(model)}")
        self._dim, self._n_arms, self.noise, self.model = operator.index(dim), operator.index(n_arms), noise, model
        _validate.check_bytes(f"LinearContextual's parameters, n_arms x dim = {self._n_arms} x {self._dim}",
                              8 * self._n_arms * self._dim, "bring n_arms or dim down")
        self.theta_seed = check_seed("theta_seed", theta_seed)
        shape = (self._n_arms,) if model == "disjoint" else ()
        if theta is None:
            rng = np.random.default_rng(theta_seed)
            theta = _with_intercept(_sphere(rng, shape, self._dim - 1))
        theta = real_array("theta", theta)
        if theta.shape != shape + (self._dim,):
            raise ValueError(f"theta must have shape {shape + (self._dim,)}, got {theta.shape}")
        w = theta[..., 1:] * math.sqrt(2.0)
        if not (np.allclose(theta[..., 0], 1 / math.sqrt(2.0)) and (np.linalg.norm(w, axis=-1) <= 1 + 1e-12).all()):
            raise ValueError("theta must have the form [1, w] / sqrt(2) with ||w|| <= 1 (rewards in [0, 1])")
        self.theta = theta

    @property
    def n_arms(self) -> int:
        return self._n_arms

    def start(self, replicates, rng):
        return _LinearRun(self, replicates, rng)

    @property
    def rewards_in_unit_interval(self) -> bool:
        """Rewards are clipped to [0, 1] by construction, which NaN passes: a theta or noise set to NaN
        after construction must not pass for the promise (judged at each run's start, O(K d))."""
        return bool(np.all(np.isfinite(self.theta)) and math.isfinite(self.noise))

    def means(self, contexts: np.ndarray) -> np.ndarray:
        """Expected rewards (R, K) of every arm for contexts (R, K, d)."""
        if self.model == "disjoint":
            return np.einsum("rkd,kd->rk", contexts, self.theta)
        return contexts @ self.theta

    def params(self) -> dict:
        return {"environment": self.name, "dim": self._dim, "n_arms": self._n_arms, "noise": self.noise,
                "model": self.model, "theta_seed": self.theta_seed}


class _ContextRun(EnvironmentRun):
    """A contextual run: ``offer(t)`` draws round t's contexts, which ``rewards(t, arms)`` (and the
    default ``feedback``) then answer for; any other round is refused."""

    def __init__(self, env: ContextualEnvironment, replicates: int, rng: np.random.Generator) -> None:
        self.env, self.replicates, self.rng = env, replicates, rng
        self._t = 0

    def _check(self, t: int) -> None:
        if t != self._t:
            raise ValueError(f"t must be the round of the last offer ({self._t}), got {t}")


class _LinearRun(_ContextRun):

    def offer(self, t: int) -> Offer:
        env = self.env
        if env.model == "disjoint":  # one user context, seen by every arm
            u = _with_intercept(_sphere(self.rng, (self.replicates,), env.dim - 1))
            z = np.broadcast_to(u[:, None, :], (self.replicates, env.n_arms, env.dim))
        else:
            z = _with_intercept(_sphere(self.rng, (self.replicates, env.n_arms), env.dim - 1))
        self._means = env.means(z)
        self._t = t
        return Offer(contexts=z)

    def rewards(self, t, arms):
        self._check(t)
        mu = self._means[np.arange(self.replicates), arms]
        if self.env.noise == 0:
            # (1 + w.u) / 2 rounds outside [0, 1]: a context opposite to theta gave -5.6e-17, fed to the
            # private policies unclipped under the promise (rewards_in_unit_interval)
            return np.clip(mu, 0.0, 1.0)
        if self.env.noise > _HUGE_NOISE:
            # noise * N(0, 1) can exceed the floats (1.8e308) here: the sum overflows to +-inf, which the clip
            # maps to exactly the reward the unbounded sum would get (mu is in [0, 1], the excess beyond 1e300):
            # the overflow is the right answer, not a fault -- was a RuntimeWarning (session 17)
            with np.errstate(over="ignore"):
                return np.clip(mu + self.env.noise * self.rng.standard_normal(self.replicates), 0.0, 1.0)
        return np.clip(mu + self.env.noise * self.rng.standard_normal(self.replicates), 0.0, 1.0)

    def regret(self, t, arms) -> np.ndarray:
        self._check(t)
        return self._means.max(axis=1) - self._means[np.arange(self.replicates), arms]


def load_dataset(name: str, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(features (n, d), labels (n,)) of a bundled scikit-learn dataset, prepared as in
    :class:`ClassificationBandit`: standardized, optionally PCA-projected to ``dim - 1`` columns,
    an intercept column, every row scaled to norm at most 1 (the largest row has norm 1)."""
    if not isinstance(name, str) or name not in DATASETS:  # (an array: "truth value ... is ambiguous")
        # names are exact (no case folding); 'DIGITS' or 'brest_cancer' gets its close match named
        close = difflib.get_close_matches(name.lower(), DATASETS, n=1, cutoff=0.6) if isinstance(name, str) else []
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}, got {shown(name)}{hint}")
    try:
        from sklearn import datasets
    except ImportError:  # the reduction needs the optional extra
        raise ImportError("the supervised-to-bandit reduction needs scikit-learn: pip install privbandit[contextual]") from None
    data = getattr(datasets, f"load_{name}")()
    x, y = np.asarray(data.data, dtype=float), np.asarray(data.target, dtype=np.int64)
    sd = x.std(axis=0)
    x = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    if dim is not None:
        if isinstance(dim, NOT_NUMBERS) or not isinstance(dim, (int, np.integer)) or not 2 <= dim <= x.shape[1] + 1:
            raise ValueError(f"dim must be a whole number in [2, {x.shape[1] + 1}] for {name}, got {shown(dim)}")
        # principal components by SVD of the centred data (deterministic up to sign; fixed by the
        # largest-magnitude loading being positive)
        _, _, vt = np.linalg.svd(x, full_matrices=False)
        vt = vt[: dim - 1]
        vt *= np.sign(vt[np.arange(vt.shape[0]), np.abs(vt).argmax(axis=1)])[:, None]
        x = x @ vt.T
    x = np.concatenate([np.full((x.shape[0], 1), 1.0), x / np.linalg.norm(x, axis=1).max()], axis=1)
    return x / np.linalg.norm(x, axis=1).max(), y


class ClassificationBandit(ContextualEnvironment):
    """``ClassificationBandit(dataset="digits", dim=None)``: the supervised-to-bandit reduction of a
    bundled scikit-learn dataset (one arm per class, reward 1 for the label; module docstring)."""

    name = "classification"

    def __init__(self, dataset: str = "digits", dim: int | None = None) -> None:
        self.dataset, self.requested_dim = dataset, dim
        self.features, self.labels = load_dataset(dataset, dim)
        self._dim = self.features.shape[1]
        self._n_arms = int(self.labels.max()) + 1

    @property
    def n_arms(self) -> int:
        return self._n_arms

    def start(self, replicates, rng):
        return _ClassificationRun(self, replicates, rng)

    def value(self, choose) -> float:
        """On-policy value of a fixed deterministic rule ``choose(features (n, d)) -> arms (n,)``:
        its accuracy over the dataset (each round draws an example uniformly)."""
        return float(np.mean(np.asarray(choose(self.features)) == self.labels))

    def params(self) -> dict:
        return {"environment": self.name, "dataset": self.dataset, "dim": self._dim}


class _ClassificationRun(_ContextRun):

    def offer(self, t: int) -> Offer:
        self._idx = self.rng.integers(0, self.env.labels.size, self.replicates)
        self._t = t
        x = self.env.features[self._idx]
        return Offer(contexts=np.broadcast_to(x[:, None, :], (self.replicates, self.env.n_arms, self.env.dim)))

    def rewards(self, t, arms):
        self._check(t)
        return (np.asarray(arms) == self.env.labels[self._idx]).astype(float)

    def regret(self, t, arms) -> np.ndarray:
        return 1.0 - self.rewards(t, arms)
