"""Figure for docs/accountants.md: epsilon (delta = 1e-6) versus the number of compositions of
Laplace(scale=10, sensitivity=1) (eps0 = 0.1) for every accountant.

Run: ``python bench/plot_accountants.py`` -> docs/figures/accountants_vs_k.png
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from accountants import (  # noqa: E402
    AdvancedCompositionAccountant,
    GDPAccountant,
    KOVHeterogeneousAccountant,
    Laplace,
    OptimalHomogeneousAccountant,
    PLDAccountant,
    PureAccountant,
    RDPAccountant,
)

DELTA = 1e-6
EVENT = Laplace(scale=10.0)
KS = np.unique(np.round(np.logspace(0, 5, 16)).astype(int))
STYLES = {
    "pure": ("basic composition", "k:"),
    "advanced": ("advanced (DRV 2010)", "C1--"),
    "kov": ("KOV heterogeneous (Thm 3.5)", "C2-."),
    "gdp": ("GDP (pure -> mu)", "C4-"),
    "rdp": ("RDP (Mironov, improved conversion)", "C0-"),
    "optimal": ("optimal homogeneous (KOV Thm 3.3)", "C3-"),
    "pld": ("PLD (dp-accounting)", "k-"),
}


def main() -> None:
    curves = {}
    for factory in [PureAccountant, AdvancedCompositionAccountant, KOVHeterogeneousAccountant,
                    GDPAccountant, RDPAccountant, OptimalHomogeneousAccountant, PLDAccountant]:
        curves[factory.name] = [factory().compose(EVENT, int(k)).epsilon(DELTA) for k in KS]
        print(factory.name, ["%.4g" % v for v in curves[factory.name]])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for name, ys in curves.items():
        label, style = STYLES[name]
        ax.plot(KS, ys, style, label=label, lw=1.6 if name in ("pld", "optimal") else 1.3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of compositions k")
    ax.set_ylabel("epsilon at delta = 1e-6")
    ax.set_title("Laplace(scale=10), eps0 = 0.1 per release")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    pld = np.asarray(curves["pld"])
    for name, ys in curves.items():
        if name == "pure":
            continue
        label, style = STYLES[name]
        ax2.plot(KS, np.asarray(ys) / pld, style, label=label)
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("number of compositions k")
    ax2.set_ylabel("epsilon / PLD epsilon")
    ax2.set_title("ratio to the PLD certificate")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(HERE, "..", "docs", "figures", "accountants_vs_k.png")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.savefig(out, dpi=120)
    print("wrote", os.path.normpath(out))


if __name__ == "__main__":
    # (argparse only for --help: without it, `--help` overwrote docs/figures/accountants_vs_k.png)
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    main()
