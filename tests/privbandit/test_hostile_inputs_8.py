"""Hostile inputs, eighth round (session 11): user code that writes into what the engine hands it or
changes a library environment during a run, user graph models, non-finite rewards, the deployment
store under resource faults and permissions, array-likes at the public numeric parameters, and the
process context (environment variables, closed or full standard output).

Before the fixes of this round:

* **privacy**: a user's :class:`GraphModel` whose ``max_degree_bound`` understated its draws was
  taken at its word (``GraphFeedbackRun.reveals_within_structure`` was True for every model): a bound
  of 1 over complete graphs on 6 arms made DP-UCB-N's and Lazy-DP-TS-N's "round" certificates 2.0
  while the ledger realized 6.0;
* **privacy**: a library environment's [0, 1] promise was judged at the run's start, and the run then
  read the environment's attributes live: code running during the run (a user's policy subclass, a
  thread) that set ``rates[:] = -5`` fed negative rewards to Gaussian-TS unclipped;
* a user policy writing into the arms or rewards its ``update`` was given changed the pulls and
  regret the engine reported (``arms[:] = 0``: UCB1's 20 / 280 pulls read 300 / 0);
* a user environment's +-inf rewards were clipped to 0 / 1 while NaN was refused (and the deployment,
  RewardTable and RewardTape refuse both).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from privbandit import simulate
from privbandit.envs import Bernoulli, TruncatedExponential
from privbandit.envs.adversarial import OneMemoryAdversary
from privbandit.envs.base import Environment, EnvironmentRun
from privbandit.envs.graph import GraphFeedback
from privbandit.envs.graphs import GraphModel
from privbandit.policies import make_policy
from privbandit.policies.ucb import UCB1


# ---------------------------------------------------------------- user code inside a run
def _hooked(policy, select=None, update=None):
    """``policy`` whose runs are a user's subclass of its own run class, calling ``select(s, t)`` before
    each select and ``update(t, arms, rewards)`` after each update (the engine drives it as a user's)."""
    start = policy.start

    def hooked_start(*args, **kwargs):
        run = start(*args, **kwargs)
        base = type(run)

        class Hooked(base):
            def select(s, t, *a):
                if select is not None:
                    select(t)
                return base.select(s, t, *a)

            def update(s, t, arms, rewards):
                base.update(s, t, arms, rewards)
                if update is not None:
                    update(t, arms, rewards)

        run.__class__ = Hooked
        return run

    policy.start = hooked_start
    return policy


def test_a_policy_writing_into_its_arms_or_rewards_does_not_change_the_reported_run():
    def zero_arms(t, arms, rewards):
        arms[:] = 0

    def zero_rewards(t, arms, rewards):
        rewards[:] = 0.0

    for env in (Bernoulli([0.2, 0.8]), OneMemoryAdversary(np.tile([0.2, 0.8], (300, 1)))):
        plain = simulate(UCB1(), env, 300, 3, seed=1, progress=False)
        for hook in (zero_arms, zero_rewards):
            run = simulate(_hooked(UCB1(), update=hook), env, 300, 3, seed=1, progress=False)
            # was pulls 300 / 0 (arms[:] = 0 rewrote the arms the engine then stored) and a OneMemoryAdversary
            # regret of 240 (formed from the rewards array the update had zeroed) instead of 16.4
            np.testing.assert_array_equal(run.pulls, plain.pulls)
            np.testing.assert_array_equal(run.final_regret, plain.final_regret)


def test_a_library_environment_changed_during_a_run_is_not_fed_unclipped():
    env = TruncatedExponential([0.5, 1.0, 2.0])
    seen = []

    def break_promise(t):
        if t == 5:
            env.rates[:] = -5.0  # draws below 0 from now on, were the run to read the rates live

    policy = _hooked(make_policy("gaussian_ts"), select=break_promise,
                     update=lambda t, arms, rewards: seen.append(float(np.min(rewards))))
    result = simulate(policy, env, 40, 2, seed=0, progress=False)
    assert len(seen) == 40 and min(seen) >= 0.0  # was -1.8e+01 from round 5 on, unclipped
    assert np.all(env.rates == -5.0)  # the caller's object is changed; the run drew from it as it was at its start
    assert result.environment["rates"] == [0.5, 1.0, 2.0]


@dataclasses.dataclass(frozen=True)
class _UnderstatedModel(GraphModel):
    n: int = 6

    @property
    def max_degree_bound(self) -> int:
        return 1  # but every draw is the complete graph (degree 5)

    def sample(self, rng):
        return np.ones((self.n, self.n), dtype=bool)


@pytest.mark.parametrize("name", ["dp_ucb_n", "lazy_dp_ts_n"])
def test_a_user_graph_model_is_not_taken_at_its_word(name):
    env = GraphFeedback(Bernoulli([0.2, 0.3, 0.4, 0.5, 0.6, 0.7]), _UnderstatedModel(), redraw=True)
    # was a certificate of 2.0 with 6.0 realized under the "round" relation
    with pytest.raises(ValueError, match=r"revealed 6 entries in round 1, more than the max_degree \+ 1 = 2"):
        simulate(make_policy(name), env, 50, 2, seed=0, progress=False, relation="round")
    assert not env.rewards_in_unit_interval  # its sample() runs every round: rewards are clipped too
    honest = GraphFeedback(Bernoulli([0.2, 0.3, 0.4, 0.5, 0.6, 0.7]), _HonestModel(), redraw=True)
    result = simulate(make_policy(name), honest, 50, 2, seed=0, progress=False, relation="round")
    assert result.realized_within_certificate()  # a model within its bound runs, its reveals counted


@dataclasses.dataclass(frozen=True)
class _HonestModel(_UnderstatedModel):
    @property
    def max_degree_bound(self) -> int:
        return 5


class _Rewards(Environment):
    """A user's environment returning ``values`` (cycled) every round."""

    n_arms = 2

    def __init__(self, *values):
        self.values = values

    def start(self, replicates, rng):
        values = self.values

        class Run(EnvironmentRun):
            def rewards(self, t, arms):
                return np.full(replicates, values[(t - 1) % len(values)])
        return Run()

    def expected(self, t, arms):
        return np.zeros(np.shape(arms))

    def best(self, t):
        return np.zeros(np.shape(t))


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_user_rewards_are_refused_like_nan(bad):
    with pytest.raises(ValueError, match=rf"returned reward {bad!r} in round 2; rewards must be finite"):
        simulate(make_policy("dp_ucb"), _Rewards(0.5, bad), 10, 2, seed=0, progress=False)  # inf was clipped to 1
    result = simulate(make_policy("dp_ucb"), _Rewards(0.5, 7.0, -3.0, 1e308), 10, 2, seed=0, progress=False)
    assert result.horizon == 10  # finite values outside [0, 1] are still clipped (documented)


# ---------------------------------------------------------------- deployment store: files and permissions
def _deployment(path, rounds=0):
    from privbandit.deploy import Deployment

    dep = Deployment.create(str(path), "dp_ucb_bound", n_arms=3, budget=50.0, delta=1e-6, horizon=1000, seed=1)
    for _ in range(rounds):
        d = dep.select()
        dep.update(d.decision, 0.5)
    return dep


def test_a_store_replaced_while_open_releases_nothing_more(tmp_path):
    # A restore from backup (or a directory swapped) while a service holds the store open: the connection
    # kept writing to the old file, so the decisions it released were counted only there, and the store
    # found at the path (the backup) under-counted them: 3 policy rounds on record after 9 released.
    import os
    import shutil

    from privbandit.deploy import Deployment, StoreError

    path = tmp_path / "d.db"
    _deployment(path, 3).close()
    shutil.copy(path, tmp_path / "backup.db")
    dep = Deployment.open(str(path))
    for _ in range(5):
        d = dep.select()
        dep.update(d.decision, 0.5)
    os.replace(tmp_path / "backup.db", path)
    with pytest.raises(StoreError, match="deleted, moved or replaced while open; this call's result was not released"):
        dep.select()  # was Decision(round=9): released, recorded in the replaced file only
    with pytest.raises(StoreError, match="replaced while open"):
        dep.select()
    dep.close()
    os.remove(path)
    with pytest.raises(StoreError, match="no such deployment store"):
        Deployment.open(str(path))
    other = tmp_path / "e.db"
    dep = _deployment(other, 1)
    os.remove(other)
    with pytest.raises(StoreError, match="deleted, moved or replaced"):
        dep.select()
    dep.close()
    cwd = os.getcwd()
    try:  # a relative path stays the same file after a chdir
        os.chdir(tmp_path)
        dep = _deployment("f.db", 1)
        os.chdir("/")
        assert dep.select().kind == "policy"
        dep.close()
    finally:
        os.chdir(cwd)
    with pytest.raises(StoreError, match="a directory, not a deployment store"):
        Deployment.open(str(tmp_path))  # was "cannot open (unable to open database file)"


_PERMISSIONS = r'''
import os, shutil, sys
from privbandit.deploy import Deployment, StoreError
src, root = sys.argv[1], sys.argv[2]
d = Deployment.open(src); d.status(); d.close()  # every module a call needs, imported while we may read them
cases = {"dir_0555": (0o644, 0o555), "file_not_ours": (0o644, 0o755), "file_0000": (0o000, 0o777), "dir_0000": (0o666, 0o000)}
for name, (fmode, dmode) in cases.items():
    os.mkdir(os.path.join(root, name)); path = os.path.join(root, name, "s.db"); shutil.copy(src, path)
    os.chmod(path, fmode); os.chmod(os.path.join(root, name), dmode)
os.setgid(65534); os.setuid(65534)
for name in cases:
    try:
        Deployment.open(os.path.join(root, name, "s.db")); print(name, "opened")
    except StoreError as exc:
        print(name, str(exc).split(": ", 1)[1])
'''


@pytest.mark.skipif(not hasattr(os, "setuid") or os.geteuid() != 0, reason="needs root, to drop to uid 65534")
def test_store_permissions_are_named_not_reported_as_damage(tmp_path):
    # (the helpers and CI run as root, where every file is writable: a child drops to uid 65534)
    import subprocess
    import sys

    src = tmp_path / "src.db"
    _deployment(src, 1).close()
    import shutil
    import tempfile

    root = tempfile.mkdtemp(prefix="privbandit-permissions-")  # (pytest's tmp_path is 0700: not searchable)
    try:
        os.chmod(root, 0o777)
        proc = subprocess.run([sys.executable, "-c", _PERMISSIONS, str(src), root], capture_output=True, text=True,
                              timeout=120)
    finally:
        for name in os.listdir(root):
            os.chmod(os.path.join(root, name), 0o755)
        shutil.rmtree(root)
    if proc.returncode != 0 and "Operation not permitted" in proc.stderr:
        pytest.skip("cannot change uid here")
    assert proc.returncode == 0, proc.stderr
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    for name in ("dir_0555", "file_not_ours"):  # were "not a privbandit deployment store (attempt to write ...)"
        assert out[name].startswith("the deployment store cannot be written (attempt to write a readonly database): "
                                    "a deployment needs write access to the file and to its directory"), out[name]
    assert out["file_0000"].startswith("cannot open the deployment store (permission denied")  # "unable to open database file"
    assert out["dir_0000"] == "cannot open the deployment store (Permission denied)"  # was "no such deployment store"


# ---------------------------------------------------------------- process context
class _FullDevice:
    """A standard output on a full disk (/dev/full): every write fails with ENOSPC."""

    def write(self, text):
        raise OSError(28, "No space left on device")

    def flush(self):
        pass


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["deploy", "--help"], ["deploy", "status", "--help"],
                                  ["budget", "dp_ucb", "--horizon", "100"]])
