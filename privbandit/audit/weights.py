"""Check 13 (session 15, s15/reach2): the sampling distributions of exponential-weights policies against the
premises of their certificate.

EXP3 and EXP3-tau draw no noise: their certificate (:class:`privbandit.policies.adversarial.
ExponentialWeightsSchedule`, docs/policies_adversarial.md) is a proof about the sampling distributions, and it
rests on two facts about the run -- every choice probability is at least the floor gamma / K (the premise of the
per-choice cap c = ln(1 + K (1 - gamma) / gamma)), and a changed record moves one log-weight by at most
s_1 = 1 / tau at its batch's update (eta (1/tau) / p with eta = gamma / K, p >= gamma / K: the first step of the
growing bound). The noise checks have nothing to read, the ``decisions`` check does not apply, and the black-box
audits reach ~1-2 % of such claims, so a run that drops the floor late or forgets to average a batch's gain was
invisible (round 17: ``exp3_floor_dropped_late``, ``exp3_tau_gain_unaveraged``).

The schedule declares both premises (``floor``, ``first_step``); a run declares what it used through
``sampling_state()`` -- (the last choice's probabilities, the log-weights) -- on itself or its ``core``. For a
policy whose schedule and run both declare them, two coupled runs (the same seed, so the same uniforms; tapes D
and D' differing in one record per replicate) are played round by round, and:

* **floor** -- after every choice, every probability of every replicate (on D and D') is >= ``floor`` (exact in
  floating point: the draw computes p = w c + floor with w c >= 0, and rounding is monotone);
* **step** -- at the first update after which a replicate's log-weights differ between D and D' (so both runs
  made every earlier choice alike), no log-weight moved apart by more than ``first_step`` (relative slack 1e-9 and
  the log-weights' own rounding).

Both are exact: a finding is a witness (replicate, round, value), no alpha. Session 16 (s16/reach) adds two tests
of the choices' randomness, on which the certificate rests entirely (statistical, 1e-6 each, tallied by
:func:`privbandit.audit.false_alarms.spend`):

* **choice seed** (:func:`_choice_seed`) -- a third run on D with another seed: replicates making every choice
  alike in both runs beyond what the floor allows (the choices' randomness ignores the seed);
* **choice lags** (:func:`_choice_lags`) -- the run on D's choice residuals uncorrelated at every lag (one choice's
  randomness used again, e.g. a uniform buffer re-read as a ring).
 The tapes are made to reach the floor:
a quarter of the replicates have one arm paying 1 and the rest 0 (the weights separate and the losing arms sit
near the floor), a quarter random 0/1, half uniform; each replicate's changed record is a uniformly placed pull of
an arm, moved to the far end of [0, 1].
"""

from __future__ import annotations

import math

import numpy as np

from privbandit.policies.base import Policy, schedule_for

STEP_SLACK = 1e-9
"""Relative slack on ``first_step`` (the update's own rounding: a few ulps)."""
CHOICE_ALPHA = 1e-6
"""Level of the choice-seed test (statistical: tallied as ``choice_seed`` in the white-box false-alarm budget)."""


def _state(run):
    for owner in (run, getattr(run, "core", None)):
        get = getattr(owner, "sampling_state", None)
        if callable(get):
            return get
    return None


def declared(policy: Policy, horizon: int, n_arms: int):
    """The schedule of ``policy`` when it declares ``floor`` and ``first_step``, else None."""
    try:
        schedule = schedule_for(policy, horizon, n_arms)
    except Exception:  # the spend check reports a schedule that cannot be built
        return None
    if getattr(schedule, "floor", None) is None or getattr(schedule, "first_step", None) is None:
        return None
    return schedule


