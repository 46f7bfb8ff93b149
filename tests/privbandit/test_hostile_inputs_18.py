"""Session 18 (s18/fuzz): findings of ``bench/fuzz_inputs.py`` round 4 (``--only numtypes,pickle,afterfail``)
and session 17's leftovers (stale staging directories, weak deployment keys, Parquet logs naming a column twice,
an experiment's ``--out`` with no verified reader). Each test failed on ff58381."""

from __future__ import annotations

import os
import pickle
import time

import numpy as np
import pytest


# ---------------------------------------------------------------- a policy run driven directly: bad pulls
def _twins(name, replicates=3):
    from privbandit.ledger import Ledger
    from privbandit.policies import make_policy

    pol = make_policy(name)
    runs = []
    for _ in range(2):
        ledger = Ledger(replicates, 2) if pol.private and pol.records_releases else None
        runs.append(pol.start(2, replicates, 60, np.random.default_rng(11), ledger=ledger))
    return runs


def _drive(run, t0, rounds, replicates=3):
    rng = np.random.default_rng(7)
    chosen = []
    for t in range(t0, t0 + rounds):
        arms = run.select(t)
        run.update(t, arms, rng.random(replicates))
        chosen.append(np.asarray(arms).tolist())
    return chosen


@pytest.mark.parametrize("name,arms,match", [
    ("ucb1", [5, 0, 1], r"arms must lie in \[0, 2\)"),  # (was accepted: fancy indexing past the arms)
    ("kl_ucb", [-1, 0, 1], r"arms must lie in \[0, 2\)"),  # (was accepted: -1 credited the last arm)
    ("exp3_tau", [0, 1], r"arms must be an integer array of shape \(3,\)"),  # (was accepted)
    ("dp_se", [0.5, 1.5, 0.5], r"arms must be an integer array"),  # (was numpy's IndexError)
])
def test_a_run_refuses_arms_outside_its_shape_or_range(name, arms, match):
    run, _ = _twins(name)
    _drive(run, 1, 4)
    t = 5
    run.select(t)
    with pytest.raises(ValueError, match=match):
        run.update(t, np.asarray(arms), np.full(3, 0.5))


@pytest.mark.parametrize("name,bad", [
    ("beta_ts", lambda arms, r: (arms[:2], r)),  # (its counts were updated, its sums not, then a broadcast error)
    ("beta_ts", lambda arms, r: (arms, np.stack([r, r]))),
])
def test_a_refused_update_leaves_the_run_as_its_twin(name, bad):
    a, b = _twins(name)
    assert _drive(a, 1, 4) == _drive(b, 1, 4)
    arms_a, arms_b = a.select(5), b.select(5)
    r = np.array([0.2, 0.7, 0.9])
    with pytest.raises(ValueError, match="arms|rewards"):
        a.update(5, *bad(arms_a, r))
    a.update(5, arms_a, r)
    b.update(5, arms_b, r)
    assert _drive(a, 6, 10) == _drive(b, 6, 10)


def test_two_dimensional_rewards_are_refused_by_name_not_by_numba():
    (run, _) = _twins("dp_exp3_lap")
    _drive(run, 1, 3)
    arms = run.select(4)
    with pytest.raises(ValueError, match=r"rewards must have shape \(3,\)"):  # (was numba's TypingError)
        run.update(4, arms, np.full((2, 3), 0.5))


# ---------------------------------------------------------------- pickling a deployment
def test_pickling_a_deployment_is_refused_by_name(tmp_path):
    from privbandit.deploy import Deployment

    with Deployment.create(tmp_path / "s.db", "dp_ucb", n_arms=2, budget=5.0, delta=1e-6, seed=1) as dep:
        with pytest.raises(TypeError, match=r"a Deployment cannot be pickled: it is an open store .*Deployment\.open"):
            pickle.dumps(dep)  # (was "cannot pickle 'sqlite3.Connection' object")
        dec = dep.select()
        assert pickle.loads(pickle.dumps(dec)) == dec


# ---------------------------------------------------------------- weak keys for a new store
@pytest.mark.parametrize("key", [b"\x00" * 32, b"k" * 16, b"\x01\x02" * 16, b"0" * 31 + b"1"])
def test_an_obviously_weak_key_is_refused_for_a_new_store(tmp_path, key):
    from privbandit.deploy import Deployment

    with pytest.raises(ValueError, match="key is not a usable key for a new store"):
        Deployment.create(tmp_path / "s.db", "dp_ucb", n_arms=2, budget=5.0, delta=1e-6, key=key)
    assert not (tmp_path / "s.db").exists()


