"""DP-TS and Lazy-DP-TS: Thompson sampling with pure differential privacy.

Hu & Hegde, "Near-Optimal Thompson Sampling-based Algorithms for Differentially Private Stochastic
Bandits", UAI 2022 (PMLR 180). Restored formulas: shared ALGORITHMS.md 6.1-6.2 (log = log2).

* :class:`DPTS` is Algorithm 1. Arm j's O_j observations go through the *split mechanism*
  (:class:`privbandit.mechanisms.SplitMechanism`): a modified logarithmic mechanism at eps/2 on the
  first m = 2^floor(log2(O_j + 1)) - 1 items and a 2^(r+1)-bounded binary mechanism at eps/2 on the
  rest (the printed ``ceil`` contradicts "n - m <= m"; Remark (a) gives the floor). The private
  mean mu~_j = (C_j + B_j)/O_j is shifted optimistically by
  v = 6 sqrt(8) log2(O_j + 1) log2(t) / (eps O_j) and clipped to [0, 1] (line 7), and
  theta_j ~ Beta(mubar_j O_j + 1, (1 - mubar_j) O_j + 1).
  **Erratum.** The published line 7 shifts the *non-private* empirical mean muhat; that would not
  be private at all and contradicts the proof of Theorem 1 (lines 6-11 are post-processing), so the
  private mean mu~ is used (ALGORITHMS.md 6.1).
* :class:`LazyDPTS` is Algorithm 2. Each arm's observations are cut into fresh doubling batches
  1, 2, 4, ... (:class:`privbandit.mechanisms.FreshBatchMean`); the last closed batch gives
  mu~_j = (batch sum + Lap(1/eps))/O_j with O_j its size, the shift is 3 log2(t)/(eps O_j) and
  the Beta draw is as above. Observations of the open batch are not used until it closes.

Both pull every arm once in rounds 1..K (the initialisation line of both algorithms). The Beta
draws and the argmax are post-processing of the private means.

Privacy (per record, DESIGN.md): a reward enters only its own arm's mechanism.

* DP-TS: a record is in one logarithmic release Lap(2/eps) and in at most r + 1 binary nodes
  Lap(2(r+1)/eps) of one block; the split mechanism's ``privacy_schedule(n)`` is that worst case at
  count n, and an arm holds at most t - K + 1 records after t rounds. At most eps (pure), as the
  paper's Theorem 1; the exact (eps, delta) of the composition is smaller.
* Lazy-DP-TS: a record is in exactly one Lap(1/eps) release (its batch), so the certificate is the
  exact (eps, delta) profile of one Laplace mechanism: eps + 2 ln(1 - delta) (Theorem 3 says eps).
"""

from __future__ import annotations

import math

import numpy as np

from accountants._validate import shown
from accountants import Certificate, best_epsilon
from accountants.events import NO_EVENT
from accountants.laplace_exact import laplace_epsilon  # noqa: F401 (re-exported: its home before session 17)
from privbandit.mechanisms import FreshBatchMean, SplitMechanism
from privbandit.policies._hh_kernels import hh_dpts_beta_params, hh_dpts_select, hh_lazy_beta_params, hh_lazy_select
from privbandit.policies._ts_kernels import SCALAR_BETA_MAX, beta_argmax, native_beta  # noqa: F401 (re-exported)
from privbandit.policies.base import PolicyRun, PureEpsilonPolicy, check_arms
from privbandit.schedule import UNHASHABLE, PrivacySchedule, accountants_key

DPTS_SHIFT = 6.0 * math.sqrt(8.0)
"""Hu & Hegde Algorithm 1, line 7: v = 6 sqrt(8) log2(O + 1) log2(t) / (eps O)."""
LAZY_SHIFT = 3.0
"""Hu & Hegde Algorithm 2, line 7: v = 3 log2(t) / (eps O)."""


