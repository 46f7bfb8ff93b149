"""Session 18 (s18/fuzz): round 4 of ``bench/fuzz_inputs.py`` -- numbers in other clothes, pickling, and
objects used after a failed call. Run through the main script:

    PYTHONPATH=. python bench/fuzz_inputs.py --only numtypes,pickle,afterfail

* ``numtypes`` -- every numeric parameter of every public constructor and budget function (``privbandit.budget``,
  the accountants' events, accountants and functions, every registry policy, every environment) given its own
  valid value as a numpy scalar, a 0-d array, a Fraction, a Decimal, a float32; and ``True``, ``10**400``,
  ``-10**400``, ``2**64``. A numpy scalar equal to the plain value must be accepted (refusing it is the finding
  ``refused``); a 0-d array, a Fraction, a Decimal may be refused by name; any of them accepted must give the
  plain value's result exactly (else ``differs``); ``True`` is no number (``accepted`` if taken); float32 and
  the huge integers are refused by name or accepted, never a traceback.
* ``pickle`` -- every public object (policies, runs mid-way, results, accountants, ledgers, events,
  environments, certificates, a deployment and its decisions) pickled, unpickled and used: the copy must go on
  exactly as the original (``differs``); an object that cannot be pickled must say so in a TypeError naming it.
* ``afterfail`` -- a call refused mid-run (a policy run's ``update`` with bad arms / rewards / round, an
  accountant's ``compose`` of a composition with an unsupported or invalid part, a deployment's ``update`` with
  a bad reward or decision) must leave the object as it was: it then goes on exactly as a twin never given the
  bad call (else the finding ``halfupdated``).
"""

from __future__ import annotations

import decimal
import fractions
import math
import pickle

import numpy as np

ROUND4_FINDINGS = ("differs", "halfupdated")


# --- numtypes ------------------------------------------------------------------------------------
def _clothes(v) -> list[tuple[str, object, str]]:
    """``v`` (a plain valid int or float) in other clothes: (label, value, kind); kind "same" -- equal to ``v``
    and a type the package takes (accepted, same result); "either" -- equal to ``v``, may be refused by name
    (Fraction, Decimal, a 0-d array: session 16 let every entry point refuse those by name), the same result
    when accepted; "rounded" -- float32, another number: accepted or refused, never a traceback; "bad" -- not
    a number (a bool); "edge" -- a huge int."""
    out: list[tuple[str, object, str]] = []
    if isinstance(v, int):
        out += [("int64", np.int64(v), "same"), ("0-d int64", np.array(v), "either"), ("float", float(v), "either")]
        if 0 <= v < 2**16:
            out.append(("uint16", np.uint16(v), "same"))
    else:
        out += [("float64", np.float64(v), "same"), ("0-d float64", np.array(v), "either"),
                ("float32", np.float32(v), "rounded")]
    out += [("Fraction", fractions.Fraction(v), "either"), ("Decimal", decimal.Decimal(v), "either"),
            ("True", True, "bad"), ("np.True_", np.bool_(True), "bad"), ("10**400", 10**400, "edge"),
            ("-10**400", -(10**400), "edge"), ("2**64", 2**64, "edge")]
    return out


def _plain(v) -> bool:
    return type(v) in (int, float)


def _fingerprint(x):
    """A comparable digest of a call's result (arrays to bytes, objects to their attributes' digests)."""
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (list, tuple)):
        return tuple(_fingerprint(y) for y in x)
    if isinstance(x, dict):
        return tuple(sorted((str(k), _fingerprint(y)) for k, y in x.items()))
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if hasattr(x, "__dataclass_fields__"):
        return (type(x).__name__, tuple((f, _fingerprint(getattr(x, f))) for f in x.__dataclass_fields__))
    if isinstance(x, (int, float, str, bytes, bool, type(None), np.generic)):
        return x
    return repr(x)


def _sim(policy, env, rounds=12):
    from privbandit import simulate

    r = simulate(policy, env, rounds, 2, seed=0, progress=False)
    return r.regret_mean, r.pulls_mean if hasattr(r, "pulls_mean") else None


