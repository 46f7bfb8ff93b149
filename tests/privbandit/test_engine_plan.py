"""Planned rounds (issue 19): ``PolicyRun.plan`` / ``update_block``, ``EnvironmentRun.rewards_block``,
``FreshBatchMean.insert_pulled_rounds`` and the engine's planned path.

The contract (policies.base): a run that plans commits to the arms of rounds ahead whatever their
rewards, and ``update_block`` is exactly those rounds' ``update`` calls. Every planner is checked
against its own per-round path -- arms, regret, pulls, the tight ledger's every release (footprint,
scale, node), realized and certified epsilons -- at 1 and 7 replicates, with checkpoints inside
epochs and batches, with and without ``keep_arms``.
"""

from __future__ import annotations

import numpy as np
import pytest

import privbandit
from privbandit.envs import Bernoulli, ClippedGaussian, TruncatedExponential
from privbandit.envs.base import BlockedRun, Environment, EnvironmentRun, StationaryEnvironment
from privbandit.ledger import Ledger
from privbandit.mechanisms.fresh_batch import FreshBatchMean
from privbandit.policies import make_policy
from privbandit.policies.base import Policy, PolicyRun
from privbandit.testing.digest import Digest, add_ledger

MEANS = [0.75, 0.625, 0.5, 0.375, 0.25]
# configurations whose stretches end inside the horizon: DP-SE (epsilon 4, beta 0.5) closes its first
# epoch (R_1 = 561 pulls per arm) at round 2805 and eliminates; batched EXP3 at epsilon 0.2 has
# tau = 5; EXP3-tau with tau = 7 (horizon 3000 is no multiple: a short last batch)
PLANNERS = {
    "dp_se": dict(epsilon=4.0, beta=0.5),
    "batched_private_exp3": dict(epsilon=0.2),
    "exp3_tau": dict(tau=7),
    "anytime_lazy_ucb": dict(epsilon=1.0),
}
T = 3000
CHECKPOINTS = [3, 50, 561, 1127, 2222, 2805, 2806]  # inside epochs and batches, and at an epoch's end


def _per_round(monkeypatch, policy):
    """Force the per-round path: the run's class no longer plans."""
    cls = type(policy.start(len(MEANS), 1, T, np.random.default_rng(0)))
    monkeypatch.setattr(cls, "plan", PolicyRun.plan)


def _result_digest(res) -> list:
    out = [res.arms, res.final_regret, res.regret_mean, res.regret_lower, res.regret_upper, res.pulls,
           res.certified_epsilon]
    out += [x for x in (res.realized_epsilon, res.certified_closed_form) if x is not None]
    return out


def _assert_same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x is None:
            assert y is None
        else:
            np.testing.assert_array_equal(x, y)  # bit-identical (NaN == NaN here)


def _count_plans(monkeypatch, policy) -> list:
    """Spy on the run's plan: the lengths of the blocks it returns."""
    cls = type(policy.start(len(MEANS), 1, T, np.random.default_rng(0)))
    original, lengths = cls.plan, []

    def spy(self, t, limit):
        arms = original(self, t, limit)
        if arms is not None:
            lengths.append((t, limit, arms.shape[0]))
        return arms

    monkeypatch.setattr(cls, "plan", spy)
    return lengths


@pytest.mark.parametrize("name", sorted(PLANNERS))
@pytest.mark.parametrize("replicates", [1, 7])
@pytest.mark.parametrize("keep_arms", [True, False])
def test_planned_simulate_equals_per_round(monkeypatch, name, replicates, keep_arms):
    policy = make_policy(name, **PLANNERS[name])
    kwargs = dict(seed=4, progress=False, keep_arms=keep_arms, checkpoints=CHECKPOINTS, realized_points=8,
                  ledger="tight" if keep_arms else True)
    with monkeypatch.context() as m:
        lengths = _count_plans(m, policy)
        planned = privbandit.simulate(policy, Bernoulli(MEANS), T, replicates, **kwargs)
    # the planned path was taken, in stretches longer than a round, none crossing a checkpoint
    assert sum(n for _, _, n in lengths) == T and max(n for _, _, n in lengths) > 1
    cps = np.asarray(CHECKPOINTS)
    for t, limit, n in lengths:
        assert 1 <= n <= limit and not np.any((cps >= t) & (cps < t + n - 1))
    with monkeypatch.context() as m:
        _per_round(m, policy)
        per_round = privbandit.simulate(policy, Bernoulli(MEANS), T, replicates, **kwargs)
    _assert_same(_result_digest(planned), _result_digest(per_round))


