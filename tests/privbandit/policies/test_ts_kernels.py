"""The Thompson-sampling kernels give the same bits compiled and interpreted, and numpy's results.

privbandit.policies._ts_kernels (the conjugate update) and the fresh-batch append of
privbandit.mechanisms.fresh_batch are one Python source each: numba compiles them when installed,
CPython runs them otherwise (and for one replicate). Each is checked here against the numpy
expression it replaced, both ways, including bad arms; whole runs of the four TS
policies are compared compiled vs interpreted through their ledgers.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.envs import Bernoulli
from privbandit.ledger import Ledger
from privbandit.mechanisms import _kernels
from privbandit.mechanisms._kernels import call_sampler
from privbandit.mechanisms.fresh_batch import FreshBatchMean, fresh_batch_append
from privbandit.policies import GaussianTS, make_policy
from privbandit.policies._ts_kernels import add_pulled, argmax_rows, beta_argmax_rows, numpy_beta, row_argmax

WAYS = ["py_func", "jit"]


@pytest.mark.parametrize("way", WAYS)
def test_add_pulled_is_the_fancy_indexed_update_and_refuses_bad_arms(way):
    rng = np.random.default_rng(1)
    sums, counts = rng.random((50, 4)), rng.integers(0, 9, (50, 4)).astype(float)
    want_s, want_c = sums.copy(), counts.copy()
    kernel = getattr(add_pulled, way)
    for _ in range(20):
        arms, rewards = rng.integers(0, 4, 50), rng.random(50)
        assert kernel(sums, counts, arms, rewards) == 0
        flat = np.arange(50) * 4 + arms
        want_s.ravel()[flat] += rewards
        want_c.ravel()[flat] += 1
    assert np.array_equal(sums, want_s) and np.array_equal(counts, want_c)
    for bad in (4, -1):
        arms = np.zeros(50, dtype=np.int64)
        arms[7] = bad
        assert kernel(sums, counts, arms, np.ones(50)) == 1
        assert np.array_equal(sums, want_s) and np.array_equal(counts, want_c)  # nothing written


def test_gaussian_ts_update_refuses_bad_arms_with_a_valueerror():
    run = GaussianTS().start(3, 2, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="arms must lie in"):
        run.update(1, np.array([0, 3]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="arms must be an integer array"):
        run.update(1, np.array([0.0, 1.0]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="rewards must have shape"):
        run.update(1, np.array([0, 1]), np.array([0.5, 0.5, 0.5]))


def _numpy_append(state, f, v, doubling):
    """The vectorised append the kernel replaced (fresh_batch.py before issue 19's session 5)."""
    open_sum, pending, count, n_batches, target = (a.reshape(-1) for a in state)
    open_sum[f] += v
    p = pending[f] + 1
    pending[f] = p
    count[f] += 1
    full = p == np.left_shift(1, n_batches[f]) if doubling else (target[f] > 0) & (p == target[f])
    return np.flatnonzero(full)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("doubling", [True, False])
def test_fresh_batch_append_is_the_vectorised_append(way, doubling):
    rng = np.random.default_rng(2)
    R, K = 30, 4
    mine = [np.zeros((R, K)), np.zeros((R, K), np.int64), np.zeros((R, K), np.int64),
            rng.integers(0, 4, (R, K)), rng.integers(0, 6, (R, K))]
    ref = [a.copy() for a in mine]
    kernel = getattr(fresh_batch_append, way)
    for _ in range(40):
        mask = rng.random((R, K)) < 0.5
        rr, kk = np.nonzero(mask)
        v = rng.random(rr.size)
        full = np.empty(rr.size, dtype=np.intp)
        n = kernel(*mine, rr, kk, v, doubling, full)
        assert np.array_equal(full[:n], _numpy_append(ref, rr * K + kk, v, doubling))
        for a, b in zip(mine, ref):
            assert np.array_equal(a, b)


def _ts_run(name, replicates):
    """A TS policy's arms and ledger over 300 rounds (exact-mode runs draw through the grid sampler)."""
    policy = GaussianTS(b=2, c=4.0) if name == "gaussian_ts" else (
        make_policy(name, epsilon=1.0, batch_constant=0.05, random_pulls=3) if name == "private_ts"
        else make_policy(name, epsilon=1.0))
    env = Bernoulli([0.7, 0.5, 0.4])
    book = Ledger(replicates, 3, tight=True, capacity=300)
    run = policy.start(3, replicates, 300, np.random.default_rng(5), ledger=book)
    env_run = env.start(replicates, np.random.default_rng(6))
    arms_seen = []
    for t in range(1, 301):
        arms = run.select(t)
        run.update(t, arms, env_run.rewards(t, arms))
        arms_seen.append(arms.copy())
    return np.array(arms_seen), book.releases()


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the interpreted path exists")
@pytest.mark.parametrize("name", ["gaussian_ts", "lazy_dp_ts", "dp_ts", "private_ts"])
def test_ts_policies_run_the_same_compiled_and_interpreted(monkeypatch, name):
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 0)  # compiled even for one row
    compiled = _ts_run(name, 4)
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 10**9)  # interpreted at every size ...
    monkeypatch.setattr(_kernels, "_LOADED", False)  # ... although this process has imported numba
    assert add_pulled.at(4) is add_pulled.py_func
    interpreted = _ts_run(name, 4)
    assert np.array_equal(compiled[0], interpreted[0])
    assert set(compiled[1]) == set(interpreted[1])
    for key in compiled[1]:
        assert np.array_equal(np.asarray(compiled[1][key]), np.asarray(interpreted[1][key]))


