"""Audits: prove the toolkit spends what it claims -- or refute it.

* Black-box (:class:`Audit`): run a mechanism or a policy many times on neighbouring inputs, select an
  output event on one sample, certify it on fresh samples with Clopper-Pearson bounds, alpha split
  over every certificate (AUDIT.md). Verdicts: VIOLATION / CONSISTENT / INCONCLUSIVE -- audits
  refute, they never certify.
* White-box (:func:`ledger_audit`): the realized per-record spend of many runs never exceeds the
  certified schedule, and no statistic is released twice.
* White-box, coupled (:func:`whitebox_audit`): every release traced (:class:`ReleaseTracer`), a run on
  D and one on a neighbour D' with the same seed and D's released values; decisions, unreported
  releases, sensitivities, footprints, re-draws and the noise law checked without trusting the
  reports. Contextual policies (:func:`contextual_whitebox_audit`): the same coupled checks on a
  contextual tape (fixed contexts and rewards per round), at the neighbouring relation each policy
  certifies, every vector-tree node traced with its exact node sum. Graph-feedback policies
  (:func:`graph_whitebox_audit`): the same checks with side observations on a feedback graph, one
  entry or one round's whole vector changed, per-stream footprints, the ledger's round tags, and the
  round certificate on a starving graph sequence.
* Deployments (:func:`deployment_audit`): a live store's filter, rounds, releases and realized spend,
  and a replay of its logged policy rounds from the seed (privbandit.deploy).
* Known answers (:mod:`privbandit.audit.exact`): the exact law of 2-arm Gaussian TS's arm sequence
  for small horizons, its exact (eps, delta) between two tapes, and the bounds ladder
  audit <= exact <= claim.
* One run (:mod:`privbandit.audit.one_run`): Steinke, Nasr & Jagielski's canary audit, a smoke test
  for policies too expensive to run millions of times.
"""

import importlib

# eager: the function's name is also its module's, and the first import of the module (by another audit module)
# would set the package's attribute to the module, which __getattr__ below is never asked to correct (~9 ms)
from privbandit.audit.ledger_audit import LedgerAuditResult, ledger_audit

#: each public name and the submodule that defines it (None: the submodule itself). Imported on first use
#: (PEP 562): importing the package -- as ``privbandit.audit.cli`` does to build every CLI call's parser --
#: cost ~0.5 s CPU of scipy.stats & co. in each one-shot ``privbandit`` call that audits nothing (session 16)
_EXPORTS = {
    "certify": None, "scores": None, "stats": None,
    "GDP": "certify", "Claim": "certify", "EpsAtDelta": "certify",
    "contextual_whitebox_audit": "contextual",
    "VERDICTS": "core", "Audit": "core", "AuditResult": "core", "Budget": "core",
    "ActionDistribution": "exact", "PrivacyProfile": "exact", "action_distribution": "exact",
    "bounds_ladder": "exact", "exact_epsilon": "exact",
    "clipped_sum_laplace": "mechanisms", "gaussian_release": "mechanisms", "laplace_release": "mechanisms",
    "NeighbourPair": "neighbours", "Neighbours": "neighbours",
    "OneRunResult": "one_run", "one_run_audit": "one_run", "one_run_mechanism_audit": "one_run",
    "MechanismSampler": "runner", "PolicySampler": "runner", "auto_trace": "runner", "run_policy": "runner",
    "trace_attribute": "runner", "trace_method": "runner",
    "ReleaseTracer": "tracing", "release_trace": "tracing",
    "WhiteBoxResult": "whitebox", "probe_horizon": "whitebox", "whitebox_audit": "whitebox",
    "graph_whitebox_audit": "graph",
    "DeploymentAuditResult": "deployment", "deployment_audit": "deployment",
}


def __getattr__(name: str):
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    if module is None:
        return importlib.import_module(f"{__name__}.{name}")  # (the import sets the package's attribute)
    value = globals()[name] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "Audit", "AuditResult", "Budget", "Claim", "EpsAtDelta", "GDP", "VERDICTS", "Neighbours", "NeighbourPair",
    "MechanismSampler", "PolicySampler", "run_policy", "trace_method", "trace_attribute", "auto_trace",
    "laplace_release", "gaussian_release", "clipped_sum_laplace", "ledger_audit", "LedgerAuditResult",
    "certify", "scores", "stats",
    "ActionDistribution", "PrivacyProfile", "action_distribution", "exact_epsilon", "bounds_ladder",
    "OneRunResult", "one_run_audit", "one_run_mechanism_audit",
    "ReleaseTracer", "release_trace", "WhiteBoxResult", "whitebox_audit", "probe_horizon",
    "contextual_whitebox_audit", "graph_whitebox_audit", "deployment_audit", "DeploymentAuditResult",
]
