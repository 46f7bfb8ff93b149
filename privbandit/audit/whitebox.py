"""White-box checks that do not trust what the mechanisms report.

One audit is a pair of *coupled* runs of a policy, vectorised over R replicates, each replicate on
its own reward tape (the j-th pull of arm k pays ``tape[r, k, j]``) and its own neighbour: tape D has
0 at one entry (arm ``r mod K``, an early pull -- or, with ``late_records``, for half the replicates a
pull deep in the stream) and D' has 1 there, everything else equal. With ``schedule_records``, more
replicates change a record on the policy's own release schedule (the last record of an interval or a
batch, or the first after it), read off the run on D (:func:`release_boundaries`). Both runs
use the same seed, every release is traced (:mod:`privbandit.audit.tracing`), and the D' run replays
D's released values. Under the privacy contract (DESIGN.md: every noise draw goes through a
mechanism that reports it to the ledger; the policy decides from releases only) the checks below can
fail only for a bug, never by chance, except the goodness-of-fit test whose level is stated:

1. **decisions** -- with identical releases, a policy that is a post-processing of its releases acts
   identically on D and D' (Dwork & Roth 2014, Prop. 2.1). A replicate whose actions differ proves
   that some decision read the data outside the traced releases (an un-noised bonus, a tie broken by
   a raw mean, noise added outside the sampler, a release computed and then altered).
2. **unreported** -- a traced draw that no report to the run's ledger covers (a release the ledger
   was never told of, e.g. a statistic silently re-drawn).
3. **sensitivity** -- the noiseless statistics handed to the sampler in the two runs, matched by
   (replicate, stream, mechanism, footprint, node, occurrence), may differ by at most the declared
   sensitivity (Dwork & Roth Def. 3.1 with the neighbouring tapes as inputs).
4. **footprint** -- every release whose statistic changed must include the changed record: all of
   them lie in one stream and their declared footprints [lo, hi) share a record.
5. **noise law** -- the residual (released value - statistic) / declared scale of every release,
   grouped by (mechanism, family, footprint-length octave), against the declared family (Laplace(1)
   or N(0, 1)) with the DKW-Massart bound: reject when sup |F_n - F| > sqrt(ln(2/a)/(2n)), a Bonferroni
   share of ``alpha`` per group. DKW-Massart gives level a exactly (no asymptotics) and a power lower
   bound against any alternative G: P(reject) >= 1 - 2 exp(-2n (D(F, G) - c)^2) when D(F, G) > c. The
   result states that bound against a factor-2 scale error (the "half the declared noise" bug), per
   group.

6. **noise_report** -- the noise drawn is the noise reported: the family handed to the sampler
   (Laplace or Gaussian) is the family the ledger is told, and the scale (or sigma) handed to the
   sampler, as the sampler rounds it, is at least the scale the ledger is told. Exact and per
   release, so a smaller scale on a few releases (one level, one stream, late in the run, or a scale
   that shrinks with the data) is a witness however rare; the noise law only sees what shifts a
   whole group's distribution.
7. **noise_coupling** -- the noise is independent of the data. The two coupled runs consume the
   same random stream in the same order (same seed, identical releases and decisions), so under the
   contract every release draws the same noise on D and on D': each run's own residual (its drawn
   value minus its statistic, before the replay) must agree. Noise seeded from the data, a scale
   computed from the statistic, or any noise transformation that reads the data breaks this (Dwork &
   Roth Def. 3.1 needs noise drawn independently of the input).
8. **schedule** -- on the coupled run on D (a tight ledger, adversarial tapes, the white-box
   horizon), the realized spend of the worst record of every replicate never exceeds the policy's
   certified schedule at a dozen checkpoints, in GDP mu and, for a pure schedule, in pure epsilon
   (DESIGN.md's invariant ``realized(t) <= certified(t)``): the ledger audit checks the same on a
   stochastic environment, but only at the black-box horizon, which may end before the first release.

The footprint check also uses the ground truth the coupled runs know: the changed record is in the
changed arm's stream, so every release whose statistic changed must be reported on that stream.

9. **footprint_position** -- the changed record's *position* in its stream's numbering (the ledger
   numbers a stream's records 0, 1, ... in insertion order), found from what the runs inserted: the
   tracer logs every record handed to a stream mechanism (``insert`` / ``insert_pulled``), and the
   changed record is the one inserted with different values on D and D' (fake zero records and side
   observations are counted like any other); a stream no mechanism inserted into is numbered by the
   arm's pulls (bandit feedback: one record per pull); a mechanism handed fewer records than the
   arm's earlier pulls (the policy kept some itself, e.g. Private-TS's gap phase, and may number the
   mechanism's records after them) gives two candidates, its insert index and the pull index: a
   changed release must declare one, an early release is flagged only if it declares both. Every
   release on that stream whose statistic
   changed must declare a footprint [lo, hi) containing that position, and no release made before the
   record was revealed (before the update of the round that revealed it) may declare it. A footprint
   shifted by one record, or one that drops a batch's first or an interval's newest record, composes
   the wrong records in the ledger; the stream-level checks above cannot see it.

10. **tree_output** (vector trees, :mod:`privbandit.audit.contextual`) -- after every insert, the sums a
   :class:`~privbandit.mechanisms.vector_tree.VectorTreeMechanism` releases are the sums of its alive
   nodes' traced releases (the prefix sum is post-processing of the nodes, Chan, Shi & Song 2011): node
   noise altered after the draw, dropped or stale, fails it, to a relative 1e-8.

12. **ledger_observer** (round 12) -- the ledger observes, it does not steer: the run on D repeated
   without a ledger (``start(..., ledger=None)``, as ``simulate(..., ledger=False)`` and a deployment
   that does not track run it) and without the tracer, on the same tapes and seed, must take the same
   actions. Every check above reads runs *with* a ledger, so a policy whose noise, scale or releases
   change when nobody records them (a "fast path" without reporting) would otherwise be audited on
   a path it never takes in production.

5d. **noise dependence** (session 13, :mod:`privbandit.audit.noise_dependence`) -- distinct draws are
   independent of one another: pairs of releases (within one sampler call, the k-th release on two
   streams, consecutive releases on one stream) are tested for dependence of their residuals' probability
   integral transforms at exact levels. Noise right in law but derived from another release's noise
   passes every per-residual test and leaks the data exactly. Session 15 (s15/reach2): also across the
   mechanisms of one stream and across streams at lags -8..8 (``noise_dependence.near_pairs``), at a third
   budget ``alpha`` of its own.

5f. **sampler reach** (session 15, :mod:`privbandit.audit.sampler_reach`) -- a noise sampler of the policy's
   own (not the library's) is probed off the run with 2^23 unit draws per path: its largest |draw| must be
   plausible under the declared law (a truncation far out, invisible in the run's residuals).

5g. **seed entropy** (session 18, :mod:`privbandit.audit.seed_entropy`, inside check 5e's runs) -- every numpy
   generator that drew in the run descends from the run's seed or is widely seeded (one of at most 40 bits, or
   four or more of at most 56, is a finding): noise from a 32-bit seed is right in law and seed-dependent, and
   an observer enumerates it. Exact (the seeds are read), no alpha.

13. **sampling** (session 15, :mod:`privbandit.audit.weights`) -- a policy whose certificate declares a sampling
   floor and a log-weight step (EXP3, EXP3-tau: no noise to check) keeps every choice probability >= the floor,
   and a changed record moves a log-weight by at most the step, on coupled runs of its own.

Checks 1-4 and 6-13 are exact (a violation is a deterministic witness, reproducible from the seed).
Checks 5 and 5d are the statistical ones; each of their budgets has a family-wise false-alarm rate of at most
``alpha`` (check 5d has three: session 13's pairings, session 14's far ones, session 15's near ones; check 5f one,
spent only where the run holds a sampler of its own). Each family tallies its level where its test is made
(:mod:`privbandit.audit.false_alarms`), so ``privbandit audit`` states the sum one audit actually spent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time

import numpy as np
from scipy import stats as sps

from accountants import _validate
from privbandit.audit.false_alarms import spend
from privbandit.audit.ledger_audit import _exceeds, _pure_certified
from privbandit.audit.noise_dependence import noise_dependence
from privbandit.audit.raised import Clock, PolicyRaised, compare, policy_code
from privbandit.audit.sampler_reach import reach_check
from privbandit.audit.seed_dependence import run_generator
from privbandit.audit.tracing import ReleaseTracer
from privbandit.audit.weights import sampling_check
from privbandit.ledger import Ledger
from privbandit.mechanisms.sampling import GRID
from privbandit.policies.base import Policy, schedule_for

SENS_TOL = 1e-9
"""Relative slack on declared sensitivities (float sums of up to a few hundred terms in [0, 1])."""
CHANGE_TOL = 1e-12
"""A statistic 'changed' between the coupled runs when it moved by more than this."""
MIN_GROUP = 40
"""Residual groups smaller than this are not tested (too little power to matter)."""
SCALE_TOL = 1e-9
"""Relative slack when comparing the scale handed to the sampler with the scale reported (both are
the same float computed twice; a planted or real scale error is a factor, not an ulp)."""
COUPLING_TOL = 1e-9
"""Relative slack (of |statistic| + |released| + scale) on the agreement of the coupled runs' own
residuals: ``(s + z) - s`` recovers z up to a few ulps of the operands."""


@dataclasses.dataclass
class Finding:
    check: str  # decisions | unreported | sensitivity | footprint | footprint_position | redraw | noise_law |
    #             noise_report | noise_coupling | schedule | tree_output (vector trees) | certificate |
    #             raised (session 12: the policy raised on one neighbour only, privbandit/audit/raised.py) |
    #             sampling (session 15: an exponential-weights certificate's floor / step, privbandit/audit/weights.py)
    detail: str


@dataclasses.dataclass
class NoiseGroup:
    mechanism: str
    family: str
    octave: int
    n: int
    dkw: float
    critical: float
    power_factor2: float
    rejected: bool
    reused: int = 0  # residuals equal to another one (the same noise value used twice)
    tail_p: float = 1.0  # P(max |residual| <= the observed max) under the declared law (round 11)


@dataclasses.dataclass
class WhiteBoxResult:
    policy: str
    horizon: int
    n_arms: int
    replicates: int
    seed: int
    alpha: float
    releases: int
    findings: list[Finding]
    groups: list[NoiseGroup]
    notes: list[str]
    seconds: float
    checkpoints: list = dataclasses.field(default_factory=list)  # (round, max realized mu, certified mu)
    error: str | None = None
    """Session 12: the audited policy raised alike on both neighbours (privbandit/audit/raised.py): the
    runs were cut short, nothing after the raise was checked, and the verdict is INCONCLUSIVE."""

    @property
    def verdict(self) -> str:
        if self.findings:
            return "VIOLATION"
        return "CONSISTENT" if self.releases and self.error is None else "INCONCLUSIVE"

    @property
    def checks(self) -> list[str]:
        return sorted({f.check for f in self.findings})

    def power(self) -> str:
        """The power statement: the weakest noise-law group's guaranteed power against a factor 2."""
        tested = [g for g in self.groups if g.n >= MIN_GROUP]
        if not tested:
            return (f"noise law: no group large enough to test (or not tested); decisions/unreported/sensitivity/"
                    f"footprint/footprint_position/noise_report/noise_coupling/schedule checks are exact on "
                    f"{self.replicates} coupled replicates")
        worst = min(tested, key=lambda g: g.power_factor2)
        return (f"noise law: {len(tested)} groups, power >= {worst.power_factor2:.3f} against a factor-2 scale "
                f"error in the weakest ({worst.mechanism}, n={worst.n}); decisions/unreported/sensitivity/"
                f"footprint/footprint_position/noise_report/noise_coupling/schedule checks are exact on "
                f"{self.replicates} coupled replicates")

    def summary(self) -> str:
        head = (f"white-box audit of {self.policy}: T={self.horizon}, K={self.n_arms}, {self.replicates} coupled "
                f"replicate pairs, {self.releases} traced releases, seed {self.seed}, {self.seconds:.1f} s")
        if not self.findings and self.error is not None:
            return f"{head}: INCONCLUSIVE (ERROR: {self.error})"
        if not self.findings:
            return f"{head}: {self.verdict} ({self.power()})"
        first = "; ".join(f"[{f.check}] {f.detail}" for f in self.findings[:4])
        return f"{head}: VIOLATION (checks {self.checks}; {first})"

    def table(self) -> str:
        lines = ["| mechanism | family | footprint octave | n | DKW sup | critical | power vs x2 | rejected |",
                 "|---|---|---:|---:|---:|---:|---:|---|"]
        for g in self.groups:
            lines.append(f"| {g.mechanism} | {g.family} | {g.octave} | {g.n} | {g.dkw:.4f} | {g.critical:.4f} | "
                         f"{g.power_factor2:.3f} | {'**yes**' if g.rejected else 'no'} |")
        return "\n".join(lines)