@pytest.mark.parametrize("stdout", [_FullDevice, None], ids=["full", "closed"])
def test_output_that_cannot_be_written_is_an_error_not_status_0(argv, stdout, monkeypatch, capsys):
    from privbandit.cli import main

    monkeypatch.setattr("sys.stdout", stdout() if stdout else None)
    # --help / --version into /dev/full: argparse swallowed the OSError (status 0, nothing written); a closed
    # stdout (`>&-`: sys.stdout is None) made every print a no-op and every command "succeed"
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] in ("privbandit: error: the result could not be written to standard output (No space left on device)",
                       "privbandit: error: [Errno 28] No space left on device",  # a command's own print (as before)
                       "privbandit: error: standard output is closed: the result could not be written")


def test_a_garbled_no_jit_switch_is_named():
    import subprocess
    import sys

    env = dict(os.environ, PRIVBANDIT_NO_JIT="false")  # read as "set": the kernels ran interpreted, silently
    out = subprocess.run([sys.executable, "-W", "always", "-c",
                          "from privbandit.mechanisms import _kernels; print(_kernels.COMPILED)"],
                         capture_output=True, text=True, check=True, env=env)
    assert "PRIVBANDIT_NO_JIT must be '1' (interpreted kernels) or '0' / unset (compiled), got 'false'" in out.stderr
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- array-likes
def test_masked_entries_are_refused_not_read_as_data():
    from privbandit.audit.neighbours import Neighbours

    masked = np.ma.masked_array([0.2, 0.5, 0.8], mask=[True, False, False])
    with pytest.raises(ValueError, match="means must not hold masked entries .* got 1 masked of 3"):
        Bernoulli(masked)  # was an arm of mean 0.2, the value under the mask
    with pytest.raises(ValueError, match="checkpoints must not hold masked entries"):
        simulate(make_policy("dp_ucb"), Bernoulli([0.2, 0.8]), 50, 2, seed=0, progress=False,
                 checkpoints=np.ma.masked_array([5, 10], mask=[True, False]))  # was a checkpoint at round 5
    with pytest.raises(ValueError, match="tape must not hold masked entries"):
        Neighbours.pair(np.ma.masked_array([[0.5, 1.0], [0.0, 1.0]], mask=[[1, 0], [0, 0]]), [[0.5, 0.0], [0.0, 1.0]])
    assert np.array_equal(Bernoulli(np.ma.masked_array([0.2, 0.8])).means, [0.2, 0.8])  # nothing masked: its data


