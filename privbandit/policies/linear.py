"""Linear contextual bandits: LinUCB, linear TS, and their private versions.

* ``lin_ucb`` -- LinUCB with disjoint models (Li, Chu, Langford & Schapire, WWW 2010, Alg. 1):
  per arm ``A_a = lambda I + sum z z^T``, ``b_a = sum r z``; play ``argmax theta_a^T z_a + alpha
  sqrt(z_a^T A_a^-1 z_a)``. ``model="shared"`` keeps one (A, b) for all arms (one theta).
* ``lin_ts`` -- linear Thompson sampling (Agrawal & Goyal, ICML 2013, Alg. 1): ``theta~ ~ N(theta,
  v^2 A^-1)``, play ``argmax theta~^T z_a`` (per arm for disjoint models).
* ``private_lin_ucb`` / ``private_lin_ts`` -- Mishra & Thakurta (UAI 2015), Appendix D (Alg. 3 and
  4), as reconstructed in ALGORITHMS.md 3.5: the same indices on each arm's ``A`` and ``b`` released
  by tree-based aggregation; each of the ``S = d(d+1)/2 + d`` scalar streams of an arm is an
  ``eps0``-DP binary mechanism with ``eps0 = epsilon / S`` (their claim: ``S eps0 = epsilon``).
* ``joint_dp_lin_ucb`` -- Shariff & Sheffet (NeurIPS 2018), tree-based Gaussian noise on the
  (d+1)x(d+1) Gram matrix of ``[z; r]`` with the shift ``2 Upsilon`` that keeps it positive definite
  (ALGORITHMS.md 12.3, reconstructed from HCDM/BanditLib; shared model by default, as in the paper).

Contexts. Private policies declare their dimension ``dim`` and a norm bound ``bound`` (L); contexts
longer than L are projected onto the ball (``contexts="clip"``) or rejected (``"reject"``) before
they reach the index or any statistic. Rewards are in [0, 1] (the engine clips).

Records and the ledger. A record is one round's (context, reward) of the played arm; it enters every
scalar stream of its arm's statistics (of stream 0 for a shared model), all inside one vector tree
(:class:`privbandit.mechanisms.vector_tree.VectorTreeMechanism`) whose nodes are recorded once each
with the sensitivity of the whole vector. Per-record privacy (replacement of one record, parallel
across arms for disjoint models):

* Mishra & Thakurta: entry ``(i, j)`` of ``A`` moves by at most ``L^2`` and entry ``i`` of ``b`` by
  at most ``2 L``; node noise ``Lap(levels * Delta_entry / eps0)``. In those units the whole vector
  moves by at most ``Delta = min(d + 1, d(d+1)/2) + sqrt d`` in L1 (``sum_{i<=j} |z_i z_j| <=
  (||z||_1^2 + ||z||^2)/2 <= (d + 1) L^2 / 2`` per side, ``sum_i |r z_i| <= sqrt d L``), so a node is
  ``Delta eps0 / levels``-DP and a record in ``bit_length(n) <= levels`` nodes pays at most
  ``Delta eps0 <= S eps0``: the certificate never exceeds the paper's claim.
* Shariff & Sheffet: the packed Gram matrix of ``x = [z; r]`` (``||x||^2 <= L^2 + 1``) moves by at
  most ``sqrt 2 (L^2 + 1)`` in L2 (``||x x^T - y y^T||_F^2 <= ||x||^4 + ||y||^4``); a node is
  ``Gaussian(sigma, sqrt 2 (L^2 + 1))``; composed exactly by GDP.

The action of round t depends on that round's context directly (joint DP, Shariff & Sheffet Def. 3):
the certificate covers every release of the statistics, hence every other round's action.

Neighbours covered: pairs that keep every round's contexts (rewards differ), for every model; pairs
that change a round's contexts only for the shared model. In a disjoint model the arm that receives
round h's record is chosen from round h's contexts, so a context change can move the record to
another arm's tree (noisy there, absent -- an exact empty statistic -- in the other neighbour) and
shift every later position; no per-record schedule bounds that (planted pair:
tests/privbandit/policies/test_linear_neighbours.py; docs/policies_contextual.md).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from accountants._validate import NOT_NUMBERS, shown
from accountants import gdp_conversion
from accountants import _validate
from accountants.events import NO_EVENT, Event
from privbandit.contextual import linalg
from privbandit.mechanisms.vector_tree import VectorTreeMechanism
from privbandit.policies.base import Policy, PolicyRun, check_epsilon, check_positive, check_unit
from privbandit.schedule import PrivacySchedule

_MODELS = ("disjoint", "shared")
_CONTEXT_MODES = ("clip", "reject")


def _check_dim(dim) -> int:
    if isinstance(dim, NOT_NUMBERS) or not isinstance(dim, (int, np.integer)) or not 1 <= dim <= 200:
        raise ValueError(f"dim must be a whole number in [1, 200], got {shown(dim)}")
    return operator.index(dim)  # (the exact value: int() calls an int subclass's own __int__)


_MIN_BOUND, _MAX_BOUND = 1e-50, 1e50


#: the largest context bound L over the ridge lambda: the inverse Gram matrix starts at I / lambda and its
#: Sherman-Morrison update squares (A^-1 x) of norm up to L / lambda, so 1e150 keeps it below 1e300. A ridge of
#: 1e-320 made I / lambda inf, 1e-160 overflowed the first update: RuntimeWarnings, then NaN indices (session 15).
_MAX_BOUND_TO_RIDGE = 1e150
#: the largest regularization a linear policy takes (``LinearPolicy``: its sums must stay within the floats)
_MAX_RIDGE = 1e300


def _check_bound(bound) -> float:
    """The context norm bound L in [1e-50, 1e50]: sensitivities use L^2 and L^4 (Shariff & Sheffet's
    L~^4), which must stay positive finite floats."""
    try:
        value = check_positive("bound", bound)
    except ValueError:
        value = math.nan
    if not _MIN_BOUND <= value <= _MAX_BOUND:
        raise ValueError(f"bound must lie in [{_MIN_BOUND:g}, {_MAX_BOUND:g}], got {shown(bound)}")
    return value


def _check_choice(name: str, value, choices) -> str:
    return _validate.choice(name, value, choices)  # (an array here is not a choice either)


def _contexts_of(offer) -> np.ndarray:
    contexts = getattr(offer, "contexts", None)
    if contexts is None:
        raise ValueError("offer must carry contexts (R, K, d): contextual policies require an environment "
                         "that offers 'contexts'")
    return contexts


class LinearPolicy(Policy):
    """Shared configuration of the linear contextual policies (module docstring)."""

    requires = frozenset({"contexts"})
    index_kind = "ucb"

    def __init__(self, alpha: float = 1.0, regularization: float = 1.0, model: str = "disjoint",
                 dim: int | None = None, bound: float = 1.0, contexts: str = "clip") -> None:
        self.alpha = check_positive("alpha", alpha)
        self.regularization = check_positive("regularization", regularization)
        if self.regularization > _MAX_RIDGE:
            # the private policies' Gram matrices add noise and a shift to a diagonal of regularization: at
            # 1.8e308 that sum overflowed mid-run (a RuntimeWarning, then an inf matrix; session 17). 1e300 leaves
            # the floats ample room and is far beyond any useful ridge (theta ~ 0 already).
            raise ValueError(f"regularization must lie in (0, {_MAX_RIDGE:g}], got {shown(regularization)}")
        self.model = _check_choice("model", model, _MODELS)
        self.dim = None if dim is None else _check_dim(dim)
        self.bound = _check_bound(bound)
        if self.bound / self.regularization > _MAX_BOUND_TO_RIDGE:
            raise ValueError(f"regularization must be at least bound / {_MAX_BOUND_TO_RIDGE:g} = "
                             f"{self.bound / _MAX_BOUND_TO_RIDGE:g} (the inverse Gram matrix's rank-one updates square "
                             f"bound / regularization), got {shown(regularization)}")
        self.contexts = _check_choice("contexts", contexts, _CONTEXT_MODES)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        if n_arms < 2:
            raise ValueError(f"n_arms must be >= 2, got {n_arms}")
        return _LinearRun(self, n_arms, replicates, horizon, rng, ledger)

    def _statistics(self, n_groups, replicates, horizon, rng, ledger, dim):
        return _ExactStatistics(n_groups, replicates, dim, self.regularization)

    def params(self) -> dict[str, Any]:
        return {"policy": self.name, "alpha": self.alpha, "regularization": self.regularization,
                "model": self.model, "dim": self.dim, "bound": self.bound, "contexts": self.contexts}


class LinUCB(LinearPolicy):
    """LinUCB (Li et al. 2010, Alg. 1; disjoint models by default).

    ``LinUCB(alpha=1.0, regularization=1.0, model="disjoint", dim=None, bound=1.0, contexts="clip")``.
    Li et al.'s ``alpha = 1 + sqrt(ln(2/delta)/2)`` is :func:`privbandit.contextual.linalg.lin_ucb_alpha`."""

    name = "lin_ucb"


