"""The ledger's footprint pool (privbandit.ledger._FootprintPool, session 14): arrays lent to the
mechanisms for the footprints they report, staged uncopied until the next drain and lent again only
after the drain that follows it.

* A loan is an array owning its memory, staged by ``_store`` as it is (no copy, no per-call array).
* No array is lent twice before the drain after next (a mechanism whose insert spans one drain keeps
  what it borrowed); past a block's arrays, or at another length, a loan is a fresh array.
* A report borrowed before a drain and staged after it, followed by a whole block of other loans,
  records what a ledger fed fresh copies records, bit for bit.
* Whole simulations with the pool and without it: the same arms and ledger, bit for bit.
* Not pickled; none for ledgers that record nothing, one replicate, or more than the cap.
"""

import pickle

import numpy as np
import pytest

import privbandit.ledger as ledger_mod
from privbandit.engine import simulate
from privbandit.envs import Bernoulli
from privbandit.ledger import Ledger, pulled_layout
from privbandit.policies import REGISTRY

R, K = 16, 3


def _state(led: Ledger) -> dict:
    led._settle()
    return dict(draws=led._draws.tobytes(), marked=led._marked.tobytes(), top=led._top,
                diff={k: v.tobytes() for k, v in led._diff.items()}, eps=led.realized_epsilon(1e-6).tobytes())


def _report(led: Ledger, st, lo, hi, scale) -> None:
    led._record_from_mechanism(pulled_layout(R), st, lo, hi, scale, 1.0, "m", None)


def test_loans_own_their_memory_and_are_staged_uncopied():
    led = Ledger(R, K)
    pool = led._pool
    st, lo, hi, scale = pool.int64(R), pool.int64(R), pool.int64(R), pool.float64(R)
    assert all(a.base is None and a.flags.writeable for a in (st, lo, hi, scale))
    st[:] = np.arange(R) % K
    lo[:] = 0
    hi[:] = 1
    scale[:] = 2.0
    _report(led, st, lo, hi, scale)
    staged = led._pulled[-1]
    assert staged[2] is st and staged[3] is lo and staged[4] is hi and staged[5] is scale
    assert led.draws.sum() == R


def test_no_array_lent_twice_before_the_drain_after_next():
    led = Ledger(R, K)
    pool = led._pool
    first = [pool.int64(R) for _ in range(ledger_mod._POOL_INTS)]
    first_f = [pool.float64(R) for _ in range(ledger_mod._POOL_FLOATS)]
    assert len({id(a) for a in first}) == len(first)
    # past the block's arrays, and at another length: fresh arrays
    extra = [pool.int64(R), pool.float64(R), pool.int64(R + 1), pool.float64(3)]
    assert not any(x is a for x in extra for a in first + first_f)
    assert extra[2].shape == (R + 1,) and extra[3].shape == (3,)
    led._drain()  # the block lent above may still be staged by an insert spanning this drain
    second = [pool.int64(R) for _ in range(ledger_mod._POOL_INTS)] + [pool.float64(R)]
    assert not any(x is a for x in second for a in first + first_f)
    led._drain()  # what the first block's borrowers staged was folded in by now
    assert pool.int64(R) is first[0] and pool.float64(R) is first_f[0]


def test_a_drain_without_loans_keeps_the_active_block():
    led = Ledger(R, K)
    pool = led._pool
    a = pool.int64(R)
    led._drain()
    led._drain()  # nothing lent since the last one: no flip (the first block stays inactive)
    b = pool.int64(R)
    assert b is not a
    led._drain()
    assert pool.int64(R) is a


