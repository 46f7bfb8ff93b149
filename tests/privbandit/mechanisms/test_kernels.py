"""The mechanisms' kernels give the same bits compiled (numba, the ``fast`` extra) and interpreted.

privbandit.mechanisms._kernels is one Python source: numba compiles it when installed, CPython runs it
otherwise. The golden-master tests pin the compiled results (CI installs numba); here the same runs
are repeated with every kernel swapped for its interpreted Python function and compared bit for bit,
so a construct numba and CPython evaluate differently (integer overflow, signed zeros, float
contraction) cannot hide.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.mechanisms import HybridMechanism, TreeMechanism, _kernels
from privbandit.mechanisms.split import SplitMechanism
from privbandit.ledger import Ledger

def _run(mech_cls, replicates, rounds, **kwargs):
    rng = np.random.default_rng(7)
    data = np.random.default_rng(8)
    book = Ledger(replicates, 3, tight=True)
    mech = mech_cls(replicates, 3, rng=rng, ledger=book, epsilon=0.5, **kwargs)
    outs = []
    for i in range(rounds):
        if i % 3 == 2:  # every stream, or a random subset of them: the insert(values, mask) routes
            vals = data.random((replicates, 3))
            mask = np.ones((replicates, 3), dtype=bool) if i % 2 else data.random((replicates, 3)) < 0.5
            mech.insert(vals, mask)
        else:
            arms = data.integers(0, 3, replicates)
            vals = data.random(replicates)
            vals[data.random(replicates) < 0.1] = 0.0
            mech.insert_pulled(arms, vals)
        outs.append(mech.noisy_sum.copy())
    releases = book.releases()
    return np.array(outs), releases


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the interpreted path exists")
@pytest.mark.parametrize("mech_cls, kwargs", [(TreeMechanism, {"horizon": 600}), (HybridMechanism, {}),
                                              (SplitMechanism, {})])
@pytest.mark.parametrize("replicates", [1, 5])
def test_compiled_and_interpreted_kernels_agree_bit_for_bit(monkeypatch, mech_cls, kwargs, replicates):
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 0)  # compiled even for one row
    compiled = _run(mech_cls, replicates, 300, **kwargs)
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 10**9)  # interpreted at every size ...
    monkeypatch.setattr(_kernels, "_LOADED", False)  # ... although this process has imported numba
    assert _kernels.binary_prepare.at(5) is _kernels.binary_prepare.py_func
    interpreted = _run(mech_cls, replicates, 300, **kwargs)
    assert np.array_equal(compiled[0].view(np.int64), interpreted[0].view(np.int64))
    assert set(compiled[1]) == set(interpreted[1])
    for key in compiled[1]:
        assert np.array_equal(np.asarray(compiled[1][key]), np.asarray(interpreted[1][key]))


def test_one_replicate_runs_interpreted_and_many_compiled(monkeypatch):
    monkeypatch.setattr(_kernels, "_LOADED", False)  # a process that has not imported numba
    assert _kernels.binary_prepare.at(1) is _kernels.binary_prepare.py_func
    expected = _kernels.binary_prepare.jit if _kernels.COMPILED else _kernels.binary_prepare.py_func
    assert _kernels.binary_prepare.at(_kernels.JIT_MIN_ROWS) is expected
    # once a kernel has imported numba, one row runs compiled too
    monkeypatch.setattr(_kernels, "_LOADED", _kernels.COMPILED)
    assert _kernels.binary_prepare.at(1) is expected


def test_a_one_replicate_process_never_imports_numba():
    """A one-replicate run (a deployment, a CLI call) must not pay numba's import: run one in a fresh
    interpreter and check sys.modules."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from privbandit.engine import simulate\n"
            "from privbandit.envs import Bernoulli\n"
            "from privbandit.policies import DPUCBBound, PrivateUCB\n"
            "for p in (DPUCBBound(1.0), PrivateUCB(1.0)):\n"
            "    simulate(p, Bernoulli([0.2, 0.8]), 40, 1, seed=0, progress=False)\n"
            "print('numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_jit_always_compiles_a_one_replicate_run_to_the_same_results():
    """PRIVBANDIT_JIT=always: a one-replicate process runs its kernels compiled from the first call
    (it imports numba, where installed) and gets the same arms and realized spend bit for bit."""
    import os
    import subprocess
    import sys

    code = ("import sys, hashlib, numpy as np\n"
            "from privbandit.engine import simulate\n"
            "from privbandit.envs import Bernoulli\n"
            "from privbandit.policies import DPUCBBound, PrivateUCB\n"
            "h = hashlib.sha256()\n"
            "for p in (DPUCBBound(1.0), PrivateUCB(1.0)):\n"
            "    r = simulate(p, Bernoulli([0.2, 0.8, 0.5]), 300, 1, seed=3, progress=False, keep_arms=True)\n"
            "    h.update(r.arms.tobytes()); h.update(np.nan_to_num(r.realized_epsilon).tobytes())\n"
            "print('numba' in sys.modules, h.hexdigest())\n")
    runs = {}
    for mode in ("", "always"):
        env = dict(os.environ, PRIVBANDIT_JIT=mode)
        env.pop("PRIVBANDIT_NO_JIT", None)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
        runs[mode] = out.stdout.split()
    import importlib.util

    assert runs[""][0] == "False"  # interpreted, as test_a_one_replicate_process_never_imports_numba
    assert runs["always"][0] == str(importlib.util.find_spec("numba") is not None)
    assert runs["always"][1] == runs[""][1]


