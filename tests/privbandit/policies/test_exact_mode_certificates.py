"""Exact (floating-point-safe) mode certifies the DISCRETE Laplace it releases, never the continuous one.

Found by the session-4 red team: Lazy-DP-TS certified its exact-mode release with the continuous
Laplace closed form eps + 2 ln(1 - delta); the discrete Laplace's profile is slightly worse (mass
1/(1 + q) > 1/2 at the largest loss), so the exact delta at the certified epsilon exceeded the
target -- by 3e-6 relative at eps 7.3, delta 1e-6. Private-TS recorded its gap release as a
continuous Laplace event as well (valid by a hair at its parameters, but not by construction).
The reference below is the discrete Laplace's exact profile, summed in mpmath.
"""

from __future__ import annotations

import numpy as np
import pytest

from accountants.events import DiscreteLaplace
from privbandit.policies import LazyDPTS, LazyDPTSN, PrivateTS
from privbandit.policies.base import schedule_for

mp = pytest.importorskip("mpmath")


def exact_delta(leaf: DiscreteLaplace, eps: float):
    """delta(eps) = sum_z p(z) (1 - e^(eps - L(z)))_+ for noise t Z, P(z) ~ q^|z|, q = e^(-1/t), and the
    loss L(z) = (|z - u| - |z|) / t of a shift by u grid units (t, u in grid units)."""
    with mp.workdps(50):
        return _exact_delta(leaf, eps)


def _exact_delta(leaf: DiscreteLaplace, eps: float):
    t = mp.mpf(leaf.scale) / mp.mpf(leaf.grid)
    u = int(round(leaf.sensitivity / leaf.grid))
    q = mp.e ** (-1 / t)
    eps = mp.mpf(eps)
    total = mp.mpf(0)
    if u / t > eps:  # z <= 0: the largest loss u / t, mass 1 / (1 + q)
        total += (1 - mp.e ** (eps - u / t)) / (1 + q)
    z = 1
    while z < u and (u - 2 * z) / t > eps:  # 0 < z < u: loss (u - 2z) / t
        total += (1 - q) / (1 + q) * q ** z * (1 - mp.e ** (eps - (u - 2 * z) / t))
        z += 1
    return total


@pytest.mark.parametrize("policy, structure", [(LazyDPTS(epsilon=7.3, exact=True), None),
                                               (LazyDPTS(epsilon=1.0, exact=True), None),
                                               (LazyDPTSN(epsilon=7.3, exact=True), {"max_degree": 2})],
                         ids=["lazy_dp_ts-7.3", "lazy_dp_ts-1", "lazy_dp_ts_n-7.3"])
def test_lazy_dp_ts_exact_mode_is_never_below_the_discrete_truth(policy, structure):
    schedule = schedule_for(policy, 200, 3, structure, "entry")
    (leaf,) = schedule.events(200).grouped()
    assert isinstance(leaf, DiscreteLaplace)
    for delta in (1e-12, 1e-9, 1e-6, 1e-3, 0.1):
        eps = schedule.epsilon(200, delta).value
        assert exact_delta(leaf, eps) <= delta, (delta, eps)  # was 1.000002981e-6 at 1e-6 (eps 7.3)


def test_float_mode_keeps_its_exact_closed_form():
    cert = schedule_for(LazyDPTS(epsilon=7.3), 200, 3).epsilon(200, 1e-6)
    assert cert.by == "laplace-exact" and cert.value == pytest.approx(7.3 + 2 * np.log1p(-1e-6), rel=1e-15)


def test_private_ts_exact_gap_release_is_a_discrete_event_and_certified_as_one():
    schedule = schedule_for(PrivateTS(epsilon=1.0, exact=True), 200, 3)
    gap, _ = schedule._parts(200)
    assert isinstance(gap, DiscreteLaplace) and all(isinstance(g, DiscreteLaplace) for g in schedule._gap_leaves)
    for delta in (1e-9, 1e-6, 1e-3):
        eps = schedule.epsilon(200, delta).value
        assert all(exact_delta(g, eps) <= delta for g in schedule._gap_leaves)


@pytest.mark.parametrize("policy", [LazyDPTS(epsilon=1.0, exact=True), PrivateTS(epsilon=1.0, exact=True)], ids=repr)
def test_tight_ledger_realized_within_the_exact_mode_certificate(policy):
    # the tight ledger certifies the DiscreteLaplace events it saw; the schedule now certifies the same
    from privbandit import simulate
    from privbandit.envs import RewardTable

    env = RewardTable(np.random.default_rng(0).random((200, 3)))
    result = simulate(policy, env, 200, 4, seed=3, ledger="tight", progress=False)
    assert result.realized_within_certificate()


def test_dp_ucb_int_exact_mode_certifies_discrete_releases():
    """DP-UCB-Int in exact mode: its schedule's releases are the DiscreteLaplace events the ledger
    records (up to exact_limit releases), and beyond that the grouped releases are charged as pure
    e-DP (valid for the discrete Laplace), never by the continuous Laplace curves."""
    from accountants.events import Laplace, PureDP
    from privbandit.policies import DPUCBInt

    exact = schedule_for(DPUCBInt(epsilon=1.0, exact=True), 200_000, 5)
    floating = schedule_for(DPUCBInt(epsilon=1.0), 200_000, 5)
    small = exact.events(2000)
    assert list(small.leaves()) and all(isinstance(leaf, DiscreteLaplace) for leaf, _ in small.leaves())
    grouped = exact.grouped_events(200_000)
    assert all(isinstance(leaf, PureDP) for leaf, _ in grouped.leaves())
    assert all(isinstance(leaf, Laplace) for leaf, _ in floating.grouped_events(200_000).leaves())
    # the single-release certificate is at least the discrete truth (mpmath profile above)
    first = schedule_for(DPUCBInt(epsilon=1.0, exact=True), 2000, 5)
    rounds = 5 * first.first  # the round-robin phase: one release of the worst record
    [(leaf, count)] = list(first.events(rounds).leaves())
    assert count == 1
    for delta in (1e-3, 1e-6, 1e-10):
        eps = first.epsilon(rounds, delta).value
        assert exact_delta(leaf, eps) <= delta


def test_dp_ucb_int_exact_tight_ledger_realized_within_certificate():
    from privbandit import simulate
    from privbandit.envs import RewardTable
    from privbandit.policies import DPUCBInt

    env = RewardTable(np.random.default_rng(1).random((1500, 2)))
    result = simulate(DPUCBInt(interval=20, exact=True), env, 1500, 2, seed=5, ledger="tight", progress=False)
    assert result.realized_within_certificate()