class LinTS(LinearPolicy):
    """Linear Thompson sampling (Agrawal & Goyal 2013, Alg. 1), ``v`` the posterior scale
    (``alpha`` unused). Their theory sets ``v = R sqrt(24 d ln(1/delta) / eps)``; the default 0.5
    is the practical choice used in their and later experiments' small-v regime."""

    name = "lin_ts"
    index_kind = "ts"

    def __init__(self, v: float = 0.5, regularization: float = 1.0, model: str = "disjoint", dim: int | None = None,
                 bound: float = 1.0, contexts: str = "clip") -> None:
        super().__init__(1.0, regularization, model, dim, bound, contexts)
        self.v = check_positive("v", v)

    def params(self):
        p = super().params()
        del p["alpha"]
        return {**p, "v": self.v}


class FixedLinear(LinearPolicy):
    """A fixed (non-learning) greedy rule: play ``argmax_a weights[a]^T z_a`` (``weights`` (K, d)),
    for off-policy evaluation (its value is known on a classification reduction)."""

    name = "fixed_linear"

    def __init__(self, weights) -> None:
        super().__init__()
        # a read-only copy of numbers (session 13): the caller's array was kept, so changing it after
        # construction changed the rule being evaluated
        w = _validate.real_array("weights", weights)
        if w.ndim != 2 or not np.isfinite(w).all():
            raise ValueError(f"weights must be a finite (n_arms, dim) array, got shape {w.shape}")
        w.setflags(write=False)
        self.weights = w

    def choose(self, features: np.ndarray) -> np.ndarray:
        """The arms this rule plays on features (n, d) (shared by all arms)."""
        return np.argmax(features @ self.weights.T, axis=1)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        if self.weights.shape[0] != n_arms:
            raise ValueError(f"weights must have one row per arm ({n_arms}), got {self.weights.shape[0]}")
        return _FixedRun(self.weights)

    def params(self):
        return {"policy": self.name, "weights_shape": list(self.weights.shape)}


