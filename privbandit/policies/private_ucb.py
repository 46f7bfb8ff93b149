"""Private-UCB: UCB on tree-aggregated (binary-mechanism) reward sums.

Mishra & Thakurta, "(Nearly) Optimal Differentially Private Stochastic Multi-Arm Bandits", UAI 2015,
Algorithm 1 ("Differentially Private UCB Sampling"); restored in ALGORITHMS.md 3.1-3.2.

* One tree Tree_a with T leaves per arm (Appendix A; the binary mechanism of Chan, Shi & Song, node
  noise Lap(L/eps0) with L = floor(log2 T) + 1 levels), each at eps0 = eps / k (line 1).
* Rounds 1..k pull every arm once (lines 2-6); then (line 10) pull
  argmax_a  r_a(t)/n_a + sqrt(2 ln t / n_a) + Gamma / n_a,
  with r_a(t) the private total reward read from Tree_a and the confidence relaxation (line 7)
  Gamma = k ln^2 T ln(k T ln T / gamma) / eps   (Lemma 5; natural logs, as in the public
  reproduction keirp/private-bandits), failure probability gamma = T^-4 by default.
* Only the pulled arm's tree advances (line 12: "insert f_t(a*) into Tree_{a*}"), so arm a's tree
  is indexed by that arm's pull count.

Privacy. The paper (Theorem 3) claims eps-DP by composing the k trees, each eps/k-DP. Per record
(DESIGN.md "Per-record composition") a reward enters exactly one tree -- the pulled arm's -- and the
other trees never read it (parallel composition), so the worst record pays only its own tree:
at most bit_length(n) <= L nodes of Lap(L/eps0), where n <= t - k + 1 is the most items one tree can
hold after t rounds (every other arm was pulled once in rounds 1..k). That is pure eps/k-DP (and
less under the approximate-DP accountants), a valid certificate because every output (the arm
sequence) is post-processing of the k trees, each of which sees a changed reward only if it is
the tree the reward was inserted into. The k-fold charge of the paper is the price of not knowing
which arm a record belongs to; it is never needed for event-level neighbours.
"""

from __future__ import annotations

import math

import numpy as np

from accountants.events import NO_EVENT, Event
from privbandit.mechanisms.tree import TreeMechanism
from privbandit.policies.base import PolicyRun, PureEpsilonPolicy, check_arms, check_unit
from privbandit.policies.dp_ucb import _INTP, ucb_index
from privbandit.schedule import PrivacySchedule


def one_hot(replicates: int, n_arms: int, arms: np.ndarray, rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, mask) arrays of shape (R, K) holding ``rewards`` at the pulled ``arms``."""
    rows = np.arange(replicates)
    values = np.zeros((replicates, n_arms))
    mask = np.zeros((replicates, n_arms), dtype=bool)
    values[rows, arms] = rewards
    mask[rows, arms] = True
    return values, mask


class PrivateUCBSchedule(PrivacySchedule):
    """Worst record after t rounds: the releases of one tree holding n(t) = max(1, t - k + 1) items.

    The events are the tree's own declared schedule (``TreeMechanism.privacy_schedule``): the first
    record of a stream is in the nodes [0, 2^j) for every 2^j <= n, bit_length(n) copies of
    Lap(L/eps0). A record's releases only accumulate, so a tree with fewer items is dominated.
    """

    def __init__(self, epsilon: float, horizon: int, n_arms: int, exact: bool = False):
        self.horizon, self.n_arms = horizon, n_arms
        self.tree = TreeMechanism(1, 1, epsilon=epsilon / n_arms, horizon=horizon, rng=np.random.default_rng(0),
                                  ledger=None, exact=exact)

    def max_items(self, rounds: int) -> int:
        return min(self.horizon, max(1, rounds - self.n_arms + 1))

    def events(self, rounds: int) -> Event:
        if rounds <= 0:
            return NO_EVENT
        return self.tree.privacy_schedule(self.max_items(rounds))


class _PrivateUCBRun(PolicyRun):
    def __init__(self, policy: "PrivateUCB", n_arms, replicates, horizon, rng, ledger):
        self.n_arms, self.replicates = n_arms, replicates
        self.tree = TreeMechanism(replicates, n_arms, epsilon=policy.epsilon / n_arms, horizon=horizon, rng=rng,
                                  ledger=ledger,
                                  name="private_ucb/tree", exact=policy.exact)
        self.relaxation = policy.relaxation(horizon, n_arms)

    @property
    def counts(self) -> np.ndarray:
        """(R, K) pull counts n_a, as floats: the items each arm's tree holds (the tree counts its
        inserts; a second tally here would cost an update per round and could only disagree)."""
        return self.tree.count.astype(float)

    def select(self, t):
        if t <= self.n_arms:
            return np.full(self.replicates, t - 1, dtype=np.intp)
        return self._index(t)[1]

    def index(self, t):
        """The (R, K) index (r_a + Gamma)/n_a + sqrt(2 ln t / n_a) of round t > K (line 10)."""
        return self._index(t)[0]

    def _index(self, t):
        # DP-UCB's index kernel with the relaxation as the sums' offset: one pass over the tree's own
        # sums and counts and the argmax, where numpy made seven calls (a fixed ~0.3 us each at one
        # replicate); the same IEEE operations per element as (noisy_sum + Gamma) / n + sqrt(2 ln t / n)
        index, arms = np.empty((self.replicates, self.n_arms)), np.empty(self.replicates, _INTP)
        ucb_index.at(self.replicates)(self.tree.noisy_sum, self.tree.count, self.relaxation, 2.0 * math.log(t),
                                      0.0, 0.0, False, index, arms)
        return index, arms

    def update(self, t, arms, rewards):
        self.tree.insert_pulled(arms, rewards)


class PrivateUCB(PureEpsilonPolicy):
    """Private-UCB (Mishra & Thakurta 2015, Algorithm 1).

    ``PrivateUCB(epsilon=1.0, gamma=None, exact=False)``: ``epsilon`` is the paper's TOTAL budget
    (each of the k trees runs at epsilon / k); ``gamma`` the failure probability in Gamma (default
    T^-4, as in the public reproduction); ``exact`` selects the floating-point-safe noise sampler.
    """

    name = "private_ucb"
    claim_source = "Mishra & Thakurta (2015), Theorem 3"

    def __init__(self, epsilon: float = 1.0, gamma: float | None = None, exact: bool = False):
        super().__init__(epsilon, exact)
        self.gamma = None if gamma is None else check_unit("gamma", gamma)

    def failure_probability(self, horizon: int) -> float:
        return float(horizon) ** -4 if self.gamma is None else self.gamma

    def relaxation(self, horizon: int, n_arms: int) -> float:
        """Gamma = k ln^2 T ln(k T ln T / gamma) / eps (Algorithm 1 line 7; ln T floored at ln 2)."""
        log_t = math.log(max(horizon, 2))
        log_inner = (math.log(n_arms) + log_t + math.log(log_t)
                     - math.log(self.failure_probability(horizon)))  # ln(k T ln T / gamma)
        return n_arms * log_t ** 2 * log_inner / self.epsilon

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        check_arms(n_arms, horizon)
        return _PrivateUCBRun(self, n_arms, replicates, horizon, rng, ledger)

    def privacy_schedule(self, horizon, n_arms):
        check_arms(n_arms, horizon)
        return PrivateUCBSchedule(self.epsilon, horizon, n_arms, self.exact)

    def extra_params(self):
        return {"gamma": self.gamma}
