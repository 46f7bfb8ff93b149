"""Adversarial-bandit policies: EXP3, DP-EXP3-Lap and EXP3-tau (docs/policies_adversarial.md).

* :class:`EXP3` -- Auer, Cesa-Bianchi, Freund & Schapire (SIAM J. Comput. 2002), Fig. 1 (Exp3):
  p_i = (1 - gamma) w_i / sum_j w_j + gamma / K, xhat = x / p_I on the played arm,
  w_I <- w_I exp(gamma xhat / K); gamma = min(1, sqrt(K ln K / ((e - 1) g))) with g = T (Cor. 3.2,
  rewards in [0, 1] so G_max <= T). Kept as log-weights (eta = gamma / K) for numerical range.
* :class:`DPEXP3Lap` -- Tossou & Dimitrakakis (AAAI 2017), ALGORITHMS.md 8.1: every observed reward
  gets Lap(1/eps), is clipped to [-b, b + 1] with b = ln T / eps and rescaled to [0, 1]; EXP3 learns
  from the rescaled value. Each record is in exactly one Laplace release (sensitivity 1): eps-DP
  per record, reported to the ledger by :class:`privbandit.mechanisms.laplace.LaplaceRelease`.
* :class:`PrivateEXP3` -- Agarwal & Singh (ICML 2017), bandit variant: Lap(1/eps) on each observed
  loss before the importance-weighted update (constants reconstructed, ALGORITHMS.md 12.1).
* :class:`EXP3Tau` -- Tossou & Dimitrakakis (AAAI 2017), ALGORITHMS.md 8.2: rounds in mini-batches
  of tau (default ceil(T^(1/3))); one arm per batch, chosen by EXP3 at the batch start; EXP3 learns
  from g = (batch reward sum) / tau in [0, 1], over n = ceil(T / tau) batch-rounds.
* :class:`BatchedPrivateEXP3` -- Asi, Raman & Talwar (ICML 2025, arXiv 2505.21790), the batched
  conversion (their Algorithm 1 / Theorem 1) with EXP3 as the base: batches of tau = ceil(1/eps)
  rounds, one arm per batch, the batch's loss sum released once with Lap(1/eps) (sensitivity 1) and
  divided by tau (the paper's average loss + Lap(1/(eps tau))); EXP3 learns from that noisy loss.
  eps-DP per record; EXP3's rates are our reconstruction (docs/policies_adversarial.md).

Privacy of EXP3 and EXP3-tau (:class:`ExponentialWeightsSchedule`): the arm sampling is the only
randomness, so there is no noise draw to report to a ledger; the certificate is a proof about the
sampling distributions. The thesis's exponential-mechanism argument (each batch's choice is an
exponential mechanism in the estimated rewards) does not bound the loss by itself: a changed reward
shifts one log-weight by at most (gamma / K) (1/tau) / p_I <= 1/tau (the exploration floor
p >= gamma / K), but every later importance weight 1 / p then differs between the neighbours, so
the shift compounds. What we prove (docs/policies_adversarial.md): with s_1 = 1/tau and
s_{k+1} = s_k + exp(min(s_k, c)) - 1, c = ln(1 + K (1 - gamma) / gamma), the k-th choice after the
changed batch has likelihood ratio within exp(+-min(s_k, c)) for every history; these per-choice
bounds compose adaptively (PureDP events). That certificate is valid and honest, and large: the
bound saturates at c within a few batches.
"""

from __future__ import annotations

import math
import operator
from typing import ClassVar

import numpy as np

from accountants import _validate
from accountants._validate import NOT_NUMBERS, shown
from accountants.events import NO_EVENT, Composed, Event, PureDP, SelfComposed
from privbandit import _engine_kernels
from privbandit.ledger import pulled_layout
from privbandit.mechanisms.laplace import LaplaceRelease
from privbandit.policies._exp3_kernels import exp3_arms_valid, exp3_draw, exp3_learn, exp3_rescale, exp3_shift
from privbandit.policies.base import Policy, PolicyRun, PureEpsilonPolicy, check_arms, check_positive
from privbandit.schedule import EventSchedule, PrivacySchedule

_UNIFORM_BLOCK = 1024
_MAX_BUFFERED = 2**20


def exp3_gamma(n_arms: int, rounds: int) -> float:
    """Auer et al. (2002), Cor. 3.2 with g = rounds: gamma = min(1, sqrt(K ln K / ((e - 1) g)))."""
    return min(1.0, math.sqrt(n_arms * math.log(n_arms) / ((math.e - 1.0) * rounds)))


