"""DP-UCB-Int's certificate at any horizon (session 18): the release counts as arithmetic runs
(privbandit.policies.interval_plan), never one entry per release.

Session 17: with decay > 0 a certificate at 10^8 rounds laid out 10^8 counts (146-485 s, ~7 GB), and exact
mode's per-release arrays could not be allocated at 10^12 (5e9 releases). Each test certifies at 10^12 and
checks the grouped event against the releases themselves: as many releases as the per-release definition
counts, and each sampled release charged at least its own eps (the sampler's scale and sensitivity).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from accountants.events import exact_pure_epsilon
from accountants.kov import KOVHeterogeneousAccountant
from accountants.pure import PureAccountant
from privbandit.policies import DPUCBInt
from privbandit.policies.interval_plan import ReleasePlan, interval_step


def _reference_counts(first: int, decay: float, limit: int) -> list[int]:
    """Release counts c_j = f_1 + ... + f_j <= limit, one by one (Algorithm 3's definition)."""
    out, c, j = [], 0, 1
    while True:
        c += interval_step(first, decay, j)
        if c > limit:
            return out
        out.append(c)
        j += 1


@pytest.mark.parametrize("first, decay, limit", [(4, 1.0, 12), (3, 0.0, 10), (10, 0.5, 5000), (197, 0.1, 40_000),
                                                 (1000, 0.3, 30_000), (2, 2.0, 600), (7, 1e-3, 3000), (100, 5.0, 900)])
def test_plan_is_the_per_release_definition(first, decay, limit):
    want = _reference_counts(first, decay, limit)
    plan = ReleasePlan(first, decay)
    for x in (limit // 7, limit // 2, 1, limit):  # laid out in pieces, in any order of queries
        assert plan.releases_upto(x) == sum(c <= x for c in want)
    assert plan.counts(limit).tolist() == want
    assert [plan.count(j) for j in range(1, len(want) + 1)] == want


def _charges(event) -> tuple[list[Fraction], np.ndarray]:
    """(charged eps as exact fractions, multiplicity) of each group, in release order."""
    leaves = list(event.leaves())
    return [exact_pure_epsilon(leaf) for leaf, _ in leaves], np.array([n for _, n in leaves], dtype=np.int64)


@pytest.mark.parametrize("params", [dict(interval=10, decay=0.5), dict(interval=197, decay=0.1),
                                    dict(exact=True), dict(interval=200, decay=0.2, exact=True)])
def test_grouped_certificate_at_1e12_covers_every_release(params):
    T, K = 10**12, 2
    sched = DPUCBInt(**params).privacy_schedule(T, K)
    m = sched._releases(T)
    n = sched.max_items(T)
    plan = ReleasePlan(sched.first, sched.policy.decay)
    assert m == plan.releases_upto(n) > 10**8
    eps, mult = _charges(sched.grouped_events(T))
    assert mult.sum() == m and len(eps) < 5000
    ends = np.cumsum(mult)
    rng = np.random.default_rng(18)
    js = np.unique(np.r_[1, 2, m, rng.integers(1, m + 1, 400), ends[:50], ends[:50] + 1, ends[-50:]])
    js = js[(js >= 1) & (js <= m)]
    counts = np.array([plan.count(int(j)) for j in js])
    scale, sens = sched._leaf_parts(counts)
    # each release's exact eps as drawn: sensitivity / scale of the floats (u / t on the grid in exact mode)
    own = [Fraction(float(d)) / Fraction(float(b)) for b, d in zip(scale, sens)]
    charged = [eps[g] for g in np.searchsorted(ends, js)]
    assert all(c >= o for c, o in zip(charged, own))
    if not sched.policy.exact:
        assert all(c <= o * Fraction(10101, 10000) for c, o in zip(charged, own))
    # (two cheap accountants: the full certificate's are timed in bench/long_horizon_certs.py)
    cert = sched.epsilon(T, 1e-6, [PureAccountant, KOVHeterogeneousAccountant])
    assert math.isfinite(cert.value) and max(own) <= cert.value <= cert.values["pure"]


@pytest.mark.parametrize("params", [dict(exact=True), dict(interval=200, decay=0.2, exact=True)])
def test_counts_past_int64_are_certified_not_overflowed(params):
    """The budget certifies up to 10^30 rounds; pull counts past 2^63 (never reached by a run) are read as
    floats (an OverflowError escaped the budget at 10^19 rounds in exact mode before)."""
    from privbandit import budget

    cert = budget.epsilon("dp_ucb_int", 10**30, 1e-6, accountants=[PureAccountant, KOVHeterogeneousAccountant],
                          **params)
    assert math.isfinite(cert.value) and cert.value > 0
