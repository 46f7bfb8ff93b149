"""Kernels find each other by bare function name (``_kernels._rebind``): a second kernel of the same
name from another module would silently replace the first in every kernel calling it. Registration
refuses that collision (session 7)."""

import importlib

import pytest

from privbandit.mechanisms import _kernels


def test_every_kernel_module_imports_without_a_name_collision():
    for module in ("privbandit.mechanisms._kernels", "privbandit.mechanisms._split_kernels",
                   "privbandit.policies._hh_kernels", "privbandit.policies._ts_kernels"):
        importlib.import_module(module)
    names = {(k.fn.__module__, k.fn.__qualname__) for k in _kernels._KERNELS.values()}
    assert len(names) == len(_kernels._KERNELS)


def test_a_second_kernel_of_a_taken_name_is_refused():
    taken = next(iter(_kernels._KERNELS))
    before = dict(_kernels._KERNELS)
    impostor = type(lambda: 0)(compile("def f(): return 0", "<test>", "exec").co_consts[0], {}, taken)
    impostor.__module__ = "tests.impostor"
    with pytest.raises(RuntimeError, match=f"kernel name '{taken}' is taken"):
        _kernels.kernel(impostor)
    assert _kernels._KERNELS == before  # nothing replaced
