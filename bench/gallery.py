"""Regenerate the figure gallery docs/figures/: every named experiment at a reduced horizon.

    python bench/gallery.py [--horizon 20000] [--replicates 10]

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
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--replicates", type=int, default=10)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    lines = ["# Figure gallery", "",
             f"Every named experiment (`privbandit.experiments.EXPERIMENTS`) at a **reduced horizon of "
             f"{args.horizon} rounds** and **{args.replicates} replicates** (the papers use 10^5 rounds; "
             f"`docs/policies_ucb.md` and `docs/policies_ts.md` report the full-length reproductions), seed 0, "
             "delta = 1e-6. One panel per privacy level, one colour per policy across panels, shaded 95% bands "
             "for the mean regret; each legend gives the policy's certified epsilon at the horizon; dashed lines "
             "are non-private baselines. Regenerate with `python bench/gallery.py`; each is also what "
             "`privbandit experiment NAME --horizon "
             f"{args.horizon} --replicates {args.replicates} --out DIR` writes as `regret.png`.", ""]
    for name in EXPERIMENTS:
        started = time.perf_counter()
        result = run_experiment(name, args.horizon, args.replicates, 0)
        fig = result.plot(title=f"{name}: horizon {args.horizon} (reduced; papers: 100000), "
                                f"{args.replicates} replicates")
        buffer = io.BytesIO()
        fig.savefig(buffer, dpi=80, format="png")
        image = Image.open(buffer).convert("RGB").quantize(colors=96, method=Image.Quantize.MEDIANCUT)
        path = OUT / f"{name}.png"
        image.save(path, optimize=True)
        print(f"{path.name}: {path.stat().st_size / 1024:.0f} KB, {time.perf_counter() - started:.0f} s")
        lines += [f"## {name}", "", f"![{name}]({name}.png)", "",
                  f"`{name}` at horizon {args.horizon} (reduced from the paper's 100000), "
                  f"{args.replicates} replicates. {CAPTIONS.get(name, '')}",
                  ""]
    (OUT / "README.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