def _numtype_targets():
    """(entry, callable(**kw) -> result digest, base keyword arguments) for every public numeric entry point."""
    import accountants as A
    from privbandit import budget
    from privbandit.contextual import LinearContextual
    from privbandit.envs import (BarabasiAlbert, Bernoulli, ClippedGaussian, DisjointCliques, ErdosRenyi,
                                 GraphFeedback, OneMemoryAdversary, PlantedPartition, TruncatedExponential,
                                 auer_lower_bound, shifted_stochastic, switching_best_arm)
    from privbandit.policies import REGISTRY, make_policy

    pol = make_policy("dp_ucb", epsilon=1.0)
    targets = []
    for name, cls in sorted(REGISTRY.items()):
        import inspect

        base = {p: d.default for p, d in inspect.signature(cls).parameters.items()
                if _plain(d.default) and not isinstance(d.default, bool)}

        def run_policy(name=name, **kw):
            p = make_policy(name, **kw)
            out = [_sim(p, _env_for(p))]
            if p.private:
                out.append(budget.epsilon(p, 100, 1e-6, 2).value)
            return out

        targets.append((f"policy {name}", run_policy, base))
    ucb = make_policy("ucb1")
    targets += [
        ("budget.epsilon", lambda **k: budget.epsilon(pol, **k), dict(horizon=100, delta=1e-6, n_arms=2)),
        ("budget.delta", lambda **k: budget.delta(pol, **k), dict(horizon=100, epsilon=1.0, n_arms=2)),
        ("budget.mu", lambda **k: budget.mu(make_policy("gaussian_ts", c=4.0), **k), dict(horizon=100, n_arms=2)),
        ("budget.curve", lambda **k: budget.curve(pol, [10, 100], **k), dict(delta=1e-6, n_arms=2, max_evaluations=256)),
        ("budget.invert", lambda **k: budget.invert("dp_ucb_int", solve_for="v", **k),
         dict(target=1.0, horizon=100, bounds=(1.01, 1.99), delta=1e-6, n_arms=2)),
        ("budget.affordable_horizon", lambda **k: budget.affordable_horizon(pol, **k),
         dict(target=5.0, n_arms=2, delta=1e-6, max_horizon=10**4)),
        ("budget.ts_frontier", lambda **k: budget.ts_frontier(bs=[0, 4], **k), dict(target=5.0, horizon=100, n_arms=2,
                                                                                    delta=1e-6)),
        ("budget.tune", lambda **k: budget.tune([pol, make_policy("dp_ucb", epsilon=2.0)], Bernoulli([0.3, 0.6]), **k)[1],
         dict(horizon=30, target=50.0, delta=1e-6, replicates=2, seed=0)),
        # accountants: events (through best_epsilon of three of them), accountants, functions
        ("accountants.Laplace", lambda **k: A.best_epsilon(A.Laplace(**k) * 3, 1e-6).value, dict(scale=1.0, sensitivity=1.0)),
        ("accountants.Gaussian", lambda **k: A.best_epsilon(A.Gaussian(**k) * 3, 1e-6).value, dict(sigma=2.0, sensitivity=1.0)),
        ("accountants.DiscreteLaplace", lambda **k: A.best_epsilon(A.DiscreteLaplace(**k) * 3, 1e-6).value,
         dict(scale=1.0, sensitivity=1.0, grid=2.0**-20)),
        ("accountants.DiscreteGaussian", lambda **k: A.best_epsilon(A.DiscreteGaussian(**k) * 3, 1e-6).value,
         dict(sigma=2.0, sensitivity=1.0, grid=2.0**-20)),
        ("accountants.PureDP", lambda **k: A.best_epsilon(A.PureDP(**k) * 3, 1e-6).value, dict(epsilon=0.5)),
        ("accountants.ApproxDP", lambda **k: A.best_epsilon(A.ApproxDP(**k) * 3, 1e-5).value, dict(epsilon=0.5, delta=1e-7)),
        ("accountants.GDP", lambda **k: A.best_epsilon(A.GDP(**k) * 3, 1e-6).value, dict(mu=0.5)),
        ("accountants.ZCDP", lambda **k: A.best_epsilon(A.ZCDP(**k) * 3, 1e-6).value, dict(rho=0.1)),
        ("accountants.SelfComposed", lambda **k: A.best_epsilon(A.SelfComposed(A.Laplace(1.0), **k), 1e-6).value,
         dict(count=3)),
        ("accountants.compose", lambda **k: A.PureAccountant().compose(A.Laplace(1.0), **k).epsilon(0.0), dict(count=3)),
        ("accountants.PLDAccountant", lambda **k: A.PLDAccountant(**k).compose(A.Laplace(1.0), 3).epsilon(1e-6),
         dict(value_discretization_interval=1e-3, max_bins=2**21)),
        ("accountants.best_epsilon", lambda **k: A.best_epsilon(A.Laplace(1.0) * 3, **k).value, dict(delta=1e-6)),
        ("accountants.best_delta", lambda **k: A.best_delta(A.Laplace(1.0) * 3, **k).value, dict(epsilon=2.0)),
        ("accountants.epsilon", lambda **k: A.RDPAccountant().compose(A.Gaussian(2.0), 3).epsilon(**k), dict(delta=1e-6)),
        ("accountants.delta", lambda **k: A.RDPAccountant().compose(A.Gaussian(2.0), 3).delta(**k), dict(epsilon=2.0)),
        ("accountants.advanced_composition_epsilon", lambda **k: A.advanced_composition_epsilon([0.1] * 5, **k),
         dict(delta_prime=1e-6)),
        ("accountants.calibrate", lambda **k: A.calibrate(lambda s: 1.0 / s, increasing=False, **k),
         dict(target=0.5, lower=0.5, upper=10.0, xtol=1e-9)),
        # environments (run by ucb1 for 12 rounds)
        ("env ClippedGaussian", lambda **k: _sim(ucb, ClippedGaussian([0.3, 0.6], **k)), dict(scale=0.1)),
        ("env Bernoulli means[0]", lambda **k: _sim(ucb, Bernoulli([k["m"], 0.6])), dict(m=0.3)),
        ("env TruncatedExponential rates[0]", lambda **k: _sim(ucb, TruncatedExponential([k["r"], 1.0])), dict(r=2.0)),
        ("env OneMemoryAdversary", lambda **k: _sim(ucb, OneMemoryAdversary(np.full((20, 2), 0.5), **k)), dict(cost=0.5)),
        ("env auer_lower_bound", lambda **k: _sim(ucb, auer_lower_bound(**k)), dict(horizon=20, n_arms=3, gap=0.1, seed=0)),
        ("env shifted_stochastic", lambda **k: _sim(ucb, shifted_stochastic(before=[0.3, 0.6], after=[0.6, 0.3], **k)),
         dict(horizon=20, shift_at=10, seed=0)),
        ("env switching_best_arm", lambda **k: _sim(ucb, switching_best_arm(**k)),
         dict(horizon=20, n_arms=3, segments=2, high=0.7, low=0.3, seed=0)),
        ("env GraphFeedback", lambda **k: _sim(make_policy("ucb_n"), GraphFeedback(Bernoulli([0.3, 0.6, 0.5]),
                                                                                  ErdosRenyi(3, 0.5), **k)),
         dict(graph_seed=0)),
        ("env ErdosRenyi", lambda **k: _sim(make_policy("ucb_n"), GraphFeedback(Bernoulli([0.3, 0.6, 0.5]), ErdosRenyi(**k))),
         dict(n=3, p=0.5)),
        ("env BarabasiAlbert", lambda **k: _sim(make_policy("ucb_n"), GraphFeedback(Bernoulli([0.3] * 4), BarabasiAlbert(**k))),
         dict(n=4, m=2)),
        ("env PlantedPartition", lambda **k: _sim(make_policy("ucb_n"), GraphFeedback(Bernoulli([0.3] * 4),
                                                                                     PlantedPartition(**k))),
         dict(n=4, groups=2, p_in=0.8, p_out=0.1)),
        ("env DisjointCliques", lambda **k: _sim(make_policy("ucb_n"), GraphFeedback(Bernoulli([0.3] * 4),
                                                                                    DisjointCliques(**k))),
         dict(n=4, size=2)),
        ("env LinearContextual", lambda **k: _sim(make_policy("lin_ucb"), LinearContextual(**k)),
         dict(dim=3, n_arms=2, noise=0.1, theta_seed=0)),
    ]
    return targets


