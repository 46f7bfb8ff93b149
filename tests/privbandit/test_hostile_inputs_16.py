"""Session 16 (s16/fuzz): round 2 of the input fuzzer (bench/fuzz_inputs.py --only types,resources,kills).

Numbers that are not plain (a float subclass or a registered ``numbers.Real`` whose ``__float__`` raises,
lies or returns text; an int subclass whose ``__int__`` lies), arrays whose float copy would not fit in
memory, and writers killed mid-write. Each test fails on 990ee7c.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import accountants as A
from accountants import _validate
from privbandit import budget, simulate
from privbandit.envs import Bernoulli, GraphFeedback
from privbandit.policies import make_policy
from privbandit.testing.hostile import FakeReal, HugeInt, NanFloat, RaisingFloat, RaisingInt, TextFloat

ROOT = Path(__file__).resolve().parents[2]


# --- numbers whose conversion raises or lies -------------------------------------------------------
@pytest.mark.parametrize("value", [RaisingFloat(1.0), TextFloat(1.0), FakeReal(RuntimeError("x")), FakeReal("1")],
                         ids=["float-raising", "float-text", "real-raising", "real-text"])
@pytest.mark.parametrize("call, name", [
    (lambda v: make_policy("dp_ucb", epsilon=v), "epsilon"),
    (lambda v: A.Laplace(scale=v), "scale"),
    (lambda v: A.best_epsilon(A.Laplace(scale=1.0) * 3, v), "delta"),
    (lambda v: budget.epsilon("dp_ucb", v, 1e-6, 2), "horizon"),
    (lambda v: make_policy("gaussian_ts", b=v), "b"),
], ids=["policy", "event", "best_epsilon", "budget-horizon", "count"])
def test_a_failing_float_conversion_is_refused_by_name(call, name, value):
    with pytest.raises(ValueError, match=rf"(^|\W){name} must"):  # (named: "b must", not "bad parameters")
        call(value)


def test_an_int_whose_int_raises_is_read_by_its_value():
    # the message quoted the value through int(value), which raised the object's own error; the
    # validators read an int subclass's own value (operator.index), not what its __int__ says
    with pytest.raises(ValueError, match="exact must be True or False, got 3"):
        make_policy("dp_ucb", exact=RaisingInt(3))
    res = simulate(make_policy("ucb1"), Bernoulli([0.3, 0.6]), RaisingInt(12), RaisingInt(2), seed=0, progress=False)
    assert (res.horizon, res.replicates) == (12, 2)
    with pytest.raises(ValueError, match="seed"):
        simulate(make_policy("ucb1"), Bernoulli([0.3, 0.6]), 12, 2, seed=RaisingInt(1), progress=False)


def test_simulate_runs_the_horizon_it_validated():
    # validated 12 rounds on the int's value, then ran int(horizon) = 10**400 (an OverflowError)
    res = simulate(make_policy("ucb1"), Bernoulli([0.3, 0.6]), HugeInt(12), HugeInt(2), seed=0, progress=False)
    assert (res.horizon, res.replicates) == (12, 2)


def test_dp_ucb_int_v_is_converted_before_it_is_checked():
    # 1 < v < 2 held on the value 1.5, then float(v) stored v = nan: accepted silently with an interval
    with pytest.raises(ValueError, match=r"v must be a real number in \(1, 2\)"):
        make_policy("dp_ucb_int", v=NanFloat(1.5), interval=4)
    assert make_policy("dp_ucb_int", interval=RaisingInt(4)).interval == 4
    assert make_policy("dp_ucb_int", v=1.5, interval=HugeInt(4)).interval == 4  # (int(interval) was 10**400)


def test_exp3_gamma_is_converted_before_it_is_checked():
    with pytest.raises(ValueError, match="gamma"):
        make_policy("exp3", gamma=RaisingFloat(0.5))
    with pytest.raises(ValueError, match="gamma"):
        make_policy("exp3", gamma=NanFloat(0.5))  # (was gamma = nan)


def test_deployment_numbers_are_converted_before_they_are_checked(tmp_path):
    from privbandit.deploy import Deployment

    for kw, name in ((dict(budget=FakeReal(math.nan)), "budget"), (dict(budget=NanFloat(5.0)), "budget"),
                     (dict(delta=RaisingFloat(1e-6)), "delta"), (dict(budget=TextFloat(5.0)), "budget")):
        args = dict(n_arms=2, budget=5.0, delta=1e-6, seed=1) | kw
        with pytest.raises(ValueError, match=rf"{name} must be a real number in \(0, "):
            Deployment.create(tmp_path / f"{name}{len(kw)}{id(kw)}.db", "dp_ucb", **args)
    # a registered numbers.Real that converts honestly is a number ('<' between int and it was a TypeError)
    with Deployment.create(tmp_path / "ok.db", "dp_ucb", n_arms=2, budget=FakeReal(50.0), delta=1e-6, seed=1) as dep:
        assert dep.status()["budget_epsilon"] == 50.0
        d = dep.select()
        with pytest.raises(ValueError, match="reward"):
            dep.update(d.decision, RaisingFloat(0.5))


def test_an_array_entry_whose_conversion_raises_is_refused_by_name():
    with pytest.raises(ValueError, match="means"):
        Bernoulli([FakeReal(RuntimeError("x")), 0.5])


def test_masked_horizons_and_actions_are_refused():
    # np.asarray drops a mask: the value under it was certified / replayed
    with pytest.raises(ValueError, match="horizons"):
        budget.curve("dp_ucb", np.ma.masked_array([10, 100], mask=[0, 1]), 1e-6, 2)
    from privbandit.contextual import LoggedData

    with pytest.raises(ValueError, match="actions"):
        LoggedData(np.full((4, 2), 0.5), np.ma.masked_array([0, 1, 1, 0], mask=[0, 0, 1, 0]), np.full(4, 0.5),
                   np.full(4, 0.5), 2)


# --- sizes beyond the machine: refused before allocating ---------------------------------------------
@pytest.fixture
def small_machine(monkeypatch):
    """A machine of 256 KiB, so the tests allocate nothing large (the check is the same at 23 GiB)."""
    monkeypatch.setattr(_validate, "physical_memory", lambda: 2**18)


def test_a_broadcast_array_is_refused_before_its_copy(small_machine):
    with pytest.raises(ValueError, match=r"means of shape \(100000,\) needs at least .* memory"):
        Bernoulli(np.broadcast_to(0.5, (100_000,)))
    with pytest.raises(ValueError, match=r"horizons of shape"):
        budget.curve("dp_ucb", np.broadcast_to(10, (100_000,)), 1e-6, 2)


def test_a_graph_beyond_memory_is_refused_before_its_adjacency(small_machine):
    import networkx as nx

    with pytest.raises(ValueError, match="graph of 600 nodes"):
        GraphFeedback(Bernoulli(np.full(600, 0.5)), nx.empty_graph(600))
    with pytest.raises(ValueError, match=r"graph of shape \(600, 600\)"):
        GraphFeedback(Bernoulli(np.full(600, 0.5)), np.broadcast_to(True, (600, 600)))


def test_a_ledger_beyond_memory_is_refused(small_machine):
    from privbandit.ledger import Ledger

    with pytest.raises(ValueError, match="replicates x streams = 1000 x 1000"):
        Ledger(1000, 1000)


def test_a_run_state_beyond_memory_is_refused_naming_its_parameters(small_machine):
    from privbandit.contextual import LinearContextual

    # 8 bytes x 50 arms x (2 + 10 + 10^2) floats = 44,800 bytes a replicate: 8 replicates (358 KB) do not fit
    # in 256 KiB, 2 (90 KB) do
    with pytest.raises(ValueError, match=r"replicates x n_arms x dim\^2 = 8 x 50 x 10"):
        simulate(make_policy("lin_ucb"), LinearContextual(dim=10, n_arms=50), 60, 8, progress=False)
    simulate(make_policy("lin_ucb"), LinearContextual(dim=10, n_arms=50), 60, 2, seed=0, progress=False)  # fits


# --- writers: a write that dies half-way leaves the old file ----------------------------------------
def _dies_half_way(self, path, *args, **kwargs):
    Path(path).write_text("partial,row\n1,")
    raise KeyboardInterrupt  # (the user's Ctrl-C, or any crash, mid-write)


def test_results_save_never_leaves_a_truncated_file(tmp_path, monkeypatch):
    import pandas as pd

    res = simulate(make_policy("ucb1"), Bernoulli([0.3, 0.6]), 20, 2, seed=0, progress=False)
    target = tmp_path / "r.csv"
    target.write_text("old complete content\n")
    monkeypatch.setattr(pd.DataFrame, "to_csv", _dies_half_way)
    with pytest.raises(KeyboardInterrupt):
        res.save(target)
    assert target.read_text() == "old complete content\n"
    assert not list(tmp_path.glob(".privbandit-*"))  # (the staging directory is removed)
    monkeypatch.undo()
    res.save(target)
    assert len(pd.read_csv(target)) > 0 and (tmp_path / "r.csv.json").exists()


def test_sweep_plot_never_leaves_a_truncated_file(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from privbandit import sweep

    sw = sweep([make_policy("ucb1")], [Bernoulli([0.3, 0.6])], 20, 2, seed=0)
    target = tmp_path / "s.png"
    target.write_bytes(b"old figure")
    monkeypatch.setattr(Figure, "savefig", _dies_half_way)
    with pytest.raises(KeyboardInterrupt):
        sw.plot(target)
    assert target.read_bytes() == b"old figure"


_LOOP = """
import sys
from privbandit import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import make_policy
import numpy as np
res = simulate(make_policy("ucb1"), Bernoulli([0.3, 0.6]), 5000, 2, seed=0, progress=False,
               checkpoints=np.arange(1, 5001))