class _FixedRun(PolicyRun):
    def __init__(self, weights):
        self.weights = weights

    def select(self, t, offer=None):
        z = linalg.check_contexts(_contexts_of(offer), self.weights.shape[1])
        return np.argmax(np.einsum("rkd,kd->rk", z, self.weights), axis=1)

    def update(self, t, arms, rewards, mask=None):
        pass


class _ExactStatistics:
    """Non-private per-group ``A^-1`` (Sherman-Morrison) and ``b``; ``theta = A^-1 b``."""

    def __init__(self, n_groups, replicates, dim, regularization):
        self.a_inv = np.broadcast_to(np.eye(dim) / regularization, (replicates, n_groups, dim, dim)).copy()
        self.b = np.zeros((replicates, n_groups, dim))
        self.theta = np.zeros((replicates, n_groups, dim))

    def add(self, rows, groups, z, r):
        self.a_inv[rows, groups] = linalg.sherman_morrison(self.a_inv[rows, groups], z)
        self.b[rows, groups] += r[:, None] * z
        self.theta[rows, groups] = np.einsum("bij,bj->bi", self.a_inv[rows, groups], self.b[rows, groups])


class _NoisyStatistics:
    """Per-group statistics released by a vector tree; ``A~ = noisy A + (lambda + shift) I``, shifted
    further until its smallest eigenvalue is at least ``lambda`` (post-processing), ``theta = A~^-1 b~``."""

    def __init__(self, tree: VectorTreeMechanism, n_groups, replicates, dim, regularization, shift, with_r2):
        self.tree, self.dim, self.with_r2 = tree, dim, with_r2
        self.floor, self.diag = regularization, regularization + shift
        self.a_inv = np.broadcast_to(np.eye(dim) / self.diag, (replicates, n_groups, dim, dim)).copy()
        self.theta = np.zeros((replicates, n_groups, dim))

    def add(self, rows, groups, z, r):
        x = linalg.augmented(z, r)
        packed = linalg.packed_outer(x)
        if not self.with_r2:
            packed = packed[:, :-1]  # drop r^2 (the last upper-triangle entry): A and b only
        values = np.zeros((self.tree.replicates, packed.shape[1]))
        values[rows] = packed
        streams = np.zeros(self.tree.replicates, dtype=np.int64)
        streams[rows] = groups
        mask = np.zeros(self.tree.replicates, dtype=bool)
        mask[rows] = True
        self.tree.insert(values, streams, mask)
        noisy = self.tree.noisy_sum(rows, groups)
        if not self.with_r2:
            noisy = np.concatenate([noisy, np.zeros((noisy.shape[0], 1))], axis=1)
        gram = linalg.unpack(noisy, self.dim + 1)
        a, b = linalg.split_gram(gram, self.dim)
        a = a + self.diag * np.eye(self.dim)
        a_inv = linalg.regularized_inverse(a, self.floor)
        self.a_inv[rows, groups] = a_inv
        self.theta[rows, groups] = np.einsum("bij,bj->bi", a_inv, b)


