"""Sweeps: many policies on many environments, locally or spread over a cluster.

``sweep(policies, envs, horizon, replicates, seed)`` runs every (policy, environment) cell with
:func:`privbandit.engine.simulate`. Each cell gets its own child of ``SeedSequence(seed)``, spawned in
a fixed order, so a cell's result depends only on the seed and its position in the grid — not on
where or in which order cells run. Running sequentially, on a ``concurrent.futures`` executor, or on
a Dask cluster gives bit-identical results:

    from dask.distributed import Client
    result = sweep(policies, envs, 100_000, 100, seed=1, executor=Client())

``executor`` is anything with ``submit(fn, *args, **kwargs)`` returning a future with ``result()``
(``concurrent.futures.Executor`` and ``dask.distributed.Client`` both qualify); Dask is an optional
extra (``pip install privbandit[dask]``).
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from accountants._validate import NOT_NUMBERS, shown, unknown_name
from privbandit.engine import physical_memory, simulate
from privbandit.envs.base import Environment
from privbandit.policies.base import Policy
from privbandit.results import SimulationResult
from privbandit.seeding import check_seed


def _labelled(items, kind: str, cls) -> list[tuple[str, Any]]:
    # a lone object, a name or None is not a grid (was "'NoneType' object is not iterable", or a
    # string iterated character by character)
    if isinstance(items, (str, bytes, cls)) or not isinstance(items, (Mapping, Iterable)):
        raise ValueError(f"{kind} must be a sequence of {cls.__name__} objects or a mapping label -> "
                         f"{cls.__name__}, got {shown(items)}")
    try:
        pairs = list(items.items()) if isinstance(items, Mapping) else [(repr(x), x) for x in items]
    except TypeError:  # a 0-d numpy array is Iterable by type, not by value
        raise ValueError(f"{kind} must be a sequence of {cls.__name__} objects or a mapping label -> "
                         f"{cls.__name__}, got {shown(items)}") from None
    if not pairs:
        raise ValueError(f"{kind} must not be empty")
    for label, obj in pairs:
        if not isinstance(obj, cls):
            raise ValueError(f"{kind}[{label!r}] must be a {cls.__name__}, got {type(obj).__name__}")
    labels = [label for label, _ in pairs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{kind} labels must be unique; pass a mapping label -> object")
    return pairs


@dataclasses.dataclass
class SweepResult:
    """The results of a sweep, one per (policy, environment) cell, in grid order."""

    cells: list[tuple[str, str, SimulationResult]]
    seed: Any

    def __iter__(self):
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

    def get(self, policy: str, env: str) -> SimulationResult:
        for p, e, r in self.cells:
            if p == policy and e == env:
                return r
        raise ValueError(f"no cell ({policy!r}, {env!r}) in this sweep; its cells are "
                         f"{', '.join(repr((p, e)) for p, e, _ in self.cells)}")

    def summary(self) -> list[dict[str, Any]]:
        """One row per cell: labels, final regret with its band, certified / realized / claimed eps."""
        return [{"policy_label": p, "environment_label": e} | r.summary() for p, e, r in self.cells]

    def summary_frame(self):
        """:meth:`summary` as a pandas DataFrame (requires the ``frames`` extra)."""
        import pandas as pd

        return pd.DataFrame(self.summary())

    def to_frame(self):
        """Every cell's tidy per-round frame, concatenated, with the cell labels as columns."""
        import pandas as pd

        frames = []
        for p, e, r in self.cells:
            f = r.to_frame()
            f.insert(0, "environment_label", e)
            f.insert(0, "policy_label", p)
            frames.append(f)
        return pd.concat(frames, ignore_index=True)

    def plot(self, path: str | None = None, *, title: str | None = None, columns: int = 3):
        """One panel per privacy level (``eps=``/``mu=`` in the policy labels), environments in rows,
        one colour per policy across panels, 95% bands, certified epsilon in each panel's legend
        (below it, off the data); see :mod:`privbandit.figures`. Returns the figure; with ``path``
        it is also written there."""
        import matplotlib

        from privbandit.results import check_title, output_path

        # checked before drawing: columns="3" was a TypeError, 0, -1 or 2.5 were read as 1 or 2
        if isinstance(columns, NOT_NUMBERS) or not isinstance(columns, (int, np.integer)) or columns < 1:
            raise ValueError(f"columns must be a whole number in [1, inf), got {shown(columns)}")
        check_title(title)
        if path is not None:
            path = output_path(path, (".png", ".pdf", ".svg", ".jpg", ".jpeg"))
            matplotlib.use("Agg")
        from privbandit.figures import plot_cells

        fig = plot_cells(self.cells, title=title, columns=min(int(columns), len(self.cells)))
        if path is not None:
            from privbandit.cli_checks import staged_outputs

            try:  # (staged, as Result.save: a kill mid-write leaves the old figure or the new one)
                with staged_outputs(path.parent, "path") as stage:
                    fig.savefig(stage.path(path.name), dpi=90)
            except OSError as exc:
                raise ValueError(f"path {str(path)!r}: cannot write ({exc.strerror or exc})") from None
        return fig


