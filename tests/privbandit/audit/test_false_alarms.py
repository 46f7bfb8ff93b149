"""Session 16: the white-box false-alarm budget tallied where each statistical test is made
(privbandit/audit/false_alarms.py) and stated on the VERDICT line as the sum actually spent."""

import argparse
import json
import re

import pytest

from privbandit.audit import false_alarms
from privbandit.audit.cli import add_parser
from privbandit.audit.whitebox import whitebox_audit
from privbandit.policies import make_policy


def test_tally_collects_only_inside_its_block_and_nests():
    false_alarms.spend("outside", 0.5)  # no active tally: nothing recorded, no error
    with false_alarms.tally() as outer:
        false_alarms.spend("a", 1e-4)
        with false_alarms.tally() as inner:
            false_alarms.spend("b", 2e-4)
        false_alarms.spend("a", 1e-4)
    assert false_alarms.current() is None
    assert inner.spent == [("b", 2e-4)]
    assert outer.families == 2 and outer.total == pytest.approx(2e-4)
    assert outer.by_family() == {"a": (2, pytest.approx(2e-4))}
    assert "at most 0.0002" in outer.statement()
    assert "no white-box statistical test" in false_alarms.AlphaTally().statement()


def test_a_law_testing_whitebox_run_spends_alpha_per_family_it_tests():
    """Private-UCB's coupled run tests the noise law (check 5, its tails, the per-stream law), the
    coincidences and check 5d: each family tallied once at the run's alpha; an exact-only run (law=False)
    spends nothing, so it adds nothing to the bound."""
    policy = make_policy("private_ucb")
    with false_alarms.tally() as t:
        res = whitebox_audit(policy, 300, n_arms=2, replicates=64, seed=0, alpha=1e-4)
    assert res.verdict == "CONSISTENT"
    fams = t.by_family()
    for family in ("noise law (check 5)", "noise-law tails (check 5)", "per-stream noise law (check 5)",
                   "coincidences (check 5)"):
        assert fams[family] == (1, pytest.approx(1e-4)), family
    assert any(name.endswith("(check 5d)") for name in fams)
    assert "sampler reach (check 5f)" not in fams  # the library's own samplers: probed at no cost in alpha
    assert t.total == pytest.approx(1e-4 * t.families)
    with false_alarms.tally() as exact_only:
        whitebox_audit(policy, 300, n_arms=2, replicates=64, seed=0, alpha=1e-4, law=False)
    assert exact_only.families == 0


def test_verdict_line_and_summary_state_the_sum_spent(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["audit", "gaussian_ts", "--param", "b=2", "--param", "c=4", "--tier", "smoke",
                              "--seed", "1", "--out", str(tmp_path)])
    assert args.func(args) == 0
    verdict = [line for line in capsys.readouterr().out.splitlines() if line.startswith("VERDICT:")][0]
    summary = json.loads((tmp_path / "summary.json").read_text())["whitebox_false_alarms"]
    families = summary["families"]
    assert summary["tests"] == sum(f["tests"] for f in families.values()) > 0
    assert summary["bound"] == pytest.approx(sum(f["alpha"] for f in families.values()))
    assert "noise law (check 5)" in families  # (the smoke tier runs no far law)
    stated = re.search(r"(\d+) white-box statistical tests made .*probability at most ([0-9.e-]+)", verdict)
    assert stated and int(stated.group(1)) == summary["tests"]
    assert float(stated.group(2)) == pytest.approx(summary["bound"], rel=0.05)