def test_a_long_one_replicate_process_switches_to_compiled_with_the_same_results():
    """The ski-rental rule (JIT_RENT_CALLS): once a process has made that many interpreted one-row
    calls, it imports numba (where installed) and runs compiled from then on, mid-run, with the arms
    and realized spend of a run that stayed interpreted throughout, bit for bit. (The allowance is
    lowered here so that a 300-round run crosses it; its default is checked to exceed a short run.)"""
    import importlib.util
    import os
    import subprocess
    import sys

    code = ("import sys, hashlib, numpy as np\n"
            "from privbandit.mechanisms import _kernels\n"
            "assert _kernels.JIT_RENT_CALLS >= 100_000\n"
            "_kernels._RENT = int(sys.argv[1])\n"
            "from privbandit.engine import simulate\n"
            "from privbandit.envs import Bernoulli\n"
            "from privbandit.policies import DPUCBBound, PrivateUCB\n"
            "h, loaded = hashlib.sha256(), []\n"
            "for p in (DPUCBBound(1.0), PrivateUCB(1.0)):\n"
            "    r = simulate(p, Bernoulli([0.2, 0.8, 0.5]), 300, 1, seed=3, progress=False, keep_arms=True)\n"
            "    h.update(r.arms.tobytes()); h.update(np.nan_to_num(r.realized_epsilon).tobytes())\n"
            "    loaded.append('numba' in sys.modules)\n"
            "print(*loaded, h.hexdigest())\n")
    env = dict(os.environ, PRIVBANDIT_JIT="")
    env.pop("PRIVBANDIT_NO_JIT", None)
    runs = {rent: subprocess.run([sys.executable, "-c", code, str(rent)], capture_output=True, text=True, check=True,
                                 env=env).stdout.split() for rent in (10**9, 500)}
    assert runs[10**9][:2] == ["False", "False"]  # never switches within the allowance
    compiled = str(importlib.util.find_spec("numba") is not None)
    # ~4 calls a round: the switch happens inside DP-UCB-Bound's run (round ~125 of 300)
    assert runs[500][:2] == [compiled, compiled]
    assert runs[500][2] == runs[10**9][2]


@pytest.mark.parametrize("way", ["py_func", "jit"])
def test_pulled_index_reports_bad_arms_and_values(way):
    pulled_index = getattr(_kernels.pulled_index, way)
    f = np.empty(3, dtype=np.intp)
    assert pulled_index(np.array([0, 2, 1]), np.array([0.0, 1.0, 0.5]), 3, f) == 0
    assert f.tolist() == [0, 5, 7]
    assert pulled_index(np.array([0, 3, 1]), np.array([0.0, 1.0, 0.5]), 3, f) == 1
    assert pulled_index(np.array([0, -1, 1]), np.array([0.0, 1.0, 0.5]), 3, f) == 1
    assert pulled_index(np.array([0, 1, 1]), np.array([0.0, np.nan, 0.5]), 3, f) == 2
    assert pulled_index(np.array([0, 1, 1]), np.array([0.0, 1.0 + 1e-16 * 3, 0.5]), 3, f) == 2


