"""Session 17 (s17/fuzz): round 3 of the input fuzzer (bench/fuzz_inputs.py --only sets,reads,huge,env,store,
edges,concurrency).

A saved result's two files as one set (a kill between their moves, concurrent savers), files the toolkit reads
(a saved result's metadata, a logged data set's header, key files that are FIFOs or too long), environment
values that are not UTF-8, huge-but-finite parameters that overflowed mid-run, and deployment stores edited by
hand (a planted trigger, an applied flag of 7). Each test fails on 57774e4.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from privbandit import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import make_policy

ROOT = Path(__file__).resolve().parents[2]
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX: SIGKILL, FIFOs, flock")


def _run(horizon=20):
    return simulate(make_policy("dp_ucb"), Bernoulli([0.3, 0.6]), horizon, 2, seed=horizon, progress=False)


# --- a save's two files as one set ------------------------------------------------------------------------
def test_the_metadata_records_its_data_files_digest(tmp_path):
    path = _run().save(tmp_path / "r.csv")
    meta = json.loads(Path(str(path) + ".json").read_text())
    assert meta["data_file"] == "r.csv"
    assert meta["data_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


#: saves a run of horizon 40 over a save of horizon 20, SIGKILLing itself right after its first os.replace:
#: the data file moved, its metadata not yet -- a real kill at the one point that splits the set
_KILLED_BETWEEN = """
import os, signal, sys
from privbandit import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import make_policy
run = simulate(make_policy("dp_ucb"), Bernoulli([0.3, 0.6]), 40, 2, seed=40, progress=False)
real = os.replace
def replace(a, b):
    real(a, b)
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
run.save(sys.argv[1])
"""


@POSIX
def test_a_kill_between_the_two_moves_is_refused_by_the_reader(tmp_path):
    """On 57774e4 the pair left (40 rows beside metadata saying horizon 20) was two halves of two saves that
    nothing flagged; now load_saved refuses it, and reads a whole save."""
    from privbandit.saved import load_saved

    path = tmp_path / "r.csv"
    _run(20).save(path)
    assert len(load_saved(path)[0]) == 20
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _KILLED_BETWEEN, str(path)], env=env, capture_output=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-500:]
    assert json.loads(Path(str(path) + ".json").read_text())["horizon"] == 20  # (the old metadata)
    with pytest.raises(ValueError, match="does not match its metadata"):
        load_saved(path)


@POSIX
def test_a_save_waits_for_a_set_being_moved_into_its_directory(tmp_path):
    """Concurrent savers to one path interleaved their moves (one's r.csv beside another's r.csv.json: 6 of
    ~1,100 sampled pairs with three savers on 57774e4); the moves now hold an exclusive flock on the directory."""
    import fcntl

    path = tmp_path / "r.csv"
    res = _run()
    fd = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # (another writer moving its set in)
    saver = threading.Thread(target=res.save, args=(path,))
    try:
        saver.start()
        time.sleep(1.0)
        assert not path.exists()  # written into its stage, waiting to move
    finally:
        os.close(fd)
    saver.join(60)
    assert path.exists() and Path(str(path) + ".json").exists()


# --- reading a save back --------------------------------------------------------------------------------
def test_load_saved_reads_both_formats_and_a_bom(tmp_path):
    from privbandit.saved import load_saved

    res = _run(25)
    for name in ("r.csv", "r.parquet"):
        path = res.save(tmp_path / name)
        frame, meta = load_saved(path)
        assert len(frame) == 25 and meta["horizon"] == 25 and frame.attrs["metadata"] == meta
    meta_path = tmp_path / "r.csv.json"
    meta_path.write_bytes(b"\xef\xbb\xbf" + meta_path.read_bytes())  # (an editor's BOM: harmless)
    assert load_saved(tmp_path / "r.csv")[1]["horizon"] == 25


@pytest.mark.parametrize("edit, message", [
    (lambda m: "{", "not valid JSON"),
    (lambda m: "[" * 100_000 + "]" * 100_000, "not valid JSON"),
    (lambda m: "[1, 2]", "JSON object"),
    (lambda m: json.dumps(m | {"horizon": "25"}), "horizon must be a whole number"),
    (lambda m: json.dumps(m | {"horizon": 26}), "rounds must be 1..26"),
    (lambda m: json.dumps(m | {"delta": "1e-6"}), "delta must be a number"),
    (lambda m: json.dumps(m | {"policy": [1]}), "policy must be a JSON object"),
    (lambda m: json.dumps({k: v for k, v in m.items() if k != "data_sha256"}), "records no data_sha256"),
    (lambda m: json.dumps(m | {"data_sha256": 1}), "does not match"),
], ids=["truncated", "deep", "list", "horizon-text", "horizon-other", "delta-text", "policy-list", "no-digest",
        "digest-number"])
def test_an_edited_metadata_file_is_refused_by_name(tmp_path, edit, message):
    from privbandit.saved import load_saved

    path = _run(25).save(tmp_path / "r.csv")
    meta_path = Path(str(path) + ".json")
    meta_path.write_text(edit(json.loads(meta_path.read_text())))
    with pytest.raises(ValueError, match=message):
        load_saved(path)


def test_an_edited_data_file_is_refused_and_verify_false_reads_it(tmp_path):
    from privbandit.saved import load_saved

    path = _run(25).save(tmp_path / "r.csv")
    path.write_bytes(path.read_bytes() + b"\n")  # (the same rows to pandas, other bytes)
    with pytest.raises(ValueError, match="does not match"):
        load_saved(path)
    assert len(load_saved(path, verify=False)[0]) == 25


@POSIX
@pytest.mark.parametrize("which", ["data", "metadata"])
def test_a_fifo_or_directory_in_place_of_a_file_is_refused_not_waited_on(tmp_path, which):
    from privbandit.saved import load_saved

    path = _run().save(tmp_path / "r.csv")
    target = path if which == "data" else Path(str(path) + ".json")
    target.unlink()
    os.mkfifo(target)
    with pytest.raises(ValueError, match="not a regular file"):
        load_saved(path)
    target.unlink()
    target.mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        load_saved(path)


# --- other files the toolkit reads --------------------------------------------------------------------
def test_a_log_header_naming_a_column_twice_is_refused(tmp_path):
    # pandas renamed the second x0 to "x0.1" and the log was read as two context columns
    from privbandit.contextual import load_log

    path = tmp_path / "log.csv"
    path.write_text("x0,x0,action,reward,propensity\n0.1,0.2,0,0.5,0.5\n0.3,0.4,1,0.5,0.5\n")
    with pytest.raises(ValueError, match="'x0' more than once"):
        load_log(path)
    path.write_text("\ufeffx0,x1,action,reward,propensity\n0.1,0.2,0,0.5,0.5\n0.3,0.4,1,0.5,0.5\n")
    assert load_log(path).contexts.shape == (2, 2)


@POSIX
def test_a_key_file_that_is_a_fifo_is_refused_at_once(tmp_path):
    """open() of a FIFO blocked until a writer came (``deploy init --key-file FIFO`` hung forever)."""
    from privbandit.deploy.store import read_key_file

    fifo = tmp_path / "key"
    os.mkfifo(fifo)
    outcome = []

    def read():
        try:
            read_key_file(fifo)
        except ValueError as exc:
            outcome.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # (unblock the reader before failing)
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
        pytest.fail("read_key_file blocked on a FIFO")
    assert outcome and "not a regular file" in outcome[0]
    (tmp_path / "dir").mkdir()  # (os.fdopen's "[Errno 21] Is a directory: 4" named neither file nor key)
    with pytest.raises(ValueError, match="not a regular file"):
        read_key_file(tmp_path / "dir")


def test_a_key_file_beyond_its_limit_is_refused_not_cut(tmp_path):
    # 128 KiB was read as its first 64 KiB: two key files differing past that authenticated each other's stores
    from privbandit.deploy.store import KEY_FILE_MAX, read_key_file

    path = tmp_path / "key"
    path.write_bytes(b"k" * (KEY_FILE_MAX + 1))
    with pytest.raises(ValueError, match="more than 65536 bytes"):
        read_key_file(path)
    path.write_bytes(b"k" * (KEY_FILE_MAX - 1) + b"\n")
    assert read_key_file(path) == b"k" * (KEY_FILE_MAX - 1)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX environment bytes")
def test_a_key_in_the_environment_is_its_bytes_even_when_not_utf8(monkeypatch):
    from privbandit.deploy.store import KEY_ENV, key_bytes, resolve_key

    raw = b"\xff\xfe" * 16
    monkeypatch.setenv(KEY_ENV, os.fsdecode(raw))  # (how Python holds such a value: surrogate escapes)
    assert resolve_key(None) == raw  # was codec's "surrogates not allowed", naming nothing
    with pytest.raises(ValueError, match="key must be bytes or text that encodes to UTF-8"):
        key_bytes("\udc80" * 20)


# --- huge but finite parameters -------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["lin_ts", "private_lin_ts"])
def test_a_huge_ts_scale_runs_without_overflow(policy):
    from privbandit.contextual import LinearContextual
    from privbandit.contextual.linalg import ts_index

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (was "overflow encountered in multiply")
        res = simulate(make_policy(policy, v=1.7976931348623157e308), LinearContextual(dim=5, n_arms=2), 200, 2,
                       seed=0, progress=False)
    assert np.all(np.isfinite(res.regret_mean))
    # the divided index picks the arm the exact index picks
    rng = np.random.default_rng(1)
    z, theta = rng.normal(size=(50, 4, 3)), rng.normal(size=3)
    a_inv, normal = np.broadcast_to(np.eye(3) / 3, (50, 4, 3, 3)), rng.normal(size=(50, 4))
    exact = np.einsum("rkd,d->rk", z, theta) / 1e150 + np.sqrt(np.einsum("rkd,rkd->rk", z, z) / 3) * normal
    assert np.array_equal(np.argmax(ts_index(z, theta, a_inv, 1e150, normal), axis=1), np.argmax(exact, axis=1))


def test_huge_reward_noise_clips_without_overflow():
    from privbandit.contextual import LinearContextual

    env = LinearContextual(dim=3, n_arms=2, noise=1e308)
    run = env.start(64, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (was "overflow encountered in multiply")
        rewards = np.concatenate([(run.offer(t), run.rewards(t, np.zeros(64, dtype=int)))[1] for t in range(1, 51)])
    assert set(np.unique(rewards)) == {0.0, 1.0}  # (noise 1e308: every reward is clipped to an end)


# --- deployment stores edited by hand --------------------------------------------------------------------
def _store(path):
    from privbandit.deploy import Deployment

    with Deployment.create(path, "dp_ucb", n_arms=2, budget=50.0, delta=1e-6, seed=1) as dep:
        for _ in range(3):
            dep.update(dep.select().decision, 0.5)
    return path


def _edit(path, sql):
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.commit()
    con.close()


def test_a_store_with_a_planted_trigger_is_refused(tmp_path):
    """A trigger rewriting every logged reward to 1 after privbandit's insert: the policy learnt 0.25, the log
    said 1, and open, status and the deployment audit all passed the store on 57774e4."""
    from privbandit.deploy import Deployment, StoreError

    path = _store(tmp_path / "s.db")
    _edit(path, "CREATE TRIGGER t AFTER INSERT ON updates BEGIN "
                "UPDATE updates SET reward = 1 WHERE decision_id = NEW.decision_id; END")
    with pytest.raises(StoreError, match="trigger"):
        Deployment.open(path)


def test_an_applied_flag_other_than_0_or_1_is_refused(tmp_path):
    # status summed the flags: applied = 7 reported seven rewards fed to the policy
    from privbandit.deploy import Deployment, StoreError

    path = _store(tmp_path / "s.db")
    _edit(path, "UPDATE updates SET applied = 7 WHERE decision_id = 2")
    with pytest.raises(StoreError, match="applied flag other than 0 or 1"), Deployment.open(path) as dep:
        dep.select()  # (the log is checked against the counters before the first call)


@pytest.mark.parametrize("policy", ["private_lin_ucb", "private_lin_ts", "joint_dp_lin_ucb", "lin_ucb"])
def test_a_ridge_beyond_1e300_is_refused_by_name(policy):
    # 1.8e308 overflowed in the private policies' noisy Gram matrix + shift mid-run (a RuntimeWarning)
    with pytest.raises(ValueError, match=r"regularization must lie in \(0, 1e\+300\]"):
        make_policy(policy, regularization=1.7976931348623157e308)
    make_policy(policy, regularization=1e300)
