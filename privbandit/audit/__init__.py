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

from privbandit.audit import certify, scores, stats
from privbandit.audit.certify import GDP, Claim, EpsAtDelta
from privbandit.audit.contextual import contextual_whitebox_audit
from privbandit.audit.core import VERDICTS, Audit, AuditResult, Budget
from privbandit.audit.exact import (ActionDistribution, PrivacyProfile, action_distribution, bounds_ladder,
                                    exact_epsilon)
from privbandit.audit.ledger_audit import LedgerAuditResult, ledger_audit
from privbandit.audit.mechanisms import clipped_sum_laplace, gaussian_release, laplace_release
from privbandit.audit.neighbours import NeighbourPair, Neighbours
from privbandit.audit.one_run import OneRunResult, one_run_audit, one_run_mechanism_audit
from privbandit.audit.runner import (MechanismSampler, PolicySampler, auto_trace, run_policy, trace_attribute,
                                     trace_method)
from privbandit.audit.tracing import ReleaseTracer, release_trace
from privbandit.audit.whitebox import WhiteBoxResult, probe_horizon, whitebox_audit
from privbandit.audit.graph import graph_whitebox_audit
from privbandit.audit.deployment import DeploymentAuditResult, deployment_audit

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
