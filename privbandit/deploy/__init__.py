"""Deploy a private policy online: persistent decisions, a privacy filter and odometer, crash-safe
storage in SQLite (docs/deploy.md).

>>> from privbandit import deploy
>>> dep = deploy.create("store.db", "lazy_dp_ts", params={"epsilon": 0.5}, n_arms=3, budget=1.0,
...                     delta=1e-6, seed=1)                                    # doctest: +SKIP
>>> d = dep.select(); dep.update(d.decision, 1.0); dep.status()["spent_epsilon"]  # doctest: +SKIP

Modules: :mod:`~privbandit.deploy.store` (schema, transactions, snapshots),
:mod:`~privbandit.deploy.odometer` (filter and odometer: which theorem certifies what),
:mod:`~privbandit.deploy.deployment` (select / update / status), :mod:`~privbandit.deploy.replay`
(feed a logged reward table through a deployment), :mod:`~privbandit.deploy.cli` (the
``privbandit deploy`` subcommand).
"""

from __future__ import annotations

from privbandit.deploy.deployment import BudgetExhausted, Decision, Deployment, UpdateResult, check_reward
from privbandit.deploy.store import SCHEMA_VERSION, StoreError, StoreUnavailable

create = Deployment.create
open = Deployment.open  # noqa: A001 (deploy.open(path), like sqlite3.connect / shelve.open)

__all__ = ["Deployment", "Decision", "UpdateResult", "BudgetExhausted", "StoreError", "StoreUnavailable", "SCHEMA_VERSION",
           "create", "open", "check_reward"]
