"""A forged or corrupted snapshot's CONTENTS (session 13, s13/deploy; docs/deploy.md "Session 13").

Session 12 closed code execution from a crafted store, but a forger who rewrites the snapshot and its
digest could still (a) hand the compiled kernels, which do not bounds-check, arrays of the wrong
shape -- shortened arrays ran DP-SE and DP-EXP3-Lap 20 more rounds silently, Gaussian-TS raised an
IndexError -- and (b) call bound methods of the state objects with crafted arguments while the
snapshot was read. Snapshots are now plain data restored into a fresh run after a field-by-field
comparison; these stores are forged in the test (the legacy object format, which the previous
code read -- opened with allow_legacy=True since session 14 -- and the data format)."""

from __future__ import annotations

import hashlib
import io
import pickle
import re
import sqlite3
import zlib
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from privbandit.deploy import Deployment, StoreError


def _store(tmp_path, policy: str, rounds: int = 6, **params) -> Deployment:
    dep = Deployment.create(tmp_path / f"{policy}.db", policy, params=params, n_arms=3, budget=1e6, delta=1e-6,
                            horizon=1000, seed=3, synchronous="normal")
    for _ in range(rounds):
        d = dep.select()
        dep.update(d.decision, 1.0 if d.arm == 2 else 0.0)
    return dep


def _write(path, raw: bytes) -> None:
    blob = zlib.compress(raw, 1)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE state SET blob = ?, digest = ?", (blob, hashlib.sha256(blob).hexdigest()))
    conn.commit()
    conn.close()


def _forge_objects(dep: Deployment, edit) -> None:
    """Rewrite dep's snapshot in the object-pickle format of sessions 1-12 after ``edit(state)`` (the
    live objects), digest recomputed: what a forger without a key can do."""
    state = dep._load(dep._info())
    edit(state)
    raw = pickle.dumps(state, protocol=5)
    dep.close()
    _write(dep.path, raw)


def _forge_data(dep: Deployment, edit) -> None:
    """Rewrite dep's data-only snapshot after ``edit(tree)`` (the stored plain data)."""
    from privbandit.deploy import snapshot

    (blob,) = dep._conn.execute("SELECT blob FROM state").fetchone()
    data = snapshot.loads(zlib.decompress(blob))
    edit(data["state"])
    dep.close()
    _write(dep.path, pickle.dumps({"format": data["format"], "state": snapshot.encode(data["state"], data=True)}))


def _shorten(obj, field):
    def edit(state):
        target = state["run"] if obj is None else obj(state)
        setattr(target, field, getattr(target, field)[..., :-1].copy())
    return edit


@pytest.mark.parametrize("policy, obj, field", [
    ("dp_se", None, "pulls"),                                   # ran 20 more rounds on a0ec840
    ("dp_exp3_lap", lambda s: s["run"].core, "log_w"),          # ran 20 more rounds on a0ec840
    ("dp_exp3_lap", None, "pulls"),
    ("gaussian_ts", None, "sums"),                              # IndexError on a0ec840
    ("gaussian_ts", lambda s: s["run"].posterior, "_z"),
])
def test_a_shortened_array_is_refused_before_any_round(tmp_path, policy, obj, field):
    dep = _store(tmp_path, policy)
    _forge_objects(dep, _shorten(obj, field))
    with pytest.raises(StoreError, match=rf"{field}.* has shape \((256, )?1, 2\), a run of this configuration \((256, )?1, 3\)"):
        Deployment.open(dep.path, allow_legacy=True)


def _data_field(*path):
    """An edit of the stored data tree: the array at the object fields ``path``, shortened."""
    def edit(tree):
        node = tree
        for name in path[:-1]:
            node = node[name][3] if type(node[name]) is tuple else node[name]
        node[path[-1]] = node[path[-1]][:, :-1].copy()
    return edit


@pytest.mark.parametrize("policy, path", [
    ("dp_ucb_bound", ("run", "hybrid", "_core", "tau")),
    ("private_ucb", ("run", "tree", "count")),
    ("dp_se", ("run", "batches", "noisy_sum")),
])
def test_a_shortened_array_in_a_data_snapshot_is_refused(tmp_path, policy, path):
    dep = _store(tmp_path, policy)
    _forge_data(dep, _data_field(*path))
    dotted = re.escape(".".join(path))
    with pytest.raises(StoreError, match=rf"snapshot\.{dotted} has shape \(1, 2\), a run of this configuration \(1, 3\)"):
        Deployment.open(dep.path)


