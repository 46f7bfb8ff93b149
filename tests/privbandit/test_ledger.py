"""Ledger: footprints, per-record composition, memory guard, tight mode, validation."""

import math

import numpy as np
import pytest

from accountants import gdp_conversion
from accountants.best import best_epsilon
from accountants.events import Gaussian, Laplace
from privbandit.ledger import Ledger


def test_disjoint_footprints_compose_in_parallel():
    led = Ledger(1, 1)
    led.record_laplace(0, 0, [0, 5], [5, 10], 2.0, 1.0, mechanism="m")
    assert led.realized_pure_epsilon()[0] == pytest.approx(0.5)
    assert led.draws[0, 0] == 2


def test_overlapping_footprints_add_up_for_the_shared_records():
    led = Ledger(2, 2)
    # replicate 0 stream 1: [0, 4) eps 1, [2, 6) eps 0.5, [3, 4) eps 0.25 -> record 3 has 1.75
    led.record_laplace(0, 1, [0, 2, 3], [4, 6, 4], [1.0, 2.0, 4.0], 1.0, mechanism="m")
    # other streams / replicates are independent
    led.record_laplace(1, 0, 0, 3, 1.0, 3.0, mechanism="m")
    eps = led.realized_pure_epsilon()
    assert eps[0] == pytest.approx(1.75)
    assert eps[1] == pytest.approx(3.0)
    mu = led.realized_mu()
    expected = math.sqrt(sum(gdp_conversion.mu_from_pure_epsilon(e) ** 2 for e in (1.0, 0.5, 0.25)))
    assert mu[0] == pytest.approx(expected)
    assert led.draws.tolist() == [[0, 3], [1, 0]]


def test_gaussian_makes_pure_epsilon_infinite_and_adds_mu_squared():
    led = Ledger(1, 1)
    led.record_gaussian(0, 0, 0, 3, 2.0, 1.0, mechanism="g")
    led.record_gaussian(0, 0, 1, 2, 1.0, 1.0, mechanism="g")
    assert led.realized_pure_epsilon()[0] == math.inf
    assert led.realized_mu()[0] == pytest.approx(math.sqrt(0.25 + 1.0))
    eps = led.realized_epsilon(1e-5)[0]
    assert eps == pytest.approx(gdp_conversion.epsilon_for_delta(math.sqrt(1.25), 1e-5), rel=1e-9)


def test_capacity_grows_by_doubling_and_keeps_earlier_sums():
    led = Ledger(1, 1)
    led.record_laplace(0, 0, 0, 64, 1.0, 1.0, mechanism="m")  # ends exactly at the capacity
    led.record_laplace(0, 0, 60, 1000, 1.0, 1.0, mechanism="m")
    assert led.capacity >= 1000 and led.capacity & (led.capacity - 1) == 0
    assert led.realized_pure_epsilon()[0] == pytest.approx(2.0)
    led.record_laplace(0, 0, 64, 65, 1.0, 1.0, mechanism="m")
    assert led.realized_pure_epsilon()[0] == pytest.approx(2.0)  # record 64: [60,1000) + [64,65)


def test_realized_epsilon_is_min_of_pure_kov_and_gdp_per_record():
    led = Ledger(1, 2)
    eps_i = 0.1
    led.record_laplace(0, 0, 0, 1, np.full(200, 1 / eps_i), 1.0, mechanism="m")
    delta = 1e-6
    q, s = 200 * eps_i ** 2, 200 * eps_i * math.tanh(eps_i / 2)
    kov = min(200 * eps_i, s + math.sqrt(2 * q * math.log(math.e + math.sqrt(q) / delta)),
              s + math.sqrt(2 * q * math.log(1 / delta)))
    gdp = gdp_conversion.epsilon_for_delta(math.sqrt(200) * gdp_conversion.mu_from_pure_epsilon(eps_i), delta)
    assert led.realized_epsilon(delta)[0] == pytest.approx(min(kov, gdp), rel=1e-9)
    # a second stream with one big release: the worst record is whichever certifies more
    led.record_laplace(0, 1, 0, 1, 1 / 3.0, 1.0, mechanism="m")
    assert led.realized_epsilon(delta)[0] == pytest.approx(max(min(kov, gdp), 3.0), rel=1e-9)


