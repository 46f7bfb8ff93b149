"""Bandit policies: non-private baselines and the private algorithms of the source papers.

``REGISTRY`` maps the command-line name of every policy to its class; ``make_policy`` builds one
from keyword parameters (the class validates them).
"""

from __future__ import annotations

import inspect

from accountants._validate import shown, unknown_name
from privbandit.policies.adversarial import BatchedPrivateEXP3, DPEXP3Lap, EXP3, EXP3Tau, PrivateEXP3
from privbandit.policies.base import Policy, PolicyRun
from privbandit.policies.dp_ucb import DPUCB, DPUCBBound, DPUCBInt
from privbandit.policies.elimination import DPSE, AnytimeLazyUCB
from privbandit.policies.gaussian_ts import GaussianTS
from privbandit.policies.graph import TSN, UCBN, TSMaxN, UCBMaxN
from privbandit.policies.graph_private import DPUCBN, GaussianTSN, LazyDPTSN
from privbandit.policies.hu_hegde import DPTS, LazyDPTS
from privbandit.policies.linear import JointDPLinUCB, LinTS, LinUCB, PrivateLinTS, PrivateLinUCB
from privbandit.policies.private_ts import PrivateTS
from privbandit.policies.private_ucb import PrivateUCB
from privbandit.policies.thompson import BetaTS
from privbandit.policies.ucb import KLUCB, UCB1

REGISTRY: dict[str, type[Policy]] = {
    UCB1.name: UCB1,
    KLUCB.name: KLUCB,
    BetaTS.name: BetaTS,
    GaussianTS.name: GaussianTS,
    DPTS.name: DPTS,
    LazyDPTS.name: LazyDPTS,
    PrivateTS.name: PrivateTS,
    PrivateUCB.name: PrivateUCB,
    DPUCBBound.name: DPUCBBound,
    DPUCB.name: DPUCB,
    DPUCBInt.name: DPUCBInt,
    DPSE.name: DPSE,
    AnytimeLazyUCB.name: AnytimeLazyUCB,
    LinUCB.name: LinUCB,
    LinTS.name: LinTS,
    PrivateLinUCB.name: PrivateLinUCB,
    PrivateLinTS.name: PrivateLinTS,
    JointDPLinUCB.name: JointDPLinUCB,
    EXP3.name: EXP3,
    DPEXP3Lap.name: DPEXP3Lap,
    EXP3Tau.name: EXP3Tau,
    PrivateEXP3.name: PrivateEXP3,
    BatchedPrivateEXP3.name: BatchedPrivateEXP3,
    UCBN.name: UCBN,
    UCBMaxN.name: UCBMaxN,
    TSN.name: TSN,
    TSMaxN.name: TSMaxN,
    LazyDPTSN.name: LazyDPTSN,
    DPUCBN.name: DPUCBN,
    GaussianTSN.name: GaussianTSN,
}


def register(cls: type[Policy]) -> type[Policy]:
    """Add a policy class to ``REGISTRY`` under its ``name`` (usable as a decorator)."""
    REGISTRY[cls.name] = cls
    return cls


def policy_class(name: str) -> type[Policy]:
    """The class registered as ``name`` (case-insensitive, ``-`` read as ``_``), or a ValueError
    naming the close matches. The one lookup of a policy name (make_policy, budget, invert)."""
    key = name.replace("-", "_").lower() if isinstance(name, str) else None  # (name.replace: an AttributeError)
    if key not in REGISTRY:
        raise unknown_name("policy", name, REGISTRY, "privbandit.policies.REGISTRY")
    return REGISTRY[key]


def _unknown_parameter(cls: type[Policy], params: dict) -> ValueError | None:
    """The error for the first of ``params`` that ``cls`` does not take (None when all are taken, or
    when its signature accepts any keyword): the close names, or that it takes none. Python's own
    TypeError named neither ("DPUCBInt.__init__() got an unexpected keyword argument 'c'", "UCB1()
    takes no arguments" -- not even the name given; session 13)."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    accepted = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted):
        return None
    known = [p.name for p in accepted if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    for key in params:
        if key not in known:
            if not known:
                return ValueError(f"{cls.name} takes no parameters, got {shown(key)}")
            return unknown_name(f"{cls.name} parameter", key, known, f"{cls.name}'s parameters")
    return None


def make_policy(name: str, **params) -> Policy:
    """The policy registered as ``name``, configured with ``params``."""
    cls = policy_class(name)
    key = cls.name
    unknown = _unknown_parameter(cls, params)
    if unknown is not None:
        raise unknown
    try:
        return cls(**params)
    except TypeError as exc:  # (a class whose signature hides a keyword it refuses)
        raise ValueError(f"bad parameters for {key}: {exc}") from None


__all__ = ["Policy", "PolicyRun", "BetaTS", "GaussianTS", "DPTS", "LazyDPTS", "PrivateTS", "PrivateUCB",
           "DPUCBBound", "DPUCB", "DPUCBInt", "DPSE", "AnytimeLazyUCB", "KLUCB", "UCB1", "EXP3", "DPEXP3Lap", "EXP3Tau", "PrivateEXP3", "BatchedPrivateEXP3",
           "UCBN", "UCBMaxN", "TSN", "TSMaxN", "LazyDPTSN", "DPUCBN", "GaussianTSN",
           "LinUCB", "LinTS", "PrivateLinUCB", "PrivateLinTS", "JointDPLinUCB", "REGISTRY", "register", "make_policy"]
