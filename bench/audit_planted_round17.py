"""Round 17 of the planted bugs (session 15, s15/blind), written blind: from docs/audit.md's description and Limits
(the "## Limits" section, every "remaining limits" / "still missed" paragraph, the earlier rounds' tables), the
bench harness and the code of the policies, mechanisms, deployment and schedule modules the bugs live in -- never
from the auditor's check code (privbandit/audit/ beyond the runner, tapes and constants the harness calls).

Like rounds 11-16, each policy bug is a subclass of a private policy with one mistake made inside ``start`` (an
instance-level patch, so the clean twin -- the parent's ``start`` on the same configuration -- is the unmodified
policy). Aimed at the families earlier rounds hit least and at what docs/audit.md admits it does not reach:

* the **non-noise adversarial policies** (EXP3, EXP3-tau: the white-box ``decisions`` check does not apply to them
  and the black-box audits reach 1-2 % of their claims): an exploration floor dropped late in the run, a batch
  gain not averaged, a batch re-drawn after a raw zero;
* **Private EXP3** releasing a running sum; **DP-TS**'s split mechanism (one bug in sixteen rounds): rewards
  saturated after an arm's eighth reward of exactly 1, and the flush re-using the block's last noise draw (noise
  right in law, one draw shared by *two mechanisms* of a stream -- check 5d pairs releases of one mechanism);
* **DP-UCB**'s hybrid noise from a memo table keyed by a hash of (round, call, entry); DP-EXP3-Lap's noise tied
  between arm 2j's (k-3)-th and arm 2j+1's k-th release (check 5d's stated limit: pairs at an offset across
  streams);
* **graph feedback**: a side observation of exactly 0 not counted (a data-dependent posterior count), and noise
  halved in rounds whose graph has a hub of degree >= 4;
* the **contextual** policies: a context norm computed as |sum z| (the clip keyed to the coordinates' signs),
  and the vector tree's **level-5** nodes (32 records: the default run reaches them) drawn at 0.6 of the handed
  scale;
* **Private-TS** (two bugs in sixteen rounds): a Laplace sampler truncated at 13.1 scales (uniforms clipped to
  [1e-6, 1 - 1e-6]) -- docs/audit.md: "a truncation far out ... is indistinguishable from the law"; and
  **DP-UCB-Bound**'s logarithmic release of the arm with the current highest count drawn at half scale;
* the **deployment** path under a crash between a decision and its reward (a round re-decided after a reopen,
  the odometer counting only closed rounds), driven by ``drive_deployment17``.

Each class docstring states the true epsilon of the buggy code against its claim. ``CONTROLS17`` are correct but
unusual variants (each must stay CONSISTENT); they are listed before the bugs, as ``bench/audit_planted.py --only
round17`` runs them. Nothing here is imported by the package.
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

from privbandit.mechanisms.sampling import NoiseSampler
from privbandit.policies import (DPTS, DPUCB, EXP3, DPEXP3Lap, DPUCBBound, EXP3Tau, JointDPLinUCB, LazyDPTS,
                                 PrivateEXP3, PrivateLinTS, PrivateLinUCB, PrivateTS)
from privbandit.policies.base import note_rounds
from privbandit.policies.graph_private import GaussianTSN, LazyDPTSN

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from audit_planted_bugs import _named, _on_statistics, _remember_choice  # noqa: E402
from audit_planted_round15 import _TO_BALL, _joint_gdp_init, _select_with, _validated_then_mapped  # noqa: E402
from audit_planted_round16 import _told_node_positions  # noqa: E402

LATE_FLOOR = 8
"""EXP3's exploration floor gamma / K is divided by this in the second half of the horizon (``exp3_floor_dropped_late``)."""

SATURATE_AFTER = 8
"""DP-TS's saturation: after an arm's 8th reward of exactly 1 its later rewards enter as 1."""

MEMO_SIZE = 4096
"""The DP-UCB noise memo's table: 4,096 standard Laplace draws, indexed by hash((t, call, entry)) mod 4096."""

HUB_DEGREE = 4
"""A round whose graph has a node of degree >= 4 is a "hub round" (``lazy_n_hub_round_half``)."""

LIN_LEVEL = 5
"""Vector-tree nodes of level 5 (32 records: an arm's 32nd, 96th, 160th record completes one)."""


def _telling(owner, name: str, sampler, attr: str, value) -> None:
    """``owner.<name>`` (an instance-level patch) with ``sampler.<attr>`` set to ``value(*args)`` for the call and
    back to its class default after it: how the bugs tell a sampler what is being released."""
    call, default = getattr(owner, name), getattr(type(sampler), attr)

    def told(*args):
        setattr(sampler, attr, value(*args))
        try:
            return call(*args)
        finally:
            setattr(sampler, attr, default)

    setattr(owner, name, told)