def _drive(policy, replicates: int, planned: bool, limits: np.random.Generator | None = None, env=None,
           horizon: int = T) -> str:
    """A run driven by hand with a tight ledger: per round (select/rewards/update) or in planned
    stretches of random limits (plan/rewards_block/update_block). Digest of arms and every release."""
    env = env or Bernoulli(MEANS)
    seq_p, seq_e = np.random.SeedSequence(8).spawn(2)
    led = Ledger(replicates, env.n_arms, tight=True, capacity=horizon)
    run = policy.start(env.n_arms, replicates, horizon, np.random.default_rng(seq_p), ledger=led)
    env_run = env.start(replicates, np.random.default_rng(seq_e))
    d, t = Digest(), 1
    while t <= horizon:
        if planned:
            limit = min(int(limits.integers(1, 400)), horizon - t + 1)
            arms = run.plan(t, limit)
            assert arms is not None and 1 <= arms.shape[0] <= limit
            run.update_block(t, arms, env_run.rewards_block(t, arms))
            for row in arms:
                d.add(np.asarray(row, dtype=np.int64))
            t += arms.shape[0]
        else:
            arms = run.select(t)
            run.update(t, arms, env_run.rewards(t, arms))
            d.add(np.asarray(arms, dtype=np.int64))
            t += 1
    add_ledger(d, led)
    return d.hexdigest()


@pytest.mark.parametrize("name, exact", [(name, exact) for name in sorted(PLANNERS)
                                          for exact in ((False,) if name == "exp3_tau" else (False, True))])
@pytest.mark.parametrize("replicates", [1, 7])
def test_plan_update_block_equals_select_update(name, replicates, exact):
    """The run-level contract, ledger included: random stretch limits, exact and float noise (EXP3-tau
    is not private: no exact mode)."""
    kw = dict(PLANNERS[name])
    if name != "exp3_tau":
        kw["exact"] = exact
    policy = make_policy(name, **kw)
    per_round = _drive(policy, replicates, planned=False)
    assert _drive(policy, replicates, planned=True, limits=np.random.default_rng(1)) == per_round
    assert _drive(policy, replicates, planned=True, limits=np.random.default_rng(2)) == per_round


class _PlainRun(EnvironmentRun):
    """A run with ``rewards`` only: the engine's planned path uses the default ``rewards_block``."""

    def __init__(self, inner):
        self.inner = inner

    def rewards(self, t, arms):
        return self.inner.rewards(t, arms)


class _PlainEnvironment(StationaryEnvironment):
    name = "plain"

    def __init__(self, inner):
        super().__init__(inner.means)
        self.inner = inner

    def start(self, replicates, rng):
        return _PlainRun(self.inner.start(replicates, rng))


def test_default_rewards_block_gives_the_same_run():
    env = _PlainEnvironment(Bernoulli(MEANS))
    assert type(env.start(1, np.random.default_rng(0))).rewards_block is EnvironmentRun.rewards_block
    policy = make_policy("dp_se", **PLANNERS["dp_se"])
    kwargs = dict(seed=2, progress=False, keep_arms=True, checkpoints=CHECKPOINTS, ledger="tight")
    for replicates in (1, 7):
        a = privbandit.simulate(policy, env, T, replicates, **kwargs)
        b = privbandit.simulate(policy, Bernoulli(MEANS), T, replicates, **kwargs)
        _assert_same(_result_digest(a), _result_digest(b))


@pytest.mark.parametrize("env", [TruncatedExponential([0.1, 1.0, 2.0, 5.0, 10.0]),
                                 ClippedGaussian([0.3, 0.5, 0.6, 0.4, 0.55], 0.2)], ids=lambda e: e.name)
def test_planned_rewards_of_continuous_environments(monkeypatch, env):
    """Row-by-row (log1p) and one-call (clip) block transforms: the per-round rewards, bit for bit."""
    policy = make_policy("dp_se", **PLANNERS["dp_se"])
    kwargs = dict(seed=6, progress=False, keep_arms=True, checkpoints=CHECKPOINTS, ledger="tight")
    planned = privbandit.simulate(policy, env, T, 7, **kwargs)
    with monkeypatch.context() as m:
        _per_round(m, policy)
        per_round = privbandit.simulate(policy, env, T, 7, **kwargs)
    _assert_same(_result_digest(planned), _result_digest(per_round))


class _Uniforms(BlockedRun):
    def rewards(self, t, arms):
        return self._variates()


def test_variates_block_across_refills():
    """Blocks that straddle buffer refills hand out the same variates as one round at a time."""
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    a, b = _Uniforms(3, rng_a, block=5), _Uniforms(3, rng_b, block=5)
    one = np.stack([a._variates() for _ in range(40)])
    sizes, rows = [1, 4, 7, 2, 12, 5, 9], []
    for n in sizes:
        rows.append(b._variates_block(n))
    np.testing.assert_array_equal(np.concatenate(rows), one)