def test_a_report_borrowed_before_a_drain_and_staged_after_it():
    """A mechanism borrows its footprint arrays, 256 other reports force a drain, then it writes and
    reports them, and a whole block of other borrowers follows before the next drain: the ledger holds
    exactly what a ledger fed fresh copies of every report holds."""
    rng = np.random.default_rng(0)
    led, ref = Ledger(R, K), Ledger(R, K)
    pool = led._pool
    pos = np.zeros((R, K), dtype=np.int64)

    def next_report(st_out, lo_out, hi_out):
        st_out[:] = rng.integers(0, K, R)
        lo_out[:] = pos[np.arange(R), st_out]
        hi_out[:] = lo_out + 1 + rng.integers(0, 3, R)
        pos[np.arange(R), st_out] = hi_out
        return float(rng.choice([1.0, 2.0, 4.0]))

    def both(st, lo, hi, scale):
        _report(ref, st.copy(), lo.copy(), hi.copy(), scale)
        _report(led, st, lo, hi, scale)

    held = pool.int64(R), pool.int64(R), pool.int64(R)  # borrowed, not yet written
    held_pos = pos.copy()
    for _ in range(ledger_mod._STAGE_ROUNDS):
        st, lo, hi = pool.int64(R), pool.int64(R), pool.int64(R)
        both(st, lo, hi, next_report(st, lo, hi))
    assert not led._pulled  # drained
    saved, pos[:] = pos.copy(), held_pos
    scale = next_report(*held)
    pos[:] = np.maximum(pos, saved)
    both(*held, scale)
    for _ in range(ledger_mod._STAGE_ROUNDS - 2):  # a whole block of loans, short of the next drain
        st, lo, hi = pool.int64(R), pool.int64(R), pool.int64(R)
        both(st, lo, hi, next_report(st, lo, hi))
    assert len(led._pulled) == ledger_mod._STAGE_ROUNDS - 1
    a, b = _state(led), _state(ref)
    assert a == b


@pytest.mark.parametrize("name", ["dp_ts", "dp_ucb_bound", "private_ucb", "dp_ucb_int", "lazy_dp_ts"])
def test_simulations_with_and_without_the_pool(name, monkeypatch):
    """The policies whose mechanisms borrow (tree, hybrid, split, logarithmic inserts of pulled arms)."""
    books = []
    init = Ledger.__init__

    def hook(self, *args, **kwargs):
        init(self, *args, **kwargs)
        books.append(self)

    monkeypatch.setattr(Ledger, "__init__", hook)

    def run():
        books.clear()
        res = simulate(REGISTRY[name](), Bernoulli([0.7, 0.5, 0.4, 0.3]), 1200, R, seed=3, keep_arms=True,
                       progress=False)
        return res.arms.tobytes(), res.realized_epsilon.tobytes(), [_state(b) for b in books if b._recording]

    pooled = run()
    assert any(b._pool is not None and (b._pool._ints or b._pool._other[0]) for b in books if b._recording)
    monkeypatch.setattr(ledger_mod, "_POOL_MIN_REPLICATES", 10 ** 9)  # no pool: fresh arrays, as before
    fresh = run()
    assert all(b._pool is None for b in books)
    assert pooled == fresh


def test_the_pool_is_not_state():
    led = Ledger(R, K)
    st, lo, hi = (led._pool.int64(R) for _ in range(3))
    st[:], lo[:], hi[:] = np.arange(R) % K, 0, 2
    _report(led, st, lo, hi, 1.0)
    assert "_pool" not in led.__getstate__()
    back = pickle.loads(pickle.dumps(led))
    assert back._pool is not None and back._pool is not led._pool and not back._pool._ints
    assert _state(back) == _state(led)


@pytest.mark.parametrize("replicates, pooled", [(1, False), (ledger_mod._POOL_MIN_REPLICATES - 1, False),
                                                (ledger_mod._POOL_MIN_REPLICATES, True),
                                                (ledger_mod._POOL_MAX_REPLICATES, True),
                                                (ledger_mod._POOL_MAX_REPLICATES + 1, False)])
def test_which_ledgers_keep_a_pool(replicates, pooled):
    assert (Ledger(replicates, 2)._pool is not None) == pooled
    assert Ledger.unrecorded(replicates, 2)._pool is None  # nothing staged: fresh arrays are freed at once