# =============================== controls (correct but unusual) ===============================
class PrivateExp3RewardReleased(PrivateEXP3):
    """Control: Private EXP3 releasing the *reward* r + Lap(1/eps) and learning the loss 1 - (r + Lap(1/eps))
    ("the gateway releases rewards, the learner converts"): r and 1 - r have the same sensitivity 1, the Laplace
    law is symmetric, so the learned loss has exactly the parent's law; each record is in one Lap(1/eps) release
    of sensitivity 1. True eps = claimed eps = 1."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def update(t, arms, rewards):
            rows, arms = run.core.rows, run.core.checked(arms)
            lo = run.pulls[rows, arms]
            noisy_reward = run.noise.release_records(np.asarray(rewards, dtype=float), run.scale, rows, arms, lo)
            run.pulls[rows, arms] = lo + 1
            run.core.learn(arms, -(1.0 - noisy_reward))

        run.update = update
        return run


class Exp3FloorRaised(EXP3):
    """Control (the twin of ``exp3_floor_dropped_late``): EXP3 sampling with the exploration mix 2 gamma
    (floor 2 gamma / K, keep 1 - 2 gamma) while certifying at gamma ("explore a little more than tuned"): every
    choice probability lies in [2 gamma / K, 1 - 2 gamma + 2 gamma / K], so each choice's likelihood ratio is at
    most (1 - 2 gamma + 2 gamma / K) / (2 gamma / K) < the certified cap's (1 - gamma + gamma / K) / (gamma / K),
    and the learning shift eta x / p <= eta K / (2 gamma) is smaller too. True eps <= claimed eps. (Session 15,
    s15/reach2: the mix is min(2 gamma, 1). As first written, 2 gamma unclipped, the control was wrong wherever
    gamma > 1/2 -- K = 33, T = 200: gamma = 0.579, keep = 1 - 2 gamma < 0, and a probability fell to 0.0049 < the
    certified floor gamma / K = 0.0176 (white-box check 13 in the 33-arm run); at K = 2 the two are identical.)"""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core = run.core
        mix = min(2.0 * core.gamma, 1.0)
        core.keep, core.floor = 1.0 - mix, mix / core.k
        return run


class LazyHashRounding(LazyDPTS):
    """Control: Lazy-DP-TS rounding each reward to {0, 1} by a hash of the reward's own bits ("deterministic
    randomised rounding: a replay rounds alike"): 1 if the reward's fraction of 2^32 hashed to [0, 1) is below r.
    A fixed map of [0, 1] into {0, 1} applied to each record alone (no other record, no randomness), so a batch
    sum still moves by at most 1 per record. True eps = claimed eps = 1. (Its twin in spirit is round 15's
    ``exp3_lap_randomised_rounding``, whose coin came from the run's generator.)"""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _validated_then_mapped(run.batches, lambda v, f, rr: _hash_rounded(v))
        return run


def _hash_rounded(v: np.ndarray) -> np.ndarray:
    """1.0 where a SplitMix64-style hash of round(v 2^32), read as a fraction of 2^64, is below v; else 0.0."""
    x = np.round(np.asarray(v, dtype=float) * 2.0 ** 32).astype(np.uint64)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    u = (x >> np.uint64(11)).astype(float) * 2.0 ** -53
    return (u < v).astype(float)


class LinTSL1Ball(PrivateLinTS):
    """Control (the twin of ``lin_ts_signed_sum_norm``): Private linear TS projecting contexts onto the L1 ball
    of radius L (scaled by L / ||z||_1 when ||z||_1 > L; "sparse-friendly clipping"): ||z||_2 <= ||z||_1 <= L, so
    every context reaching the statistics is within the declared bound. True eps = claimed eps."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def l1_ball(z, bound):
            l1 = np.abs(z).sum(axis=-1)
            over = l1 > bound
            scale = np.where(over, bound / np.where(over, l1, 1.0), 1.0)
            # the L2 projection after it is the identity here (||z||_2 <= ||z||_1 <= L); kept for the last ulp
            return _TO_BALL(z * scale[..., None], bound, "clip")

        _select_with(run, l1_ball)
        return run


class _SymmetrisedGaussian(NoiseSampler):
    """Gaussian vectors (``gaussian(sigma)`` of shape (m, n), n the packed upper triangle of a (d+1) x (d+1)
    matrix, told by ``_bug_offdiag``) whose off-diagonal entries are drawn at sigma / sqrt 2: the upper triangle
    of (G + G^T) / 2 for a full matrix G of N(0, sigma^2) entries."""

    _bug_offdiag = None

    def gaussian(self, sigma):
        off = self._bug_offdiag
        s = np.asarray(sigma, dtype=float)
        if self.exact or off is None or s.ndim != 2 or s.shape[1] != off.size:
            return NoiseSampler.gaussian(self, sigma)
        return self.rng.normal(0.0, s * np.where(off, math.sqrt(0.5), 1.0)) * self._noise_scale_factor


class JointGramSymmetrisedNoise(JointDPLinUCB):
    """Report bug (privacy-correct; expected VIOLATION -- reclassified from the controls by the lead, session 15:
    the ledger contract is "every release recorded as drawn", and this one is not). Joint-DP LinUCB (shared model, L = 4, calibration "gdp") whose Gram-tree noise is the upper
    triangle of a symmetrised Gaussian matrix (G + G^T) / 2 ("the textbook symmetric noise": diagonal N(0,
    sigma^2), off-diagonal N(0, sigma^2 / 2)); the ledger hears sigma for every entry. Privacy: a node's change
    Delta (a symmetric matrix) released entry-wise at sigma_ij gives mu^2 = sum_i Delta_ii^2 / sigma^2 + sum_{i<j}
    Delta_ij^2 / (sigma^2 / 2) = ||Delta||_F^2 / sigma^2 <= (sqrt 2 (L^2 + 1))^2 / sigma^2 -- exactly the declared
    Frobenius sensitivity over sigma (Shariff & Sheffet 2018's symmetric-noise analysis). True mu = claimed mu
    (the library's independent sigma per packed entry spends ~1.33x less than it declares, docs/audit.md session
    14); the *report* overstates the off-diagonal noise by sqrt 2. Correct privacy, unusual (and under-reported
    in the noise law's terms) draw: the privacy claim holds, the report does not -- the audit's noise law refutes
    the reported scale (a report finding, not a privacy finding)."""

    __init__ = _joint_gdp_init

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            sampler = stats.tree.sampler
            size = stats.tree.size
            n = next(k for k in range(1, 4 * size) if k * (k + 1) // 2 >= size)
            i, j = np.triu_indices(n)
            sampler.__class__ = _SymmetrisedGaussian
            sampler._bug_offdiag = (i != j)[:size]

        _on_statistics(run, patch)
        return run


CONTROLS17 = {
    "private_exp3_reward_released": PrivateExp3RewardReleased,
    "exp3_floor_raised": Exp3FloorRaised,
    "lazy_hash_rounding": LazyHashRounding,
    "lin_ts_l1_ball": LinTSL1Ball,
}
"""Round 17's policy controls (correct variants: each must come out CONSISTENT); listed before the bugs."""

REPORT_BUGS17 = {
    "joint_gram_symmetrised_noise": JointGramSymmetrisedNoise,
}
"""Round 17's **report bugs** (session 15, s15/reach2, the lead's decision): privacy-correct draws whose ledger
report misstates them (the contract: every release recorded as drawn). Expected VIOLATION (a report finding: the
reported scale does not match the draw); run with the bugs (they are in ``ROUND17_BUGS``), listed after the
controls. ``joint_gram_symmetrised_noise`` was written as a control (round 17's table: its refutation was counted
as a false alarm)."""


# =============================== bugs =========================================================
# --- adversarial: EXP3 and EXP3-tau (no noise draws), Private EXP3 --------------------------------
class Exp3FloorDroppedLate(EXP3):
    """EXP3 whose exploration mix falls to gamma / 8 in the second half of the horizon (rounds t > T/2: "the
    weights have converged, explore less"), while its certificate keeps gamma. The certificate's per-choice cap
    c = ln(1 + K (1 - gamma) / gamma) is the likelihood-ratio bound the floor gamma / K gives; with the floor
    gamma / (8 K) a choice's ratio is bounded only by c' = ln(1 + K (1 - gamma/8) / (gamma/8)). K = 2, T = 200
    (gamma = 0.0635): c = 3.42, c' = 5.53; the worst record (round 1) is in the 99 choices of rounds 2..100 (the
    growing steps 1, 2.72, then c) and the 100 of rounds 101..200 (c'). True (the library's own theorem with the
    floor the code uses): 887.7 at delta 1e-5 (RDP; pure 887.7) vs claimed 676.9 (ratio 1.31). (The claim is no
    longer proven; no lower bound is computed here.)"""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        core, select = run.core, run.select
        gamma = core.gamma

        def select_late(t):
            g = gamma / LATE_FLOOR if t > horizon / 2 else gamma
            core.keep, core.floor = 1.0 - g, g / core.k
            return select(t)

        run.select = select_late
        return run


class Exp3TauGainUnaveraged(EXP3Tau):
    """EXP3-tau whose batch gain is the batch's reward *sum* (up to tau) instead of sum / tau ("tau cancels in the
    normalised weights"): a changed reward moves the batch gain by 1, not 1/tau, so the first choice after its
    batch is exp(1)-DP where the certificate's first step is s_1 = 1/tau (K = 2, T = 200: tau = 6, 34 batches,
    gamma = 0.154, cap c = 2.48). True (the library's theorem with s_1 = 1): 80.47 at delta 1e-5 (RDP; pure the same)
    vs claimed 75.21 (33 choices; the cap is reached at the second choice instead of the fifth)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def end_batch_summed():
            run.core.learn(run.arms, run.total.copy())
            run.total[:] = 0.0

        run._end_batch = end_batch_summed
        return run


class Exp3TauRedrawOnZero(EXP3Tau):
    """EXP3-tau that re-draws a batch's arm when the batch's first round paid exactly 0 ("a bad start: try
    another arm for the rest of the batch"): the re-draw is a fresh EXP3 choice from the same weights, made at
    the batch's second round only where the first reward was 0. Whether the arm switches inside a batch is then a
    function of one raw reward: with r = 1 it never switches, with r = 0 it does with probability ~1/2 (K = 2).
    True: no finite eps (an event of probability 0 on one neighbour); claimed the exponential-weights certificate
    (K = 2, T = 200: 75.21 at delta 1e-5)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        select, absorb = run.select, run._absorb
        state = {"zero": None, "round": 0}

        def select_redrawn(t):
            arms = select(t)
            zero = state["zero"]
            if (t - 1) % run.tau == 1 and zero is not None and zero.any():
                p = run.core.p_played
                redrawn = run.core.choose()
                run.arms = np.where(zero, redrawn, run.arms)
                run.core.p_played = np.where(zero, run.core.p_played, p)  # the arm each replicate plays
                arms = run.arms
            state["zero"], state["round"] = None, t
            return arms

        def absorb_seen(rewards):
            if (state["round"] - 1) % run.tau == 0 and rewards.shape[0] == 1:  # the batch's first round
                state["zero"] = np.asarray(rewards[0]) == 0.0
            absorb(rewards)

        run.select = select_redrawn
        run._absorb = absorb_seen
        run.plan = lambda t, limit: select_redrawn(t)[None].copy()  # one round at a time (the re-draw waits)
        return run


class PrivateExp3RunningLoss(PrivateEXP3):
    """Private EXP3 releasing each arm's *running* loss sum + Lap(1/eps) ("one counter per arm: the dashboard
    shows totals") and learning from the difference of consecutive noisy totals; each release is still reported
    as the newest record's sensitivity-1 release. A record is in every later release of its arm: after n pulls
    of its arm it is in n - j + 1 Lap(1/eps) releases of sensitivity 1. True: eps = n(T) x 1 for an arm's first
    record (K = 2, T = 200: up to 199 pure; 1 pull per round); claimed 1."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        total = np.zeros((replicates, n_arms))
        last = np.zeros((replicates, n_arms))

        def update(t, arms, rewards):
            rows, arms = run.core.rows, run.core.checked(arms)
            lo = run.pulls[rows, arms]
            total[rows, arms] += 1.0 - np.asarray(rewards, dtype=float)
            noisy_total = run.noise.release_records(total[rows, arms].copy(), run.scale, rows, arms, lo)
            run.pulls[rows, arms] = lo + 1
            noisy_loss = noisy_total - last[rows, arms]
            last[rows, arms] = noisy_total
            run.core.learn(arms, -noisy_loss)

        run.update = update
        return run


# --- DP-TS (split mechanism) ---------------------------------------------------------------------
class DPTSSaturatedAfterEightOnes(DPTS):
    """DP-TS whose arm, once it has paid exactly 1 eight times, enters every later reward as 1 ("a proven arm:
    saturate its evidence"): the value a record enters with depends on the arm's *earlier* records. A record that
    is an arm's 8th 1 (against 0 on the neighbour) turns every later reward r_j of its arm into 1, moving the
    later split releases by sum_j (1 - r_j): its sensitivity grows with the arm's later records. True: eps grows
    with the number of the arm's later non-1 rewards (no bound independent of the data; >= 2 x claimed once one
    later reward is 0); claimed 1 (pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _validated_then_mapped(run.split, _saturating(replicates * n_arms))
        return run


def _saturating(streams: int):
    """The map ``(v, f, rr) -> value entered`` of ``dp_ts_saturated_after_eight_ones`` over ``streams`` flat
    streams: v, or 1 once the stream has seen SATURATE_AFTER rewards of exactly 1 before this one."""
    ones = np.zeros(streams, dtype=np.int64)

    def saturated(v, f, rr):
        before = ones[f].copy()  # (f may be a full slice: ones[f] is then a view)
        ones[f] = before + (v == 1.0)
        return np.where(before >= SATURATE_AFTER, 1.0, v)

    return saturated


class _FlushReusesBinary(NoiseSampler):
    """Laplace releases told by ``_bug_ctx`` = (kind, rows, streams): a binary-part release keeps its standard
    Laplace draws per (replicate, stream); a flush (the logarithmic part's release) re-uses the stream's last
    binary draw, scaled to the flush's scale, where there is one. Every draw is Laplace of its scale in law."""

    _bug_ctx = None
    _bug_last = None

    def _sum_release(self, statistic, scale, on_grid=True):
        ctx = self._bug_ctx
        if self.exact or ctx is None:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        kind, rows, streams = ctx
        statistic = np.asarray(statistic, dtype=float)
        if rows.size != statistic.size:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        z = self.rng.laplace(0.0, 1.0, statistic.shape)
        last, have = self._bug_last
        if kind == "binary":
            last[rows, streams] = z.reshape(-1)
            have[rows, streams] = True
        else:
            reuse = have[rows, streams].reshape(statistic.shape)
            z = np.where(reuse, last[rows, streams].reshape(statistic.shape), z)
        return statistic + z * np.asarray(scale, dtype=float) * self._noise_scale_factor


class DPTSFlushReusesBlockNoise(DPTS):
    """DP-TS whose split mechanism draws the logarithmic part's flush noise (Lap(2/eps) at counts 1, 3, 7, 15,
    ...) from the standard Laplace value of the stream's last binary-part node ("the block is restarting anyway:
    recycle its last draw"), scaled to the flush's scale. Each release is Lap(its scale) in law, but a flush and
    the binary node released one record earlier on the same stream share one draw: given both, 2/eps x (binary
    release - its statistic) / (binary scale) ... pins the flush's statistic exactly. True: no finite eps for the
    records of a stream's flushed blocks (counts >= 3); claimed 1 (pure). Two mechanisms' releases of one stream
    share a draw (check 5d's pairings take one mechanism's releases, docs/audit.md)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        split = run.split
        sampler = split.sampler
        sampler.__class__ = _FlushReusesBinary
        sampler._bug_last = (np.zeros((replicates, n_arms)), np.zeros((replicates, n_arms), dtype=bool))
        for kind, name in (("flush", "_flush"), ("binary", "_binary_release")):
            _telling(split, name, sampler, "_bug_ctx",
                     lambda f, rr, kk, *rest, kind=kind: (kind, np.asarray(rr), np.asarray(kk)))
        return run


# --- DP-UCB: a noise memo keyed by a hash -----------------------------------------------------------
class _HashMemoLaplace(NoiseSampler):
    """Laplace noise read from a table of MEMO_SIZE standard Laplace draws (drawn once from the run's generator),
    entry i of call c in round t at index hash((t, c, i)) mod MEMO_SIZE (``_bug_round`` = (t, [calls so far]) set
    by the run): right in law per draw, but two releases whose keys collide carry the same noise."""

    _bug_table = None
    _bug_round = None

    def _sum_release(self, statistic, scale, on_grid=True):
        told = self._bug_round
        if self.exact or told is None:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        t, calls = told
        statistic = np.asarray(statistic, dtype=float)
        call = calls[0]
        calls[0] = call + 1
        keys = np.fromiter((hash((t, call, i)) % MEMO_SIZE for i in range(statistic.size)), dtype=np.int64,
                           count=statistic.size)
        z = self._bug_table[keys].reshape(statistic.shape)
        return statistic + z * np.asarray(scale, dtype=float) * self._noise_scale_factor


class DPUCBNoiseMemoHash(DPUCB):
    """DP-UCB whose hybrid noise comes from a memo of 4,096 standard Laplace draws (drawn once per run from its
    generator), release i of the c-th noise call in round t reading entry hash((t, c, i)) mod 4096 ("memoised
    noise: a replay of round t re-reads the same values without re-drawing"). Each value is Laplace in law and
    the memo is secret, but over a run the keys collide (birthday: ~the run's releases^2 / 8,192 pairs), and two
    releases with one noise value reveal the difference of their statistics exactly. True: no finite eps for the
    records under a colliding pair (with R replicates, entry i = replicate: collisions within a replicate's own
    releases across rounds); claimed 1.0 pure (K = 2)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.hybrid.sampler
        sampler.__class__ = _HashMemoLaplace
        sampler._bug_table = rng.laplace(0.0, 1.0, MEMO_SIZE)
        _telling(run, "update", sampler, "_bug_round", lambda t, arms, rewards: (int(t), [0]))
        return run


# --- graph feedback ---------------------------------------------------------------------------------
class GaussianTSNSideZeroUncounted(GaussianTSN):
    """Gaussian-TS-N treating a *side* observation of exactly 0 as missing ("0 is the sensor's no-reading
    value"): it is neither added nor counted, so the posterior count k_i of an arm depends on the values of its
    side-observed records. A side record 0 against 1 changes k_i, hence the posterior mean's denominator and its
    sigma sqrt(c / (k_i + 1)), in every later release of that arm: two Gaussians of different variances, whose
    privacy loss is unbounded. True: no finite mu (and eps at delta above the claim); claimed mu = the
    Gaussian-TS-N certificate (entry relation)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _remember_choice(run)

        def learn(t, observed, values):
            pulled = np.zeros_like(observed)
            chosen = getattr(run, "_bug_arms", None)
            if chosen is not None:
                pulled[run.rows, np.asarray(chosen)] = True
            kept = observed & ~(observed & ~pulled & (values == 0.0))
            positions = run.counts.astype(np.int64)
            run.sums += np.where(kept, values, 0.0)
            run.counts += kept
            note_rounds(run.ledger, t, kept, positions)

        run.learn = learn
        return run


class LazyNHubRoundHalf(LazyDPTSN):
    """Lazy-DP-TS-N whose batch releases closing in a round whose feedback graph has a node of degree >= 4 are
    drawn at half the scale handed to the sampler ("a hub round brings many observations: less noise is
    needed"); the handed and reported scale are 1/eps. True eps = 2 x claimed for the records of batches that
    close in hub rounds (2 vs 1 per entry); reached only by graphs with a hub (the star, the hub of degree 32),
    never by the path, the edgeless graph or K <= 4."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        def hub_factor(t, observed, values):
            degree = np.asarray(run.graph, dtype=bool).sum(axis=1) - 1
            return 0.5 if degree.max(initial=0) >= HUB_DEGREE else 1.0

        _telling(run, "learn", run.batches.sampler, "_noise_scale_factor", hub_factor)
        return run


# --- contextual ----------------------------------------------------------------------------------
def _signed_sum_norm(z, bound):
    """The projection with the norm typed as sqrt(sum(z) ** 2) (= |sum z|) instead of sqrt(sum(z ** 2))."""
    norm = np.sqrt(np.sum(z, axis=-1) ** 2)
    over = norm > bound
    scale = np.where(over, bound / np.where(over, norm, 1.0), 1.0)
    return z * scale[..., None]


class LinTSSignedSumNorm(PrivateLinTS):
    """Private linear TS whose clip computes the context's norm as sqrt(sum(z) ** 2) -- the square outside the
    sum -- i.e. |sum_i z_i|: for a context with non-negative coordinates |sum z| >= ||z||_2 (an over-clip, still
    private), but coordinates of mixed signs cancel: (M, -M, 0, 0, 0) has |sum z| = 0 and is never clipped, its
    norm sqrt 2 M unbounded. Under the entry relation a reward moves b by r z: the record's sensitivity grows with
    ||z||. True: no finite eps (contexts of mixed signs and any norm pass); claimed the Mishra-Thakurta tree's
    0.412 (d = 5, eps = 1, pure)."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        _select_with(run, _signed_sum_norm)
        return run


class _LevelSixty(NoiseSampler):
    """Laplace vectors whose rows for nodes of level exactly LIN_LEVEL (told by ``_bug_rows``) come out at 0.6
    of the scale the sampler is handed."""

    _bug_rows = None

    def laplace(self, scale, size=None):
        rows = self._bug_rows
        if self.exact or size is None or len(size) != 2 or rows is None or rows.size != size[0] or not rows.any():
            return NoiseSampler.laplace(self, scale, size)
        z = self.rng.laplace(0.0, float(scale), size)
        return z * np.where(rows, 0.6, 1.0)[:, None] * self._noise_scale_factor


class LinUCBLevelFiveSixty(PrivateLinUCB):
    """Private LinUCB whose vector tree draws the noise of its level-5 nodes (32 records: completed by an arm's
    32nd, 96th, 160th ... record) at 0.6 of the scale it hands the sampler ("a mid-level node is averaged over 32
    records: shave its noise"); the ledger hears the full scale. The default contextual run (T = 200, K = 2: ~100
    records per arm) completes one to three of them per arm. True: a record in a level-5 node pays 1/0.6 of that
    node's share: T = 200 (8 levels), d = 5: 7 nodes at eps0 / 8 and one at eps0 / (8 x 0.6): 1.083 x claimed
    (0.446 vs 0.412, pure) for the records under a level-5 node."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)

        def patch(stats):
            sampler = stats.tree.sampler
            sampler.__class__ = _LevelSixty

            def tell(rows, streams, n):
                if n is None:
                    sampler._bug_rows = None
                    return
                sampler._bug_rows = (n & -n) == (1 << LIN_LEVEL)

            _told_node_positions(stats.tree, tell)

        _on_statistics(run, patch)
        return run


# --- Private-TS: a sampler truncated far out -------------------------------------------------------
U_CLIP = 1e-6
"""The clipped sampler's uniforms lie in [1e-6, 1 - 1e-6]: |noise| <= ln(1 / 2e-6) = 13.1 scales."""


class _ClippedUniformLaplace(NoiseSampler):
    """Float-mode Laplace by the inverse CDF of a uniform clipped to [U_CLIP, 1 - U_CLIP] ("avoid log(0)"): each
    draw is Laplace but for an atom of mass U_CLIP at each end, +-ln(1 / (2 U_CLIP)) scales."""

    def _draw(self, shape):
        u = np.clip(self.rng.random(shape), U_CLIP, 1.0 - U_CLIP)
        return -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))

    def laplace(self, scale, size=None):
        if self.exact:
            return NoiseSampler.laplace(self, scale, size)
        if size is not None:
            return self._draw(size) * float(scale) * self._noise_scale_factor
        scale = np.asarray(scale, dtype=float)
        return self._draw(scale.shape) * scale * self._noise_scale_factor

    def _sum_release(self, statistic, scale, on_grid=True):
        if self.exact:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        statistic = np.asarray(statistic, dtype=float)
        return statistic + self._draw(statistic.shape) * np.asarray(scale, dtype=float) * self._noise_scale_factor


class PrivateTSNoiseUniformClipped(PrivateTS):
    """Private-TS whose samplers (its trees' and its gap-estimation releases') draw Laplace noise by the inverse
    CDF of a uniform clipped to [1e-6, 1 - 1e-6] ("keep log away from 0"): the noise never exceeds 13.1 scales,
    and takes +-13.1 scales with probability 1e-6 each. An output at statistic + 13.1 b has probability 1e-6 on
    one neighbour and 0 on the other (whose atom sits at statistic - 1 + 13.1 b): each release is (eps_i,
    1e-6)-DP, not eps_i-DP. True: no finite pure eps and no finite mu; at delta a record's releases (one gap
    batch, or up to 8 tree nodes) add up to ~8e-6 of delta; claimed 0.25 pure (the schedule: each record is in
    one kind, eps / (2K) per record, K = 2; mu from it). Aimed at docs/audit.md's Limit
    "a truncation far out (beyond about ln(n) scales for n residuals in a group) is indistinguishable"."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        run.tree.sampler.__class__ = _ClippedUniformLaplace
        run.release.sampler.__class__ = _ClippedUniformLaplace
        return run


# --- DP-UCB-Bound: the leader arm's logarithmic releases ----------------------------------------------
class _LeaderHalf(NoiseSampler):
    """Laplace releases whose entries marked by ``_bug_half`` (aligned with the statistic) come out at half the
    scale handed over."""

    _bug_half = None

    def _sum_release(self, statistic, scale, on_grid=True):
        half = self._bug_half
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or half is None or half.size != statistic.size or not half.any():
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        noise = self.rng.laplace(0.0, 1.0, statistic.shape) * np.asarray(scale, dtype=float)
        return statistic + noise * np.where(half.reshape(statistic.shape), 0.5, 1.0) * self._noise_scale_factor


class DPUCBBoundLeaderLogHalf(DPUCBBound):
    """DP-UCB-Bound whose hybrid draws the logarithmic release (count 2^k) of the arm with the current highest
    count at half the scale it hands the sampler ("the leader's estimate is already sharp"); the ledger and the
    sampler's argument say 2/eps. The leader is a function of the released decisions (public), the scale is not
    what is reported: a record in the leader's logarithmic release pays eps (not eps/2) there. True: 1.5 x claimed
    for those records (1.5 vs 1.0 pure, K = 2); others exact."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        hybrid = run.hybrid
        sampler = hybrid.sampler
        sampler.__class__ = _LeaderHalf
        _telling(hybrid, "_log_release", sampler, "_bug_half",
                 lambda f, rr, kk, *rest: np.asarray(kk) == np.asarray(hybrid.count)[np.asarray(rr)].argmax(axis=1))
        return run


# --- DP-EXP3-Lap: noise tied across two arms at a lag ---------------------------------------------------
CROSS_LAG = 3
"""Arm 2j+1's k-th release takes arm 2j's (k - 3)-th uniform shifted by 1/2 (``exp3_lap_cross_arm_lag3``)."""

RING = 64
"""The uniforms kept per (replicate, arm): positions p mod 64, with the position stored beside them."""


class _CrossArmLagged(NoiseSampler):
    """Float-mode Laplace releases by the inverse CDF of uniforms, told ``_bug_where`` = (rows, arms, positions):
    arm 2j+1's release at position k >= CROSS_LAG takes (u + 1/2) mod 1 for u the uniform of arm 2j's release at
    position k - CROSS_LAG (when the ring still holds it; a fresh uniform otherwise). Each draw alone is exactly
    Laplace; the pair is one draw."""

    _bug_where = None
    _bug_ring = None

    def _sum_release(self, statistic, scale, on_grid=True):
        where = self._bug_where
        statistic = np.asarray(statistic, dtype=float)
        if self.exact or where is None or where[0].size != statistic.size:
            return NoiseSampler._sum_release(self, statistic, scale, on_grid)
        rows, arms, pos = where
        u_ring, p_ring = self._bug_ring
        u = self.rng.random(statistic.size)
        partner = arms - 1
        odd = (arms % 2 == 1) & (pos >= CROSS_LAG)
        want = pos - CROSS_LAG
        slot = want % RING
        have = odd & (p_ring[rows, np.maximum(partner, 0), slot] == want)
        u = np.where(have, (u_ring[rows, np.maximum(partner, 0), slot] + 0.5) % 1.0, u)
        u_ring[rows, arms, pos % RING] = u
        p_ring[rows, arms, pos % RING] = pos
        u = np.clip(u, 2.0 ** -60, 1.0 - 2.0 ** -53)  # (the inverse CDF's two ends; u = 0 has probability 2^-53)
        z = -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))
        return statistic + z.reshape(statistic.shape) * np.asarray(scale, dtype=float) * self._noise_scale_factor


class Exp3LapCrossArmLag3(DPEXP3Lap):
    """DP-EXP3-Lap whose k-th release on arm 2j+1 takes its Laplace noise from the uniform of arm 2j's (k-3)-th
    release shifted by 1/2 mod 1 ("a per-pair pool of recent uniforms, antithetic"): every release is exactly
    Lap(1/eps) on its own, and no two releases with the same index on two streams, or consecutive on one stream,
    are related -- the pair tied is (arm 2j, k - 3) with (arm 2j + 1, k). Given both releases, the second's noise
    is a fixed function of the first's: the pair pins the two rewards to a curve. True: no finite eps (the supports
    of the pair under neighbouring rewards of arm 2j+1 are disjoint curves); claimed 1 (pure). Aimed at check 5d's
    stated limit: "a dependence between the k-th release on one stream and the (k + 3)-th on another ... is seen
    only through its marginal effect"."""

    def start(self, n_arms, replicates, horizon, rng, ledger=None):
        run = super().start(n_arms, replicates, horizon, rng, ledger)
        sampler = run.noise.sampler
        sampler.__class__ = _CrossArmLagged
        sampler._bug_ring = (np.zeros((replicates, n_arms, RING)), np.full((replicates, n_arms, RING), -1, dtype=np.int64))
        def where(t, arms, rewards):
            rows, arms_a = run.core.rows, np.asarray(arms, dtype=np.int64)
            return rows, arms_a, run.pulls[rows, arms_a].copy()

        _telling(run, "update", sampler, "_bug_where", where)
        return run


ROUND17_BUGS = {
    "exp3_floor_dropped_late": Exp3FloorDroppedLate,
    "exp3_tau_gain_unaveraged": Exp3TauGainUnaveraged,
    "exp3_tau_redraw_on_zero": Exp3TauRedrawOnZero,
    "private_exp3_running_loss": PrivateExp3RunningLoss,
    "dp_ts_saturated_after_eight_ones": DPTSSaturatedAfterEightOnes,
    "dp_ts_flush_reuses_block_noise": DPTSFlushReusesBlockNoise,
    "dp_ucb_noise_memo_hash": DPUCBNoiseMemoHash,
    "gaussian_ts_n_side_zero_uncounted": GaussianTSNSideZeroUncounted,
    "lazy_n_hub_round_half": LazyNHubRoundHalf,
    "lin_ts_signed_sum_norm": LinTSSignedSumNorm,
    "lin_ucb_level_five_sixty": LinUCBLevelFiveSixty,
    "private_ts_noise_uniform_clipped": PrivateTSNoiseUniformClipped,
    "dp_ucb_bound_leader_log_half": DPUCBBoundLeaderLogHalf,
    "exp3_lap_cross_arm_lag3": Exp3LapCrossArmLag3,
    **REPORT_BUGS17,
}
"""Round 17 (session 15, s15/blind): written blind (docs/audit.md, "Round 17"); with the report bugs
(``REPORT_BUGS17``, privacy-correct, expected VIOLATION)."""

for _key, _cls in CONTROLS17.items():
    _named(_cls, "control_" + _key)
for _key, _cls in ROUND17_BUGS.items():
    _named(_cls, "bug_" + _key)


# =============================== deployment path ==============================================
from privbandit.deploy.deployment import Decision, Deployment  # noqa: E402


def drive_deployment17(cls, path, *, seed: int = 7, policy: str = "gaussian_ts", params: dict | None = None,
                       rounds_afforded: int = 30, crash_every: int = 5) -> str | None:
    """Like ``audit_planted_bugs.drive_deployment`` (a hold before every third reward, a clean restart after every
    fourth reward, Bernoulli(0.6 / 0.4) rewards from ``seed``; budget: what ``rounds_afforded`` rounds certify,
    horizon 200) with **crashes between a decision and its reward**: every ``crash_every``-th policy decision
    the process stops (close) before the reward, reopens, asks for a decision again (the library answers a hold
    for the open round) and then sends the open decision's reward. Served until the filter's stop round is the
    next round; that last round is opened and the process crashes for good (the store ends with an open round).

    Returns None, or the deployment's own refusal (``LogMismatch``) at a reopen, as the earlier drives do."""
    from privbandit.deploy.deployment import LogMismatch
    from privbandit.deploy.odometer import Odometer
    from privbandit.policies import make_policy

    params = {"c": 4.0} if params is None else params
    pol = make_policy(policy, **params)
    budget = Odometer(pol, 200, 2, 1e-6).epsilon(rounds_afforded)
    dep = cls.create(path, policy, params=params, n_arms=2, budget=budget, delta=1e-6, horizon=200, seed=seed)
    rng = np.random.default_rng(seed)
    served = 0
    try:
        while True:
            d = dep.select()
            if d.kind != "policy" or d.round >= dep.stop_round:
                break  # the last affordable round is open (or the budget is spent): crash with it open
            served += 1
            if served % 3 == 0:
                dep.select()  # a concurrent caller while the round is open: a hold
            if served % crash_every == 0:  # the process dies before the reward comes back
                dep.close()
                dep = cls.open(path)
                dep.select()  # the client asks again after the restart (a hold for the open round)
            dep.update(d.decision, float(rng.random() < (0.6 if d.arm == 0 else 0.4)))
            if served % 4 == 3:
                dep.close()
                dep = cls.open(path)
    except LogMismatch as exc:
        return str(exc)
    finally:
        dep.close()
    return None


class DeployCrashUnmodified(Deployment):
    """Control: the unmodified deployment under ``drive_deployment17`` (crashes between a decision and its
    reward; the store ends with the last affordable round open)."""


class DeployCrashRedecides(Deployment):
    """After a reopen, a policy round left open by a crash is **decided again** ("the client never got the
    decision: decide it afresh") -- the policy's ``select(t)`` is called a second time on the current snapshot
    (fresh noise: a second release set for round t), the decision row takes the new arm and both release sets are
    logged, the round counter stays t. The filter then counts one round per crash too few. True: cert of
    stop + (crashes) rounds' releases (the bench drive: 30 + 5 release sets, 67 releases against 57, cert(35) =
    11.41 for Gaussian TS c = 4) vs claimed cert(stop) = budget = 10.36 (and the odometer's cert(rounds) at every
    point after a crash)."""

    @classmethod
    def open(cls, path, **kw):
        dep = super().open(path, **kw)
        dep._bug_reopened = True
        return dep

    def select(self):
        if not getattr(self, "_bug_reopened", False):
            return super().select()
        self._bug_reopened = False

        def body():
            info = self._info()
            self._log_check(info)
            open_decision, t = info["open_decision"], info["rounds"]
            if open_decision is None:
                return None
            state = self._load(info)
            ledger = state["ledger"]
            before = ledger.draws[0].copy()
            arm = int(state["run"].select(t)[0])  # round t again, on the snapshot that already drew it
            releases = (ledger.draws[0] - before).tolist()
            (old,) = self._conn.execute("SELECT releases FROM decisions WHERE id = ?", (open_decision,)).fetchone()
            logged = [a + b for a, b in zip(json.loads(old), releases)]
            self._conn.execute("UPDATE decisions SET arm = ?, releases = ? WHERE id = ?",
                               (arm, json.dumps(logged), open_decision))
            digest = self._write(info, state, t, open_decision)
            self._conn.execute("UPDATE decisions SET state_digest = ? WHERE id = ?", (digest, open_decision))
            return Decision(open_decision, arm, "policy", t)

        decided = self._call(body)
        return super().select() if decided is None else decided


class DeployStatusClosedRounds(Deployment):
    """The odometer (``status()``'s spent epsilon) counts only the **closed** policy rounds ("a round is spent
    when its reward is in"): while a round is open it reads cert(rounds - 1), although the open round's releases
    were made at its decision. The filter is unchanged (exactly the library's releases). True spent eps =
    cert(rounds); reported cert(rounds - 1) while a round is open (the bench drive ends with round 30 open:
    cert(30) = 10.36 spent, cert(29) = 10.15 reported)."""

    def status(self, last: int = 5):
        s = super().status(last)
        if s.get("open_decision") is not None and s["policy_rounds"] > 0:
            spent = self.odometer.epsilon(s["policy_rounds"] - 1)
            s["spent_epsilon"], s["remaining_epsilon"] = spent, self.budget - spent
            s["odometer"] = dict(s["odometer"], epsilon=spent)
        return s


DEPLOY_CONTROLS17 = {"deploy_crash_unmodified": DeployCrashUnmodified}
DEPLOY_BUGS17 = {"deploy_crash_redecides": DeployCrashRedecides,
                 "deploy_status_closed_rounds": DeployStatusClosedRounds}
"""Round 17's deployment rows, driven by ``drive_deployment17`` (crashes between a decision and its reward) and
audited from the store."""