class _LinearRun(PolicyRun):
    _dim: int | None = None  # the contexts' dimension, from the first round (a class default: older pickles)

    def __init__(self, policy: LinearPolicy, n_arms, replicates, horizon, rng, ledger):
        self.policy, self.n_arms, self.replicates, self.horizon = policy, n_arms, replicates, horizon
        self.rng, self.ledger = rng, ledger
        self.n_groups = n_arms if policy.model == "disjoint" else 1
        self.stats = None
        self._z = None

    def _start_statistics(self, dim):
        self.stats = self.policy._statistics(self.n_groups, self.replicates, self.horizon, self.rng, self.ledger, dim)

    def select(self, t, offer=None):
        p = self.policy
        z = linalg.check_contexts(_contexts_of(offer), p.dim)
        if z.shape[:2] != (self.replicates, self.n_arms):
            raise ValueError(f"contexts must have shape ({self.replicates}, {self.n_arms}, d), got {z.shape}")
        z = linalg.bound_contexts(z, p.bound, p.contexts)
        if self.stats is None:
            self._start_statistics(z.shape[2])
            self._dim = z.shape[2]
        elif self._dim is not None and z.shape[2] != self._dim:
            # (dim=None learns d from the first round; a later round of another d was numpy's "operands could
            # not be broadcast together with remapped shapes", naming nothing)
            raise ValueError(f"contexts must keep the dimension of the first round's, d={self._dim}, got {z.shape[2]} "
                             f"in round {t}")
        self._z = z
        s = self.stats
        if p.index_kind == "ts":
            index = linalg.ts_index(z, s.theta, s.a_inv, p.v, self.rng.standard_normal((self.replicates, self.n_arms)))
        else:
            index = linalg.ucb_index(z, s.theta, s.a_inv, p.alpha)
        return np.argmax(index, axis=1)

    def update(self, t, arms, rewards, mask=None):
        """Learn from the played arms' rewards (in [0, 1]); ``mask`` (R,) bool selects the replicates
        whose round counts (replay evaluation discards the others)."""
        if self._z is None:
            raise ValueError("update before select: a contextual policy needs the round's contexts")
        rows = np.arange(self.replicates) if mask is None else np.flatnonzero(mask)
        if rows.size == 0:
            return
        arms = np.asarray(arms)[rows]
        z = self._z[rows, arms]
        groups = arms if self.n_groups > 1 else np.zeros_like(arms)
        self.stats.add(rows, groups, z, np.asarray(rewards, dtype=float)[rows])


# --- private policies ---------------------------------------------------------------------------

class MishraSchedule(PrivacySchedule):
    """Worst record after t rounds: one arm's tree holding n = min(t, T) records, each node
    ``PureDP(Delta eps0 / levels)`` (the vector tree's own declared schedule)."""

    def __init__(self, tree: VectorTreeMechanism, horizon: int):
        self.tree, self.horizon = tree, horizon

    def events(self, rounds: int) -> Event:
        if rounds <= 0:
            return NO_EVENT
        return self.tree.privacy_schedule(min(rounds, self.horizon))


def _entry_only(policy, relation: str) -> None:
    """Refuse round-level neighbours for a disjoint model. Its record enters the tree of the arm
    that the round's own contexts select, so two neighbours that differ in one round's contexts can
    put the record in different arms' trees (noisy in one, absent in the other): no certificate of
    the tree's noise bounds that (planted pair: tests/privbandit/policies/test_linear_neighbours.py).
    The certificate covers entry-level neighbours: rewards differ, contexts are the same (public)."""
    if relation != "entry":
        raise ValueError(f"{policy.name} ({policy.model} model) has no certificate for {relation!r}-level "
                         "neighbours: a round's contexts choose the arm whose statistics its record enters; "
                         "its certificate covers reward entries with contexts public (relation='entry')")