def test_fresh_batch_insert_into_every_stream_closes_the_same_batches_as_one_by_one():
    # insert() with an all-True mask (a slice on the fast path) and insert_pulled, column by column,
    # put the same items into the same batches: same releases, same draws
    a = FreshBatchMean(3, 2, epsilon=1.0, rng=np.random.default_rng(3), ledger=None)
    b = FreshBatchMean(3, 2, epsilon=1.0, rng=np.random.default_rng(3), ledger=None)
    data = np.random.default_rng(4).random((9, 3, 2))
    for values in data:
        a.insert(values, np.ones((3, 2), dtype=bool))
        for k in range(2):
            mask = np.zeros((3, 2), dtype=bool)
            mask[:, k] = True
            b.insert(values, mask)
    assert np.array_equal(a.count, b.count) and np.array_equal(a.pending, b.pending)
    assert np.array_equal(a.n_batches, b.n_batches) and np.array_equal(a.batch_size, b.batch_size)


def test_gaussian_posterior_block_size_changes_no_draw():
    # Gaussian TS caps the rounds of normals drawn at once by the array size (cache-sized blocks):
    # the blocks cut one stream of standard normals, so every release is the same whatever the block
    from privbandit.mechanisms.posterior import GaussianPosteriorRelease

    data = np.random.default_rng(9)
    sums, counts = data.random((6, 40, 3)) * 5, data.integers(0, 9, (6, 40, 3)).astype(float)
    outs = []
    for block in (1, 4, 256):
        post = GaussianPosteriorRelease(40, 3, c=2.0, rng=np.random.default_rng(8), ledger=None, block=block)
        outs.append(np.array([post.release(s, c) for s, c in zip(sums, counts)]))
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])


