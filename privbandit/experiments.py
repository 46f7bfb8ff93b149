"""The source papers' experiments as named, runnable configurations.

Each experiment is a function ``(horizon) -> (policies, environments)`` with the paper's instance,
privacy levels and comparators; :func:`run_experiment` runs it as a :func:`privbandit.sweep.sweep`
(locally or on an executor) and returns the sweep result. ``privbandit experiment NAME`` runs one
from the command line, prints the table and writes ``summary.csv`` and ``regret.png``.

The papers' horizons are 10^5; the default here is smaller so that an experiment runs in minutes
on a laptop — pass ``horizon=100_000`` to reproduce at full length (``bench/reproduce_*.py`` record
the measured full-length results in ``docs/policies_*.md``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from accountants import gdp_conversion
from accountants._validate import unknown_name
from privbandit.envs import (BarabasiAlbert, Bernoulli, ErdosRenyi, GraphFeedback, OneMemoryAdversary,
                             PlantedPartition, TruncatedExponential, auer_lower_bound, shifted_stochastic,
                             switching_best_arm)
from privbandit.contextual import ClassificationBandit, LinearContextual
from privbandit.policies import (
    DPSE,
    DPTS,
    EXP3,
    BatchedPrivateEXP3,
    DPEXP3Lap,
    EXP3Tau,
    PrivateEXP3,
    UCB1,
    AnytimeLazyUCB,
    BetaTS,
    DPUCB,
    DPUCBBound,
    DPUCBInt,
    GaussianTS,
    JointDPLinUCB,
    LazyDPTS,
    LinTS,
    LinUCB,
    PrivateLinTS,
    PrivateLinUCB,
    PrivateTS,
    PrivateUCB,
)
from privbandit.policies.graph import TSN, UCBN, TSMaxN, UCBMaxN
from privbandit.policies.graph_private import DPUCBN, GaussianTSN, LazyDPTSN
from privbandit.sweep import SweepResult, sweep

FIVE_ARMS = [0.75, 0.625, 0.5, 0.375, 0.25]
DELTA = 1e-6


def tossou2016(arms: list[float]) -> Callable:
    """Tossou & Dimitrakakis (AAAI 2016), Section 5: UCB1, Private-UCB, DP-UCB-Bound, DP-UCB and
    DP-UCB-Int (its interval calibrated to eps at delta = 1e-6 by the paper-form bound), eps in {0.1, 1}."""

    def build(horizon: int):
        policies = {"UCB1": UCB1()}
        for eps in (0.1, 1.0):
            policies |= {
                f"Private-UCB eps={eps:g}": PrivateUCB(epsilon=eps),
                f"DP-UCB-Bound eps={eps:g}": DPUCBBound(epsilon=eps),
                f"DP-UCB eps={eps:g}": DPUCB(epsilon=eps),
                f"DP-UCB-Int eps={eps:g}": DPUCBInt(epsilon=eps, delta=DELTA, v=1.1),
            }
        return policies, {f"Bernoulli {arms}": Bernoulli(arms)}

    return build


def huhegde2022(horizon: int):
    """Hu & Hegde (UAI 2022), Section 6: the 5-arm instance, eps in {0.1, 0.25, 0.5, 1, 500}:
    DP-TS, Lazy-DP-TS, DP-SE and Anytime-Lazy-UCB (the documented stand-in)."""
    policies = {}
    for eps in (0.1, 0.25, 0.5, 1.0, 500.0):
        policies |= {
            f"Lazy-DP-TS eps={eps:g}": LazyDPTS(epsilon=eps),
            f"DP-SE eps={eps:g}": DPSE(epsilon=eps),
            f"Anytime-Lazy-UCB eps={eps:g}": AnytimeLazyUCB(epsilon=eps),
        }
        if eps >= 1:
            policies[f"DP-TS eps={eps:g}"] = DPTS(epsilon=eps)
    return policies, {"Bernoulli 5 arms": Bernoulli(FIVE_ARMS)}


def ou2024(horizon: int):
    """Ou, Cummings & Avella Medina, Section 5: Modified TS on the frontier c = T / (mu^2 (b + 1))
    (their tuning rule, every round charged) for mu in {1, 5, 10} and several b, on Bernoulli and
    truncated-exponential arms."""
    policies = {}
    for mu in (1.0, 5.0, 10.0):
        for b in (0, 10, 100, 1000):
            if 5 * b < horizon // 2:
                policies[f"Modified TS mu={mu:g} b={b}"] = GaussianTS(b=b, c=horizon / (mu * mu * (b + 1)))
    envs = {"Bernoulli 5 arms": Bernoulli(FIVE_ARMS),
            "truncated exponential rates [0.1, 1, 2, 5, 10]": TruncatedExponential([0.1, 1, 2, 5, 10])}
    return policies, envs


def mishra2015(horizon: int):
    """Mishra & Thakurta (UAI 2015), Section 5: 5 arms (0.9 and four at 0.4), UCB1 and Beta-TS
    against Private-UCB and Private-TS at eps in {0.1, 1}."""
    policies = {"UCB1": UCB1(), "Beta-TS": BetaTS()}
    for eps in (0.1, 1.0):
        policies |= {f"Private-UCB eps={eps:g}": PrivateUCB(epsilon=eps),
                     f"Private-TS eps={eps:g}": PrivateTS(epsilon=eps)}
    return policies, {"Bernoulli [0.9, 0.4 x 4]": Bernoulli([0.9, 0.4, 0.4, 0.4, 0.4])}


def mishra2015_contextual(horizon: int):
    """Mishra & Thakurta (UAI 2015), Section 5 / Appendix D, rebuilt on bundled data: their contextual
    experiment used Yahoo! news logs (not obtainable) with d = 6 features and eps0 = 0.1 per stream
    (27 streams per arm: total 2.7). Here: the digits reduction (10 arms) projected to d = 6 (an
    intercept and 5 principal components), LinUCB and linear TS against their private versions at
    the paper's eps = 2.7 (eps0 = 0.1) and at eps = 27 (eps0 = 1). This is the on-policy run;
    :func:`mishra2015_contextual_replay` evaluates the same policies by replay on a uniformly logged
    stream, as they did on the Yahoo! logs (Li et al. 2011)."""
    policies = {"LinUCB": LinUCB(), "LinTS": LinTS()}
    for eps in (2.7, 27.0):
        policies |= {f"private_lin_ucb eps={eps:g}": PrivateLinUCB(epsilon=eps, dim=6),
                     f"private_lin_ts eps={eps:g}": PrivateLinTS(epsilon=eps, dim=6)}
    return policies, {"digits d=6": ClassificationBandit("digits", dim=6)}


def mishra2015_contextual_replay(horizon: int = 2_000, replicates: int = 4, seed=0) -> dict:
    """Replay evaluation (Li, Chu, Langford & Wang 2011) of :func:`mishra2015_contextual`'s policies:
    a uniform log of ``horizon * 10`` digits events (about ``horizon`` kept per policy), each policy
    replayed in ``replicates`` random orders. Returns {label: ReplayResult}."""
    from privbandit.contextual.replay import replay, uniform_log

    policies, envs = mishra2015_contextual(horizon)
    env = next(iter(envs.values()))
    log = uniform_log(env, horizon * env.n_arms, seed=seed)
    return {label: replay(pol, log, replicates, seed=seed) for label, pol in policies.items()}


def chowdhury2022_linear(horizon: int):
    """Chowdhury & Zhou (ICML 2022), Section 6 setting (ALGORITHMS.md 12.3): K = 100 arms with a
    context each per round, d = 5, one shared parameter, eps = 0.2, delta = 0.1 (their runs: T = 2e4,
    50 replicates: ``run_experiment("chowdhury2022-linear", 20_000, 50)``). Central-model comparators
    available here: shared LinUCB, joint-DP LinUCB (Shariff & Sheffet) with the paper's and the GDP
    calibration, and Mishra & Thakurta's private LinUCB (disjoint models)."""
    policies = {
        "LinUCB (shared)": LinUCB(model="shared"),
        "joint_dp_lin_ucb eps=0.2 delta=0.1 paper": JointDPLinUCB(epsilon=0.2, delta=0.1, dim=5),
        "joint_dp_lin_ucb eps=0.2 delta=0.1 gdp": JointDPLinUCB(epsilon=0.2, delta=0.1, dim=5, calibration="gdp"),
        "private_lin_ucb eps=0.2": PrivateLinUCB(epsilon=0.2, dim=5),
    }
    return policies, {"linear shared d=5 K=100": LinearContextual(5, 100, noise=0.1, model="shared")}