def test_realized_epsilon_worst_record_mixes_pareto_front():
    """Record A: many small Laplace (closed form small, mu moderate); record B: one Gaussian."""
    led = Ledger(1, 1)
    led.record_laplace(0, 0, 0, 1, np.full(50, 20.0), 1.0, mechanism="m")
    led.record_gaussian(0, 0, 1, 2, 0.8, 1.0, mechanism="g")
    delta = 1e-5
    a = best_epsilon(Laplace(20.0) * 50, delta, accountants=_cheap_accountants()).value
    b = gdp_conversion.epsilon_for_delta(1.25, delta)
    assert led.realized_epsilon(delta)[0] >= max(min(a, 50 / 20), b) * (1 - 1e-9)
    assert led.realized_epsilon(delta)[0] <= max(50 / 20, b) * (1 + 1e-9)


def _cheap_accountants():
    from accountants.gdp import GDPAccountant
    from accountants.pure import PureAccountant

    return [PureAccountant, GDPAccountant]


def test_memory_guard_tracks_first_replicates_only():
    from privbandit.ledger import _N_STATS

    per_rep = 3 * (64 + 1) * _N_STATS * 8
    led = Ledger(10, 3, max_tracked_bytes=4 * per_rep)
    assert led.tracked_replicates.tolist() == [0, 1, 2, 3]
    led.record_laplace(np.arange(10), 0, 0, 5, 1.0, 1.0, mechanism="m")
    eps = led.realized_pure_epsilon()
    assert np.all(eps[:4] == 1.0) and np.all(np.isnan(eps[4:]))
    assert led.draws[:, 0].tolist() == [1] * 10  # draws are kept for every replicate
    led.record_laplace(0, 0, 0, 200, 1.0, 1.0, mechanism="m")  # growth: fewer replicates fit
    assert len(led.tracked_replicates) == 1
    eps = led.realized_pure_epsilon()
    assert eps[0] == 2.0 and np.all(np.isnan(eps[1:]))
    assert np.all(np.isnan(led.realized_mu()[1:]))


def test_tight_mode_event_multiset_and_dp_accounting_export():
    import dp_accounting

    led = Ledger(2, 2, tight=True)
    led.record_laplace([0, 0, 0], [0, 0, 1], [0, 0, 0], [4, 2, 9], [2.0, 2.0, 1.0], 1.0, mechanism="t",
                       node=[1, 2, 3])
    led.record_gaussian(1, 1, 0, 1, 3.0, 1.0, mechanism="g")
    ev = led.worst_record_event(0)
    grouped = ev.grouped()
    # records 0,1 of stream 0: two Lap(2); stream 1 records: one Lap(1) -> incomparable; Lap(1) is worse
    assert grouped in ({Laplace(1.0, 1.0): 1}, {Laplace(2.0, 1.0): 2})
    assert best_epsilon(ev, 1e-6).value == pytest.approx(
        max(best_epsilon(Laplace(1.0) * 1, 1e-6).value, best_epsilon(Laplace(2.0) * 2, 1e-6).value))
    leaves, counts = led.record_multisets(0)
    assert counts.shape[0] == 3  # {2 x Lap2}, {1 x Lap2}, {1 x Lap1}
    assert led.worst_record_event(1).grouped() == {Gaussian(3.0, 1.0): 1}
    dpe = led.to_dp_accounting(1)
    assert isinstance(dpe, dp_accounting.ComposedDpEvent)
    assert led.realized_epsilon(1e-6)[1] == pytest.approx(best_epsilon(Gaussian(3.0) * 1, 1e-6).value)


