"""Ledger fast paths against the straightforward ones: the same state, bit for bit.

* Listed releases staged with their tracked rows (a "head", _HEAD_MIN_ROWS rows or more) against
  the row-by-row selection (heads switched off), for sorted rows (the mechanisms' order), rows out of
  order (the drain's check must refuse the heads), tracked subsets, growth that drops replicates
  from tracking, pickling mid-staging and states pickled before heads existed.
* The Pareto-front query ``_worst_min`` against a brute-force maximum over every record.
* Gaussian-only realized spend from the first records (every footprint starting at 0) against the
  query over every record.
* The prefix recorder's drain against the previous implementation, kept here as the reference.
* Whole simulations (R = 1, a few replicates, and enough for heads, tracked subsets) with heads on
  and off: the same realized and certified epsilons, bit for bit.
"""

import math
import pickle

import numpy as np
import pytest

import privbandit.ledger as ledger_mod
from privbandit.ledger import _N_STATS, Ledger


def _state(led: Ledger) -> dict:
    led._settle()
    return dict(draws=led._draws.copy(), top=led._top, n=led._n_tracked, cap=led._capacity,
                marked=led._marked.copy(), diff={k: v.copy() for k, v in led._diff.items()},
                eps=led.realized_epsilon(1e-6), pure=led.realized_pure_epsilon(), mu=led.realized_mu())


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    assert (a["top"], a["n"], a["cap"]) == (b["top"], b["n"], b["cap"])
    assert a["diff"].keys() == b["diff"].keys()
    for key in ("draws", "marked", "eps", "pure", "mu"):
        assert a[key].tobytes() == b[key].tobytes(), key
    for stat in a["diff"]:
        assert a["diff"][stat].tobytes() == b["diff"][stat].tobytes(), stat


