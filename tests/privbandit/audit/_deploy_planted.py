"""Round 10's planted bugs on the deployment path (privbandit.deploy), as Deployment subclasses, and the
driver that serves a store with holds and restarts (bench/audit_planted_bugs.py holds the same zoo)."""

from __future__ import annotations

import json
import time

import numpy as np

from privbandit.deploy.deployment import Decision, Deployment
from privbandit.deploy.odometer import Odometer
from privbandit.policies import make_policy


class FilterOnePast(Deployment):
    """filter: the filter lets one policy round through past the budget (``>`` for ``>=``)."""

    def __init__(self, path, conn, config):
        super().__init__(path, conn, config)
        self.stop_round += 1


class HoldRedraws(Deployment):
    """releases / replay: a hold asks the policy again for the open round (noise re-drawn, logged as none)."""

    def select(self):
        def body():
            info = self._info()
            if info["open_decision"] is None or info["rounds"] >= self.stop_round:
                return None
            state = self._load(info)
            arm = int(state["run"].select(info["rounds"])[0])
            cur = self._conn.execute(
                "INSERT INTO decisions (round, arm, kind, releases, state_digest, created) VALUES (?, ?, ?, ?, ?, ?)",
                (None, arm, "hold", json.dumps([0] * self.n_arms), info["digest"], time.time()))
            self._write(info, state, info["rounds"], info["open_decision"])
            return Decision(cur.lastrowid, arm, "hold", None)

        d = self._call(body)
        return d if d is not None else super().select()


class ResumeReseeds(Deployment):
    """replay: reopening re-seeds the generator from the configured seed (the first rounds' noise again)."""

    @classmethod
    def open(cls, path):
        dep = super().open(path)
        state = dep.snapshot()
        state["rng"].bit_generator.state = np.random.default_rng(
            np.random.SeedSequence(int(dep.config["seed"]))).bit_generator.state
        return dep


def serve(cls, path, *, decisions: int = 40, seed: int = 7, rounds_afforded: int = 20) -> str | None:
    """A gaussian_ts (c = 4) store whose budget affords ``rounds_afforded`` rounds, served ``decisions``
    times: a hold before every third update, a restart every fourth decision. Returns None, or the
    message with which the deployment refused to go on after a restart (session 14: its counters or
    release counts disagree with its log, ``LogMismatch``); the store is then audited as it stands."""
    from privbandit.deploy.deployment import LogMismatch

    pol = make_policy("gaussian_ts", c=4.0)
    budget = Odometer(pol, 200, 2, 1e-6).epsilon(rounds_afforded)
    dep = cls.create(path, "gaussian_ts", params={"c": 4.0}, n_arms=2, budget=budget, delta=1e-6, horizon=200,
                     seed=seed)
    rng = np.random.default_rng(seed)
    try:
        for i in range(decisions):
            d = dep.select()
            if i % 3 == 0:
                dep.select()
            dep.update(d.decision, float(rng.random() < (0.6 if d.arm == 0 else 0.4)))
            if i % 4 == 3:
                dep.close()
                dep = cls.open(path)
    except LogMismatch as exc:
        return str(exc)
    finally:
        dep.close()
    return None
