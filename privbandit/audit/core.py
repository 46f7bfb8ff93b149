"""The black-box audit: search -> train -> select -> certify on fresh samples (AUDIT.md 3.2).

An audit runs a mechanism or a policy many times on two neighbouring inputs D and D', picks an
output event on one set of runs and certifies it on fresh runs with one-sided Clopper-Pearson bounds.
The family-wise alpha is split by Bonferroni over every certificate the result reports, so the
probability that *any* reported lower bound exceeds the truth is at most alpha.

Verdicts (never "private" -- audits refute, they never certify):

* ``VIOLATION``    some certified lower bound exceeds the claim in the same currency;
* ``CONSISTENT``   no bound exceeds the claim and at least one bound is positive (the audit had power);
* ``INCONCLUSIVE`` every bound is 0 (too few runs to say anything).
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from collections.abc import Callable, Sequence

import numpy as np

from accountants._validate import shown
from privbandit.audit import certify as _certify
from privbandit.audit import exact as _exact
from privbandit.audit import scores as _scores
from privbandit.audit import stats
from privbandit.audit.certify import Claim, EpsAtDelta, GDP
from privbandit.audit.neighbours import NeighbourPair, Neighbours, NeighbourSearch
from privbandit.audit.raised import PolicyRaised
from privbandit.audit.runner import MechanismSampler, PolicySampler, auto_trace

VERDICTS = ("VIOLATION", "CONSISTENT", "INCONCLUSIVE")

RAISE_RUNS = (500, 1500)
"""Session 12: single runs per side (select, test) of the raise audit (:meth:`Audit._raise_audit`). A policy
that always raises on D and never on D' gives p_lo(D) ~ 0.998, p_hi(D') ~ 0.0025 at alpha 0.05: eps_lb ~ 6.
One run at a time, because the runs of a lock-stepped batch raise together."""


@dataclasses.dataclass(frozen=True)
class Budget:
    """Runs per side, split into (train, select, test) shares; an optional wall-clock cap in seconds.

    Without trainable scores the train share goes to selection. With ``seconds`` the test stage is
    shortened (never below 1,000 runs per side) so that the audit ends near the cap; the result says so.
    """

    runs_per_side: int = 200_000
    split: tuple[float, float, float] = (0.25, 0.25, 0.5)
    seconds: float | None = None

    def __post_init__(self):
        if isinstance(self.runs_per_side, bool) or int(self.runs_per_side) != self.runs_per_side \
                or self.runs_per_side < 1000:
            raise ValueError(f"runs_per_side must be a whole number in [1000, inf), got {shown(self.runs_per_side)}")
        if len(self.split) != 3 or any(s < 0 for s in self.split) or not math.isclose(sum(self.split), 1.0) \
                or self.split[1] <= 0 or self.split[2] <= 0:
            raise ValueError(f"split must be three shares (train, select, test) >= 0 summing to 1 with select, "
                             f"test > 0, got {shown(self.split)}")
        if self.seconds is not None and not (self.seconds > 0):
            raise ValueError(f"seconds must lie in (0, inf) or be None, got {shown(self.seconds)}")

    def sizes(self, trainable: bool) -> tuple[int, int, int]:
        n = int(self.runs_per_side)
        tr, se, te = self.split
        if not trainable:
            se, tr = se + tr, 0.0
        n_tr = int(n * tr)
        n_se = int(n * se)
        return n_tr, n_se, n - n_tr - n_se


@dataclasses.dataclass
class Row:
    """One certificate of an audit (one line of :meth:`AuditResult.table`)."""

    claim: str
    neighbours: str
    observation: str
    certified: _certify.CertifiedBound
    claim_value: float
    verdict: str
    seconds: float

    def as_dict(self) -> dict:
        c = self.certified
        return {
            "claim": self.claim, "neighbours": self.neighbours, "observation": self.observation,
            "certificate": c.certificate, "score": c.event.score_name,
            "event": f"{c.event.direction} {c.event.threshold:.6g} (P[.|{c.event.numerator}] high)",
            "n_per_side": c.n_num, "k_num": c.k_num, "k_den": c.k_den,
            "p_lo_num": c.p_lo_num, "p_hi_den": c.p_hi_den, "eps_lb": c.eps_lb, "mu_lb": c.mu_lb,
            "lower_bound": c.lower_bound, "claimed": self.claim_value, "alpha": c.alpha,
            "verdict": self.verdict, "seconds": self.seconds,
        }


@dataclasses.dataclass
class AuditResult:
    """Outcome of :meth:`Audit.run`: rows, the overall verdict and the data behind the plots."""

    name: str
    claim: Claim
    neighbours: str
    observation: str
    rows: list[Row]
    verdict: str
    alpha: float
    seconds: float
    seed: object
    notes: list[str]
    pilot: list[tuple[str, float]]
    _test_values: dict = dataclasses.field(default_factory=dict, repr=False)
    _certificates: dict = dataclasses.field(default_factory=dict, repr=False)
    exact: _exact.ExactReference | None = None
    """Known answer (``Audit(..., exact=True)``): the exact eps at delta of the audited output between
    the audited tapes, when an enumerator exists (privbandit.audit.exact; AUDIT.md 3.2 step 5, 3.6)."""
    error: str | None = None
    """Session 12: the audited policy raised and no certified event refuted the claim: what it raised
    (the verdict is then INCONCLUSIVE, never CONSISTENT; privbandit/audit/raised.py)."""

    @property
    def eps_lb(self) -> float:
        """Largest certified eps lower bound among the EpsAtDelta rows (0 if none)."""
        vals = [r.certified.lower_bound for r in self.rows if r.certified.certificate.startswith("eps")]
        return max(vals, default=0.0)

    @property
    def mu_lb(self) -> float:
        """Largest certified mu lower bound among the GDP rows (0 if none)."""
        vals = [r.certified.lower_bound for r in self.rows if r.certified.certificate.startswith("mu")]
        return max(vals, default=0.0)

    def summary(self) -> str:
        conf = f"{100 * (1 - self.alpha):g}% family-wise confidence"
        worst = max(self.rows, key=lambda r: r.certified.lower_bound - r.claim_value)
        c = worst.certified
        what = "eps_lb" if c.certificate.startswith("eps") else "mu_lb"
        if self.verdict == "VIOLATION":
            return (f"VIOLATION: {what} = {c.lower_bound:.4g} > claimed {worst.claim_value:.4g} at {conf} "
                    f"({self.name}; neighbours: {self.neighbours}; event {c.event.describe()}; seed {self.seed!r})")
        if self.verdict == "CONSISTENT":
            gaps = ", ".join(f"{r.certified.certificate}: claim {r.claim_value:.4g} - lb {r.certified.lower_bound:.4g}"
                             for r in self.rows)
            return f"CONSISTENT ({gaps}) -- an audit refutes, it never certifies"
        if self.error is not None:
            return f"INCONCLUSIVE (ERROR: {self.error})"
        return f"INCONCLUSIVE: every certified lower bound is 0 at {conf} (too few runs)"

    def table(self, fmt: str = "markdown") -> str | list[dict]:
        """The rows as ``"markdown"``, ``"csv"`` text or ``"rows"`` (a list of dicts)."""
        rows = [r.as_dict() for r in self.rows]
        if self.exact is not None:  # the "exact" column exists only when a known answer was computed
            same_delta = EpsAtDelta(self.exact.delta).name  # the known answer is eps at that delta only
            for r, row in zip(rows, self.rows):
                r["exact"] = self.exact.epsilon if row.certified.certificate == same_delta else math.nan
        if fmt == "rows":
            return rows
        if fmt not in ("markdown", "csv"):
            raise ValueError(f"fmt must be 'markdown', 'csv' or 'rows', got {shown(fmt)}")
        keys = list(rows[0].keys())

        def cell(v):
            if isinstance(v, float):
                return f"{v:.4g}"
            return str(v)

        if fmt == "csv":
            import csv
            import io

            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})
            return buf.getvalue()
        lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        for r in rows:
            lines.append("| " + " | ".join(cell(r[k]).replace("|", "/") for k in keys) + " |")
        return "\n".join(lines)

    def bounds_versus_n(self, points: int = 8) -> dict[str, list[tuple[int, float]]]:
        """Lower bounds of each chosen event on nested prefixes of the test runs (display only)."""
        out = {}
        for row in self.rows:
            c = row.certified
            vd, vdp = self._test_values[c.certificate]
            n = min(vd.size, vdp.size)
            sizes = np.unique(np.geomspace(min(100, n), n, points).astype(int))
            cert = self._certificates[c.certificate]
            series = []
            for m in sizes:
                b = _certify.certify_event(c.event, vd[:m], vdp[:m], cert, c.alpha)
                series.append((int(m), b.lower_bound))
            out[c.certificate] = series
        return out

    def tradeoff_points(self, points: int = 12) -> list[tuple[float, float, float, float]]:
        """(FPR, FNR, FPR_hi, FNR_hi) of threshold tests on the first row's score (display only)."""
        c = self.rows[0].certified
        vd, vdp = self._test_values[c.certificate]
        num, den = (vd, vdp) if c.event.numerator == "D" else (vdp, vd)
        out = []
        qs = np.unique(np.quantile(np.concatenate([vd, vdp]), np.linspace(0.02, 0.98, points)))
        a = c.alpha / 2
        for t in qs:
            s_num = (num >= t) if c.event.direction == ">=" else (num <= t)
            s_den = (den >= t) if c.event.direction == ">=" else (den <= t)
            k_num, k_den = int(s_num.sum()), int(s_den.sum())
            fpr, fnr = k_den / den.size, 1 - k_num / num.size
            out.append((fpr, fnr, stats.cp_upper(k_den, den.size, a), 1 - stats.cp_lower(k_num, num.size, a)))
        return out

    def plot(self, path: str) -> str:
        """Bounds versus runs per side with the claim, and the trade-off plot against the GDP claim."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        for cert, series in self.bounds_versus_n().items():
            n, lb = zip(*series)
            line, = ax1.plot(n, lb, "o-", label=f"{cert} lower bound")
            claim = next(r.claim_value for r in self.rows if r.certified.certificate == cert)
            if math.isfinite(claim):
                ax1.axhline(claim, color=line.get_color(), ls="--", label=f"{cert} claim {claim:.3g}")
        ax1.set_xscale("log")
        ax1.set_xlabel("test runs per side")
        ax1.set_ylabel("certified lower bound")
        ax1.set_title(f"{self.name}: {self.verdict}", fontsize=9)
        ax1.legend(fontsize=7)
        mu = self.claim.gdp_mu()
        x = np.linspace(0, 1, 400)
        if math.isfinite(mu):
            ax2.plot(x, stats.gdp_fnr(x, mu), "k-", label=f"claimed G_mu, mu={mu:.3g}")
        pts = self.tradeoff_points()
        if pts:
            fpr, fnr, fh, nh = (np.array(v) for v in zip(*pts))
            ax2.plot(fpr, fnr, "o", label="test (FPR, FNR)")
            ax2.plot(fh, nh, "x", color="red", label="CP upper corners")
            for a, b, c, d in pts:
                ax2.plot([a, c, c], [d, d, b], color="red", lw=0.5)
        ax2.plot(x, 1 - x, ":", color="grey", label="no privacy loss")
        ax2.set_xlim(0, 1)
        ax2.set_ylim(0, 1)
        ax2.set_xlabel("FPR = P[S | D']")
        ax2.set_ylabel("FNR = P[not S | D]")
        ax2.set_title("trade-off: corners below the curve refute the claim", fontsize=9)
        ax2.legend(fontsize=7)
        fig.tight_layout()
        from privbandit.cli_checks import staged_outputs

        # staged (session 16), as every output: a kill mid-write leaves the old figure or the new one
        with staged_outputs(Path(path).parent, "path") as stage:
            fig.savefig(stage.path(Path(path).name), dpi=110)
        plt.close(fig)
        return path


def _default_certificates(claim: Claim, delta: float) -> list:
    certs = []
    if claim.mu is not None and math.isfinite(claim.mu):
        certs.append(GDP())
        certs.append(EpsAtDelta(delta))
    elif claim.epsilon is not None:
        certs.append(EpsAtDelta(0.0))
    else:
        certs.append(EpsAtDelta(delta))
    return certs


class Audit:
    """An empirical audit of one claim against a mechanism or a policy.

    Use :meth:`mechanism` or :meth:`policy` to build one; :meth:`run` returns an :class:`AuditResult`.
    """

    def __init__(self, candidates: Sequence, claim: Claim, scores: Sequence, certificates: Sequence | None = None,
                 *, alpha: float = 0.05, budget: Budget | None = None, seed=0, name: str = "audit",
                 pilot_runs: int = 20_000, pilot_scores: Sequence | None = None, delta: float = 1e-5,
                 exact: bool = False):
        if not candidates:
            raise ValueError("candidates must hold at least one sampler")
        if not isinstance(claim, Claim):
            raise ValueError(f"claim must be a privbandit.audit.Claim, got {type(claim).__name__}")
        if not scores:
            raise ValueError("scores must hold at least one score")
        self.alpha = stats._check_alpha(alpha)
        self.candidates = list(candidates)
        self.claim = claim
        self.scores = list(scores)
        self.certificates = list(certificates) if certificates else _default_certificates(claim, delta)
        self.budget = budget or Budget()
        if not isinstance(self.budget, Budget):
            raise ValueError(f"budget must be a privbandit.audit.Budget, got {type(self.budget).__name__}")
        self.seed = seed
        self.name = name
        self.pilot_runs = int(pilot_runs)
        self.pilot_scores = list(pilot_scores) if pilot_scores else [s for s in self.scores if not s.trainable]
        if not isinstance(exact, bool):
            raise ValueError(f"exact must be True or False, got {shown(exact)}")
        self.exact = exact

    # --- constructors -------------------------------------------------------------------------
    @classmethod
    def mechanism(cls, mechanism: Callable, x, x_prime, claim: Claim, *, scores=None, certificates=None,
                  name: str = "mechanism", **kwargs) -> "Audit":
        """Audit ``mechanism(x, n, rng) -> (n,) | (n, m)`` on the neighbouring statistics x and x'.

        Default scores: every released coordinate (and their sum and a learned linear score when more
        than one value is released).
        """
        sampler = MechanismSampler(mechanism, x, x_prime)
        if scores is None:
            probe = sampler.sample(0, 4, np.random.default_rng(0))["value"]
            m = probe.shape[1]
            scores = [_scores.output(i) for i in range(m)]
            if m > 1:
                scores += [_scores.output_sum(), _scores.logreg("value")]
        return cls([sampler], claim, scores, certificates, name=name, **kwargs)

    @classmethod
    def policy(cls, policy, horizon: int, n_arms: int = 2, *, neighbours=None, observe: str = "actions",
               trace=None, claim: Claim | None = None, scores=None, certificates=None, clip: bool = True,
               name: str | None = None, **kwargs) -> "Audit":
        """Audit a policy on neighbouring reward tapes.

        ``neighbours``: :meth:`Neighbours.search` (default) or :meth:`Neighbours.pair`.
        ``observe``: ``"actions"`` (what the policy releases) or ``"trace"`` (also the internal noisy
        releases the accountant pays for; ``trace`` is the instrument, default :func:`auto_trace`).
        ``claim``: default the policy's own certificate, ``Claim.from_schedule(schedule, horizon)``.
        """
        if observe not in ("actions", "trace"):
            raise ValueError(f"observe must be 'actions' or 'trace', got {shown(observe)}")
        if isinstance(horizon, bool) or int(horizon) != horizon or horizon < n_arms:
            raise ValueError(f"horizon must be a whole number >= n_arms ({n_arms}), got {shown(horizon)}")
        if not getattr(policy, "private", False) and claim is None:
            raise ValueError(f"{policy!r} is not private: pass the claim to test explicitly")
        neighbours = neighbours if neighbours is not None else Neighbours.search()
        if isinstance(neighbours, NeighbourSearch):
            pairs = neighbours.candidates(policy, n_arms, horizon)
            kwargs.setdefault("pilot_runs", neighbours.pilot_runs)
        elif isinstance(neighbours, (list, tuple)) and all(isinstance(p, NeighbourPair) for p in neighbours):
            pairs = list(neighbours)
        else:
            raise ValueError("neighbours must be Neighbours.search(...) or Neighbours.pair(...)")
        if observe == "trace" and trace is None:
            trace = auto_trace
        if observe == "actions":
            trace = None
        samplers = [PolicySampler(policy, p.tape, p.tape_prime, horizon, trace=trace, clip=clip, label=p.label)
                    for p in pairs]
        if claim is None:
            claim = Claim.from_schedule(policy.privacy_schedule(horizon, n_arms), horizon,
                                        label=f"{policy!r} schedule, T={horizon}")
        if scores is None:
            arms = sorted({p.arm for p in pairs}) if n_arms > 2 else [pairs[0].arm]
            scores = [_scores.pull_count(a) for a in arms] + [_scores.logreg("action_bits")]
            if observe == "trace":
                scores.append(_scores.logreg("trace+actions"))
        # The pilot ranks the candidate pairs by divergence in everything observed: pull counts, and a
        # logistic score fitted on one half of the pilot runs and judged on the other (AUDIT.md 3.2 step 1;
        # pilot runs are thrown away, so this costs no alpha).
        kwargs.setdefault("pilot_scores", [_scores.pull_count(a) for a in range(n_arms)]
                          + [_scores.logreg("trace+actions" if observe == "trace" else "action_bits")])
        return cls(samplers, claim, scores, certificates, name=name or repr(policy), **kwargs)

    # --- running ------------------------------------------------------------------------------
    def _values(self, obs_d, obs_dp, idx):
        return [np.asarray(self.scores[i](obs_d), float) for i in idx], \
               [np.asarray(self.scores[i](obs_dp), float) for i in idx]

    def _pilot(self, rng_seq) -> tuple[int, list[tuple[str, float]]]:
        if len(self.candidates) == 1:
            return 0, []
        ranking = []
        cert = self.certificates[0]
        for i, sampler in enumerate(self.candidates):
            r0, r1 = (np.random.default_rng(s) for s in rng_seq.spawn(2))
            try:
                od, odp = sampler.sample(0, self.pilot_runs, r0), sampler.sample(1, self.pilot_runs, r1)
            except PolicyRaised:  # a pair on which the policy raises is audited first (:meth:`_raise_audit`)
                ranking.append((sampler.label, math.inf))
                return i, ranking
            if any(s.trainable for s in self.pilot_scores):  # fit on one half, judge on the other
                half = self.pilot_runs // 2
                fit_d, fit_dp = _rows(od, slice(0, half)), _rows(odp, slice(0, half))
                od, odp = _rows(od, slice(half, None)), _rows(odp, slice(half, None))
                for s in self.pilot_scores:
                    if s.trainable:
                        s.fit(fit_d, fit_dp)
            vd = [np.asarray(s(od), float) for s in self.pilot_scores]
            vdp = [np.asarray(s(odp), float) for s in self.pilot_scores]
            _, obj, _ = _certify.select_event(vd, vdp, [s.name for s in self.pilot_scores], cert, self.alpha)
            ranking.append((sampler.label, obj))
        best = int(np.argmax([o for _, o in ranking]))
        return best, ranking

    def run(self) -> AuditResult:
        started = time.perf_counter()
        seq = self.seed if isinstance(self.seed, np.random.SeedSequence) else np.random.SeedSequence(self.seed)
        s_pilot, s_train, s_sel, s_test = seq.spawn(4)
        notes = []
        chosen, ranking = self._pilot(s_pilot)
        sampler = self.candidates[chosen]
        try:
            return self._run(sampler, chosen, ranking, notes, started, s_train, s_sel, s_test)
        except PolicyRaised as exc:  # an exception is an output: audit whether it distinguishes the neighbours
            return self._raise_audit(sampler, exc, ranking, notes, started, seq.spawn(1)[0])

    def _raise_audit(self, sampler, exc: PolicyRaised, ranking, notes, started, ss) -> AuditResult:
        """The audit when the policy raised (privbandit/audit/raised.py): single independent runs per side
        (:data:`RAISE_RUNS`), each run's output its outcome -- completed, or raised (type, round). The
        event "raised (type, round)", "raised (type)" or "raised" with the best objective on the selection
        runs, either side as numerator, is certified on fresh runs in every certificate of the audit
        (Clopper-Pearson, Bonferroni over the certificates). VIOLATION when a bound exceeds the claim;
        otherwise INCONCLUSIVE naming the exception -- the outputs after a raise were never seen, so never
        CONSISTENT."""
        n_sel, n_te = RAISE_RUNS
        s_sel, s_test = ss.spawn(2)

        def outcomes(side_seq, n):
            out = []
            for side, sq in enumerate(side_seq.spawn(2)):
                rng = np.random.default_rng(sq)
                got = []
                for _ in range(n):  # one run at a time: the runs of a lock-stepped batch raise together
                    try:
                        sampler.sample(side, 1, rng)
                        got.append(None)
                    except PolicyRaised as e:
                        got.append(e.raised)
                out.append(got)
            return out

        sel_d, sel_p = outcomes(s_sel, n_sel)
        # candidate events, named before the test runs: each (type, round), each type, any raise
        keys = sorted({(r.kind, r.round) for r in sel_d + sel_p if r is not None})
        events = [(f"raised {k} in round {t}", lambda r, k=k, t=t: r is not None and (r.kind, r.round) == (k, t))
                  for k, t in keys]
        events += [(f"raised {k}", lambda r, k=k: r is not None and r.kind == k) for k in sorted({k for k, _ in keys})]
        events.append(("raised", lambda r: r is not None))
        names = [n for n, _ in events]

        def values(runs):
            return [np.array([1.0 if f(r) else 0.0 for r in runs]) for _, f in events]

        test_d, test_p = outcomes(s_test, n_te)
        vd, vdp, td, tdp = values(sel_d), values(sel_p), values(test_d), values(test_p)
        alpha_each = self.alpha / len(self.certificates)
        delta_eps = next((c.delta for c in self.certificates if isinstance(c, EpsAtDelta)), 0.0)
        rows, test_values = [], {}
        observation = sampler.observation + " + raised"
        for cert in self.certificates:
            event, _, _ = _certify.select_event(vd, vdp, names, cert, self.alpha)
            j = event.score_index
            cb = _certify.certify_event(event, td[j], tdp[j], cert, alpha_each, delta_for_eps=delta_eps)
            claim_value = cert.claim_value(self.claim)
            verdict = "VIOLATION" if cb.lower_bound > claim_value else "INCONCLUSIVE"
            rows.append(Row(self.claim.describe(), sampler.label, observation, cb, claim_value, verdict, 0.0))
            test_values[cb.certificate] = (td[j], tdp[j])
        seconds = time.perf_counter() - started
        for r in rows:
            r.seconds = seconds
        k_d = sum(r is not None for r in test_d)
        k_p = sum(r is not None for r in test_p)
        error = (f"the policy {exc.raised.describe()}; raised in {k_d} of {n_te} single runs on D and {k_p} of "
                 f"{n_te} on D'")
        notes.append(f"raise audit: {error}")
        verdict = "VIOLATION" if any(r.verdict == "VIOLATION" for r in rows) else "INCONCLUSIVE"
        return AuditResult(self.name, self.claim, sampler.label, observation, rows, verdict, self.alpha, seconds,
                           self.seed, notes, ranking, test_values, {c.name: c for c in self.certificates}, None,
                           error=None if verdict == "VIOLATION" else error)

    def _run(self, sampler, chosen, ranking, notes, started, s_train, s_sel, s_test) -> AuditResult:
        trainable = any(s.trainable for s in self.scores)
        n_tr, n_se, n_te = self.budget.sizes(trainable)

        def sample_both(ss, n):
            a, b = (np.random.default_rng(s) for s in ss.spawn(2))
            return sampler.sample(0, n, a), sampler.sample(1, n, b)

        if trainable:
            od, odp = sample_both(s_train, n_tr)
            for s in self.scores:
                if s.trainable:
                    s.fit(od, odp)
            del od, odp
        t_sel = time.perf_counter()
        od, odp = sample_both(s_sel, n_se)
        per_run = (time.perf_counter() - t_sel) / (2 * n_se)
        idx = list(range(len(self.scores)))
        vd, vdp = self._values(od, odp, idx)
        names = [s.name for s in self.scores]
        del od, odp
        events = []
        for cert in self.certificates:
            event, obj, n_cand = _certify.select_event(vd, vdp, names, cert, self.alpha)
            events.append(event)
        notes.append(f"selection: {n_cand} candidate events over {len(self.scores)} scores")
        if self.budget.seconds is not None:
            remaining = self.budget.seconds - (time.perf_counter() - started)
            # compared as a float: a budget of 1e308 s affords inf runs, which int() cannot hold
            affordable = max(remaining, 0.0) / max(per_run, 1e-9) / 2
            if affordable < n_te:
                n_te = max(1000, int(affordable))
                notes.append(f"test runs per side cut to {n_te} by the {self.budget.seconds:g} s budget")
        od, odp = sample_both(s_test, n_te)
        used = sorted({e.score_index for e in events})
        td, tdp = self._values(od, odp, used)
        test_values = {}
        alpha_each = self.alpha / len(self.certificates)
        rows = []
        delta_eps = next((c.delta for c in self.certificates if isinstance(c, EpsAtDelta)), 0.0)
        elapsed = time.perf_counter() - started
        for cert, event in zip(self.certificates, events):
            j = used.index(event.score_index)
            cb = _certify.certify_event(event, td[j], tdp[j], cert, alpha_each, delta_for_eps=delta_eps)
            claim_value = cert.claim_value(self.claim)
            verdict = "VIOLATION" if cb.lower_bound > claim_value else (
                "CONSISTENT" if cb.lower_bound > 0 else "INCONCLUSIVE")
            rows.append(Row(self.claim.describe(), sampler.label, sampler.observation, cb, claim_value, verdict,
                            elapsed))
            test_values[cb.certificate] = (td[j], tdp[j])
        if any(r.verdict == "VIOLATION" for r in rows):
            verdict = "VIOLATION"
        elif any(r.verdict == "CONSISTENT" for r in rows):
            verdict = "CONSISTENT"
        else:
            verdict = "INCONCLUSIVE"
        seconds = time.perf_counter() - started
        for r in rows:
            r.seconds = seconds
        reference = None
        if self.exact:  # after the timing: the known answer is a reference, not part of the audit
            eps_certs = [c for c in self.certificates if isinstance(c, EpsAtDelta)]
            if eps_certs:
                reference, note = _exact.exact_reference(sampler, eps_certs[0].delta)
            else:
                note = "exact reference: no eps-at-delta certificate to compare with"
            notes.append(note)
        return AuditResult(self.name, self.claim, sampler.label, sampler.observation, rows, verdict, self.alpha,
                           seconds, self.seed, notes, ranking, test_values,
                           {c.name: c for c in self.certificates}, reference)


def _rows(obs: dict, sl: slice) -> dict:
    """The runs ``sl`` of an observation dict (arrays sliced along runs, other entries kept)."""
    return {k: (v[sl] if isinstance(v, np.ndarray) and v.ndim >= 1 else v) for k, v in obs.items()}