@pytest.mark.parametrize("way", WAYS)
def test_route_pulled_is_the_masked_routing_and_refuses_bad_arms(way):
    from privbandit.policies._ts_kernels import route_pulled

    rng = np.random.default_rng(10)
    R, K = 40, 3
    batch_sum, mask, values = rng.random((R, K)), rng.random((R, K)) < 0.5, rng.random((R, K))
    want_sum = batch_sum.copy()
    kernel = getattr(route_pulled, way)
    for _ in range(10):
        phase = rng.integers(0, 3, R).astype(np.int8)
        gap = phase == 0
        arms, rewards = rng.integers(0, K, R), rng.random(R)
        assert kernel(phase, 0, arms, rewards, batch_sum, mask, values) == np.count_nonzero(~gap)
        want_sum[np.flatnonzero(gap), arms[gap]] += rewards[gap]
        want_mask = np.zeros((R, K), dtype=bool)
        want_mask[np.flatnonzero(~gap), arms[~gap]] = True
        assert np.array_equal(batch_sum, want_sum) and np.array_equal(mask, want_mask)
        assert np.array_equal(values[want_mask], rewards[~gap])  # row-major order = replicate order
    arms[3] = K
    before = batch_sum.copy(), mask.copy()
    assert kernel(phase, 0, arms, rewards, batch_sum, mask, values) == -1
    assert np.array_equal(batch_sum, before[0]) and np.array_equal(mask, before[1])


@pytest.mark.parametrize("way", WAYS)
def test_argmax_rows_is_numpys_argmax_ties_nans_and_infinities_included(way):
    rng = np.random.default_rng(11)
    x = rng.integers(-2, 3, (400, 5)).astype(float)  # many ties: the first maximum wins
    special = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    where = rng.random((400, 5)) < 0.15
    x[where] = rng.choice(special, where.sum())
    x[:5] = [[np.nan] * 5, [-np.inf] * 5, [0.0, -0.0, 0.0, -0.0, 0.0], [1.0, np.nan, 2.0, np.nan, 3.0],
             [-0.0, 0.0, -1.0, -0.0, 0.0]]
    out = np.full(400, -1, dtype=np.intp)
    getattr(argmax_rows, way)(x, out)
    assert np.array_equal(out, x.argmax(axis=1))
    one = np.full(1, -1, dtype=np.intp)  # a single arm and a strided (non-contiguous) view
    getattr(argmax_rows, way)(x[:1, :1], one)
    assert one[0] == 0
    getattr(argmax_rows, way)(x[::3, ::2], out[:134])
    assert np.array_equal(out[:134], x[::3, ::2].argmax(axis=1))
    assert np.array_equal(row_argmax(x), x.argmax(axis=1)) and np.array_equal(row_argmax(x[:1]), [x[0].argmax()])
    big = np.repeat(x, 3, axis=0)  # past ARGMAX_MIN_ROWS: the kernel's way where numba is installed
    assert np.array_equal(row_argmax(big), big.argmax(axis=1))


@pytest.mark.parametrize("way", WAYS)
def test_beta_parameters_are_numpys_masked_clip(way):
    from privbandit.policies._ts_kernels import beta_parameters

    rng = np.random.default_rng(12)
    R, K = 60, 4
    phase = rng.integers(0, 3, R).astype(np.int8)
    count = rng.integers(0, 50, (R, K))
    noisy = rng.normal(count * 0.5, 20.0)
    noisy[0, :] = [-0.0, 0.0, np.inf, -np.inf]
    noisy[1, :] = [np.nan, 1e300, -1e300, 0.5]
    phase[:2] = 2
    a, b = np.full((R, K), -1.0), np.full((R, K), -1.0)
    n = getattr(beta_parameters, way)(phase, 2, count, noisy, a, b)
    ts = phase == 2
    nn = count[ts].astype(float)  # the numpy path before the kernel (private_ts.py, session 5)
    r = np.maximum(noisy[ts], 0.0)
    np.minimum(r, nn, out=r)
    assert n == ts.sum()
    assert np.array_equal(a[:n], r + 1.0, equal_nan=True) and np.array_equal(b[:n], nn - r + 1.0, equal_nan=True)
    assert (a[n:] == -1.0).all() and (b[n:] == -1.0).all()  # rows past the count untouched


