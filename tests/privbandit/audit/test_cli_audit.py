"""The ``audit`` subcommand module (wired into ``privbandit`` by the lead with add_parser)."""

import argparse
import json
import re

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


def test_audit_command_exact_and_one_run(tmp_path, capsys):
    """--exact adds the known answer to the actions audit (2-arm Gaussian TS), --one-run a canary
    audit; both land in the tables, the summary and the family-wise verdict."""
    rc = _run(["gaussian_ts", "--param", "b=2", "--param", "c=4", "--tier", "smoke", "--seed", "2",
               "--exact", "--one-run", "40", "--one-run-runs", "4", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0 and "## One-run audit (trace)" in out and "bounds ladder (audit <= exact <= claim)" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["one_run"]["verdict"] in ("CONSISTENT", "INCONCLUSIVE")
    assert summary["one_run"]["m"] == 40 and summary["one_run"]["runs"] == 4
    actions = next(b for b in summary["black_box"] if b["observation"] == "actions")
    assert any(isinstance(row.get("exact"), float) for row in actions["rows"])
    capsys.readouterr()
    with pytest.raises(SystemExit):  # refused when parsed, as every number of the command line
        _run(["gaussian_ts", "--tier", "smoke", "--one-run", "-1"])
    assert "argument --one-run: must be a whole number in [0, inf)" in capsys.readouterr().err


def test_audit_command_one_run_flags_a_schedule_bug(monkeypatch, capsys):
    monkeypatch.setitem(REGISTRY, "undercounting_ts", UnderCountingGaussianTS)
    rc = _run(["undercounting_ts", "--param", "b=2", "--tier", "smoke", "--one-run", "40", "--one-run-runs", "20"])
    assert rc == 1 and "VERDICT: VIOLATION" in capsys.readouterr().out


def test_audit_command_exit_code_3_when_nothing_had_power(monkeypatch, capsys):
    """DP-SE releases nothing in 20 rounds: no audit has power, so INCONCLUSIVE exits 3 (a CI gate
    must not pass it silently), or 0 with --allow-inconclusive."""
    import privbandit.audit.whitebox as wb

    monkeypatch.setattr(wb, "probe_horizon", lambda policy, k: 20)
    rc = _run(["dp_se", "--tier", "smoke", "--horizon", "20"])
    out = capsys.readouterr().out
    assert rc == 3 and "VERDICT: INCONCLUSIVE" in out and "POWER:" in out
    assert _run(["dp_se", "--tier", "smoke", "--horizon", "20", "--allow-inconclusive"]) == 0


def test_audit_command_names_the_white_box_check_that_refuted(monkeypatch, capsys):
    from _whitebox_planted import TripledRewards

    monkeypatch.setitem(REGISTRY, "tripled_ts", TripledRewards)
    rc = _run(["tripled_ts", "--param", "b=2", "--tier", "smoke"])
    out = capsys.readouterr().out
    assert rc == 1 and "white-box sensitivity" in out.splitlines()[-1]


def test_audit_command_runs_graph_policies_edgeless(capsys):
    # (contextual policies get their own audit: test_contextual_audit.py)
    rc = _run(["lazy_dp_ts_n", "--tier", "smoke"])
    out = capsys.readouterr().out
    assert rc == 0 and "edgeless feedback graph" in out.splitlines()[-1]
    # side observations are audited by the graph white-box audits (feedback graph, starving sequence)
    assert "White-box audit with side observations (feedback graph" in out
    assert "White-box audit with side observations (starving graph sequence, K=4" in out


def test_audit_command_catches_a_side_observation_bug(capsys, monkeypatch):
    from privbandit.policies import REGISTRY
    from _graph_planted import RoundsPulledOnly

    monkeypatch.setitem(REGISTRY, "rounds_pulled_only", RoundsPulledOnly)
    rc = _run(["rounds_pulled_only", "--tier", "smoke"])
    out = capsys.readouterr().out
    assert rc == 1 and "white-box (graph) round_records" in out.splitlines()[-1]


def test_audit_command_says_when_the_black_box_horizon_sees_no_release(capsys):
    # DP-UCB-Int at its default certified epsilon (interval 197): first release at round 393
    rc = _run(["dp_ucb_int", "--tier", "smoke"])
    out = capsys.readouterr().out
    assert rc == 0 and re.search(r"ends before the policy's first release \(round \d+", out)
    assert re.search(r"rests on the white-box audit at T=\d+ \([1-9]\d* traced releases\)", out)


def test_audit_command_long_white_box_run_reaches_a_late_bug(tmp_path, monkeypatch, capsys):
    """A bug that starts after round 200 is past the white-box horizon (200): the command's long, thin
    run (exact checks only; at the smoke tier twice the horizon, 8 replicates) refutes it."""
    from _whitebox_planted import HalvedLate

    monkeypatch.setitem(REGISTRY, "halved_late", HalvedLate)
    rc = _run(["halved_late", "--tier", "smoke", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert rc == 1 and "white-box (long) noise_report" in out.splitlines()[-1]
    assert summary["whitebox"]["verdict"] == "CONSISTENT" and summary["whitebox_long"]["horizon"] == 400
    assert [f["check"] for f in summary["whitebox_long"]["findings"]] == ["noise_report"]
