"""``accountants._validate.whole``: the one check of a whole-number parameter (session 16's review merged five
private copies -- deployment, ledger, mechanisms, adversarial environments, run options -- that session 16's fuzzer
had fixed one by one)."""

import numbers

import numpy as np
import pytest

from accountants import _validate


class _LyingInt(int):
    def __int__(self):  # int() would read this; the check reads the value itself
        return 99

    def __index__(self):
        raise RuntimeError("no index")


class _RegisteredIntegral:
    def __index__(self):
        raise TypeError("not really")


numbers.Integral.register(_RegisteredIntegral)


def test_whole_reads_integer_types_exactly_and_names_the_range():
    assert _validate.whole("n", 5) == 5 and type(_validate.whole("n", np.int64(7))) is int
    assert _validate.whole("n", 2**70, 1) == 2**70
    assert _validate.whole("v", 3, 0, 3) == 3
    assert _validate.whole("n", _LyingInt(3)) == 3  # an int subclass: its own value, not its __int__ / __index__
    for bad, minimum, maximum, match in ((1.0, 0, None, r"n must be a whole number in \[0, inf\), got 1.0"),
                                         (True, 0, None, r"\[0, inf\), got True"), ("3", 0, None, "got '3'"),
                                         (-1, 0, None, r"\[0, inf\), got -1"), (np.int64(-2), 1, None, "got -2"),
                                         (4, 0, 3, r"n must be a whole number in \[0, 3\], got 4"),
                                         (_RegisteredIntegral(), 0, None, r"failed \(TypeError")):
        with pytest.raises(ValueError, match=match):
            _validate.whole("n", bad, minimum, maximum)


def test_the_modules_share_the_one_check():
    from privbandit import ledger, run_options
    from privbandit.deploy import deployment
    from privbandit.envs import adversarial
    from privbandit.mechanisms import _base

    assert {ledger._whole, run_options._whole, deployment._whole, adversarial._whole, _base.whole} == {_validate.whole}