def tossou2017_adversarial(horizon: int):
    """Tossou & Dimitrakakis (AAAI 2017; seed 002 section 3.2): EXP3, DP-EXP3-Lap at eps in
    {0.1, 1, 10}, Agarwal & Singh's private EXP3 and Asi, Raman & Talwar's batched conversion (EXP3
    base, tau = ceil(1/eps)) at the same eps, and EXP3-tau (tau = ceil(T^(1/3))) on the hard sequences
    (docs/policies_adversarial.md):
    a best arm switching every T/4 rounds, a stochastic instance whose best arm shifts at T/2, the
    Auer et al. lower-bound construction, and a 1-memory adaptive adversary (switching cost 1/2 on
    the switching sequence; policy regret). The tables are drawn from fixed seeds (oblivious)."""
    policies = {"EXP3": EXP3(), "EXP3-tau": EXP3Tau()}
    for eps in (0.1, 1.0, 10.0):
        policies[f"DP-EXP3-Lap eps={eps:g}"] = DPEXP3Lap(epsilon=eps)
        policies[f"Private EXP3 (Agarwal-Singh) eps={eps:g}"] = PrivateEXP3(epsilon=eps)
        policies[f"Batched private EXP3 (Asi-Raman-Talwar) eps={eps:g}"] = BatchedPrivateEXP3(epsilon=eps)
    switching = switching_best_arm(horizon, 5, 4, seed=2017)
    envs = {
        "switching best arm (m=4)": switching,
        "shifted stochastic": shifted_stochastic(horizon, [0.7, 0.5, 0.5, 0.5, 0.3], [0.3, 0.5, 0.5, 0.5, 0.7],
                                                 seed=2017),
        "Auer et al. lower bound": auer_lower_bound(horizon, 5, seed=2017),
        "1-memory adversary (cost 1/2)": OneMemoryAdversary(switching.table, cost=0.5),
    }
    return policies, envs


