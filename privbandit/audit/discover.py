"""Which private policies exist: the registry plus every Policy subclass defined in privbandit.policies.

The ledger audit and the audit table run over this list, so a policy is audited as soon as its module
lands, registered or not.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil


def private_policies() -> dict[str, type]:
    """{name: class} of every concrete private policy (registry first, then module scan)."""
    import privbandit.policies as pkg
    from privbandit.policies import REGISTRY
    from privbandit.policies.base import Policy

    found = {name: cls for name, cls in REGISTRY.items() if getattr(cls, "private", False)}
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for cls in vars(module).values():
            if (inspect.isclass(cls) and issubclass(cls, Policy) and cls.__module__ == module.__name__
                    and getattr(cls, "private", False) and not inspect.isabstract(cls)
                    and not cls.__name__.startswith("_") and "name" in vars(cls)):
                # a class that does not name itself is a shared base (e.g. PrivateLinearPolicy, whose
                # inherited name "policy" is no policy): its named subclasses are audited instead
                found.setdefault(cls.name, cls)
    return dict(sorted(found.items()))


def default_constructible(cls) -> bool:
    """True when ``cls()`` needs no arguments."""
    try:
        inspect.signature(cls).bind()
    except TypeError:
        return False
    return True
