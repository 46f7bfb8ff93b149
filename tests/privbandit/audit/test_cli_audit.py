"""The ``audit`` subcommand module (wired into ``privbandit`` by the lead with add_parser)."""

import argparse
import json

import pytest

from privbandit.audit.cli import add_parser
from privbandit.policies import REGISTRY

from _audit_planted import UnderCountingGaussianTS


def _run(argv):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["audit", *argv])
    return args.func(args)


def test_audit_command_writes_tables_and_verdict(tmp_path, capsys):
    rc = _run(["gaussian_ts", "--param", "b=2", "--param", "c=4", "--tier", "smoke", "--seed", "1",
               "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0 and "VERDICT:" in out and "Ledger audit" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["verdict"] in ("CONSISTENT", "INCONCLUSIVE")
    assert {b["observation"] for b in summary["black_box"]} == {"actions", "actions + trace (auto)"}
    assert (tmp_path / "audit_actions.csv").exists() and (tmp_path / "audit_trace.png").exists()


def test_audit_command_exits_1_on_a_schedule_bug(monkeypatch, capsys):
    monkeypatch.setitem(REGISTRY, "undercounting_ts", UnderCountingGaussianTS)
    rc = _run(["undercounting_ts", "--param", "b=2", "--tier", "smoke"])
    assert rc == 1 and "VERDICT: VIOLATION" in capsys.readouterr().out


def test_audit_command_rejects_bad_input():
    with pytest.raises(ValueError, match="not private"):
        _run(["ucb1", "--tier", "smoke"])
    with pytest.raises(ValueError, match="unknown policy"):
        _run(["no_such_policy"])
    with pytest.raises(ValueError, match="NAME=VALUE"):
        _run(["gaussian_ts", "--param", "b"])