def tapes(n_arms: int, horizon: int, replicates: int, rng: np.random.Generator):
    """(D, D', arm, pull): the module docstring's tapes, (R, K, T) each."""
    R = replicates
    d = rng.random((R, n_arms, horizon))
    q = R // 4
    best = rng.integers(n_arms, size=q)
    d[:q] = 0.0
    d[np.arange(q), best] = 1.0
    d[q:2 * q] = (rng.random((q, n_arms, horizon)) < 0.5).astype(float)
    arm = rng.integers(n_arms, size=R)
    pull = rng.integers(max(1, horizon // n_arms), size=R)
    d_prime = d.copy()
    rows = np.arange(R)
    d_prime[rows, arm, pull] = np.where(d[rows, arm, pull] < 0.5, 1.0, 0.0)
    return d, d_prime, arm, pull


def _choice_seed(schedule, horizon: int, n_arms: int, same: int, replicates: int, floor: float, alpha: float):
    """The choice-seed test (session 16, s16/reach): the certificate is all in the choices' randomness, which must
    be the run's secret. Two runs on the same tapes with two seeds choose independently, so at each choice the
    second agrees with the first with probability at most max_a q(a) <= 1 - (K - 1) floor (every probability >=
    the floor, checked above on both runs); a replicate agrees on all of its m = ``schedule.choices(horizon)``
    choices after the first batch and more with probability at most q = (1 - (K - 1) floor)^m, independently across
    replicates. ``same`` replicates agreeing throughout has tail probability <= Binomial(R, q).sf(same - 1); a tail
    below ``alpha`` is a finding (choices drawn from a generator the seed does not reach: round 18's
    ``exp3_tau_choice_seeded_by_batch``, every replicate alike). Spends ``alpha`` (``choice_seed``)."""
    from scipy import stats as sps

    from privbandit.audit.false_alarms import spend

    m = int(schedule.choices(horizon))
    q = (1.0 - (n_arms - 1) * floor) ** m
    if m < 1 or q >= 1.0 or replicates < 1:
        return None
    spend("choice_seed", alpha)
    tail = float(sps.binom.sf(same - 1, replicates, q)) if same else 1.0
    if tail >= alpha:
        return None
    return (f"{same} of {replicates} replicates made every choice alike in two runs on the same tapes with different "
            f"seeds (at most {q:.3g} each by chance: {m} choices, each alike with probability <= 1 - (K - 1) floor; "
            f"tail {tail:.3g} < alpha {alpha:g}) -- the choices' randomness does not depend on the run's seed, and the "
            f"certificate rests on it being secret")


def _choice_lags(resid: np.ndarray, alpha: float):
    """The choice-lag test (session 16, s16/reach): each choice must use randomness of its own. ``resid`` (R, n):
    x_t = 1[a_t = 0] - p_t(0) at each of the run's n choices (p_t the probabilities the choice was drawn from, as
    the run declares them). With a fresh uniform per choice, E[x_{t+L} | everything before] = 0, so for every lag
    L, S_L = sum over replicates and t of x_t x_{t+L} is a martingale (ordered by t + L; replicates in lock-step)
    with increments in a range of length |x_t| <= 1: Azuma-Hoeffding gives P(|S_L| >= s) <= 2 exp(-2 s^2 / N_L),
    N_L = R (n - L), at level alpha / (n - 1) per lag. A uniform read again L choices later -- a buffer re-read as a
    ring (round 18's ``exp3_uniforms_cycled``, L = 1024), or reflected -- makes a_t and a_{t+L} functions of one
    uniform, E[x_t x_{t+L}] = min(p, p') - p p' (or its negative) per pair, which no lag's bound absorbs for long.
    Spends ``alpha`` (``choice_lags``) when there are two choices or more."""
    from privbandit.audit.false_alarms import spend

    R, n = resid.shape
    if n < 2 or R < 1:
        return None
    spend("choice_lags", alpha)
    level = math.log(alpha / (n - 1) / 2.0)
    worst = None
    for lag in range(1, n):
        s_l = float(np.sum(resid[:, :-lag] * resid[:, lag:]))
        n_l = R * (n - lag)
        log_p = -2.0 * s_l * s_l / n_l
        if log_p <= level and (worst is None or log_p < worst[2]):
            worst = (lag, s_l, log_p, n_l)
    if worst is None:
        return None
    lag, s_l, log_p, n_l = worst
    return (f"choices {lag} apart are correlated: sum of (1[a_t = 0] - p_t(0)) (1[a_t+{lag} = 0] - p_t+{lag}(0)) over "
            f"{n_l} pairs = {s_l:.4g}, P(|sum| >= that) <= 2 exp({log_p:.4g}) for choices drawn with fresh randomness "
            f"(Azuma-Hoeffding; level {alpha / (n - 1):.3g} a lag, alpha {alpha:g}) -- one choice's randomness is used "
            f"again, and the certificate counts each choice's randomness once")


def sampling_check(policy: Policy, horizon: int, n_arms: int, replicates: int, seed: int,
                   alpha: float = CHOICE_ALPHA) -> list[str]:
    """Findings (messages) of check 13 (module docstring) and of its choice-seed test at level ``alpha``; [] for a
    policy that does not declare the premises."""
    schedule = declared(policy, horizon, n_arms)
    if schedule is None:
        return []
    rng = np.random.default_rng([int(seed), 13])
    d, d_prime, _, _ = tapes(n_arms, horizon, replicates, rng)
    run_seed = int(rng.integers(2 ** 63))
    other_seed = int(rng.integers(2 ** 63))  # the choice-seed test's run on D (drawn after: the rest unchanged)
    runs = [policy.start(n_arms, replicates, horizon, np.random.default_rng(s))
            for s in (run_seed, run_seed, other_seed)]
    states = [_state(r) for r in runs]
    if states[0] is None:
        return []
    floor, step = float(schedule.floor), float(schedule.first_step)
    rows = np.arange(replicates)
    pulls = [np.zeros((replicates, n_arms), dtype=np.int64) for _ in range(3)]
    same = np.ones(replicates, dtype=bool)  # the other seed's run on D has made every choice alike so far
    # the run on D's choice residuals 1[a_t = 0] - p_t(0) (the choice-lag test); at each choice (batch start)
    resid = np.zeros((replicates, horizon))
    apart = np.zeros(replicates, dtype=bool)  # log-weights already differ (the first difference was checked)
    out = []
    low = worst = None
    n_over = 0
    for t in range(1, horizon + 1):
        arms = [np.asarray(r.select(t)).astype(np.int64) for r in runs]
        same &= arms[2] == arms[0]
        for i in range(3):
            p, _ = states[i]()
            if i == 0:
                resid[:, t - 1] = (arms[0] == 0) - p[:, 0]
            below = p < floor
            if low is None and below.any():
                r_, a_ = np.argwhere(below)[0]
                low = (("D", "D'", "D (another seed)")[i], int(r_), t, int(a_), float(p[r_, a_]), int(below.sum()))
        for i, tape in enumerate((d, d_prime, d)):
            j = pulls[i][rows, arms[i]]
            pulls[i][rows, arms[i]] += 1
            runs[i].update(t, arms[i], tape[rows, arms[i], np.minimum(j, horizon - 1)])
        (_, w0), (_, w1) = states[0](), states[1]()
        newly = ~apart & np.any(w0 != w1, axis=1)
        if newly.any():
            moved = np.abs(w1[newly] - w0[newly]).max(axis=1)
            slack = step * STEP_SLACK + 8 * np.finfo(float).eps * np.maximum(np.abs(w0[newly]), np.abs(w1[newly])).max(axis=1)
            over = moved > step + slack
            n_over += int(over.sum())
            if worst is None and over.any():
                k = int(np.flatnonzero(over)[np.argmax(moved[over])])
                worst = (int(np.flatnonzero(newly)[k]), t, float(moved[k]))
            apart |= newly
    if low is not None:
        run, r_, t, a_, p, n = low
        out.append(f"a choice probability below the certificate's sampling floor: run on {run}, replicate {r_}, round "
                   f"{t}, arm {a_}: p = {p:.6g} < floor {floor:.6g} (gamma / K; {n} probabilities below it in that "
                   f"round) -- the certificate's per-choice cap assumes p >= floor for every arm and round")
    if low is None:  # every probability of the other seed's run is >= floor: the bound below holds
        message = _choice_seed(schedule, horizon, n_arms, int(same.sum()), replicates, floor, alpha)
        if message is not None:
            out.append(message)
    message = _choice_lags(resid[:, ::max(1, int(getattr(schedule, "tau", 1) or 1))], alpha)
    if message is not None:
        out.append(message)
    if worst is not None:
        r_, t, moved = worst
        out.append(f"a changed record moved a log-weight by {moved:.6g} > the certificate's first step {step:.6g} "
                   f"(replicate {r_}, the update of round {t}, the first after which D and D' differ; {n_over} of "
                   f"{replicates} replicates over it) -- the certificate's growing bound starts from s_1 = 1 / tau")
    return out