def test_a_shortened_array_is_refused_by_status_and_audit_without_a_traceback(tmp_path):
    from privbandit.cli import main

    dep = _store(tmp_path, "dp_se")
    # (a data-format snapshot since session 14: a legacy one is refused before it is read, see
    # test_store_trust_14.py; `deploy audit` offers no --allow-legacy, it only reads)
    _forge_data(dep, lambda tree: tree["run"][3].__setitem__("pulls", tree["run"][3]["pulls"][:, :-1].copy()))
    for command in ("status", "select", "audit"):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["deploy", command, str(dep.path)])
        assert code == 2 and "pulls" in err.getvalue() and "Traceback" not in err.getvalue(), (command, err.getvalue())


@pytest.mark.parametrize("edit, message", [
    (lambda s: setattr(s["run"], "pulls", np.full((1, 3), -4, dtype=np.int64)), r"run\.pulls holds a negative count"),
    (lambda s: setattr(s["run"], "pulls", s["run"].pulls.astype(np.int32)), r"run\.pulls has dtype int32"),
    (lambda s: setattr(s["run"], "pulls", s["run"].pulls[None]), r"run\.pulls has 3 dimensions"),
    (lambda s: s["run"].batches.noisy_sum.__setitem__((0, 1), np.nan), r"noisy_sum holds a value that is not a finite"),
    (lambda s: setattr(s["run"], "extra", 1), r"run has fields unlike a fresh run's \(extra: 'extra'"),
    (lambda s: s["run"].__dict__.pop("beta"), r"run has fields unlike a fresh run's \(extra: none; missing: 'beta'"),
    (lambda s: setattr(s["run"], "epsilon", "1"), r"run\.epsilon is a str"),
    (lambda s: setattr(s["run"].batches, "name", "other"), r"batches\.name is 'other'"),
    # two fields one array: writes through one would change the other
    (lambda s: setattr(s["run"], "pulls", s["ledger"]._draws), r"_draws shares its array"),
    (lambda s: setattr(s["ledger"], "_draws", np.zeros((1, 4), dtype=np.int64)), r"ledger\._draws has shape \(1, 4\)"),
    (lambda s: setattr(s["ledger"], "_top", 10**6), r"ledger\._top is 1000000, outside \[0, capacity"),
    (lambda s: setattr(s["run"], "n_arms", 2), r"run\.n_arms is 2, a run of this configuration has 3"),
])
def test_a_forged_field_is_refused_naming_it(tmp_path, edit, message):
    dep = _store(tmp_path, "dp_se", rounds=40)
    _forge_objects(dep, edit)
    with pytest.raises(StoreError, match=message):
        Deployment.open(dep.path, allow_legacy=True)


def test_tree_levels_and_ledger_capacity_must_match_their_counters(tmp_path):
    """Arrays that grow (a binary tree's levels, the ledger's record positions) must have the size
    their own object's counter says: the kernels index up to that counter without bounds checks."""
    dep = _store(tmp_path, "dp_ucb", rounds=40)

    def fewer_levels(tree):
        core = tree["run"][3]["hybrid"][3]["_core"][3]
        core["nodes"] = np.ascontiguousarray(core["nodes"][:, :, :-1])
    _forge_data(dep, fewer_levels)
    with pytest.raises(StoreError, match=r"_core\.nodes has 7 levels, its tree says 8"):
        Deployment.open(dep.path)

    dep = _store(tmp_path / "..", "dp_ucb_bound", rounds=40)
    _forge_objects(dep, lambda s: setattr(s["ledger"], "_marked", s["ledger"]._marked[:-3].copy()))
    with pytest.raises(StoreError, match=r"ledger\._marked has shape \(\d+,\), a run of this configuration"):
        Deployment.open(dep.path, allow_legacy=True)


def test_items_beyond_a_trees_levels_are_refused(tmp_path):
    dep = _store(tmp_path, "dp_ucb_bound", rounds=40)

    def overfull(state):
        state["run"].hybrid._core.tau[0, 0] = 2 ** 20
    _forge_objects(dep, overfull)
    with pytest.raises(StoreError, match=r"_core\.tau holds 1048576 items, more than 8 levels"):
        Deployment.open(dep.path, allow_legacy=True)


def test_a_block_index_past_its_block_is_refused(tmp_path):
    dep = _store(tmp_path, "gaussian_ts", rounds=10)
    _forge_objects(dep, lambda s: setattr(s["run"].posterior, "_pos", 10**4))
    with pytest.raises(StoreError, match=r"posterior\._pos is 10000, outside \[0, \d+\]"):
        Deployment.open(dep.path, allow_legacy=True)


