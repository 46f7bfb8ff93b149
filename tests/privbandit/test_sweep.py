from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from privbandit.envs import Bernoulli, TruncatedExponential
from privbandit.policies import BetaTS, GaussianTS, LazyDPTS
from privbandit.sweep import sweep

POLICIES = {"beta_ts": BetaTS(), "gts": GaussianTS(b=2, c=4.0), "lazy": LazyDPTS(epsilon=1.0)}
ENVS = {"bern": Bernoulli([0.7, 0.5, 0.3]), "texp": TruncatedExponential([0.1, 2.0, 10.0])}


def _curves(result):
    return {(p, e): r.regret_mean for p, e, r in result}


def test_sweep_is_reproducible_and_independent_of_the_executor():
    seq = sweep(POLICIES, ENVS, 300, 8, seed=5)
    assert len(seq) == 6 and [(p, e) for p, e, _ in seq][:2] == [("beta_ts", "bern"), ("beta_ts", "texp")]
    with ThreadPoolExecutor(2) as pool:
        threaded = sweep(POLICIES, ENVS, 300, 8, seed=5, executor=pool)
    with ProcessPoolExecutor(2) as pool:
        processes = sweep(POLICIES, ENVS, 300, 8, seed=5, executor=pool)
    for other in (threaded, processes):
        for key, curve in _curves(seq).items():
            np.testing.assert_array_equal(curve, _curves(other)[key])
    # cells are independent: the same policy on the same environment in two cells differs
    twice = sweep([BetaTS()], {"a": ENVS["bern"], "b": ENVS["bern"]}, 300, 8, seed=5)
    assert not np.array_equal(twice.get(repr(BetaTS()), "a").regret_mean, twice.get(repr(BetaTS()), "b").regret_mean)


def test_sweep_on_a_dask_cluster_matches_the_sequential_run():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        remote = sweep(POLICIES, ENVS, 200, 6, seed=9, executor=client)
    local = sweep(POLICIES, ENVS, 200, 6, seed=9)
    for key, curve in _curves(local).items():
        np.testing.assert_array_equal(curve, _curves(remote)[key])


def test_sweep_tables_and_errors(tmp_path):
    res = sweep({"b": BetaTS()}, {"e": ENVS["bern"]}, 100, 3, seed=0)
    frame = res.summary_frame()
    assert list(frame["policy_label"]) == ["b"] and "certified_epsilon" in frame
    assert len(res.to_frame()) == 100
    res.plot(str(tmp_path / "s.png"))
    assert (tmp_path / "s.png").exists()
    with pytest.raises(ValueError, match="policies"):
        sweep([], ENVS, 100, 2)
    with pytest.raises(ValueError, match="envs"):
        sweep(POLICIES, {"x": "not an env"}, 100, 2)
    with pytest.raises(ValueError, match="submit"):
        sweep(POLICIES, ENVS, 100, 2, executor=object())
