"""What a person reads (issue 17): realized spend in the certificate's own currency, footnoted; the
figures of ``run --plot`` and ``experiment --out``."""

from __future__ import annotations

import io
import re
import warnings

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from privbandit import simulate  # noqa: E402
from privbandit.cli import REALIZED_FOOTNOTE, main, print_table  # noqa: E402
from privbandit.envs import Bernoulli  # noqa: E402
from privbandit.policies import UCB1, DPUCBInt, LazyDPTS, PrivateUCB  # noqa: E402


def _synthetic(realized, bound):
    """A one-checkpoint result whose ledger reports ``realized`` against the same-currency ``bound``."""
    r = simulate(LazyDPTS(epsilon=1.0), Bernoulli([0.5, 0.4]), 20, 2, seed=0, checkpoints=[20])
    r.realized_epsilon = np.array([[realized, np.nan]])
    r.certified_closed_form = np.array([bound])
    return r


@pytest.mark.parametrize("realized, bound, ok", [
    (0.5, 1.0, True), (1.0, 1.0, True),
    (1.0 + 1e-12, 1.0, True),           # float rounding of the same composition (slack 1e-9 relative)
    (1.0 + 1e-6, 1.0, False), (2.0, 1.0, False), (1e-13, 0.0, True), (1e-6, 0.0, False),
])
def test_ratio_is_at_most_one_exactly_when_the_check_passes(realized, bound, ok):
    r = _synthetic(realized, bound)
    assert r.realized_within_certificate() is ok
    assert (r.realized_fraction() <= 1.0) is ok
    s = r.summary()
    assert (s["realized_fraction"] <= 1.0) is ok and s["realized_within_certificate"] is ok


def _rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1
    return [line for line in lines[start:] if line and not line.startswith(("*", " "))]


def test_no_table_row_prints_realized_above_certified_when_the_check_passes():
    """The issue's three rows: DP-UCB-Int at rate 1 (certified 12.9, realized 15.65 in the ledger's
    currency), Lazy-DP-TS (realized 1.000000000001 beside certified 0.999998), Private-UCB."""
    env = Bernoulli([0.75, 0.625, 0.5])
    rows = []
    for policy in (DPUCBInt(rate=1.0), LazyDPTS(epsilon=1.0), PrivateUCB(epsilon=1.0), UCB1()):
        s = simulate(policy, env, 600, 4, seed=3).summary()
        rows.append(s | {"label": repr(policy)})
    assert rows[0]["realized_epsilon_max"] > rows[0]["certified_epsilon"]  # the two currencies differ here
    out = io.StringIO()
    print_table(rows, file=out)
    text = out.getvalue()
    assert REALIZED_FOOTNOTE in text
    for line, s in zip(_rows(text), rows):
        shown = re.search(r"(>?[0-9.]+)%|\s-\s", line)
        if s["realized_within_certificate"] is None:
            assert line.rstrip().endswith("-")
            continue
        assert line.rstrip().endswith("ok")
        assert float(shown.group(1)) <= 100.0  # a passing row never reads as an overspend
        assert line.split()[-2].endswith("%")  # a ratio, not a raw epsilon in another currency


def test_violation_never_reads_as_100_percent():
    r = _synthetic(1.0 + 1e-6, 1.0)
    out = io.StringIO()
    print_table([r.summary() | {"label": "x"}], file=out)
    row = _rows(out.getvalue())[0]
    assert ">100%" in row and row.rstrip().endswith("VIOLATION")


def test_run_plot_has_a_plain_epsilon_axis_from_zero_and_no_nan_line(tmp_path, capsys):
    """The issue's ``run --plot``: offset label "1e-6+4.9999e-1" and an all-NaN realized line."""
    path = tmp_path / "r.png"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert main(["run", "lazy_dp_ts", "--epsilon", "0.5", "--horizon", "400", "--replicates", "4", "--quiet",
                     "--plot", str(path)]) == 0
        fig = simulate(LazyDPTS(epsilon=0.5), Bernoulli([0.5, 0.4]), 400, 4, seed=0).plot_figure()
    assert path.stat().st_size > 0
    eps_ax = fig.axes[1]
    fig.canvas.draw()
    assert eps_ax.get_ylim()[0] == 0
    assert eps_ax.yaxis.get_major_formatter().get_offset() == ""
    for line in eps_ax.get_lines():
        assert np.all(np.isfinite(np.asarray(line.get_ydata(), dtype=float)))
    for ax in fig.axes:  # legends sit below the panels, off the data
        legend = ax.get_legend()
        if legend is not None:
            assert legend.get_window_extent().y1 <= ax.get_window_extent().y0


