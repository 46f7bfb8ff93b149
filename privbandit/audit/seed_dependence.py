"""Check 5e (session 14): the noise depends on the run's seed.

Noise protects a record only while it is secret. A policy that draws its noise from a generator it seeds
itself -- from the round (``default_rng(t)``), a constant, a hash of public values -- draws noise that anyone
can recompute and subtract, although each draw is right in law and independent of the others, so the
noise-law tests (checks 5, 5b-5d) and the coupled runs (which share the seed between D and D') cannot see
it. Round 16 (written blind): ``dp_ucb_bound_seeded_by_round``.

The check runs the policy twice on the same tapes with two different seeds and compares the noise of their
releases draw by draw (release less statistic, while the runs draw alike): a correctly seeded policy's noise
differs (continuous noise coincides with probability 0; grid noise, :mod:`privbandit.mechanisms.sampling`'s
exact mode, with probability about grid / scale per value), while noise that ignores the seed is the same
to the last bits of the releases. A finding is a count of identical
noise values no chance explains: at least :data:`MIN_SAME` of them and a fraction :data:`MIN_FRACTION` of
the values compared (noise exactly 0 is not counted). Exact, not statistical, in the sense of the other
white-box checks: the witness is the pair of identical values.
"""

from __future__ import annotations

import numpy as np

MIN_SAME = 8
"""Identical releases needed for a finding (grid noise at scale b coincides with probability ~1e-6 / b a value)."""
MIN_FRACTION = 0.01
"""... and their share of the values compared (a seed-independent stream among up to 100 is still seen)."""


def run_generator(seed) -> np.random.Generator:
    """The generator one audited run starts from ``seed``: an int or a sequence of ints seeds afresh, and a
    ``SeedSequence`` is *copied* (entropy, spawn key, pool size and its count of children as they stand) rather than
    shared. The coupled runs on D and D' (and check 12's unobserved run) must consume the same random stream: a
    policy that spawns generators from its own (``Generator.spawn``, the DESIGN.md way to seed independent streams)
    advances the counter of its generator's ``SeedSequence`` object, and with one object handed to both runs the
    run on D' spawned the children after D's -- different, equally secret noise, which check 7 (noise_coupling)
    refuted as noise that depends on the data (session 16, s16/reach: round 18's control
    ``dp_ts_replicates_spawned_generators``). A copy per run gives both runs the same children."""
    if isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size,
                                      n_children_spawned=seed.n_children_spawned)
    return np.random.default_rng(seed)


def seed_coincidences(draws_a, draws_b) -> tuple[int, int, int]:
    """(identical noise values, noise values compared, draws compared) over the aligned prefix of two runs'
    traced draws (:class:`privbandit.audit.tracing.Draw`): draws in the same order, of the same family and
    shape; the prefix ends at the first draw where the runs differ in either. The noise of a value is its
    release less its statistic (``out - stat``, exact to the release's last bit), so the comparison survives
    runs whose decisions -- hence statistics -- diverged (EXP3's sampled arms differ from round 1): two
    noise values count as identical within the rounding of their releases (a few ulps), which independent
    continuous noise never is, and grid noise is with probability about grid / scale."""
    same = compared = n = 0
    for da, db in zip(draws_a, draws_b):
        if da.out is None or db.out is None or da.family != db.family or da.out.shape != db.out.shape \
                or da.stat.shape != da.out.shape or db.stat.shape != db.out.shape:
            break
        za, zb = da.out - da.stat, db.out - db.stat
        slack = 4.0 * (np.spacing(np.abs(da.out)) + np.spacing(np.abs(db.out)))
        noisy = (za != 0) & (zb != 0)  # noise exactly 0 tells nothing
        with np.errstate(invalid="ignore"):
            same += int(((np.abs(za - zb) <= slack) & noisy).sum())
        compared += int(noisy.sum())
        n += 1
    return same, compared, n


def seed_finding(draws_a, draws_b, seeds: str):
    """A Finding ``seed`` when the two runs' aligned releases coincide beyond chance, else None."""
    from privbandit.audit.whitebox import Finding

    same, compared, n = seed_coincidences(draws_a, draws_b)
    if same >= MIN_SAME and same >= MIN_FRACTION * compared:
        return Finding("seed", (
            f"{same} of {compared} noise values in the first {n} draws are identical (to the releases' rounding) in two runs on the same "
            f"tapes with different seeds ({seeds}): the noise does not depend on the run's seed, so anyone can "
            f"recompute and subtract it"))
    return None


def seed_check(traced_run, run_seq, notes: list[str]):
    """Check 5e on any coupled audit's run (K-armed, contextual, graph): ``traced_run(seed)`` runs the policy on the
    audit's first tapes with that seed and returns its tracer's draws (it raises the audit's ``PolicyRaised`` when
    the policy raised); two children of ``run_seq`` (the run's own seed sequence) are used. A run that raises leaves
    the check out (a note in ``notes``): the coupled runs report the exception. Returns a Finding or None.

    Session 18: the second run is also watched by check 5g (:mod:`privbandit.audit.seed_entropy`): a generator that
    drew in it without descending from its seed must be widely seeded. The second, so that what a process does once
    (``_ts_kernels``' first-use self-check of numpy's beta sampler on two ``default_rng(2024)``) is done by then;
    one run, as a probe lists the process's objects twice (~0.1 s each). Its finding is returned when 5e has none."""
    from privbandit.audit.seed_entropy import GeneratorProbe, entropy_finding
    from privbandit.audit.whitebox import attempt

    draws, narrow = [], None
    for s in run_seq.spawn(2):
        if not draws:
            out, exc = attempt(traced_run, s)
        else:
            with GeneratorProbe() as probe:
                out, exc = attempt(traced_run, s)
            narrow = entropy_finding(probe.drawn, s)
        if exc is not None:
            notes.append("seed check skipped: a run with another seed raised")
            return narrow
        draws.append(out)
    return seed_finding(draws[0], draws[1], "two children of the run's seed") or narrow


__all__ = ["MIN_FRACTION", "MIN_SAME", "run_generator", "seed_check", "seed_coincidences", "seed_finding"]
