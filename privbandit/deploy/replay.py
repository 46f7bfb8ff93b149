"""Feed a logged reward table through a deployment (offline replay of the online API).

The log is a CSV file with a header of one column per arm (any names; their number must equal the
deployment's arms) and one row per round holding every arm's reward in that round (a full-feedback
log, e.g. ``privbandit.envs`` tables or a logged A/B test with imputed counterfactuals). For each row
the deployment selects an arm and receives that arm's reward through ``update`` -- exactly the calls
a live service makes, so the store afterwards is the same as if the rounds had been served live.
"""

from __future__ import annotations

import csv
import io
import math
import os
from typing import Any

from accountants._validate import shown
from privbandit.cli_checks import plain_number_text
from privbandit.deploy.deployment import BudgetExhausted, Deployment


def read_log(path: str | os.PathLike, n_arms: int) -> list[list[float]]:
    """The rows of the log as floats, validated (ValueError naming the line and column)."""
    if not isinstance(path, (str, os.PathLike)):  # (was os.fspath's TypeError)
        raise ValueError(f"log must be the path of a CSV file, got {shown(path)}")
    if not os.path.isfile(path):  # (was an IsADirectoryError / FileNotFoundError)
        # (a directory was "No such file" too, which it is not: say what it is)
        what = "a directory, not a file" if os.path.isdir(path) else "No such file"
        raise ValueError(f"log {os.fspath(path)!r}: {what} (expected a CSV file)")
    try:
        return _read_rows(path, n_arms)
    except UnicodeDecodeError as exc:  # (was "'utf-8' codec can't decode byte 0xff ...", naming no file)
        raise ValueError(f"log {os.fspath(path)!r} is not UTF-8 text (it holds the byte {exc.object[exc.start]:#04x}, "
                         f"{exc.reason}); expected a CSV file of rewards") from None
    except csv.Error as exc:  # (a field over csv's 131072-character limit was an "internal error")
        raise ValueError(f"log {os.fspath(path)!r} is not a CSV reward table ({exc})") from None


def _read_rows(path, n_arms: int) -> list[list[float]]:
    with io.open(os.fspath(path), newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"log {os.fspath(path)!r} is empty; expected a header of {n_arms} arm columns")
        if len(header) != n_arms:
            raise ValueError(f"log header has {len(header)} columns, the deployment has {n_arms} arms")
        if _looks_like_rewards(header):
            # (a log written without its header lost its first round silently: "0.5,0.2" was read as two column
            # names; whole-number names such as "0,1" -- pandas' column labels of a reward table -- stay names)
            raise ValueError(f"log {os.fspath(path)!r}: its first line {shown(','.join(header))} is a row of rewards, "
                             f"not a header; the first line must name the {n_arms} arm columns (e.g. "
                             f"{','.join(f'arm{k}' for k in range(min(n_arms, 3)))}{',...' if n_arms > 3 else ''})")
        rows = []
        for line, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != n_arms:
                raise ValueError(f"log line {line}: {len(row)} values, expected {n_arms}")
            values = []
            for col, raw in zip(header, row):
                try:
                    if not plain_number_text(raw):  # ("1_0" and fullwidth digits: see cli_checks)
                        raise ValueError(raw)
                    x = float(raw)
                except ValueError:
                    raise ValueError(f"log line {line}, column {col!r}: {raw!r} is not a number (ASCII digits, "
                                     "no '_' separators)") from None
                if not math.isfinite(x):
                    raise ValueError(f"log line {line}, column {col!r}: reward must be finite, got {shown(raw)}")
                values.append(x)
            rows.append(values)
    return rows


def _looks_like_rewards(header: list[str]) -> bool:
    """Every cell a number and at least one of them not a whole number (nan, inf, 0.5): a data row."""
    values = []
    for cell in header:
        try:
            values.append(float(cell) if plain_number_text(cell.strip()) else None)
        except ValueError:
            return False
    return None not in values and any(not (math.isfinite(x) and x.is_integer()) for x in values)


def replay(deployment: Deployment, path: str | os.PathLike) -> dict[str, Any]:
    """Serve every row of the log; stops early if the deployment refuses a decision
    (``on_exhausted="stop"``). Returns a summary."""
    rows = read_log(path, deployment.n_arms)
    kinds = {"policy": 0, "hold": 0, "exploit": 0}
    total, served, first, last, stopped = 0.0, 0, None, None, None
    for values in rows:
        try:
            d = deployment.select()
        except BudgetExhausted as exc:
            stopped = str(exc)
            break
        result = deployment.update(d.decision, values[d.arm])
        kinds[d.kind] += 1
        total += result.reward
        served += 1
        first = d.decision if first is None else first
        last = d.decision
    status = deployment.status(last=0)
    return {"rows": len(rows), "served": served, "first_decision": first, "last_decision": last,
            "total_reward": total, "decisions_by_kind": kinds, "stopped": stopped,
            "spent_epsilon": status["spent_epsilon"], "remaining_epsilon": status["remaining_epsilon"],
            "delta": status["delta"]}