def _env_for(pol, k=2):
    """fuzz_inputs._env_for (imported here: this module is loaded by fuzz_inputs.main, which runs as __main__)."""
    from fuzz_inputs import _env_for as env_for

    return env_for(pol, k)


def fuzz_numtypes(fz, quick: bool = False) -> None:
    for entry, fn, base in _numtype_targets():
        try:
            reference = _fingerprint(fn(**base))
        except Exception as exc:  # noqa: BLE001 -- the plain call itself failing is a bug of this table
            fz.results.append((f"numtypes {entry}", "plain values", "traceback", f"{type(exc).__name__}: {exc}"[:200]))
            continue
        for param, v in base.items():
            if isinstance(v, tuple):  # bounds: each end in other clothes
                items = [(f"{param}[{i}]", i) for i in range(len(v))]
            else:
                items = [(param, None)]
            for label_param, index in items:
                plain = v if index is None else v[index]
                if quick and label_param not in ("scale", "epsilon", "horizon", "delta", "n", "count"):
                    continue
                for label, value, kind in _clothes(plain):
                    arg = value if index is None else tuple(value if i == index else x for i, x in enumerate(v))

                    def case(fn=fn, base=base, param=param, arg=arg, kind=kind):
                        got = _fingerprint(fn(**(base | {param: arg})))
                        if kind in ("same", "either") and got != reference:
                            raise _Differs(f"result differs from the plain value's: {str(got)[:80]} vs {str(reference)[:80]}")

                    outcome = fz.call(f"numtypes {entry}", f"{label_param}={label}", case, bad=kind == "bad",
                                      names=(param, param.rstrip("s"), "count", "times"), ok_required=kind == "same")
                    _mark(fz, outcome, "differs", _Differs)