#: the largest ratio of the noise on a private Gram matrix to its ridge ``lambda`` that the eigenvalue
#: shift of :func:`linalg.regularized_inverse` resolves: lambda must survive ``lambda - lambda_min``
#: with lambda_min about -noise, i.e. noise * 2^-52 well below lambda (measured: "Singular matrix"
#: from a ratio of about 1e15 up)
MAX_NOISE_TO_RIDGE = 1e12


class PrivateLinearPolicy(LinearPolicy):
    """Mishra & Thakurta's private LinUCB (Alg. 3) / linear TS (Alg. 4), reconstructed (module docstring).

    ``epsilon`` is the paper's total (``S eps0``, ``S = d(d+1)/2 + d`` streams per arm); ``dim`` (d)
    and ``bound`` (L) are required by the privacy analysis; ``shift`` an extra ridge added to the
    noisy ``A`` (default 0: the appendix's choice was not recovered, ALGORITHMS.md 3.5 [?]; the noisy
    ``A + lambda I`` is shifted just enough that its smallest eigenvalue is at least ``lambda``, which
    measured better than a shift of the noise's Frobenius scale, :meth:`noise_scale_shift`; see
    docs/policies_contextual.md)."""

    private = True

    def __init__(self, epsilon: float = 1.0, dim: int = 5, bound: float = 1.0, alpha: float = 1.0,
                 regularization: float = 1.0, shift: float = 0.0, contexts: str = "clip") -> None:
        super().__init__(alpha, regularization, "disjoint", _check_dim(dim), bound, contexts)
        self.epsilon = check_epsilon(epsilon)
        self.shift = _validate.nonnegative("shift", shift)  # [0, inf): False is not 0 here

    @property
    def streams_per_arm(self) -> int:
        return self.dim * (self.dim + 1) // 2 + self.dim

    @property
    def eps0(self) -> float:
        return self.epsilon / self.streams_per_arm

    def sensitivity(self) -> float:
        """L1 sensitivity of one record's packed (A, b) in units of the per-entry sensitivities."""
        d = self.dim
        return min(d + 1.0, d * (d + 1) / 2.0) + math.sqrt(d)

    def weights(self) -> np.ndarray:
        """Per-entry sensitivities of the packed (A, b) (packed order of ``[z; r]`` without r^2)."""
        i, j = linalg.packed_index(self.dim + 1)
        keep = ~((i == self.dim) & (j == self.dim))
        return np.where(j[keep] == self.dim, 2.0 * self.bound, self.bound ** 2)

    def tree(self, n_arms, replicates, horizon, rng, ledger) -> VectorTreeMechanism:
        levels = int(horizon).bit_length()
        return VectorTreeMechanism(replicates, n_arms, self.streams_per_arm, horizon=horizon, noise="laplace",
                                   scale=levels / self.eps0, sensitivity=self.sensitivity(), weights=self.weights(),
                                   rng=rng, ledger=ledger, name=f"{self.name}/tree")

    def noise_scale_shift(self, horizon: int) -> float:
        """``d sqrt(2 levels) levels L^2 / eps0``: about the Frobenius norm of the noise on ``A`` (a
        data-independent ridge one may pass as ``shift``)."""
        levels = int(horizon).bit_length()
        return self.dim * math.sqrt(2.0 * levels) * levels * self.bound ** 2 / self.eps0

    def _statistics(self, n_groups, replicates, horizon, rng, ledger, dim):
        if dim != self.dim:
            raise ValueError(f"contexts have dimension {dim}, but the policy declares dim={self.dim}")
        self.check_conditioning(horizon)
        return _NoisyStatistics(self.tree(n_groups, replicates, horizon, rng, ledger), n_groups, replicates,
                                dim, self.regularization, self.shift, with_r2=False)

    def check_conditioning(self, horizon: int) -> None:
        """Refuse, before any round, an epsilon whose noise on ``A`` (about
        :meth:`noise_scale_shift`) exceeds ``MAX_NOISE_TO_RIDGE`` times the ridge ``lambda``: the
        eigenvalue shift ``lambda - lambda_min`` then loses ``lambda`` to rounding and the shifted
        matrix is singular in floating point (numpy's "Singular matrix" mid-run)."""
        noise = self.noise_scale_shift(horizon)
        if not noise <= MAX_NOISE_TO_RIDGE * self.regularization:
            least = self.epsilon * noise / (MAX_NOISE_TO_RIDGE * self.regularization)
            raise ValueError(f"epsilon must be at least {least:.3g} for {self.name} at dim={self.dim}, bound={self.bound:g}, "
                             f"regularization={self.regularization:g} and horizon {horizon}: below it the noise on "
                             f"the Gram matrix exceeds {MAX_NOISE_TO_RIDGE:g} x regularization and the ridge is lost "
                             f"to rounding; got epsilon={self.epsilon!r}")

    def privacy_schedule(self, horizon, n_arms, relation="entry", contexts=None):
        _entry_only(self, relation)
        return MishraSchedule(self.tree(1, 1, horizon, np.random.default_rng(0), None), horizon)

    def claimed_epsilon(self, horizon, n_arms, delta):
        """Mishra & Thakurta: ``S eps0`` (pure; their example: 27 x 0.1 = 2.7 for d = 6)."""
        return self.epsilon

    def params(self):
        return {**super().params(), "epsilon": self.epsilon, "shift": self.shift}