def test_redraws_found_in_tight_mode_only():
    led = Ledger(1, 2, tight=True)
    led.record_laplace(0, [0, 1], 0, 1, 1.0, 1.0, mechanism="m", node=[7, 7])
    assert led.redraws() == []
    led.record_laplace(0, 1, 0, 1, 1.0, 1.0, mechanism="m", node=7)
    led.record_laplace(0, 1, 0, 1, 1.0, 1.0, mechanism="other", node=7)
    assert led.redraws() == [(0, 1, "m", 7)]
    cheap = Ledger(1, 1)
    for call in (cheap.redraws, lambda: cheap.worst_record_event(0), lambda: cheap.to_dp_accounting(0)):
        with pytest.raises(ValueError, match="tight=True"):
            call()


@pytest.mark.parametrize("kwargs, match", [
    (dict(replicate=2), r"replicate must lie in \[0, 2\)"),
    (dict(stream=-1), r"stream must lie in \[0, 3\)"),
    (dict(lo=-1), r"lo must lie in \[0, inf\)"),
    (dict(lo=5, hi=4), r"hi must lie in \[lo, inf\)"),
    (dict(scale=0.0), r"scale must lie in \(0, inf\)"),
    (dict(scale=math.nan), r"scale must lie in \(0, inf\)"),
    (dict(sensitivity=-1.0), r"sensitivity must lie in \(0, inf\)"),
    (dict(lo=np.array([0.5])), r"lo must be an integer array"),
    (dict(lo=np.array([0, 1]), hi=np.array([1, 2, 3])), r"equal length"),
])
def test_record_rejects_bad_input(kwargs, match):
    led = Ledger(2, 3)
    args = dict(replicate=0, stream=0, lo=0, hi=1, scale=1.0, sensitivity=1.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        led.record_laplace(args["replicate"], args["stream"], args["lo"], args["hi"], args["scale"],
                           args["sensitivity"], mechanism="m")


@pytest.mark.parametrize("args, match", [
    ((0, 1), r"replicates must be a whole number in \[1, inf\)"),
    ((1, 0), r"streams must be a whole number in \[1, inf\)"),
    ((1.5, 1), r"replicates must be a whole number"),
])
def test_constructor_rejects_bad_shape(args, match):
    with pytest.raises(ValueError, match=match):
        Ledger(*args)


def test_realized_epsilon_rejects_bad_delta():
    with pytest.raises(ValueError, match=r"delta must lie in \(0, 1\)"):
        Ledger(1, 1).realized_epsilon(1.0)


def test_empty_ledger_reports_zero():
    led = Ledger(2, 2)
    assert led.realized_pure_epsilon().tolist() == [0.0, 0.0]
    assert led.realized_mu().tolist() == [0.0, 0.0]
    assert led.realized_epsilon(1e-6).tolist() == [0.0, 0.0]


def test_memory_guard_can_track_nothing():
    led = Ledger(3, 2, max_tracked_bytes=10)
    assert led.tracked_replicates.size == 0
    led.record_laplace([0, 2], [0, 1], 0, 100, 1.0, 1.0, mechanism="m")
    assert np.all(np.isnan(led.realized_pure_epsilon()))
    assert np.all(np.isnan(led.realized_mu()))
    assert np.all(np.isnan(led.realized_epsilon(1e-6)))
    assert led.draws.sum() == 2


def test_dense_staged_path_equals_one_release_at_a_time():
    """_record_dense (staged, coalesced) and the public record_* give identical per-record sums."""
    rng = np.random.default_rng(11)
    R, K, rounds = 6, 3, 700  # > one staging block, with capacity growth along the way
    dense, plain = Ledger(R, K), Ledger(R, K)
    counts = np.zeros((R, K), dtype=np.int64)
    for t in range(rounds):
        mask = counts >= 1
        sigma = rng.uniform(0.5, 2.0, (R, K))
        sens = 1.0 / (counts + 1.0)
        lo = rng.integers(0, 2, (R, K)) * (counts // 2)  # prefixes and suffix-like footprints
        gaussian = t % 3 != 0
        dense._record_dense(mask, lo, counts, sigma, sens, "m", gaussian=gaussian)
        rr, ss = np.nonzero(mask)
        record = plain.record_gaussian if gaussian else plain.record_laplace
        record(rr, ss, lo[rr, ss], counts[rr, ss], sigma[rr, ss], sens[rr, ss], mechanism="m")
        counts[np.arange(R), rng.integers(0, K, R)] += 1
    np.testing.assert_array_equal(dense.draws, plain.draws)
    np.testing.assert_allclose(dense.realized_mu(), plain.realized_mu(), rtol=1e-12)
    np.testing.assert_allclose(dense.realized_epsilon(1e-6), plain.realized_epsilon(1e-6), rtol=1e-12)


@pytest.mark.parametrize("track", [None, 2, 0])
def test_posterior_fast_path_equals_the_dense_path(track):
    """prefix_recorder (counts only, derived in bulk; a staging block where every arm holds a
    record takes an unmasked path) gives the same draw counts and the same total of every record as
    recording the same releases through _record_dense -- including a second recorder (another c)
    staging into the same ledger."""
    from privbandit.ledger import _S_GAUSS, _S_MU2

    rng = np.random.default_rng(3)
    R, K = 5, 4
    fast, dense = Ledger(R, K, track_replicates=track), Ledger(R, K, track_replicates=track)
    counts = np.zeros((R, K), dtype=np.int64)
    recorders = {c: fast.prefix_recorder(lambda k, c=c: (np.sqrt(c / (k + 1.0)), 1.0 / (k + 1.0)), "post")
                 for c in (3.0, 0.5)}
    for t in range(700):  # blocks: with unpulled arms, then all arms pulled; growth along the way
        c = 3.0 if t < 600 or t % 2 else 0.5
        recorders[c](counts.astype(float))
        denom = counts + 1.0
        dense._record_dense(counts >= 1, 0, counts, np.sqrt(c / denom), 1.0 / denom, "post", gaussian=True)
        counts[np.arange(R), rng.integers(0, K, R)] += 1
    np.testing.assert_array_equal(fast.draws, dense.draws)
    for a, b in zip(fast._totals(_S_MU2, _S_GAUSS), dense._totals(_S_MU2, _S_GAUSS)):
        assert a.shape == b.shape
        # difference arrays: a cumsum of ~1e3 terms of size <= 10 leaves ~1e3 * 10 * 2.2e-16 residues
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=5e-12)
    np.testing.assert_allclose(fast.realized_mu(), dense.realized_mu(), rtol=1e-12)
    np.testing.assert_allclose(fast.realized_epsilon(1e-6), dense.realized_epsilon(1e-6), rtol=1e-12)


@pytest.mark.parametrize("track", [None, 3])
def test_mechanism_fast_path_equals_the_public_path(track):
    """_record_from_mechanism (scalars kept as scalars, arrays staged uncopied, draw counts derived
    at the drain) gives the same draws and the same total of every statistic of every record as the
    validated public record_* calls, for Laplace and Gaussian releases mixed."""
    from privbandit.ledger import _N_STATS

    rng = np.random.default_rng(5)
    R, K = 6, 3
    fast, plain = Ledger(R, K, track_replicates=track), Ledger(R, K, track_replicates=track)
    counts = np.zeros((R, K), dtype=np.int64)
    for t in range(600):
        counts[np.arange(R), rng.integers(0, K, R)] += 1
        rr, kk = np.nonzero(rng.random((R, K)) < 0.5)
        hi = counts[rr, kk]
        lo = hi // 2 if t % 2 else 0  # an array or a scalar
        scale = rng.uniform(0.5, 2.0, rr.size) if t % 3 else 1.5
        sens = 1.0 if t % 4 else 1.0 / np.maximum(hi, 1)
        gaussian = t % 5 == 0
        fast._record_from_mechanism(rr, kk, lo, hi, scale, sens, "m", None, gaussian=gaussian)
        record = plain.record_gaussian if gaussian else plain.record_laplace
        record(rr, kk, lo, hi, scale, sens, mechanism="m")
    np.testing.assert_array_equal(fast.draws, plain.draws)
    for a, b in zip(fast._totals(*range(_N_STATS)), plain._totals(*range(_N_STATS))):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=5e-12)
    np.testing.assert_allclose(fast.realized_epsilon(1e-6), plain.realized_epsilon(1e-6), rtol=1e-12)


