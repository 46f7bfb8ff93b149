"""The figure of a sweep or experiment: one panel per privacy level, one colour per policy.

A cell's label carries its privacy level as ``eps=...`` or ``mu=...`` (the experiments' labels,
e.g. ``"Lazy-DP-TS eps=0.5"``, ``"Modified TS mu=5 b=10"``); the rest of the label names the
policy, whose colour is the same in every panel. Non-private baselines (no level in the label) are
drawn in every panel as dashed references. Each panel shows regret with its 95% band; its legend,
below the panel (off the data; once under the last row when every environment's panels list the
same entries), gives each policy's certified epsilon at the horizon. Rows are
environments, columns privacy levels (wrapped at ``columns``), and the regret axis is shared
within an environment so that levels compare at a glance.
"""

from __future__ import annotations

import math
import re
import textwrap
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


def _finite_min(*arrays) -> float:
    """The least finite value of ``arrays``, or 0 if it is positive or there is none (a band of one
    replicate is NaN; ``np.nanmin`` would warn on it)."""
    finite = [a[np.isfinite(a)] for a in map(np.asarray, arrays)]
    return min([0.0] + [float(a.min()) for a in finite if a.size])


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

    def entry(name: str, lvl: str | None, result) -> str:
        cert = result.certified_epsilon[-1]
        return f"{name} ({'non-private' if math.isinf(cert) else f'certified eps {cert:.3g}'})"

    entries = {(env, level): [entry(name, lvl, r) for (name, lvl), e, r in parsed if e == env and lvl in (level, None)]
               for env in envs for level in levels}
    per_panel = max(len(v) for v in entries.values())
    legend_height = 0.25 * per_panel + 0.3
    # several environments whose panels at a level list the same entries (same policies, same
    # certificates): one legend under the last row instead of a repeated one under every row
    shared = len(envs) > 1 and all(entries[(env, level)] == entries[(envs[0], level)]
                                   for env in envs for level in levels)
    height = (2.6 * n_rows + legend_height * (rows_per_env if shared else n_rows))
    fig, axes = plt.subplots(n_rows, columns, figsize=(4.6 * columns, height),
                             squeeze=False, layout="constrained")
    for e_index, env in enumerate(envs):
        env_axes = []
        for l_index, level in enumerate(levels):
            ax = axes[e_index * rows_per_env + l_index // columns][l_index % columns]
            env_axes.append(ax)
            for (name, lvl), e, result in parsed:
                if e != env or lvl not in (level, None):
                    continue
                i = families.index(name)
                every = max(1, result.horizon // 6)
                ax.plot(np.arange(1, result.horizon + 1), result.regret_mean, color=colour[name],
                        linestyle="--" if lvl is None else "-", linewidth=1.4, label=entry(name, lvl, result),
                        marker=marker[name], markersize=4.5, markevery=(every * (i % 5) // 5 + every // 2, every))
                ax.fill_between(np.arange(1, result.horizon + 1), result.regret_lower, result.regret_upper,
                                color=colour[name], alpha=0.18, linewidth=0)
            heading = level if level is not None else "all policies"
            ax.set_title(heading if len(envs) == 1 else f"{heading} | {env}", fontsize="medium")
            ax.set_xlabel("round")
            ax.ticklabel_format(axis="both", style="plain", useOffset=False)
            ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))  # plain labels that never collide
            if not shared or e_index == len(envs) - 1:
                ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize="small", frameon=False)
        env_axes[0].set_ylabel("cumulative regret")
        top = max(ax.get_ylim()[1] for ax in env_axes)
        # regret against the best fixed arm of an adversarial table can go below 0 (a policy that
        # tracks a switching best arm beats every fixed arm): show it rather than clip at 0
        low = min(_finite_min(r.regret_lower, r.regret_mean) for _, e, r in parsed if e == env)
        bottom = 0.0 if low >= 0 else low - 0.03 * (top - low)
        for ax in env_axes:
            ax.set_ylim(bottom, top)
            if bottom < 0:
                ax.axhline(0.0, color="0.6", linewidth=0.6, zorder=0)
        for extra in range(len(levels), rows_per_env * columns):  # unused slots of the last row
            axes[e_index * rows_per_env + extra // columns][extra % columns].axis("off")
    if title:  # wrapped to the figure's width (about 40 characters per 4.6-inch column)
        fig.suptitle(textwrap.fill(title, width=40 * columns), fontsize="large")
    return fig


__all__ = ["plot_cells", "split_label"]