def test_audit_tapes_are_read_as_numbers_only():
    from privbandit.audit.neighbours import Neighbours
    from privbandit.audit.runner import run_policy

    for tape in ([["0.5", "1"], ["0", "1"]], [["abc", 1.0], [0.0, 1.0]], [[0.5, 1 + 1j], [0.0, 1.0]]):
        # were read as numbers ("0.5"), numpy's "could not convert string to float: 'abc'", and a ComplexWarning
        with pytest.raises(ValueError, match="tape must be an array of real numbers"):
            Neighbours.pair(tape, [[0.5, 0.0], [0.0, 1.0]])
        with pytest.raises(ValueError, match="tape must be an array of real numbers"):
            run_policy(make_policy("dp_ucb"), tape, 2, 2, np.random.default_rng(0))
    bools = np.random.default_rng(3).random((2, 40)) < 0.5  # a boolean tape is 0 / 1 rewards, as it always was
    assert run_policy(make_policy("dp_ucb"), bools, 40, 2, np.random.default_rng(0))["actions"].shape == (2, 40)


def test_a_float16_budget_warns_nothing(tmp_path):
    import warnings

    from privbandit.deploy import Deployment

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # was "RuntimeWarning: overflow encountered in cast" (1.8e308 cast to float16)
        dep = Deployment.create(str(tmp_path / "h.db"), "dp_ucb", n_arms=3, budget=np.float16(5.0), delta=1e-6,
                                horizon=1000)
    assert dep.budget == 5.0
    dep.close()