def test_laplace_prefix_recorder_equals_the_dense_path_and_rejects_bad_parameters():
    """A Laplace prefix release (e.g. a noisy running mean of all k records with scale 1/(eps k))
    staged through prefix_recorder matches _record_dense in every statistic of every record."""
    from privbandit.ledger import _N_STATS

    rng = np.random.default_rng(8)
    R, K = 4, 3
    fast, dense = Ledger(R, K), Ledger(R, K)

    def params(k):
        return 2.0 / np.maximum(k, 1), 1.0 / np.maximum(k, 1)  # eps = 1/2 per release

    record = fast.prefix_recorder(params, "mean", gaussian=False)
    counts = np.zeros((R, K), dtype=np.int64)
    for _ in range(300):
        record(counts)
        p, s = params(counts)
        dense._record_dense(counts >= 1, 0, counts, p, s, "mean", gaussian=False)
        counts[np.arange(R), rng.integers(0, K, R)] += 1
    np.testing.assert_array_equal(fast.draws, dense.draws)
    for a, b in zip(fast._totals(*range(_N_STATS)), dense._totals(*range(_N_STATS))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=5e-12)
    np.testing.assert_allclose(fast.realized_epsilon(1e-6), dense.realized_epsilon(1e-6), rtol=1e-12)

    bad_ledger = Ledger(R, K)
    bad = bad_ledger.prefix_recorder(lambda k: (0.0 * k, 1.0 + 0.0 * k), "bad")  # scale 0: invalid
    bad(np.ones((R, K)))
    with pytest.raises(ValueError, match="parameters"):
        bad_ledger.realized_mu()
    with pytest.raises(ValueError, match="parameters must be callable"):
        Ledger(R, K).prefix_recorder(3.0, "bad")