def test_a_legacy_snapshot_cannot_call_a_method_while_it_is_read(tmp_path, monkeypatch):
    """Session 12's unpickler handed out bound methods of state objects by name: a crafted snapshot
    called one with crafted arguments during the load. The method references are inert now."""
    from privbandit.ledger import Ledger

    calls = []

    def spy(self, *args):
        calls.append(args)
    spy.__module__ = "privbandit.ledger"  # (a method of the state modules, as the unpickler requires)
    monkeypatch.setattr(Ledger, "note_rounds", spy, raising=True)

    class _Method:
        def __init__(self, obj, name):
            self.obj, self.name = obj, name

        def __call__(self, *args):  # (pickle asks the callable of a reduce to be callable)
            raise AssertionError

        def __reduce__(self):
            return getattr, (self.obj, self.name)

    class _Call:
        def __init__(self, method, args):
            self.method, self.args = method, args

        def __reduce__(self):
            return self.method, self.args

    dep = _store(tmp_path, "dp_ucb_bound")

    def edit(state):
        state["run"].hybrid.name = _Call(_Method(state["ledger"], "note_rounds"), (0, 0, 0, 99))
    _forge_objects(dep, edit)
    with pytest.raises(StoreError):
        Deployment.open(dep.path, allow_legacy=True)
    assert calls == []


def test_a_data_snapshot_names_no_class_and_is_verified_too(tmp_path):
    """The data-only format: a tree of builtins and arrays; a class name in it is not data (it is read
    as a legacy snapshot, by the restricted unpickler), and a tampered tree is refused like a
    tampered object."""
    from privbandit.deploy import snapshot

    dep = _store(tmp_path, "dp_se", rounds=40)
    (blob,) = dep._conn.execute("SELECT blob FROM state").fetchone()
    data = snapshot.loads(zlib.decompress(blob))  # builds no object of ours
    assert data["format"] == snapshot.FORMAT and data["state"]["run"][:2] == (
        snapshot.OBJ, "privbandit.policies.elimination._DPSERun")

    def shorten(tree):
        fields = tree["run"][3]
        fields["pulls"] = fields["pulls"][:, :1].copy()
    _forge_data(dep, shorten)
    with pytest.raises(StoreError, match=r"snapshot\.run\.pulls has shape \(1, 1\)"):
        Deployment.open(dep.path)

    dep = _store(tmp_path / "..", "dp_se", rounds=5)

    def another_class(tree):
        tree["run"] = (snapshot.OBJ, "privbandit.policies.hu_hegde._DPTSRun", *tree["run"][2:])
    _forge_data(dep, another_class)
    with pytest.raises(StoreError, match=r"snapshot\.run is a privbandit\.policies\.hu_hegde\._DPTSRun, a fresh run has"):
        Deployment.open(dep.path)


def test_an_honest_store_restores_exactly_and_keeps_its_shared_arrays(tmp_path):
    """Restoring into a fresh run is exact (the same decisions as a store never closed) and keeps the
    fresh run's aliasing: a tree's count is its core's tau, the EXP3 rows the ledger's shared layout."""
    from privbandit.ledger import pulled_layout

    kept = _store(tmp_path, "private_ucb", rounds=30)
    reopened = _store(tmp_path / "..", "private_ucb", rounds=30)
    reopened.close()
    reopened = Deployment.open(reopened.path)
    state = reopened._load(reopened._info())
    assert state["run"].tree.count is state["run"].tree._core.tau
    arms = []
    for dep in (kept, reopened):
        out = []
        for _ in range(40):
            d = dep.select()
            dep.update(d.decision, 1.0 if d.arm == 2 else 0.0)
            out.append(d.arm)
        arms.append(out)
    assert arms[0] == arms[1]
    assert kept._info()["digest"] == reopened._info()["digest"]
    e = _store(tmp_path, "dp_exp3_lap", rounds=5)
    e.close()
    again = Deployment.open(e.path)
    assert again._load(again._info())["run"].core.rows is pulled_layout(1)


# --- the deployment audit (privbandit.audit.deployment): replay against snapshot and digest cells -----------
def _audited(tmp_path, policy="gaussian_ts", rounds=12, **params):
    dep = _store(tmp_path, policy, rounds=rounds, **params)
    dep.select()  # a hold-free open round, then a hold
    dep.select()
    return dep


def _rewrite_snapshot(dep: Deployment, edit) -> None:
    """Write ``edit(state)`` as the committed snapshot through the deployment's own writer (digest,
    counters and configuration digest all consistent): only the replay can tell."""
    from privbandit.deploy.store import transaction

    with transaction(dep._conn):
        info = dep._info()
        state = dep._load(info)
        edit(state)
        dep._write(info, state, info["rounds"], info["open_decision"])
    dep.close()


