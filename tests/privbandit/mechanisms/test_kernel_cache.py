"""numba's disk cache of a kernel must miss when a kernel it calls has changed.

numba keys a cached function on its own file and bytecode only; a compiled kernel holds the code of
the kernels it calls, so an edited callee in another module left the caller's stale machine code in
use (privbandit.mechanisms._kernels._key_cache_on_callees)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from privbandit.mechanisms import _kernels

ROOT = Path(__file__).resolve().parents[3]

CALLEE = """
from privbandit.mechanisms._kernels import kernel

@kernel
def cachetest_scale(x):
    return x * {factor}
"""

CALLER = """
from privbandit.mechanisms._kernels import kernel
from cachetest_callee import cachetest_scale

@kernel
def cachetest_caller(x):
    return cachetest_scale(x) + 1.0
"""


def _run(tmp_path: Path, code: str, **env) -> str:
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]), **env)
    environ.pop("PRIVBANDIT_NO_JIT", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=environ, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed (or disabled)")
def test_an_edited_callee_recompiles_its_callers(tmp_path):
    (tmp_path / "cachetest_caller.py").write_text(CALLER)
    call = "from cachetest_caller import cachetest_caller as k; print(k.compiled(1.0), k.py_func(1.0))"
    (tmp_path / "cachetest_callee.py").write_text(CALLEE.format(factor="2.0"))
    assert _run(tmp_path, call) == "3.0 3.0"  # compiled and written to the disk cache
    assert list((tmp_path / "__pycache__").glob("cachetest_caller*.nbi"))
    (tmp_path / "cachetest_callee.py").write_text(CALLEE.format(factor="3.0"))
    # before the fix: "3.0 4.0" -- the caller's cached machine code still computed 2 x + 1
    assert _run(tmp_path, call) == "4.0 4.0"


def test_the_callee_digest_is_the_same_in_every_process(tmp_path):
    # a digest that varied between processes (string hash seed, marshal's reference flags) would
    # make every process miss the disk cache and compile again
    code = textwrap.dedent("""
        import privbandit.policies, privbandit.mechanisms
        from privbandit.mechanisms._kernels import _KERNELS
        print(sorted((n, k.source_digest()) for n, k in _KERNELS.items()))
    """)
    first = _run(tmp_path, code, PYTHONHASHSEED="1")
    assert first.count("(") > 20  # the package's kernels were all digested
    assert _run(tmp_path, code, PYTHONHASHSEED="2") == first


def test_the_digest_follows_callees_of_callees():
    ns: dict = {}
    try:
        def define(name, body):
            exec(f"def {name}(x):\n    return {body}\n", ns)
            ns[name] = _kernels.Kernel(ns[name])

        define("digesttest_leaf", "x * 2.0")
        define("digesttest_middle", "digesttest_leaf(x) - 1.0")
        define("digesttest_top", "digesttest_middle(x) + 1.0")
        before = ns["digesttest_top"].source_digest()
        assert ns["digesttest_top"].source_digest() == before
        define("digesttest_leaf", "x * 3.0")  # two calls away
        assert ns["digesttest_top"].source_digest() != before
        define("digesttest_leaf", "x * 2.0")
        assert ns["digesttest_top"].source_digest() == before
    finally:
        for name in ("digesttest_leaf", "digesttest_middle", "digesttest_top"):
            _kernels._KERNELS.pop(name, None)


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed (or disabled)")
def test_a_digest_that_cannot_be_computed_turns_the_disk_cache_off(monkeypatch):
    from numba.core.caching import NullCache

    class Disp:  # a dispatcher as numba makes it with cache=True
        def __init__(self):
            from numba.core.caching import FunctionCache

            self._cache = FunctionCache(_kernels.call_sampler.fn)

    kernel = next(iter(_kernels._KERNELS.values()))
    monkeypatch.setattr(type(kernel), "source_digest", lambda self: (_ for _ in ()).throw(OSError("unreadable")))
    disp = Disp()
    _kernels._key_cache_on_callees(disp, kernel)
    assert isinstance(disp._cache, NullCache)  # compiled fresh in this process, never loaded stale



NOWHERE_TO_CACHE = """
import numba.core.caching
numba.core.caching.CacheImpl._locator_classes = []  # no writable place for numba's disk cache
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import REGISTRY
import privbandit.mechanisms._kernels as k
# Beta-TS: numpy's Beta sampler called from a kernel (privbandit.mechanisms._native), then the arg max
res = simulate(REGISTRY["beta_ts"](), Bernoulli([0.7, 0.5, 0.2]), 30, 3, seed=5, keep_arms=True, progress=False)
print(res.arms.tolist())
print(k._FAILED)
print(" ".join(n for n, d in sorted(k._KERNELS.items()) if d._dispatcher is not None))
"""


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed (or disabled)")
def test_kernels_compile_in_process_where_numba_has_nowhere_to_cache(tmp_path):
    # numba raises RuntimeError ("no locator available") when a cache=True kernel is declared and no
    # cache directory is writable (read-only install, no writable user cache, zipped package): that
    # error escaped from the first compiled call and ended the run with a traceback
    def run(**env):
        environ = dict(os.environ, PYTHONPATH=str(ROOT), **env)
        out = subprocess.run([sys.executable, "-c", NOWHERE_TO_CACHE], cwd=tmp_path, env=environ,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    arms, failed, kernels = (run(PRIVBANDIT_JIT="always", PRIVBANDIT_NO_JIT="0") + "\n").split("\n")[:3]
    assert failed == "False" and {"beta_argmax_rows", "call_sampler"} <= set(kernels.split())  # compiled
    assert (run(PRIVBANDIT_NO_JIT="1") + "\n").split("\n")[:3] == [arms, "False", ""]  # interpreted: the same arms