def test_mechanism_fast_path_copies_views_of_state():
    """_record_from_mechanism stages fresh arrays uncopied; a view of state the caller then
    overwrites must still be recorded with the values it had at the call."""
    led = Ledger(1, 2)
    state = np.array([3, 5], dtype=np.int64)
    led._record_from_mechanism(np.array([0, 0]), np.array([0, 1]), 0, state[:], 1.0, 1.0, "m", None)
    state[:] = 0  # the mechanism moves on before the drain
    from privbandit.ledger import _S_EPS
    (eps,) = led._totals(_S_EPS)
    np.testing.assert_allclose(eps[0, 0, :5], [1, 1, 1, 0, 0])
    np.testing.assert_allclose(eps[0, 1, :5], [1, 1, 1, 1, 1])


def test_mechanism_fast_path_takes_every_field_form_in_one_drain():
    """The staged fields of one drain may come in every form a mechanism passes -- 1-D arrays,
    Python and numpy scalars, 0-d arrays, views of a larger array (copied at the call) -- mixed
    from call to call; the drain flattens them to the same totals as the public record path."""
    from privbandit.ledger import _N_STATS

    rng = np.random.default_rng(11)
    R, K = 3, 2
    fast, plain = Ledger(R, K), Ledger(R, K)
    forms = [lambda x: x, float, np.float64, np.asarray]
    for t in range(700):  # more than one drain (every 256 calls) and a partial one
        m = int(rng.integers(1, 4))
        rr, kk = rng.integers(0, R, m), rng.integers(0, K, m)
        lo = rng.integers(0, 30, m)
        hi = lo + rng.integers(0, 3, m)
        scale, sens = rng.choice([0.5, 2.0]), 1.0
        if m == 1 or t % 3:  # one value for the whole call, in one of the scalar forms
            f = forms[t % 4]
            scale_arg, sens_arg = (f(scale), f(sens)) if t % 4 else (scale, sens)
            lo_arg = forms[(t // 4) % 4](lo[0]) if m == 1 else lo
        else:  # arrays, the index arrays as views of a larger one
            scale_arg, sens_arg, lo_arg = np.full(m, scale), np.full(m, sens), lo
            rr = np.concatenate([rr, rr])[:m]
        fast._record_from_mechanism(rr, kk, lo_arg, hi, scale_arg, sens_arg, "m", None)
        if m == 1:
            lo = lo[:1]
        plain.record_laplace(rr, kk, lo, hi, scale, sens, mechanism="m")
    np.testing.assert_array_equal(fast.draws, plain.draws)
    for a, b in zip(fast._totals(*range(_N_STATS)), plain._totals(*range(_N_STATS))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=5e-12)


def test_worst_record_query_on_marked_positions_equals_every_record():
    """realized_epsilon evaluates only the records at positions where a footprint starts or ends
    (every other record repeats its predecessor's totals). With sparse release boundaries (interval
    releases, a Gaussian and a discrete-Gaussian one) it must equal, bit for bit, the query over
    every record (forced here by marking every position), also for a ledger pickled before the
    marks existed (they are rebuilt from the difference arrays)."""
    import pickle

    rng = np.random.default_rng(12)
    R, K = 3, 2
    led = Ledger(R, K, capacity=64)
    for n in range(8, 400, 8):  # interval-style releases [0, n) and [n - 8, n): boundaries every 8 records
        rr, kk = np.repeat(np.arange(R), K), np.tile(np.arange(K), R)
        led.record_laplace(rr, kk, 0, n, rng.uniform(1.0, 50.0, rr.size), 1.0 / n, mechanism="mean")
        led.record_laplace(rr, kk, n - 8, n, 8.0, 1.0, mechanism="block")
    led.record_gaussian(0, 1, 3, 200, 20.0, 1.0, mechanism="g")
    led.record_discrete_gaussian(2, 0, 100, 300, 30.0, 1.0, mechanism="dg")
    fast = led.realized_epsilon(1e-6)
    assert 2 * np.count_nonzero(led._marked[: led._top]) < led._top  # the compressed path ran
    full = pickle.loads(pickle.dumps(led))
    full._marked[:] = True  # every position: the plain per-record path
    np.testing.assert_array_equal(full.realized_epsilon(1e-6), fast)
    state = dict(led.__dict__)
    del state["_marked"]
    old = Ledger.__new__(Ledger)
    old.__setstate__(state)
    np.testing.assert_array_equal(old.realized_epsilon(1e-6), fast)
    assert np.all(old._marked[: led._top] <= led._marked[: led._top])


def test_noted_rounds_returns_every_tag_in_order():
    from privbandit.ledger import Ledger

    book = Ledger(2, 3, tight=True)
    assert all(a.size == 0 for a in book.noted_rounds())
    book.note_rounds(np.array([0, 0]), np.array([0, 2]), np.array([0, 0]), 1)
    book.note_rounds(np.array([1]), np.array([1]), np.array([4]), 7)
    rep, st, pos, t = book.noted_rounds()
    assert rep.tolist() == [0, 0, 1] and st.tolist() == [0, 2, 1] and pos.tolist() == [0, 0, 4]
    assert t.tolist() == [1, 1, 7]
    with pytest.raises(ValueError, match="tight"):
        Ledger(1, 2).noted_rounds()