class PrivateLinUCB(PrivateLinearPolicy):
    """``private_lin_ucb``: Mishra & Thakurta (2015) Alg. 3, reconstructed (see :class:`PrivateLinearPolicy`)."""

    name = "private_lin_ucb"


class PrivateLinTS(PrivateLinearPolicy):
    """``private_lin_ts``: Mishra & Thakurta (2015) Alg. 4 -- Agrawal & Goyal's linear TS on the
    tree-released statistics; ``v`` the posterior scale (``alpha`` unused)."""

    name = "private_lin_ts"
    index_kind = "ts"

    def __init__(self, epsilon: float = 1.0, dim: int = 5, bound: float = 1.0, v: float = 0.5,
                 regularization: float = 1.0, shift: float = 0.0, contexts: str = "clip") -> None:
        super().__init__(epsilon, dim, bound, 1.0, regularization, shift, contexts)
        self.v = check_positive("v", v)

    def params(self):
        p = super().params()
        del p["alpha"]
        return {**p, "v": self.v}


class JointDPSchedule(PrivacySchedule):
    """Worst record after t rounds: the shared (or one arm's) tree holding n = min(t, T) records,
    ``bit_length(n)`` Gaussian nodes of L2 sensitivity ``sqrt 2 (L^2 + 1)``."""

    def __init__(self, tree: VectorTreeMechanism, horizon: int):
        self.tree, self.horizon = tree, horizon

    def events(self, rounds: int) -> Event:
        if rounds <= 0:
            return NO_EVENT
        return self.tree.privacy_schedule(min(rounds, self.horizon))