res.save(sys.argv[1])
print("ready", flush=True)
while True:
    res.save(sys.argv[1])
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_mid_save_leaves_a_complete_file(tmp_path):
    """A real kill: the writer saves a 5,000-row frame in a loop (almost all of its time writing) and is
    SIGKILLed mid-loop; the file must parse with every row (in place, 6 of 6 kills of the fuzzer's
    20,000-row writer left a truncated or empty file on 990ee7c)."""
    import pandas as pd

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    target = tmp_path / "loop.csv"
    for delay in (0.1,):
        proc = subprocess.Popen([sys.executable, "-c", _LOOP, str(target)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline(), proc.stderr.read()
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        assert len(pd.read_csv(target)) == 5000


# --- the command line ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["1e-400", "5e-330"])
def test_a_delta_that_underflows_is_not_read_as_pure_dp(text, capsys):
    # float("1e-400") is 0.0: `certify --delta 1e-400` certified at delta = 0 without a word (found by
    # the session 15 fuzzer's command-line texts once delta = 0 became valid)
    from privbandit.cli import main

    assert main(["certify", "--releases", "10", "--delta", text]) == 2
    assert "--delta" in capsys.readouterr().err
    assert main(["certify", "--releases", "10", "--delta", "0"]) == 0  # (a written 0 is pure DP)
