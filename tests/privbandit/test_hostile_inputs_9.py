"""Hostile inputs, ninth round (session 12): files the toolkit loads from elsewhere (deployment stores
and their pickled snapshots), numbers that are not the numbers they look like (bools inside lists,
exotic numpy scalars), and arrays the ledger hands out.

Before the fixes of this round:

* **code execution**: a deployment store's snapshot is a pickle, read with a restricted unpickler that
  allowed any name under ``numpy``, ``privbandit.`` and ``accountants.`` and the builtin ``getattr``.
  A crafted store (its digest recomputed: the digest guards against corruption, not against a
  forger) ran ``os.system`` on ``Deployment.open`` -- so on ``privbandit deploy status / audit STORE``
  -- three ways: ``privbandit.deploy.store.os`` (a module a privbandit module imports) then
  ``getattr(os, "system")``; the dotted name ``privbandit.deploy.store`` / ``os.system``, which
  find_class resolves at protocol >= 4; and ``numpy.testing._private.utils.runstring``, which execs
  a string;
* a snapshot that unpickled into something other than a state dict (an int) failed with
  "AttributeError: 'int' object has no attribute 'get'" instead of a StoreError.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import sqlite3
import warnings
import zlib
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from privbandit.deploy import Deployment, StoreError
from privbandit import budget as B
from privbandit import envs as E
from privbandit import simulate
from privbandit.policies import make_policy


# ---------------------------------------------------------------- crafted deployment snapshots
def _store(tmp_path, name="s.db", policy="dp_ucb"):
    path = tmp_path / name
    with Deployment.create(path, policy, n_arms=3, budget=5.0, delta=1e-6, horizon=200, seed=1) as dep:
        for _ in range(3):
            dep.update(dep.select().decision, 0.5)
    return path


def _forge(path, payload: bytes) -> None:
    """Replace the snapshot by ``payload`` with a matching digest, as anyone holding the file can."""
    blob = zlib.compress(payload)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE state SET blob = ?, digest = ?", (blob, hashlib.sha256(blob).hexdigest()))
    conn.commit()
    conn.close()


def _text(s: str) -> bytes:  # SHORT_BINUNICODE
    return b"\x8c" + bytes([len(s)]) + s.encode()


def _global(module: str, name: str) -> bytes:  # STACK_GLOBAL: find_class(module, name) at protocol 4
    return _text(module) + _text(name) + b"\x93"


def _cli(argv):
    from privbandit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


def _payloads(marker) -> dict[str, bytes]:
    cmd = f"touch {marker}"
    call1, call2 = b"\x85R", b"\x86R"  # TUPLE1 / TUPLE2 then REDUCE
    return {
        # a module imported by a privbandit module, then the builtin getattr
        "module_then_getattr": b"\x80\x04" + _global("builtins", "getattr") + _global("privbandit.deploy.store", "os")
        + _text("system") + call2 + _text(cmd) + call1 + b".",
        # a dotted name: find_class walks it at protocol >= 4
        "dotted_name": b"\x80\x04" + _global("privbandit.deploy.store", "os.system") + _text(cmd) + call1 + b".",
        # numpy's test helper that execs a string
        "numpy_runstring": b"\x80\x04" + _global("numpy.testing._private.utils", "runstring")
        + _text(f"import os; os.system({cmd!r})") + b"}" + call2 + b".",
        # getattr on a state class: its __init__'s globals hold the modules it imported
        "state_class_dunder": b"\x80\x04" + _global("builtins", "getattr") + _global("privbandit.ledger", "Ledger")
        + _text("__init__") + call2 + b".",
        # a kernel class: callable, and _SamplerCall calls the C function at the address it holds
        "kernel_class": b"\x80\x04" + _global("privbandit.mechanisms._kernels", "_SamplerCall") + b".",
        # a function (not a class) of a state module: functions are never stored
        "state_module_function": b"\x80\x04" + _global("privbandit.ledger", "grid_layout") + b"K\x01K\x01" + call2
        + b".",
    }


@pytest.mark.parametrize("kind", sorted(_payloads("m")))
def test_a_crafted_snapshot_cannot_run_code(tmp_path, kind):
    """Fails on 11b64bf for the first three (the marker file is written, then an AttributeError)."""
    path, marker = _store(tmp_path), tmp_path / "pwned"
    _forge(path, _payloads(marker)[kind])
    with pytest.raises(StoreError, match="which a deployment never stores"):
        Deployment.open(path, allow_legacy=True)  # (session 14: a legacy snapshot is read only when allowed)
    assert not marker.exists()


def test_a_crafted_snapshot_cannot_run_code_through_the_command_line(tmp_path):
    from privbandit.cli import main

    path, marker = _store(tmp_path), tmp_path / "pwned"
    _forge(path, _payloads(marker)["dotted_name"])
    # (session 14: without --allow-legacy a snapshot naming a class is refused before it is read; the audit,
    # which only reads, offers no --allow-legacy)
    for argv, says in ((["status", "--allow-legacy"], "never stores"), (["audit"], "--allow-legacy")):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["deploy", *argv, str(path)])
        assert code == 2 and says in err.getvalue() and "Traceback" not in err.getvalue(), argv
        assert not marker.exists()


@pytest.mark.parametrize("state", [7, [1, 2], {"run": 1, "rng": 2, "ledger": 3}, {}])
def test_a_snapshot_of_the_wrong_shape_is_a_store_error(tmp_path, state):
    """An int failed on 11b64bf with "AttributeError: 'int' object has no attribute 'get'"."""
    path = _store(tmp_path)
    _forge(path, pickle.dumps(state, protocol=5))
    with pytest.raises(StoreError, match="is not a policy run, a generator and a ledger"):
        Deployment.open(path)


def test_a_snapshot_with_wrong_counters_is_a_store_error(tmp_path):
    path = _store(tmp_path)
    conn = sqlite3.connect(path)
    (blob,) = conn.execute("SELECT blob FROM state").fetchone()
    conn.close()
    data = pickle.loads(zlib.decompress(blob))
    data["state"]["counters"] = 3  # tuple(3) was a TypeError (a data-only snapshot since session 13)
    _forge(path, pickle.dumps(data, protocol=5))
    with pytest.raises(StoreError, match="corrupt deployment store"):
        Deployment.open(path)


def test_every_deployable_policy_still_reopens(tmp_path):
    """The unpickler now names what it builds; every private K-armed policy's snapshot (and the
    realized-spend ledger, with and without tracking) must still load -- a class it had missed
    would make a store unopenable after its first call."""
    from privbandit.policies import REGISTRY, make_policy

    names = [n for n in sorted(REGISTRY) if make_policy(n).private and "contexts" not in make_policy(n).requires]
    assert len(names) >= 15
    for i, name in enumerate(names):
        path = tmp_path / f"{name}.db"
        with Deployment.create(path, name, n_arms=3, budget=50.0, delta=1e-6, seed=i, track_realized=i % 2 == 0) \
                as dep:
            for _ in range(4):
                dep.update(dep.select().decision, 0.25)
        with Deployment.open(path) as again:
            assert again.status()["policy_rounds"] == 4, name
            again.update(again.select().decision, 1.0)


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("sql", ["UPDATE meta SET value = ? WHERE key = 'config'", "UPDATE decisions SET releases = ?"])
def test_json_nested_too_deep_is_a_store_error(tmp_path, sql):
    """json.loads raised RecursionError, which the command line reported as an internal error."""
    path = _store(tmp_path)
    conn = sqlite3.connect(path)
    conn.execute(sql, (DEEP,))
    conn.commit()
    conn.close()
    code, err = _cli(["deploy", "status", str(path)])
    assert code == 2 and "corrupt deployment store" in err and "internal error" not in err, err


def test_params_nested_too_deep_are_refused(tmp_path):
    deep = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="params must be JSON values"):
        Deployment.create(tmp_path / "d.db", "dp_ucb", n_arms=3, budget=1.0, delta=1e-6, params={"epsilon": deep})


# ---------------------------------------------------------------- numbers that are not what they look like
@pytest.mark.parametrize("make, name", [
    (lambda: E.Bernoulli([0.5, True]), "means"),
    (lambda: E.TruncatedExponential([1.0, True]), "rates"),
    (lambda: E.RewardTable([[0.5, 0.1], [np.True_, 0.2]]), "table"),
    (lambda: E.ClippedGaussian((0.5, False)), "locs"),
])
def test_a_bool_among_numbers_is_refused_like_an_all_bool_list(make, name):
    """numpy cast the bool before real_array saw it: Bernoulli([0.5, True]) ran an arm of mean 1.0
    on 11b64bf, while Bernoulli([True, False]) was refused."""
    with pytest.raises(ValueError, match=f"{name} must be an array of real numbers"):
        make()


def test_real_array_reads_bools_only_where_asked():
    from accountants._validate import real_array

    assert real_array("tape", [[0.5, True]], bools=True).tolist() == [[0.5, 1.0]]
    assert real_array("x", [[0.5, 1], (2, 3.0)]).tolist() == [[0.5, 1.0], [2.0, 3.0]]


@pytest.mark.parametrize("call, name", [
    (lambda td: make_policy("dp_ucb", epsilon=td), "epsilon"),
    (lambda td: make_policy("exp3_tau", tau=td), "tau"),
    (lambda td: make_policy("dp_ucb_int", interval=td), "interval"),
    (lambda td: E.ErdosRenyi(td, 0.5), "n"),
    (lambda td: E.DisjointCliques(4, td), "size"),
    (lambda td: E.BarabasiAlbert(5, td), "m"),
    (lambda td: E.ClippedGaussian([0.5, 0.2], scale=td), "scale"),
    (lambda td: E.ClippedGaussian([0.5, td]), "locs"),
    (lambda td: simulate(make_policy("dp_ucb"), E.Bernoulli([0.3, 0.6]), 20, td), "replicates"),
    (lambda td: B.epsilon("dp_ucb", 100, td), "delta"),
])
def test_a_timedelta64_is_not_a_number(call, name):
    """np.timedelta64 is an np.signedinteger, hence a numbers.Integral: it passed the type checks and then
    failed in float() / int() -- "bad parameters for dp_ucb: float() argument must be ... not
    'datetime.timedelta'" naming no parameter, a TypeError traceback from ErdosRenyi and DisjointCliques,
    and BarabasiAlbert(5, m=timedelta64(3)) and ClippedGaussian([0.5, timedelta64(3)]) were accepted."""
    from accountants._validate import shown

    td = np.timedelta64(3, "s")
    assert "timedelta64" in shown(td)  # (int(td) inside shown was itself a TypeError)
    with pytest.raises(ValueError, match=name):
        call(td)


def test_a_timedelta64_is_not_a_deployment_number(tmp_path):
    """Deployment.create(budget=timedelta64) was a numpy UFuncTypeError, update(reward=...) a TypeError."""
    td = np.timedelta64(3, "s")
    with pytest.raises(ValueError, match="budget"):
        Deployment.create(tmp_path / "x.db", "dp_ucb", n_arms=3, budget=td, delta=1e-6)
    with Deployment.open(_store(tmp_path)) as dep:
        decision = dep.select().decision
        with pytest.raises(ValueError, match="reward"):
            dep.update(decision, td)


def test_clipped_gaussian_reads_numpy_scalars_as_floats():
    """A longdouble scale reached scipy's ndtr as a longdouble (TypeError: no loop); a float16 one
    overflowed in float16 arithmetic (RuntimeWarning); a location at the largest float overflowed
    (l - 0) / scale with a RuntimeWarning. All now give the float64 answer, silently."""
    from privbandit.envs import ClippedGaussian

    want = ClippedGaussian([0.5, 0.2], scale=0.5).means
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for scale in (np.float16(0.5), np.float32(0.5), np.longdouble(0.5)):
            assert ClippedGaussian([0.5, 0.2], scale=scale).means.tolist() == want.tolist()
        assert ClippedGaussian([0.5, 1.7976931348623157e308, -1.7976931348623157e308]).means[1:].tolist() == [1.0, 0.0]


def test_an_array_entry_beyond_the_floats_is_refused_without_a_warning():
    from privbandit.envs import Bernoulli

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (was "overflow encountered in cast", then inf)
        with pytest.raises(ValueError, match=r"means must be an array of real numbers within the floats' range"):
            Bernoulli(np.array([0.5, np.longdouble("1e400")]))


def test_a_failure_probability_that_overflows_the_shift_is_named():
    """joint_dp_lin_ucb(failure=2.2e-308): log(2 T / failure) is inf; the message blamed epsilon."""
    pol = make_policy("joint_dp_lin_ucb", failure=2.2250738585072014e-308)
    with pytest.raises(ValueError, match=r"failure=2.22507e-308 .* a larger failure"):
        pol.privacy_schedule(100, 3)


# ---------------------------------------------------------------- arrays the ledger hands out
def test_the_shared_layouts_cannot_be_made_writeable():
    """The grid and pulled layouts are shared by every ledger of the process and staged uncopied. On
    11b64bf they were owning arrays with the writeable flag off, which any caller may turn back on:
    zeroing them made DP-UCB's realized epsilon over 4 replicates [4, 0, 0, 0] (certificate 1.0)."""
    from privbandit.ledger import grid_layout, pulled_layout

    rows, cols = grid_layout(4, 3)
    for a in (rows, cols, pulled_layout(4)):
        with pytest.raises(ValueError, match="WRITEABLE"):
            a.setflags(write=True)
    assert rows.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3] and cols.tolist() == [0, 1, 2] * 4
    res = simulate(make_policy("dp_ucb"), E.Bernoulli([0.3, 0.6, 0.5]), horizon=60, replicates=4, seed=3,
                   progress=False)
    realized = res.realized_epsilon[-1]  # every replicate spends the same (zeroed rows: [4, 0, 0, 0])
    assert np.ptp(realized) == 0 and realized[0] == pytest.approx(1.0) and res.realized_within_certificate()


