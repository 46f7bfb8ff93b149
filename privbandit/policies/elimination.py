"""Fresh-batch private policies: DP-SE and Anytime-Lazy-UCB.

* :class:`DPSE` -- Sajed & Sheffet, "An Optimal Private Stochastic-MAB Algorithm Based on an
  Optimal Private Stopping Rule", ICML 2019: private Successive Elimination. The paper's text was
  not available; the pseudo-code is the consensus of three independent public implementations
  (ALGORITHMS.md 7.1).
* :class:`AnytimeLazyUCB` -- Hu, Huang & Mehta, "Optimal Algorithms for Private Online Learning in
  a Stochastic Environment", arXiv 2102.07929 (2021). Its exact index, constants and initialisation
  were NOT recovered; this class is the documented stand-in of ALGORITHMS.md 7.2 (Lazy-DP-TS-style
  doubling fresh batches with the AdaP-UCB index of Azize & Basu, eq. (7)).

Both use each reward in exactly one noisy batch sum (the fresh-batch mechanism,
:class:`privbandit.mechanisms.FreshBatchMean`), so every record is in one Lap(1/eps) release of
sensitivity 1: eps-DP per record by parallel composition over disjoint batches, for every horizon.
"""

from __future__ import annotations

import math

import numpy as np

from accountants import _validate
from accountants._validate import shown
from accountants.events import NO_EVENT, Event
from privbandit.mechanisms.fresh_batch import FreshBatchMean, first_reaching
from privbandit.policies.base import PolicyRun, PureEpsilonPolicy, check_arms, check_unit
from privbandit.schedule import PrivacySchedule


class SingleReleaseSchedule(PrivacySchedule):
    """One Lap(1/eps) (sensitivity 1) per record once ``first_round`` rounds have passed, nothing before.

    The event is the fresh-batch mechanism's own declared schedule (one release per record).
    """

    def __init__(self, epsilon: float, first_round: int, exact: bool = False):
        self.first_round = first_round
        self.mechanism = FreshBatchMean(1, 1, epsilon=epsilon, rng=np.random.default_rng(0),
                                        ledger=None, batches="manual", exact=exact)

    def events(self, rounds: int) -> Event:
        if rounds < self.first_round:
            return NO_EVENT
        return self.mechanism.privacy_schedule(1)


# --------------------------------------------------------------------------------------------------
# DP-SE


def epoch_size(epoch: np.ndarray | int, active: np.ndarray | int, epsilon: float, beta: float) -> np.ndarray:
    """R_e = floor(max{32 ln(8|S|e^2/beta)/Delta_e^2, 8 ln(4|S|e^2/beta)/(eps Delta_e)}) + 1, Delta_e = 2^-e."""
    e = np.asarray(epoch, dtype=float)
    s = np.asarray(active, dtype=float)
    gap = 2.0 ** -e
    with np.errstate(over="ignore", divide="ignore"):  # extreme eps/beta: sizes past any horizon
        a = 32.0 * np.log(8.0 * s * e * e / beta) / gap ** 2
        b = 8.0 * np.log(4.0 * s * e * e / beta) / (epsilon * gap)
    # capped at 2^62 (an epoch no horizon completes) so that an overflow to inf never casts to a
    # negative int64
    return np.minimum(np.floor(np.maximum(a, b)) + 1, 2.0 ** 62).astype(np.int64)