@pytest.mark.parametrize("way", WAYS)
def test_private_ts_arms_are_the_best_arm_or_the_round_robin(way):
    from privbandit.policies._ts_kernels import private_ts_arms

    rng = np.random.default_rng(13)
    R, K, t = 50, 5, 97
    phase = rng.integers(0, 3, R).astype(np.int8)
    start = rng.integers(0, t, R)
    best = rng.integers(0, K, int((phase == 2).sum()))
    arms = np.full(R, -1, dtype=np.intp)
    getattr(private_ts_arms, way)(phase, start, t, K, 2, best, arms)
    want = (t - 1 - start) % K
    want[phase == 2] = best
    assert np.array_equal(arms, want)


@pytest.mark.parametrize("way", WAYS)
def test_phase_ends_lists_the_clocks_that_ran_out_in_row_order(way):
    from privbandit.policies._ts_kernels import phase_ends

    rng = np.random.default_rng(14)
    R, K, t = 80, 3, 60
    phase = rng.integers(0, 3, R).astype(np.int8)
    m, n_random = rng.integers(1, 8, R), rng.integers(0, 8, R)
    # about half the clocks exactly at their end
    start = np.where(rng.random(R) < 0.5, t - K * np.where(phase == 0, m, n_random), rng.integers(0, t, R))
    closing, done = np.full(R, -1, dtype=np.intp), np.full(R, -1, dtype=np.intp)
    n_close, n_done = getattr(phase_ends, way)(phase, start, m, n_random, t, K, 0, 1, closing, done)
    played = t - start
    assert np.array_equal(closing[:n_close], np.nonzero((phase == 0) & (played == K * m))[0])
    assert np.array_equal(done[:n_done], np.nonzero((phase == 1) & (played == K * n_random))[0])
    assert n_close > 0 and n_done > 0


@pytest.mark.parametrize("way", WAYS)
def test_pts_route_round_is_route_pulled_then_phase_ends(way):
    from privbandit.policies._ts_kernels import phase_ends, pts_route_round, route_pulled

    rng = np.random.default_rng(15)
    R, K, t = 60, 3, 45
    phase = rng.integers(0, 3, R).astype(np.int8)
    m, n_random = rng.integers(1, 8, R), rng.integers(0, 8, R)
    start = np.where(rng.random(R) < 0.5, t - K * np.where(phase == 0, m, n_random), rng.integers(0, t, R))
    arms, rewards = rng.integers(0, K, R), rng.random(R)
    states = [(rng.random((R, K)), np.zeros((R, K), dtype=bool), np.zeros((R, K)), np.full(R, -1, dtype=np.intp),
               np.full(R, -1, dtype=np.intp)) for _ in range(2)]
    states[1] = tuple(a.copy() for a in states[0])
    got = getattr(pts_route_round, way)(phase, start, m, n_random, t, K, 0, 1, arms, rewards, *states[0])
    s = states[1]
    n = route_pulled.py_func(phase, 0, arms, rewards, s[0], s[1], s[2])
    want = (n, *phase_ends.py_func(phase, start, m, n_random, t, K, 0, 1, s[3], s[4]))
    assert tuple(got) == want and want[1] > 0 and want[2] > 0
    for a, b in zip(states[0], states[1]):
        assert np.array_equal(a, b)
    arms[5] = K  # a bad arm: refused, nothing written
    before = tuple(a.copy() for a in states[0])
    assert tuple(getattr(pts_route_round, way)(phase, start, m, n_random, t, K, 0, 1, arms, rewards,
                                               *states[0])) == (-1, 0, 0)
    for a, b in zip(states[0], before):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("shape", [(1, 5), (4, 1), (100, 5), (7, 9)])
