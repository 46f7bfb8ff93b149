"""The figure of a sweep or experiment: one panel per privacy level, one colour per policy.

A cell's label carries its privacy level as ``eps=...`` or ``mu=...`` (the experiments' labels,
e.g. ``"Lazy-DP-TS eps=0.5"``, ``"Modified TS mu=5 b=10"``); the rest of the label names the
policy, whose colour is the same in every panel. Non-private baselines (no level in the label) are
drawn in every panel as dashed references. Each panel shows regret with its 95% band; its legend,
below the panel (off the data), gives each policy's certified epsilon at the horizon. Rows are
environments, columns privacy levels (wrapped at ``columns``), and the regret axis is shared
within an environment so that levels compare at a glance.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

_LEVEL = re.compile(r"\b(eps|mu)\s*=\s*([0-9][0-9.eE+-]*)")


def split_label(label: str) -> tuple[str, str | None]:
    """(policy name, privacy level) of a cell label: ``"DP-SE eps=0.5"`` -> ``("DP-SE", "eps = 0.5")``."""
    match = _LEVEL.search(label)
    if match is None:
        return label.strip(), None
    policy = " ".join((label[:match.start()] + label[match.end():]).split())
    return policy, f"{match.group(1)} = {match.group(2)}"


def _level_key(level: str) -> tuple[str, float]:
    kind, value = level.split(" = ")
    try:
        return kind, float(value)
    except ValueError:
        return kind, math.inf


def plot_cells(cells: Sequence[tuple[str, str, object]], title: str | None = None, columns: int = 3):
    """The figure of ``cells`` = [(policy label, environment label, SimulationResult), ...]."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    envs = list(dict.fromkeys(e for _, e, _ in cells))
    parsed = [(split_label(p), e, r) for p, e, r in cells]
    levels = sorted({lvl for (_, lvl), _, _ in parsed if lvl is not None}, key=_level_key) or [None]
    families = list(dict.fromkeys(name for (name, _), _, _ in parsed))
    palette = plt.get_cmap("tab10").colors
    colour = {name: palette[i % len(palette)] for i, name in enumerate(families)}
    # a marker per policy too: overlapping lines (e.g. two round-robin policies) stay distinguishable
    marker = {name: "os^Dv<>PX*"[i % 10] for i, name in enumerate(families)}

    columns = max(1, min(columns, len(levels)))
    rows_per_env = math.ceil(len(levels) / columns)
    n_rows = rows_per_env * len(envs)
    per_panel = max(sum(1 for (_, lvl), e, _ in parsed if e == env and lvl in (level, None))
                    for env in envs for level in levels)
    legend_height = 0.25 * per_panel + 0.3
    fig, axes = plt.subplots(n_rows, columns, figsize=(4.6 * columns, (2.6 + legend_height) * n_rows),
                             squeeze=False, layout="constrained")
    for e_index, env in enumerate(envs):
        env_axes = []
        for l_index, level in enumerate(levels):
            ax = axes[e_index * rows_per_env + l_index // columns][l_index % columns]
            env_axes.append(ax)
            for (name, lvl), e, result in parsed:
                if e != env or lvl not in (level, None):
                    continue
                cert = result.certified_epsilon[-1]
                tag = "non-private" if math.isinf(cert) else f"certified eps {cert:.3g}"
                i = families.index(name)
                every = max(1, result.horizon // 6)
                ax.plot(np.arange(1, result.horizon + 1), result.regret_mean, color=colour[name],
                        linestyle="--" if lvl is None else "-", linewidth=1.4, label=f"{name} ({tag})",
                        marker=marker[name], markersize=4.5, markevery=(every * (i % 5) // 5 + every // 2, every))
                ax.fill_between(np.arange(1, result.horizon + 1), result.regret_lower, result.regret_upper,
                                color=colour[name], alpha=0.18, linewidth=0)
            heading = level if level is not None else "all policies"
            ax.set_title(heading if len(envs) == 1 else f"{heading} | {env}", fontsize="medium")
            ax.set_xlabel("round")
            ax.set_ylim(bottom=0)
            ax.ticklabel_format(axis="both", style="plain", useOffset=False)
            ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))  # plain labels that never collide
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize="small", frameon=False)
        env_axes[0].set_ylabel("cumulative regret")
        top = max(ax.get_ylim()[1] for ax in env_axes)
        for ax in env_axes:
            ax.set_ylim(0, top)
        for extra in range(len(levels), rows_per_env * columns):  # unused slots of the last row
            axes[e_index * rows_per_env + extra // columns][extra % columns].axis("off")
    if title:
        fig.suptitle(title, fontsize="large")
    return fig


__all__ = ["plot_cells", "split_label"]