def _releases(rng, R, K, calls, *, order="sorted"):
    """Release calls as the mechanisms make them: a mask over (R, K) (every stream or a random
    subset: entries above and below _HEAD_MIN_ROWS), rows in row-major order (or shuffled)."""
    counts = np.zeros((R, K), dtype=np.int64)
    out = []
    for t in range(calls):
        # mostly long entries (every drain of them takes the heads), some drains with short ones too
        p = 0.05 if (t // 256) % 2 and t % 5 == 1 else 0.9
        mask = np.ones((R, K), bool) if t % 3 == 0 else rng.random((R, K)) < p
        counts[mask] += 1
        rr, kk = np.nonzero(mask)
        if order == "shuffled" and t % 2:
            p = rng.permutation(rr.size)
            rr, kk = rr[p], kk[p]
        hi = counts[rr, kk]
        lo = np.maximum(hi - rng.integers(1, 4, rr.size), 0) if t % 2 else 0
        scale = rng.uniform(0.5, 2.0, rr.size) if t % 5 == 0 else 2.0
        sens = 1.0 if t % 4 else 1.0 / hi
        kind = dict(gaussian=True) if t % 7 == 3 else dict(discrete=True) if t % 11 == 5 else {}
        out.append((rr.copy(), kk.copy(), lo, hi.copy(), scale, sens, kind))
    return out


def _feed(led: Ledger, releases, start=0, stop=None):
    for rr, kk, lo, hi, scale, sens, kind in releases[start:stop]:
        lo = lo.copy() if isinstance(lo, np.ndarray) else lo
        scale = scale.copy() if isinstance(scale, np.ndarray) else scale
        sens = sens.copy() if isinstance(sens, np.ndarray) else sens
        led._record_from_mechanism(rr.copy(), kk.copy(), lo, hi.copy(), scale, sens, "m", None, **kind)


def _pair(monkeypatch, make, feed):
    """The state with heads and known layouts (the default) and with every head refused and no
    layout recognized (rows one by one)."""
    fast = make()
    feed(fast)
    fast_state = _state(fast)
    with monkeypatch.context() as m:
        m.setattr(ledger_mod, "_HEAD_MIN_ROWS", 2 ** 62)
        m.setattr(ledger_mod, "_KNOWN_LAYOUTS", False)
        slow = make()
        feed(slow)
        slow_state = _state(slow)
    return fast_state, slow_state


@pytest.mark.parametrize("R, track, order", [(300, 8, "sorted"), (300, 8, "shuffled"), (260, 1, "sorted"),
                                             (300, None, "sorted"), (1, None, "sorted")])
def test_listed_heads_equal_row_by_row_selection(monkeypatch, R, track, order):
    K = 5 if R > 1 else 3000  # one replicate: entries of >= _HEAD_MIN_ROWS rows through many streams
    releases = _releases(np.random.default_rng(R), R, K, 600 if R > 1 else 300, order=order)
    verdicts = []
    original = Ledger._heads_valid
    monkeypatch.setattr(Ledger, "_heads_valid", lambda self, *a: verdicts.append(original(self, *a)) or verdicts[-1])
    fast, slow = _pair(monkeypatch, lambda: Ledger(R, K, track_replicates=track, capacity=1024),
                       lambda led: _feed(led, releases))
    _assert_same(fast, slow)
    if R > 1 and track is not None:  # the heads were taken (sorted rows), refused (shuffled) or lacking
        assert (True in verdicts) == (order == "sorted") and False in verdicts
    assert fast["draws"].sum() == sum(r[0].size for r in releases)


def test_heads_are_checked_not_assumed(monkeypatch):
    """Rows out of order in a long entry: the bisected head misses tracked rows, the drain's check
    (head rows in tracked replicates, as many as the draw counts say) refuses the heads."""
    R, K, refused = 400, 5, []
    original = Ledger._heads_valid

    def spy(self, heads, n):
        ok = original(self, heads, n)
        refused.append(not ok)
        return ok

    monkeypatch.setattr(Ledger, "_heads_valid", spy)
    rr, kk = np.nonzero(np.ones((R, K), bool))
    fast, slow = _pair(monkeypatch, lambda: Ledger(R, K, track_replicates=6),
                       lambda led: led._record_from_mechanism(rr[::-1].copy(), kk[::-1].copy(), 0, 3, 1.0, 1.0,
                                                              "m", None))
    _assert_same(fast, slow)
    assert refused and refused[0]
    assert fast["pure"][0] == 1.0 and np.isnan(fast["pure"][6])


def test_growth_that_drops_tracked_replicates_between_kinds(monkeypatch):
    """One drain with Laplace and Gaussian entries whose footprints outgrow the capacity: the
    growth of the first kind drops replicates from tracking; the heads of the second kind, taken
    before, then hold rows no longer tracked, which the drain must leave out as the row-by-row
    selection does."""
    R, K = 300, 5
    per_rep = K * 6 * 8
    rr, kk = np.nonzero(np.ones((R, K), bool))

    def feed(led):
        for t in range(40):
            hi = np.full(rr.size, 100 if t > 20 else 40)
            led._record_from_mechanism(rr.copy(), kk.copy(), 0, hi, 1.5, 1.0, "m", None, gaussian=bool(t % 2))

    make = lambda: Ledger(R, K, track_replicates=10, capacity=64, max_tracked_bytes=per_rep * 10 * 65)
    fast, slow = _pair(monkeypatch, make, feed)
    _assert_same(fast, slow)
    assert fast["n"] == 5 and fast["cap"] == 128  # tracking shrank at the growth to 128 positions


def test_pickled_mid_staging_and_legacy_entries(monkeypatch):
    """A ledger pickled with staged entries (heads included) continues as the unpickled one; a state
    pickled before entries carried heads (7-field entries) is given exact heads on loading."""
    R, K = 300, 5
    releases = _releases(np.random.default_rng(9), R, K, 400)
    whole = Ledger(R, K, track_replicates=7)
    _feed(whole, releases)
    half = Ledger(R, K, track_replicates=7)
    _feed(half, releases, stop=300)
    assert half._sparse  # mid-staging
    resumed = pickle.loads(pickle.dumps(half))
    _feed(resumed, releases, start=300)
    _assert_same(_state(resumed), _state(whole))

    legacy = Ledger(R, K, track_replicates=7)
    _feed(legacy, releases, stop=300)
    state = dict(legacy.__dict__)
    state["_sparse"] = [entry[:7] for entry in state["_sparse"]]
    old = Ledger.__new__(Ledger)
    old.__setstate__(state)
    assert all(len(entry) == 8 for entry in old._sparse)
    _feed(old, releases, start=300)
    _assert_same(_state(old), _state(whole))


def _naive_pure_and_mu(releases, R, K, tracked):
    """Per record, straight from the definition: the sum of eps over the Laplace releases whose
    footprint holds it, of mu^2, and whether a Gaussian one does (then pure eps is inf)."""
    from accountants import gdp_conversion

    eps, mu2, gauss = {}, {}, set()
    for rr, kk, lo, hi, scale, sens, kind in releases:
        n = rr.size
        lo_a, sc, se = (np.broadcast_to(x, (n,)) for x in (lo, scale, sens))
        for i in range(n):
            if rr[i] >= tracked:
                continue
            for pos in range(int(lo_a[i]), int(hi[i])):
                key = (int(rr[i]), int(kk[i]), pos)
                e = float(se[i]) / float(sc[i])
                if kind.get("gaussian"):
                    gauss.add(key)
                    mu2[key] = mu2.get(key, 0.0) + e * e
                else:
                    eps[key] = eps.get(key, 0.0) + e
                    mu2[key] = mu2.get(key, 0.0) + float(gdp_conversion.mu_from_pure_epsilon(e)) ** 2
    pure = np.zeros(tracked)
    mu = np.zeros(tracked)
    for key in set(eps) | set(mu2):
        r = key[0]
        pure[r] = max(pure[r], math.inf if key in gauss else eps.get(key, 0.0))
        mu[r] = max(mu[r], math.sqrt(mu2.get(key, 0.0)))
    return pure, mu


def test_listed_heads_match_the_definition():
    """Independent of the difference arrays: realized pure eps and mu from per-record sums."""
    R, K, track = 240, 5, 3
    releases = _releases(np.random.default_rng(4), R, K, 90)
    releases = [r[:6] + ({"gaussian": True} if r[6].get("gaussian") else {},) for r in releases]
    led = Ledger(R, K, track_replicates=track)
    _feed(led, releases)
    pure, mu = _naive_pure_and_mu(releases, R, K, track)
    # sums of <= 90 terms of size <= 4: the two summation orders agree to ~90 * 4 * 2.2e-16
    np.testing.assert_allclose(led.realized_pure_epsilon()[:track], pure, rtol=1e-12)
    np.testing.assert_allclose(led.realized_mu()[:track], mu, rtol=1e-12)
    assert np.isnan(led.realized_mu()[track:]).all()


def test_worst_min_equals_the_maximum_over_every_record():
    """The pruned Pareto-front query returns max over records of min(closed, eps_gdp(mu)), bit for
    bit, with ties in mu, records without releases (mu = 0) and a closed form that undercuts GDP."""
    rng = np.random.default_rng(2)
    led = Ledger(1, 1)
    delta = 1e-6
    for trial in range(60):
        n = int(rng.integers(1, 60))
        mu = np.round(rng.uniform(0, 3, n), 1) * (rng.random(n) < 0.9)  # ties and zeros
        gdp = np.array([led._gdp_eps(m, delta) for m in mu])
        closed = gdp * rng.uniform(0.3, 1.6, n)
        if trial % 5 == 0:
            closed[rng.integers(0, n)] = np.inf
        used = mu > 0
        expected = max((min(c, g) for c, g, u in zip(closed, gdp, used) if u), default=0.0)
        assert led._worst_min(closed.copy(), mu.copy(), delta) == expected


def test_gaussian_prefix_realized_from_first_records_equals_every_record():
    """Every footprint starting at 0: realized_epsilon reads the first records; forcing the query
    over every record gives the same, bit for bit. A footprint starting later switches it off."""
    rng = np.random.default_rng(6)
    R, K = 7, 3
    led = Ledger(R, K, track_replicates=5)
    record = led.prefix_recorder(lambda k: (np.sqrt(4.0 / (k + 1.0)), 1.0 / (k + 1.0)), "post")
    counts = np.zeros((R, K), dtype=np.int64)
    for _ in range(900):
        record(counts)
        counts[np.arange(R), rng.integers(0, K, R)] += 1
    fast = led.realized_epsilon(1e-6)
    assert led._from_zero
    led._from_zero = False
    assert led.realized_epsilon(1e-6).tobytes() == fast.tobytes()
    led._from_zero = True
    led.record_gaussian(0, 0, 3, 5, 0.01, 1.0, mechanism="late")
    led._settle()
    assert not led._from_zero
    assert led.realized_epsilon(1e-6)[0] > fast[0]
    # a state pickled before the flag existed takes the full query
    state = dict(led.__dict__)
    del state["_from_zero"]
    old = Ledger.__new__(Ledger)
    old.__setstate__(state)
    assert old._from_zero is False


def _previous_drain_prefix(led: Ledger, kind, parameters, counts, count_draws=True):
    """The prefix drain before its numpy calls were trimmed (session 5), as the reference: ``counts``
    holds every replicate of each staged call (see _legacy_recorders) and their draws are counted here."""
    from privbandit.ledger import _KIND_STATS

    if counts.min() >= 1:
        led._draws += counts.shape[0]
    else:
        led._draws += np.count_nonzero(counts >= 1, axis=0)
    if led._n_tracked and (top := int(counts[:, : led._n_tracked].max())) > led._capacity:
        led._grow(top)
    calls, n_cells = counts.shape[0], led._n_tracked * led.streams
    if n_cells == 0:
        return
    k = counts[:, : led._n_tracked].reshape(calls, n_cells).T
    starts_run = np.empty(k.shape, dtype=bool)
    starts_run[:, 0] = True
    np.not_equal(k[:, 1:], k[:, :-1], out=starts_run[:, 1:])
    starts = np.flatnonzero(starts_run)
    lengths = np.diff(np.append(starts, starts_run.size)).astype(float)
    hi = k.reshape(-1)[starts]
    live = hi >= 1
    if not live.any():
        return
    cells, hi, lengths = starts[live] // calls, hi[live].astype(np.int64), lengths[live]
    param, sens = (np.broadcast_to(np.asarray(a, dtype=float), hi.shape) for a in parameters(hi))
    vals = led._leaf_stats(kind, param, sens) * lengths[:, None]
    for stat in _KIND_STATS[kind]:
        diff = led._stat_diff(stat).reshape(n_cells, -1)  # (cell, position): session 11's layout
        diff[:, 0] += np.bincount(cells, weights=vals[:, stat], minlength=n_cells)
        np.subtract.at(diff, (cells, hi), vals[:, stat])
    led._marked[0] = True
    led._marked[hi] = True
    led._top = max(led._top, int(hi.max()))


@pytest.mark.parametrize("gaussian, track", [(True, None), (True, 2), (False, 3), (True, 0)])
def test_prefix_drain_equals_the_previous_drain(monkeypatch, gaussian, track):
    """Unpulled arms (k = 0) early, growth past the capacity, queries between staging blocks."""
    def run():
        rng = np.random.default_rng(1)
        R, K = 6, 4
        led = Ledger(R, K, track_replicates=track, capacity=32)
        params = (lambda k: (np.sqrt(4.0 / (k + 1.0)), 1.0 / (k + 1.0))) if gaussian else \
            (lambda k: (2.0 / np.maximum(k, 1), 1.0 / np.maximum(k, 1)))
        record = led.prefix_recorder(params, "post", gaussian=gaussian)
        counts = np.zeros((R, K), dtype=np.int64)
        for t in range(1000):
            record(counts.astype(float))
            if t in (300, 301, 777):
                led.realized_epsilon(1e-6)  # a settle splits the staging block
            counts[np.arange(R), rng.integers(0, K, R)] += rng.integers(0, 2, R)
        return _state(led)

    with monkeypatch.context() as m:
        m.setattr("privbandit.ledger._STAGE_PASS_ENTRIES", 0)  # the per-call pass at every size
        new = run()
    _assert_same(new, run())  # the default: below the threshold, every replicate staged
    monkeypatch.setattr(Ledger, "_drain_prefix", _previous_drain_prefix)
    _legacy_recorders(monkeypatch)
    _assert_same(new, run())


def _legacy_recorders(monkeypatch):
    """Prefix recorders as they were before session 10 (and still are below _STAGE_PASS_ENTRIES):
    every replicate's counts staged, the draws counted at the drain."""
    from privbandit.ledger import _PrefixRecorder

    monkeypatch.setattr("privbandit.ledger._STAGE_PASS_ENTRIES", 2**62)
    # a recorder of the old class: no instance attribute, its buffer (calls, R, K)
    init = _PrefixRecorder.__init__

    def old_init(self, ledger, kind, parameters):
        init(self, ledger, kind, parameters)
        assert self.counts_draws is False and self.buffer.shape[1:] == (ledger.replicates, ledger.streams)
        del self.counts_draws

    monkeypatch.setattr(_PrefixRecorder, "__init__", old_init)


def _posterior_parameters(k):  # (module level: a ledger holding it pickles)
    return np.sqrt(2.0 / (k + 1.0)), 1.0 / (k + 1.0)


@pytest.mark.parametrize("track", [None, 3, 0])
def test_prefix_recorder_stages_tracked_rows_and_counts_draws_per_call(monkeypatch, track):
    """Session 10: a call adds every replicate's draws at once and stages only the tracked rows. The
    same state, bit for bit, as the recorder that staged every replicate (also when tracking shrinks
    on growth, with NaN and fractional counts, and with counts broadcast from one row); a recorder
    pickled in the old layout, mid-block, keeps counting its staged calls' draws at the drain."""
    import pickle

    def run(legacy_from=None):
        rng = np.random.default_rng(4)
        R, K = 9, 3
        led = Ledger(R, K, track_replicates=track, capacity=16, max_tracked_bytes=6 * K * 65 * 8)
        record = led.prefix_recorder(_posterior_parameters, "post")
        counts = np.zeros((R, K))
        for t in range(700):
            if t == legacy_from:  # pickle and reload the whole ledger mid-block (pending calls staged)
                rec = led._prefix[0]
                assert 0 < rec.pending and "counts_draws" not in vars(rec)
                led = pickle.loads(pickle.dumps(led))
                record = led._prefix[0].record
            if t == 50:
                record(counts[0])  # one row, broadcast to every replicate
            elif t == 60:
                bad = counts.copy()
                bad[8, 1], bad[2, 0] = np.nan, 0.5  # (a NaN in a tracked row fails the drain either way)
                record(bad)
            else:
                record(counts)
            if t in (100, 420):
                led.realized_epsilon(1e-6)
            counts[np.arange(R), rng.integers(0, K, R)] += rng.integers(0, 2, R)
        return _state(led), vars(led._prefix[0]).get("counts_draws")  # the layout taken (None: pickled old)

    with monkeypatch.context() as m:
        m.setattr("privbandit.ledger._STAGE_PASS_ENTRIES", 27)  # 9 x 3 entries: the per-call pass
        new, layout = run()
        assert layout is True
    assert new["n"] < (9 if track is None else track) or track == 0  # tracking shrank on growth
    below, layout = run()  # below the threshold: every replicate staged, draws counted at the drain
    assert layout is False
    _assert_same(new, below)
    with monkeypatch.context() as m:
        m.setattr(Ledger, "_drain_prefix", _previous_drain_prefix)
        _legacy_recorders(m)
        old, layout = run()
    assert layout is None
    _assert_same(new, old)
    # a ledger pickled with old-layout recorders (their instances lack counts_draws), reloaded mid-block
    with monkeypatch.context() as m:
        _legacy_recorders(m)
        mixed, layout = run(legacy_from=130)
    assert layout is None
    _assert_same(new, mixed)


@pytest.mark.parametrize("name", ["dp_ucb", "gaussian_ts", "private_ucb", "lazy_dp_ts", "dp_ucb_bound"])
@pytest.mark.parametrize("R, T, track", [(1, 300, 8), (260, 120, 8), (230, 90, None)])
def test_simulations_equal_with_heads_off(monkeypatch, name, R, T, track):
    """Whole runs: realized and certified epsilons identical, bit for bit, with the listed heads and
    the Gaussian first-record query switched off (the row-by-row selection, every record)."""
    from privbandit.engine import simulate
    from privbandit.envs import Bernoulli
    from privbandit.policies import REGISTRY, GaussianTS

    def run():
        pol = GaussianTS(b=10, c=4.0) if name == "gaussian_ts" else REGISTRY[name]()
        res = simulate(pol, Bernoulli([0.75, 0.625, 0.5, 0.375, 0.25]), T, R, seed=2, progress=False,
                       ledger_replicates=track)
        return res.realized_epsilon, res.certified_epsilon, res.certified_closed_form

    fast = run()
    original_init = Ledger.__init__

    def init(self, *a, **k):
        original_init(self, *a, **k)
        self._from_zero = False

    monkeypatch.setattr(ledger_mod, "_HEAD_MIN_ROWS", 2 ** 62)
    monkeypatch.setattr(ledger_mod, "_KNOWN_LAYOUTS", False)
    monkeypatch.setattr(Ledger, "__init__", init)
    slow = run()
    for a, b in zip(fast, slow):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert np.isfinite(fast[0][-1, : min(R, track or R)]).all()


def test_entries_of_every_stream_are_marked_and_fold_in_as_rows():
    """An entry listing every stream of every replicate in row-major order is marked when staged
    (its rows are then neither flattened nor counted at the drain); rows in another order or of
    another length are not, and either way the state equals the row-by-row path's (see _pair)."""
    R, K = 400, 3  # entries of R * K >= _HEAD_MIN_ROWS rows (shorter ones are not checked)
    led = Ledger(R, K, track_replicates=4)
    rr, kk = np.nonzero(np.ones((R, K), bool))
    led._record_from_mechanism(rr.copy(), kk.copy(), 0, np.ones(R * K, dtype=np.int64), 2.0, 1.0, "m", None)
    led._record_from_mechanism(rr[::-1].copy(), kk[::-1].copy(), 0, 1, 2.0, 1.0, "m", None)
    led._record_from_mechanism(rr.astype(np.int32), kk.astype(np.int32), 0, 1, 2.0, 1.0, "m", None)
    led._record_from_mechanism(rr[:-1].copy(), kk[:-1].copy(), 0, 1, 2.0, 1.0, "m", None)
    heads = [entry[7] for entry in led._sparse]
    assert [h is ledger_mod._LAYOUT_GRID for h in heads] == [True, False, True, False]  # values, any int dtype
    resumed = pickle.loads(pickle.dumps(led))  # the mark survives pickling as the same object
    assert resumed._sparse[0][7] is ledger_mod._LAYOUT_GRID
    expected = np.full((R, K), 4)
    expected[-1, -1] = 3
    assert (led.draws == expected).all() and (resumed.draws == expected).all()


@pytest.mark.parametrize("seed", range(4))
def test_leaf_columns_on_distinct_epsilons_equal_the_elementwise_values(seed):
    """The conversions evaluated on a drain's distinct epsilons and gathered give every release the
    bits the elementwise evaluation over all of them gives (the functions are elementwise)."""
    from accountants import gdp_conversion
    from privbandit.ledger import _KIND_LAPLACE, _S_MU2, _S_TANH

    rng = np.random.default_rng(seed)
    led = Ledger(1, 1)
    for n in (2, 7, 64, 1000, 2049):
        pool = np.concatenate([1.0 / rng.integers(1, 300, 6), rng.uniform(1e-3, 6.0, 3)])
        scale = 1.0 / rng.choice(pool, n)
        sens = np.where(rng.random(n) < 0.5, 1.0, 0.5)
        eps = sens / scale
        # twice: the second time (and the later sizes) from the pairs the ledger keeps per epsilon
        for _ in range(2):
            columns = led._leaf_columns(_KIND_LAPLACE, scale, sens)
            assert columns[_S_MU2].tobytes() == (np.asarray(gdp_conversion.mu_from_pure_epsilon(eps)) ** 2).tobytes()
            assert columns[_S_TANH].tobytes() == (eps * np.tanh(eps / 2.0)).tobytes()
    assert led._columns_cache


def test_unpickled_difference_arrays_take_the_canonical_dtype():
    """np.add.at on an unpickled array (an equal but distinct dtype object) takes numpy's slow
    generic path: the ledger re-views its difference arrays with the canonical float64 dtype."""
    led = Ledger(3, 2, track_replicates=2)
    led.record_laplace(np.arange(3), 0, 0, 2, 1.0, 1.0, mechanism="m")
    led._settle()
    resumed = pickle.loads(pickle.dumps(led))
    assert resumed._diff.keys() == led._diff.keys()
    for stat, diff in resumed._diff.items():
        assert diff.dtype is np.dtype(np.float64)
        assert diff.tobytes() == led._diff[stat].tobytes()


def _unpruned_realized(led: Ledger, delta: float) -> np.ndarray:
    """realized_epsilon's entry query before the pruning: closed forms on every distinct record."""
    from privbandit.ledger import _S_MU2, _S_RHO

    n = led._n_tracked
    (mu2,) = led._totals(_S_MU2, distinct=True)
    rho = led._totals(_S_RHO, distinct=True)[0] if _S_RHO in led._diff else None
    closed = led._closed_form_epsilon(mu2, rho, delta, distinct=True).reshape(n, -1)
    mu = np.sqrt(np.maximum(mu2, 0.0))
    if rho is not None:
        mu = np.where(rho > 0, np.inf, mu)
    mu = mu.reshape(n, -1)
    out = np.full(led.replicates, np.nan)
    out[:n] = [led._worst_min(closed[r], mu[r], delta) for r in range(n)]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_pruned_worst_record_query_equals_every_record(monkeypatch, seed):
    """realized_epsilon evaluates the closed forms only on records that can pass the largest-mu
    record's bar: the same answers, bit for bit, as on every record -- with many small Laplace
    releases (KOV undercuts the pure sum and GDP: the pruned path), Gaussian and discrete-Gaussian
    releases among them, and untouched replicates."""
    rng = np.random.default_rng(seed)
    R, K, n_rec = 6, 3, 80
    led = Ledger(R, K, track_replicates=5, capacity=n_rec)
    for _ in range(300):
        m = int(rng.integers(1, 12))
        rep, st = rng.integers(0, R - 1, m), rng.integers(0, K, m)
        lo = rng.integers(0, n_rec - 1, m)
        hi = np.minimum(lo + rng.integers(1, 30, m), n_rec)
        u = rng.random()
        if u < 0.8:
            led.record_laplace(rep, st, lo, hi, rng.choice([20.0, 35.0, 50.0], m), 1.0, mechanism="lap")
        elif u < 0.95 or seed % 2:
            led.record_gaussian(rep, st, lo, hi, rng.choice([30.0, 60.0], m), 1.0, mechanism="gauss")
        else:
            led.record_discrete_gaussian(rep, st, lo, hi, 40.0, 1.0, mechanism="dg")
    sizes = []
    original = Ledger._worst_min
    for delta in (1e-6, 1e-3, 0.2):
        with monkeypatch.context() as m:
            m.setattr(Ledger, "_worst_min", lambda self, c, mu, d: sizes.append(c.size) or original(self, c, mu, d))
            fast = led.realized_epsilon(delta)
        assert fast.tobytes() == _unpruned_realized(led, delta).tobytes()
    if seed % 2 == 0:  # mostly Laplace releases: the pruned path was taken, on a fraction of the records
        assert sizes and min(sizes) < n_rec * K


@pytest.mark.parametrize("track", [None, 3, 0])
def test_note_observed_equals_note_rounds_over_the_mask(track):
    """Ledger.note_observed (the policies' path: one round's (R, K) mask and positions, tracked rows
    only, staging kept unless the arrays grow) leaves the tags and every realized epsilon of the
    public note_rounds over np.nonzero(mask), including growth past the capacity mid-run."""
    rng = np.random.default_rng(12)
    R, K = 6, 5
    kw = dict(capacity=8, track_replicates=track)
    public, path = Ledger(R, K, **kw), Ledger(R, K, **kw)
    counts = np.zeros((R, K), dtype=np.int64)
    for t in range(1, 40):
        observed = rng.random((R, K)) < 0.4
        positions = counts.copy()
        rows, cols = np.nonzero(observed)
        scale = 1.0 / rng.uniform(0.5, 2.0)
        for book in (public, path):  # the releases of the round's new records (one each)
            book._record_from_mechanism(rows, cols, positions[rows, cols], positions[rows, cols] + 1, scale, 1.0,
                                        "m", None)
        if rows.size:
            public.note_rounds(rows, cols, positions[rows, cols], t)
        path.note_observed(observed, positions, t)
        counts += observed
    public._settle(), path._settle()
    assert (public._rounds is None) == (path._rounds is None)
    if public._rounds is not None:
        assert np.array_equal(public._rounds, path._rounds)
    for relation in ("entry", "round"):
        assert np.array_equal(public.realized_epsilon(1e-6, relation), path.realized_epsilon(1e-6, relation),
                              equal_nan=True)


@pytest.mark.parametrize("R, track", [(1, None), (20, 4), (60, None)])
def test_grid_layout_arrays_are_marked_by_identity_at_any_size(monkeypatch, R, track):
    """A mechanism's insert of every stream passes the ledger's own read-only grid arrays
    (``grid_layout``): staged uncopied and marked by identity however short (here R * 5 < _HEAD_MIN_ROWS
    rows), equal arrays of another origin only from _HEAD_MIN_ROWS rows on; a whole DP-UCB run's
    ledger state equals the row-by-row path's (known layouts off), bit for bit."""
    from privbandit.engine import simulate
    from privbandit.envs import Bernoulli
    from privbandit.mechanisms.hybrid import HybridMechanism
    from privbandit.policies import DPUCB

    rows, cols = ledger_mod.grid_layout(R, 5)
    assert not rows.flags.writeable and not cols.flags.writeable
    led = Ledger(R, 5, track_replicates=track)
    mech = HybridMechanism(R, 5, epsilon=1.0, rng=np.random.default_rng(0), ledger=led)
    mech.insert(np.full((R, 5), 0.5), np.ones((R, 5), bool))  # count 1: a logarithmic release of every stream
    led._record_from_mechanism(rows.copy(), cols.copy(), 0, 1, 2.0, 1.0, "m", None)  # equal, not identical
    assert led._sparse[0][1] is rows and led._sparse[0][2] is cols
    assert [entry[7] is ledger_mod._LAYOUT_GRID for entry in led._sparse] == [True, False]
    assert (led.draws == 2).all()

    def run():
        res = simulate(DPUCB(), Bernoulli([0.75, 0.625, 0.5, 0.375, 0.25]), 600, R, seed=3, progress=False,
                       ledger_replicates=track, keep_arms=True)
        return res.realized_epsilon, res.certified_epsilon, res.arms

    fast = run()
    monkeypatch.setattr(ledger_mod, "_KNOWN_LAYOUTS", False)
    slow = run()
    for a, b in zip(fast, slow):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert np.isfinite(fast[0][-1, : min(R, track or R)]).all()


@pytest.mark.parametrize("name", ["private_ucb", "dp_ucb_bound", "dp_ucb", "dp_exp3_lap"])
@pytest.mark.parametrize("R, track", [(20, 4), (200, 8), (12, None)])
def test_pulled_and_grid_drains_equal_row_by_row(monkeypatch, name, R, track):
    """Drains of entries staged by their layout -- one row per replicate (``pulled_layout``: a
    round's pulled arms, staged apart and gathered field by field) or every stream with one footprint
    per entry (DP-UCB's lock-stepped inserts) -- give the ledger state of the row-by-row path (known
    layouts off), bit for bit."""
    from privbandit.engine import simulate
    from privbandit.envs import Bernoulli, switching_best_arm
    from privbandit.policies import DPEXP3Lap, REGISTRY

    made, marks = [], []

    class Spy(Ledger):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

        def _drain_sparse(self, sparse, pulled=()):
            marks.extend(e[7] for e in sparse if isinstance(e[7], ledger_mod._Layout))
            marks.extend(["pulled"] if pulled else [])
            return super()._drain_sparse(sparse, pulled)

    monkeypatch.setattr(ledger_mod, "Ledger", Spy)
    T = 300
    if name == "dp_exp3_lap":
        policy, env = DPEXP3Lap(epsilon=1.0), switching_best_arm(T, 5, 4, seed=0)
    else:
        policy, env = REGISTRY[name](), Bernoulli([0.75, 0.625, 0.5, 0.375, 0.25])

    def run():
        made.clear()
        res = simulate(policy, env, T, R, seed=3, progress=False, ledger_replicates=track)
        return res.realized_epsilon, _state(made[0])

    fast_eps, fast = run()
    assert marks  # the layouts were recognised
    marks.clear()
    monkeypatch.setattr(ledger_mod, "_KNOWN_LAYOUTS", False)
    slow_eps, slow = run()
    assert not marks
    assert fast_eps.tobytes() == slow_eps.tobytes()
    _assert_same(fast, slow)
    assert np.isfinite(fast_eps[-1, : min(R, track or R)]).all()


@pytest.mark.parametrize("R, K", [(1, 1), (1, 3), (2, 1), (3, 2)])
def test_queries_leave_the_difference_arrays_unchanged(R, K):
    """Queries sum the difference arrays into fresh arrays: a repeated query gives the same figures
    and the arrays keep their bits (a view of them summed in place would change both), whatever the
    shape (R_tracked = K = 1 makes the transposed positions a view)."""
    led = Ledger(R, K)
    for r in range(R):
        for k in range(K):
            led.record_laplace(r, k, [0, 1, 2], [3, 2, 4], [1.0, 2.0, 0.5], 1.0, mechanism="m")
            led.record_gaussian(r, k, 1, 3, 2.0, 1.0, mechanism="g")
    led._settle()
    before = {stat: diff.copy() for stat, diff in led._diff.items()}
    first = (led.realized_epsilon(1e-6), led.realized_pure_epsilon(), led.realized_mu())
    second = (led.realized_epsilon(1e-6), led.realized_pure_epsilon(), led.realized_mu())
    for a, b in zip(first, second):
        assert a.tobytes() == b.tobytes()
    for stat, diff in led._diff.items():
        assert diff.tobytes() == before[stat].tobytes()
    assert led._totals_at((ledger_mod._S_EPS,), np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([1]))[0][0] \
        == led._totals(ledger_mod._S_EPS, distinct=True)[0][0, 0, 1]


def _full_totals(led: Ledger, stat: int) -> np.ndarray:
    """The per-record totals by definition: the sequential sums of the whole difference column."""
    return np.cumsum(led._diff[stat][:, :, : led._top], axis=2)


@pytest.mark.parametrize("seed", range(4))
def test_kept_totals_equal_the_sums_of_every_record(monkeypatch, seed):
    """Per-record totals kept between queries (brought up to date per stream from the lowest position
    written since, summed up to the stream's last written position, the rest its total + 0.0) equal
    the sequential sums of every difference, bit for bit: queries between drains of releases that
    reach back to earlier positions (tree nodes), streams left idle, a statistic first used late, a
    pickled ledger (whose per-stream extents are not kept) and growth."""
    monkeypatch.setattr(ledger_mod, "_KEEP_MIN_TOP", 4)
    rng = np.random.default_rng(seed)
    R, K = 5, 3
    led = Ledger(R, K, track_replicates=3, capacity=16)
    counts = np.zeros((R, K), dtype=np.int64)
    kept_queries = 0
    for step in range(40):
        for _ in range(int(rng.integers(1, 30))):
            mask = rng.random((R, K)) < (0.8 if step % 5 else 0.1)
            mask[:, K - 1] &= step < 10 or step > 30  # a stream idle for a while
            counts[mask] += 1
            rr, kk = np.nonzero(mask)
            if rr.size == 0:
                continue
            hi = counts[rr, kk]
            lo = np.maximum(hi - rng.integers(1, 2 ** int(rng.integers(1, 7)), rr.size), 0)  # reaching back
            if step > 20 and step % 4 == 0:  # a statistic first used late
                led.record_gaussian(rr, kk, lo, hi, rng.uniform(1.0, 3.0, rr.size), 1.0, mechanism="g")
            else:
                led.record_laplace(rr, kk, lo, hi, rng.uniform(0.5, 4.0, rr.size), 1.0, mechanism="m")
        if step == 25:
            led = pickle.loads(pickle.dumps(led))
        led._settle()
        kept_queries += led._keeps()
        stats = sorted(led._diff)
        got = led._totals(*stats)
        for stat, totals in zip(stats, got):
            assert totals.tobytes() == _full_totals(led, stat).tobytes(), (step, stat)
        eps, pure, mu = led.realized_epsilon(1e-6), led.realized_pure_epsilon(), led.realized_mu()
        plain = pickle.loads(pickle.dumps(led))  # nothing kept
        with monkeypatch.context() as m:
            m.setattr(ledger_mod, "_KEEP_MIN_TOP", 2 ** 62)  # every record summed again
            assert not plain._keeps() and not plain._kept
            assert eps.tobytes() == plain.realized_epsilon(1e-6).tobytes()
            assert pure.tobytes() == plain.realized_pure_epsilon().tobytes()
            assert mu.tobytes() == plain.realized_mu().tobytes()
    assert led._capacity > 16 and kept_queries >= 30


def test_kept_totals_are_not_pickled_and_not_writable():
    """The kept totals are derived state: a ledger pickles to the same bytes whether or not a query
    kept them, and callers get read-only views."""
    led = Ledger(2, 2, capacity=1024)
    for t in range(1, 700):
        led.record_laplace([0, 1], [t % 2, 0], t - 1, t, 2.0, 1.0, mechanism="m")
    led._settle()
    before = pickle.dumps(led)
    (totals,) = led._totals(ledger_mod._S_EPS)
    assert led._kept and not totals.flags.writeable
    assert pickle.dumps(led) == before


def test_pulled_entries_fold_in_call_order_with_listed_ones(monkeypatch):
    """Entries of the pulled layout are staged apart (the drain takes their rows field by field) but folded in
    with the listed entries in call order: a record released listed (eps 0.1), pulled (0.2), listed
    (0.6) sums them in that order -- 0.9, where listed-then-pulled would give 0.8999999999999999 --,
    as the row-by-row path does, bit for bit."""
    R, K = 6, 2
    rows = ledger_mod.pulled_layout(R)

    def feed(led):
        led._record_from_mechanism(np.array([0, 4]), np.array([0, 1]), 0, 1, 1.0, 0.1, "m", None)
        led._record_from_mechanism(rows, np.zeros(R, dtype=np.intp), 0, np.ones(R, np.int64), 1.0, 0.2, "m", None)
        led._record_from_mechanism(np.array([0]), np.array([0]), 0, 1, 1.0, 0.6, "m", None)

    staged = Ledger(R, K, track_replicates=4)
    feed(staged)
    assert len(staged._sparse) == 2 and [entry[:2] for entry in staged._pulled] == [(0, 1)]
    fast, slow = _pair(monkeypatch, lambda: Ledger(R, K, track_replicates=4), feed)
    _assert_same(fast, slow)
    assert fast["pure"][0] == 0.9 and (0.1 + 0.6) + 0.2 != 0.9


def _mixed_calls(rng, R, K, calls):
    """Release calls as the mechanisms make them in a run of diverging streams: mostly the pulled
    layout (arms of every replicate; fields arrays or one value), the others listed rows (a subset of
    replicates, as a split round's part), of three kinds, footprints reaching back."""
    counts = np.zeros((R, K), dtype=np.int64)
    rows = ledger_mod.pulled_layout(R)
    out = []
    for t in range(calls):
        kind = dict(gaussian=True) if t % 7 == 3 else dict(discrete=True) if t % 11 == 5 else {}
        if rng.random() < 0.7:
            rr, kk = rows, rng.integers(0, K, R).astype(np.intp)
        else:
            rr = np.flatnonzero(rng.random(R) < 0.4)
            kk = rng.integers(0, K, rr.size).astype(np.intp)
        counts[rr, kk] += 1
        hi = counts[rr, kk] + (rng.integers(0, 3) if t % 9 == 0 else 0)  # some past the capacity
        lo = np.maximum(hi - rng.integers(1, 5, rr.size), 0) if t % 2 else int(rng.integers(0, 2))
        scale = rng.choice([0.5, 1.0, 3.0], rr.size) if t % 3 else float(rng.choice([2.0, 4.0]))
        sens = 1.0 if t % 4 else rng.uniform(0.1, 1.0, rr.size)
        out.append((rr, kk, lo, hi, scale, sens, kind))
    return out


@pytest.mark.parametrize("R, track, budget", [(9, 4, None), (9, None, None), (1, None, None), (40, 8, 5)])
def test_pulled_staging_equals_row_by_row(monkeypatch, R, track, budget):
    """Runs of pulled and listed entries mixed (kinds, scalars and arrays, drain boundaries, growth
    that drops tracked replicates mid-drain when ``budget`` caps the memory) and a ledger pickled
    mid-staging and continued: the state of the row-by-row path (known layouts off), bit for bit."""
    K = 3
    calls = _mixed_calls(np.random.default_rng(R), R, K, 700)
    cap = None if budget is None else K * (64 + 1) * _N_STATS * 8 * budget  # 5 tracked fit 64 positions

    def make():
        return Ledger(R, K, track_replicates=track, capacity=64, **({} if cap is None else dict(max_tracked_bytes=cap)))

    def feed(led, start=0, stop=None):
        for rr, kk, lo, hi, scale, sens, kind in calls[start:stop]:
            copy = lambda x: x.copy() if isinstance(x, np.ndarray) and x is not rr else x  # noqa: E731
            led._record_from_mechanism(copy(rr), kk.copy(), copy(lo), hi.copy(), copy(scale), copy(sens), "m", None,
                                       **kind)

    fast, slow = _pair(monkeypatch, make, feed)
    _assert_same(fast, slow)
    assert fast["draws"].sum() == sum(c[0].size for c in calls)
    if budget is not None:
        assert fast["n"] < 5  # tracking shrank at a growth
    half = make()
    feed(half, stop=333)
    assert half._pulled and half._sparse  # mid-staging: both forms pending
    resumed = pickle.loads(pickle.dumps(half))
    feed(resumed, start=333)
    _assert_same(_state(resumed), fast)


def test_pulled_entries_pickled_before_session_12_are_staged_apart_on_loading(monkeypatch):
    """A ledger pickled while entries of the pulled layout were staged among the listed ones (marked
    ``_LAYOUT_PULLED``, before session 12) loads with them staged apart, in call order, and
    continues to the state of a ledger that staged them so."""
    R, K = 9, 3
    calls = _mixed_calls(np.random.default_rng(5), R, K, 400)

    def feed(led, start=0, stop=None):
        for rr, kk, lo, hi, scale, sens, kind in calls[start:stop]:
            led._record_from_mechanism(rr, kk.copy(), lo, hi.copy(), scale, sens, "m", None, **kind)

    whole = Ledger(R, K, track_replicates=4)
    feed(whole)
    half = Ledger(R, K, track_replicates=4)
    feed(half, stop=300)
    # the same pending entries as the old staging held them: one list in call order
    assert half._pulled and half._sparse
    legacy = list(half._sparse)
    for kind, position, st, lo, hi, scale, sens in reversed(half._pulled):
        legacy.insert(position, (kind, ledger_mod.pulled_layout(R), st, lo, hi, scale, sens, ledger_mod._LAYOUT_PULLED))
    state = {k: v for k, v in half.__getstate__().items() if k != "_pulled"}
    state["_sparse"] = legacy
    old = Ledger.__new__(Ledger)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    assert [e[:2] for e in old._pulled] == [e[:2] for e in half._pulled] and len(old._sparse) == len(half._sparse)
    feed(old, start=300)
    _assert_same(_state(old), _state(whole))


@pytest.mark.parametrize("length", [5, 128, 129, 300])
def test_leading_rows_equal_the_flattened_heads(length):
    """A drain's first rows of pulled entries -- fields all arrays, all one value per entry (the same
    or different), or a mix with 0-d arrays among them -- equal the flattening of each entry's head."""
    rng = np.random.default_rng(length)
    n = 3
    cases = [
        tuple(rng.uniform(0.5, 4.0, length) for _ in range(9)),
        (2.0,) * 9,
        tuple(float(x) for x in rng.uniform(0.5, 4.0, 9)),
        tuple(rng.uniform(0.5, 4.0, length) if i % 3 else 1.5 + i for i in range(9)),
        tuple(np.asarray(7.0) if i == 4 else rng.integers(0, 50, length) if i % 2 else i for i in range(9)),
    ]
    for values in cases:
        for dtype in (float, np.int64):
            heads = tuple(v[:n] if type(v) is np.ndarray and v.ndim else v for v in values)
            want = ledger_mod._flatten(heads, (np.empty(n, dtype=bool),) * len(values), dtype)
            got = ledger_mod._leading_rows(values, length, n, dtype)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