def test_the_audit_names_a_stale_noise_cursor_in_the_snapshot(tmp_path):
    """A crash-restore that put back the posterior's cursor into its block of normals (the generator
    itself untouched): the next draws reuse normals already released. The release counts, the rounds
    and the generator all agree with the log; the field comparison names the cursor."""
    from privbandit.audit.deployment import deployment_audit

    dep = _audited(tmp_path)
    _rewrite_snapshot(dep, lambda s: setattr(s["run"].posterior, "_pos", s["run"].posterior._pos - 3))
    res = deployment_audit(dep.path)
    assert res.verdict == "VIOLATION" and "snapshot" in res.checks, res.summary()
    assert any("posterior" in f.detail and "_pos" in f.detail for f in res.findings if f.check == "snapshot")


def test_the_audit_names_an_odometer_count_the_snapshot_lowered(tmp_path):
    """A snapshot whose mechanism forgot an item it had counted (its per-arm count lowered: the
    next release's schedule position is off) while every logged count agrees."""
    from privbandit.audit.deployment import deployment_audit

    dep = _audited(tmp_path, "dp_ucb_bound", rounds=20)

    def lower(state):
        count = state["run"].hybrid.count
        count[np.unravel_index(np.argmax(count), count.shape)] -= 1
    _rewrite_snapshot(dep, lower)
    res = deployment_audit(dep.path)
    assert "snapshot" in res.checks and any("hybrid.count" in f.detail for f in res.findings), \
        res.summary()


@pytest.mark.parametrize("which", ["policy", "hold", "update"])
def test_the_audit_verifies_every_state_digest_cell(tmp_path, which):
    from privbandit.audit.deployment import deployment_audit

    dep = _audited(tmp_path, "dp_se")
    dep.close()
    conn = sqlite3.connect(dep.path)
    if which == "update":
        conn.execute("UPDATE updates SET state_digest = ? WHERE decision_id = 4", ("0" * 64,))
    else:
        (d,) = conn.execute("SELECT MAX(id) FROM decisions WHERE kind = ?", (which,)).fetchone()
        conn.execute("UPDATE decisions SET state_digest = ? WHERE id = ?", ("f" * 64, d))
    conn.commit()
    conn.close()
    res = deployment_audit(dep.path)
    assert res.checks == ["digest"], res.summary()


def test_an_honest_store_audits_consistent_with_every_cell_verified(tmp_path):
    from privbandit.audit.deployment import deployment_audit

    for policy in ("gaussian_ts", "dp_ucb_bound", "dp_exp3_lap", "private_ts"):
        dep = _audited(tmp_path, policy)
        dep.status()  # (a query fills the ledger's caches: not part of the comparison)
        dep.close()
        res = deployment_audit(dep.path)
        assert res.verdict == "CONSISTENT" and not res.notes, res.summary()


def test_a_policy_exception_during_the_replay_is_a_finding_not_a_traceback(tmp_path, monkeypatch):
    """The live deployment completed every logged round: a replay that raises is not the logged run."""
    from privbandit.audit.deployment import deployment_audit
    from privbandit.policies.elimination import _DPSERun

    dep = _audited(tmp_path, "dp_se")
    dep.close()
    select = _DPSERun.select

    def raising(self, t):
        if t == 5:
            raise FloatingPointError("overflow in the index")
        return select(self, t)
    monkeypatch.setattr(_DPSERun, "select", raising)
    res = deployment_audit(dep.path)
    assert res.checks == ["raised"], res.summary()
    assert "round 5 raised FloatingPointError" in res.findings[0].detail


def test_the_stored_ledger_raising_makes_the_audit_inconclusive(tmp_path, monkeypatch, capsys):
    from privbandit.audit.deployment import deployment_audit
    from privbandit.cli import main
    from privbandit.ledger import Ledger

    dep = _audited(tmp_path, "dp_ucb_bound")
    dep.close()

    def broken(self, delta, *args, **kwargs):
        raise ZeroDivisionError("a query of the stored ledger")
    monkeypatch.setattr(Ledger, "realized_epsilon", broken)
    res = deployment_audit(dep.path)
    assert res.verdict == "INCONCLUSIVE" and "ZeroDivisionError" in res.notes[0], res.summary()
    assert main(["deploy", "audit", str(dep.path)]) == 3
    assert '"verdict": "INCONCLUSIVE"' in capsys.readouterr().out