def test_the_release_counts_are_handed_out_read_only():
    """``ledger.draws`` was the ledger's own array: writing into it changed the releases a deployment
    logs per call and reports per arm."""
    from privbandit.ledger import Ledger

    led = Ledger(2, 3)
    with pytest.raises(ValueError, match="read-only"):
        led.draws[:] = 5
    assert led.draws.tolist() == [[0, 0, 0], [0, 0, 0]]


# ---------------------------------------------------------------- the command line and the files it reads
@pytest.mark.parametrize("content, says", [
    (b"\x00\xff\xfe\x89PNG\r\n\x1a\n" * 50, "is not UTF-8 text"),  # was "'utf-8' codec can't decode byte 0xff ..."
    ("a,b,c\n0.5,0.5,\xe9\n".encode("latin-1"), "is not UTF-8 text"),
    (b"a,b,c\n" + b"1" * 200_000 + b",0,0\n", "is not a CSV reward table"),  # was "internal error Error: field larger ..."
    ("a,b,c\n1_0,0,0\n".encode(), "'1_0' is not a number"),  # was read as 10
    ("a,b,c\n\uff10.\uff15,0,0\n".encode(), "is not a number"),  # fullwidth 0.5, was read as 0.5
])
def test_a_replay_log_that_is_not_a_reward_table_is_named(tmp_path, content, says):
    path = _store(tmp_path)
    log = tmp_path / "log.csv"
    log.write_bytes(content)
    code, err = _cli(["deploy", "replay", str(path), str(log)])
    assert code == 2 and says in err and "internal error" not in err and err.count("\n") == 1, err
    with Deployment.open(path) as dep:
        assert dep.status()["policy_rounds"] == 3  # nothing served