def neighbour_tapes(n_arms: int, pulls: int, replicates: int, rng: np.random.Generator, first: int = 0,
                    window: int = 6, late: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """R pairs of neighbouring tapes (R, K, pulls): a quarter each uniform [0, 1], Bernoulli(p_k),
    constant per arm from {0, 0.5, 1}, and constant 0.5. Replicate r changes arm ``r mod K`` at a pull
    in [first, first + window): 0 on D, 1 on D'. Returns (tape, tape_prime, arm, pull).

    ``late``: the replicates r with floor(r / 4) odd (every tape kind and arm among them) change a
    *late* pull instead, in [first + window, late) -- a record deep in its stream, where a footprint
    that is wrong only for late records shows (the early pulls sit in the low tree nodes, the first
    batches and intervals): log-uniform for floor(r / 4) = 1 mod 4, on a power-of-two block boundary
    (2^j - 2, 2^j - 1, 2^j) for floor(r / 4) = 3 mod 4. The early positions are drawn first, so they
    do not depend on ``late``."""
    R, K = replicates, n_arms
    tape = _mixed_tapes(n_arms, pulls, replicates, rng)
    arm = np.arange(R) % K
    pull = np.minimum(first + rng.integers(0, window, R), pulls - 1)
    if late is not None and late > first + window:
        group = np.arange(R) // 4
        lo, hi = np.log(first + window), np.log(late)
        at = np.exp(lo + (hi - lo) * rng.random(R)).astype(np.int64)
        # every other deep group sits on a block boundary instead: 2^j - 2, 2^j - 1 or 2^j, the first and
        # last records of the logarithmic / hybrid / split releases and of the tree's dyadic nodes, where
        # an off-by-one in a footprint's ends has its only witnesses
        j_lo, j_hi = int(np.ceil(np.log2(first + window + 2))), int(np.floor(np.log2(late)))
        if j_hi >= j_lo:
            edge = np.left_shift(1, rng.integers(j_lo, j_hi + 1, R)) - rng.integers(0, 3, R)
            at = np.where(group % 4 == 3, edge, at)
        pull = np.where(group % 2 == 1, np.minimum(np.clip(at, first + window, late - 1), pulls - 1), pull)
    tape[np.arange(R), arm, pull] = 0.0
    tape_prime = tape.copy()
    tape_prime[np.arange(R), arm, pull] = 1.0
    return tape, tape_prime, arm, pull


def _mixed_tapes(n_arms: int, pulls: int, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """R reward tapes (R, K, pulls), replicate r of kind r mod 4: uniform [0, 1], Bernoulli(p_k),
    constant per arm from {0, 0.5, 1}, constant 0.5 (:func:`neighbour_tapes`)."""
    R, K = replicates, n_arms
    kind = np.arange(R) % 4
    tape = np.empty((R, K, pulls))
    u = rng.random((R, K, pulls))
    p = rng.random((R, K, 1))
    const = rng.choice([0.0, 0.5, 1.0], size=(R, K, 1))
    tape[kind == 0] = u[kind == 0]
    tape[kind == 1] = (u < p)[kind == 1]
    tape[kind == 2] = np.broadcast_to(const, (R, K, pulls))[kind == 2]
    tape[kind == 3] = 0.5
    return tape


def release_boundaries(tracer: ReleaseTracer, actions: np.ndarray, arm: np.ndarray) -> list[np.ndarray]:
    """The policy's own release schedule on stream ``arm[r]`` of each replicate r of a traced run
    (:func:`_run`), in the arm's pull numbering: the sorted pull indices e of the newest record the
    arm had revealed when a *sparse* release on that stream was reported -- the last record of a
    DP-UCB-Int interval, of a DP-SE epoch batch, of a fresh (doubling) batch, of a Private-TS gap batch;
    the next batch's first record is e + 1.

    Read off the trace, with no per-policy hook: a report made during round t's update (or before
    round t + 1's) comes after the arm's first n_k(t) pulls, so e = n_k(t) - 1. Per (replicate,
    mechanism), the distinct e in order are kept where they jump by two or more records: a mechanism
    that releases at every record (a tree node, a hybrid, a posterior) marks no boundary (every record
    is one), a batch or interval mechanism marks its ends. Pull numbering, not the ledger's, so it
    holds where the ledger numbers records otherwise (DP-UCB's fake zeros, Private-TS's offset)."""
    R, T = actions.shape
    out = [np.zeros(0, np.int64) for _ in range(R)]
    marks = getattr(tracer, "marks", None)
    if not tracer.reports or marks is None:
        return out
    rep = np.concatenate([rp.rep for rp in tracer.reports]).astype(np.int64)
    st = np.concatenate([rp.st for rp in tracer.reports]).astype(np.int64)
    seq = np.concatenate([np.full(rp.rep.size, i, np.int64) for i, rp in enumerate(tracer.reports)])
    names: dict = {}
    mech = np.concatenate([np.full(rp.rep.size, names.setdefault(rp.mechanism, len(names)), np.int64)
                           for rp in tracer.reports])
    # the round whose update a report followed: the number of rounds t with marks[t] <= seq
    t = np.searchsorted(np.asarray(marks[1:T + 1]), seq, side="right")
    keep = (t >= 1) & (st == arm[rep])
    rep, mech, t = rep[keep], mech[keep], t[keep]
    if not rep.size:
        return out
    hits = np.cumsum(actions == arm[:, None], axis=1)
    e = hits[rep, t - 1] - 1
    ok = e >= 0
    rep, mech, e = rep[ok], mech[ok], e[ok]
    key = np.unique(np.stack([rep, mech, e], axis=1), axis=0)  # sorted by replicate, mechanism, e
    if not key.size:
        return out
    same = np.zeros(key.shape[0], dtype=bool)
    same[1:] = (key[1:, 0] == key[:-1, 0]) & (key[1:, 1] == key[:-1, 1])
    prev = np.where(same, np.concatenate([[-1], key[:-1, 2]]), -1)
    sparse = key[key[:, 2] - prev >= 2]
    for r in np.unique(sparse[:, 0]):
        out[int(r)] = np.unique(sparse[sparse[:, 0] == r, 2])
    return out


def schedule_positions(events: list[np.ndarray], pulls: int, rng: np.random.Generator, first: int,
                       late: int) -> tuple[np.ndarray, int]:
    """Per schedule replicate j (``events[j]``: its arm's release boundaries, :func:`release_boundaries`),
    the pull index of the record it changes: e + s for a boundary e drawn uniformly from its own and a
    side s = 0 (the release's last record) with probability 2/3, else 1 (the first record after it);
    a log-uniform pick in [first, late) where no boundary was marked. Drawn, not walked in a fixed
    order: a bug's witnesses are often one boundary of one arm on the replicates whose data-dependent
    phase lasts long enough, and a fixed walk can miss all of them for a given seed. Returns
    (positions, replicates placed on a boundary)."""
    S = len(events)
    lo, hi = np.log(max(first, 1)), np.log(max(late, first + 2))
    pull = np.exp(lo + (hi - lo) * rng.random(S)).astype(np.int64)
    pick, side = rng.random(S), (rng.random(S) >= 2.0 / 3.0).astype(np.int64)
    placed = 0
    for j, ev in enumerate(events):
        if ev.size:
            pull[j] = ev[min(int(pick[j] * ev.size), ev.size - 1)] + side[j]
            placed += 1
    return np.clip(pull, 0, pulls - 1), placed


SWEEP_OFFSETS = 32
"""The offsets inside a batch that ``whitebox_audit(sweep_records=...)`` walks, 4 replicates -- the four tape kinds
-- per offset: 0 .. 15 in session 13, 0 .. 31 since session 14 (every position of a batch of up to 32 records, with
128 sweep replicates; 64 walk 0 .. 15 as before)."""


def sweep_positions(events: list[np.ndarray], revealed: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Per sweep replicate j: the pull index of the record it changes, the o-th record (o = (j // 4) mod
    :data:`SWEEP_OFFSETS`) of one of the policy's own batches on its arm. The batches are read off the run
    on D (``events[j]``, :func:`release_boundaries`: the last records e_0 < e_1 < ... of its sparse
    releases; batch i holds e_{i-1} + 1 .. e_i, the first from 0): one batch of more than o records,
    drawn uniformly, so that every position a batch has is changed by some replicate -- a record the
    policy treats specially k records into a batch (counted twice, left out, weighted) has its witness
    whatever k < 16. A stream with no such batch (a mechanism releasing at every record: the tree
    counters, the hybrids, the posterior) is cut into the dyadic blocks [2^m, 2^(m+1)) of the tree's
    leaves instead (2^m > o, and the record revealed: 2^m + o < ``revealed[j]``, the arm's pulls in the
    run). Returns (positions, replicates placed in a batch of the policy's own schedule)."""
    S = len(events)
    offset = (np.arange(S) // 4) % SWEEP_OFFSETS
    pull = offset.astype(np.int64).copy()
    placed = 0
    for j, ev in enumerate(events):
        o = int(offset[j])
        ends = np.concatenate([[-1], np.asarray(ev, dtype=np.int64)])
        fits = np.flatnonzero(np.diff(ends) > o)  # batch i + 1 ends at ends[i + 1]
        if fits.size:
            pull[j] = ends[fits[int(rng.integers(fits.size))]] + 1 + o
            placed += 1
            continue
        m = np.arange(int(o).bit_length(), 63)
        m = m[(np.left_shift(1, m) > o) & (np.left_shift(1, m) + o < int(revealed[j]))]
        if m.size:
            pull[j] = (1 << int(m[int(rng.integers(m.size))])) + o
    return pull, placed


DEEP_GROUPS = 8
"""Session 14: the strata of :func:`deep_positions` (groups of four replicates, the four tape kinds)."""


def deep_positions(events: list[np.ndarray], revealed: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Per deep replicate j: the pull index of a record :data:`SWEEP_OFFSETS` (32) or more records into one of the
    policy's own batches on its arm (``events[j]``, :func:`release_boundaries`; a batch drawn uniformly among
    those longer than ``SWEEP_OFFSETS`` + 4), at an offset chosen by its group g = (j // 4) mod
    :data:`DEEP_GROUPS`: n - 2 (g = 0) and n - 4 or n - 3 (g = 1) for a batch of n records -- the last record and
    the first after it are the schedule replicates' -- and, for g = 2 .. 7, uniform in the (g - 2)-th of six equal
    strata of [32, n - 4). :func:`sweep_positions` walks offsets 0 .. 31 exhaustively (with 128 replicates); a long
    batch's other offsets are sampled, each stratum once per four replicates: a leak keyed to a single offset
    k >= 32 of a batch of n records is hit with probability about 4 x 6 / (n - 36) per run, a leak on a range of
    offsets (a batch's second half, its last few records) surely. A stream with no batch that long (the trees,
    hybrids, posteriors) is cut into the dyadic blocks [2^m, 2^(m+1)) of a tree's leaves, 2^m > 36, with
    2^(m+1) <= ``revealed[j]`` (the arm's pulls in the run); where there is none, the arm's last few records.
    Returns (positions, replicates placed in a batch of the policy's own schedule)."""
    S = len(events)
    group = (np.arange(S) // 4) % DEEP_GROUPS
    low = SWEEP_OFFSETS
    pull = np.maximum(0, revealed.astype(np.int64) - 1 - rng.integers(0, 4, S))
    placed = 0
    for j, ev in enumerate(events):
        ends = np.concatenate([[-1], np.asarray(ev, dtype=np.int64)])
        lengths = np.diff(ends)
        fits = np.flatnonzero(lengths > low + 4)
        if fits.size:
            b = int(fits[int(rng.integers(fits.size))])
            first, n = int(ends[b]) + 1, int(lengths[b])
            placed += 1
        else:
            lo = int(low + 4).bit_length()  # blocks longer than low + 4
            m = np.arange(lo, max(lo, int(revealed[j]).bit_length() - 1))  # 2^(m+1) <= revealed
            if not m.size:
                continue
            first = 1 << int(m[int(rng.integers(m.size))])
            n = first
        g = int(group[j])
        if g == 0:
            offset = n - 2
        elif g == 1:
            offset = n - 4 + int(rng.integers(0, 2))
        else:
            width = (n - 4 - low) / 6.0
            offset = low + int((g - 2 + rng.random()) * width)
        pull[j] = first + min(max(offset, low), n - 1)
    return pull, placed


def _run(policy: Policy, tapes: np.ndarray, horizon: int, seed, replay=None, on_round=None, planned: bool = False,
         traced_from: int = 1, recorded: bool = True, rounds: np.ndarray | None = None):
    """One traced run of ``policy`` on per-replicate tapes (R, K, pulls); ``on_round(t, ledger)`` is
    called after every update. Returns (actions (R, T), tracer).

    ``traced_from`` (session 13): the tracer is switched on only before round ``traced_from``; the
    rounds before it run at the engine's untraced speed (same ledger, same random stream), so a
    coupled window far into a run costs its prefix once per run, not a traced prefix
    (:func:`~privbandit.audit.fast_forward.fast_forward_audit`). The replay then starts at the window's first draw.
    ``recorded=False``: the run's ledger is :meth:`Ledger.unrecorded` -- every report still passes through
    ``_store`` / ``_record_dense``, where the tracer pairs it, and is dropped there (a non-tight recording
    ledger would not do: it stages the posterior's prefix reports past both entry points). ~4x faster per
    round than the tight ledger (Private-UCB); no spend check can read it.

    ``planned``: where the run plans rounds ahead (policies.base ``plan``), feed each planned stretch
    through ``update_block`` as the engine does, so that path is audited too (round by round it is
    never taken); a stretch ends before every round in ``on_round.rounds`` (where it checks), and
    ``on_round`` is called after its last round. Rounds inside a stretch count the reports made
    before the stretch as made before them (``marks``): conservative for the footprint check.

    ``rounds`` (session 15, :func:`~privbandit.audit.fast_forward.clock_jump_audit`): the increasing round numbers
    the policy is told, one per played round (``horizon`` of them; the policy starts with horizon ``rounds[-1]``):
    a clock that jumps. Everything else -- actions, marks, ``traced_from``, ``on_round`` -- counts played rounds
    1 .. ``horizon``. Round by round only."""
    R, K, _ = tapes.shape
    if rounds is not None and (planned or len(rounds) != horizon):
        raise ValueError("rounds: one round number per played round (horizon of them), round by round only")
    ledger = Ledger(R, K, tight=True, capacity=max(1, horizon)) if recorded else Ledger.unrecorded(R, K)
    stops = sorted(int(t) for t in getattr(on_round, "rounds", ()))
    clock = Clock()
    # the policy's exceptions leave as PolicyRaised (the round, the partial trace): an observation
    tracer = ReleaseTracer(ledger, replay)
    traced_from = max(1, int(traced_from))
    if planned and traced_from > 1:
        raise ValueError("traced_from applies to round-by-round runs only (planned=False)")
    with policy_code(clock), contextlib.ExitStack() as stack:
        clock.tracer = tracer
        if traced_from == 1:
            stack.enter_context(tracer)
        run = policy.start(K, R, horizon if rounds is None else int(rounds[-1]), run_generator(seed),
                           ledger=ledger)
        told = (lambda t: t) if rounds is None else (lambda t: int(rounds[t - 1]))
        plan = run.plan if planned else None
        pulls = np.zeros((R, K), dtype=np.int64)
        rows = np.arange(R)
        actions = np.empty((R, horizon), dtype=np.int64)
        # reports made before each round's update: a release among the first marks[t] reports was made
        # before round t's reward was revealed, so it cannot depend on that record
        tracer.marks = np.zeros(horizon + 2, dtype=np.int64)
        t = 1
        while t <= horizon:
            clock.t = t
            if t == traced_from > 1:  # the window starts at a round boundary: no draw is open
                stack.enter_context(tracer)
            block = None
            if plan is not None:
                limit = min([horizon] + [u for u in stops if u >= t]) - t + 1
                block = plan(t, limit)
            if block is None:
                arms = np.asarray(run.select(told(t))).astype(np.int64)
                j = pulls[rows, arms]
                pulls[rows, arms] += 1
                tracer.marks[t] = len(tracer.reports)
                run.update(told(t), arms, tapes[rows, arms, j])
                actions[:, t - 1] = arms
                if on_round is not None:
                    on_round(t, ledger)
                t += 1
                continue
            block = np.asarray(block).astype(np.int64)
            n = block.shape[0]
            rewards = np.empty((n, R))
            for i, arms in enumerate(block):  # the tape's next pull of each arm, round by round
                j = pulls[rows, arms]
                pulls[rows, arms] += 1
                rewards[i] = tapes[rows, arms, j]
            tracer.marks[t:t + n] = len(tracer.reports)
            run.update_block(t, block, rewards)
            actions[:, t - 1:t - 1 + n] = block.T
            if on_round is not None:
                on_round(t + n - 1, ledger)
            t += n
    return actions, tracer


def _seed_check(policy: Policy, tapes: np.ndarray, horizon: int, run_seq, planned: bool, notes: list[str]):
    """Check 5e: two runs on ``tapes`` with two children of the run's seed (module
    :mod:`privbandit.audit.seed_dependence`). A run that raises leaves the check out (a note): the coupled
    runs report the exception."""
    from privbandit.audit.seed_dependence import seed_check

    if tapes.shape[0] < 1:
        return None
    return seed_check(lambda s: _run(policy, tapes, horizon, s, planned=planned, recorded=False)[1].draws,
                      run_seq, notes)


def _run_unobserved(policy: Policy, tapes: np.ndarray, horizon: int, seed) -> np.ndarray:
    """:func:`_run` round by round without a ledger and without the tracer: the actions (R, T) of the
    path a run takes when nobody records its releases (check 12)."""
    R, K, _ = tapes.shape
    run = policy.start(K, R, horizon, run_generator(seed), ledger=None)
    pulls = np.zeros((R, K), dtype=np.int64)
    rows = np.arange(R)
    actions = np.empty((R, horizon), dtype=np.int64)
    for t in range(1, horizon + 1):
        arms = np.asarray(run.select(t)).astype(np.int64)
        j = pulls[rows, arms]
        pulls[rows, arms] += 1
        run.update(t, arms, tapes[rows, arms, j])
        actions[:, t - 1] = arms
    return actions


def _ledger_observer(policy: Policy, tapes: np.ndarray, horizon: int, seed, act_d: np.ndarray,
                     notes: list[str] | None = None) -> Finding | None:
    """Check 12: the run on D repeated without a ledger acts as the run with one. A run that cannot go
    without a ledger (it raises) is noted, not refuted: a crash is no release."""
    try:
        act_u = _run_unobserved(policy, tapes, horizon, seed)
    except Exception as exc:  # noqa: BLE001 -- whatever the policy raises, the other checks still stand
        if notes is not None:
            notes.append(f"ledger_observer: the run without a ledger raised {type(exc).__name__}: {exc}; not compared")
        return None
    differ = np.flatnonzero((act_u != act_d).any(axis=1))
    if not differ.size:
        return None
    r = int(differ[0])
    t = int(np.flatnonzero(act_u[r] != act_d[r])[0]) + 1
    return Finding("ledger_observer", (
        f"{differ.size} of {act_d.shape[0]} replicates act differently when the run has no ledger (same tapes, same "
        f"seed): e.g. replicate {r} plays arm {int(act_u[r, t - 1])} in round {t} without a ledger, arm "
        f"{int(act_d[r, t - 1])} with one -- the path audited here (with a ledger) is not the path taken without"))


def probe_horizon(policy: Policy, n_arms: int, *, minimum: int = 200, cap: int = 20_000) -> int:
    """A horizon long enough for the white-box audit: ``minimum``, the pre-pulls plus 100 rounds, and
    a quarter more than the round by which one run (on a constant 0.5 tape) has released at least one
    statistic per arm (elimination policies release only at the end of long epochs)."""
    b = int(getattr(policy, "b", 0) or 0)
    base = max(int(minimum), n_arms * b + 100)
    if not getattr(policy, "records_releases", True):  # EXP3: private by its sampling, never releases
        return base
    t = release_round(policy, n_arms, releases=n_arms, cap=cap)
    return cap if t is None else max(base, min(cap, int(1.25 * t) + 50))


def release_profile(policy: Policy, n_arms: int, horizon: int) -> tuple[int | None, int]:
    """(round of the first reported noise draw or None, reported draws by ``horizon``) of one run on a
    constant 0.5 tape: how soon, and how densely, the policy releases."""
    ledger = Ledger(1, n_arms, track_replicates=0)
    half, first = np.array([0.5]), None
    try:  # a probe: where the policy raises it stops (the audits proper report the exception)
        with policy_code(Clock()):
            run = policy.start(n_arms, 1, horizon, np.random.default_rng(0), ledger=ledger)
            for t in range(1, horizon + 1):
                run.update(t, np.asarray(run.select(t)), half)
                if first is None and int(ledger.draws.sum()):
                    first = t
    except PolicyRaised:
        pass
    return first, int(ledger.draws.sum())


def release_round(policy: Policy, n_arms: int, *, releases: int = 1, cap: int = 20_000) -> int | None:
    """The round by which one run on a constant 0.5 tape has made ``releases`` noise draws that it
    reported (None if not within ``cap`` rounds). E.g. DP-UCB-Int at its default certified epsilon
    releases an arm's first mean only at that arm's 197th pull."""
    ledger = Ledger(1, n_arms, track_replicates=0)
    half = np.array([0.5])
    clock = Clock()
    try:  # a probe: where the policy raises it stops (the audits proper report the exception)
        with policy_code(clock):
            run = policy.start(n_arms, 1, cap, np.random.default_rng(0), ledger=ledger)
            for t in range(1, cap + 1):
                clock.t = t
                arms = np.asarray(run.select(t))
                run.update(t, arms, half)
                if int(ledger.draws.sum()) >= releases:
                    return t
    except PolicyRaised:
        return max(clock.t, 1)
    return None


def _law_distance(family: str, factor: float) -> float:
    """sup_x |F(x) - F(x / factor)| for the standard Laplace or normal CDF F."""
    x = np.linspace(1e-4, 12.0, 120_001)
    cdf = sps.laplace.cdf if family == "laplace" else sps.norm.cdf
    return float(np.max(np.abs(cdf(x) - cdf(x / factor))))


_DIST2 = {}


def _power(family: str, n: int, critical: float) -> float:
    if family not in _DIST2:
        _DIST2[family] = min(_law_distance(family, 2.0), _law_distance(family, 0.5))
    gap = _DIST2[family] - critical
    return 0.0 if gap <= 0 else max(0.0, 1.0 - 2.0 * math.exp(-2.0 * n * gap * gap))


def _noise_law(rel: dict, alpha: float, test_law: bool = True) -> list[NoiseGroup]:
    """Check 5 per group: exact repeats of a residual (always), then the DKW-Massart test (``test_law``)."""
    ok = np.isfinite(rel["out"]) & (rel["param"] > 0)
    if "width" in rel and len(rel["width"]) == ok.size:
        # a vector Laplace release scales its noise per entry by weights the ledger is not told (its
        # event is PureDP, not the scalar Laplace law): its residuals are tested only where the tracer
        # knows the node's statistic in the noise's units (a traced VectorTreeMechanism insert: the
        # statistic divided by the weights, the residual the unweighted Lap(scale) draw); vector
        # Gaussian releases (one sigma for every entry) always are
        unknown = ~rel["vector"].astype(bool) if "vector" in rel and len(rel["vector"]) == ok.size else True
        ok &= ~((rel["width"] > 1) & (rel["kind"] == "laplace") & unknown)
    fam = np.where(rel["kind"] == "laplace", "laplace", "gaussian")
    length = np.maximum(rel["hi"] - rel["lo"], 1)
    octave = np.floor(np.log2(length)).astype(np.int64)
    idx_ok = np.flatnonzero(ok)
    groups = []
    if idx_ok.size:
        codes = np.stack([_codes(rel["mechanism"][idx_ok], {}), (fam[idx_ok] == "laplace").astype(np.int64),
                          octave[idx_ok]], axis=1)
        inv = _row_inverse(codes)
        order = np.argsort(inv, kind="stable")  # each group's elements in increasing order
        bounds = np.flatnonzero(np.diff(inv[order])) + 1
        for part in np.split(order, bounds):
            if part.size >= MIN_GROUP:
                i = idx_ok[part[0]]
                groups.append(((rel["mechanism"][i], fam[i], int(octave[i])), idx_ok[part]))
    out = []
    for (mech, family, octv), idx in sorted(groups):
        resid = rel["out"][idx] - rel["stat"][idx]
        u = np.sort(resid / rel["param"][idx])
        n = u.size
        # continuous noise never repeats: equal residuals off the exact-mode grid are re-used noise
        continuous = resid[rel["exact"][idx] == 0]
        off_grid = continuous[np.abs(continuous / GRID - np.round(continuous / GRID)) > 1e-6]
        reused = off_grid.size - np.unique(off_grid).size
        if reused > 0:
            out.append(NoiseGroup(str(mech), family, octv, n, 1.0, 0.0, 1.0, True, reused))
            continue
        if not test_law:
            continue
        cdf = sps.laplace.cdf(u) if family == "laplace" else sps.norm.cdf(u)
        grid = np.arange(1, n + 1) / n
        dkw = float(max(np.max(grid - cdf), np.max(cdf - (grid - 1.0 / n))))
        a = alpha / len(groups)
        crit = math.sqrt(math.log(2.0 / a) / (2.0 * n))
        # the tail test (its own family-wise alpha, Bonferroni over the groups): float-mode residuals only
        floating = rel["exact"][idx] == 0
        tail = _tail_p(family, np.abs(resid[floating] / rel["param"][idx][floating]))
        out.append(NoiseGroup(str(mech), family, octv, n, dkw, crit, _power(family, n, crit),
                              dkw > crit or tail < a, 0, tail))
    if any(not g.reused for g in out):  # each of the two tests at alpha / len(groups) per group tested
        spend("noise law (check 5)", alpha)
        spend("noise-law tails (check 5)", alpha)
    if test_law and idx_ok.size and "st" in rel and len(rel["st"]) == ok.size:
        out.extend(_stream_law(rel, idx_ok, fam, alpha))
    return out


STREAM_OCTAVE = -1
"""The ``octave`` of a per-stream noise-law group (round 12): every mechanism and footprint length."""


def _octave_label(g: NoiseGroup) -> str:
    return "every footprint length" if g.octave == STREAM_OCTAVE else f"footprint octave {g.octave}"


def _stream_law(rel: dict, idx_ok: np.ndarray, fam: np.ndarray, alpha: float) -> list[NoiseGroup]:
    """Check 5, per stream (round 12): the residuals / scale of *every* release on one stream (all
    mechanisms and footprint lengths of one family; each is Laplace(1) or N(0, 1) under the contract, so
    they pool) against the declared law, DKW-Massart at ``alpha`` Bonferroni-split over these groups (its
    own share: the white-box run's statistical budget grows by ``alpha``). The mechanism groups pool
    every stream: a scale wrong on a few streams only (arms >= 6, one hub) is diluted there by the
    others -- 2 of 8 arms at half the scale move a pooled group's CDF by ~0.03, one stream's by 0.125."""
    st = rel["st"][idx_ok].astype(np.int64)
    lap = (fam[idx_ok] == "laplace").astype(np.int64)
    codes = np.stack([st, lap], axis=1)
    inv = _row_inverse(codes)
    order = np.argsort(inv, kind="stable")
    parts = [p for p in np.split(order, np.flatnonzero(np.diff(inv[order])) + 1) if p.size >= MIN_GROUP]
    if len(parts) < 2:  # one stream: the mechanism groups already pool it
        return []
    out = []
    a = alpha / len(parts)
    spend("per-stream noise law (check 5)", alpha)
    for part in parts:
        idx = idx_ok[part]
        family = fam[idx[0]]
        u = np.sort((rel["out"][idx] - rel["stat"][idx]) / rel["param"][idx])
        n = u.size
        cdf = sps.laplace.cdf(u) if family == "laplace" else sps.norm.cdf(u)
        grid = np.arange(1, n + 1) / n
        dkw = float(max(np.max(grid - cdf), np.max(cdf - (grid - 1.0 / n))))
        crit = math.sqrt(math.log(2.0 / a) / (2.0 * n))
        out.append(NoiseGroup(f"stream {int(rel['st'][idx[0]])} (every mechanism)", family, STREAM_OCTAVE, n, dkw,
                              crit, _power(family, n, crit), dkw > crit, 0, 1.0))
    return out


def _tail_p(family: str, magnitudes: np.ndarray) -> float:
    """P(max of n i.i.d. |Z| <= the observed maximum) for Z ~ Laplace(1) or N(0, 1): n log F(max) with
    F(m) = 1 - e^-m or erf(m / sqrt 2). A small value says the tails are missing (noise truncated or
    clamped: a truncated law is not epsilon-DP at all, its support moves with the statistic), which the
    DKW test cannot see when the cut is far out (Laplace cut at 4 scales: sup |F_n - F| = 0.009)."""
    n = magnitudes.size
    if n < MIN_GROUP:
        return 1.0
    m = float(np.max(magnitudes))
    tail = math.exp(-m) if family == "laplace" else float(sps.norm.sf(m) * 2.0)
    if tail >= 1.0:
        return 0.0
    return math.exp(n * math.log1p(-tail)) if tail > 0 else 1.0


COINCIDENCE_ULPS = 2.0 ** -50
"""Rounding slack of a traced residual, relative to |statistic| + |residual|: ``(s + z) - s`` recovers z
to within 2^-52 (|s| + |z|) (one rounding of the sum, one of the difference); the slack is four times that
(the residual divided by its scale adds one more rounding)."""
LATTICES = tuple(range(4, 41))
"""The dyadic lattices 2^-k of :func:`_noise_coincidences` (the exact mode's grid 2^-20 among them)."""
DECIMAL_LATTICES = tuple(range(1, 13))
"""The decimal lattices 10^-k of :func:`_noise_coincidences` (session 18: round 20's noise kept in fixed point at
10^-9, a grid no 2^-k is; past 10^-12 the rounding slack of a statistic near 10 covers a lattice point's share)."""


def _float_units(rel: dict) -> np.ndarray:
    """The float-mode releases whose residual / scale is in the declared law's units (exact mode draws on
    the 2^-20 grid by design; vector Laplace entries whose weights the tracer does not know are left out,
    as in :func:`_noise_law`)."""
    ok = np.isfinite(rel["out"]) & (rel["param"] > 0) & (rel["exact"] == 0)
    if "width" in rel and len(rel["width"]) == ok.size:
        unknown = ~rel["vector"].astype(bool) if "vector" in rel and len(rel["vector"]) == ok.size else True
        ok &= ~((rel["width"] > 1) & (rel["kind"] == "laplace") & unknown)
    return ok


def _noise_coincidences(rel: dict, alpha: float) -> list[Finding]:
    """Two exact-law consequences of continuous noise that the DKW test cannot see (round 11). Per
    (mechanism, family), float-mode releases only (exact mode draws on the 2^-20 grid by design):

    * **ties** -- two normalised residuals |u_i| = |u_j| up to rounding. With u_j independent of the
      past and |u| of density at most f (1 for Laplace(1), sqrt(2/pi) for N(0, 1)), the expected number of
      pairs within w_i + w_j is at most 2 f (n - 1) sum_i w_i (w: the rounding slack in units of the
      scale); by Markov, k such pairs have probability at most that / k. Antithetic noise (z and -z),
      noise shared between arms, or a sampler with few reachable values (the inverse CDF of a float32
      uniform: 2^24) make many.
    * **lattice** -- residuals on a dyadic lattice 2^-k (k = 4 ... 40), or (session 18) on a decimal one
      10^-k (k = 1 ... 12) among the statistics off that grid (a binomial tail there), up to rounding: a release within
      w of a lattice point has probability at most 2 w (1 / 2^-k + f_max) for a residual of density at
      most f_max; Markov again, Bonferroni over the lattices. Noise snapped to a grid while the statistic
      is not leaves the statistic's offset from the grid in every released value (Mironov 2012's
      floating-point attack class).

    Each test takes ``alpha / 2`` (divided over the mechanisms and, for the lattice, over its lattices)."""
    idx_ok = np.flatnonzero(_float_units(rel))
    if not idx_ok.size:
        return []
    fam = np.where(rel["kind"][idx_ok] == "laplace", 1, 0)
    codes = np.stack([_codes(rel["mechanism"][idx_ok], {}), fam], axis=1)
    inv = _row_inverse(codes)
    parts = [idx_ok[inv == g] for g in range(int(inv.max()) + 1)]
    parts = [p for p in parts if p.size >= MIN_GROUP]
    out: list[Finding] = []
    if not parts:
        return out
    a = alpha / 2.0 / len(parts)
    spend("coincidences (check 5)", alpha)  # ties and lattices, alpha / 2 each
    for idx in parts:
        stat, released, scale = rel["stat"][idx], rel["out"][idx], rel["param"][idx]
        laplace = rel["kind"][idx[0]] == "laplace"
        resid = released - stat
        slack = COINCIDENCE_ULPS * (np.abs(stat) + np.abs(resid))  # absolute, in the residual's units
        u = np.abs(resid) / scale
        w = slack / scale + COINCIDENCE_ULPS * u
        order = np.argsort(u, kind="stable")
        gaps = np.diff(u[order])
        ties = int(np.count_nonzero(gaps <= w[order][1:] + w[order][:-1]))
        f_abs = 1.0 if laplace else math.sqrt(2.0 / math.pi)
        expected = 2.0 * f_abs * (idx.size - 1) * float(np.sum(w))
        name = rel["mechanism"][idx[0]]
        if ties and expected / ties <= a:
            out.append(Finding("noise_law", (
                f"{ties} pairs of {name}'s normalised residuals coincide in magnitude up to rounding (n={idx.size}; "
                f"a continuous law expects at most {expected:.3g}, Markov level {expected / ties:.3g}): the noise "
                f"values are antithetic, shared, or drawn from a small set")))
            continue
        f_max = (0.5 if laplace else 1.0 / math.sqrt(2.0 * math.pi)) / scale
        rejected = []
        n_lattices = len(LATTICES) + len(DECIMAL_LATTICES)
        for k in LATTICES:
            g = 2.0 ** -k
            off = np.abs(resid - np.round(resid / g) * g)
            hits = int(np.count_nonzero(off <= slack))
            expected = float(np.sum(np.minimum(1.0, 2.0 * slack * (1.0 / g + f_max))))
            if hits and expected / hits <= a / n_lattices:
                rejected.append((-hits, 0, k, expected, f"2^-{k}"))
        for k in DECIMAL_LATTICES:
            # 10^k is exact in a double (k <= 22), so residual x 10^k costs one rounding: the offset from the grid
            # 10^-k is measured to within the slack. Only statistics off the grid count: a release rounded to the
            # grid after the noise (post-processing, round 20's control) puts the residual of an on-grid statistic
            # (whole sums of 0/1 rewards) on the grid too, and tells nothing; noise snapped to the grid keeps an
            # off-grid statistic's offset in the released value (the leak).
            m = 10.0 ** k
            stat_off = np.abs(stat * m - np.round(stat * m)) / m
            off_grid = stat_off > 2.0 * slack
            if not off_grid.any():
                continue
            off = np.abs(resid * m - np.round(resid * m)) / m
            hits = int(np.count_nonzero((off <= slack) & off_grid))
            # A binomial tail, not Markov: each draw is fresh given the past (5d tests that), and the chance that
            # it lands within its slack of a grid point is at most p_i = 4 c (|s_i| + scale_i + g)(1/g + f_max)
            # (c = COINCIDENCE_ULPS; |z| replaced by its mean, the scale, at most doubling the hit set's measure
            # in a cell), a bound fixed before the draw -- so the hits are dominated by independent Bernoulli(p_i)
            # and Chernoff's P(X >= h) <= exp(-mu) (e mu / h)^h holds. Markov's mu / h needs h >= mu / level: with
            # the vector tree's scale 120 against 10^-9 that is ~10^6 hits, more than a run releases.
            p = np.minimum(1.0, 4.0 * COINCIDENCE_ULPS * (np.abs(stat[off_grid]) + scale[off_grid] + 1.0 / m)
                           * (m + f_max[off_grid]))
            expected = float(np.sum(p))
            if hits > expected:
                log_tail = -expected + hits * (1.0 + math.log(expected) - math.log(hits)) if expected > 0 \
                    else -math.inf
                if log_tail <= math.log(a / n_lattices):
                    rejected.append((-hits, 1, k, expected, f"10^-{k}"))
        if rejected:  # the coarsest lattice among those holding the most residuals (a finer one holds them too)
            hits, _, k, expected, grid = min(rejected)
            out.append(Finding("noise_law", (
                f"{-hits} of {idx.size} residuals of {name} lie on the lattice {grid} up to rounding (a continuous "
                f"law expects at most {expected:.3g}): the noise is snapped to a grid the statistic is not on, "
                f"so every released value carries the statistic's offset from the grid")))
    return out


def _codes(names: np.ndarray, ids: dict) -> np.ndarray:
    """Integer codes of an object array of names (``ids``: name -> code, extended as needed), mapped
    once per run of equal names (a report's elements share one: millions of elements, few runs)."""
    n = len(names)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], np.flatnonzero(names[1:] != names[:-1]) + 1])
    at = np.array([ids.setdefault(names[i], len(ids)) for i in starts], dtype=np.int64)
    return np.repeat(at, np.diff(np.append(starts, n)))


def _lex_key(a: np.ndarray) -> np.ndarray | None:
    """One int64 per row of the int matrix ``a`` (n, c) whose numeric order is the rows' lexicographic order
    (column 0 primary) and which is equal exactly for equal rows -- the columns packed in mixed radix, each less
    its minimum -- or None when the product of the columns' ranges reaches 2^62 (session 15: one stable argsort
    of this key replaces ``np.lexsort``'s c passes; on the contextual runs' ~10^6 traced values, several times
    faster, with the same permutation, both sorts being stable)."""
    n, c = a.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    low, high = a.min(axis=0), a.max(axis=0)
    spans = [int(h) - int(lo) + 1 for lo, h in zip(low.tolist(), high.tolist())]
    if math.prod(spans) >= 2 ** 62:
        return None
    key = np.zeros(n, dtype=np.int64)
    for col, span in enumerate(spans):
        key *= span
        key += a[:, col] - low[col]
    return key


def _lex_order(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable lexicographic order of the rows of the int matrix ``a`` (column 0 primary; ``np.lexsort`` of
    the columns reversed) and, in that order, whether each row differs from the one before (True for the
    first)."""
    n = a.shape[0]
    key = _lex_key(a)
    new = np.ones(n, dtype=bool)
    if key is None:
        order = np.lexsort(a.T[::-1])
        sa = a[order]
        new[1:] = np.any(sa[1:] != sa[:-1], axis=1)
    else:
        order = np.argsort(key, kind="stable")
        sk = key[order]
        new[1:] = sk[1:] != sk[:-1]
    return order, new


def _row_inverse(a: np.ndarray) -> np.ndarray:
    """For an int matrix (n, c), an id per row, equal ids for equal rows (``np.unique(a, axis=0,
    return_inverse=True)``'s ids, by a lexicographic sort: much faster than its row-wise sort on millions of
    rows)."""
    n = a.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order, new = _lex_order(a)
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    return inv


def _keyed(rel: dict, mech_ids: dict) -> np.ndarray:
    """Per element, a key (rep, st, mech, lo, hi, node, occurrence) as an int64 matrix."""
    mech = _codes(rel["mechanism"], mech_ids)
    entry = rel["entry"] if "entry" in rel and len(rel["entry"]) == len(rel["rep"]) else np.zeros(len(rel["rep"]))
    base = np.stack([rel["rep"], rel["st"], mech, rel["lo"], rel["hi"], rel["node"], entry],
                    axis=1).astype(np.int64)
    # rep the primary key
    occ = np.zeros(base.shape[0], dtype=np.int64)
    if base.shape[0]:
        order, new = _lex_order(base)
        start = np.maximum.accumulate(np.where(new, np.arange(base.shape[0]), 0))
        occ[order] = np.arange(base.shape[0]) - start
    return np.concatenate([base, occ[:, None]], axis=1)



def check_audit_arguments(policy, counts, alpha) -> tuple[int, ...]:
    """The shared argument check of the white-box audits (K-armed, graph, contextual): ``policy`` a
    private :class:`Policy`; ``counts`` (name, value, least) triples, each a whole number >= least,
    returned as ints; ``alpha`` a real number in (0, 1). Every bad value -- a bool, None, text, inf,
    NaN, a fraction -- is a ValueError naming the parameter and its range (``int(inf)`` raised
    OverflowError, ``int(None)`` TypeError)."""
    if not isinstance(policy, Policy):
        raise ValueError(f"policy must be a privbandit Policy, got {type(policy).__name__}")
    if not policy.private:
        raise ValueError(f"{policy!r} is not private: there is no privacy contract to check")
    out = []
    for name, v, lo in counts:
        try:
            n = _validate.count(name, v)
        except ValueError:
            n = -1
        if n < lo:
            raise ValueError(f"{name} must be a whole number in [{lo}, inf), got {v!r}")
        out.append(n)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    return tuple(out)

def attempt(run, *args, **kwargs):
    """``(run(*args, **kwargs), None)``, or ``(None, PolicyRaised)`` when the audited policy raised in it."""
    try:
        return run(*args, **kwargs), None
    except PolicyRaised as exc:
        return None, exc


def raised_result(policy: Policy, horizon: int, n_arms: int, replicates: int, seed, alpha: float,
                  exc_d: PolicyRaised | None, exc_p: PolicyRaised | None, notes: list[str], started: float,
                  spend, *, own_rounds=()) -> WhiteBoxResult:
    """The result of coupled runs cut short by the policy's exception (privbandit/audit/raised.py): a
    ``raised`` finding when the neighbours raised differently (one only, another round, another type),
    else INCONCLUSIVE naming the exception. The checks after the raise are not run."""
    coupled = getattr(policy, "records_releases", True)
    witness, error = compare(exc_d.raised if exc_d else None, exc_p.raised if exc_p else None,
                             coupled=coupled, own_rounds=own_rounds)
    findings = [Finding("raised", witness)] if witness else []
    notes.append("the policy raised: the coupled runs stopped there and no other check was made")
    return WhiteBoxResult(repr(policy), horizon, n_arms, replicates, seed if isinstance(seed, int) else 0, alpha, 0,
                          findings, [], notes, time.perf_counter() - started, spend.rows, error=error)


def whitebox_audit(policy: Policy, horizon: int, n_arms: int = 2, replicates: int = 256, *, seed: int = 0,
                   alpha: float = 1e-4, window: int = 6, max_findings: int = 5, law: bool = True,
                   late_records: bool = False, planned: bool = False, schedule_records: int = 0,
                   observer: bool = True, sweep_records: int = 0, last_records: int = 0,
                   deep_records: int = 0, seed_runs: int = 16, seed_wide: bool = False) -> WhiteBoxResult:
    """Coupled-run white-box audit of ``policy`` (see the module docstring). ``law=False`` skips the
    statistical noise-law test (check 5) and keeps only the exact checks, which need no particular
    number of replicates: a long, thin run (few replicates, many rounds) then reaches late-run code
    paths at no cost in alpha. ``late_records=True``: half the replicates change a late record of
    their arm (log-uniform up to horizon / n_arms pulls, :func:`neighbour_tapes`), so the footprint
    checks also see records deep in their streams; a replicate whose arm is not pulled that often
    changes nothing and is not a witness. ``planned=True``: stretches a run plans ahead go through its
    ``update_block`` (the engine's path, :func:`_run`) instead of round by round.
    ``schedule_records``: that many more coupled replicates (a multiple of 4) change a record on the
    policy's own release schedule -- the last record of an interval, an epoch batch, a fresh batch, a
    gap batch, or the first after it -- read off the run on D itself (:func:`release_boundaries`,
    :func:`schedule_positions`): their D tapes are unchanged mixed tapes, and D' moves the record on
    the boundary to the far end of [0, 1] (a change of 1/2 to 1). ``replicates`` are the others.
    ``sweep_records`` (session 13): that many more coupled replicates (a multiple of 4) whose changed record
    walks the positions inside the policy's own batches -- replicate j the ((j // 4) mod 16)-th record of
    a batch on its arm (:func:`sweep_positions`), read off the run on D like the schedule replicates and
    changed the same way (to the far end of [0, 1]).
    ``last_records`` (session 13, lead): that many more coupled replicates (a multiple of 4) whose changed record
    is the one revealed in the run's *last* round (the arm the run on D pulled at round T, its newest pull),
    read off the run on D and changed the same way: a record that no later decision reads, so only the
    release it enters can show a leak keyed to the horizon's end (round 15's ``exp3_lap_last_round_double``).
    ``deep_records`` (session 14): that many more coupled replicates (a multiple of 4) whose changed record sits
    16 or more records into one of the policy's long batches (:func:`deep_positions`: the batch's second to
    fourth last records and a stratified draw over the rest), read off the run on D like the sweep replicates.
    ``seed_runs`` (session 14, lead): two more runs of that many replicates on D's first tapes with two
    other seeds (children of the run's): their noise must differ draw by draw
    (check 5e, :mod:`privbandit.audit.seed_dependence`); 0 skips it. ``seed_wide`` (session 16, s16/reach): when
    those runs find nothing, two more on *every* replicate's D tape, so noise keyed to a replicate's index past
    ``seed_runs`` (a pool of secret generators for the first replicates, public ones after: round 18's
    ``dp_ts_replicates_past_sixteen_fixed_seed``) is compared too (exact, no alpha; the CLI's main run).
    ``observer``: also repeat the run on D without a ledger (check 12; round by round runs only). No
    alpha is spent: the exact checks cannot fail by chance wherever the changed record sits, and the
    noise-law test reads the run on D, whose tapes are fixed before any noise is drawn, so its level
    holds as before."""
    horizon, n_arms, replicates, window, schedule_records = check_audit_arguments(
        policy, (("horizon", horizon, 2), ("n_arms", n_arms, 2), ("replicates", replicates, 4),
                 ("window", window, 1), ("schedule_records", schedule_records, 0)), alpha)
    sweep_records, last_records, deep_records = check_audit_arguments(
        policy, (("sweep_records", sweep_records, 0), ("last_records", last_records, 0),
                 ("deep_records", deep_records, 0)), alpha)
    for name, value in (("schedule_records", schedule_records), ("sweep_records", sweep_records),
                        ("last_records", last_records), ("deep_records", deep_records)):
        if value % 4:
            raise ValueError(f"{name} must be a multiple of 4 (every tape kind per group), got {value!r}")
    started = time.perf_counter()
    seq = np.random.SeedSequence(seed)
    tape_seq, run_seq = seq.spawn(2)
    # the changed pull: anywhere in the pre-pulls (if any) and the first ``window`` pulls after them
    span = int(getattr(policy, "b", 0) or 0) + window
    tape, tape_prime, arm, pull = neighbour_tapes(n_arms, horizon, replicates, np.random.default_rng(tape_seq),
                                                  first=0, window=span,
                                                  late=max(span + 1, horizon // n_arms) if late_records else None)
    notes: list[str] = []
    base = replicates
    # The schedule replicates, then (session 13) the sweep replicates: the run on D is their probe. Their
    # D tapes are left unchanged, the run on D marks the policy's release boundaries on them, and D'
    # changes one record placed from those boundaries (to the far end of [0, 1]). The run on D is then
    # exactly the run the boundaries were read from; the tapes of D stay independent of the noise (the
    # noise-law test's level holds), and D' is a neighbour of D whatever position the noise led to. (Later
    # children of the seed: the other tapes and the runs' seed are unchanged by them.)
    probe_rngs = []
    for count in (schedule_records, sweep_records, last_records, deep_records):
        probe_rngs.append(np.random.default_rng(seq.spawn(1)[0]) if count else None)
        if count:
            ts = _mixed_tapes(n_arms, horizon, int(count), probe_rngs[-1])
            tape, tape_prime = np.concatenate([tape, ts]), np.concatenate([tape_prime, ts])
            arm = np.concatenate([arm, np.arange(int(count)) % n_arms])
            pull = np.concatenate([pull, np.zeros(int(count), np.int64)])
            replicates += int(count)
    sched_rng, sweep_rng, _, deep_rng = probe_rngs
    spend = _SpendCheck(policy, horizon, n_arms)
    out_d, exc_d = attempt(_run, policy, tape, horizon, run_seq, on_round=spend, planned=planned)
    if exc_d is not None:  # D raised: D' replays what D released before it, then must raise alike
        tr_d = exc_d.tracer
        _, exc_p = attempt(_run, policy, tape_prime, horizon, run_seq,
                           replay=tr_d.draws if tr_d is not None else None, planned=planned)
        return raised_result(policy, horizon, n_arms, replicates, seed, alpha, exc_d, exc_p, notes, started, spend)
    act_d, tr_d = out_d
    if schedule_records:
        rows = np.arange(base, base + schedule_records)
        events = release_boundaries(tr_d, act_d, arm)[base:base + schedule_records]
        pull[rows], placed = schedule_positions(events, horizon, sched_rng, first=span,
                                                late=max(span + 2, horizon // n_arms))
        _far_end(tape, tape_prime, rows, arm, pull)
        notes.append(f"schedule: {placed} of {schedule_records} replicates change a record on a release boundary of "
                     f"the policy's own schedule (read off the run on D); the others a log-uniform one")
    if sweep_records:
        rows = np.arange(replicates - deep_records - last_records - sweep_records,
                         replicates - deep_records - last_records)
        placed = _place_in_batches(sweep_positions, sweep_rng, rows, tr_d, act_d, arm, pull, tape, tape_prime)
        notes.append(f"sweep: {sweep_records} replicates change the k-th record of a batch, k = 0..{min(SWEEP_OFFSETS, sweep_records // 4) - 1} "
                     f"({placed} in a batch of the policy's own schedule, the others in a dyadic block)")
    if last_records:
        rows = np.arange(replicates - deep_records - last_records, replicates - deep_records)
        arm[rows] = act_d[rows, -1]
        pull[rows] = (act_d[rows] == arm[rows, None]).sum(axis=1) - 1
        _far_end(tape, tape_prime, rows, arm, pull)
        notes.append(f"last: {last_records} replicates change the record revealed in the run's last round")
    if deep_records:
        rows = np.arange(replicates - deep_records, replicates)
        placed = _place_in_batches(deep_positions, deep_rng, rows, tr_d, act_d, arm, pull, tape, tape_prime)
        notes.append(f"deep: {deep_records} replicates change a record 16 or more into a batch ({placed} in a batch of "
                     f"the policy's own schedule, the others in a dyadic block)")
    out_p, exc_p = attempt(_run, policy, tape_prime, horizon, run_seq, replay=tr_d.draws, planned=planned)
    if exc_p is not None:
        return raised_result(policy, horizon, n_arms, replicates, seed, alpha, None, exc_p, notes, started, spend)
    act_p, tr_p = out_p
    findings, groups, n_rel = _coupled_checks(policy, act_d, act_p, tr_d, tr_p, arm, pull, n_arms, alpha, law,
                                              spend, notes)
    if observer and not planned:
        unobserved = _ledger_observer(policy, tape, horizon, run_seq, act_d, notes)
        if unobserved is not None:
            findings.append(unobserved)
    if seed_runs:
        seeded = _seed_check(policy, tape[:seed_runs], horizon, run_seq, planned, notes)
        if seeded is None and seed_wide and tape.shape[0] > seed_runs:
            # the replicates past the first seed_runs (two more children of the run's seed): a run's replicate
            # index is the policy's to key code to, and the narrow runs have no replicate past seed_runs - 1
            seeded = _seed_check(policy, tape, horizon, run_seq, planned, notes)
        if seeded is not None:
            findings.append(seeded)
    if law:  # check 5f (session 15, s15/reach2): a sampler of the policy's own, probed off the run for its reach
        # (privbandit/audit/sampler_reach.py; its own alpha; [] at no cost when the run holds the library's samplers)
        findings.extend(Finding("noise_law", m) for m in reach_check(policy, n_arms, horizon,
                                                                     seed if isinstance(seed, int) else 0, alpha))
    # check 13 (session 15, s15/reach2): the sampling floor and log-weight step an exponential-weights
    # certificate rests on (privbandit/audit/weights.py; exact, no alpha; [] unless the policy declares them)
    findings.extend(Finding("sampling", m) for m in sampling_check(policy, horizon, n_arms, replicates,
                                                                   seed if isinstance(seed, int) else 0))
    if not n_rel:
        notes.append("no traced release was paired with a ledger report: nothing to check")
    return WhiteBoxResult(repr(policy), horizon, n_arms, replicates, seed if isinstance(seed, int) else 0, alpha,
                          n_rel, findings[:max_findings] if max_findings else findings, groups, notes,
                          time.perf_counter() - started, spend.rows)


def _place_in_batches(positions, rng: np.random.Generator, rows: np.ndarray, tr_d: ReleaseTracer, act_d: np.ndarray,
                      arm: np.ndarray, pull: np.ndarray, tape: np.ndarray, tape_prime: np.ndarray) -> int:
    """Replicates ``rows``' changed records placed by ``positions(events, revealed, rng)`` (:func:`sweep_positions`,
    :func:`deep_positions`) from their arm's release boundaries on the run on D, written into ``pull`` and moved to
    the far end of [0, 1] on D'. Returns how many were placed in a batch of the policy's own schedule."""
    events = release_boundaries(tr_d, act_d, arm)[rows[0]:rows[-1] + 1]
    revealed = (act_d[rows] == arm[rows, None]).sum(axis=1)
    pull[rows], placed = positions(events, revealed, rng)
    pull[rows] = np.minimum(pull[rows], act_d.shape[1] - 1)
    _far_end(tape, tape_prime, rows, arm, pull)
    return placed


def _far_end(tape: np.ndarray, tape_prime: np.ndarray, rows: np.ndarray, arm: np.ndarray, pull: np.ndarray) -> None:
    """D' of replicates ``rows``: their changed record moved to the far end of [0, 1] -- a change of at least
    1/2 (exactly 1 on the 0/1 tapes)."""
    now = tape[rows, arm[rows], pull[rows]]
    tape_prime[rows, arm[rows], pull[rows]] = np.where(now < 0.5, 1.0, 0.0)


def _coupled_checks(policy: Policy, act_d: np.ndarray, act_p: np.ndarray, tr_d: ReleaseTracer, tr_p: ReleaseTracer,
                    arm: np.ndarray, pull: np.ndarray, n_arms: int, alpha: float, law: bool, spend: "_SpendCheck",
                    notes: list[str], *, own_round: np.ndarray | None = None, streams_d: np.ndarray | None = None,
                    describe=None, records: list[dict] | None = None,
                    positions: bool = True) -> tuple[list[Finding], list[NoiseGroup], int]:
    """Checks 1-9 on two coupled traced runs (actions (R, T) and tracers of D and of D', which replayed
    D's releases): returns (findings, noise-law groups, traced releases on D). ``arm[r]``: the stream
    of replicate r's changed record; ``pull[r]``: its index among that stream's records (in the
    numbering of ``streams_d``, the stream each round's record entered: the actions for K-armed
    bandit feedback, the default). ``own_round[r]``: a round whose own action may differ (joint DP's
    changed user, :mod:`privbandit.audit.contextual`); ``describe(r)``: how a finding names the change.
    ``records[r]``: {stream: position} of every record replicate r's change entered, when a change may
    enter several streams (side observations, :mod:`privbandit.audit.graph`): checks 4 and 9 are then
    :func:`_footprint_records` (``arm`` and ``pull`` only name the change). ``positions=False``: no
    check 9 (a run traced from a late round only, :func:`_run`'s ``traced_from``: the inserts before
    the window are not logged, so stream positions cannot be counted from them)."""
    findings: list[Finding] = []

    # 1. decisions (not for a policy whose privacy is its own sampling of arms, e.g. EXP3's exponential
    # weights: it declares records_releases=False, draws no noise through the sampler, and its
    # decisions read the data by design; the black-box audits test that claim)
    replicates = act_d.shape[0]
    differ = act_d != act_p
    if own_round is not None:
        # joint DP (Shariff & Sheffet 2018, Def. 3): the changed user's own action may differ; every
        # other round's action must be a post-processing of the releases
        differ[np.arange(replicates), own_round - 1] = False
    diverged = np.any(differ, axis=1)
    if not getattr(policy, "records_releases", True):
        notes.append("decisions check skipped: the policy's privacy is its arm sampling itself "
                     "(records_releases=False), not a post-processing of noisy releases")
        diverged = np.zeros_like(diverged)
    elif diverged.any():
        r = int(np.flatnonzero(diverged)[0])
        t = int(np.flatnonzero(differ[r])[0]) + 1
        where = describe(r) if describe is not None else f"arm {arm[r]} pull #{pull[r]}: 0 vs 1"
        findings.append(Finding("decisions", (
            f"{int(diverged.sum())} of {replicates} replicates act differently on D and D' although every traced "
            f"release was identical: e.g. replicate {r} ({where}) first differs at "
            f"round {t} ({act_d[r, t - 1]} vs {act_p[r, t - 1]}); the decisions read the data outside the releases")))
    elif tr_p.replay_broken:
        findings.append(Finding("decisions", f"the release pattern differs on D and D' with identical releases "
                                             f"and actions ({tr_p.replay_broken})"))

    # 2. unreported releases (either run)
    for label, tr in (("D", tr_d), ("D'", tr_p)):
        missing = tr.unreported()
        if missing:
            n_el = sum(int(np.count_nonzero(~(d.paired | d.exempt))) for d in missing)
            findings.append(Finding("unreported", (
                f"run on {label}: {n_el} released values in {len(missing)} draws reached no ledger report "
                f"(first: draw {missing[0].index}, {missing[0].family}, {missing[0].stat.size} values)")))
            break
    if tr_d.orphans:
        notes.append(f"{len(tr_d.orphans)} ledger reports had no traced draw (noise drawn outside the sampler); "
                     "their noise law cannot be checked")

    # 2b. tree_output: a vector tree's released sums are the sums of its traced node releases
    for label, tr in (("D", tr_d), ("D'", tr_p)):
        bad = getattr(tr, "vector_mismatch", [])
        if bad:
            name, r, st, n, diff, tol, _ = bad[0]
            findings.append(Finding("tree_output", (
                f"run on {label}: after {len(bad)} inserts ({sum(b[-1] for b in bad)} streams) a vector tree's released "
                f"sum is not the sum of its alive node releases as traced (e.g. {name}, replicate {r}, stream {st}, "
                f"{n} records: off by {diff:.6g} > {tol:.3g}): the output was altered after the noise was drawn, or "
                f"reads the data outside its releases")))
            break

    rel_d, rel_p = tr_d.released(), tr_p.released()
    n_rel = int(rel_d["stat"].size)

    # 3-4. sensitivity and footprint, on replicates whose runs stayed coupled
    if n_rel and rel_p["stat"].size:
        ids: dict = {}
        kd, kp = _keyed(rel_d, ids), _keyed(rel_p, ids)
        keep_d = ~diverged[rel_d["rep"]]
        keep_p = ~diverged[rel_p["rep"]]
        kd_i, kp_i = np.flatnonzero(keep_d), np.flatnonzero(keep_p)
        # match rows by key (a sort-merge over the packed keys)
        both = np.concatenate([kd[kd_i], kp[kp_i]])
        inv = _row_inverse(both)
        inv_d, inv_p = inv[: kd_i.size], inv[kd_i.size:]
        pos_p = np.full(inv.max() + 1 if inv.size else 0, -1)
        pos_p[inv_p] = kp_i
        mate = pos_p[inv_d] if inv_d.size else np.zeros(0, int)
        has = mate >= 0
        di, pi = kd_i[has], mate[has]
        unmatched = int((~has).sum())
        if unmatched:
            notes.append(f"{unmatched} releases on D had no counterpart on D' (same key)")
        delta = np.abs(rel_d["stat"][di] - rel_p["stat"][pi])
        sens = np.minimum(rel_d["sens"][di], rel_p["sens"][pi])
        over = delta > sens * (1 + SENS_TOL) + 1e-12
        if over.any():
            worst = int(np.argmax(np.where(over, delta / sens, 0)))
            i = di[worst]
            findings.append(Finding("sensitivity", (
                f"{int(over.sum())} releases moved by more than their declared sensitivity between neighbouring "
                f"tapes: worst {rel_d['mechanism'][i]} (replicate {rel_d['rep'][i]}, stream {rel_d['st'][i]}, "
                f"footprint [{rel_d['lo'][i]}, {rel_d['hi'][i]})) moved {delta[worst]:.6g} > declared "
                f"{sens[worst]:.6g} (ratio {delta[worst] / sens[worst]:.3g})")))
        finding = _vector_sensitivity(rel_d, rel_p, di, pi)
        if finding is not None:
            findings.append(finding)
        changed = delta > CHANGE_TOL
        if records is not None:  # several records per change (side observations): checked per stream
            finding = _footprint_records(rel_d, di[changed], records, describe)
            if finding is not None:
                findings.append(finding)
        bad_reps = []
        for r in (np.unique(rel_d["rep"][di[changed]]) if records is None else ()):
            sel = di[changed][rel_d["rep"][di[changed]] == r]
            streams = np.unique(rel_d["st"][sel])
            # the changed record is arm[r]'s: every release that read it must be reported on that stream
            if streams.size > 1 or streams[0] != arm[r] or rel_d["lo"][sel].max() >= rel_d["hi"][sel].min():
                bad_reps.append(int(r))
        if bad_reps:
            r = bad_reps[0]
            sel = di[changed][rel_d["rep"][di[changed]] == r]
            shown = ", ".join(f"{rel_d['mechanism'][i]} s{rel_d['st'][i]} [{rel_d['lo'][i]}, {rel_d['hi'][i]})"
                              for i in sel[:6])
            findings.append(Finding("footprint", (
                f"{len(bad_reps)} replicates: the releases that changed with one record are not all reported on that "
                f"record's stream or share no record in their declared footprints (replicate {r}, arm {arm[r]} "
                f"pull #{pull[r]}: {shown}{' ...' if sel.size > 6 else ''})")))
        # 4c. footprint_position: the changed record's position in its stream, from what the runs inserted
        finding = None if records is not None or not positions else _footprint_position(rel_d, di[changed], tr_d, tr_p, act_d if streams_d is None else streams_d,
                                      arm, pull, diverged, n_arms, notes)
        if finding is not None:
            findings.append(finding)
        # 7. noise_coupling: same seed, same releases, same decisions => the same noise on D and D'
        if not diverged.any() and not tr_p.replay_broken and getattr(policy, "records_releases", True):
            finding = _noise_coupling(rel_d, rel_p, di, pi)
            if finding is not None:
                findings.append(finding)

    # 4b. one statistic released twice with fresh noise (releases that name the statistic by a node id)
    if n_rel:
        has = rel_d["node"] >= 0
        if has.any():
            ids2: dict = {}
            key = _keyed({k: v[has] for k, v in rel_d.items()}, ids2)
            dup = key[:, -1] > 0  # a second occurrence of (rep, stream, mechanism, footprint, node)
            if dup.any():
                i = np.flatnonzero(has)[np.flatnonzero(dup)[0]]
                findings.append(Finding("redraw", (
                    f"{int(dup.sum())} releases repeat a statistic already released (same replicate, stream, "
                    f"mechanism, footprint and node) with fresh noise: e.g. {rel_d['mechanism'][i]} replicate "
                    f"{rel_d['rep'][i]}, stream {rel_d['st'][i]}, footprint [{rel_d['lo'][i]}, {rel_d['hi'][i]})")))

    # 6. noise_report: what was drawn is what was reported (family, scale)
    if n_rel:
        finding = _noise_report(rel_d)
        if finding is not None:
            findings.append(finding)

    # 8. schedule: realized <= certified on the coupled run on D
    findings.extend(spend.findings())

    # 5. noise law
    groups = _noise_law(rel_d, alpha, test_law=law)
    bad = [g for g in groups if g.rejected]
    if bad:
        g = max(bad, key=lambda g: g.dkw / max(g.critical, 1e-300))
        tails = [g for g in bad if g.dkw <= g.critical and not g.reused]
        if g.reused:
            findings.append(Finding("noise_law", (
                f"{g.reused} residuals of {g.mechanism} ({g.family}, {_octave_label(g)}, n={g.n}) repeat an "
                f"earlier residual exactly: one noise value was used for several releases")))
        elif len(tails) == len(bad):
            g = min(tails, key=lambda g: g.tail_p)
            findings.append(Finding("noise_law", (
                f"{len(bad)} of {len(groups)} residual groups miss the declared law's tails: in {g.mechanism} "
                f"({g.family}, {_octave_label(g)}, n={g.n}) the largest |residual| / scale has probability "
                f"{g.tail_p:.3g} of being so small (family-wise alpha {alpha:g}): truncated or clamped noise")))
        else:
            findings.append(Finding("noise_law", (
                f"{len(bad)} of {len(groups)} residual groups do not follow the declared law: worst {g.mechanism} "
                f"({g.family}, {_octave_label(g)}, n={g.n}) sup|F_n - F| = {g.dkw:.4f} > {g.critical:.4f} "
                f"(family-wise alpha {alpha:g}) -- the reported scale does not match the draw: the ledger contract "
                f"is every release recorded as drawn, so this is a finding whether the draw is less private than "
                f"reported or (a report bug) privacy-correct under another geometry")))
    if n_rel and law:
        findings.extend(_noise_coincidences(rel_d, alpha))
        # 5d (session 13): distinct draws independent of one another (privbandit/audit/noise_dependence.py)
        findings.extend(Finding("noise_law", msg) for msg in noise_dependence(rel_d, alpha, _float_units(rel_d)))
    return findings, groups, n_rel


def _footprint_records(rel_d: dict, changed: np.ndarray, records: list[dict], describe=None) -> Finding | None:
    """Checks 4 and 9 when one change enters several streams (a round's record on a feedback graph):
    every release whose statistic changed must be reported on a stream the change entered, with a
    declared footprint [lo, hi) holding the changed record's position in that stream (``records[r]``:
    {stream: position}, counted from what the run on D observed). A release reported on another stream
    (e.g. the played arm's, for a side observation's batch) or whose footprint misses the record
    composes the wrong records in the ledger. A position may be a set of candidates (a record numbered
    either by the stream's observations or by the arm's pulls): the footprint must hold one of them."""
    bad = []
    for i in changed:
        r, st = int(rel_d["rep"][i]), int(rel_d["st"][i])
        cands = records[r].get(st, ())
        cands = (cands,) if isinstance(cands, (int, np.integer)) else cands
        if not any(rel_d["lo"][i] <= pos < rel_d["hi"][i] for pos in cands):
            bad.append(i)
    if not bad:
        return None
    i = bad[0]
    r = int(rel_d["rep"][i])
    where = describe(r) if describe is not None else f"replicate {r}"
    held = ", ".join(f"stream {s} #{p}" for s, p in sorted(records[r].items())) or "no stream"  # p: candidates
    return Finding("footprint", (
        f"{len(bad)} releases changed with a record they do not declare: e.g. {rel_d['mechanism'][i]} replicate {r} "
        f"reported on stream {rel_d['st'][i]} with footprint [{rel_d['lo'][i]}, {rel_d['hi'][i]}), but the change "
        f"({where}) entered {held}"))


def _vector_sensitivity(rel_d: dict, rel_p: dict, di: np.ndarray, pi: np.ndarray) -> Finding | None:
    """Check 3 for vector releases (a vector tree's node, one release of ``width`` entries): the
    declared sensitivity bounds the whole vector's change -- its L1 norm for Laplace noise, its L2 norm
    for Gaussian noise (VectorTreeMechanism's contract) -- not each entry's."""
    if "width" not in rel_d or di.size == 0:
        return None
    vec = rel_d["width"][di] > 1
    if not vec.any():
        return None
    di, pi = di[vec], pi[vec]
    diff = rel_d["stat"][di] - rel_p["stat"][pi]
    # one release = one report row on D, whose entries are consecutive elements of ``released()``:
    # keyed by the index of its first entry
    row = di - rel_d["entry"][di].astype(np.int64)
    _, inv = np.unique(row, return_inverse=True)
    inv = inv.reshape(-1)
    gauss = rel_d["kind"][di] != "laplace"
    l1 = np.bincount(inv, weights=np.abs(diff))
    l2 = np.sqrt(np.bincount(inv, weights=diff * diff))
    first = np.full(inv.max() + 1, -1)
    first[inv[::-1]] = np.arange(inv.size)[::-1]
    norm = np.where(gauss[first], l2, l1)
    sens = np.minimum(rel_d["sens"][di][first], rel_p["sens"][pi][first])
    over = norm > sens * (1 + SENS_TOL) + 1e-12
    if not over.any():
        return None
    worst = int(np.argmax(np.where(over, norm / sens, 0)))
    i = di[first[worst]]
    return Finding("sensitivity", (
        f"{int(over.sum())} vector releases moved by more than their declared sensitivity between neighbouring "
        f"inputs ({'L2' if gauss[first[worst]] else 'L1'} norm of the change): worst {rel_d['mechanism'][i]} (replicate "
        f"{rel_d['rep'][i]}, stream {rel_d['st'][i]}, footprint [{rel_d['lo'][i]}, {rel_d['hi'][i]})) moved "
        f"{norm[worst]:.6g} > declared {sens[worst]:.6g} (ratio {norm[worst] / sens[worst]:.3g})"))


def _insert_positions(tr: ReleaseTracer, replicates: int, streams: int) -> dict | None:
    """The records the run inserted into its stream mechanisms, one row per record: mechanism index,
    replicate, stream, position (records inserted into that (mechanism, replicate, stream) before it:
    the ledger's 0-based numbering), value and the number of reports made before its insert call."""
    if not tr.inserts:
        return None
    mech = np.concatenate([np.full(rr.size, m, np.int64) for m, rr, _, _, _ in tr.inserts])
    rr = np.concatenate([x[1] for x in tr.inserts])
    kk = np.concatenate([x[2] for x in tr.inserts])
    v = np.concatenate([x[3] for x in tr.inserts])
    before = np.concatenate([np.full(x[1].size, x[4], np.int64) for x in tr.inserts])
    key = (mech * replicates + rr) * streams + kk
    order = np.argsort(key, kind="stable")  # stable: call order within each stream
    sk = key[order]
    new = np.ones(sk.size, dtype=bool)
    new[1:] = sk[1:] != sk[:-1]
    start = np.maximum.accumulate(np.where(new, np.arange(sk.size), 0))
    pos = np.empty(sk.size, dtype=np.int64)
    pos[order] = np.arange(sk.size) - start
    return dict(mech=mech, rep=rr, st=kk, pos=pos, v=v, before=before, key=key)


def changed_record_positions(tr_d: ReleaseTracer, tr_p: ReleaseTracer, act_d: np.ndarray, arm: np.ndarray,
                             pull: np.ndarray, diverged: np.ndarray,
                             n_arms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Per replicate: (position of the changed record in stream ``arm[r]``'s numbering, or -1 where
    unknown; a second candidate (equal to the first unless the mechanisms were handed fewer records
    than the arm's earlier pulls: then the pull index); reports of the run on D made before that
    record was revealed; how the positions were found).

    From what the runs inserted, not from a per-policy formula: where the run's stream mechanisms
    inserted into that stream, the position is the one at which the values inserted on D and D' first
    differ (the only record that differs; a policy's fake zero records, e.g. DP-UCB's, are counted
    like any other), provided every mechanism that inserted it agrees; a replicate whose changed
    record no mechanism inserted (never revealed by the horizon) gets -1. A stream no mechanism
    inserted into (a policy keeping its own sums: Gaussian TS's posterior, EXP3's per-record releases)
    numbers its records by the arm's pulls (bandit feedback, the tape model: one record per pull), and
    the changed record is the ``pull[r]``-th pull's, revealed in the round of that pull."""
    R = act_d.shape[0]
    rows = np.arange(R)
    # the round of the changed pull on D (the runner's own loop: bandit feedback)
    hits = np.cumsum(act_d == arm[:, None], axis=1)
    reached = hits[:, -1] > pull
    t_star = np.where(reached, np.argmax(hits > pull[:, None], axis=1) + 1, 0)
    marks = getattr(tr_d, "marks", None)
    pos = np.full(R, -1, np.int64)
    before = np.full(R, -1, np.int64)
    ins_d, ins_p = _insert_positions(tr_d, R, n_arms), _insert_positions(tr_p, R, n_arms)
    inserted = np.zeros(R, dtype=bool)
    how = "pulls"
    if ins_d is not None and ins_p is not None:
        how = "inserts"
        on_arm = ins_d["st"] == arm[ins_d["rep"]]
        inserted[np.unique(ins_d["rep"][on_arm])] = True
        # match the records of the two runs by (mechanism, replicate, stream, position)
        top = int(max(ins_d["pos"].max(), ins_p["pos"].max())) + 1
        kd = ins_d["key"] * top + ins_d["pos"]
        kp = ins_p["key"] * top + ins_p["pos"]
        order = np.argsort(kp)
        at = np.clip(np.searchsorted(kp, kd, sorter=order), 0, max(kp.size - 1, 0))
        mate = order[at] if kp.size else np.zeros(0, np.int64)
        same = (kp[mate] == kd) if kp.size else np.zeros(kd.size, bool)
        differs = same & on_arm & (ins_d["v"] != ins_p["v"][mate])
        differs &= ~diverged[ins_d["rep"]]
        idx = np.flatnonzero(differs)
        if idx.size:
            # the first differing record per (replicate, mechanism); all mechanisms must agree
            o = idx[np.lexsort((ins_d["pos"][idx], ins_d["mech"][idx], ins_d["rep"][idx]))]
            first = np.ones(o.size, dtype=bool)
            first[1:] = (ins_d["rep"][o][1:] != ins_d["rep"][o][:-1]) | (ins_d["mech"][o][1:] != ins_d["mech"][o][:-1])
            o = o[first]
            r_, p_, b_ = ins_d["rep"][o], ins_d["pos"][o], ins_d["before"][o]
            lo_p = np.full(R, np.iinfo(np.int64).max)
            hi_p = np.full(R, -1, np.int64)
            np.minimum.at(lo_p, r_, p_)
            np.maximum.at(hi_p, r_, p_)
            agree = (hi_p >= 0) & (lo_p == hi_p)
            pos[agree] = hi_p[agree]
            first_b = np.full(R, np.iinfo(np.int64).max)
            np.minimum.at(first_b, r_, b_)
            before[agree] = first_b[agree]
    fallback = ~inserted & reached & ~diverged
    pos[fallback] = pull[fallback]
    if marks is not None:
        before[fallback] = marks[t_star[fallback]]
    if how == "inserts" and fallback.any():
        how = "inserts and pulls"
    # A mechanism handed fewer records than the arm's earlier pulls did not see some of them: the
    # policy kept those itself (Private-TS's gap-estimation batches), and the ledger may number the
    # mechanism's records after them (an offset: the pull index) or not (the insert index). Both
    # are candidates; one handed more (fake zeros, side observations) numbers the stream itself.
    alt = pos.copy()
    fewer = (pos >= 0) & inserted & (pos < pull)
    alt[fewer] = pull[fewer]
    return pos, alt, before, how


def _footprint_position(rel_d: dict, changed_rows: np.ndarray, tr_d: ReleaseTracer, tr_p: ReleaseTracer,
                        act_d: np.ndarray, arm: np.ndarray, pull: np.ndarray, diverged: np.ndarray, n_arms: int,
                        notes: list[str]) -> Finding | None:
    """Check 4c: the changed record's position p in its stream (:func:`changed_record_positions`) lies
    in the declared footprint [lo, hi) of every release on that stream whose statistic changed (a
    footprint shifted by one record, or one that drops the batch's first or the interval's last
    record, leaves the record it read out); and no release made before the record was revealed
    claims it (a footprint reaching past the records the stream held). Releases whose statistic did
    not change are not required to leave p out: a statistic can miss one record's change by chance."""
    R = act_d.shape[0]
    pos, alt, before, how = changed_record_positions(tr_d, tr_p, act_d, arm, pull, diverged, n_arms)
    known = pos >= 0
    if not known.any():
        return None
    parts = []
    sel = changed_rows[known[rel_d["rep"][changed_rows]]]
    r = rel_d["rep"][sel]
    on = sel[rel_d["st"][sel] == arm[r]]  # other streams: the stream check's business
    p, p2 = pos[rel_d["rep"][on]], alt[rel_d["rep"][on]]
    lo_, hi_ = rel_d["lo"][on], rel_d["hi"][on]
    miss = on[~(((lo_ <= p) & (p < hi_)) | ((lo_ <= p2) & (p2 < hi_)))]  # neither candidate declared
    if miss.size:
        i = miss[0]
        reps = np.unique(rel_d["rep"][miss])
        parts.append(
            f"{reps.size} replicates: {miss.size} releases whose statistic changed with one record declare footprints "
            f"that leave that record out: e.g. replicate {rel_d['rep'][i]} (arm {arm[rel_d['rep'][i]]} pull "
            f"#{pull[rel_d['rep'][i]]}, record {pos[rel_d['rep'][i]]} of its stream) {rel_d['mechanism'][i]} declared "
            f"[{rel_d['lo'][i]}, {rel_d['hi'][i]})")
    # the converse that is safe: a release made before the record was revealed cannot depend on it
    if tr_d.reports:
        rep = np.concatenate([rp.rep for rp in tr_d.reports])
        st = np.concatenate([rp.st for rp in tr_d.reports])
        lo = np.concatenate([rp.lo for rp in tr_d.reports])
        hi = np.concatenate([rp.hi for rp in tr_d.reports])
        seq = np.concatenate([np.full(rp.rep.size, i, np.int64) for i, rp in enumerate(tr_d.reports)])
        q, q2 = pos[rep], alt[rep]
        # both candidates claimed: whichever the ledger's numbering is, the release claims the record
        early = known[rep] & (seq < before[rep]) & (st == arm[rep]) & (lo <= q) & (q < hi) & (lo <= q2) & (q2 < hi)
        if early.any():
            j = int(np.flatnonzero(early)[0])
            rr = int(rep[j])
            parts.append(
                f"{int(early.sum())} releases made before a record was revealed declare footprints that contain it: "
                f"e.g. replicate {rr} (arm {arm[rr]} pull #{pull[rr]}, record {pos[rr]} of its stream) "
                f"{tr_d.reports[seq[j]].mechanism} declared [{lo[j]}, {hi[j]})")
    notes.append(f"footprint_position: the changed record's position in its stream known on {int(known.sum())} of "
                 f"{R} replicates (from the {how})")
    return Finding("footprint_position", "; ".join(parts)) if parts else None


def _noise_report(rel: dict) -> Finding | None:
    """Check 6: per release, the family and scale handed to the sampler against the ledger report."""
    kind, fam = rel["kind"], rel["drawn_family"]
    # per-entry weights the ledger is not told: compared only where the tracer knows the node's statistic in
    # the units of the draw (a traced vector-tree insert; its draw is the unweighted Lap(scale))
    vector_laplace = (rel["width"] > 1) & (kind == "laplace") & ~rel["vector"].astype(bool)
    reported_gauss = (kind == "gaussian") | (kind == "zcdp")
    wrong_family = ~vector_laplace & (((fam == "gaussian") & (kind == "laplace")) | ((fam == "laplace") & reported_gauss))
    drawn = rel["drawn_scale"].astype(float)
    exact = rel["exact"].astype(bool)
    with np.errstate(invalid="ignore"):
        effective = np.where(exact, np.ceil(drawn / GRID) * GRID, drawn)  # what the grid sampler really uses
        smaller = ~vector_laplace & np.isfinite(drawn) & (rel["param"] > 0) & \
            (effective < rel["param"] * (1 - SCALE_TOL))
    parts = []
    if wrong_family.any():
        i = int(np.flatnonzero(wrong_family)[0])
        parts.append(f"{int(wrong_family.sum())} releases drew {fam[i]} noise but were reported as {kind[i]} "
                     f"(e.g. {rel['mechanism'][i]}, replicate {rel['rep'][i]}, stream {rel['st'][i]})")
    if smaller.any():
        ratio = np.where(smaller, effective / rel["param"], np.inf)
        i = int(np.argmin(ratio))
        parts.append(f"{int(smaller.sum())} releases drew their noise at a smaller scale than they reported: "
                     f"worst {rel['mechanism'][i]} (replicate {rel['rep'][i]}, stream {rel['st'][i]}, footprint "
                     f"[{rel['lo'][i]}, {rel['hi'][i]})) drew scale {effective[i]:.6g}, reported {rel['param'][i]:.6g} "
                     f"(ratio {ratio[i]:.3g})")
    return Finding("noise_report", "; ".join(parts)) if parts else None


def _noise_coupling(rel_d: dict, rel_p: dict, di: np.ndarray, pi: np.ndarray) -> Finding | None:
    """Check 7: matched releases of the coupled runs drew the same noise (each run's own draw)."""
    if di.size == 0:
        return None
    res_d = rel_d["out"][di] - rel_d["stat"][di]
    res_p = rel_p["out"][pi] - rel_p["stat"][pi]
    ok = np.isfinite(res_d) & np.isfinite(res_p)
    scale = np.where(rel_d["param"][di] > 0, rel_d["param"][di], 0.0)
    tol = COUPLING_TOL * (np.abs(rel_d["stat"][di]) + np.abs(rel_d["out"][di]) + np.abs(rel_p["stat"][pi])
                          + np.abs(rel_p["out"][pi]) + scale)
    tol = tol + np.where(rel_d["exact"][di].astype(bool), 2 * GRID, 0.0)  # grid rounding of the statistic
    bad = ok & (np.abs(res_d - res_p) > tol)
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    j = di[i]
    return Finding("noise_coupling", (
        f"{int(bad.sum())} of {int(ok.sum())} matched releases drew different noise on D and D' although both runs "
        f"used the same seed and made identical releases and decisions: the noise depends on the data (e.g. "
        f"{rel_d['mechanism'][j]}, replicate {rel_d['rep'][j]}, stream {rel_d['st'][j]}, footprint "
        f"[{rel_d['lo'][j]}, {rel_d['hi'][j]}): noise {res_d[i]:.6g} on D, {res_p[i]:.6g} on D')"))


def _with_own_delta(policy) -> tuple:
    """:data:`privbandit.audit.certificate.CERT_DELTAS` plus the policy's own ``delta`` when it has one in
    (0, 1) (a policy calibrated at its own delta may be wrong there alone)."""
    from privbandit.audit.certificate import CERT_DELTAS

    own = getattr(policy, "delta", None)
    if isinstance(own, (int, float)) and not isinstance(own, bool) and 0.0 < float(own) < 1.0:
        return tuple(dict.fromkeys((*CERT_DELTAS, float(own))))
    return CERT_DELTAS


class _SpendCheck:
    """Check 8: realized <= certified on the coupled run on D, at about a dozen rounds."""

    def __init__(self, policy: Policy, horizon: int, n_arms: int, structure: dict | None = None,
                 relation: str = "entry") -> None:
        self.schedule = schedule_for(policy, horizon, n_arms, structure, relation)
        self.policy = policy
        self.rounds = set(int(t) for t in np.unique(np.geomspace(1, horizon, 12).round().astype(np.int64)))
        self.rounds.add(int(horizon))
        self.rows: list[tuple[int, float, float]] = []
        self._findings: list[Finding] = []

    def __call__(self, t: int, ledger: Ledger) -> None:
        if t not in self.rounds or self._findings:
            return
        mu = ledger.realized_mu()
        cert_mu = float(self.schedule.mu(t))
        self.rows.append((t, float(np.nanmax(mu, initial=0.0)), cert_mu))
        over = _exceeds(mu, cert_mu)
        kind, realized, cert = "mu", mu, cert_mu
        if not over.any():
            cert_pure = _pure_certified(self.schedule, t)
            if math.isfinite(cert_pure):
                realized, cert, kind = ledger.realized_pure_epsilon(), cert_pure, "pure epsilon"
                over = _exceeds(realized, cert)
        if over.any():
            r = int(np.flatnonzero(over)[0])
            self._findings.append(Finding("schedule", (
                f"{int(over.sum())} replicates spent more than the certified schedule by round {t}: e.g. replicate "
                f"{r} realized {kind} {realized[r]:.6g} > certified {cert:.6g} (worst record, tight ledger of the run "
                f"on D)")))

    def findings(self) -> list[Finding]:
        return list(self._findings) + self.certificate_findings()

    def certificate_findings(self, relation: str = "") -> list[Finding]:
        """Check 11 (``certificate``, round 11): the schedule's eps at delta against a lower bound of its own
        events' curve at a quarter and all of the horizon (:mod:`privbandit.audit.certificate`)."""
        from privbandit.audit.certificate import (certificate_message, certificate_shortfall,
                                                  certificate_unreproduced, unreproduced_message)

        if getattr(self, "_certificate", None) is None:
            horizon = max(self.rounds)
            rounds = sorted({max(1, horizon // 4), horizon})
            short = certificate_shortfall(self.schedule, rounds)
            self._certificate = [] if short is None else [Finding("certificate", certificate_message(short, relation))]
            # the certificate against its own accountant on its own events (session 14), also at the policy's
            # own delta when it has one (a certificate may be wrong only there)
            unrepro = certificate_unreproduced(self.schedule, rounds, _with_own_delta(self.policy))
            if unrepro is not None:
                self._certificate.append(Finding("certificate", unreproduced_message(unrepro, relation)))
        return list(self._certificate)
