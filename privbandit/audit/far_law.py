"""The noise law far into a run, at the cost of an untraced run (round 13).

The white-box audit replays every release of two coupled runs, which costs ~0.7 ms per round and
replicate: its traced runs end by 8,000-40,000 rounds, so a scale error that starts only after an arm's
8,192nd record (a tree's level-13 nodes, a hybrid's late blocks, an interval's late releases) was never
seen drawn. The far ledger run (``cli.FAR``, 2^17 rounds on a starving environment) reaches such records
but saw only what the ledger was told.

:class:`FarLawTracer` is a :class:`~privbandit.audit.tracing.ReleaseTracer` that keeps no trace: it pairs
each ledger report with its draw exactly as the tracer does (first in, first out, by size), turns each
released value into its residual in units of the *reported* scale, z = (released - statistic) / scale,
files z under (mechanism, family) with its stream and two coordinates of the release's footprint [lo, hi)
-- the octave of its newest record's position (log2 hi: how far into the stream) and the octave of its
size (log2 (hi - lo): a tree node's level, a batch's length) -- and drops the draw. Nothing is replayed
and no insert is logged, so the run costs the wrappers' bookkeeping only (``ReleaseTracer._light_store``).
A ledger that is not tight stages a prefix recorder's releases (the Gaussian posterior's) as counts: those
are read where they are staged.

:func:`far_law` then tests, in every group, that the noise is at least as large as reported. Under the
contract every float-mode release draws independent noise of the reported law: a Laplace residual
|z| ~ Exp(1), so S = sum |z| ~ Gamma(n, 1); a Gaussian residual z ~ N(0, 1), so S = sum z^2 ~ chi^2_n.
A scale drawn below the reported one makes S small; the test rejects when P(S' <= S) is below the
group's share of the run's false-alarm budget (one-sided: noise larger than reported is no privacy
failure). Groups: every octave on its own and every "from this octave on" tail (a bug that starts late
and persists fills a tail group), for both coordinates, and every stream on its own and every "from this
stream index on" tail (an error keyed to arms >= k) -- a Bonferroni split of ``alpha`` over all groups
tested, so the run's false-alarm probability is at most ``alpha`` (default 1e-4) whatever the policy. A
factor-2 scale error in a group of n residuals moves S to half its mean: p = 4e-7 at n = 64, 3e-10 at
n = 100, 6e-12 at n = 120, while a run's groups number 5-140 (measured; shares of ~1e-6 and up).

Exact-mode (grid) releases are left out: their law is the discrete Laplace on the grid, not Laplace.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import special

from privbandit.audit.false_alarms import spend
from privbandit.audit.tracing import Draw, ReleaseTracer, Report
from privbandit.ledger import _PrefixRecorder

FAR_LAW_ALPHA = 1e-4
"""The far noise-law test's false-alarm budget per run (Bonferroni over its groups)."""

_MAX_OPEN = 64
"""Unpaired draws kept for pairing: a draw no report claims is the white-box audit's finding
(``unreported``), not this test's; forgetting the oldest keeps the pairing cost flat."""

_MIN_GROUP = 8
"""Groups with fewer residuals are not tested (a factor-2 error in 8 residuals has p ~ 0.05: no power at
the groups' shares, and every group tested costs the others some of the budget)."""


@dataclasses.dataclass
class FarLawFinding:
    """One group whose noise is smaller than reported: S = sum |z| (Laplace) or sum z^2 (Gaussian)."""

    mechanism: str
    family: str
    axis: str  # "position" (log2 of the newest record's position), "size" (log2 of the footprint size), "stream"
    octave: int
    tail: bool  # the group is every octave >= ``octave``
    n: int
    ratio: float  # S / E[S]: about the squared scale ratio (Gaussian) or the scale ratio (Laplace)
    p: float
    threshold: float

    def describe(self) -> str:
        where = (f"stream {'>= ' if self.tail else ''}{self.octave}" if self.axis == "stream" else
                 f"{self.axis} octave {'>= ' if self.tail else ''}{self.octave}")
        stat = "sum |z|" if self.family == "laplace" else "sum z^2"
        return (f"{self.mechanism} ({self.family}), {where}: {self.n} releases, {stat} = {self.ratio:.3f} of "
                f"its mean under the reported scale (p = {self.p:.2e} < {self.threshold:.2e})")