def test_a_busy_store_names_itself_and_stays_an_operational_error(tmp_path):
    # A store locked by another writer past the busy timeout (likewise disk full, a read-only file)
    # raised sqlite3's bare "database is locked", naming no store; it is now a StoreUnavailable (a
    # StoreError that is still an OperationalError carrying SQLite's error name, so retry loops keep
    # working), and the failed call released nothing: the retry is decision 2, not 3.
    import sqlite3

    from privbandit.deploy import StoreError, StoreUnavailable

    path = tmp_path / "busy.db"
    dep = _deployment(path, 1)
    dep._conn.execute("PRAGMA busy_timeout = 20")  # (the store waits 60 s by default)
    other = sqlite3.connect(str(path))
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreUnavailable, match=r"busy\.db: the deployment store cannot be used now .*SQLITE_BUSY"
                                                   r".*released and recorded nothing") as info:
            dep.select()
    finally:
        other.rollback()
        other.close()
    assert isinstance(info.value, sqlite3.OperationalError) and isinstance(info.value, StoreError)
    assert info.value.sqlite_errorname == "SQLITE_BUSY"
    decision = dep.select()
    assert decision.decision == 2
    dep.update(decision.decision, 0.5)
    assert dep.status()["policy_rounds"] == 2
    dep.close()