# --- shared helpers (also used by privbandit.policies.private_ts) ------------------------------
class CachedSchedule(PrivacySchedule):
    """A schedule whose certificate depends on ``rounds`` only through its event: memoised by event.

    Certifying one event with every accountant costs milliseconds to a second (PLD); the engine asks
    at every checkpoint, and these schedules take only O(log T) distinct events over a run.
    """

    def __init__(self) -> None:
        self._cache: dict = {}

    def _certify(self, event, delta: float, accountants) -> Certificate:
        if event == NO_EVENT:
            return Certificate(0.0, "none", {})
        acc_key = accountants_key(accountants)
        if acc_key is UNHASHABLE:
            return best_epsilon(event, delta, accountants)
        key = (event, float(delta), acc_key)
        cert = self._cache.get(key)
        if cert is None:
            cert = self._cache[key] = best_epsilon(event, delta, accountants)
        return cert

    def epsilon(self, rounds: int, delta: float, accountants=None) -> Certificate:
        if rounds <= 0:
            return Certificate(0.0, "none", {})
        return self._certify(self.events(rounds), delta, accountants)


def beta_draw(rng: np.random.Generator, mubar: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """theta ~ Beta(mubar O + 1, (1 - mubar) O + 1), elementwise (line 8 of both algorithms; DP-TS and
    Lazy-DP-TS build the parameters in one kernel, :mod:`privbandit.policies._hh_kernels`, with the
    same roundings)."""
    a = np.multiply(mubar, counts)
    a += 1.0  # in place: the same roundings as mubar * counts + 1.0, one temporary fewer
    b = np.subtract(1.0, mubar)
    b *= counts
    b += 1.0
    return rng.beta(a, b)


# --- DP-TS -------------------------------------------------------------------------------------
class DPTSSchedule(CachedSchedule):
    """Worst record of DP-TS after t rounds: the split mechanism's schedule at n = t - K + 1 items
    (rounds 1..K pull every arm once, so no arm holds more), n = 1 before round K."""

    def __init__(self, epsilon: float, n_arms: int, exact: bool):
        super().__init__()
        self.n_arms = n_arms
        self._split = SplitMechanism(1, 1, epsilon=epsilon, rng=np.random.default_rng(0),
                                     ledger=None, exact=exact)

    def max_count(self, rounds: int) -> int:
        return 0 if rounds <= 0 else max(1, rounds - self.n_arms + 1)

    def events(self, rounds: int):
        return self._split.privacy_schedule(self.max_count(rounds))


def log2_next_table(size: int) -> np.ndarray:
    """``np.log2(n + 1.0)`` for n = 0 .. size - 1: DP-TS's log2(O + 1) looked up by count. numpy's
    log2 of a contiguous float array, as the per-round ``np.log2(o + 1.0)`` over the (R, K) counts
    was: the same function on the same inputs (its SIMD results may differ from libm's)."""
    return np.log2(np.arange(size, dtype=float) + 1.0)


def fused_select(rng: np.random.Generator, kernel, theta: np.ndarray, *params) -> tuple[int | None, np.ndarray | None]:
    """A policy's whole selection -- ``kernel`` (``hh_dpts_select`` / ``hh_lazy_select``): its Beta parameters,
    numpy's own Beta sampler on ``rng``'s stream into ``theta``, the arg max -- in one compiled call, under the
    bit generator's lock as ``Generator.beta`` takes it. ``params``: the kernel's arguments before the
    sampler's address. Returns (the kernel's code, the arms), or (None, None) where the kernel does not run
    compiled on a plain Generator with numpy's sampler (:func:`native_beta`: the caller's two-step path)."""
    rows = theta.shape[0]
    way = kernel.at(rows)
    address = native_beta(rng, way, kernel)
    if address is None:
        return None, None
    out = np.empty(rows, dtype=np.intp)
    bits = rng.bit_generator
    with bits.lock:
        code = way(*params, address, bits.ctypes.bit_generator.value, theta, out)
    return code, out


class _DPTSRun(PolicyRun):
    def __init__(self, policy: DPTS, n_arms, replicates, rng, ledger):
        self.eps, self.n_arms, self.rng = policy.epsilon, n_arms, rng
        self.rows = np.arange(replicates)
        self.split = SplitMechanism(replicates, n_arms, epsilon=policy.epsilon, rng=rng,
                                    ledger=ledger, name="dp_ts/split",
                                    exact=policy.exact)
        self._buffers()

    def _buffers(self) -> None:
        """Beta-parameter and draw buffers and the log2 table (rebuilt for a run pickled without them)."""
        self._a, self._b = np.zeros((self.rows.size, self.n_arms)), np.zeros((self.rows.size, self.n_arms))
        self._theta = np.zeros((self.rows.size, self.n_arms))  # the Beta draws, read only by the arg max
        self._log2_next = log2_next_table(1024)  # extended (doubled) when a count outgrows it

    def __setstate__(self, state: dict) -> None:
        # a run pickled before session 6 (a deployment's snapshot) has no buffers or table, one pickled
        # before session 17 no draw buffer: scratch space only, recreated (the table is a function of
        # its size)
        self.__dict__.update(state)
        if {"_a", "_b", "_theta", "_log2_next"} - state.keys():
            self._buffers()

    def select(self, t):
        if t <= self.n_arms:
            return np.full(self.rows.size, t - 1, dtype=np.intp)
        split = self.split
        count = split.count
        rows = self.rows.size
        while True:
            code, out = fused_select(self.rng, hh_dpts_select, self._theta, count, split.noisy_sum, self._log2_next,
                                     DPTS_SHIFT, math.log2(t), self.eps, self._a, self._b)
            if code is None:  # not compiled on a plain Generator: the two-step path below
                break
            if code == 0:
                return out
            if code == 2:  # a parameter <= 0 (the clip never gives one): Generator.beta's own error
                return beta_argmax(self.rng, self._a, self._b)
            self._grow_table(count)
        params = hh_dpts_beta_params.at(rows)
        # lines 6-8 in one kernel: O = count (>= 1 for every arm after the initial pulls),
        # v = 6 sqrt(8) log2(O + 1) log2(t) / (eps O), mubar = clip(noisy_sum / O + v, 0, 1)
        while params(count, split.noisy_sum, self._log2_next, DPTS_SHIFT, math.log2(t), self.eps,
                     self._a, self._b):
            self._grow_table(count)
        return beta_argmax(self.rng, self._a, self._b)

    def _grow_table(self, count: np.ndarray) -> None:
        """A count outside the log2 table: refuse a count below 1, else extend the table past it."""
        if count.min() < 1:
            raise ValueError("DP-TS selects from round K + 1 on, after every arm has been pulled once "
                             "(rounds 1..K pull arm t - 1)")
        self._log2_next = log2_next_table(2 * int(count.max()) + 1)

    def update(self, t, arms, rewards):
        self.split.insert_pulled(arms, rewards)


class DPTS(PureEpsilonPolicy):
    """DP-TS, Hu & Hegde (UAI 2022) Algorithm 1: split mechanism (eps/2 + eps/2), optimistic shift
    6 sqrt(8) log2(O+1) log2(t)/(eps O) on the PRIVATE mean, Beta posterior (see module docstring).

    Parameters: ``epsilon`` in (0, inf) (pure eps-DP over the whole run, Theorem 1); ``exact``
    (floating-point-safe grid noise, see :mod:`privbandit.mechanisms.sampling`).
    """

    name = "dp_ts"
    claim_source = "Hu & Hegde (2022), Theorem 1"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _DPTSRun(self, n_arms, replicates, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        return DPTSSchedule(self.epsilon, n_arms, self.exact)


# --- Lazy-DP-TS --------------------------------------------------------------------------------
class LazyDPTSSchedule(CachedSchedule):
    """Every record is in exactly one Lap(1/eps) release: exact certificate (float noise).

    The continuous Laplace's exact profile is an accountant since session 17
    (:class:`accountants.laplace_exact.LaplaceExactAccountant`, labelled ``laplace-exact`` as this
    schedule's own closed form was): the certificate and the tight ledger's realized spend of the same
    release are then one function of one event, equal to the bit (before, the ledger read the PLD's,
    1.55e-10 above). In exact mode the release is a discrete Laplace on the grid, whose profile is
    slightly worse (its mass at the largest loss is 1/(1 + e^(-1/t)) > 1/2): that accountant declines the
    ``DiscreteLaplace`` event and the others bound it by its own curves.
    """

    def __init__(self, epsilon: float, exact: bool):
        super().__init__()
        fb = FreshBatchMean(1, 1, epsilon=epsilon, rng=np.random.default_rng(0), ledger=None,
                            exact=exact)
        self._event = fb.privacy_schedule(1)

    def events(self, rounds: int):
        return NO_EVENT if rounds <= 0 else self._event


class _LazyDPTSRun(PolicyRun):
    def __init__(self, policy: LazyDPTS, n_arms, replicates, rng, ledger):
        self.eps, self.n_arms, self.rng = policy.epsilon, n_arms, rng
        self.rows = np.arange(replicates)
        self.batches = FreshBatchMean(replicates, n_arms, epsilon=policy.epsilon, rng=rng,
                                      ledger=ledger, batches="doubling",
                                      name="lazy_dp_ts/batch", exact=policy.exact)
        self._version = -1  # the batches' version the cached terms (O, eps O, noisy mean) were computed at
        self._buffers()

    def _buffers(self) -> None:
        """Beta-parameter and draw buffers (rebuilt for a run pickled without them)."""
        self._a, self._b = np.zeros((self.rows.size, self.n_arms)), np.zeros((self.rows.size, self.n_arms))
        self._theta = np.zeros((self.rows.size, self.n_arms))  # the Beta draws, read only by the arg max

    def __setstate__(self, state: dict) -> None:
        # a run pickled before session 6 (a deployment's snapshot) has no buffers, one pickled before
        # session 18 no draw buffer: scratch space only, recreated
        self.__dict__.update(state)
        if {"_a", "_b", "_theta"} - state.keys():
            self._buffers()

    def select(self, t):
        if t <= self.n_arms:
            return np.full(self.rows.size, t - 1, dtype=np.intp)
        if self._version != self.batches.version:  # a batch closed: refresh the terms built on it
            o = self.batches.batch_size.astype(float)  # 2^r >= 1 after the initial pulls
            self._o, self._eps_o, self._mean = o, self.eps * o, self.batches.noisy_sum / o
            self._version = self.batches.version
        shift = LAZY_SHIFT * math.log2(t)
        code, out = fused_select(self.rng, hh_lazy_select, self._theta, self._mean, self._eps_o, self._o, shift,
                                 self._a, self._b)
        if code == 0:
            return out
        if code is None:  # not compiled on a plain Generator: lines 6-8 in one kernel, then the draws
            # v = 3 log2(t) / (eps O), mubar = clip(noisy mean + v, 0, 1)
            hh_lazy_beta_params.at(self.rows.size)(self._mean, self._eps_o, self._o, shift, self._a, self._b)
        # (code 1: a parameter <= 0, which the clip never gives: Generator.beta raises its own error)
        return beta_argmax(self.rng, self._a, self._b)

    def update(self, t, arms, rewards):
        self.batches.insert_pulled(arms, rewards)


class LazyDPTS(PureEpsilonPolicy):
    """Lazy-DP-TS, Hu & Hegde (UAI 2022) Algorithm 2: fresh doubling batches, one Lap(1/eps) per
    batch, shift 3 log2(t)/(eps O), Beta posterior (see module docstring).

    Parameters: ``epsilon`` in (0, inf) (pure eps-DP, Theorem 3); ``exact`` (grid noise).
    """

    name = "lazy_dp_ts"
    claim_source = "Hu & Hegde (2022), Theorem 3"

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _LazyDPTSRun(self, n_arms, replicates, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        return LazyDPTSSchedule(self.epsilon, self.exact)


__all__ = ["DPTS", "LazyDPTS", "DPTSSchedule", "LazyDPTSSchedule"]
