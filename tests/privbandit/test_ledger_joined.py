"""The drain's byte join (session 17, issue 19's one replicate): ``ledger._joined`` against numpy's
concatenate with the unsafe cast it replaces, and a one-replicate drain that no longer concatenates
its ``_STAGE_ROUNDS`` one-element arrays (three concatenations of 256 arrays a drain before)."""

import numpy as np
import pytest

import privbandit.ledger as ledger_mod
from privbandit.ledger import _STAGE_ROUNDS, Ledger, _joined
from privbandit.mechanisms.tree import TreeMechanism


def _reference(arrays, dtype):
    return np.concatenate(arrays, dtype=dtype, casting="unsafe").reshape(-1)


def _cases():
    rng = np.random.default_rng(17)
    ints = tuple(rng.integers(-2**62, 2**62, size=1) for _ in range(_STAGE_ROUNDS))
    strided = np.arange(40, dtype=np.int64)[::3]
    read_only = np.arange(5, dtype=np.int64)
    read_only.flags.writeable = False
    floats = rng.normal(size=(6, 4)) * 1e3
    return [
        ("one-element int64 (a drain at R = 1)", ints, np.int64),
        ("rows of several replicates", tuple(rng.integers(0, 9, size=7) for _ in range(20)), np.int64),
        ("float rows", tuple(floats), float),
        ("int32 cast to int64", (np.arange(3, dtype=np.int32), np.arange(4, dtype=np.int64)), np.int64),
        ("floats truncated to int64", (np.array([1.5, -2.7, 3e9]),), np.int64),
        ("ints to float", (np.array([2**53 + 1], dtype=np.int64), np.array([3], dtype=np.int64)), float),
        ("a strided view", (strided, np.arange(2, dtype=np.int64)), np.int64),
        ("read-only arrays", (read_only, read_only), np.int64),
        ("empty arrays", (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)), np.int64),
        ("2-D rows", (np.arange(6, dtype=np.int64).reshape(2, 3), np.arange(3, dtype=np.int64).reshape(1, 3)), np.int64),
        ("big-endian", (np.arange(3, dtype=">i8"),), np.int64),
    ]


@pytest.mark.parametrize("name,arrays,dtype", _cases(), ids=[c[0] for c in _cases()])
def test_joined_is_concatenate_bit_for_bit(name, arrays, dtype):
    got, want = _joined(arrays, dtype), _reference(arrays, dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    # fresh and writable: the drain adds the replicates' offsets to the joined rows in place
    assert got.flags.writeable
    assert not any(np.shares_memory(got, a) for a in arrays)


def test_one_replicate_drain_concatenates_no_staged_arrays(monkeypatch):
    """A one-replicate tree's drain gathers its 256 staged rows, footprint starts and ends without
    numpy's concatenate (its cost per array was most of a drain), and folds in the same state."""
    def run(joined: bool):
        if not joined:
            monkeypatch.setattr(ledger_mod, "_joined", _reference)
        book = Ledger(1, 5, capacity=4 * _STAGE_ROUNDS)
        tree = TreeMechanism(1, 5, epsilon=1.0, horizon=4 * _STAGE_ROUNDS, rng=np.random.default_rng(3), ledger=book)
        rng = np.random.default_rng(4)
        for _ in range(_STAGE_ROUNDS - 1):
            tree.insert_pulled(rng.integers(0, 5, size=1), rng.random(1))
        calls = []
        concatenate = np.concatenate

        def counting(arrays, *args, **kwargs):
            calls.append(len(arrays))
            return concatenate(arrays, *args, **kwargs)

        monkeypatch.setattr(np, "concatenate", counting)
        tree.insert_pulled(rng.integers(0, 5, size=1), rng.random(1))  # the 256th release: a drain
        monkeypatch.setattr(np, "concatenate", concatenate)
        monkeypatch.setattr(ledger_mod, "_joined", _joined)
        assert not book._pulled  # the drain ran
        state = (book._draws.copy(), {k: v.copy() for k, v in book._diff.items()}, book.realized_epsilon(1e-6))
        return calls, state

    calls, state = run(joined=True)
    assert max(calls, default=0) < _STAGE_ROUNDS, calls
    _, reference = run(joined=False)
    assert state[0].tobytes() == reference[0].tobytes()
    assert state[1].keys() == reference[1].keys()
    for stat in state[1]:
        assert state[1][stat].tobytes() == reference[1][stat].tobytes()
    assert state[2].tobytes() == reference[2].tobytes()
