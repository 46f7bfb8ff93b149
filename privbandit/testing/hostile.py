"""Numbers that are not plain, for the hostile-input fuzzer (bench/fuzz_inputs.py --only types) and its tests
(tests/privbandit/test_hostile_inputs_16.py; session 16, s16/fuzz).

Each looks like a number to an ``isinstance`` check -- a float or int subclass, or a class registered as a
``numbers.Real`` -- while its conversion raises, lies or returns text. A validator must read such a value by
converting it first (``accountants._validate``: ``float()`` guarded, whole numbers by ``operator.index``,
which reads an int subclass's own value) and check what it converted, never check the object and convert
afterwards. Importing this module registers :class:`FakeReal` as a ``numbers.Real``.
"""

from __future__ import annotations

import math
import numbers


class NanFloat(float):
    """Holds its value (comparisons see it) but ``float()`` of it is nan."""

    def __float__(self):
        return math.nan


class RaisingFloat(float):
    def __float__(self):
        raise RuntimeError("lying __float__")


class TextFloat(float):
    def __float__(self):  # (Python refuses the result: "__float__ returned non-float")
        return "0.5"


class RaisingInt(int):
    """Holds its value; ``int()`` and ``__index__`` raise."""

    def __index__(self):
        raise RuntimeError("lying __index__")

    __int__ = __index__


class HugeInt(int):
    """Holds its value; ``int()`` of it is 10**400."""

    def __index__(self):
        return 10**400

    __int__ = __index__


class FakeReal:
    """Registered as a ``numbers.Real``; ``float()`` returns ``out``, or raises it when it is an exception."""

    def __init__(self, out):
        self.out = out

    def __float__(self):
        if isinstance(self.out, BaseException):
            raise self.out
        return self.out

    def __repr__(self):
        return f"<FakeReal {self.out!r}>"


numbers.Real.register(FakeReal)


class LyingLen(list):
    """A list whose ``len()`` says a million."""

    def __len__(self):
        return 10**6