def test_state_pickled_before_the_interleaved_nodes_resumes_identically():
    """Deployments pickle mechanism state; a core pickled with separate exact/noisy node arrays (before
    the nodes were interleaved) must load and continue exactly as the live core does."""
    import copy

    rng = np.random.default_rng(3)
    mech = TreeMechanism(4, 3, epsilon=1.0, horizon=200, rng=rng, ledger=None)
    data = np.random.default_rng(4)
    for _ in range(37):
        mech.insert_pulled(data.integers(0, 3, 4), data.random(4))
    old = copy.deepcopy(mech)
    core = old._core
    state = dict(core.__dict__)
    nodes = state.pop("nodes")
    state.pop("_node_rows")
    state.pop("_all_flat")
    state["exact_nodes"], state["noisy_nodes"] = nodes[..., 0].copy(), nodes[..., 1].copy()
    state["_exact_rows"] = state["exact_nodes"].reshape(-1, core.levels)
    state["_noisy_rows"] = state["noisy_nodes"].reshape(-1, core.levels)
    restored = core.__class__.__new__(core.__class__)
    restored.__setstate__(state)
    old._core = restored
    for _ in range(40):
        arms, vals = data.integers(0, 3, 4), data.random(4)
        mech.insert_pulled(arms, vals)
        old.insert_pulled(arms, vals)
        assert np.array_equal(mech.noisy_sum.view(np.int64), old.noisy_sum.view(np.int64))


def test_a_numba_that_cannot_compile_falls_back_to_the_interpreted_kernel(monkeypatch):
    """A numba version that fails to compile a kernel (typing/lowering errors come from numba's own
    modules) must not fail the run: the kernel falls back to its interpreted function with a
    RuntimeWarning, giving the same results."""
    monkeypatch.setattr(_kernels, "_KERNELS", dict(_kernels._KERNELS))  # the kernels below register there
    kernel = _kernels.Kernel(_kernels.pulled_index.fn)

    class TypingError(Exception):
        pass

    TypingError.__module__ = "numba.core.errors"

    def broken(*args):
        raise TypingError("cannot type this")

    monkeypatch.setattr(_kernels, "_FAILED", False)
    kernel._jit = kernel._first_call(broken)
    f = np.empty(2, dtype=np.intp)
    with pytest.warns(RuntimeWarning, match="interpreted"):
        assert kernel.jit(np.array([1, 0]), np.array([0.5, 0.25]), 3, f) == 0
    assert f.tolist() == [1, 3]
    assert kernel.jit is kernel.py_func

    def failing(*args):
        raise IndexError("a real error")

    other = _kernels.Kernel(_kernels.pulled_index.fn)
    other._jit = other._first_call(failing)
    with pytest.raises(IndexError):
        other.jit(np.array([1, 0]), np.array([0.5, 0.25]), 3, f)


def test_an_unknown_jit_mode_warns_and_means_auto():
    import os
    import subprocess
    import sys

    env = dict(os.environ, PRIVBANDIT_JIT="1")
    out = subprocess.run([sys.executable, "-W", "always", "-c",
                          "from privbandit.mechanisms import _kernels; print(_kernels._LOADED)"],
                         capture_output=True, text=True, check=True, env=env)
    assert "PRIVBANDIT_JIT must be 'always' or 'auto'" in out.stderr and out.stdout.strip() == "False"


def test_floor_log2_is_exact_on_both_sides_of_two_to_the_53():
    """_floor_log2 takes the float exponent below 2^53 (where every integer is a float exactly) and
    integer shifts above; both ways, interpreted and compiled, give bit_length - 1."""
    values = ([1, 2, 3, 4, 7, 8, 9, 2**31, 2**32 - 1, 2**32] + [2**j + d for j in range(40, 63) for d in (-1, 0, 1)]
              + list(range(1, 3000)) + [2**63 - 1])
    for way in ("py_func", "jit"):
        fn = getattr(_kernels._floor_log2, way)
        for v in values:
            assert fn(v) == v.bit_length() - 1, (way, v)
            assert fn(np.int64(v)) == v.bit_length() - 1, (way, v)