@pytest.mark.parametrize("batches", ["doubling", "manual"])
@pytest.mark.parametrize("masked", [False, True])
def test_insert_pulled_rounds_equals_insert_pulled(batches, masked):
    """Mechanism level: batches filling inside a block are released in their round, in order."""
    R, K, n = 6, 3, 90
    rng = np.random.default_rng(0)
    arms = rng.integers(0, K, size=(n, R))
    values = rng.random((n, R))
    mask = rng.random(R) < 0.6 if masked else None
    digests = []
    for blocked in (False, True):
        led = Ledger(R, K, tight=True, capacity=n)
        fb = FreshBatchMean(R, K, epsilon=1.0, rng=np.random.default_rng(5), ledger=led, batches=batches)
        if batches == "manual":
            fb.set_batch_size(np.random.default_rng(9).integers(0, 12, size=(R, K)))  # 0: closes never
        if blocked:
            j = 0
            for size in (1, 17, 2, 40, 30):  # stretches of assorted lengths
                block = arms[j:j + size]
                filling = fb.filling_round(block, mask)
                before = fb.n_batches.copy()
                fb.insert_pulled_rounds(block, values[j:j + size], mask)
                if filling < 0:
                    np.testing.assert_array_equal(fb.n_batches, before)
                j += size
        else:
            for j in range(n):
                if mask is None:
                    fb.insert_pulled(arms[j], values[j])
                else:
                    one_hot = np.zeros((R, K))
                    sel = np.zeros((R, K), dtype=bool)
                    sel[np.arange(R), arms[j]] = True
                    sel &= mask[:, None]
                    one_hot[np.arange(R), arms[j]] = values[j]
                    fb.insert(one_hot, sel)
        d = Digest()
        for x in (fb.count, fb.pending, fb.noisy_sum, fb.batch_size, fb.n_batches, fb._open_sum):
            d.add(x)
        add_ledger(d, led)
        digests.append(d.hexdigest())
    assert digests[0] == digests[1]


def test_filling_round_finds_the_first_release():
    R, K = 4, 3
    fb = FreshBatchMean(R, K, epsilon=1.0, rng=np.random.default_rng(0), ledger=None, batches="doubling")
    arms = np.zeros((1, R), dtype=np.int64)
    assert fb.filling_round(arms) == 0  # every first batch holds one record
    fb.insert_pulled_rounds(np.tile(np.arange(K), (R, 1)).T, np.full((K, R), 0.5))  # each arm's batch 0
    block = np.array([[0, 1, 2, 0]] * 3)  # batch 1 holds 2: the second pull of an arm fills it
    assert fb.filling_round(block) == 1
    assert fb.filling_round(block[:1]) == -1
    with pytest.raises(ValueError, match="arms must lie"):
        fb.insert_pulled_rounds(block + 5, np.zeros(block.shape))
    with pytest.raises(ValueError, match="values must lie"):
        fb.insert_pulled_rounds(block, np.full(block.shape, 1.5))
    assert fb.count.sum() == K * R  # refused before anything was inserted


# --- what the engine can and cannot check -----------------------------------------------------------


class _FollowRun(PolicyRun):
    """Plays arm 0 until a reward of 1, then arm 1 for good: its arms DO depend on the rewards.
    ``lie=True`` plans anyway (the current arm for up to 50 rounds), breaking the contract."""

    def __init__(self, replicates, lie):
        self.arms = np.zeros(replicates, dtype=np.intp)
        self.lie = lie

    def select(self, t):
        return self.arms.copy()

    def plan(self, t, limit):
        if not self.lie:
            return None
        return np.tile(self.arms, (min(limit, 50), 1))

    def update(self, t, arms, rewards):
        self.update_block(t, arms[None], rewards[None])

    def update_block(self, t, arms, rewards):
        self.arms = np.where((rewards >= 1.0).any(axis=0), 1, self.arms)


class _Follow(Policy):
    name = "follow"

    def __init__(self, lie):
        self.lie = lie

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        return _FollowRun(replicates, self.lie)


def test_a_lying_plan_goes_undetected_by_the_engine_but_not_by_the_equivalence_test(monkeypatch):
    """The engine can check a plan's form only: whether select would have chosen the same arms after
    rewards it has not yet fed is unknowable to it. Such a policy changes the run silently -- which
    is why every planner is tested against its own per-round path (above), a test this one fails."""
    env, kwargs = Bernoulli([0.9, 0.1]), dict(seed=1, progress=False, keep_arms=True, checkpoints=[400])
    lying = privbandit.simulate(_Follow(True), env, 400, 3, **kwargs)
    assert (lying.arms[:50] == 0).all()  # committed to arm 0 for the first stretch, whatever the rewards
    _per_round(monkeypatch, _Follow(True))
    per_round = privbandit.simulate(_Follow(True), env, 400, 3, **kwargs)
    assert (per_round.arms[1:50] == 1).any()  # per round it switches after its first reward of 1
    assert not np.array_equal(lying.arms, per_round.arms)


