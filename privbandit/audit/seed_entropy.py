"""Check 5g (session 18): every generator that drew during an audited run is the run's own or widely seeded.

Noise protects a record only while nobody can reproduce it. Check 5e (:mod:`privbandit.audit.seed_dependence`)
refutes noise that ignores the run's seed; it cannot see noise drawn from generators that *do* depend on the seed
but through a narrow one: round 19's ``lazy_replicate_seeds_32_bit`` seeds each replicate's generator with 32 bits
drawn from the run's generator. Each replicate's noise is then i.i.d., of the reported scale, coupled and
seed-dependent -- every statistical and coupled check passes -- but it is one of 2^32 streams, so an observer who
enumerates the seeds (minutes of CPU) recovers it from a few releases and subtracts it from the rest. A birthday
test on the replicates' first draws would need ~50,000 replicates for a 25 % chance at 32 bits (docs/audit.md,
round 19); reading the seeds is exact.

**The probe.** :class:`GeneratorProbe` brackets one traced run -- the second of check 5e's two runs, so that
what the process does once (``_ts_kernels``' first-use self-check of numpy's beta sampler draws from two
``default_rng(2024)``) is done by then. It lists the numpy bit generators alive before (``gc``) with their
states, records every generator ``numpy.random.default_rng`` returns during the run, and lists the bit
generators alive after. A generator *drew* in the run when it existed before and its state changed, or was made
in the run and its state differs from a fresh one built from its own ``SeedSequence`` (an unused one -- the
library builds ``default_rng(0)`` placeholders for mechanisms that compute schedules and never draw -- is not
judged). A generator that drew is accepted when its ``SeedSequence`` descends from the run's seed (same entropy
and pool size, spawn key extending the seed's: ``Generator.spawn``, ``SeedSequence.spawn``, the DESIGN.md way),
whatever the seed's entropy (the audit's seed is public by design; a user's seed is the user's choice). Any other
generator that drew is *foreign*, and its seed's width is the bit length of its ``SeedSequence`` entropy (summed
over the words of a sequence):

* one foreign generator of at most :data:`NARROW_BITS` bits is a finding (a uniform 64-bit seed is that narrow
  with probability 2^-24; the 32-bit seed of round 19 always is);
* :data:`POOL_MIN` or more foreign generators none wider than :data:`POOL_BITS` bits are a finding (n uniform
  64-bit seeds all that narrow: probability 2^-8n <= 2^-32) -- a seed space of 2^48 or 2^56 is searchable too.

**Limits.** The width of a seed is measured, not its secrecy: ``default_rng(time.time_ns())`` (61 bits) or a
hash of public values passes (check 5e sees only the public ones that repeat across seeds). A bit generator
whose state was set rather than seeded (``bg.state = ...``; ``jumped()``, which numpy reseeds with fresh OS
entropy before setting the state) is judged by the ``SeedSequence`` numpy gave it. Legacy ``RandomState(seed)``
keeps no ``SeedSequence`` and is not judged, nor are Python's ``random`` and ``secrets``, nor a generator built
and dropped within the run other than through the ``numpy.random.default_rng`` attribute (``Generator(PCG64(s))``
built and freed between the two listings), nor a generator made only at a process's first run (a cache filled
once; it is judged if it draws in the probed run). The probe runs on check 5e's second run (K-armed, contextual
and feedback-graph audits: 16 replicates each), not on the deployment audit.
"""

from __future__ import annotations

import gc
from itertools import compress

import numpy as np

from privbandit.audit.tracing import _subclasses

NARROW_BITS = 40
"""One foreign generator seeded with at most this many bits is a finding (module docstring)."""
POOL_BITS = 56
"""... and POOL_MIN or more of them none wider than this."""
POOL_MIN = 4


def _bit_generators() -> list:
    """Every live numpy bit generator (they are gc-tracked). By exact type through ``map``: ~3x faster than an
    ``isinstance`` per object (~0.1 s for 450,000 objects), which matters as the probe scans twice per run."""
    types = set(_subclasses(np.random.BitGenerator))
    objs = gc.get_objects()
    return list(compress(objs, map(types.__contains__, map(type, objs))))


