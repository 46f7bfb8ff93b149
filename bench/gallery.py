"""Regenerate the figure gallery docs/figures/: every named experiment at a reduced horizon.

    python bench/gallery.py [--horizon 20000] [--replicates 10] [--only NAME ...]

The bandit experiments run at ``--horizon``/``--replicates``; the heavier ones (contextual, adversarial
tables, graph feedback with K up to 1000) at the smaller sizes in ``SIZES`` so that each stays within
a few minutes on a loaded 2-core machine. ``--only`` regenerates the named figures and rewrites the
README with every caption.

Each figure is the one ``privbandit experiment NAME --out DIR`` writes (one panel per privacy
level, one colour per policy), saved at a small size and palette-quantized so the committed PNGs
stay well under 150 KB; docs/figures/README.md lists them with their captions.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image  # noqa: E402  (matplotlib's own dependency)

from privbandit.experiments import EXPERIMENTS, run_experiment  # noqa: E402
from privbandit.cli_checks import whole

OUT = Path(__file__).resolve().parents[1] / "docs" / "figures"

ROUND_ROBIN = (" At eps = 0.1 DP-UCB-Int's calibrated interval (11634 pulls per arm) outlasts a reduced "
               "horizon: it plays round robin and releases nothing (certified eps 0).")
CAPTIONS = {
    "tossou2016-2arm": "Tossou & Dimitrakakis (AAAI 2016), 2 arms [0.9, 0.6]: UCB1 against Private-UCB, "
                       "DP-UCB-Bound, DP-UCB and DP-UCB-Int at eps in {0.1, 1}." + ROUND_ROBIN,
    "tossou2016-10arm": "Tossou & Dimitrakakis (AAAI 2016), 10 arms (eight at 0.1, 0.55, 0.2): the same "
                        "policies." + ROUND_ROBIN,
    "huhegde2022": "Hu & Hegde (UAI 2022), the 5-arm instance: Lazy-DP-TS, DP-SE, Anytime-Lazy-UCB (stand-in) "
                   "at eps in {0.1, 0.25, 0.5, 1, 500}, and DP-TS at eps >= 1.",
    "ou2024": "Ou, Cummings & Avella Medina (2024): Modified TS on their frontier c = T/(mu^2 (b+1)) for "
              "mu in {1, 5, 10}; rows: Bernoulli and truncated-exponential arms.",
    "mishra2015": "Mishra & Thakurta (UAI 2015), 5 arms (0.9 and four at 0.4): UCB1 and Beta-TS against "
                  "Private-UCB and Private-TS at eps in {0.1, 1}.",
    "mishra2015-contextual": "Mishra & Thakurta (UAI 2015), contextual experiment rebuilt on bundled data (their "
                             "Yahoo! logs are not obtainable): the digits reduction, 10 arms, d = 6; LinUCB and "
                             "linear TS against private LinUCB / linear TS at eps = 2.7 (the paper's eps0 = 0.1 "
                             "per stream) and eps = 27. The certificate grows with the number of tree nodes "
                             "released, so at a reduced horizon it stays below the nominal eps. At this horizon "
                             "the private versions have not started to learn (regret grows like uniform play's) "
                             "at either eps.",
    "chowdhury2022-linear": "Chowdhury & Zhou (ICML 2022) setting: K = 100 arms with a context each per round, "
                            "d = 5, one shared parameter, eps = 0.2, delta = 0.1 (their runs: T = 20000, 50 "
                            "replicates). Shared LinUCB against joint-DP LinUCB (Shariff & Sheffet) with the "
                            "paper's and the GDP calibration, and private LinUCB (disjoint models). Certified "
                            "at the policies' delta = 0.1 (at the CLI's delta = 1e-6 the same runs certify larger "
                            "eps). At delta = 0.1 the GDP calibration spends exactly 0.2, while the paper's "
                            "calibration and private LinUCB certify eps 0: their noise alone gives (0, 0.1)-DP.",
    "tossou2017-adversarial": "Tossou & Dimitrakakis (AAAI 2017): EXP3 and EXP3-tau (dashed: EXP3's own "
                              "certificate is finite but huge) against DP-EXP3-Lap, Agarwal & Singh's private "
                              "EXP3 and Asi, Raman & Talwar's batched conversion (EXP3 base) at eps in "
                              "{0.1, 1, 10}; rows: a best arm switching every T/4 rounds, a "
                              "stochastic instance whose best arm shifts at T/2, the Auer et al. lower-bound "
                              "construction, and a 1-memory adaptive adversary (switching cost 1/2, policy "
                              "regret). Regret is against the best fixed arm of the table, so it can go below 0 "
                              "(grey line) when a policy tracks a switching best arm.",
    "tossou2017-graph": "Tossou, Dimitrakakis & Dubhashi (2017), graph feedback: UCB-N, UCB-MaxN, TS-N, TS-MaxN "
                        "(dashed) against Lazy-DP-TS-N, DP-UCB-N and Gaussian-TS-N at eps in {0.1, 1}; rows: "
                        "Erdos-Renyi, power-law (Barabasi-Albert) and planted-partition graphs at K = 100 and "
                        "K = 1000 (our graph parameters; the paper's are not recovered).",
}

# the full length a reduced horizon is compared with (caption, title); default: the paper's 10^5
FULL = {
    "chowdhury2022-linear": ("the paper's 20000", "paper: 20000"),
    "tossou2017-adversarial": ("the 100000 of docs/policies_adversarial.md", "full run: 100000"),
    "mishra2015-contextual": ("", ""),  # the paper replayed Yahoo! logs: no horizon to compare with
}

# (horizon, replicates, extra run_experiment keywords) for the experiments too heavy for the default
SIZES = {
    "mishra2015-contextual": (10_000, 5, {}),
    "chowdhury2022-linear": (10_000, 10, {"delta": 0.1}),
    "tossou2017-adversarial": (10_000, 5, {}),
    "tossou2017-graph": (5_000, 4, {}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=whole(1), default=20_000)
    parser.add_argument("--replicates", type=whole(1), default=10)
    parser.add_argument("--only", nargs="*", choices=list(EXPERIMENTS),
                        help="regenerate these figures only (none: rewrite the README only)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    lines = ["# Figure gallery", "",
             f"Every named experiment (`privbandit.experiments.EXPERIMENTS`) at a **reduced horizon**: the bandit "
             f"experiments at {args.horizon} rounds and {args.replicates} replicates (the papers use 10^5 rounds; "
             f"`docs/policies_ucb.md` and `docs/policies_ts.md` report the full-length reproductions), the "
             "contextual, adversarial and graph-feedback ones smaller still (each caption gives its size). Seed 0, "
             "delta = 1e-6 unless a caption says otherwise. One panel per privacy level, one colour per policy "
             "across panels, shaded 95% bands for the mean regret; each legend gives the policy's certified "
             "epsilon at the horizon (one legend under the last row when every row's panels list the same "
             "entries); dashed lines are non-private (or non-calibrated) baselines. Regenerate with "
             "`python bench/gallery.py`; each is also what the `privbandit experiment` command in its caption "
             "writes as `regret.png`.", ""]
    for name in EXPERIMENTS:
        horizon, replicates, extra = SIZES.get(name, (args.horizon, args.replicates, {}))
        full, full_short = FULL.get(name, ("the paper's 100000", "paper: 100000"))
        if args.only is None or name in args.only:
            started = time.perf_counter()
            result = run_experiment(name, horizon, replicates, 0, **extra)
            fig = result.plot(title=f"{name}: horizon {horizon} (reduced{'; ' + full_short if full_short else ''}), "
                                    f"{replicates} replicates")
            buffer = io.BytesIO()
            fig.savefig(buffer, dpi=80, format="png")
            path = OUT / f"{name}.png"
            for colors in (96, 64, 48):  # fewer colours for the busiest figures, to stay near 100 KB
                image = Image.open(buffer).convert("RGB").quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
                image.save(path, optimize=True)
                if path.stat().st_size <= 100 * 1024:
                    break
            print(f"{path.name}: {path.stat().st_size / 1024:.0f} KB, {time.perf_counter() - started:.0f} s",
                  flush=True)
        command = f"`privbandit experiment {name} --horizon {horizon} --replicates {replicates} --out DIR`"
        if extra:
            command += " writes it at delta = 1e-6; this figure passes " + ", ".join(
                f"{k} = {v}" for k, v in extra.items()) + " to `run_experiment`"
        lines += [f"## {name}", "", f"![{name}]({name}.png)", "",
                  f"`{name}` at horizon {horizon} (reduced{' from ' + full if full else ''}), {replicates} replicates; "
                  f"{command}. {CAPTIONS.get(name, '')}",
                  ""]
    (OUT / "README.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