def _lockstep_hybrid(replicates, rounds, tight):
    """A hybrid mechanism fed mostly lock-stepped rounds (every stream: one shared footprint per
    binary insert, reported as scalars from hybrid._SHARED_FOOTPRINT_MIN_ROWS streams on), with a
    few masked and one-hot rounds that break the lock-step (per-row footprints, per-row scales)."""
    data = np.random.default_rng(11)
    book = Ledger(replicates, 3, tight=tight, track_replicates=None if tight else 5)
    mech = HybridMechanism(replicates, 3, epsilon=0.5, rng=np.random.default_rng(12), ledger=book)
    outs = []
    for i in range(rounds):
        vals = data.random((replicates, 3))
        if i % 17 == 5:
            mech.insert(vals, data.random((replicates, 3)) < 0.5)
        elif i % 29 == 7:
            mech.insert_pulled(data.integers(0, 3, replicates), vals[:, 0])
        else:
            mech.insert(vals, np.ones((replicates, 3), dtype=bool))
        outs.append(mech.noisy_sum.copy())
    return np.array(outs), book


@pytest.mark.parametrize("tight", [True, False])
def test_hybrid_shared_footprints_are_the_per_row_footprints(monkeypatch, tight):
    """A lock-stepped binary insert reports its one footprint as scalars: the same outputs and the
    same ledger (every release, or the tracked records' realized spend and every draw count) as
    with per-row footprint arrays -- compiled and interpreted."""
    from privbandit.mechanisms import hybrid

    replicates, rounds = 30, 300  # 90 streams >= the scalar threshold; 300 items: blocks up to k = 8
    assert 3 * replicates >= hybrid._SHARED_FOOTPRINT_MIN_ROWS
    runs = [_lockstep_hybrid(replicates, rounds, tight)]
    monkeypatch.setattr(hybrid, "_SHARED_FOOTPRINT_MIN_ROWS", 10**9)  # per-row arrays throughout
    runs.append(_lockstep_hybrid(replicates, rounds, tight))
    if _kernels.COMPILED:
        monkeypatch.setattr(hybrid, "_SHARED_FOOTPRINT_MIN_ROWS", 64)
        monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 10**9)  # interpreted at every size ...
        monkeypatch.setattr(_kernels, "_LOADED", False)  # ... although this process has imported numba
        runs.append(_lockstep_hybrid(replicates, rounds, tight))
    (outs, book), rest = runs[0], runs[1:]
    for other_outs, other in rest:
        assert np.array_equal(outs.view(np.int64), other_outs.view(np.int64))
        if tight:
            a, b = book.releases(), other.releases()
            assert a["lo"].size > 1000 and set(a) == set(b)
            for key in a:
                assert np.array_equal(np.asarray(a[key]), np.asarray(b[key]))
        else:
            assert np.array_equal(book.draws, other.draws)
            assert np.array_equal(book.realized_epsilon(1e-6), other.realized_epsilon(1e-6), equal_nan=True)


@pytest.mark.parametrize("way", ["py_func", "jit"])
def test_prefix_stage_counts_draws_and_stages_the_first_counts(way):
    """One call of the ledger's prefix recorder (Ledger.prefix_recorder): numpy's ``draws += counts >= 1``
    (NaN, infinite, negative and fractional counts included) and the first counts copied."""
    from privbandit.mechanisms._kernels import prefix_stage

    counts = np.array([0.0, 1.0, np.nan, 0.999, 2.0, -1.0, 1.0, np.inf, -np.inf, 1.0 + 2**-52])
    draws = np.arange(counts.size, dtype=np.int64)
    want = draws + (counts >= 1)
    row = np.full(4, -5.0)
    getattr(prefix_stage, way)(counts, draws, row)
    assert np.array_equal(draws, want) and draws.dtype == np.int64
    assert np.array_equal(row, counts[:4], equal_nan=True)