def test_experiment_figure_one_panel_per_privacy_level_one_colour_per_policy(tmp_path):
    from privbandit.experiments import run_experiment

    result = run_experiment("mishra2015", 200, 2, 0)
    fig = result.plot(str(tmp_path / "f.png"))
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.lines]
    assert sorted(ax.get_title() for ax in panels) == ["eps = 0.1", "eps = 1"]
    colours = {}
    for ax in panels:
        legend = ax.get_legend()
        assert legend.get_window_extent().y1 <= ax.get_window_extent().y0  # off the data
        labels = [t.get_text() for t in legend.get_texts()]
        assert all("certified eps" in t or "non-private" in t for t in labels)
        for line, label in zip(ax.get_lines(), labels):
            policy = label.split(" (")[0]
            colours.setdefault(policy, set()).add(matplotlib.colors.to_hex(line.get_color()))
    assert set(colours) == {"UCB1", "Beta-TS", "Private-UCB", "Private-TS"}
    assert all(len(c) == 1 for c in colours.values())  # the same colour in every panel
    assert len({next(iter(c)) for c in colours.values()}) == len(colours)  # and distinct policies differ
    assert (tmp_path / "f.png").stat().st_size > 0


def test_gallery_has_every_named_experiment():
    from pathlib import Path

    from privbandit.experiments import EXPERIMENTS

    root = Path(__file__).resolve().parents[2]
    gallery = (root / "docs" / "figures" / "README.md").read_text()
    assert "docs/figures/README.md" in (root / "README.md").read_text()
    for name in EXPERIMENTS:
        png = root / "docs" / "figures" / f"{name}.png"
        assert png.exists() and png.stat().st_size < 150 * 1024, name
        assert f"({name}.png)" in gallery and "reduced" in gallery


def _cell(values, lower, cert):
    """The fields plot_cells reads from a SimulationResult."""
    from types import SimpleNamespace

    values = np.asarray(values, dtype=float)
    return SimpleNamespace(horizon=len(values), regret_mean=values, regret_lower=np.asarray(lower, dtype=float),
                           regret_upper=values + 1.0, certified_epsilon=np.array([cert]))


def test_figure_shows_negative_regret_and_shares_a_repeated_legend():
    from privbandit.figures import plot_cells

    down = np.array([0.0, -5.0, -10.0, -4.0])  # a policy beating the best fixed arm of a table
    up = np.array([0.0, 1.0, 2.0, 3.0])
    cells = [("P eps=1", "table", _cell(down, down - 1.0, 1.0)), ("EXP3", "table", _cell(up, up - 1.0, np.inf)),
             ("P eps=1", "stochastic", _cell(up, [np.nan] * 4, 1.0)),  # one replicate: NaN band
             ("EXP3", "stochastic", _cell(up, up / 2, np.inf))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot_cells(cells, title="t")
    table, stochastic = [ax for ax in fig.axes if ax.get_visible()]
    assert table.get_ylim()[0] < -11.0 and stochastic.get_ylim()[0] == 0.0  # not clipped at 0
    # both rows list the same entries: one legend, under the last row
    assert table.get_legend() is None
    assert [t.get_text() for t in stochastic.get_legend().get_texts()] == ["P (certified eps 1)", "EXP3 (non-private)"]


def test_result_table_shows_ledger_columns_only_when_a_run_tracked_its_ledger():
    import io

    from privbandit.cli import print_table

    row = {"label": "DP-UCB", "regret": 1.0, "regret_lower": 0.5, "regret_upper": 1.5, "certified_epsilon": 1.0,
           "claimed_epsilon": 1.0}
    untracked = io.StringIO()
    print_table([row], file=untracked)
    assert "ledger check" not in untracked.getvalue() and "realized" not in untracked.getvalue()
    tracked = io.StringIO()
    print_table([row, {**row, "realized_fraction": 0.5, "realized_within_certificate": True}], file=tracked)
    header, _, first, second = tracked.getvalue().splitlines()[:4]
    assert "ledger check" in header and first.rstrip().endswith("-") and second.rstrip().endswith("ok")
