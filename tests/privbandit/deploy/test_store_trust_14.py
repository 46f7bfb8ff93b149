"""Trust in a deployment store, session 14 (s14/deploy; docs/deploy.md "Session 14 (s14/deploy)").

Session 13 left four holes, each closed here and tested on a store crafted in the test:

* a forged store of valid structure whose counters were rewound (the odometer reads cert(rounds) from them)
  or whose ledger counts fewer releases than the log records opened and served: the counters and the release
  counts are now checked against the store's own log before a deployment's first call (``LogMismatch``);
* a forged noise scale (any finite value of the right type passed): float scalars must now equal a fresh
  run's of the configuration;
* nothing authenticated the store: an optional HMAC-SHA256 key now tags configuration + counters +
  snapshot, verified at every call; a keyed store refuses to open without its key;
* an old (object-pickle) snapshot was read through the session-12 unpickler, which builds state classes
  with what the file holds: refused now unless ``allow_legacy=True`` / ``--allow-legacy``, which migrates.

Every test here fails on 959fad5.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import shutil
import sqlite3
import sys
import zlib
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from privbandit.deploy import Deployment, StoreError
from privbandit.deploy import deployment as deployment_module
from privbandit.deploy import snapshot
from privbandit.deploy.store import KEY_ENV, KEY_FILE_ENV

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEY = b"0123456789abcdef-session-14-key"


def _store(tmp_path, policy: str = "private_ucb", rounds: int = 6, name: str = "s.db", **kw) -> Deployment:
    dep = Deployment.create(tmp_path / name, policy, n_arms=3, budget=1e6, delta=1e-6, horizon=1000, seed=3,
                            synchronous="normal", **kw)
    for _ in range(rounds):
        d = dep.select()
        dep.select()  # a hold: no release, no round
        dep.update(d.decision, 1.0 if d.arm == 2 else 0.0)
    return dep


def _sql(path, *statements) -> None:
    conn = sqlite3.connect(path)
    for statement, *args in statements:
        conn.execute(statement, args)
    conn.commit()
    conn.close()


def _forge(path, edit=None, rounds=None, open_decision=...) -> None:
    """What a forger without the key can do: rewrite the data snapshot after ``edit(tree)``, its digest,
    and (optionally) the state row's counters together with the snapshot's copy of them."""
    conn = sqlite3.connect(path)
    (blob,) = conn.execute("SELECT blob FROM state").fetchone()
    data = snapshot.loads(zlib.decompress(blob))
    tree = data["state"]
    if edit is not None:
        edit(tree)
    row_rounds, row_open = conn.execute("SELECT rounds, open_decision FROM state").fetchone()
    rounds = row_rounds if rounds is None else rounds
    open_decision = row_open if open_decision is ... else open_decision
    tree["counters"] = (rounds, open_decision)
    blob = zlib.compress(pickle.dumps({"format": data["format"], "state": snapshot.encode(tree, data=True)}), 1)
    conn.execute("UPDATE state SET blob = ?, digest = ?, rounds = ?, open_decision = ?",
                 (blob, hashlib.sha256(blob).hexdigest(), rounds, open_decision))
    conn.commit()
    conn.close()


def _fields(tree, *path):
    """The field dict of the object at ``path`` in a stored data tree."""
    node = tree
    for name in path:
        node = node[name]
        node = node[3] if type(node) is tuple and node[:1] == (snapshot.OBJ,) else node
    return node


def _find(tree, tag: str, name: str | None = None):
    """The first tagged node ``tag`` (of class ``name``) in a stored data tree, wherever it is stored (the
    top-level "ledger" and "rng" are references to the run's own)."""
    if type(tree) is tuple and tree[:1] == (tag,) and (name is None or tree[1] == name):
        return tree
    children = tree.values() if type(tree) is dict else tree if type(tree) in (list, tuple) else ()
    for child in children:
        found = _find(child, tag, name)
        if found is not None:
            return found
    return None


def _ledger(tree) -> dict:
    return _find(tree, snapshot.OBJ, "privbandit.ledger.Ledger")[3]


# --- 1. counters and release counts against the log -----------------------------------------------------
@pytest.fixture(params=[True, False], ids=["sql-json", "python"])
def json_path(request, monkeypatch):
    """Both ways the logged releases are summed (SQLite's JSON1, or Python for SQLite < 3.38)."""
    monkeypatch.setattr(deployment_module, "_SQL_JSON", request.param and deployment_module._SQL_JSON)


@pytest.mark.parametrize("call", ["select", "update", "status"])
def test_rewound_counters_are_refused_before_the_first_call(tmp_path, json_path, call):
    """Row and snapshot counters lowered together (6 -> 4 rounds): on 959fad5 the store opened, status read
    cert(4) as the spend and select opened round 5 again."""
    dep = _store(tmp_path)
    path = dep.path
    dep.close()
    _forge(path, rounds=4)
    dep = Deployment.open(path)  # (the audit opens such a store, to report it)
    with pytest.raises(deployment_module.LogMismatch, match="state row counts 4 policy rounds, its log holds 6"):
        {"select": dep.select, "update": lambda: dep.update(2, 1.0), "status": dep.status}[call]()  # (2: a hold)
    dep.close()


def test_a_counter_open_on_a_closed_round_is_refused(tmp_path, json_path):
    dep = _store(tmp_path)
    path, last = dep.path, dep.decisions()[-1]["decision"] - 1  # round 6's policy decision (then a hold)
    dep.close()
    _forge(path, open_decision=last)  # round 6 "awaits its reward" again: its reward would be fed twice
    with Deployment.open(path) as dep, pytest.raises(deployment_module.LogMismatch, match="open decision"):
        dep.select()


@pytest.mark.parametrize("arm", [0, 1, 2])
def test_a_ledger_counting_fewer_releases_than_the_log_is_refused(tmp_path, json_path, arm):
    """The snapshot's ledger counts one release fewer on an arm than the decisions and updates record."""
    dep = _store(tmp_path)
    path = dep.path
    dep.close()

    def fewer(tree):
        draws = _ledger(tree)["_draws"]
        assert draws[0, arm] > 0
        draws[0, arm] -= 1

    _forge(path, fewer)
    with Deployment.open(path) as dep, pytest.raises(deployment_module.LogMismatch, match="releases per arm"):
        dep.select()


@pytest.mark.parametrize("cell", ['[1, 0]', '[0, 0, -1]', '[0, 0.5, 0]', '{"0": 1}', 'not json'])
def test_a_malformed_releases_cell_is_a_store_error(tmp_path, json_path, cell):
    dep = _store(tmp_path)
    path = dep.path
    dep.close()
    _sql(path, ("UPDATE decisions SET releases = ? WHERE id = 2", cell))
    with Deployment.open(path) as dep, pytest.raises(StoreError, match="corrupt deployment store"):
        dep.status()


def test_an_honest_store_passes_after_holds_exhaustion_and_reopens(tmp_path, json_path):
    dep = Deployment.create(tmp_path / "h.db", "gaussian_ts", params={"c": 4.0}, n_arms=2, budget=12.0,
                            delta=1e-6, horizon=200, seed=5)
    for i in range(60):  # past the filter's stop round: exploit decisions too
        d = dep.select()
        if i % 3 == 0:
            dep.select()
        dep.update(d.decision, float(i % 2))
        if i % 7 == 6:
            dep.close()
            dep = Deployment.open(tmp_path / "h.db")
    status = dep.status()
    assert status["filter"]["exhausted"] and status["exploit_decisions"] and status["hold_decisions"]
    dep.close()


# --- 2. mechanism scales: a fresh run of the configuration is the reference ------------------------------
@pytest.mark.parametrize("policy, path, field", [
    ("private_ucb", ("run", "tree"), "scale"),            # TreeMechanism's Laplace scale: 39.0 at these params
    ("private_ucb", ("run", "tree"), "epsilon"),
    ("dp_ucb_bound", ("run", "hybrid"), "log_scale"),
    ("dp_se", ("run", "batches"), "scale"),
    ("private_ucb", ("run",), "relaxation"),
])
def test_a_forged_scale_is_refused_naming_it(tmp_path, policy, path, field):
    """On 959fad5 any finite float of the right type was accepted: a tenth of the noise, same certificate."""
    dep = _store(tmp_path, policy)
    p = dep.path
    dep.close()
    _forge(p, lambda tree: _fields(tree, *path).__setitem__(field, _fields(tree, *path)[field] / 10))
    with pytest.raises(StoreError, match=rf"snapshot\.{'.'.join(path)}\.{field} is .*, a run of this configuration "
                                         r"has .* \(a scale or parameter its configuration fixes\)"):
        Deployment.open(p)


# --- 3. authentication ---------------------------------------------------------------------------------
def test_a_keyed_store_opens_only_with_its_key(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    dep = _store(tmp_path, key=KEY)
    path = dep.path
    assert dep.authenticated and dep.status()["authenticated"]
    dep.close()
    assert KEY not in Path(path).read_bytes()  # the key is never stored
    with pytest.raises(StoreError, match="authenticated .* no key was given"):
        Deployment.open(path)
    with pytest.raises(StoreError, match="does not match its authentication tag"):
        Deployment.open(path, key=b"another key of 32 bytes........")
    with Deployment.open(path, key=KEY) as dep:  # and it stays valid across calls and reopens
        d = dep.select()
        dep.update(d.decision, 1.0)
    monkeypatch.setenv(KEY_ENV, KEY.decode())
    with Deployment.open(path) as dep:
        assert dep.status()["policy_rounds"] == 7
    monkeypatch.delenv(KEY_ENV)
    key_file = tmp_path / "key"
    key_file.write_bytes(KEY + b"\n")
    monkeypatch.setenv(KEY_FILE_ENV, str(key_file))
    with Deployment.open(path) as dep:
        assert dep.status()["policy_rounds"] == 7


def _keyed(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    dep = _store(tmp_path, key=KEY)
    path = dep.path
    dep.close()
    return path


@pytest.mark.parametrize("forgery", [
    # what the log check cannot see: a snapshot of another generator state (noise re-drawn / replayed)
    lambda path: _forge(path, lambda tree: _find(tree, snapshot.RNG)[2]["state"].__setitem__("state", 12345)),
    # the log truncated to 4 rounds with the counters and the ledger's counts lowered to match
    lambda path: (_sql(path, ("DELETE FROM updates WHERE decision_id > 8",), ("DELETE FROM decisions WHERE id > 8",)),
                  _forge(path, lambda tree: _ledger(tree)["_draws"].__setitem__(..., _release_counts(path)), rounds=4)),
    # the configuration: a larger budget, the stop round moved with it
    lambda path: _sql(path, ("UPDATE meta SET value = replace(value, '\"budget_epsilon\": 1000000.0', "
                             "'\"budget_epsilon\": 2000000.0') WHERE key = 'config'",)),
    # the counters alone
    lambda path: _sql(path, ("UPDATE state SET version = version + 1",)),
], ids=["rng", "truncated-log", "config", "version"])
def test_a_keyed_store_refuses_any_forgery_of_config_counters_or_snapshot(tmp_path, monkeypatch, forgery):
    path = _keyed(tmp_path, monkeypatch)
    forgery(path)
    with pytest.raises(StoreError, match="does not match its authentication tag"):
        Deployment.open(path, key=KEY)


def _release_counts(path) -> list[int]:
    conn = sqlite3.connect(path)
    cells = conn.execute("SELECT releases FROM decisions UNION ALL SELECT releases FROM updates").fetchall()
    conn.close()
    return np.sum([json.loads(c) for (c,) in cells], axis=0).reshape(1, -1).tolist()


def test_the_truncated_log_forgery_is_what_only_the_key_refuses(tmp_path, monkeypatch):
    """The same truncation on a keyless store opens and serves: the documented limit of the keyless checks
    (docs/deploy.md); the key is what closes it (previous test)."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    dep = _store(tmp_path)
    path = dep.path
    dep.close()
    _sql(path, ("DELETE FROM updates WHERE decision_id > 8",), ("DELETE FROM decisions WHERE id > 8",))
    _forge(path, lambda tree: _ledger(tree)["_draws"].__setitem__(..., _release_counts(path)), rounds=4)
    with Deployment.open(path) as dep:
        assert dep.status()["policy_rounds"] == 4


def test_a_tampered_counter_is_refused_by_a_running_keyed_deployment(tmp_path, monkeypatch):
    """The tag is checked at every call, not only at open: a row rewritten under a live process (which holds the
    restored state in memory) is refused at its next call."""
    path = _keyed(tmp_path, monkeypatch)
    dep = Deployment.open(path, key=KEY)
    dep.select()
    _sql(path, ("UPDATE state SET rounds = rounds - 1",))
    with pytest.raises(StoreError, match="does not match its authentication tag"):
        dep.select()
    dep.close()


def test_a_stripped_tag_is_refused_when_the_key_is_given(tmp_path, monkeypatch):
    path = _keyed(tmp_path, monkeypatch)
    _sql(path, ("DELETE FROM meta WHERE key IN ('auth', 'mac')",))
    with pytest.raises(StoreError, match="carries no authentication tag"):
        Deployment.open(path, key=KEY)


@pytest.mark.parametrize("key, says", [(b"short", "at least 16 bytes"), (12345, "key must be bytes or a str")])
def test_a_bad_key_is_named(tmp_path, key, says):
    with pytest.raises(ValueError, match=says):
        Deployment.create(tmp_path / "b.db", "private_ucb", n_arms=3, budget=1.0, delta=1e-6, key=key)
    assert not (tmp_path / "b.db").exists()


def _cli(*argv):
    from privbandit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_key_file(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    key_file, store = tmp_path / "key", str(tmp_path / "c.db")
    key_file.write_bytes(KEY)
    code, out, _ = _cli("deploy", "init", store, "--policy", "private_ucb", "--n-arms", "3", "--budget", "1",
                        "--delta", "1e-6", "--seed", "1", "--key-file", str(key_file))
    assert code == 0 and json.loads(out)["authenticated"] is True
    code, out, _ = _cli("deploy", "select", store, "--key-file", str(key_file))
    assert code == 0 and json.loads(out)["kind"] == "policy"
    code, out, _ = _cli("deploy", "update", store, "--decision", "1", "--reward", "1", "--key-file", str(key_file))
    assert code == 0
    code, out, _ = _cli("deploy", "audit", store, "--key-file", str(key_file))
    assert code == 0 and json.loads(out)["verdict"] == "CONSISTENT"
    for command in ("status", "audit"):
        code, out, err = _cli("deploy", command, store)
        assert code == 2 and "--key-file" in err and err.count("\n") == 1, err
    code, _, err = _cli("deploy", "status", store, "--key-file", str(tmp_path / "absent"))
    assert code == 2 and "cannot read the key file" in err


# --- 4. legacy (object-pickle) snapshots --------------------------------------------------------------
def _legacy(dep: Deployment) -> None:
    """dep's state rewritten in the object-pickle format of sessions 1-12 (digest recomputed)."""
    state = dep._load(dep._info())
    raw = pickle.dumps(state, protocol=5)
    path = dep.path
    dep.close()
    blob = zlib.compress(raw, 1)
    _sql(path, ("UPDATE state SET blob = ?, digest = ?", blob, hashlib.sha256(blob).hexdigest()))


def test_a_legacy_snapshot_is_refused_before_any_state_class_runs(tmp_path, monkeypatch):
    """On 959fad5 the restricted unpickler read it by default: the state classes' __setstate__ ran with what
    the file held (here a spy on the ledger's)."""
    from privbandit.ledger import Ledger

    dep = _store(tmp_path)
    path = dep.path
    _legacy(dep)
    calls = []
    original = Ledger.__setstate__
    monkeypatch.setattr(Ledger, "__setstate__", lambda self, state: (calls.append(1), original(self, state))[1])
    with pytest.raises(StoreError, match=r"object-pickle format .* allow_legacy=True \(command line: --allow-legacy\)"):
        Deployment.open(path)
    assert calls == []
    code, _, err = _cli("deploy", "status", str(path))
    assert code == 2 and "--allow-legacy" in err and calls == []


def test_the_d72499f_fixture_migrates_once_with_allow_legacy(tmp_path):
    sys.path.insert(0, str(FIXTURES))
    try:
        import make_ledger_layout_fixtures as make
    finally:
        sys.path.remove(str(FIXTURES))
    expected = json.loads((FIXTURES / "ledger_layout_deploy.json").read_text())
    path = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "ledger_layout_d72499f.db", path)
    with pytest.raises(StoreError, match="allow_legacy"):
        Deployment.open(path)
    with Deployment.open(path, allow_legacy=True) as dep:
        assert make.status_of(dep) == expected["stored"]
    (blob,) = sqlite3.connect(path).execute("SELECT blob FROM state").fetchone()
    assert snapshot.loads(zlib.decompress(blob))["format"] == snapshot.FORMAT  # migrated: data only
    with Deployment.open(path) as dep:  # read again without the option, and continued
        assert make.status_of(dep) == expected["stored"]
        make.drive(dep, make.DEPLOY_MORE)
        assert make.status_of(dep) == expected["more"]


def test_a_legacy_snapshot_is_verified_field_by_field_when_allowed(tmp_path):
    dep = _store(tmp_path)
    path = dep.path
    state = dep._load(dep._info())
    state["run"].tree.scale = state["run"].tree.scale / 10
    _legacy(dep)
    with pytest.raises(StoreError, match=r"snapshot\.run\.tree\.scale is 3\.0, a run of this configuration has 30\.0"):
        Deployment.open(path, allow_legacy=True)


def test_cli_allow_legacy_migrates(tmp_path):
    dep = _store(tmp_path)
    path = dep.path
    _legacy(dep)
    code, out, err = _cli("deploy", "status", str(path), "--allow-legacy")
    assert code == 0 and json.loads(out)["policy_rounds"] == 6, err
    code, out, _ = _cli("deploy", "audit", str(path))
    assert code == 0 and json.loads(out)["verdict"] == "CONSISTENT"


def test_allow_legacy_must_be_a_bool(tmp_path):
    dep = _store(tmp_path)
    dep.close()
    with pytest.raises(ValueError, match="allow_legacy must be True or False"):
        Deployment.open(dep.path, allow_legacy="yes")


if os.name != "posix":  # pragma: no cover
    pytestmark = pytest.mark.skip("POSIX paths")


# --- 5. files the command line writes: a symlink at the destination is replaced, never written through -----
def _planted(directory: Path, names) -> Path:
    victim = directory.parent / f"{directory.name}-victim.txt"
    victim.write_text("the user's file")
    directory.mkdir(exist_ok=True)
    for name in names:
        (directory / name).symlink_to(victim)
    return victim


def test_experiment_out_replaces_a_planted_symlink(tmp_path):
    """On 959fad5 ``--out DIR`` wrote summary.csv through DIR/summary.csv -> the victim (and regret.png too)."""
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    victim = _planted(out, ["summary.csv", "regret.png"])
    code, _, err = _cli("experiment", "tossou2016-2arm", "--horizon", "40", "--replicates", "2", "--out", str(out))
    assert code == 0, err
    assert victim.read_text() == "the user's file"
    for name in ("summary.csv", "regret.png"):
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0
    # (no staging directory left; summary.csv.json: the pair's digests since session 18)
    assert sorted(p.name for p in out.iterdir()) == ["regret.png", "summary.csv", "summary.csv.json"]


def test_run_save_and_plot_replace_planted_symlinks(tmp_path):
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    victim = _planted(out, ["r.csv", "r.csv.json", "r.png"])
    code, _, err = _cli("run", "ucb1", "--horizon", "30", "--replicates", "2", "--quiet", "--save", str(out / "r.csv"),
                        "--plot", str(out / "r.png"))
    assert code == 0, err
    assert victim.read_text() == "the user's file"
    assert all(not (out / n).is_symlink() and (out / n).stat().st_size > 0 for n in ("r.csv", "r.csv.json", "r.png"))
    assert sorted(p.name for p in out.iterdir()) == ["r.csv", "r.csv.json", "r.png"]
