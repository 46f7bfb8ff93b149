"""Graph feedback: the acceptance regret run, regret against graph density, certificates under both
relations, and simulated pulls per second (docs/policies_graph.md, docs/benchmarks.md).

    python bench/bench_graph.py [--quick] [--figures docs/figures]

1. Erdos-Renyi K = 100, p = 0.1, T = 1e4, 100 replicates: mean regret with 95% bands of UCB-N,
   UCB-MaxN, TS-N, TS-MaxN and the private versions at eps = 1 (the paper's observation: TS-N below
   UCB-MaxN).
2. Regret at T = 1e4 against the Erdos-Renyi density p (K = 100, 20 replicates).
3. Certified epsilon at delta = 1e-6 under the entry and round relations (the graph's max degree).
4. Pulls per second (ledger off, R = 100) at K = 100 (p = 0.1) and 1000 (p = 0.01) against the raw
   cost of the random numbers TS-N draws (one Beta per arm and replicate per round: its practical
   limit; the UCB policies draw none).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privbandit import budget  # noqa: E402
from privbandit.engine import simulate  # noqa: E402
from privbandit.envs import Bernoulli, ErdosRenyi, GraphFeedback  # noqa: E402
from privbandit.policies import DPUCBN, TSN, UCBN, GaussianTSN, LazyDPTSN, TSMaxN, UCBMaxN  # noqa: E402
from accountants import gdp_conversion  # noqa: E402

DELTA = 1e-6


def er_env(K: int, p: float, seed: int = 2017) -> GraphFeedback:
    means = np.random.default_rng([seed, K]).uniform(0.0, 1.0, K)
    return GraphFeedback(Bernoulli(means), ErdosRenyi(K, p), graph_seed=seed)


def gaussian_at(eps: float, T: int) -> GaussianTSN:
    mu = gdp_conversion.mu_for_epsilon_delta(eps, DELTA)
    return GaussianTSN(b=0, c=(T - 1) / (2.0 * mu * mu) * (1 + 1e-9))


def policies(T: int) -> dict:
    return {"UCB-N": UCBN(), "UCB-MaxN": UCBMaxN(), "TS-N": TSN(), "TS-MaxN": TSMaxN(),
            "Lazy-DP-TS-N eps=1": LazyDPTSN(epsilon=1.0), "DP-UCB-N eps=1": DPUCBN(epsilon=1.0),
            "Gaussian-TS-N eps=1": gaussian_at(1.0, T)}


def acceptance(T: int, R: int, figures: Path | None) -> None:
    env = er_env(100, 0.1)
    print(f"## Erdos-Renyi K=100 p=0.1 (max degree {env.max_degree}), T={T}, {R} replicates, seed 1\n")
    print("| policy | regret at T | 95% band | seconds |\n|---|---|---|---|")
    curves = {}
    for label, pol in policies(T).items():
        r = simulate(pol, env, T, R, seed=1, ledger=False)
        curves[label] = r
        print(f"| {label} | {r.regret_mean[-1]:.1f} | [{r.regret_lower[-1]:.1f}, {r.regret_upper[-1]:.1f}] "
              f"| {r.seconds:.1f} |")
    if figures is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        x = np.arange(1, T + 1)
        for label, r in curves.items():
            ax.plot(x, r.regret_mean, label=label)
            ax.fill_between(x, r.regret_lower, r.regret_upper, alpha=0.2)
        ax.set(xlabel="round t", ylabel="cumulative pseudo-regret", yscale="log",
               title=f"Erdos-Renyi K=100, p=0.1: {R} replicates, 95% bands")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(figures / "graph_regret.png", dpi=110)
        plt.close(fig)


def density(T: int, R: int, figures: Path | None) -> None:
    ps = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5]
    pols = {"UCB-N": UCBN(), "UCB-MaxN": UCBMaxN(), "TS-N": TSN(), "TS-MaxN": TSMaxN()}
    print(f"\n## Regret at T={T} against Erdos-Renyi density (K=100, {R} replicates)\n")
    print("| p | " + " | ".join(pols) + " |\n|---|" + "---|" * len(pols))
    table = {k: [] for k in pols}
    for p in ps:
        env = er_env(100, p)
        cells = []
        for label, pol in pols.items():
            r = simulate(pol, env, T, R, seed=2, ledger=False)
            table[label].append((r.regret_mean[-1], r.regret_lower[-1], r.regret_upper[-1]))
            cells.append(f"{r.regret_mean[-1]:.1f} ± {r.regret_upper[-1] - r.regret_mean[-1]:.1f}")
        print(f"| {p:g} | " + " | ".join(cells) + " |")
    if figures is not None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for label, vals in table.items():
            m = np.array(vals)
            ax.errorbar(ps, m[:, 0], yerr=[m[:, 0] - m[:, 1], m[:, 2] - m[:, 0]], marker="o", capsize=3, label=label)
        ax.set(xscale="log", yscale="log", xlabel="Erdos-Renyi edge probability p",
               ylabel=f"regret at T={T}", title=f"Regret against graph density (K=100, {R} replicates)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(figures / "graph_density.png", dpi=110)
        plt.close(fig)


def certificates(T: int) -> None:
    env = er_env(100, 0.1)
    print(f"\n## Certified epsilon at delta={DELTA:g}, T={T}, Erdos-Renyi K=100 (max degree {env.max_degree})\n")
    print("| policy | entry | round |\n|---|---|---|")
    for label, pol in list(policies(T).items())[4:] + [("Lazy-DP-TS-N eps=0.1", LazyDPTSN(epsilon=0.1))]:
        e = budget.epsilon(pol, T, DELTA, 100).value
        c = budget.epsilon(pol, T, DELTA, 100, structure=env.structure(), relation="round")
        print(f"| {label} | {e:.4g} | {c.value:.4g} ({c.by}) |")


def speed(T: int, R: int) -> None:
    print(f"\n## Pulls per second (ledger off, R={R}, T=max({T}, K); best of 2)\n")
    print("| K | policy | pulls/s | raw Beta draws limit (pulls/s) |\n|---|---|---|---|")
    for K in (100, 1000):
        T_k = max(T, K)
        env = er_env(K, 0.1 if K == 100 else 0.01)
        rng = np.random.default_rng(0)
        # Beta(50, 50): posteriors after a few dozen observations (numpy's Beta(1, 1) takes the slow
        # Johnk rejection path, not representative of a run)
        a = np.full((R, K), 50.0)
        t0 = time.perf_counter()
        for _ in range(T_k):
            rng.beta(a, a).argmax(axis=1)
        raw = T_k * R / (time.perf_counter() - t0)
        for label, pol in policies(T_k).items():
            best = min(simulate(pol, env, T_k, R, seed=3, ledger=False).seconds for _ in range(2))
            print(f"| {K} | {label} | {T_k * R / best:,.0f} | {raw:,.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="T=2000, fewer replicates")
    ap.add_argument("--figures", type=Path, default=None)
    args = ap.parse_args()
    T = 2_000 if args.quick else 10_000
    acceptance(T, 20 if args.quick else 100, args.figures)
    density(T, 5 if args.quick else 20, args.figures)
    certificates(T)
    speed(500 if args.quick else 2_000, 100)


if __name__ == "__main__":
    main()