def test_a_key_file_of_zeros_is_refused_by_deploy_init_naming_the_file(tmp_path, capsys):
    from privbandit.cli import main

    key_file = tmp_path / "key"
    key_file.write_bytes(b"\x00" * 32)
    code = main(["deploy", "init", str(tmp_path / "s.db"), "--policy", "dp_ucb", "--n-arms", "2", "--budget", "5",
                 "--delta", "1e-6", "--key-file", str(key_file)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"--key-file {str(key_file)!r} is not a usable key" in err and "repeated 32 times" in err


def test_a_weak_environment_key_is_refused_naming_the_variable(tmp_path, monkeypatch):
    from privbandit.deploy import Deployment
    from privbandit.deploy.store import KEY_ENV, KEY_FILE_ENV

    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    monkeypatch.setenv(KEY_ENV, " " * 32)
    with pytest.raises(ValueError, match=f"the environment variable {KEY_ENV} is not a usable key"):
        Deployment.create(tmp_path / "s.db", "dp_ucb", n_arms=2, budget=5.0, delta=1e-6)


def test_a_weak_key_still_opens_a_store_it_already_authenticates():
    """Refused for new stores only: an existing store's key (its tag was made with it) stays usable."""
    from privbandit.deploy.store import resolve_key

    assert resolve_key(b"\x00" * 32) == b"\x00" * 32
    with pytest.raises(ValueError, match="not a usable key"):
        resolve_key(b"\x00" * 32, new_store=True)


# ---------------------------------------------------------------- staging directories left by a SIGKILL
def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # (reaped: the pid names no process now)
    return pid


def test_a_save_removes_the_staging_directories_of_dead_savers(tmp_path):
    from privbandit.cli_checks import _host_tag, staged_outputs

    dead = tmp_path / f".privbandit-{_host_tag()}-{_dead_pid()}-abc123"
    live = tmp_path / f".privbandit-{_host_tag()}-{os.getpid()}-def456"
    other_host = tmp_path / f".privbandit-0000beef-{_dead_pid()}-ghi789"
    legacy_old, legacy_new = tmp_path / ".privbandit-oldxyz12", tmp_path / ".privbandit-newxyz12"
    for d in (dead, live, other_host, legacy_old, legacy_new):
        d.mkdir()
        (d / "r.csv").write_text("half a save")
    two_hours_ago = time.time() - 7200
    os.utime(legacy_old, (two_hours_ago, two_hours_ago))
    with staged_outputs(tmp_path, "path") as stage:  # (what Result.save, --save, --plot, --out write through)
        with open(stage.path("r.csv"), "w") as fh:
            fh.write("a whole save\n")
    assert (tmp_path / "r.csv").read_text() == "a whole save\n"
    left = sorted(p.name for p in tmp_path.glob(".privbandit-*"))
    assert left == sorted([live.name, other_host.name, legacy_new.name])  # (a live saver's, another machine's, recent)


# ---------------------------------------------------------------- Parquet logs
def test_a_parquet_log_naming_a_column_twice_is_refused_by_name(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from privbandit.contextual import load_log

    cols = [pa.array(np.arange(10) / 10), pa.array(np.full(10, 0.5)), pa.array(np.arange(10) % 2),
            pa.array(np.full(10, 0.5)), pa.array(np.full(10, 0.5))]
    path = tmp_path / "log.parquet"
    pq.write_table(pa.Table.from_arrays(cols, names=["x0", "x0", "action", "reward", "propensity"]), path)
    with pytest.raises(ValueError, match=r"log 'log.parquet' names the column\(s\) 'x0' more than once"):
        load_log(path)  # (was pyarrow's "Multiple matches for FieldRef.Name(x0)")
    path.write_bytes(b"PAR1 not parquet PAR1")
    with pytest.raises(ValueError, match="log 'log.parquet' is not a readable Parquet file"):
        load_log(path)


# ---------------------------------------------------------------- experiment --out, read back and verified
def test_experiment_out_is_read_back_and_verified(tmp_path):
    """``experiment --out`` now writes summary.csv.json (test_store_trust_14 runs the command line); here its
    reader: the pair's digests are checked, and load_saved points to load_summary."""
    pytest.importorskip("pandas")
    from privbandit.saved import load_saved, load_summary, write_summary_metadata

    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.csv").write_text("policy_label,environment_label,regret_mean\nucb1,b,1.5\n")
    (out / "regret.png").write_bytes(b"\x89PNG figure")
    write_summary_metadata(out / "summary.csv.json", out / "summary.csv", out / "regret.png",
                           experiment="tossou2016-2arm", horizon=20, replicates=1, seed=0)
    frame, meta = load_summary(out)
    assert frame["regret_mean"].tolist() == [1.5] and meta["experiment"] == "tossou2016-2arm"
    with pytest.raises(ValueError, match="experiment's summary.*load_summary"):
        load_saved(out / "summary.csv")
    (out / "regret.png").write_bytes(b"\x89PNG another run's figure")
    with pytest.raises(ValueError, match="regret.png in .* does not match its metadata"):
        load_summary(out)
    assert load_summary(out, verify=False)[1] == {}


# ---------------------------------------------------------------- graph models given a whole float
def test_graph_models_take_a_whole_float_as_the_int_they_validated():
    from privbandit.envs import BarabasiAlbert, DisjointCliques, PlantedPartition

    rng = np.random.default_rng(0)
    ba = BarabasiAlbert(4, 2.0)  # (was networkx's TypeError: 'float' object is not iterable, at sample)
    dc = DisjointCliques(4, 2.0)  # (was numpy's "'float' object cannot be interpreted as an integer")
    pp = PlantedPartition(4, 2.0, 0.8, 0.1)
    assert type(ba.m) is int and type(dc.size) is int and type(pp.groups) is int
    for model in (ba, dc, pp):
        assert model.sample(rng).shape == (4, 4)