class _Differs(Exception):
    pass


class _HalfUpdated(Exception):
    pass


def _mark(fz, outcome: str, finding: str, exc_type) -> None:
    if outcome == "traceback" and fz.results[-1][3].startswith(exc_type.__name__):
        fz.results[-1] = (*fz.results[-1][:2], finding, fz.results[-1][3])


# --- pickle --------------------------------------------------------------------------------------
def _roundtrip(obj):
    return pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def _drive(run, rounds, t0=1, reward_seed=7, k=2, replicates=3):
    """Drive a policy run ``rounds`` rounds from ``t0`` with fixed rewards; the arms it chose."""
    rng = np.random.default_rng(reward_seed)
    arms_seen = []
    for t in range(t0, t0 + rounds):
        arms = run.select(t)
        rewards = rng.random(replicates)
        run.update(t, arms, rewards)
        arms_seen.append(np.array(arms).tolist())
    return arms_seen


def fuzz_pickle(fz, tmp) -> None:
    import accountants as A
    from accountants.best import default_accountants
    from privbandit import budget, simulate, sweep
    from privbandit.deploy import Deployment
    from privbandit.envs import Bernoulli
    from privbandit.ledger import Ledger
    from privbandit.policies import REGISTRY, make_policy

    for name in sorted(REGISTRY):
        pol = make_policy(name)
        if pol.requires:
            continue

        def policy_case(pol=pol):
            copy = _roundtrip(pol)
            if _fingerprint(_sim(copy, _env_for(copy))) != _fingerprint(_sim(pol, _env_for(pol))):
                raise _Differs("a simulation with the unpickled policy differs")
            if pol.private and budget.epsilon(copy, 100, 1e-6, 2).value != budget.epsilon(pol, 100, 1e-6, 2).value:
                raise _Differs("the unpickled policy's certificate differs")

        _mark(fz, fz.call("pickle policy", name, policy_case, bad=False), "differs", _Differs)

        def run_case(pol=pol):
            ledger = Ledger(3, 2) if pol.private and pol.records_releases else None
            run = pol.start(2, 3, 50, np.random.default_rng(5), ledger=ledger)
            _drive(run, 5)
            copy = _roundtrip(run)
            a, b = _drive(run, 10, t0=6), _drive(copy, 10, t0=6)
            if a != b:
                raise _Differs(f"the unpickled run chose other arms: {a[:3]} vs {b[:3]}")

        _mark(fz, fz.call("pickle policy run (mid-run)", name, run_case, bad=False), "differs", _Differs)
    env = Bernoulli([0.3, 0.6])
    res = simulate(make_policy("dp_ucb"), env, 40, 2, seed=1, progress=False)
    sw = sweep([make_policy("dp_ucb"), make_policy("ucb1")], [env], 30, 2, seed=0)

    def result_case():
        copy = _roundtrip(res)
        if _fingerprint(copy.summary()) != _fingerprint(res.summary()):
            raise _Differs("the unpickled result's summary differs")
        copy.save(tmp / "pickled_result.csv")
        from privbandit.saved import load_saved

        load_saved(tmp / "pickled_result.csv")

    _mark(fz, fz.call("pickle result", "SimulationResult", result_case, bad=False), "differs", _Differs)

    def sweep_case():
        copy = _roundtrip(sw)
        if _fingerprint(copy.summary()) != _fingerprint(sw.summary()):
            raise _Differs("the unpickled sweep's summary differs")

    _mark(fz, fz.call("pickle result", "SweepResult", sweep_case, bad=False), "differs", _Differs)
    events = [A.Laplace(1.0), A.Gaussian(2.0), A.PureDP(0.5), A.GDP(0.5), A.ZCDP(0.1), A.ApproxDP(0.5, 1e-7),
              A.DiscreteLaplace(1.0), A.DiscreteGaussian(2.0), A.Laplace(1.0) * 3 + A.Gaussian(2.0)]
    for ev in events:
        def event_case(ev=ev):
            copy = _roundtrip(ev)
            if copy != ev or hash(copy) != hash(ev):
                raise _Differs("the unpickled event is not equal to (or hashes apart from) the original")

        _mark(fz, fz.call("pickle event", repr(ev)[:40], event_case, bad=False), "differs", _Differs)
    for factory in list(default_accountants()) + [A.PLDAccountant, A.LaplaceExactAccountant]:
        def accountant_case(factory=factory):
            acc = factory()
            ev = A.Laplace(1.0) if acc.supports(A.Laplace(1.0)) else A.Gaussian(2.0)
            acc.compose(ev, 3)
            copy = _roundtrip(acc)
            acc.compose(ev, 2)
            copy.compose(ev, 2)
            for q in (1e-6, 0.0):
                a, b = acc.epsilon(q), copy.epsilon(q)
                if a != b and not (math.isnan(a) and math.isnan(b)):
                    raise _Differs(f"epsilon({q}) {a} (original) vs {b} (unpickled), after composing more")

        _mark(fz, fz.call("pickle accountant", factory.__name__, accountant_case, bad=False), "differs", _Differs)

    def ledger_case():
        pol = make_policy("dp_ucb")
        ledger = Ledger(2, 2)
        run = pol.start(2, 2, 50, np.random.default_rng(3), ledger=ledger)
        _drive(run, 5, replicates=2)
        copy = _roundtrip(ledger)
        if _fingerprint(copy.realized_epsilon(1e-6)) != _fingerprint(ledger.realized_epsilon(1e-6)):
            raise _Differs("the unpickled ledger's realized epsilon differs")

    _mark(fz, fz.call("pickle ledger", "Ledger after 5 rounds", ledger_case, bad=False), "differs", _Differs)

    def certificate_case():
        cert = budget.epsilon(make_policy("dp_ucb"), 100, 1e-6, 2)
        inv = budget.invert("dp_ucb_int", 1.0, 100, solve_for="v", bounds=(1.01, 1.99), delta=1e-6)
        for obj in (cert, inv):
            if _fingerprint(_roundtrip(obj)) != _fingerprint(obj):
                raise _Differs(f"the unpickled {type(obj).__name__} differs")

    _mark(fz, fz.call("pickle certificate", "Certificate, Inversion", certificate_case, bad=False), "differs", _Differs)

    def env_case():
        for e in (env, _roundtrip(env)):
            pass
        if _fingerprint(_sim(make_policy("ucb1"), _roundtrip(env))) != _fingerprint(_sim(make_policy("ucb1"), env)):
            raise _Differs("a simulation on the unpickled environment differs")

    _mark(fz, fz.call("pickle environment", "Bernoulli", env_case, bad=False), "differs", _Differs)
    # a deployment is an open store: pickling it must be refused by name (a copy would write to the store behind
    # the original's lock-free state); its decisions are plain values
    store = tmp / "pickle_store.db"
    dep = Deployment.create(store, "dp_ucb", n_arms=2, budget=5.0, delta=1e-6, seed=1)
    try:
        fz.call("pickle deployment", "Deployment (open)", lambda: pickle.dumps(dep), bad=True,
                names=("deployment", "pickle"))
        # (TypeError is the refusal here, not ValueError: relabelled below)
        if fz.results[-1][2] == "traceback" and fz.results[-1][3].startswith("TypeError") and \
                "deployment" in fz.results[-1][3].lower():
            fz.results[-1] = (*fz.results[-1][:2], "good", fz.results[-1][3])
        dec = dep.select()

        def decision_case():
            copy = _roundtrip(dec)
            if copy != dec:
                raise _Differs("the unpickled decision differs")
            dep.update(copy.decision, 0.5)

        _mark(fz, fz.call("pickle deployment", "Decision", decision_case, bad=False), "differs", _Differs)
    finally:
        dep.close()