@dataclasses.dataclass
class FarLawResult:
    releases: int
    groups: int
    alpha: float
    findings: list[FarLawFinding]
    skipped: int  # exact-mode or non-Laplace / Gaussian releases, and reports without a finite scale

    @property
    def passed(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        head = (f"far noise law: {self.releases} releases in {self.groups} groups, family-wise alpha "
                f"{self.alpha:g}: " + ("CONSISTENT" if self.passed else "VIOLATION"))
        return "\n".join([head] + ["  " + f.describe() for f in self.findings[:10]])


class FarLawTracer(ReleaseTracer):
    """A release tracer that keeps residuals, not draws (see the module docstring). Reports into any ledger
    count (the far run has one)."""

    def __init__(self) -> None:
        super().__init__(None, any_ledger=True)
        self._pending: dict[int, Draw] = {}
        self._waiting: dict[int, list] = {}  # draws reported before they returned (the posterior)
        self._count = 0
        self.skipped = 0
        # (mechanism, family) -> list of (z, lo, hi) arrays, one entry per paired report
        self.residuals: dict[tuple[str, str], list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}

    def _new_draw(self, family: str, stat, exact: bool = False) -> Draw:
        stat = np.array(stat, dtype=float)
        d = Draw(self._count, family, stat.reshape(-1), None, stat.shape,
                 np.zeros(stat.size, dtype=bool), np.zeros(stat.size, dtype=bool), bool(exact))
        self._count += 1
        if stat.size:
            self._open.append(d.index)
            self._pending[d.index] = d
            if len(self._open) > _MAX_OPEN:  # a draw no report claims (the white-box audit's finding): forget it
                self._pending.pop(self._open.pop(0), None)
        return d

    def _finish(self, d: Draw, out):
        d.out = np.asarray(out, dtype=float).reshape(-1).copy()
        for report, elems in self._waiting.pop(d.index, ()):
            self._file(d, report, elems)
        if not self._open or d.index not in self._open:
            self._pending.pop(d.index, None)
        return out

    def __enter__(self) -> "FarLawTracer":
        super().__enter__()
        # a ledger that is not tight stages a prefix recorder's releases (the Gaussian posterior's) as
        # counts, never through Ledger._record_dense: read them where they are staged
        original = _PrefixRecorder.record
        self._saved_prefix = original

        def record(recorder, counts):
            if ReleaseTracer._active is self:
                self._prefix_report(recorder, counts)
            return original(recorder, counts)

        _PrefixRecorder.record = record
        return self

    def __exit__(self, *exc) -> None:
        _PrefixRecorder.record = self._saved_prefix
        super().__exit__(*exc)

    def _prefix_report(self, recorder, counts) -> None:
        """The releases a prefix recorder stages (what ``Ledger._record_dense`` would be told): every
        (replicate, stream) holding k >= 1 records, footprint [0, k), parameters(k)."""
        family = _KINDS.get(int(recorder.kind))
        k = np.asarray(counts).astype(np.int64)
        mask = k >= 1
        if family is None or not mask.any():
            return
        param = np.broadcast_to(np.asarray(recorder.parameters(k)[0], dtype=float), k.shape)[mask]
        self._pair(int(mask.sum()), mask, family, np.nonzero(mask)[1], 0, k[mask], param, "prefix recorder")

    def _insert(self, mech, rows, cols, values) -> None:  # no insert log: nothing is replayed
        return

    def _light_store(self, kind: int, rep, st, lo, hi, param, mechanism) -> None:
        """A listed ledger report (``Ledger._store``): paired and filed without a :class:`Report`."""
        family = _KINDS.get(kind)
        m = int(np.size(rep))
        self._pair(m, None, family, st, lo, hi, param, str(mechanism))

    def _report(self, report: Report, dense_mask: np.ndarray | None) -> None:
        """A dense report (the prefix recorder): the base class builds the :class:`Report`."""
        self._pair(report.rep.size, dense_mask, report.kind if report.kind in ("laplace", "gaussian") else None,
                   report.st, report.lo, report.hi, report.param, report.mechanism)

    def _pair(self, m, dense_mask, family, st, lo, hi, param, mechanism) -> None:
        for pos, i in enumerate(self._open):  # oldest unpaired first, as ReleaseTracer pairs them
            d = self._pending[i]
            if dense_mask is not None:
                if d.shape != dense_mask.shape:
                    continue
                elems = np.flatnonzero(dense_mask.reshape(-1))
            elif d.stat.size != m:
                continue
            else:
                elems = None
            del self._open[pos]
            report = (family, np.array(np.broadcast_to(st, (m,)), dtype=np.int64),
                      np.array(np.broadcast_to(lo, (m,)), dtype=np.int64),
                      np.array(np.broadcast_to(hi, (m,)), dtype=np.int64),
                      np.array(np.broadcast_to(param, (m,)), dtype=float), mechanism)
            if d.out is None:
                self._waiting.setdefault(d.index, []).append((report, elems))
            else:
                self._pending.pop(d.index, None)
                self._file(d, report, elems)
            return
        self.orphans.append(mechanism)

    def _file(self, d: Draw, report: tuple, elems: np.ndarray | None) -> None:
        family, st, lo, hi, scale, mechanism = report
        if d.exact or family is None or family != d.family:
            self.skipped += lo.size
            return
        stat, out = (d.stat, d.out) if elems is None else (d.stat[elems], d.out[elems])
        self.residuals.setdefault((mechanism, family), []).append(((out - stat) / scale, st, lo, hi))


_KINDS = {0: "laplace", 1: "gaussian"}
"""Ledger kinds whose law the test knows (tracing._KIND_NAMES; 3, the exact mode's discrete Laplace, and
2, zCDP, are left out)."""


def _lower_p(family: str, s: float, n: int) -> float:
    """P(S' <= s) for S' the sum of n |Laplace(1)| (Gamma(n, 1)) or of n squared N(0, 1) (chi^2_n)."""
    if family == "laplace":
        return float(special.gammainc(n, s))
    return float(special.gammainc(n / 2.0, s / 2.0))


def far_law(tracer: FarLawTracer, alpha: float = FAR_LAW_ALPHA) -> FarLawResult:
    """Test every group of ``tracer``'s residuals for noise smaller than reported (module docstring)."""
    groups = []  # (mechanism, family, axis, octave, tail, values)
    releases = 0
    skipped = tracer.skipped
    for (mech, family), parts in sorted(tracer.residuals.items()):
        z, st, lo, hi = (np.concatenate([p[i] for p in parts]) for i in range(4))
        ok = np.isfinite(z)  # a report of scale 0 or inf tests nothing here (the ledger audits judge it)
        skipped += int((~ok).sum())
        z, st, lo, hi = z[ok], st[ok], lo[ok], hi[ok]
        releases += z.size
        s = np.abs(z) if family == "laplace" else z * z
        octaves = {"position": np.floor(np.log2(np.maximum(hi, 1))).astype(np.int64),
                   "size": np.floor(np.log2(np.maximum(hi - lo, 1))).astype(np.int64)}
        for axis, octave in octaves.items():
            seen = np.unique(octave)
            for o in seen:
                groups.append((mech, family, axis, int(o), False, s[octave == o]))
                if o != seen[0]:  # the tail from the first octave is the whole group: tested once, below
                    groups.append((mech, family, axis, int(o), True, s[octave >= o]))
        # per stream (arm) of this mechanism alone: an error keyed to an arm index, not diluted by the
        # stream's other mechanisms (the white-box per-stream law pools them)
        streams = np.unique(st)
        if streams.size > 1:
            for k in streams:
                groups.append((mech, family, "stream", int(k), False, s[st == k]))
                if k != streams[0]:  # every stream from this index on: an error keyed to "arms >= k"
                    groups.append((mech, family, "stream", int(k), True, s[st >= k]))
        groups.append((mech, family, "position", int(0), True, s))
    groups = [g for g in groups if g[5].size >= _MIN_GROUP]
    share = alpha / max(1, len(groups))
    if groups:
        spend("far noise law", alpha)
    findings = []
    for mech, family, axis, octave, tail, values in groups:
        n, total = values.size, float(values.sum())
        p = _lower_p(family, total, n)
        if p < share:
            findings.append(FarLawFinding(mech, family, axis, octave, tail, n, total / n, p, share))
    findings.sort(key=lambda f: f.p)
    return FarLawResult(releases, len(groups), alpha, findings, skipped)