@pytest.mark.parametrize("argv", [
    ["budget", "dp_ucb", "--horizon", "1_000"], ["budget", "dp_ucb", "--horizon", "\u0663"],
    ["certify", "--epsilon", "\uff11"], ["budget", "dp_ucb", "--horizon", "100", "--param", "epsilon=1_0"],
])
def test_numbers_on_the_command_line_are_plain_ascii(argv):
    """int(), float() and Decimal() read "1_0" as 10 (a mistyped 1.0 became ten times the epsilon) and
    any script's digits (fullwidth, Arabic-Indic); all ran on 11b64bf."""
    code, err = _cli(argv)
    assert code == 2 and err.startswith("privbandit: error:") and err.count("\n") == 1, err


def test_a_look_alike_name_says_which_character_differs():
    """'dр_ucb' (Cyrillic er) printed "unknown policy 'dр_ucb'; did you mean dp_ucb" -- twice the same
    name to the eye."""
    with pytest.raises(ValueError, match=r"U\+0440 CYRILLIC SMALL LETTER ER\) at position 1"):
        make_policy("d\u0440_ucb")


@pytest.mark.parametrize("version, refused", [("14.0.0", True), ("0.17.1", True), ("26.0.1", False)])
def test_a_parquet_log_is_read_only_by_a_pyarrow_that_does_not_unpickle(tmp_path, monkeypatch, version, refused):
    """pyarrow 0.14.0 - 14.0.0 unpickle a column's PyExtensionType stored in the file (CVE-2023-47248): a
    crafted Parquet log runs code in load_log. Such a pyarrow is now refused before the file is opened."""
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    from privbandit.contextual.replay import load_log

    path = tmp_path / "log.parquet"
    pd.DataFrame({"action": [0, 1], "reward": [0.5, 1.0], "propensity": [0.5, 0.5], "x": [0.1, 0.2]}).to_parquet(path)
    monkeypatch.setattr(pa, "__version__", version)
    if refused:
        with pytest.raises(ValueError, match="CVE-2023-47248"):
            load_log(path)
    else:
        assert load_log(path).rewards.tolist() == [0.5, 1.0]
    from privbandit.contextual.replay import _safe_parquet_reader

    monkeypatch.setattr(pa, "__version__", "14.0.1")  # the first safe release (pandas itself wants a newer one)
    _safe_parquet_reader()
