"""``privbandit deploy``: init, select, update, status, replay; one-line errors with exit 2."""

from __future__ import annotations

import json

import pytest

from privbandit.cli import main


def _run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own errors exit from the parser
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _init(capsys, store, *extra):
    return _run(capsys, "deploy", "init", str(store), "--policy", "lazy_dp_ts", "--param", "epsilon=0.5",
                "--n-arms", "3", "--budget", "1", "--delta", "1e-6", "--seed", "4", "--horizon", "100", *extra)


def test_init_select_update_status(tmp_path, capsys):
    store = tmp_path / "c.db"
    code, out, _ = _init(capsys, store)
    assert code == 0 and json.loads(out)["stop_round"] == 100
    code, out, _ = _run(capsys, "deploy", "select", str(store))
    sel = json.loads(out)
    assert code == 0 and sel["decision"] == 1 and 0 <= sel["arm"] < 3
    code, out, _ = _run(capsys, "deploy", "update", str(store), "--decision", "1", "--reward", "0.5")
    assert code == 0 and json.loads(out) == {"decision": 1, "reward": 0.5, "applied": True, "duplicate": False}
    code, out, _ = _run(capsys, "deploy", "status", str(store))
    status = json.loads(out)
    assert code == 0
    for key in ("spent_epsilon", "remaining_epsilon", "delta", "decisions", "updates"):
        assert key in status
    assert (status["decisions"], status["updates"], status["delta"]) == (1, 1, 1e-6)
    assert status["spent_epsilon"] + status["remaining_epsilon"] == pytest.approx(1.0)


def test_replay(tmp_path, capsys):
    store, log = tmp_path / "r.db", tmp_path / "log.csv"
    _init(capsys, store)
    log.write_text("a,b,c\n" + "0,0,1\n" * 30)
    code, out, _ = _run(capsys, "deploy", "replay", str(store), str(log))
    summary = json.loads(out)
    assert code == 0 and summary["served"] == 30 and summary["decisions_by_kind"]["policy"] == 30
    code, out, _ = _run(capsys, "deploy", "status", str(store))
    assert json.loads(out)["updates"] == 30


@pytest.mark.parametrize("argv,message", [
    (["update", "{store}", "--decision", "x", "--reward", "1"], "argument --decision: expected a whole number in [1, inf)"),
    (["update", "{store}", "--decision", "1", "--reward", "nan"], "argument --reward: must lie in (-inf, inf), got nan"),
    (["update", "{store}", "--decision", "7", "--reward", "1"], "decision 7 does not exist"),
    (["update", "{store}", "--decision", "1"], "required: --reward"),
    (["status", "{missing}"], "no such deployment store"),
    (["replay", "{store}", "{missing}"], "No such file"),
    (["replay", "{store}", "{badlog}"], "log header has 2 columns, the deployment has 3 arms"),
    (["replay", "{store}", "{nanlog}"], "log line 3, column 'c': reward must be finite"),
    (["init", "{new}", "--policy", "ucb1", "--n-arms", "3", "--budget", "1", "--delta", "1e-6"], "not private"),
    (["init", "{new}", "--policy", "dp_ts", "--n-arms", "3", "--budget", "x", "--delta", "1e-6"],
     "argument --budget: expected a real number in (0, inf)"),
    (["init", "{new}", "--policy", "dp_ts", "--n-arms", "3", "--budget", "1", "--delta", "1e-6", "--param", "eps"],
     "--param takes NAME=VALUE"),
    (["init", "{store}", "--policy", "dp_ts", "--n-arms", "3", "--budget", "1", "--delta", "1e-6"], "already exists"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, message):
    store = tmp_path / "c.db"
    _init(capsys, store)
    (tmp_path / "bad.csv").write_text("a,b\n0,1\n")
    (tmp_path / "nan.csv").write_text("a,b,c\n0,1,0\n1,0,nan\n")
    names = {"store": str(store), "missing": str(tmp_path / "missing"), "new": str(tmp_path / "new.db"),
             "badlog": str(tmp_path / "bad.csv"), "nanlog": str(tmp_path / "nan.csv")}
    code, out, err = _run(capsys, "deploy", *[a.format(**names) for a in argv])
    assert code == 2 and out == ""
    assert err.startswith("privbandit: error: ") and err.count("\n") == 1 and message in err


def test_exhausted_budget_with_stop_exits_3(tmp_path, capsys):
    store = tmp_path / "x.db"
    code, out, _ = _run(capsys, "deploy", "init", str(store), "--policy", "dp_ucb_int", "--param", "rate=0.5",
                        "--n-arms", "3", "--budget", "1", "--delta", "1e-6", "--horizon", "50", "--seed", "1",
                        "--on-exhausted", "stop")
    stop = json.loads(out)["stop_round"]
    for _ in range(stop):
        decision = json.loads(_run(capsys, "deploy", "select", str(store))[1])["decision"]
        _run(capsys, "deploy", "update", str(store), "--decision", str(decision), "--reward", "1")
    code, out, err = _run(capsys, "deploy", "select", str(store))
    assert code == 3 and err.startswith("privbandit: budget exhausted: ") and err.count("\n") == 1