class GeneratorProbe:
    """``with GeneratorProbe() as probe: run()`` -- ``probe.drawn``: the bit generators that drew during the
    block: those created in it whose state differs from a fresh one built from their SeedSequence, and those
    alive before it whose state changed in it (module docstring). ``numpy.random.default_rng`` is wrapped for
    the block only (single-threaded audit)."""

    def __init__(self) -> None:
        self.drawn: list = []
        self._before: list = []
        self._returned: list = []
        self._original = None

    def __enter__(self) -> GeneratorProbe:
        # held: their ids cannot be reused by the run's; their states say whether the run drew from them
        self._before = [(b, b.state) for b in _bit_generators()]
        self._original = original = np.random.default_rng
        returned = self._returned

        def default_rng(*args, **kwargs):
            g = original(*args, **kwargs)
            returned.append(g.bit_generator)  # held: a generator made and dropped in the run is still judged
            return g

        np.random.default_rng = default_rng
        return self

    def __exit__(self, *exc) -> None:
        np.random.default_rng = self._original
        old = {id(b) for b, _ in self._before}
        drawn = [b for b, state in self._before if not _same_state(state, b.state)]
        seen = set()
        for b in self._returned + _bit_generators():
            if id(b) not in old and id(b) not in seen:
                seen.add(id(b))
                if drew(b):
                    drawn.append(b)
        self.drawn, self._before, self._returned = drawn, [], []


def _same_state(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def drew(bg) -> bool:
    """True when ``bg``'s state differs from a fresh bit generator of its type built from its SeedSequence."""
    seq = getattr(bg, "seed_seq", None)
    try:
        return not _same_state(type(bg)(seq).state, bg.state)
    except Exception:  # noqa: BLE001 -- a type that cannot be rebuilt: judged as having drawn
        return True


def descends(seq, root) -> bool:
    """True when ``seq`` is ``root`` or spawned from it (entropy, pool size, and a spawn key extending root's)."""
    key, rkey = tuple(seq.spawn_key), tuple(root.spawn_key)
    return (seq.entropy == root.entropy and seq.pool_size == root.pool_size and key[:len(rkey)] == rkey)


def seed_bits(entropy) -> int:
    """The width in bits of a SeedSequence's entropy: an int's bit length, summed over a sequence's words."""
    if entropy is None:
        return 0
    if isinstance(entropy, (int, np.integer)):
        return int(entropy).bit_length()
    return sum(int(w).bit_length() for w in np.asarray(entropy, dtype=object).ravel())


def foreign_seeds(drawn, root) -> list[int]:
    """Seed widths of the bit generators in ``drawn`` (``GeneratorProbe.drawn``) that do not descend from
    ``root`` (a SeedSequence). Bit generators without a SeedSequence (legacy ``RandomState``) are left out
    (module docstring, Limits)."""
    widths = []
    for bg in drawn:
        seq = getattr(bg, "seed_seq", None)
        if isinstance(seq, np.random.SeedSequence) and not descends(seq, root):
            widths.append(seed_bits(seq.entropy))
    return widths


def entropy_finding(drawn, root):
    """A Finding ``seed_entropy`` when the run's foreign generators are narrowly seeded (module docstring)."""
    from privbandit.audit.whitebox import Finding

    widths = foreign_seeds(drawn, root)
    if not widths:
        return None
    narrow = [w for w in widths if w <= NARROW_BITS]
    if narrow:
        why = (f"{len(narrow)} of them seeded with at most {NARROW_BITS} bits (the widest of those: {max(narrow)} "
               f"bits)")
    elif len(widths) >= POOL_MIN and max(widths) <= POOL_BITS:
        why = f"none of them seeded with more than {max(widths)} bits"
    else:
        return None
    return Finding("seed_entropy", (
        f"{len(widths)} generators that drew in the run are not spawned from the run's seed, {why}: each such "
        f"stream is one of at most 2^{max(narrow or widths)} an observer can enumerate from a few releases and "
        f"subtract (seed the run's generators with Generator.spawn / SeedSequence.spawn)"))


__all__ = ["NARROW_BITS", "POOL_BITS", "POOL_MIN", "GeneratorProbe", "descends", "drew", "entropy_finding",
           "foreign_seeds", "seed_bits"]
