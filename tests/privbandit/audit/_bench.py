"""Load the planted-bug modules of ``bench/`` by file (they are not a package), for the round tests; the
registry tests' clean twins and behaviour comparison."""

from __future__ import annotations

import functools
import importlib.util
import pathlib
import sys

import numpy as np

BENCH = pathlib.Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))  # the round modules import the earlier rounds' helpers by name


def load(name: str):
    """The module ``bench/<name>.py``, executed afresh."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def twins(cls):
    """A planted bug and its clean twin: the bug's own configuration started by its parent's ``start`` (as the
    bench's armed guard builds it)."""
    bug, clean = cls(), cls()
    clean.start = functools.partial(cls.__mro__[1].start, clean)
    return bug, clean


def differs(a: dict, b: dict) -> bool:
    """Whether two ``audit_planted.behaviour`` results differ in actions, draws or ledger reports."""
    if a["actions"].shape != b["actions"].shape or not np.array_equal(a["actions"], b["actions"]):
        return True
    return any(u.shape != v.shape or not np.array_equal(u, v, equal_nan=True)
               for key in ("draws", "reports") for u, v in zip(a[key], b[key]))


def check_registration(harness, module, n: int) -> None:
    """Round ``n``'s registration (``module`` = bench/audit_planted_round<n>.py): bugs named ``bug_<key>`` in the
    harness's BUGS, copies of a private policy whose docstring states the true epsilon; controls named
    ``control_<key>`` with a docstring saying so, listed before the bugs in the module; deployment rows
    subclasses of ``Deployment``."""
    bugs, controls = getattr(module, f"ROUND{n}_BUGS"), getattr(module, f"CONTROLS{n}")
    deploy = {**getattr(module, f"DEPLOY_BUGS{n}"), **getattr(module, f"DEPLOY_CONTROLS{n}")}
    assert not set(bugs) & set(controls)
    for key, cls in bugs.items():
        assert cls.name == "bug_" + key and harness.BUGS[key] is cls
        assert cls.__mro__[1].private and "true" in (cls.__doc__ or "").lower()  # states the true epsilon
    for key, cls in controls.items():
        assert cls.name == "control_" + key and cls.__doc__.startswith("Control")
    for cls in deploy.values():
        assert issubclass(cls, module.Deployment) and cls is not module.Deployment
    names = list(vars(module))
    assert names.index(f"CONTROLS{n}") < names.index(f"ROUND{n}_BUGS")


def check_only_round(harness, module, n: int, monkeypatch, tmp_path) -> None:
    """``audit_planted.py --only round<n>`` calls (the audit itself stubbed out) the round's controls, then its
    bugs, then its deployment rows (bugs and controls, the bugs marked as such)."""
    calls = []
    monkeypatch.setattr(harness, "controls", lambda opts, rows, unmodified, variants: calls.append(("controls", list(variants))))
    monkeypatch.setattr(harness, "bugs", lambda opts, rows: calls.append(("bugs", list(opts.bugs))))
    monkeypatch.setattr(harness, "deployments",
                        lambda rows, cases, bug_keys: calls.append(("deployments", list(cases), set(bug_keys))))
    monkeypatch.setattr(sys, "argv", ["audit_planted.py", "--only", f"round{n}", "--json", str(tmp_path / "r.json")])
    harness.main()
    deploy_bugs = getattr(module, f"DEPLOY_BUGS{n}")
    assert [c[0] for c in calls] == ["controls", "bugs", "deployments"]
    assert calls[0][1] == list(getattr(module, f"CONTROLS{n}")) and calls[1][1] == list(getattr(module, f"ROUND{n}_BUGS"))
    assert set(calls[2][1]) == set(deploy_bugs) | set(getattr(module, f"DEPLOY_CONTROLS{n}"))
    assert calls[2][2] == set(deploy_bugs)


def armed_on_a_tiny_run(harness, cls) -> bool:
    """Whether bug ``cls`` differs from its clean twin: in its certificate (against the parent's schedule on the
    bug's configuration: a claim-only bug), or on a tiny run (2 arms, 8 replicates, 200 rounds)."""
    bug, clean = twins(cls)
    parent = object.__new__(cls.__mro__[1])
    parent.__dict__.update(bug.__dict__)
    if harness._claims_differ(bug, parent):
        return True
    return differs(harness.behaviour(bug, n_arms=2, replicates=8, horizon=200),
                   harness.behaviour(clean, n_arms=2, replicates=8, horizon=200))
