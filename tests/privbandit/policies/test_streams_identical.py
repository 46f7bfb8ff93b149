"""Every private policy keeps its random streams and arithmetic through the per-round speed work.

Extends the golden-master test (tests/privbandit/mechanisms/test_bit_identical.py, which covers the
mechanisms and five tree/hybrid/split policies at 7 replicates) to every private policy, at 1
replicate (the deployment case, where scalar fast paths apply) and at 7, each with a tight ledger
(every release with its footprint, scale and node) and through ``simulate`` (arms, regret, pulls).
The digests were recorded with the code as it was BEFORE the per-round overhead work of issue 19
(commit c551e4f); a change of any arm, noise value, floating-point operation on a noisy statistic
or ledger release makes one differ.

The exact-mode digests were re-recorded when exact mode began recording discrete-Laplace releases
(equal to the earlier ones with that release kind mapped back to Laplace, checked then).

Regenerate after an INTENTIONAL stream change: ``python tests/privbandit/policies/test_streams_identical.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import privbandit
from privbandit.envs import Bernoulli
from privbandit.ledger import Ledger
from privbandit.policies import GaussianTS, make_policy
from privbandit.testing.digest import Digest, add_ledger as _add_ledger

DIGEST_NUMPY = "2.4."  # as in test_bit_identical.py: Generator streams and short-row sums are numpy's


pytestmark = pytest.mark.skipif(not np.__version__.startswith(DIGEST_NUMPY),
                                reason=f"golden digests recorded with numpy {DIGEST_NUMPY}x, running {np.__version__}")

MEANS = [0.75, 0.625, 0.5, 0.375, 0.25]
T = 400  # past the 256-call ledger drain and several tree levels; DP-UCB-Int (f = 1) releases every pull
T_DPSE = 3200  # DP-SE's first epoch needs R_1 = 561 pulls per arm (epsilon 4, beta 0.5): two epochs close
POLICIES = ["private_ucb", "dp_ucb_bound", "dp_ucb", "dp_ucb_int", "dp_se", "anytime_lazy_ucb", "dp_ts",
            "private_ts", "lazy_dp_ts", "gaussian_ts"]


def _policy(name: str, exact: bool):
    if name == "gaussian_ts":
        return GaussianTS(b=2, c=4.0)
    if name == "dp_se":  # epoch sizes small enough that eliminations happen within T rounds
        return make_policy(name, epsilon=4.0, beta=0.5, exact=exact)
    if name == "private_ts":
        return make_policy(name, epsilon=1.0, batch_constant=0.05, random_pulls=3, exact=exact)
    if name == "dp_ucb_int":  # interval 1 (the digests' configuration, recorded as epsilon=1 before the
        return make_policy(name, rate=1.0, exact=exact)  # parameter was renamed rate; epsilon is now certified)
    return make_policy(name, epsilon=1.0, exact=exact)


def _horizon(name: str) -> int:
    return T_DPSE if name == "dp_se" else T


def _exact_modes(name: str):
    return (False,) if name == "gaussian_ts" else (False, True)


CASES = [(p, e, r) for p in POLICIES for e in _exact_modes(p) for r in (1, 7)]


def ledger_digest(name: str, exact: bool, replicates: int) -> str:
    """The engine's plain loop with a tight ledger: arms of every round and every release."""
    policy, env = _policy(name, exact), Bernoulli(MEANS)
    seq_policy, seq_env = np.random.SeedSequence(3).spawn(2)
    led = Ledger(replicates, env.n_arms, tight=True, capacity=_horizon(name))
    run = policy.start(env.n_arms, replicates, _horizon(name), np.random.default_rng(seq_policy), ledger=led)
    env_run = env.start(replicates, np.random.default_rng(seq_env))
    d = Digest()
    for t in range(1, _horizon(name) + 1):
        arms = run.select(t)
        run.update(t, arms, env_run.rewards(t, arms))
        d.add(np.asarray(arms, dtype=np.int64))
    _add_ledger(d, led)
    return d.hexdigest()


def simulate_digest(name: str, exact: bool, replicates: int) -> str:
    res = privbandit.simulate(_policy(name, exact), Bernoulli(MEANS), _horizon(name), replicates, seed=5, progress=False,
                              keep_arms=True, realized_points=3)
    d = Digest()
    for x in (res.arms, res.final_regret, res.regret_mean, res.pulls):
        d.add(x)
    return d.hexdigest()