def test_beta_argmax_rows_draws_generator_betas_values_and_stream(way, shape):
    # numpy's own random_beta on the Generator's bit generator: the values Generator.beta draws, in
    # its (row-major) order, the same stream afterwards, and numpy's arg max -- on both of numpy's
    # branches (a, b <= 1: Johnk; otherwise gamma ratios) and Beta(a, 1) (DP-TS's clipped means)
    beta = numpy_beta()
    if beta is None and not np.__version__.startswith("2.4."):
        pytest.skip(f"numpy {np.__version__} does not export random_beta as 2.4 does (beta_argmax keeps rng.beta)")
    assert beta is not None  # numpy 2.4 (the golden digests' numpy) exports it
    data = np.random.default_rng(4)
    a = np.where(data.random(shape) < 0.3, data.random(shape), 1.0 + data.random(shape) * 500)
    b = np.where(data.random(shape) < 0.4, 1.0, 0.2 + data.random(shape) * 50)
    mine, ref = np.random.default_rng(7), np.random.default_rng(7)
    kernel = getattr(beta_argmax_rows, way)
    theta, out = np.empty(shape), np.empty(shape[0], dtype=np.intp)
    for _ in range(5):
        assert kernel(_kernels.sampler_address(beta), mine.bit_generator.ctypes.bit_generator.value, a, b, theta,
                      out) == 0
        want = ref.beta(a, b)
        assert np.array_equal(theta, want) and np.array_equal(out, want.argmax(axis=1))
    assert mine.bit_generator.state == ref.bit_generator.state
    # a parameter Generator.beta refuses: nothing drawn, the caller lets numpy raise
    a[-1, -1] = 0.0
    assert kernel(_kernels.sampler_address(beta), mine.bit_generator.ctypes.bit_generator.value, a, b, theta,
                  out) == 1
    assert mine.bit_generator.state == ref.bit_generator.state


@_kernels.kernel
def _test_draw_betas(fn, state, a, b, out):
    for i in range(a.size):
        out[i] = call_sampler(fn, state, a[i], b[i])


@pytest.mark.parametrize("way", WAYS)
def test_call_sampler_is_one_draw_of_numpys_c_sampler_at_an_integer_address(way):
    # the kernels' route to numpy's exported samplers: the C function at an integer address (compiled:
    # an indirect call; interpreted: its ctypes function), one draw of Generator.beta's own code per
    # call, the stream advanced as Generator.beta advances it; the address is stable per function
    beta = numpy_beta()
    if beta is None:
        pytest.skip(f"numpy {np.__version__} does not export random_beta")
    address = _kernels.sampler_address(beta)
    assert isinstance(address, int) and address == _kernels.sampler_address(beta)

    data = np.random.default_rng(11)
    a, b = 0.2 + data.random(300) * 40, np.where(data.random(300) < 0.5, 0.3, 1.0 + data.random(300) * 9)
    mine, ref = np.random.default_rng(21), np.random.default_rng(21)
    out = np.empty(300)
    getattr(_test_draw_betas, way)(address, mine.bit_generator.ctypes.bit_generator.value, a, b, out)
    assert np.array_equal(out, ref.beta(a, b))
    assert mine.bit_generator.state == ref.bit_generator.state


def test_beta_argmax_keeps_generator_betas_stream_errors_and_subclasses():
    from privbandit.policies.hu_hegde import beta_argmax

    data = np.random.default_rng(5)
    a, b = 1.0 + data.random((60, 5)) * 30, 1.0 + data.random((60, 5)) * 30
    mine, ref = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(10):
        assert np.array_equal(beta_argmax(mine, a, b), ref.beta(a, b).argmax(axis=1))
    assert mine.bit_generator.state == ref.bit_generator.state
    with pytest.raises(ValueError, match="a <= 0"):  # numpy's own refusal, nothing drawn before it
        beta_argmax(mine, np.where(np.arange(300).reshape(60, 5) == 7, -1.0, a), b)
    assert mine.bit_generator.state == ref.bit_generator.state

    class Counting(np.random.Generator):  # a subclass overriding beta is drawn through its beta
        calls = 0

        def beta(self, a, b, size=None):
            Counting.calls += 1
            return super().beta(a, b, size)

    sub = Counting(np.random.PCG64(3))
    sub.bit_generator.state = ref.bit_generator.state
    assert np.array_equal(beta_argmax(sub, a, b), ref.beta(a, b).argmax(axis=1)) and Counting.calls == 1
