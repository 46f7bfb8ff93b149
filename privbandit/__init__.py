"""privbandit: privacy accounting for differentially private multi-armed bandits.

Layers (DESIGN.md): ``accountants`` (events -> certified (eps, delta)) is a sibling package with no
bandit knowledge; here live the instrumented noise mechanisms, the per-record ledger, policies,
environments, the simulation engine, budgets, audits and the command line.
"""

__version__ = "0.1.0"


from privbandit.engine import simulate  # noqa: E402  (the main entry point)
from privbandit.sweep import sweep  # noqa: E402

__all__ = ["simulate", "sweep", "__version__"]