# Recorded with the code before the issue-19 per-round work (commit c551e4f).
GOLDEN_LEDGER = {
    ('private_ucb', False, 1): '59647f17c8f54541050999fc95d6ec96a4d6b18e87a2a60096c110fd8c4df7ad',
    ('private_ucb', False, 7): '329bd20828a7708c30e3b0a9c5071b08c670bfcbbfa386e1c61ee702bedf8e93',
    ('private_ucb', True, 1): 'e06901f4ef4d8f872d832ed3ef1a6f003845a781a61e3e72fb9addb0dea9150e',
    ('private_ucb', True, 7): 'b5334f5b93c670a826ed52ff1502ad3b68f49df6065211a9169f3aa806ce7c3e',
    ('dp_ucb_bound', False, 1): 'ce641144b1a96471e1f8045fc16b39be01273680b35ef5a08fba76a2d9e4fa92',
    ('dp_ucb_bound', False, 7): '426fe388daec5473010115ac0b38d4dd1707423560af2f7783089c5c48e0fefb',
    ('dp_ucb_bound', True, 1): '8d68a3fbb1685991cd2f4cfa597a7943979e59e804a8f6332add89b6e6ba5e13',
    ('dp_ucb_bound', True, 7): '6ab3dcbd68b13bac7002b6692930ebc41be035aecd2c6829dd11d76986d4e6ca',
    ('dp_ucb', False, 1): 'e347945bced12546b722f794327fd25a9d4c1762a99a40a8068fb47b5a33cfe7',
    ('dp_ucb', False, 7): '0a367c70fd436938a3ef81f3b1fc8d7b9a5ae65bb236cb4a8550335c098cf9a5',
    ('dp_ucb', True, 1): '03fd6f63644de540a3e5b3ba4c9fef925cc523717aeda4483570cec8af7aefd7',
    ('dp_ucb', True, 7): '6adcdd64ef5368339d5f9c0298e2e82c06494e9671fe61b3b6473ef40aa138ac',
    ('dp_ucb_int', False, 1): '6ee72a5a390574af2ad6555551a5a08c4c7cdc516d6a602f07ea81405f1a9a26',
    ('dp_ucb_int', False, 7): 'bfbf26aa0deffdeac7b57d9cb6adfbcdc90125b3d3e0fff8109af2938a5b3ebc',
    ('dp_ucb_int', True, 1): '019e1bffcaf1033ed3fcd518af1f30868cc3d51d591d4b4c4e3b26bfeadc245e',
    ('dp_ucb_int', True, 7): '92715922fe157a84cfae89851f215d627b7cc646207c102f8665c7986af1f27c',
    ('dp_se', False, 1): '039cea845de56ee609941e4f72b1504622099550d7c6204ac8fc9d95c1d4f293',
    ('dp_se', False, 7): '807e7e878f629ba8102b9e5c6aa1ac7621f505cb366df8bf2e5d0ef87b7f2604',
    ('dp_se', True, 1): 'd00e9afc20ca1d3987d8a6bc909210a85e4462e3085297b6fc40c63db80f727c',
    ('dp_se', True, 7): '9aeb2e4e3853a1a2712804e0b0fcf08f9ba3e708a13ea8550a69ebfdefc758c4',
    ('anytime_lazy_ucb', False, 1): '884cb9273bf48099d55b33db7415d2608f17a6fb2e7d975a2aa166b467f9a031',
    ('anytime_lazy_ucb', False, 7): '54b7a326a66ffef44bfe724bb365a54932395edd4709a931bccf8e2d753c690d',
    ('anytime_lazy_ucb', True, 1): '45eed7a828ea439f49bf90de2a580fdbba7f80a2aa5bd3581135121827630c1e',
    ('anytime_lazy_ucb', True, 7): '121176cb32af52d41a5ca5f7afc3f79ae114b34e1b6fe13f697971a7fca701d6',
    ('dp_ts', False, 1): '904f422f7934a49b96ae4bd63dd9685557b920f2b1c161e09df3634642875a14',
    ('dp_ts', False, 7): '4de75eb8d9601ff6529a6fb8e518f11d1f017d2089e59676a5b2fed5cdc668b1',
    ('dp_ts', True, 1): 'd2da07d04d611703d0bcc8b1c9ce4cce7a3332d2f03c7dadea7e959aa493c31b',
    ('dp_ts', True, 7): '03dd257feb6384fa5c5bfd93871551036325fc72ee1face597a7197a6296f97f',
    ('private_ts', False, 1): '676e3fe17a14b3f313cdcba943a2605d58b2b046c795d7d00428445c984c898e',
    ('private_ts', False, 7): 'd7d6c4f7f14b364dba2377c11d55a48f2cab37b4f58db7dc215b657a01e7c787',
    ('private_ts', True, 1): '5343f709c61dce2f8c8d81171cb992249010d689f6ec224a6ae541f896ac11ec',
    ('private_ts', True, 7): '5ca674a0e707d72aa8b2b2de3511f23ea2f1d52b648b24f846f2550cc12401f6',
    ('lazy_dp_ts', False, 1): '1b955a2b0ada12cdc8b4eb4ce740700c740ff8629da4cdadb94df88425c7ee14',
    ('lazy_dp_ts', False, 7): '469470c1ceaf28551f6e880b60c67ae6e1ddc295a79c64dd2fc26e7fc0fc8f99',
    ('lazy_dp_ts', True, 1): 'ba1000d6a44acc8cac0b897ec9f99340588b03bd2d5ca82a385f7df4f1e45254',
    ('lazy_dp_ts', True, 7): 'e5162ea009238d059b134f614dc3cb65df7c64d17b6c215fc490456faa77c77b',
    ('gaussian_ts', False, 1): '09bbfdcc696dc346e8a1207bf0dee1e332de75db830289809cc8f1e50a4222a4',
    ('gaussian_ts', False, 7): 'a34b129614fc699a386cf209709be8ba419079c1bef839a05f181df446fad3da',
}
GOLDEN_SIM = {
    ('private_ucb', False, 1): 'bd2959fc5e5c9cf879745f5f69eb662fa650ac0f2d7541aae221413522b68d90',
    ('private_ucb', False, 7): '225715a3d8d7b20447a7026035201b4956ef33091a8d53ed728dab90f4ab3067',
    ('dp_ucb_bound', False, 1): 'fcd912f7d10b5b967b3e0a1ce24fccdecc03169a990078683e905c248e379bdb',
    ('dp_ucb_bound', False, 7): '3a5f0b6c77e72205e409487871f35c004258dd7ef2abaff1a6d7da48d97057b6',
    ('dp_ucb', False, 1): 'bb09d17da953a0c47c307ff8bbf0a2077f3e1db5c13c7e644d56c89772648643',
    ('dp_ucb', False, 7): '85cf8309aa110b8fb3072a4e8dedb112f5eabef061f317cf3337f3ec09c56f62',
    ('dp_ucb_int', False, 1): '0b403fce8f191234539e57d18398407ec917ec020f2a4e464acd12e037b2f1e2',
    ('dp_ucb_int', False, 7): '798bbe70a769372f43edece9ad3f10646cc41086d958473bace227c6e3b6fb0f',
    ('dp_se', False, 1): 'c92a16f5676a49b3b286114e75d37e796780b8df2a0bc3806adf6a5b1539227b',
    ('dp_se', False, 7): '3b508dec4da36e78bd9f4b942e63aa5b2c78bc6709c493e910756e227bdc1736',
    ('anytime_lazy_ucb', False, 1): '1f74f0df6d81c248ad5f325e700a30cce09d9a21fbde4ee373396ee2e346d19d',
    ('anytime_lazy_ucb', False, 7): 'dfdb75c2e43d3d46fb7853a69584ece507950fece91963a451fb92646f59bb01',
    ('dp_ts', False, 1): '18d9a7189369032feff2210f757f9df55cf25d67d4fbd06e35b9fa0570cf4b81',
    ('dp_ts', False, 7): 'adbc2ff6172683dd59177c9add88b5a99f3709ebed054d7d945200cb1f2ed54f',
    ('private_ts', False, 1): '85cfc2706d05f4a9828d136e76abb263726ab450589e79bab8226d4c25ce778e',
    ('private_ts', False, 7): 'e9a0746e0ee1b7cdefd9c837935e2ee9ef20e5dcbdcd60dd3e26483511920264',
    ('lazy_dp_ts', False, 1): '720b6b4f6f17e0421e2e842f312fb5c11f125cb7337cad3cc40880e12b5991e7',
    ('lazy_dp_ts', False, 7): 'bc8b725da9b9739c4e430149be1a581eaa3eb5a99a72881c131ad605502b3219',
    ('gaussian_ts', False, 1): '7e6770b4d40ac24e8c03df6f1c1996c322b2e6e9ba2172971bde01fddab15902',
    ('gaussian_ts', False, 7): 'dd2c54038c2a1e2d73044301a74657d785d97dae6e62a5e5907480c56626e437',
}


@pytest.mark.parametrize("name, exact, replicates", CASES)
def test_policy_streams_identical(name, exact, replicates):
    assert ledger_digest(name, exact, replicates) == GOLDEN_LEDGER[(name, exact, replicates)]


@pytest.mark.parametrize("name, exact, replicates", [c for c in CASES if not c[1]])
def test_simulate_streams_identical(name, exact, replicates):
    assert simulate_digest(name, exact, replicates) == GOLDEN_SIM[(name, exact, replicates)]


if __name__ == "__main__":
    print("GOLDEN_LEDGER = {")
    for case in CASES:
        print(f"    {case!r}: {ledger_digest(*case)!r},")
    print("}")
    print("GOLDEN_SIM = {")
    for case in CASES:
        if not case[1]:
            print(f"    {case!r}: {simulate_digest(*case)!r},")
    print("}")