#: what one cell's result keeps beyond its per-replicate arrays (measured ~3 KB for a 10-round run: the
#: checkpoint series, labels, parameters), rounded up
_BYTES_PER_RESULT = 4096


def _check_options(options: Mapping[str, Any]) -> None:
    """ValueError naming a keyword that :func:`privbandit.engine.simulate` does not take, and its close
    matches: it was simulate's TypeError ("got an unexpected keyword argument 'chekpoints'") from the
    first cell, or from a worker once every cell had been submitted (session 13)."""
    known = [name for name, p in inspect.signature(simulate).parameters.items() if p.kind is p.KEYWORD_ONLY]
    for key in options:
        if key not in known:
            raise unknown_name("simulate option", key, known, "privbandit.simulate's keyword options")


def _check_grid(n_policies: int, n_envs: int, replicates, n_arms: int) -> None:
    """ValueError before anything is allocated when the results of every cell -- each holds its per-replicate
    arrays (pulls (R, K), final regret) and ~3 KB more -- cannot fit in physical memory: a grid of 3000 x
    3000 cells was accepted and ran for an hour (~0.4 ms a cell) towards 27 GB of results (session 13).
    ``replicates`` is left to simulate to validate when it is not a whole number."""
    physical = physical_memory()
    if physical is None or isinstance(replicates, NOT_NUMBERS) or not isinstance(replicates, (int, np.integer)):
        return
    cells = n_policies * n_envs
    per_cell = _BYTES_PER_RESULT + 8 * max(operator.index(replicates), 1) * (n_arms + 2)
    if cells * per_cell > physical:
        if per_cell > physical:  # one cell alone: the replicates are the problem (10**400 replicates made the
            # size below an OverflowError in its float division)
            most = (physical - _BYTES_PER_RESULT) // (8 * (n_arms + 2))
            raise ValueError(f"replicates must be a whole number in [1, {most}] on this machine ({physical / 2**30:.3g} "
                             f"GiB; a cell's results hold 8 (K + 2) bytes per replicate, {n_arms} arms), "
                             f"got {shown(replicates)}")
        raise ValueError(f"policies x envs = {n_policies} x {n_envs} = {cells} cells need about "
                         f"{cells * per_cell / 2**30:.3g} GiB for their results ({replicates} replicates, {n_arms} arms), "
                         f"more than this machine's {physical / 2**30:.3g} GiB: at most {physical // per_cell} cells")


def sweep(policies: Sequence[Policy] | Mapping[str, Policy], envs: Sequence[Environment] | Mapping[str, Environment],
          horizon: int, replicates: int = 100, seed=0, *, executor=None, **simulate_kwargs) -> SweepResult:
    """Simulate every policy on every environment; see the module docstring for seeding and executors.

    ``policies`` and ``envs`` are sequences (labelled by ``repr``) or mappings label -> object.
    ``simulate_kwargs`` go to :func:`privbandit.engine.simulate` (``delta``, ``ledger``, ...);
    progress bars are off inside a sweep.
    """
    pols = _labelled(policies, "policies", Policy)
    envs_ = _labelled(envs, "envs", Environment)
    _check_options(simulate_kwargs)
    _check_grid(len(pols), len(envs_), replicates, max(e.n_arms for _, e in envs_))
    grid = list(itertools.product(pols, envs_))
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(check_seed("seed", seed))
    children = root.spawn(len(grid))
    kwargs = dict(simulate_kwargs) | {"progress": False}
    if executor is None:
        results = [simulate(p, e, horizon, replicates, child, **kwargs) for ((_, p), (_, e)), child in zip(grid, children)]
    else:
        if not callable(getattr(executor, "submit", None)):
            raise ValueError("executor must have a submit(fn, *args, **kwargs) method (an Executor or a Dask Client)")
        futures = [executor.submit(simulate, p, e, horizon, replicates, child, **kwargs)
                   for ((_, p), (_, e)), child in zip(grid, children)]
        results = [f.result() for f in futures]
    return SweepResult([(pl, el, r) for ((pl, _), (el, _)), r in zip(grid, results)], seed)