class _DPSERun(PolicyRun):
    """DP-SE's lock-stepped state. Its arms never depend on the rewards within an epoch (the round
    robin is fixed at the epoch start), so it plans (policies.base): ``plan`` commits to the rounds
    up to the next epoch end of any exploring replicate, and ``update_block`` is the one
    implementation of the update (``update`` is the block of one round)."""

    def __init__(self, policy: "DPSE", n_arms, replicates, horizon, rng, ledger):
        self.n_arms, self.replicates = n_arms, replicates
        self.epsilon, self.beta = policy.epsilon, policy.confidence(horizon)
        self.rows = np.arange(replicates)
        self.active = np.ones((replicates, n_arms), dtype=bool)
        self.epoch = np.ones(replicates, dtype=np.int64)
        self.size = epoch_size(self.epoch, n_arms, self.epsilon, self.beta)  # R_e per replicate
        self.pulls = np.zeros((replicates, n_arms), dtype=np.int64)  # this epoch's pulls
        self.offsets = self.rows * n_arms  # flat index of (replicate, arm 0)
        self._refresh()
        self.batches = FreshBatchMean(replicates, n_arms, epsilon=policy.epsilon, rng=rng,
                                      ledger=ledger,
                                      batches="manual", name="dp_se/batch", exact=policy.exact)

    def _arms_ahead(self, n: int) -> np.ndarray:
        """The arms (n, R) of the next n rounds if no epoch ends before the last of them.

        Within an epoch every active arm is pulled R_e times, round robin (fewest pulls first, then
        the lowest index): after s pulls of an epoch with active arms a_0 < ... < a_{m-1} the next is
        a_{s mod m}. A replicate with one arm left (exploit) has m = 1: it plays that arm.
        """
        played = self.pulls.sum(axis=1)
        rank = played[:, None] + np.arange(n)[None, :]
        rank %= self.n_active[:, None]
        return np.take_along_axis(self.order, rank, axis=1).T

    def select(self, t):
        return self._arms_ahead(1)[0]

    def plan(self, t, limit):
        """Every round up to the first epoch end of any exploring replicate (it ends in the round
        its last batch fills; the elimination after it decides the next epoch's arms)."""
        n = limit
        if self.exploring.any():
            left = self.n_active * self.size - self.pulls.sum(axis=1)
            n = min(n, int(left[self.exploring].min()))
        return self._arms_ahead(max(n, 1))

    def __setstate__(self, state) -> None:
        # a snapshot (privbandit.deploy) written before ``order``/``n_active`` existed loads too:
        # they derive from ``active``
        self.__dict__.update(state)
        self._refresh()

    def _refresh(self) -> None:
        """Quantities that change only at eliminations: who explores, and the order of active arms."""
        self.n_active = self.active.sum(axis=1)
        self.exploring = self.n_active > 1
        # active arms first, in index order (a stable sort of 'inactive'): the round robin's order
        self.order = np.argsort(~self.active, axis=1, kind="stable")

    def update(self, t, arms, rewards):
        self.update_block(t, arms[None], rewards[None])

    def update_block(self, t, arms, rewards):
        """Rounds t .. t + n - 1: exactly n rounds of DP-SE's update. Each reward of an exploring
        replicate enters its arm's open batch; in the round an arm's batch holds R_e rewards it is
        released (once), and an epoch whose batches are all released ends with an elimination.
        Rounds are inserted in stretches that end in such a round, so releases happen in the same
        rounds, in the same order, as round by round."""
        n, j = arms.shape[0], 0
        while j < n:
            exploring = self.exploring
            if not exploring.any():
                return  # every replicate exploits: rewards are no longer used (nor released)
            every = bool(exploring.all())
            seg = arms[j:] if every else arms[j:, exploring]
            flat_pulls = self.pulls.ravel()
            offsets = self.offsets if every else self.offsets[exploring]
            f = seg + offsets[None, :]
            stop = first_reaching(f, flat_pulls, lambda g: self.size[g // self.n_arms])
            end = n if stop < 0 else j + stop + 1
            self.batches.insert_pulled_rounds(arms[j:end], rewards[j:end], None if every else exploring)
            flat_pulls += np.bincount(f[:end - j].ravel(), minlength=flat_pulls.size)
            j = end
            if stop < 0:
                return
            # an arm's batch of R_e fresh rewards is complete: release its noisy mean (once)
            last = f[stop]  # the round that filled a batch
            full = flat_pulls[last] == self.size[last // self.n_arms]
            closing = np.zeros(self.pulls.shape, dtype=bool)
            closing.ravel()[last[full]] = True
            self.batches.close_batch(closing)
            finished = exploring & np.all(~self.active | (self.pulls >= self.size[:, None]), axis=1)
            if finished.any():
                self._eliminate(np.nonzero(finished)[0])
                self._refresh()

    def _eliminate(self, rows: np.ndarray) -> None:
        act = self.active[rows]
        s = act.sum(axis=1).astype(float)
        e = self.epoch[rows].astype(float)
        r_e = self.size[rows].astype(float)
        mean = np.where(act, self.batches.noisy_mean[rows], -np.inf)
        h = np.sqrt(np.log(8.0 * s * e * e / self.beta) / (2.0 * r_e))
        c = np.log(4.0 * s * e * e / self.beta) / (self.epsilon * r_e)
        keep = act & (mean.max(axis=1, keepdims=True) - mean <= 2.0 * (h + c)[:, None])
        self.active[rows] = keep
        self.epoch[rows] += 1
        self.size[rows] = epoch_size(self.epoch[rows], keep.sum(axis=1), self.epsilon, self.beta)
        self.pulls[rows] = 0


class DPSE(PureEpsilonPolicy):
    """DP-SE, private Successive Elimination (Sajed & Sheffet 2019; consensus code, ALGORITHMS.md 7.1).

    ``DPSE(epsilon=1.0, beta=None, exact=False)``; ``beta`` in (0, 1) is the confidence (default 1/T,
    as in the later papers' experiments). Epoch e = 1, 2, ...: Delta_e = 2^-e, every surviving arm is
    pulled R_e = floor(max{32 ln(8|S|e^2/beta)/Delta_e^2, 8 ln(4|S|e^2/beta)/(eps Delta_e)}) + 1 times
    (fresh samples; earlier epochs are discarded), its mean released once as mean + Lap(1/(eps R_e)),
    and arm i is eliminated when max_j mu~_j - mu~_i > 2 (h_e + c_e), h_e = sqrt(ln(8|S|e^2/beta)/(2 R_e)),
    c_e = ln(4|S|e^2/beta)/(eps R_e). The last arm is played to the horizon. Not anytime.

    Privacy: eps-DP, one Lap(1/eps) per record (each reward in one batch sum of sensitivity 1).
    """

    name = "dp_se"
    claim_source = "Sajed & Sheffet (2019): parallel composition over disjoint batches"

    def __init__(self, epsilon: float = 1.0, beta: float | None = None, exact: bool = False):
        super().__init__(epsilon, exact)
        self.beta = None if beta is None else check_unit("beta", beta)

    def confidence(self, horizon: int) -> float:
        return 1.0 / max(horizon, 2) if self.beta is None else self.beta

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _DPSERun(self, n_arms, replicates, horizon, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        check_arms(n_arms, horizon)
        # no batch can be released before some arm holds R_1 rewards
        first = int(epoch_size(1, n_arms, self.epsilon, self.confidence(horizon)))
        return SingleReleaseSchedule(self.epsilon, first, self.exact)

    def extra_params(self):
        return {"beta": self.beta}


# --------------------------------------------------------------------------------------------------
# Anytime-Lazy-UCB (stand-in)


#: Anytime-Lazy-UCB plans only with at most this many replicates: with more, some replicate's batch
#: fills almost every round, so its stretches are a few rounds long and the look-ahead (index rows
#: computed past the stretch's end) costs more than the per-round calls it saves (measured: 0.6x at
#: 1000 replicates, 0.9x at 100, 2-4x faster at 1).
_LOOKAHEAD_REPLICATES = 8


class _AnytimeLazyUCBRun(PolicyRun):
    """Anytime-Lazy-UCB's lock-stepped state. Its index moves with t and with the released batch
    means, and a batch is released in the round it fills -- which depends on the arms played, never
    on their rewards -- so the arms up to (and including) the next round in which any batch fills
    are committed: ``plan`` (policies.base) returns them; ``update_block`` is its one update."""

    def __init__(self, policy: "AnytimeLazyUCB", n_arms, replicates, rng, ledger):
        self.n_arms, self.replicates = n_arms, replicates
        self.alpha, self.epsilon = policy.alpha, policy.epsilon
        self.batches = FreshBatchMean(replicates, n_arms, epsilon=policy.epsilon, rng=rng,
                                      ledger=ledger,
                                      batches="doubling", name="anytime_lazy_ucb/batch", exact=policy.exact)
        self._version = -1  # the batches' version the cached index terms were computed at

    def _index_arms(self, first: int, n: int) -> np.ndarray:
        """The index's argmax (n, R) in rounds first .. first + n - 1 (> K), at the released means now."""
        if self._version != self.batches.version:  # a batch closed: refresh the terms built on it
            o = self.batches.batch_size  # >= 1: the first batch (one reward) closes at an arm's first pull
            self._mean, self._two_o, self._eps_o = self.batches.noisy_sum / o, 2.0 * o, self.epsilon * o
            self._version = self.batches.version
        # alpha ln t per round, in Python floats (libm's log, as per round); the rest is elementwise
        a_ln_t = np.array([self.alpha * math.log(t) for t in range(first, first + n)])[:, None, None]
        index = self._mean + np.sqrt(a_ln_t / self._two_o) + a_ln_t / self._eps_o
        return np.argmax(index, axis=2)

    def select(self, t):
        if t <= self.n_arms:
            return np.full(self.replicates, t - 1, dtype=np.intp)
        return self._index_arms(t, 1)[0]

    def plan(self, t, limit):
        if self.replicates > _LOOKAHEAD_REPLICATES:
            return None  # some replicate's batch fills nearly every round: no stretch to gain
        if t <= self.n_arms:  # rounds 1 .. K pull each arm once, whatever the rewards
            n = min(limit, self.n_arms - t + 1)
            return np.repeat(np.arange(t - 1, t - 1 + n, dtype=np.intp)[:, None], self.replicates, axis=1)
        # look ahead in doubling stretches until some batch would fill (its release changes the index
        # from the next round on) or the limit: about twice the work of the rounds returned
        arms = self._index_arms(t, 1)
        while True:
            stop = self.batches.filling_round(arms)
            if stop >= 0:
                return arms[:stop + 1]
            if arms.shape[0] == limit:
                return arms
            more = min(arms.shape[0], limit - arms.shape[0])
            arms = np.concatenate([arms, self._index_arms(t + arms.shape[0], more)])

    def update(self, t, arms, rewards):
        self.update_block(t, np.asarray(arms)[None], np.asarray(rewards)[None])

    def update_block(self, t, arms, rewards):
        self.batches.insert_pulled_rounds(arms, rewards)


class AnytimeLazyUCB(PureEpsilonPolicy):
    """Anytime-Lazy-UCB stand-in (Hu, Huang & Mehta 2021; ALGORITHMS.md 7.2).

    The paper's exact index and constants are NOT recovered. This is the documented stand-in: each
    arm's rewards are split into fresh doubling batches 1, 2, 4, ... (Lazy-DP-TS, Hu & Hegde 2022,
    Alg. 2); a batch is released once, as its sum + Lap(1/eps); the private mean mu~_j is that of the
    arm's last complete batch, of size O_j; play argmax_j
    mu~_j + sqrt(alpha ln t / (2 O_j)) + alpha ln t / (eps O_j)   (AdaP-UCB index, Azize & Basu eq. (7)),
    with alpha > 3 (default 3.1, their experiments). Rounds 1..K pull each arm once (closing its
    size-1 first batch).

    ``AnytimeLazyUCB(epsilon=1.0, alpha=3.1, exact=False)``. Privacy: eps-DP per record, one
    Lap(1/eps) each (disjoint batches, sensitivity 1), at every t.
    """

    name = "anytime_lazy_ucb"
    claim_source = "Hu, Huang & Mehta (2021): every observation is in one noisy batch"

    def __init__(self, epsilon: float = 1.0, alpha: float = 3.1, exact: bool = False):
        super().__init__(epsilon, exact)
        try:  # (math.isfinite of an int beyond the floats was an OverflowError)
            self.alpha = _validate.finite("alpha", alpha)
        except ValueError:
            self.alpha = None
        if self.alpha is None or not self.alpha > 3:
            raise ValueError(f"alpha must be a real number in (3, inf), got {shown(alpha)}")

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _AnytimeLazyUCBRun(self, n_arms, replicates, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        check_arms(n_arms, horizon)
        return SingleReleaseSchedule(self.epsilon, 1, self.exact)

    def extra_params(self):
        return {"alpha": self.alpha}
