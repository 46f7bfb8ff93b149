"""Check 5g (session 18, privbandit/audit/seed_entropy.py): generators that drew in an audited run must descend
from the run's seed or be widely seeded. Round 19's miss ``lazy_replicate_seeds_32_bit`` (a 32-bit seed per
replicate) is refuted by the check 5e runs it rides on; its 126-bit control, the library's own policies and
its unused ``default_rng(0)`` placeholders are not. Each test is well under a second (16 replicates, 40 rounds).
"""

from __future__ import annotations

import _bench  # noqa: F401 -- puts bench/ on sys.path
import numpy as np
import pytest

import audit_planted_round19 as r19  # noqa: E402
from privbandit.audit.seed_entropy import (NARROW_BITS, POOL_BITS, POOL_MIN, GeneratorProbe, entropy_finding,
                                           foreign_seeds, seed_bits)
from privbandit.audit.whitebox import _mixed_tapes, _seed_check
from privbandit.policies import LazyDPTS, PrivateUCB

ROOT = np.random.SeedSequence(0).spawn(2)[1]  # as a white-box run's seed: public, entropy 0


def _seed_findings(policy):
    tapes = np.ascontiguousarray(_mixed_tapes(2, 40, 16, np.random.default_rng(1)))
    notes: list[str] = []
    return _seed_check(policy, tapes, 40, ROOT, False, notes), notes


def test_32_bit_replicate_seeds_refuted_126_bit_control_not():
    found, _ = _seed_findings(r19.LazyReplicateSeeds32Bit(epsilon=1.0))
    assert found is not None and found.check == "seed_entropy", found
    assert "2^32" in found.detail
    clean, notes = _seed_findings(r19.LazyReplicateSeeds126Bit(epsilon=1.0))
    assert clean is None and not notes, clean


@pytest.mark.parametrize("cls", [LazyDPTS, PrivateUCB])
def test_library_policies_draw_only_from_the_run_seed(cls):
    # PrivateUCB builds a default_rng(0) tree for its schedule: made in the run, never drawn from, not judged;
    # a first run does what the process does once (as check 5e's first run does), the second is probed
    tapes = np.ascontiguousarray(_mixed_tapes(2, 40, 4, np.random.default_rng(1)))
    from privbandit.audit.whitebox import _run

    _run(cls(), tapes, 40, ROOT, planned=False, recorded=False)
    with GeneratorProbe() as probe:
        _run(cls(), tapes, 40, ROOT, planned=False, recorded=False)
    assert probe.drawn, "the probe saw no generator draw: the run's own was not listed"
    assert foreign_seeds(probe.drawn, ROOT) == []


def _drawn(seed):
    g = np.random.default_rng(seed)
    g.random()
    return g


def test_rules_single_narrow_and_pool():
    before = np.random.default_rng(11)  # alive before the run, drawn from in it: judged too
    with GeneratorProbe() as probe:
        keep = [_drawn(2**32 - 5), np.random.default_rng(7)]  # a 32-bit seed that drew; a placeholder that did not
        before.random()
    assert sorted(foreign_seeds(probe.drawn, ROOT)) == [4, 32]
    assert entropy_finding(probe.drawn, ROOT).check == "seed_entropy"
    with GeneratorProbe() as probe:  # spawned from the root: accepted whatever the root's entropy
        keep = [g for g in np.random.default_rng(ROOT).spawn(3)]
        for g in keep:
            g.random()
    assert foreign_seeds(probe.drawn, ROOT) == []
    rng = np.random.default_rng(3)
    seeds, wide = rng.integers(0, 2**47, POOL_MIN), int(rng.integers(0, 2**63)) | 2**63  # drawn before the probes
    with GeneratorProbe() as probe:  # POOL_MIN generators of 48 bits: none alone is narrow, the pool is
        keep = [_drawn(int(s) | 2**47) for s in seeds]
    assert entropy_finding(probe.drawn, ROOT) is not None
    with GeneratorProbe() as probe:  # one 64-bit seed: not narrow, no pool
        keep = [_drawn(wide)]
    assert foreign_seeds(probe.drawn, ROOT) == [64] and entropy_finding(probe.drawn, ROOT) is None
    assert keep and NARROW_BITS < 48 <= POOL_BITS
    assert seed_bits([2**62, 3]) == 65 and seed_bits(None) == 0


def test_probe_restores_default_rng_after_a_raise():
    original = np.random.default_rng
    with pytest.raises(RuntimeError), GeneratorProbe():
        raise RuntimeError("policy raised")
    assert np.random.default_rng is original