# --- afterfail -----------------------------------------------------------------------------------
#: bad ``update`` calls on a policy run in round t (arms chosen: ``arms``; R = 3 replicates, K = 2 arms)
_BAD_UPDATES = {
    "arm out of range": lambda t, arms, r: (t, np.array([5, 0, 1]), r),
    "arm negative": lambda t, arms, r: (t, np.array([-1, 0, 1]), r),
    "arms too few": lambda t, arms, r: (t, np.asarray(arms)[:2], r),
    "arms float": lambda t, arms, r: (t, np.asarray(arms) + 0.5, r),
    "rewards too many": lambda t, arms, r: (t, arms, np.append(r, 0.5)),
    "reward nan": lambda t, arms, r: (t, arms, np.array([r[0], r[1], np.nan])),
    "reward 5 last": lambda t, arms, r: (t, arms, np.array([r[0], r[1], 5.0])),
    "rewards 2-d": lambda t, arms, r: (t, arms, np.stack([r, r])),
    "round 0": lambda t, arms, r: (0, arms, r),
}


def fuzz_afterfail(fz, tmp) -> None:
    import accountants as A
    from accountants.best import default_accountants
    from privbandit.deploy import Deployment
    from privbandit.ledger import Ledger
    from privbandit.policies import REGISTRY, make_policy

    for name in sorted(REGISTRY):
        pol = make_policy(name)
        if pol.requires:
            continue
        for label, bad in _BAD_UPDATES.items():
            def case(pol=pol, bad=bad):
                runs = []
                for _ in range(2):
                    ledger = Ledger(3, 2) if pol.private and pol.records_releases else None
                    runs.append((pol.start(2, 3, 60, np.random.default_rng(11), ledger=ledger), ledger))
                (a, la), (b, lb) = runs
                _drive(a, 4), _drive(b, 4)
                rng = np.random.default_rng(99)
                arms_a, arms_b = a.select(5), b.select(5)
                r = rng.random(3)
                refused = None
                try:
                    a.update(*bad(5, arms_a, r))
                except (ValueError, TypeError) as exc:
                    refused = exc
                if refused is None:
                    return  # accepted: the "accepted" finding, from call()'s bad=True
                a.update(5, arms_a, r)
                b.update(5, arms_b, r)
                x, y = _drive(a, 8, t0=6), _drive(b, 8, t0=6)
                if x != y:
                    raise _HalfUpdated(f"after the refused call ({type(refused).__name__}: {str(refused)[:60]}) the "
                                       f"run chose other arms than its twin: {x[:2]} vs {y[:2]}")
                if la is not None and _fingerprint(la.realized_epsilon(1e-6)) != _fingerprint(lb.realized_epsilon(1e-6)):
                    raise _HalfUpdated("after the refused call the ledger's realized epsilon differs from the twin's")
                raise ValueError(str(refused))  # -> good when it names what it refuses (the names check)

            outcome = fz.call(f"afterfail policy {name}", label, case, bad=label != "round 0",
                              names=("arm", "reward", "round", "t ", "shape", "replicate"))
            _mark(fz, outcome, "halfupdated", _HalfUpdated)
    # accountants: a composition refused part-way
    bad_events = {
        "unsupported part": lambda acc: A.Laplace(1.0) * 2 + next(e for e in (A.ZCDP(0.1), A.ApproxDP(0.5, 1e-7), A.GDP(0.5),
                                                                              A.DiscreteGaussian(2.0))
                                                           if not acc.supports(e)),
        "count -1": lambda acc: A.Laplace(1.0) * 2,
        "count 1.5": lambda acc: A.Laplace(1.0) * 2,
    }
    counts = {"unsupported part": 1, "count -1": -1, "count 1.5": 1.5}
    for factory in list(default_accountants()) + [A.PLDAccountant, A.LaplaceExactAccountant]:
        for label, make_bad in bad_events.items():
            def acc_case(factory=factory, make_bad=make_bad, count=counts[label]):
                a, b = factory(), factory()
                ev = A.Laplace(1.0) if a.supports(A.Laplace(1.0)) else A.Gaussian(2.0)
                a.compose(ev, 2)
                b.compose(ev, 2)
                try:
                    bad = make_bad(a)
                except StopIteration:
                    return  # supports every event: nothing to refuse
                if not a.supports(A.Laplace(1.0)) and label != "unsupported part":
                    bad = A.Gaussian(2.0) * 2
                refused = None
                try:
                    a.compose(bad, count)
                except (ValueError, TypeError) as exc:
                    refused = exc
                if refused is None:
                    return
                for acc in (a, b):
                    acc.compose(ev, 1)
                for q in (1e-6, 0.0):
                    x, y = a.epsilon(q), b.epsilon(q)
                    if x != y and not (math.isnan(x) and math.isnan(y)):
                        raise _HalfUpdated(f"after the refused compose ({str(refused)[:60]}) epsilon({q}) is {x}, "
                                           f"its twin's {y}")
                raise ValueError(str(refused))

            outcome = fz.call(f"afterfail accountant {factory.__name__}", label, acc_case, bad=True,
                              names=("count", "event", "support"))
            _mark(fz, outcome, "halfupdated", _HalfUpdated)
    # a deployment: an update refused must change nothing the next calls see
    for label, (decision_of, reward) in {"reward nan": (lambda d: d, math.nan), "reward text": (lambda d: d, "0.5"),
                                        "decision unknown": (lambda d: d + 1000, 0.5),
                                        "decision -1": (lambda d: -1, 0.5), "reward 1e400": (lambda d: d, 10**400),
                                        "decision bool": (lambda d: True, 0.5)}.items():
        def dep_case(decision_of=decision_of, reward=reward, label=label):
            paths = [tmp / f"afterfail_{label.replace(' ', '_')}_{i}.db" for i in range(2)]
            deps = [Deployment.create(p, "dp_ucb", n_arms=2, budget=50.0, delta=1e-6, seed=4, strict_rewards=True)
                    for p in paths]
            try:
                decs = [d.select() for d in deps]
                refused = None
                try:
                    deps[0].update(decision_of(decs[0].decision), reward)
                except (ValueError, TypeError) as exc:
                    refused = exc
                if refused is None:
                    return
                for d, dec in zip(deps, decs):
                    d.update(dec.decision, 0.5)
                seq = [[], []]
                for i, d in enumerate(deps):
                    for j in range(6):
                        x = d.select()
                        seq[i].append(x.arm)
                        d.update(x.decision, (j % 3) / 2)
                sts = [{k: v for k, v in d.status().items() if k not in ("path", "store")} for d in deps]
                if seq[0] != seq[1] or _fingerprint(sts[0]) != _fingerprint(sts[1]):
                    raise _HalfUpdated(f"after the refused update the store differs from its twin: arms {seq}, "
                                       f"status keys differing {[k for k in sts[0] if sts[0][k] != sts[1].get(k)]}")
                raise ValueError(str(refused))
            finally:
                for d in deps:
                    d.close()

        outcome = fz.call("afterfail deployment", label, dep_case, bad=True,
                          names=("decision", "reward"))
        _mark(fz, outcome, "halfupdated", _HalfUpdated)