class _BadPlanRun(_FollowRun):
    def __init__(self, replicates, answer):
        super().__init__(replicates, False)
        self.answer = answer

    def plan(self, t, limit):
        return self.answer(limit, self.arms.size)


class _BadPlan(Policy):
    name = "bad_plan"

    def __init__(self, answer):
        self.answer = answer

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        return _BadPlanRun(replicates, self.answer)


@pytest.mark.parametrize("answer", [
    lambda limit, r: np.zeros((0, r), dtype=np.intp),  # no round
    lambda limit, r: np.zeros((limit + 1, r), dtype=np.intp),  # past the limit (a checkpoint)
    lambda limit, r: np.zeros((1, r + 1), dtype=np.intp),  # wrong replicates
    lambda limit, r: np.zeros((1, r)),  # float arms
    lambda limit, r: np.zeros(r, dtype=np.intp),  # one round's shape
], ids=["empty", "past_limit", "width", "float", "flat"])
def test_the_engine_checks_the_form_of_a_plan(answer):
    with pytest.raises(ValueError, match="plan must return None or an integer array"):
        privbandit.simulate(_BadPlan(answer), Bernoulli([0.9, 0.1]), 100, 3, seed=0, progress=False)


class _OutOfRangeRun(EnvironmentRun):
    def __init__(self, replicates):
        self.replicates = replicates

    def rewards(self, t, arms):
        return np.full(self.replicates, 2.0 if t == 37 else 0.5)


class _OutOfRange(Environment):
    name = "out_of_range"
    n_arms = 5

    def start(self, replicates, rng):
        return _OutOfRangeRun(replicates)

    def expected(self, t, arms):
        return np.full(np.shape(arms), 0.5)

    def best(self, t):
        return np.full(np.shape(t), 0.5)


def test_strict_rewards_names_the_round_inside_a_planned_stretch(monkeypatch):
    policy = make_policy("dp_se", **PLANNERS["dp_se"])
    lengths = _count_plans(monkeypatch, policy)
    with pytest.raises(ValueError, match="in round 37 lies outside"):
        privbandit.simulate(policy, _OutOfRange(), 100, 2, seed=0, progress=False, strict_rewards=True,
                            checkpoints=[100])
    assert lengths and lengths[0][2] > 37  # round 37 was inside a planned stretch
    # clipped (the default), the planned run equals the per-round one
    planned = privbandit.simulate(policy, _OutOfRange(), 100, 2, seed=0, progress=False, keep_arms=True)
    monkeypatch.undo()
    _per_round(monkeypatch, policy)
    per_round = privbandit.simulate(policy, _OutOfRange(), 100, 2, seed=0, progress=False, keep_arms=True)
    _assert_same(_result_digest(planned), _result_digest(per_round))


def test_dpse_snapshot_without_the_round_robin_order_loads():
    """A deployment snapshot pickled before the planning state existed (no ``order``/``n_active``)
    restores them from ``active``: the run continues as the original."""
    import pickle

    policy = make_policy("dp_se", **PLANNERS["dp_se"])
    run = policy.start(5, 2, T, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    for t in range(1, 2900):  # past the first epoch's elimination
        arms = run.select(t)
        run.update(t, arms, (rng.random(2) < 0.5).astype(float))
    old = pickle.loads(pickle.dumps(run))
    for name in ("order", "n_active"):
        del old.__dict__[name]
    restored = pickle.loads(pickle.dumps(old))
    np.testing.assert_array_equal(restored.plan(2900, 50), run.plan(2900, 50))
    np.testing.assert_array_equal(restored.select(2900), run.select(2900))


def test_round_relation_planned_equals_per_round(monkeypatch):
    """relation="round": with bandit feedback every record is its own round (note_rounds is needed
    only with side observations, which never plan), so the realized round-level spend is unchanged."""
    policy = make_policy("dp_se", **PLANNERS["dp_se"])
    kwargs = dict(seed=3, progress=False, keep_arms=True, checkpoints=CHECKPOINTS, relation="round")
    planned = privbandit.simulate(policy, Bernoulli(MEANS), T, 7, **kwargs)
    _per_round(monkeypatch, policy)
    per_round = privbandit.simulate(policy, Bernoulli(MEANS), T, 7, **kwargs)
    assert np.isfinite(planned.realized_epsilon[-1, 0])
    _assert_same(_result_digest(planned), _result_digest(per_round))