class JointDPLinUCB(LinearPolicy):
    """``joint_dp_lin_ucb``: Shariff & Sheffet (2018), LinUCB on a tree-released Gram matrix with
    Gaussian node noise and the shift ``2 Upsilon``.

    ``JointDPLinUCB(epsilon=1.0, delta=1e-6, dim=5, bound=1.0, alpha=1.0, regularization=1.0,
    model="shared", calibration="paper", failure=0.01, contexts="clip")``. ``calibration="paper"``:
    node variance ``16 m L~^4 ln(4/delta)^2 / eps^2`` with ``m = ceil(log2 T) + 1`` and
    ``L~^2 = L^2 + 1`` (ALGORITHMS.md 12.3); ``"gdp"``: the least sigma whose GDP certificate over
    ``levels`` nodes is exactly (eps, delta). Shift ``2 Upsilon``, ``Upsilon = sqrt(2 m sigma^2)
    (4 sqrt d + 2 ln(2 T / failure))``."""

    name = "joint_dp_lin_ucb"
    private = True

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, dim: int = 5, bound: float = 1.0,
                 alpha: float = 1.0, regularization: float = 1.0, model: str = "shared",
                 calibration: str = "paper", failure: float = 0.01, contexts: str = "clip") -> None:
        super().__init__(alpha, regularization, model, _check_dim(dim), bound, contexts)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_unit("delta", delta)
        self.calibration = _check_choice("calibration", calibration, ("paper", "gdp"))
        self.failure = check_unit("failure", failure)
        if self.calibration == "gdp":  # the root-finder's bracket ends at mu = 1e300: say so for epsilon now
            try:
                gdp_conversion.mu_for_epsilon_delta(self.epsilon, self.delta)
            except ValueError as exc:
                raise ValueError(f"epsilon={self.epsilon!r} at delta={self.delta:g} is past what calibration='gdp' "
                                 f"can calibrate ({exc}); give a smaller epsilon") from None

    def sensitivity(self) -> float:
        return math.sqrt(2.0) * (self.bound ** 2 + 1.0)

    def sigma(self, horizon: int) -> float:
        if self.calibration == "paper":
            m = math.ceil(math.log2(horizon)) + 1
            l4 = (self.bound ** 2 + 1.0) ** 2
            return math.sqrt(16.0 * m * l4 * math.log(4.0 / self.delta) ** 2) / self.epsilon
        mu = gdp_conversion.mu_for_epsilon_delta(self.epsilon, self.delta)
        # rounded up by a relative 1e-9 so that the certificate's own float error stays below epsilon
        return math.sqrt(int(horizon).bit_length()) * self.sensitivity() / mu * (1.0 + 1e-9)

    def shift(self, horizon: int) -> float:
        m = math.ceil(math.log2(horizon)) + 1
        upsilon = math.sqrt(2.0 * m) * self.sigma(horizon) * (4.0 * math.sqrt(self.dim + 1)
                                                               + 2.0 * math.log(2.0 * horizon / self.failure))
        return 2.0 * upsilon

    def tree(self, n_groups, replicates, horizon, rng, ledger) -> VectorTreeMechanism:
        sigma, shift = self.sigma(horizon), self.shift(horizon)
        if not (0.0 < sigma < math.inf and shift < math.inf):  # epsilon, bound, delta or failure at the floats' edge
            # (a failure of 2e-308 makes log(2 T / failure) infinite with a finite sigma: name it, not epsilon)
            need = ("a smaller epsilon" if not sigma > 0 else "a larger failure (the shift's log(2 T / failure) overflowed)"
                    if math.isinf(2.0 * horizon / self.failure) else "a larger epsilon or a smaller bound")
            raise ValueError(f"epsilon={self.epsilon!r} with bound={self.bound:g}, delta={self.delta:g}, "
                             f"failure={self.failure:g} and horizon {horizon} calibrates a node noise sigma={sigma:g} "
                             f"(shift {shift:g}) outside (0, inf); {need} is needed")
        size = (self.dim + 1) * (self.dim + 2) // 2
        return VectorTreeMechanism(replicates, n_groups, size, horizon=horizon, noise="gaussian",
                                   scale=self.sigma(horizon), sensitivity=self.sensitivity(), rng=rng,
                                   ledger=ledger, name=f"{self.name}/tree")

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        if n_arms < 2:
            raise ValueError(f"n_arms must be >= 2, got {n_arms}")
        if ledger is not None and ledger.streams != n_arms:
            raise ValueError(f"ledger must have {n_arms} streams, got {ledger.streams}")
        return _LinearRun(self, n_arms, replicates, horizon, rng, ledger)

    def _statistics(self, n_groups, replicates, horizon, rng, ledger, dim):
        if dim != self.dim:
            raise ValueError(f"contexts have dimension {dim}, but the policy declares dim={self.dim}")
        # a shared model's records sit in stream 0 of the (R, K) ledger, positioned by insertion
        streams = n_groups if ledger is None else ledger.streams
        tree = self.tree(streams, replicates, horizon, rng, ledger)
        return _NoisyStatistics(tree, n_groups, replicates, dim, self.regularization, self.shift(horizon),
                                with_r2=True)

    def privacy_schedule(self, horizon, n_arms, relation="entry", contexts=None):
        if self.model == "disjoint":  # the shared model's one tree does not depend on the chosen arm
            _entry_only(self, relation)
        return JointDPSchedule(self.tree(1, 1, horizon, np.random.default_rng(0), None), horizon)

    def claimed_epsilon(self, horizon, n_arms, delta):
        """Shariff & Sheffet: (epsilon, self.delta)-joint DP; claimed only at that delta."""
        return self.epsilon if delta == self.delta else None

    def params(self):
        return {**super().params(), "epsilon": self.epsilon, "delta": self.delta,
                "calibration": self.calibration, "failure": self.failure}
