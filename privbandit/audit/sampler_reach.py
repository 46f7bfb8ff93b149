"""Check 5f (session 15, s15/reach2): the reach of a run's own noise samplers, probed off the run.

The noise law (check 5) tests the run's residuals: ~10^5 per group, so a sampler truncated beyond ~ln(10^5) = 11.5
scales -- the inverse CDF of a uniform clipped to [1e-6, 1 - 1e-6] reaches 13.1 Laplace scales, with atoms of 1e-6
at the ends -- is indistinguishable from the law there, while each release is then only (eps, 1e-6)-DP: no finite
pure epsilon (round 17's ``private_ts_noise_uniform_clipped``). The sampler itself, though, can be asked for as many
draws as needed, without the policy: every :class:`~privbandit.mechanisms.sampling.NoiseSampler` a fresh run of the
policy holds (found by walking the run's attributes) that is *not* the library's own -- a subclass, or an instance
with a method of its own -- is cloned onto a generator of the audit's and asked for :data:`PROBE_DRAWS` unit-scale
draws through each of its float paths (``_sum_release`` and ``laplace`` for Laplace, ``gaussian`` for the normal
law). Under the contract each is i.i.d. from its law, so the largest |draw| m has P(max <= m) = (1 - e^{-m})^n
(Laplace(1)) or (1 - 2 Phi(-m))^n (N(0, 1)) exactly; a probe rejects at level alpha / (the probes made). At
n = 2^23 a truncation below ~13.5 Laplace scales (~5.6 normal ones) is refuted at alpha 1e-4. The library's own
sampler is not probed (its law is the library's tests'): clean policies cost nothing. Exact mode is not probed
(its draws are on the grid by design; the exact checks see them).
"""

from __future__ import annotations

import copy
import math

import numpy as np
from scipy import stats as sps

from privbandit.audit.false_alarms import spend
from privbandit.mechanisms.sampling import NoiseSampler

PROBE_DRAWS = 2 ** 23
"""Draws per probe (unit scale): a truncation at m scales is seen when n e^{-m} >~ ln(probes / alpha)."""
DEPTH = 3
"""How deep the run's attributes are walked for samplers (run -> mechanism -> core -> sampler)."""


def _custom(sampler: NoiseSampler) -> bool:
    """A sampler other than the library's: a subclass, or an instance holding a callable of its own."""
    return type(sampler) is not NoiseSampler or any(callable(v) for v in vars(sampler).values())


def samplers_of(run, depth: int = DEPTH) -> list[NoiseSampler]:
    """The distinct NoiseSampler instances reachable from ``run`` through attributes (dicts, lists, tuples) up to
    ``depth`` levels."""
    found, seen = {}, set()

    def walk(obj, level):
        if id(obj) in seen or level > depth:
            return
        seen.add(id(obj))
        if isinstance(obj, NoiseSampler):
            found[id(obj)] = obj
            return
        if isinstance(obj, dict):
            children = list(obj.values())
        elif isinstance(obj, (list, tuple)):
            children = list(obj)
        elif hasattr(obj, "__dict__") and not isinstance(obj, (type, np.ndarray, np.random.Generator)):
            children = list(vars(obj).values())
        else:
            return
        for child in children:
            if isinstance(child, (np.ndarray, str, bytes, int, float)):
                continue
            walk(child, level + 1)

    walk(run, 0)
    return list(found.values())


def _log_p_max(m: float, n: int, family: str) -> float:
    """log P(max of n |draws| <= m) under the family's unit law."""
    tail = math.exp(-m) if family == "laplace" else 2.0 * float(sps.norm.sf(m))
    if tail >= 1.0:
        return -math.inf
    return n * math.log1p(-tail)


def reach_check(policy, n_arms: int, horizon: int, seed: int, alpha: float, draws: int = PROBE_DRAWS) -> list[str]:
    """Findings (messages) of check 5f (module docstring) on a fresh run of ``policy`` (4 replicates, started
    only: no round is played), family-wise level ``alpha``."""
    try:
        run = policy.start(n_arms, 4, horizon, np.random.default_rng([int(seed), 5]))
    except Exception:  # the coupled runs report a policy that cannot start
        return []
    custom = [s for s in samplers_of(run) if _custom(s) and not s.exact]
    if not custom:
        return []
    probes = []
    for i, s in enumerate(custom):
        for family, call in (("laplace", lambda c: c._sum_release(np.zeros(draws), 1.0)),
                             ("laplace", lambda c: c.laplace(1.0, size=draws)),
                             ("gaussian", lambda c: c.gaussian(np.ones(draws)))):
            probes.append((i, s, family, call))
    level = math.log(alpha / len(probes))
    spend("sampler reach (check 5f)", alpha)
    out, refuted = [], set()
    for j, (i, s, family, call) in enumerate(probes):
        if i in refuted:  # one finding per sampler (its other paths cost draws for nothing)
            continue
        clone = copy.copy(s)
        clone.rng = np.random.default_rng([int(seed), 5, j])
        try:
            z = np.asarray(call(clone), dtype=float)
        except Exception:  # a path this sampler does not serve (its releases are checked in the run)
            continue
        if z.size != draws or not np.all(np.isfinite(z)):
            continue
        m = float(np.max(np.abs(z)))
        log_p = _log_p_max(m, draws, family)
        if log_p <= level:
            refuted.add(i)
            path = {0: "_sum_release", 1: "laplace", 2: "gaussian"}[j % 3]
            out.append(f"the run's sampler {type(s).__name__} (#{i}) never reaches beyond {m:.4g} scales in {draws} "
                       f"unit {family} draws ({path}): P(max |draw| <= that) = exp({log_p:.4g}) under the declared "
                       f"law (level {alpha / len(probes):.3g}, family-wise alpha {alpha:g}) -- truncated or clamped "
                       f"noise: a release near the cut has a neighbour's output it cannot produce (no finite pure eps)")
    return out