def graph_instances(n_arms: int, seed: int = 2017) -> dict:
    """Tossou, Dimitrakakis & Dubhashi's (2017) graph families at K = ``n_arms`` (their sizes and
    parameters are not recovered, ALGORITHMS.md 11.7; these are our choices, average degree ~10 for
    Erdos-Renyi and ~4 for Barabasi-Albert): Erdos-Renyi G(K, 0.1), Barabasi-Albert with m = 2
    (power law), planted partition with K/10 blocks (p_in = 0.5, p_out = 0.01). Bernoulli means are
    drawn once, uniformly on [0, 1], from ``seed``; the graphs are fixed (drawn from ``seed``)."""
    means = np.random.default_rng([seed, n_arms]).uniform(0.0, 1.0, n_arms)
    models = {"Erdos-Renyi p=0.1": ErdosRenyi(n_arms, 0.1), "power-law BA m=2": BarabasiAlbert(n_arms, 2),
              f"planted partition {n_arms // 10}x10 (0.5, 0.01)": PlantedPartition(n_arms, n_arms // 10, 0.5, 0.01)}
    return {f"{label} K={n_arms}": GraphFeedback(Bernoulli(means), model, graph_seed=seed)
            for label, model in models.items()}


def tossou2017_graph(horizon: int):
    """Tossou, Dimitrakakis & Dubhashi (2017), graph feedback (seed 002 section 3.3): UCB-N, UCB-MaxN,
    TS-N, TS-MaxN and the private versions (Lazy-DP-TS-N, DP-UCB-N, Gaussian-TS-N) at eps in {0.1, 1}
    (entry relation; Gaussian-TS-N's c is calibrated to (eps, DELTA) through its GDP mu), on
    Erdos-Renyi, power-law and planted-partition graphs with K in {100, 1000}. The paper's horizon
    is 10^5 (pass ``horizon=100_000``; K = 1000 costs ~R K Beta draws per round)."""
    policies = {"UCB-N": UCBN(), "UCB-MaxN": UCBMaxN(), "TS-N": TSN(), "TS-MaxN": TSMaxN()}
    for eps in (0.1, 1.0):
        mu = gdp_conversion.mu_for_epsilon_delta(eps, DELTA)
        c = (horizon - 1) / (2.0 * mu * mu) * (1 + 1e-9)  # b = 0: mu^2 = (T - 1) / (2 c), rounded safe
        policies |= {f"Lazy-DP-TS-N eps={eps:g}": LazyDPTSN(epsilon=eps),
                     f"DP-UCB-N eps={eps:g}": DPUCBN(epsilon=eps),
                     f"Gaussian-TS-N eps={eps:g}": GaussianTSN(b=0, c=c)}
    return policies, graph_instances(100) | graph_instances(1000)


EXPERIMENTS: dict[str, Callable] = {
    "tossou2016-2arm": tossou2016([0.9, 0.6]),
    "tossou2016-10arm": tossou2016([0.1] * 8 + [0.55, 0.2]),
    "huhegde2022": huhegde2022,
    "ou2024": ou2024,
    "mishra2015": mishra2015,
    "mishra2015-contextual": mishra2015_contextual,
    "chowdhury2022-linear": chowdhury2022_linear,
    "tossou2017-adversarial": tossou2017_adversarial,
    "tossou2017-graph": tossou2017_graph,
}


def run_experiment(name: str, horizon: int = 10_000, replicates: int = 20, seed=0, *, executor=None,
                   **simulate_kwargs) -> SweepResult:
    """Run the named experiment (see :data:`EXPERIMENTS`) as a sweep; returns its result."""
    if not isinstance(name, str) or name not in EXPERIMENTS:
        raise unknown_name("experiment", name, EXPERIMENTS, "privbandit.experiments.EXPERIMENTS")
    policies, envs = EXPERIMENTS[name](horizon)
    return sweep(policies, envs, horizon, replicates, seed, executor=executor,
                 **({"delta": DELTA, "ledger": False} | simulate_kwargs))


__all__ = ["EXPERIMENTS", "run_experiment", "graph_instances"]