def _check_tau(tau, default: str) -> int | None:
    if tau is None:
        return None
    if isinstance(tau, NOT_NUMBERS) or not isinstance(tau, (int, np.integer)) or tau < 1:
        raise ValueError(f"tau must be a whole number in [1, inf) (or None for {default}), got {shown(tau)}")
    return operator.index(tau)  # (the exact value: int() calls an int subclass's own __int__)


def _check_gamma(gamma) -> float | None:
    if gamma is None:
        return None
    # converted first, then checked (session 16): a float subclass's lying __float__ gave gamma = nan after
    # the check had passed on its value
    x = _validate.finite("gamma", gamma) if isinstance(gamma, (int, float)) and not isinstance(gamma, bool) else 0.0
    if not 0 < x <= 1:
        raise ValueError(f"gamma must lie in (0, 1] (or be None for Auer et al.'s tuning), got {shown(gamma)}")
    return x


class _Exp3Core:
    """Lock-stepped EXP3 state: log-weights (R, K); one uniform per replicate per choice.

    Uniforms are drawn in blocks of choices (amortising the generator's call overhead); each choice
    consumes exactly one fresh uniform per replicate. A choice is two kernels around one ``np.exp``
    and an update one kernel (policies/_exp3_kernels.py: the numpy expressions of Auer et al.'s
    Fig. 1, bit for bit, in three calls instead of about fifteen).
    """

    def __init__(self, replicates: int, n_arms: int, gamma: float, rng: np.random.Generator,
                 eta: float | None = None) -> None:
        self.log_w = np.zeros((replicates, n_arms))
        self.gamma, self.eta, self.k = gamma, gamma / n_arms if eta is None else eta, n_arms
        # rows 0..R-1, read-only: the ledger's pulled layout, which it recognises by identity when the
        # runs report one release per replicate with these rows (privbandit.ledger.pulled_layout)
        self.rows = pulled_layout(replicates)
        self.rng = rng
        self.block = max(1, min(_UNIFORM_BLOCK, _MAX_BUFFERED // replicates))
        self.uniforms = np.empty((0, replicates))
        self.pos = 0
        self.p_played = np.ones(replicates)
        self._scratch()

    def _scratch(self) -> None:
        replicates = self.rows.size
        self.w = np.empty(self.log_w.shape)  # the round's shifted weights, then its probabilities
        self.stack, self.vals = np.zeros((_engine_kernels.STACK, 3), dtype=np.int64), np.zeros(_engine_kernels.STACK)
        self.keep, self.floor = 1.0 - self.gamma, self.gamma / self.k
        self.kernels = tuple(k.at(replicates) for k in (exp3_shift, exp3_draw, exp3_learn, exp3_arms_valid))

    def __getstate__(self):  # scratch and bound kernels are rebuilt on load
        return {k: v for k, v in self.__dict__.items() if k not in ("w", "stack", "vals", "kernels")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._scratch()

    def choose(self) -> np.ndarray:
        if self.pos == self.uniforms.shape[0]:
            self.uniforms = self.rng.random((self.block, self.rows.size))
            self.pos = 0
        u = self.uniforms[self.pos]
        self.pos += 1
        shift, draw = self.kernels[0], self.kernels[1]
        shift(self.log_w, self.w)
        np.exp(self.w, out=self.w)
        arms = np.empty(self.rows.size, dtype=np.int64)
        self.p_played = np.empty(self.rows.size)
        draw(self.w, u, self.keep, self.floor, arms, self.p_played, self.stack, self.vals)
        return arms

    def checked(self, arms) -> np.ndarray:
        """``arms`` as the kernels take them -- int64 of shape (R,), every arm in [0, K) -- or
        ValueError (the engine hands back what :meth:`choose` made: the array itself, checked)."""
        if not (isinstance(arms, np.ndarray) and arms.dtype == np.int64 and arms.shape == self.rows.shape):
            out = np.asarray(arms)
            if out.shape != self.rows.shape or out.dtype.kind not in "iu":
                raise ValueError(f"arms must be an integer array of shape {self.rows.shape}, got {out.dtype} {out.shape}")
            arms = out.astype(np.int64)
        if not self.kernels[3](arms, self.k):
            raise ValueError(f"arms must lie in [0, {self.k - 1}]")
        return arms

    def sampling_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(the last choice's probabilities (R, K) -- the draw overwrote ``w`` with them --, the log-weights
        (R, K)), copies: what the white-box audit checks against the certificate's floor and step
        (privbandit.audit.weights)."""
        return self.w.copy(), self.log_w.copy()

    def learn(self, arms: np.ndarray, gains: np.ndarray) -> None:
        """Importance-weighted update of the arms just chosen (gains in [0, 1], or minus noisy losses)."""
        gains = np.asarray(gains, dtype=float)
        if gains.shape != self.rows.shape:
            raise ValueError(f"rewards must have shape {self.rows.shape}, got {gains.shape}")
        self.kernels[2](self.log_w, self.checked(arms), gains, self.p_played, self.eta)


class _Exp3Run(PolicyRun):
    def __init__(self, replicates, n_arms, gamma, rng):
        self.core = _Exp3Core(replicates, n_arms, gamma, rng)

    def select(self, t):
        return self.core.choose()

    def update(self, t, arms, rewards):
        self.core.learn(arms, rewards)


class _DPExp3LapRun(_Exp3Run):
    def __init__(self, policy, replicates, n_arms, horizon, rng, ledger):
        super().__init__(replicates, n_arms, policy.gamma_for(n_arms, horizon), rng)
        self.scale = 1.0 / policy.epsilon
        self.exact = policy.exact
        self.b = policy.clip_width(horizon)
        self.noise = LaplaceRelease(rng, ledger, "dp_exp3_lap", exact=policy.exact)
        self.pulls = np.zeros((replicates, n_arms), dtype=np.int64)

    def update(self, t, arms, rewards):
        rows, arms = self.core.rows, self.core.checked(arms)
        lo = self.pulls[rows, arms]  # the record's insertion index in its arm's stream
        noisy = self.noise.release_records(rewards, self.scale, rows, arms, lo)
        self.pulls[rows, arms] = lo + 1
        # clipped to [-b, b + 1] and rescaled to [0, 1] (one kernel: numpy's clip, + b, / (2b + 1))
        self.core.learn(arms, exp3_rescale.at(rows.size)(noisy, self.b))


class _PrivateExp3Run(_Exp3Run):
    def __init__(self, policy, replicates, n_arms, horizon, rng, ledger):
        gamma, eta = policy.rates(n_arms, horizon)
        self.core = _Exp3Core(replicates, n_arms, gamma, rng, eta=eta)
        self.scale = 1.0 / policy.epsilon
        self.noise = LaplaceRelease(rng, ledger, "private_exp3", exact=policy.exact)
        self.pulls = np.zeros((replicates, n_arms), dtype=np.int64)

    def update(self, t, arms, rewards):
        rows, arms = self.core.rows, self.core.checked(arms)
        lo = self.pulls[rows, arms]
        noisy_loss = self.noise.release_records(1.0 - rewards, self.scale, rows, arms, lo)
        self.pulls[rows, arms] = lo + 1
        self.core.learn(arms, -noisy_loss)  # weights exp(-eta Lhat): a loss is a negative gain


def _accumulate(total: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``total + values[0] + values[1] + ...`` (per column), added one row at a time in order: the
    rounding of a per-round ``total += value`` loop (np.add.accumulate is sequential, not pairwise)."""
    if values.shape[0] == 1:
        return total + values[0]
    rows = np.empty((values.shape[0] + 1,) + total.shape)
    rows[0] = total
    rows[1:] = values
    return np.add.accumulate(rows, axis=0)[-1]


class _BatchRun(PolicyRun):
    """A run that plays one arm for each batch of ``tau`` rounds (the last batch may be shorter),
    chosen by EXP3 at the batch's first round from what earlier batches revealed: the arms of a
    batch's remaining rounds never depend on its rewards, so it plans (policies.base) up to the
    batch's end, and ``update_block`` is its one update (``update`` the block of one round).

    Subclasses define ``_start_batch()`` (the EXP3 choice, at a batch's first round),
    ``_absorb(rewards)`` (a stretch of rounds of one batch, (m, R)) and ``_end_batch()``.
    """

    tau: int
    horizon: int
    arms: np.ndarray

    def select(self, t):
        if (t - 1) % self.tau == 0:  # a batch starts: EXP3 chooses its arm, played for the whole batch
            self._start_batch()
        return self.arms

    def plan(self, t, limit):
        arms = self.select(t)  # the batch start's choice, exactly as select would make it
        n = min(limit, self.tau - (t - 1) % self.tau, self.horizon - t + 1)
        return np.broadcast_to(arms, (n, arms.size)).copy()

    def update(self, t, arms, rewards):
        self.update_block(t, np.asarray(arms)[None], np.asarray(rewards)[None])

    def update_block(self, t, arms, rewards):
        n, j = rewards.shape[0], 0
        while j < n:
            r = t + j  # the stretch's first round; its batch ends at the next multiple of tau (or T)
            end = min(n, j + self.tau - (r - 1) % self.tau, j + self.horizon - r + 1)
            self._absorb(rewards[j:end])
            if (t + end - 1) % self.tau == 0 or t + end - 1 == self.horizon:
                self._end_batch()
            j = end


class _Exp3TauRun(_BatchRun):
    def __init__(self, policy, replicates, n_arms, horizon, rng):
        self.tau = policy.tau_for(horizon)
        batches = -(-horizon // self.tau)
        self.core = _Exp3Core(replicates, n_arms, policy.gamma_for(n_arms, batches), rng)
        self.horizon = horizon
        self.arms = np.zeros(replicates, dtype=np.int64)
        self.total = np.zeros(replicates)

    def _start_batch(self):
        self.arms = self.core.choose()

    def _absorb(self, rewards):
        self.total = _accumulate(self.total, rewards)

    def _end_batch(self):
        # the sum over tau (not over the batch's length): g in [0, 1] with sensitivity 1/tau
        self.core.learn(self.arms, self.total / self.tau)
        self.total[:] = 0.0


class _BatchedPrivateExp3Run(_BatchRun):
    def __init__(self, policy, replicates, n_arms, horizon, rng, ledger):
        self.tau = policy.tau_for(horizon)
        gamma, eta = policy.rates(n_arms, horizon)
        self.core = _Exp3Core(replicates, n_arms, gamma, rng, eta=eta)
        self.floor = policy.loss_floor(n_arms, horizon)
        self.horizon = horizon
        self.scale = 1.0 / policy.epsilon
        self.noise = LaplaceRelease(rng, ledger, "batched_private_exp3", exact=policy.exact)
        self.arms = np.zeros(replicates, dtype=np.int64)
        self.loss = np.zeros(replicates)
        self.pulls = np.zeros((replicates, n_arms), dtype=np.int64)
        self.first = np.zeros(replicates, dtype=np.int64)  # the batch's first record in its arm's stream
        self.length = 0

    def _start_batch(self):
        self.arms = self.core.choose()
        self.first = self.pulls[self.core.rows, self.arms]
        self.length = 0

    def _absorb(self, rewards):
        self.loss = _accumulate(self.loss, 1.0 - rewards)
        self.length += rewards.shape[0]

    def _end_batch(self):
        rows, lo = self.core.rows, self.first
        hi = lo + self.length
        # one release per batch: the loss sum of its records [lo, hi) of the played arm's stream
        # (sensitivity 1: a record's loss lies in [0, 1]) + Lap(1/eps); the last, shorter batch
        # is released the same way, so every record is in exactly one eps-DP release
        # (the mechanism's internal path: the same draws and records as its public ``release``)
        noisy = self.noise.release_records(self.loss, self.scale, rows, self.arms, lo, hi)
        self.pulls[rows, self.arms] = hi
        # divided by tau (not the batch's length): the paper's average loss + Lap(1/(eps tau));
        # floored at -b ln(nK) (post-processing; binds w.p. 1/(2nK) per batch) so that
        # eta |loss| / p <= 1, which EXP3's analysis needs; weights exp(-eta Lhat)
        loss = np.maximum(noisy / self.tau, -self.floor)
        self.core.learn(self.arms, -loss)
        self.loss = np.zeros_like(self.loss)


def _log_ratio_cap(n_arms: int, gamma: float) -> float:
    """c = ln(1 + K (1 - gamma) / gamma); for a gamma so small that the ratio overflows (~1e-308),
    ln K + ln(1 - gamma) - ln gamma (the 1 is then far below the ratio's rounding), rounded up."""
    ratio = n_arms * (1.0 - gamma) / gamma
    if math.isfinite(ratio):
        return math.log1p(ratio)
    return (math.log(n_arms) + math.log1p(-gamma) - math.log(gamma)) * (1.0 + 1e-12)


class ExponentialWeightsSchedule(PrivacySchedule):
    """The certificate of EXP3 on mini-batches of ``tau`` rounds (``tau = 1``: EXP3 itself).

    A record lies in one batch; the choices after that batch are the releases that depend on it.
    The worst record is in the first batch, so after t rounds it is in ceil(t / tau) - 1 choices,
    the k-th of which is min(s_k, c)-DP for the neighbouring pair (module docstring), composed as
    ``PureDP`` events (randomized response's curves: the worst case for a bounded likelihood ratio).
    """

    def __init__(self, n_arms: int, tau: int, gamma: float) -> None:
        self.tau, self.gamma, self.n_arms = int(tau), float(gamma), int(n_arms)
        # c: the exploration floor bounds any choice's likelihood ratio by (1 - gamma + gamma/K) / (gamma/K)
        self.cap = _log_ratio_cap(n_arms, self.gamma) if self.gamma < 1 else 0.0
        steps, s = [], 1.0 / self.tau
        while self.cap > 0 and s < self.cap and len(steps) < 10_000:
            steps.append(s)
            # the next step's bound; rounded up a hair so floating point never errs downward
            # (past 709 expm1 overflows; the next step then exceeds any cap, so it is inf)
            s = (s + math.expm1(s)) * (1.0 + 1e-12) if s < 709.0 else math.inf
        self.growing = steps  # per-choice epsilons below the cap; every later choice costs the cap

    @property
    def floor(self) -> float:
        """The sampling floor this certificate rests on: every choice probability is at least gamma / K (the
        premise of the cap c). A declared contract, read by the white-box audit (privbandit.audit.weights), which
        checks every probability the run uses against it; not used in any value above (which read gamma)."""
        return self.gamma / self.n_arms

    @property
    def first_step(self) -> float:
        """s_1 = 1 / tau: the most a changed record moves one log-weight at its batch's update, from a shared
        history (eta (1/tau) / p with eta = gamma / K and p >= the floor). A declared contract, read by the
        white-box audit (privbandit.audit.weights) on coupled runs."""
        return 1.0 / self.tau

    def choices(self, rounds: int) -> int:
        return max(0, -(-int(rounds) // self.tau) - 1)

    def per_choice(self, m: int) -> np.ndarray:
        """The epsilons of the first ``m`` choices after the record's batch."""
        head = np.asarray(self.growing[:m])
        return np.concatenate([head, np.full(max(0, m - head.size), self.cap)])

    def events(self, rounds: int) -> Event:
        m = self.choices(rounds)
        if m == 0 or self.cap == 0:
            return NO_EVENT
        parts = [PureDP(e) for e in self.growing[:m]]
        if m > len(self.growing):
            parts.append(SelfComposed(PureDP(self.cap), m - len(self.growing)))
        return parts[0] if len(parts) == 1 else Composed(tuple(parts))


class EXP3(Policy):
    """EXP3 (Auer, Cesa-Bianchi, Freund & Schapire 2002, Fig. 1; gamma from Cor. 3.2 with g = T).

    Its certificate is :class:`ExponentialWeightsSchedule` with tau = 1: finite and proven, but
    large (EXP3 is not a useful private algorithm by this argument; docs/policies_adversarial.md).
    """

    name = "exp3"
    private = True
    records_releases = False  # its randomness is the arm sampling itself: no noise draws to record

    def __init__(self, gamma: float | None = None):
        self.gamma = _check_gamma(gamma)

    def gamma_for(self, n_arms: int, rounds: int) -> float:
        return self.gamma if self.gamma is not None else exp3_gamma(n_arms, rounds)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _Exp3Run(replicates, n_arms, self.gamma_for(n_arms, horizon), rng)

    def privacy_schedule(self, horizon, n_arms):
        return ExponentialWeightsSchedule(n_arms, 1, self.gamma_for(n_arms, horizon))

    def params(self):
        return {"policy": self.name, "gamma": self.gamma}


class DPEXP3Lap(PureEpsilonPolicy):
    """DP-EXP3-Lap (Tossou & Dimitrakakis, AAAI 2017; ALGORITHMS.md 8.1): Lap(1/eps) on every observed
    reward, clipped to [-b, b + 1] with b = ln T / eps (so P(|noise| > b) = 1/T), rescaled to [0, 1]
    and fed to EXP3 (Auer et al. 2002; gamma from Cor. 3.2 with g = T -- the paper's EXP3 constants are
    not recoverable, ALGORITHMS.md 8.1 [?]). Privacy: eps-DP per record (one Laplace release each)."""

    name = "dp_exp3_lap"
    claim_source = "Tossou & Dimitrakakis (AAAI 2017), DP-EXP3-Lap"

    def __init__(self, epsilon: float = 1.0, gamma: float | None = None, exact: bool = False):
        super().__init__(epsilon, exact)
        self.gamma = _check_gamma(gamma)

    def extra_params(self):
        return {"gamma": self.gamma}

    def gamma_for(self, n_arms: int, rounds: int) -> float:
        return self.gamma if self.gamma is not None else exp3_gamma(n_arms, rounds)

    def clip_width(self, horizon: int) -> float:
        """b = ln T / eps (at least 0: T = 1 gives b = 0, the interval [0, 1])."""
        return max(0.0, math.log(horizon)) / self.epsilon

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _DPExp3LapRun(self, replicates, n_arms, horizon, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        return _one_laplace_per_record(self.epsilon, self.exact)


class PrivateEXP3(PureEpsilonPolicy):
    """Private EXP3 of Agarwal & Singh (ICML 2017), bandit variant: Lap(1/eps) on the observed loss
    1 - r before the importance-weighted update, weights exp(-eta Lhat), exploration gamma.

    Reconstruction (ALGORITHMS.md 12.1 [R]; constants read from a public course implementation, not
    from the paper): eta = sqrt(log2 K / (2 K T (1 + 2 log2(KT) / eps^2))),
    gamma = min(1, eta K sqrt(1 + 2 log2(KT) / eps^2)). Privacy: eps-DP per record (each loss is in
    exactly one Laplace release of sensitivity 1; the rest is post-processing)."""

    name = "private_exp3"
    claim_source = "Agarwal & Singh (ICML 2017), private EXP3"

    def rates(self, n_arms: int, horizon: int) -> tuple[float, float]:
        """(gamma, eta) of the reconstruction above."""
        if 1e-150 <= self.epsilon <= 1e150:  # epsilon ** 2 neither underflows to 0 nor overflows
            noise = 1.0 + 2.0 * math.log2(n_arms * horizon) / self.epsilon ** 2
            eta = math.sqrt(math.log2(n_arms) / (2.0 * n_arms * horizon * noise))
            return min(1.0, eta * n_arms * math.sqrt(noise)), eta
        # the same formulas with sqrt(noise) = hypot(1, sqrt(2 log2 KT) / eps), eps never squared
        root = math.hypot(1.0, math.sqrt(2.0 * math.log2(n_arms * horizon)) / self.epsilon)
        eta = math.sqrt(math.log2(n_arms) / (2.0 * n_arms * horizon)) / root
        return min(1.0, eta * n_arms * root), eta

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _PrivateExp3Run(self, replicates, n_arms, horizon, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        return _one_laplace_per_record(self.epsilon, self.exact)


def _one_laplace_per_record(epsilon: float, exact: bool) -> PrivacySchedule:
    """Each record in one Lap(1/eps) release of sensitivity 1, as ``LaplaceRelease.release_records``
    reports it: the grid-rounded scale, and in exact mode the sensitivity of the grid-rounded value."""
    from privbandit.mechanisms._base import laplace_event
    from privbandit.mechanisms.sampling import NoiseSampler

    sampler = NoiseSampler(np.random.default_rng(0), exact=exact)
    # exact mode: a discrete-Laplace event, as the ledger records it (its own, slightly worse curve)
    leaf = laplace_event(sampler, 1.0 / epsilon, 1.0)
    return EventSchedule(lambda rounds: leaf)


class EXP3Tau(Policy):
    """EXP3-tau (Tossou & Dimitrakakis, AAAI 2017; ALGORITHMS.md 8.2): EXP3 over mini-batches of
    ``tau`` rounds (default ceil(T^(1/3))), one arm per batch, the batch reward sum / tau as its gain.

    The thesis claims O(sqrt(ln T))-DP at delta <= T^-2 without recoverable constants
    (``claimed_epsilon`` is None); the certificate is :class:`ExponentialWeightsSchedule`."""

    name = "exp3_tau"
    private = True
    records_releases = False  # its randomness is the arm sampling itself: no noise draws to record

    def __init__(self, tau: int | None = None, gamma: float | None = None):
        self.tau = _check_tau(tau, "ceil(T^(1/3))")
        self.gamma = _check_gamma(gamma)

    def tau_for(self, horizon: int) -> int:
        if self.tau is not None:
            return min(self.tau, int(horizon))
        return max(1, math.ceil(round(horizon ** (1.0 / 3.0), 9)))

    def gamma_for(self, n_arms: int, batches: int) -> float:
        return self.gamma if self.gamma is not None else exp3_gamma(n_arms, batches)

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _Exp3TauRun(self, replicates, n_arms, horizon, rng)

    def privacy_schedule(self, horizon, n_arms):
        tau = self.tau_for(horizon)
        return ExponentialWeightsSchedule(n_arms, tau, self.gamma_for(n_arms, -(-int(horizon) // tau)))

    def params(self):
        return {"policy": self.name, "tau": self.tau, "gamma": self.gamma}


class BatchedPrivateEXP3(PureEpsilonPolicy):
    """The batched private conversion of Asi, Raman & Talwar (ICML 2025, arXiv 2505.21790,
    Algorithm 1 / Theorem 1) with EXP3 (Auer et al. 2002; loss form) as the non-private base.

    Rounds are cut into batches of ``tau`` (default ceil(1/eps), the paper's choice in its Cor. 2,
    capped at T); EXP3 chooses one arm at each batch start and it is played for the whole batch; at
    the batch end the batch's loss sum S = sum (1 - r) is released once as S + Lap(1/eps) and EXP3
    learns from the noisy average loss (S + Lap(1/eps)) / tau, i.e. the paper's average loss plus
    Lap(1/(eps tau)), over n = ceil(T / tau) batch-rounds. The last batch may be shorter; it is still
    divided by tau, so its sensitivity stays 1/tau.

    EXP3's rates are our reconstruction (the paper's headline corollary uses HTINF, Huang et al.
    2022, which is not built here): with b = 1/(eps tau) the noisy loss has second moment at most
    v = 1 + 2 b^2; EXP3 learns from it floored at -f, f = b ln(nK) (post-processing: it binds with
    probability e^(-f/b)/2 = 1/(2nK) per batch and raises the loss's mean by at most b/(2nK)). The
    standard loss-based EXP3 analysis (exp(-x) <= 1 - x + x^2 needs eta |loss| / p <= 1 for the
    negative losses; p >= gamma / K) then gives, at gamma = eta K f,
    regret <= tau (ln K / eta + eta n K (v + f) + b / K) + tau, minimised at
    eta = sqrt(ln K / (n K (v + f))).

    Privacy: eps-DP per record -- each record is in exactly one Laplace release of sensitivity 1
    (its batch's loss sum); EXP3 and its arm sampling are post-processing. Paper claim: eps-DP.
    """

    name = "batched_private_exp3"
    claim_source = "Asi, Raman & Talwar (ICML 2025), batched conversion"

    def __init__(self, epsilon: float = 1.0, tau: int | None = None, exact: bool = False):
        super().__init__(epsilon, exact)
        self.tau = _check_tau(tau, "ceil(1/epsilon)")

    def extra_params(self):
        return {"tau": self.tau}

    def tau_for(self, horizon: int) -> int:
        """The batch length: ``tau`` if given, else ceil(1/eps) (Asi et al., Cor. 2); at most T."""
        tau = self.tau if self.tau is not None else max(1, math.ceil(round(1.0 / self.epsilon, 9)))
        return min(tau, int(horizon))

    def loss_floor(self, n_arms: int, horizon: int) -> float:
        """f = b ln(nK): EXP3 learns from max(noisy average loss, -f) (class docstring)."""
        tau = self.tau_for(horizon)
        batches = -(-int(horizon) // tau)
        return math.log(batches * n_arms) / (self.epsilon * tau)

    def rates(self, n_arms: int, horizon: int) -> tuple[float, float]:
        """(gamma, eta) of the reconstruction in the class docstring."""
        tau = self.tau_for(horizon)
        batches = -(-int(horizon) // tau)
        b = 1.0 / (self.epsilon * tau)  # the noise scale on the average loss
        floor = self.loss_floor(n_arms, horizon)
        eta = math.sqrt(math.log(n_arms) / (batches * n_arms * (1.0 + 2.0 * b * b + floor)))
        return min(1.0, eta * n_arms * floor), eta

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _BatchedPrivateExp3Run(self, replicates, n_arms, horizon, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        return _one_laplace_per_record(self.epsilon, self.exact)