def test_a_library_environment_that_cannot_be_copied_runs_live_and_trusts_nothing():
    # Session 11's first version copied every library environment with copy.deepcopy at the run's start: one
    # holding an attribute a user attached that cannot be copied (a lock, a connection) made simulate raise
    # "TypeError: cannot pickle '_thread.lock' object". It now runs from the environment itself and, as for a
    # user's environment, takes nothing on trust: rewards clipped, reveals counted every round.
    import threading

    plain = simulate(UCB1(), Bernoulli([0.2, 0.8]), 300, 3, seed=1, progress=False)
    locked = Bernoulli([0.2, 0.8])
    locked.lock = threading.Lock()
    run = simulate(UCB1(), locked, 300, 3, seed=1, progress=False)
    np.testing.assert_array_equal(run.pulls, plain.pulls)  # clipping [0, 1] rewards changes nothing
    np.testing.assert_array_equal(run.final_regret, plain.final_regret)

    env = TruncatedExponential([0.5, 1.0, 2.0])
    env.lock = threading.Lock()
    seen = []

    def break_promise(t):
        if t == 5:
            env.rates[:] = -5.0  # the run draws from env itself now: negative draws, which must be clipped

    policy = _hooked(make_policy("gaussian_ts"), select=break_promise,
                     update=lambda t, arms, rewards: seen.append(float(np.min(rewards))))
    simulate(policy, env, 40, 2, seed=0, progress=False)
    assert len(seen) == 40 and min(seen) >= 0.0

    path = np.zeros((6, 6), dtype=bool)
    path[np.arange(5), np.arange(1, 6)] = path[np.arange(1, 6), np.arange(5)] = True  # max degree 2
    graph_env = GraphFeedback(Bernoulli([0.2, 0.3, 0.4, 0.5, 0.6, 0.7]), path)
    graph_env.lock = threading.Lock()

    def complete_graph(t):
        if t == 5:
            graph_env.graph.setflags(write=True)
            graph_env.graph[:] = True  # every arm revealed from now on: 6 entries against a declared 3

    with pytest.raises(ValueError, match=r"revealed 6 entries in round 5, more than the max_degree \+ 1 = 3"):
        simulate(_hooked(make_policy("dp_ucb_n"), select=complete_graph), graph_env, 50, 2, seed=0,
                 progress=False, relation="round")
