"""Session 15 (s15/fuzz): hostile inputs through every public entry point, each outcome classified.

    PYTHONPATH=. python bench/fuzz_inputs.py [--seed 15] [--quick] [--only cli,api,data,deploy] [--show N]
    PYTHONPATH=. python bench/fuzz_inputs.py --only types,resources,kills   # round 2 (session 16, s16/fuzz)
    PYTHONPATH=. python bench/fuzz_inputs.py --only sets,reads,huge,env,store,edges,concurrency   # round 3 (s17/fuzz)
    PYTHONPATH=. python bench/fuzz_inputs.py --only numtypes,pickle,afterfail   # round 4 (s18/fuzz: bench/fuzz_round4.py)
    PYTHONPATH=. python bench/fuzz_inputs.py --only kills,sets --limit 2   # every case cut at 2 s: no process left behind

Round 2 adds ``types`` (numbers and arrays that are not plain: numpy scalars at their edges, Decimal sNaN,
objects whose ``__float__`` / ``__index__`` raise or lie -- privbandit/testing/hostile.py --, 0-d, masked,
big-endian, read-only arrays, generators), ``resources`` (shapes and runs beyond the machine's memory, in a
child process under an address-space cap; KeyboardInterrupt mid-run) and ``kills`` (SIGKILL every file writer
and a deployment store at random points; the findings ``truncated`` and, for a valid array refused, ``refused``).
See docs/engine.md "Session 16 (s16/fuzz)".

Round 3 (session 17) adds ``sets`` (a save's data file and metadata under real SIGKILLs between and around their
moves, and concurrent savers; the finding ``mismatched``), ``reads`` (files the toolkit reads, edited by hand or
not files: a save's metadata, logs, key files), ``huge`` (huge-but-finite parameters of every policy and
environment, run), ``env`` (the environment variables the package reads), ``store`` (a deployment store's tables
edited by hand; read-only; locked), ``edges`` (every option of every subcommand, walked from the parser, at its
edges) and ``concurrency`` (processes racing on one store). See docs/engine.md "Session 17 (s17/fuzz)".

Deterministic for a seed (the hostile values are fixed lists; the seed picks the combinations of the
random CLI argv and the random orders). Runs in a few minutes on one core. Each case ends as one of:

* ``good`` -- a ValueError (the package's bad-input error; the deployment's StoreError is one) whose
  message names the parameter (or, on the command line, one line ``privbandit: error: ...``, exit 2);
* ``ok`` -- accepted, where the value is a valid one (``edge`` values: 0, -0.0, 10**400, True, ...);
* ``clipped`` -- the documented coercion: a reward outside [0, 1] clipped into it;
* findings: ``traceback`` (an exception other than ValueError escaped, or the command line said
  "internal error"), ``unnamed`` (a ValueError that names no parameter), ``accepted`` (a value that is
  nonsense -- nan, a string, a complex, an object -- went through silently), ``warning`` (a
  RuntimeWarning escaped), ``hang`` (no answer within the case's time limit).

The summary prints cases and findings per entry point; ``--show N`` prints the first N findings of each.
"""

from __future__ import annotations

import argparse
import contextlib
import decimal
import fractions
import inspect
import io
import math
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

FINDINGS = ("traceback", "unnamed", "accepted", "warning", "hang", "refused", "truncated", "mismatched",
            "differs", "halfupdated")  # (the last two: round 4, bench/fuzz_round4.py)
EXPECTED: tuple = ()  # documented refusal types besides ValueError, filled in by main()


class Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise Hang()


#: every child process a case started (``_spawn``): killed and reaped, with its process group, when the case ends
_CHILDREN: list = []


def _tree() -> str:
    """The tree whose ``privbandit`` this process imported (``PYTHONPATH=/work/wt/base python bench/...``): child
    processes import the same one. (They imported the fuzzer file's own tree before session 18, so a run against
    another tree mixed the two: savers of one, readers of the other.)"""
    import privbandit

    return str(Path(privbandit.__file__).resolve().parents[1])


def _spawn(argv, **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` in a process group of its own, registered for :func:`_reap`. A case's time limit
    (SIGALRM -> Hang) firing before its own kill or wait left the child running: session 17's "kill at random"
    savers (``loop 1000000``) outlived their cases, 17 at once. SIGALRM is blocked while the child starts, so a
    limit firing inside ``Popen`` cannot leave an unregistered child either."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        proc = subprocess.Popen(argv, start_new_session=True, **kwargs)
        _CHILDREN.append(proc)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return proc


def _reap() -> int:
    """Kill (SIGKILL, the whole process group) and wait for every child :func:`_spawn` started; returns how many
    were still running. Only a group whose leader is not yet reaped is signalled: its pid cannot have been reused."""
    running = 0
    while _CHILDREN:
        proc = _CHILDREN.pop()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            running += proc.poll() is None
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    return running


class Fuzzer:
    def __init__(self, seed: int, limit: float = 20.0, cap: float = math.inf):
        self.rng = random.Random(seed)
        self.seed = seed
        self.cap = cap  # --limit: no case runs longer, whatever its part sets (a check that nothing is left behind)
        self.limit = limit
        self.results: list[tuple[str, str, str, str]] = []  # (entry, label, outcome, detail)
        signal.signal(signal.SIGALRM, _alarm)

    @property
    def limit(self) -> float:
        return min(self._limit, self.cap)

    @limit.setter
    def limit(self, value: float) -> None:
        self._limit = value

    # -- one Python call --------------------------------------------------------------------------
    def call(self, entry: str, label: str, fn, *, bad: bool, names=(), clipped=False, ok_required=False):
        """Run ``fn()``; ``bad``: the input is nonsense and must be refused; ``names``: words one of which
        the refusal must contain (the parameter); ``ok_required``: the input is valid (a valid array in
        unusual clothes: read-only, big-endian, ...) and a refusal is the finding ``refused``."""
        signal.setitimer(signal.ITIMER_REAL, self.limit)
        detail = ""
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fn()
            outcome = "accepted" if bad else ("clipped" if clipped else "ok")
            runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
            if runtime:
                outcome, detail = "warning", str(runtime[0].message)[:200]
        except Hang:
            outcome, detail = "hang", f"> {self.limit:g} s"
        except (ValueError, *EXPECTED) as exc:  # (the deployment's StoreError: its documented refusal)
            text = str(exc).lower()
            if names and not any(n.lower() in text for n in names):
                outcome = "unnamed"
            else:
                outcome = "refused" if ok_required else "good"
            detail = f"{type(exc).__name__}: {str(exc)[:200]}"
        except Exception as exc:  # noqa: BLE001 -- the finding
            outcome, detail = "traceback", f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _reap()
        self.results.append((entry, label, outcome, detail))
        return outcome

    # -- one command line -------------------------------------------------------------------------
    def cli(self, entry: str, argv: list[str], *, bad: bool):
        from privbandit.cli import main

        out, err = io.StringIO(), io.StringIO()
        signal.setitimer(signal.ITIMER_REAL, self.limit)
        detail = ""
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                rc = main(argv)
            text = err.getvalue().strip()
            runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
            if "internal error" in text or "Traceback" in text:
                outcome, detail = "traceback", text[:300]
            elif runtime:
                outcome, detail = "warning", str(runtime[0].message)[:200]
            elif rc == 0:
                outcome = "accepted" if bad else "ok"
                detail = out.getvalue()[:120]
            elif rc in (1, 3) and not text.startswith("privbandit: error"):
                outcome, detail = ("accepted" if bad else "ok"), f"exit {rc}"
            elif text.startswith("privbandit:") and len(text.splitlines()) == 1:
                outcome, detail = "good", text[:200]
            else:
                outcome, detail = "traceback", f"exit {rc}: {text[:300]}"
        except Hang:
            outcome, detail = "hang", f"> {self.limit:g} s"
        except BaseException as exc:  # noqa: BLE001 -- escaped main(): the finding
            outcome, detail = "traceback", f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _reap()
        self.results.append((entry, " ".join(argv)[:200], outcome, detail))
        return outcome


# --- hostile values ------------------------------------------------------------------------------
class Weird:
    def __repr__(self):
        return "<Weird>"


#: Python values that are nonsense for every numeric parameter
BAD_NUMBERS = [math.nan, -math.inf, "1", "", b"1", 1 + 0j, Weird(), [1.0], {"a": 1}, np.array([1.0, 2.0]),
               decimal.Decimal("nan"), np.float64("nan"), np.datetime64("2020-01-01"), np.timedelta64(3, "D"),
               np.str_("1"), np.complex128(1), slice(1)]
#: values valid for some parameters: accepted or refused, never a traceback
EDGE_NUMBERS = [math.inf, -0.0, 0, -1, 1e-320, 10**400, -(10**400), True, False, None, 1.5, 2**63, 2**64,
                fractions.Fraction(1, 3), decimal.Decimal("0.5"), np.float16(65504), np.int8(-1), np.uint64(2**64 - 1),
                np.float32(1e-45), np.array(1.0), np.bool_(True), 1e308]
#: command-line number texts (all refused by a number option, except where they are valid)
CLI_BAD = ["nan", "inf", "-inf", "1e400", "9" * 5000, "", "abc", "1_0", "0x10", "\u0663", "--", "1e-400", "1,5", " "]
#: options taking a whole number of any size (a seed; a count used only when another option asks for it)
WHOLE_ANY = ("--seed", "--one-run-runs")
#: paths refused for a user but writable by root (the read-only directory): expected to pass as root
ROOT = ("ro",) if os.geteuid() == 0 else ()
CLI_EDGE = ["-0", "0", "-1", "1.5", "1e5", "1e30", "2", " 5", "1e-320", "5e-324"]


def _real(v) -> bool:
    """Whether ``v`` is a real number the package takes (not a bool, a Decimal, a datetime or a timedelta)."""
    return isinstance(v, (int, float, np.floating, np.integer, fractions.Fraction)) and not isinstance(
        v, (bool, np.bool_, np.timedelta64, np.datetime64)) and not (isinstance(v, int) and abs(v) > 1e308)


def _integral_sequence(v) -> bool:
    """A list or array of whole numbers (floats equal to whole numbers included: read as whole numbers)."""
    if not isinstance(v, (list, np.ndarray)) or np.asarray(v).dtype.kind not in "iuf":
        return False
    a = np.asarray(v, dtype=float)
    return isinstance(v, (list, np.ndarray)) and a.ndim == 1 and a.size > 0 and bool(np.all(a == np.round(a)))


def _name(v) -> str:
    r = repr(v)
    return r if len(r) < 40 else r[:37] + "..."


# --- 1. the command line -------------------------------------------------------------------------
def fuzz_cli(fz: Fuzzer, tmp: Path, quick: bool) -> None:
    base = {
        "run": ["run", "ucb1", "--horizon", "20", "--replicates", "1", "--quiet"],
        "budget": ["budget", "private_ucb", "--horizon", "100"],
        "invert": ["invert", "dp_ucb_int", "--epsilon", "1", "--horizon", "100", "--solve-for", "v",
                   "--bounds", "1.01", "1.99"],
        "certify": ["certify", "--releases", "10"],
        "experiment": ["experiment", "tossou2016-2arm", "--horizon", "10", "--replicates", "1"],
        "audit": ["audit", "dp_ucb", "--tier", "smoke", "--horizon", "10"],
    }
    numbers = {
        "run": ["--horizon", "--replicates", "--seed", "--epsilon", "--delta", "--arms"],
        "budget": ["--horizon", "--n-arms", "--delta", "--epsilon", "--max-degree"],
        "invert": ["--horizon", "--n-arms", "--epsilon", "--delta", "--mu", "--bounds", "--max-degree"],
        "certify": ["--epsilon", "--releases", "--delta"],
        "experiment": ["--horizon", "--replicates", "--seed"],
        "audit": ["--arms", "--horizon", "--seconds", "--seed", "--alpha", "--delta", "--one-run", "--one-run-runs"],
    }
    heavy = {"experiment", "audit"}  # (one case is seconds: only the refusals are driven)
    for cmd, opts in numbers.items():
        for opt in opts:
            for text in CLI_BAD + ([] if cmd in heavy else CLI_EDGE):
                argv = [a for a in base[cmd]]
                if opt in argv:
                    i = argv.index(opt)
                    argv[i + 1] = text
                    if opt == "--bounds":
                        argv[i + 2] = text
                else:
                    argv += [opt, text] + (["2"] if opt == "--bounds" else [])
                if opt == "--mu" and cmd == "invert":
                    argv = [a for a in argv]
                    j = argv.index("--epsilon")
                    del argv[j:j + 2]
                fz.cli(f"cli {cmd}", argv, bad=text in CLI_BAD and not (text == "1e400" and opt in WHOLE_ANY))
    # --param values, names and policies
    for cmd in ("run", "budget"):
        for item in ["epsilon=nan", "epsilon=inf", "epsilon=-0", "epsilon=1e400", "epsilon=" + "9" * 400, "epsilon=",
                     "epsilon=abc", "=1", "1x=2", "epsilon", "exact=maybe", "gamma=nan", "gamma=-1", "gamma=1e400"]:
            argv = base[cmd] + ["--param", item]
            argv[1] = "private_ucb"
            fz.cli(f"cli {cmd}", argv, bad=True)
        for pol in ["", "nope", "UCB1", "private-ucb", "lin_ucb", "ucb_n", "\x00", "a" * 5000]:
            argv = list(base[cmd])
            argv[1] = pol
            fz.cli(f"cli {cmd}", argv, bad=pol not in ("UCB1", "private-ucb", "ucb_n", "lin_ucb"))
    # output paths: directories, symlinks, unreadable, missing parents
    d = tmp / "cli"
    d.mkdir()
    (d / "adir.csv").mkdir()
    (d / "ro").mkdir()
    os.chmod(d / "ro", 0o500)
    victim = d / "victim.txt"
    victim.write_text("precious\n")
    (d / "link.csv").symlink_to(victim)
    (d / "dangling.csv").symlink_to(d / "nowhere" / "x.csv")
    paths = {"adir": d / "adir.csv", "ro": d / "ro" / "x.csv", "missing": d / "nope" / "x.csv", "empty": "",
             "badsuffix": d / "x.txt", "link": d / "link.csv", "dangling": d / "dangling.csv", "nul": "a\x00b.csv"}
    for name, path in paths.items():
        fz.cli("cli run --save", base["run"] + ["--save", str(path)], bad=name not in ("link", "dangling") + ROOT)
        if name in ("link",):
            fz.results[-1] = fz.results[-1][:2] + (("accepted", "wrote through the symlink")
                                                   if victim.read_text() != "precious\n" else fz.results[-1][2:])
            victim.write_text("precious\n")
            os.remove(path) if not os.path.islink(path) else None
            if not os.path.lexists(path):
                path.symlink_to(victim)
    # the audit's --out: a symlink planted in the directory must be replaced, never written through
    out = d / "auditout"
    out.mkdir()
    for name in ("summary.json", "audit_arms.md", "audit_arms.csv"):
        (out / name).symlink_to(victim)
    if not quick:
        fz.cli("cli audit --out", ["audit", "dp_ucb", "--tier", "smoke", "--horizon", "10", "--seconds", "5",
                                   "--allow-inconclusive", "--out", str(out)], bad=False)
        if victim.read_text() != "precious\n":
            fz.results[-1] = ("cli audit --out", fz.results[-1][1], "accepted", "wrote through a symlink in --out")
            victim.write_text("precious\n")
    for name, path in {"file": victim, "ro": d / "ro" / "sub", "empty": "", "nul": "a\x00b"}.items():
        fz.cli("cli audit --out", base["audit"] + ["--out", str(path)], bad=name not in ROOT)
        fz.cli("cli experiment --out", base["experiment"] + ["--out", str(path)], bad=name not in ROOT)
    # random argv: tokens of every subcommand shuffled
    tokens = sorted({t for argv in base.values() for t in argv} | set(CLI_BAD) | {"--param", "deploy", "init", "-h"})
    for _ in range(60 if quick else 300):
        argv = [fz.rng.choice(sorted(base))] + [fz.rng.choice(tokens) for _ in range(fz.rng.randint(0, 8))]
        if argv[0] in heavy or "-h" in argv:
            continue
        fz.cli("cli random", [base[argv[0]][0]] + argv[1:], bad=False)


# --- 2. deployment: command line and Python API --------------------------------------------------
def fuzz_deploy(fz: Fuzzer, tmp: Path, quick: bool) -> None:
    from privbandit.deploy import Deployment

    d = tmp / "deploy"
    d.mkdir()
    os.environ.pop("PRIVBANDIT_DEPLOY_KEY", None)
    os.environ.pop("PRIVBANDIT_DEPLOY_KEY_FILE", None)
    good = d / "good.db"
    fz.cli("cli deploy", ["deploy", "init", str(good), "--policy", "dp_ucb", "--n-arms", "2", "--budget", "5",
                          "--delta", "1e-6", "--seed", "1"], bad=False)
    init = ["deploy", "init", None, "--policy", "dp_ucb", "--n-arms", "2", "--budget", "5", "--delta", "1e-6"]
    for opt in ("--n-arms", "--budget", "--delta", "--seed", "--horizon"):
        for text in CLI_BAD + CLI_EDGE:
            argv = list(init)
            argv[2] = str(d / f"s{len(fz.results)}.db")
            if opt in argv:
                argv[argv.index(opt) + 1] = text
            else:
                argv += [opt, text]
            fz.cli("cli deploy init", argv, bad=text in CLI_BAD and not (text == "1e400" and opt in WHOLE_ANY))
    for text in CLI_BAD + CLI_EDGE:
        fz.cli("cli deploy update", ["deploy", "update", str(good), "--decision", text, "--reward", "0.5"], bad=True)
        fz.cli("cli deploy update", ["deploy", "update", str(good), "--decision", "1", "--reward", text],
               bad=text in CLI_BAD)
        fz.cli("cli deploy status", ["deploy", "status", str(good), "--last", text],
               bad=(text in CLI_BAD and text != "1e400") or text.startswith("-") and text != "-0")
    # stores that are not what they claim
    fakes = {}
    fakes["dir"] = d / "adir.db"
    fakes["dir"].mkdir()
    fakes["missing"] = d / "nope" / "x.db"
    fakes["empty"] = d / "empty.db"
    fakes["empty"].write_bytes(b"")
    fakes["json"] = d / "json.db"
    fakes["json"].write_text('{"policy": "dp_ucb"')
    fakes["yaml"] = d / "y.yaml"
    fakes["yaml"].write_text("policy: [dp_ucb\n")
    raw = good.read_bytes()
    for cut in (100, 4096, len(raw) // 2, len(raw) - 1):
        fakes[f"truncated{cut}"] = d / f"t{cut}.db"
        fakes[f"truncated{cut}"].write_bytes(raw[:cut])
    for at in (20, 100, 5000, len(raw) - 200):
        b = bytearray(raw)
        for i in range(at, min(at + 16, len(b))):
            b[i] ^= 0xFF
        fakes[f"flipped{at}"] = d / f"f{at}.db"
        fakes[f"flipped{at}"].write_bytes(bytes(b))
    other = d / "other.db"  # another sqlite database
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    con.execute("INSERT INTO meta VALUES ('version', '999')")
    con.commit()
    con.close()
    fakes["other"] = other
    newer = d / "newer.db"
    shutil.copy(good, newer)
    con = sqlite3.connect(newer)
    names = [r[0] for r in con.execute("SELECT key FROM meta")]
    for key in names:
        if "version" in key or "schema" in key:
            con.execute("UPDATE meta SET value = '99' WHERE key = ?", (key,))
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    fakes["newer"] = newer
    fakes["link"] = d / "link.db"
    fakes["link"].symlink_to(good)
    fakes["dangling"] = d / "dangling.db"
    fakes["dangling"].symlink_to(d / "gone.db")
    fakes["unreadable"] = d / "unreadable.db"
    shutil.copy(good, fakes["unreadable"])
    os.chmod(fakes["unreadable"], 0)
    def content(path):
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                return list(con.iterdump()), con.execute("PRAGMA application_id").fetchone()
            finally:
                con.close()
        except sqlite3.Error:
            return None

    reference = content(good)
    for name, path in fakes.items():
        # a flipped or cut byte in a page's free space or past the last page changes nothing SQLite reads:
        # accepting that store is right (its digests and counters are all checked on open)
        ok = name in ("link",) or (name == "unreadable" and os.geteuid() == 0) \
            or (name.startswith(("truncated", "flipped")) and content(path) == reference)
        for sub in (["select"], ["status"], ["audit"], ["update", "--decision", "1", "--reward", "0.5"]):
            fz.cli(f"cli deploy {sub[0]} (store)", ["deploy", sub[0], str(path)] + sub[1:], bad=not ok)
        fz.call("deploy open", name, lambda p=path: Deployment.open(p).close(), bad=not ok, names=("store", str(path)))
        fz.results[-1] = fz.results[-1][:3] + (fz.results[-1][3] + ("" if not ok else " (content intact)"),)
        fz.cli("cli deploy init (path)", init[:2] + [str(path)] + init[3:], bad=name not in ("dangling",))
    # Python API: create / open / select / update / status with hostile arguments
    kwargs = dict(policy="dp_ucb", n_arms=2, budget=5.0, delta=1e-6, seed=1)
    for param in ("n_arms", "budget", "delta", "seed", "horizon", "params", "on_exhausted", "synchronous",
                  "track_realized", "strict_rewards", "policy", "key"):
        for v in BAD_NUMBERS + EDGE_NUMBERS:
            p = d / f"api{len(fz.results)}.db"
            bad = any(v is b for b in BAD_NUMBERS) and not (param == "params" and isinstance(v, dict)) \
                and not (param == "key" and isinstance(v, bytes))
            fz.call("deploy create", f"{param}={_name(v)}",
                    lambda p=p, param=param, v=v: Deployment.create(p, **(kwargs | {param: v})).close(),
                    bad=bad, names=(param,) + ((tuple(v) if isinstance(v, dict) else ())))
    for v in BAD_NUMBERS + EDGE_NUMBERS + [str(good) + "\x00", 3, b"/tmp/x.db", Path("")]:
        fz.call("deploy create", f"path={_name(v)}", lambda v=v: Deployment.create(v, **kwargs).close(),
                bad=not isinstance(v, (str, bytes)) or "\x00" in str(v), names=("path", "store"))
        exists = isinstance(v, (str, bytes, os.PathLike)) and "\x00" not in str(v) and os.path.isfile(v)
        fz.call("deploy open", f"path={_name(v)}", lambda v=v: Deployment.open(v).close(), bad=not exists,
                names=("path", "store", "exist"))
    dep = Deployment.open(good)
    first = dep.select()
    for v in BAD_NUMBERS + EDGE_NUMBERS + [first.decision + 10**6]:
        fz.call("deploy update", f"decision={_name(v)}", lambda v=v: dep.update(v, 0.5),
                bad=not (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v == first.decision),
                names=("decision",))
    for v in BAD_NUMBERS + EDGE_NUMBERS:
        d2 = dep.select()
        ok_reward = _real(v) and math.isfinite(float(v))
        clipped = ok_reward and not 0 <= float(v) <= 1
        fz.call("deploy update", f"reward={_name(v)}", lambda v=v, d2=d2: dep.update(d2.decision, v),
                bad=not ok_reward, names=("reward",), clipped=clipped)
        fz.call("deploy status", f"last={_name(v)}", lambda v=v: dep.status(last=v),
                bad=not (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= 0),
                names=("last",))
    dep.close()
    # two processes on one store, each 30 select/update pairs, interleaved, then the audit
    twin = d / "twin.db"
    Deployment.create(twin, **kwargs).close()
    code = ("import sys\nfrom privbandit.deploy import Deployment\n"
            "with Deployment.open(sys.argv[1]) as dep:\n"
            "    for i in range(int(sys.argv[2])):\n"
            "        x = dep.select(); dep.update(x.decision, (i % 3) / 2)\n")
    n = 10 if quick else 30
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}

    def two_processes():
        procs = [_spawn([sys.executable, "-c", code, str(twin), str(n)], env=env,
                                  stderr=subprocess.PIPE) for _ in range(2)]
        errs = [p.communicate(timeout=120)[1].decode() for p in procs]
        if any(p.returncode for p in procs):
            raise RuntimeError("a process failed: " + " | ".join(e.strip().splitlines()[-1] for e in errs if e.strip()))
        from privbandit.audit.deployment import deployment_audit

        res = deployment_audit(str(twin))
        with Deployment.open(twin) as dep2:
            st = dep2.status()
        if res.verdict != "CONSISTENT" or st["decisions"] != 2 * n if "decisions" in st else False:
            raise RuntimeError(f"two writers: audit {res.verdict}, status {st}")

    fz.limit, limit = 240.0, fz.limit
    fz.call("deploy concurrent", "two processes", two_processes, bad=False)
    fz.limit = limit


# --- 3. the Python API ---------------------------------------------------------------------------
def fuzz_api(fz: Fuzzer, quick: bool) -> None:
    from privbandit import budget, simulate, sweep
    from privbandit.envs import Bernoulli
    from privbandit.policies import REGISTRY, make_policy

    env_for = _env_for  # (shared with the types and huge parts)

    values = BAD_NUMBERS + EDGE_NUMBERS
    for name, cls in sorted(REGISTRY.items()):
        for param in inspect.signature(cls).parameters:
            for v in values:
                bad = any(v is b for b in BAD_NUMBERS)

                # an accepted value must also run and be certified without a traceback
                fz.call(f"policy {name}", f"{param}={_name(v)}", _policy_case(name, param, v), bad=bad,
                        names=(param,))
    pol = make_policy("dp_ucb", epsilon=1.0)
    env = Bernoulli([0.3, 0.6])
    sim = dict(horizon=12, replicates=2, seed=0)
    for param in ("horizon", "replicates", "seed", "delta", "checkpoints", "ledger", "strict_rewards", "keep_arms",
                  "progress", "max_tracked_bytes", "realized_points", "ledger_replicates", "relation"):
        for v in values:
            bad = any(v is b for b in BAD_NUMBERS) and not (param == "seed" and isinstance(v, (bytes, str))) \
                and not (param == "checkpoints" and _integral_sequence(v))
            fz.call("simulate", f"{param}={_name(v)}",
                    lambda param=param, v=v: simulate(pol, env, **(sim | {"progress": False} | {param: v})),
                    bad=bad, names=(param,))
    for v in values:
        fz.call("simulate", f"policy={_name(v)}", lambda v=v: simulate(v, env, 12, 2), bad=True, names=("policy",))
        fz.call("simulate", f"env={_name(v)}", lambda v=v: simulate(pol, v, 12, 2), bad=True, names=("env",))
        fz.call("sweep", f"horizon={_name(v)}", lambda v=v: sweep([pol], [env], v, 2),
                bad=not (_real(v) and float(v).is_integer() and 2 <= float(v) <= 1e6), names=("horizon",))
    for fname, fn, params in [
        ("budget.epsilon", budget.epsilon, dict(policy=pol, horizon=100, delta=1e-6, n_arms=2)),
        ("budget.delta", budget.delta, dict(policy=pol, horizon=100, epsilon=1.0, n_arms=2)),
        ("budget.mu", budget.mu, dict(policy=make_policy("gaussian_ts", c=4.0), horizon=100, n_arms=2)),
        ("budget.curve", budget.curve, dict(policy=pol, horizons=[10, 100], delta=1e-6, n_arms=2)),
        ("budget.affordable_horizon", budget.affordable_horizon, dict(policy=pol, target=5.0, n_arms=2, delta=1e-6,
                                                                      max_horizon=10**4)),
        ("budget.invert", budget.invert, dict(policy="dp_ucb_int", target=1.0, horizon=100, solve_for="v",
                                              bounds=(1.01, 1.99), delta=1e-6, n_arms=2)),
        ("budget.ts_frontier", budget.ts_frontier, dict(target=5.0, horizon=100, n_arms=2, bs=[0, 4])),
    ]:
        for param in params:
            for v in values:
                if param in ("policy",) and isinstance(v, str):
                    continue
                bad = any(v is b for b in BAD_NUMBERS) and not (param in ("bs", "horizons") and _integral_sequence(v))
                fz.call(fname, f"{param}={_name(v)}", lambda fn=fn, params=params, param=param, v=v: fn(**(params | {param: v})),
                        bad=bad, names=(param, param.rstrip("s")))
    for param in ("structure", "relation", "accountants"):
        for v in values + [{"max_degree": math.nan}, {"max_degree": -1}, {"nope": 1}, "round", "nope"]:
            fz.call("budget.epsilon", f"{param}={_name(v)}",
                    lambda param=param, v=v: budget.epsilon(pol, 100, 1e-6, 2, **{param: v}),
                    bad=any(v is b for b in BAD_NUMBERS) or isinstance(v, dict) or v == "nope", names=(param, "max_degree", "nope"))
    # experiments
    from privbandit.experiments import run_experiment

    for param, base in (("horizon", 10), ("replicates", 1), ("seed", 0)):
        for v in values if not quick else BAD_NUMBERS:
            if _real(v) and 100 < float(v) < 1e6:
                continue  # (valid, and minutes to run: 65,504 rounds of nine policies)
            fz.call("experiments.run_experiment", f"{param}={_name(v)}",
                    lambda param=param, v=v: run_experiment("tossou2016-2arm", **({"horizon": 10, "replicates": 1,
                                                                                     "seed": 0} | {param: v})),
                    bad=any(v is b for b in BAD_NUMBERS) and not (param == "seed" and isinstance(v, (str, bytes))),
                    names=(param,))
    for v in ["", "nope", None, 3, "TOSSOU2016-2arm"]:
        fz.call("experiments.run_experiment", f"name={_name(v)}", lambda v=v: run_experiment(v, 10, 1), bad=True,
                names=("experiment", "name"))


def fuzz_accountants(fz: Fuzzer) -> None:
    import accountants as A
    from accountants.best import default_accountants

    values = BAD_NUMBERS + EDGE_NUMBERS
    events = {"Laplace": ("scale", "sensitivity"), "Gaussian": ("sigma", "sensitivity"), "PureDP": ("epsilon",),
              "ApproxDP": ("epsilon", "delta"), "GDP": ("mu",), "DiscreteGaussian": ("sigma", "sensitivity", "grid"),
              "DiscreteLaplace": ("scale", "sensitivity", "grid"), "ZCDP": ("rho",)}
    base = {"scale": 1.0, "sensitivity": 1.0, "sigma": 1.0, "epsilon": 1.0, "delta": 1e-6, "mu": 1.0, "grid": 2**-20,
            "rho": 0.5}
    for cls, params in events.items():
        for param in params:
            for v in values:
                def build(cls=cls, params=params, param=param, v=v):
                    ev = getattr(A, cls)(**({p: base[p] for p in params} | {param: v}))
                    A.best_epsilon(ev * 3, 1e-6)
                fz.call(f"accountants.{cls}", f"{param}={_name(v)}", build, bad=any(v is b for b in BAD_NUMBERS),
                        names=(param,))
    ev = A.Laplace(scale=1.0)
    for v in values:
        fz.call("accountants compose", f"count={_name(v)}", lambda v=v: A.best_epsilon(ev * v, 1e-6),
                bad=any(v is b for b in BAD_NUMBERS), names=("count", "times", "integer", "whole"))
        for factory in default_accountants():
            nm = getattr(factory, "name", str(factory))

            def method(factory=factory, v=v, which="epsilon"):
                acc = factory()
                acc.compose(ev, 3)
                return acc.epsilon(v) if which == "epsilon" else acc.delta(v)

            fz.call(f"accountant {nm}", f"epsilon(delta={_name(v)})", method, bad=any(v is b for b in BAD_NUMBERS),
                    names=("delta",))
            fz.call(f"accountant {nm}", f"delta(epsilon={_name(v)})", lambda m=method: m(which="delta"),
                    bad=any(v is b for b in BAD_NUMBERS), names=("epsilon",))
            fz.call(f"accountant {nm}", f"compose(count={_name(v)})", lambda factory=factory, v=v: factory().compose(ev, v),
                    bad=any(v is b for b in BAD_NUMBERS), names=("count",))
        fz.call("accountants.best_epsilon", f"delta={_name(v)}", lambda v=v: A.best_epsilon(ev * 3, v),
                bad=any(v is b for b in BAD_NUMBERS), names=("delta",))
        fz.call("accountants.best_epsilon", f"events={_name(v)}", lambda v=v: A.best_epsilon(v, 1e-6),
                bad=True, names=("event",))
        fz.call("accountants.best_delta", f"epsilon={_name(v)}", lambda v=v: A.best_delta(ev * 3, v),
                bad=any(v is b for b in BAD_NUMBERS), names=("epsilon",))
        fz.call("accountants.calibrate", f"target={_name(v)}",
                lambda v=v: A.calibrate(lambda s: 1 / s, v, 0.1, 10, increasing=False),
                bad=any(v is b for b in BAD_NUMBERS), names=("target",))


def fuzz_mechanisms(fz: Fuzzer) -> None:
    from privbandit.ledger import Ledger
    from privbandit import mechanisms as M

    values = BAD_NUMBERS + EDGE_NUMBERS
    ctors = {
        "TreeMechanism": dict(replicates=2, streams=2, epsilon=1.0, horizon=16),
        "HybridMechanism": dict(replicates=2, streams=2, epsilon=1.0),
        "LogarithmicMechanism": dict(replicates=2, streams=2, epsilon=1.0),
        "SplitMechanism": dict(replicates=2, streams=2, epsilon=1.0),
        "FreshBatchMean": dict(replicates=2, streams=2, epsilon=1.0),
        "IntervalMean": dict(replicates=2, streams=2, v=1.5, epsilon=1.0),
    }
    for cls, params in ctors.items():
        for param in list(params) + ["name", "exact"]:
            for v in values:
                def build(cls=cls, params=params, param=param, v=v):
                    getattr(M, cls)(**(params | {param: v}), rng=np.random.default_rng(0),
                                    ledger=Ledger.unrecorded(2, 2))
                fz.call(f"mechanism {cls}", f"{param}={_name(v)}", build,
                        bad=any(v is b for b in BAD_NUMBERS) and not (param == "name" and isinstance(v, str)),
                        names=(param,))
    for v in values:
        fz.call("mechanism NoiseSampler", f"exact={_name(v)}",
                lambda v=v: M.NoiseSampler(np.random.default_rng(0), exact=v), bad=not isinstance(v, bool)
                and not isinstance(v, np.bool_), names=("exact",))
        fz.call("mechanism NoiseSampler", f"rng={_name(v)}", lambda v=v: M.NoiseSampler(v), bad=True, names=("rng",))


# --- 4. data: rewards, contexts, graphs ----------------------------------------------------------
def fuzz_data(fz: Fuzzer) -> None:
    from privbandit import simulate
    from privbandit.envs import (Bernoulli, ClippedGaussian, GraphFeedback, RewardTable, RewardTape,
                                 TruncatedExponential, ErdosRenyi, DisjointCliques, OneMemoryAdversary)
    from privbandit.envs.graphs import check_adjacency
    from privbandit.contextual import LinearContextual, LoggedData, replay
    from privbandit.policies import make_policy

    arrays = {
        "nan": np.array([0.5, np.nan]), "inf": np.array([0.5, np.inf]), "complex": np.array([0.5, 0.2 + 1j]),
        "object": np.array([0.5, Weird()], dtype=object), "objnum": np.array([0.5, 0.2], dtype=object),
        "bools": np.array([True, False]), "strings": np.array(["0.5", "0.2"]), "empty": np.array([]),
        "2d": np.array([[0.5, 0.2]]), "one": np.array([0.5]), "neg": np.array([-0.5, 0.2]), "big": np.array([1.5, 0.2]),
        "list_mixed": [0.5, "a"], "ragged": [[0.5], [0.2, 0.3]], "scalar": 0.5, "none": None, "dict": {0: 0.5},
        "float16": np.array([0.5, 0.2], dtype=np.float16), "masked": np.ma.masked_array([0.5, 0.2], mask=[0, 1]),
        "datetime": np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"), "huge_int": [10**400, 0],
        "generator": (x for x in [0.5, 0.2]), "tuple": (0.5, 0.2), "3arms": [0.1, 0.5, 0.9],
    }
    ok_means = {"objnum", "float16", "tuple", "3arms"}  # (+ ClippedGaussian's locs may lie outside [0, 1]: clipped draws)
    for label, a in arrays.items():
        for cls in (Bernoulli, TruncatedExponential, ClippedGaussian):
            fz.call(f"env {cls.__name__}", f"means={label}",
                    lambda cls=cls, a=a: simulate(make_policy("ucb1"), cls(a), 6, 2, seed=0, progress=False),
                    bad=label not in ok_means and not (cls is TruncatedExponential and label == "big")
                    and not (cls is ClippedGaussian and label in ("neg", "big")),
                    names=("means", "rates", "locs", "arm"))
    tables = {
        "nan": np.full((10, 2), np.nan), "inf": np.full((10, 2), np.inf), "complex": np.ones((10, 2)) * 1j,
        "object": np.array([[0.5, Weird()]] * 10, dtype=object), "bools": np.ones((10, 2), bool),
        "1d": np.ones(10), "3d": np.ones((10, 2, 1)), "empty": np.ones((0, 2)), "one_arm": np.ones((10, 1)),
        "short": np.ones((3, 2)), "strings": np.full((10, 2), "0.5"), "neg": -np.ones((10, 2)),
        "big": 5 * np.ones((10, 2)), "ok": np.full((10, 2), 0.5),
    }
    for label, t in tables.items():
        for cls in (RewardTable, OneMemoryAdversary):
            fz.call(f"env {cls.__name__}", f"table={label}",
                    lambda cls=cls, t=t: simulate(make_policy("exp3"), cls(t), 6, 2, seed=0, progress=False),
                    bad=label not in ("ok", "neg", "big", "short"), names=("table", "reward", "rounds"),
                    clipped=label in ("neg", "big"))
        fz.call("env RewardTape", f"tape={label}",
                lambda t=t: simulate(make_policy("dp_ucb"), RewardTape(np.asarray(t).T if np.ndim(t) == 2 else t),
                                     6, 2, seed=0, progress=False),
                bad=label not in ("ok", "neg", "big", "short"), names=("tape", "reward", "pulls"),
                clipped=label in ("neg", "big"))
        fz.call("simulate strict_rewards", f"table={label}",
                lambda t=t: simulate(make_policy("exp3"), RewardTable(t), 6, 2, seed=0, progress=False,
                                     strict_rewards=True),
                bad=label not in ("ok", "short"), names=("table", "reward", "rounds"))
    # graphs
    import networkx as nx

    graphs = {
        "self_loops": np.ones((3, 3), bool), "no_self": ~np.eye(3, dtype=bool), "isolated": np.eye(3, dtype=bool),
        "asym": np.triu(np.ones((3, 3), bool)), "nonsquare": np.ones((3, 2), bool), "float": np.eye(3) * 0.5,
        "nan": np.full((3, 3), np.nan), "wrong_n": np.eye(4, dtype=bool), "ints2": np.eye(3, dtype=int) * 2,
        "nx_path": nx.path_graph(3), "nx_labels": nx.relabel_nodes(nx.path_graph(3), {0: "a", 1: "b", 2: "c"}),
        "nx_digraph": nx.DiGraph([(0, 1), (1, 2)]), "nx_multi": nx.MultiGraph([(0, 1), (0, 1), (1, 2)]),
        "nx_selfloop": nx.Graph([(0, 0), (0, 1), (1, 2)]), "nx_floatlabels": nx.Graph([(0.0, 1.5), (1.5, 2.0)]),
        "nx_isolated": nx.empty_graph(3), "nx_wrong_n": nx.path_graph(5), "nx_weighted_neg": nx.Graph([(0, 1, {"weight": -1}), (1, 2, {"weight": 1})]),
        "edges_list": [(0, 1), (1, 2)], "string": "0-1", "none": None, "object": np.array([[Weird()] * 3] * 3, dtype=object),
        "nx_labels_shuffled": nx.Graph([(2, 0), (0, 1)]),
    }
    # (a multigraph's parallel edges are one edge: check_adjacency reads networkx edges as pairs, documented)
    ok_graphs = {"self_loops", "no_self", "isolated", "nx_path", "nx_isolated", "nx_selfloop", "nx_multi",
                 "nx_labels_shuffled"}
    for label, g in graphs.items():
        fz.call("env GraphFeedback", f"graph={label}",
                lambda g=g: simulate(make_policy("ucb_n"), GraphFeedback(Bernoulli([0.2, 0.5, 0.8]), g), 6, 2,
                                     seed=0, progress=False),
                bad=label not in ok_graphs, names=("graph", "adjacency", "node", "arm"))
        fz.call("graphs.check_adjacency", label, lambda g=g: check_adjacency(g, 3), bad=label not in ok_graphs,
                names=("graph", "adjacency", "node"))
    for cls, params in ((ErdosRenyi, dict(n=3, p=0.5)), (DisjointCliques, dict(n=4, size=2))):
        for param in params:
            for v in BAD_NUMBERS + EDGE_NUMBERS:
                fz.call(f"graphs.{cls.__name__}", f"{param}={_name(v)}",
                        lambda cls=cls, params=params, param=param, v=v: cls(**(params | {param: v})),
                        bad=any(v is b for b in BAD_NUMBERS), names=(param,))
    # contexts of the wrong dimension / kind
    for param, v in [("dim", 0), ("dim", math.nan), ("dim", 10**9), ("n_arms", 1), ("noise", math.nan), ("noise", -1),
                     ("model", "nope"), ("theta", np.full(5, np.nan)), ("theta", np.ones(3)), ("theta", "x"),
                     ("theta_seed", -1), ("theta_seed", math.nan)]:
        fz.call("env LinearContextual", f"{param}={_name(v)}",
                lambda param=param, v=v: LinearContextual(**(dict(dim=5, n_arms=2) | {param: v})), bad=True,
                names=(param,))
    env5 = LinearContextual(dim=5, n_arms=2)
    for pol, kw in (("private_lin_ucb", dict(dim=3)), ("lin_ucb", dict(dim=7)), ("joint_dp_lin_ucb", dict(dim=2))):
        fz.call("simulate contexts", f"{pol} dim mismatch",
                lambda pol=pol, kw=kw: simulate(make_policy(pol, **kw), env5, 6, 2, seed=0, progress=False),
                bad=True, names=("dim", "context"))
    ctx = np.random.default_rng(0).random((20, 5))
    acts = np.zeros(20, int)
    rew = np.full(20, 0.5)
    prop = np.full(20, 0.5)
    cases = {"nan_rewards": dict(rewards=np.full(20, np.nan)), "complex_ctx": dict(contexts=ctx * 1j),
             "ctx_1d": dict(contexts=ctx[:, 0]), "bad_action": dict(actions=np.full(20, 5)),
             "float_action": dict(actions=np.full(20, 0.5)), "zero_prop": dict(propensities=np.zeros(20)),
             "short_rewards": dict(rewards=rew[:3]), "bool_rewards": dict(rewards=np.ones(20, bool)),
             "object_rewards": dict(rewards=np.array([0.5] * 19 + [Weird()], dtype=object)),
             "n_arms_nan": dict(n_arms=math.nan), "nan_ctx": dict(contexts=np.full((20, 5), np.nan))}
    for label, over in cases.items():
        fz.call("contextual LoggedData", label,
                lambda over=over: replay(make_policy("lin_ucb"), LoggedData(**(dict(contexts=ctx, actions=acts, rewards=rew,
                                                                                   propensities=prop, n_arms=2) | over))),
                bad=label != "bool_rewards", names=tuple(over) + ("reward", "context", "action", "propensit"))
        # (bool rewards of a logged data set are read as 0 / 1: real_array(bools=True), documented -- click logs)


def fuzz_files(fz: Fuzzer, tmp: Path) -> None:
    """Files that are not what they claim, through the entry points that read files: a logged data set
    (``contextual.load_log``) and a deployment's replay log (``privbandit deploy replay``)."""
    from privbandit.contextual import load_log

    d = tmp / "files"
    d.mkdir()
    good = "x0,x1,action,reward,propensity\n" + "".join(f"0.{i},0.5,{i % 2},0.5,0.5\n" for i in range(10))
    files = {
        "good.csv": good, "truncated.csv": good[:len(good) // 2 + 3], "empty.csv": "", "header_only.csv": good.splitlines()[0],
        "json.csv": '{"action": [0, 1]', "yaml.csv": "action: [0, 1\n", "binary.csv": "\x00\x01\x02",
        "nan.csv": good.replace("0.5,0.5\n", "nan,0.5\n", 1), "text.csv": good.replace("0.5,0.5\n", "a,0.5\n", 1),
        "ragged.csv": good + "1,2\n", "bad.parquet": "not parquet", "dir.csv": None, "missing/x.csv": None,
    }
    for name, text in files.items():
        path = d / name
        if name == "dir.csv":
            path.mkdir()
        elif text is not None:
            path.write_text(text)
        fz.call("contextual load_log", name, lambda p=path: load_log(p), bad=name != "good.csv",
                names=("path", "log", "csv", "parquet", "column", "reward", "action", str(path)))
    from privbandit.deploy import Deployment

    store = d / "store.db"
    Deployment.create(store, "dp_ucb", n_arms=2, budget=5.0, delta=1e-6, seed=1).close()
    tables = {"good.csv": "arm0,arm1\n0.5,0.2\n0.1,0.9\n", "truncated.csv": "arm0,arm1\n0.5,0.2\n0.1,",
              "json.csv": '{"a": 1}', "wide.csv": "a,b\n0.5,0.2,0.3\n", "nan.csv": "a,b\nnan,0.2\n", "empty.csv": "",
              "dir.csv": None, "binary.csv": "a,b\n\x00\xff,1", "no_header.csv": "0.5,0.2\n0.1,0.9\n",
              "nan_header.csv": "nan,0.2\n"}
    for name, text in tables.items():
        path = d / ("r_" + name)
        if text is None:
            path.mkdir()
        else:
            path.write_text(text, errors="surrogateescape")
        fz.cli("cli deploy replay", ["deploy", "replay", str(store), str(path)], bad=name != "good.csv")


# === Session 16 (s16/fuzz): round 2 -- types that look like numbers or arrays, huge shapes, kills ===
from privbandit.testing.hostile import (FakeReal as _FakeReal, HugeInt as _HugeIndex,  # noqa: E402
                                       LyingLen as _LyingLen, NanFloat as _NanFloat, RaisingFloat as _RaisingFloat,
                                       RaisingInt as _RaisingIndex, TextFloat as _TextFloat)


def _ro(a):
    a = np.array(a)
    a.flags.writeable = False
    return a


#: scalars for a numeric parameter: (label, value, bad). ``bad``: nonsense, must be refused naming the
#: parameter; otherwise accepted or refused, never a traceback (a valid number in numpy's clothes).
TYPE_SCALARS = [
    ("float16(0.5)", np.float16(0.5), False), ("float32(0.5)", np.float32(0.5), False),
    ("int8(127)", np.int8(127), False), ("int8(-128)", np.int8(-128), False), ("uint8(0)", np.uint8(0), False),
    ("uint64(2**64-1)", np.uint64(2**64 - 1), False), ("int64(2**63-1)", np.int64(2**63 - 1), False),
    ("longdouble(1e4000)", np.longdouble("1e4000"), False),  # (inf where longdouble is a float64)
    ("True", True, True), ("np.True_", np.bool_(True), True), ("False", False, True),
    ("datetime64", np.datetime64("2020-01-01"), True), ("str_('2')", np.str_("2"), True),
    ("Fraction(1,2)", fractions.Fraction(1, 2), False), ("Decimal('NaN')", decimal.Decimal("NaN"), True),
    ("Decimal('sNaN')", decimal.Decimal("sNaN"), True), ("Decimal('Infinity')", decimal.Decimal("Infinity"), True),
    ("Decimal('2')", decimal.Decimal("2"), False), ("complex(2,0)", complex(2, 0), True),
    ("complex64(2)", np.complex64(2), True),
    ("float-nan-lie", _NanFloat(0.5), False), ("float-raising", _RaisingFloat(0.5), True),
    ("float-text", _TextFloat(0.5), True), ("int-index-raising", _RaisingIndex(3), False),
    ("int-index-huge", _HugeIndex(3), False),
    ("Real-raising", _FakeReal(RuntimeError("lying")), True), ("Real-nan", _FakeReal(math.nan), True),
    ("Real-text", _FakeReal("0.5"), True), ("Real-overflow", _FakeReal(OverflowError("big")), True),
    ("0d", np.array(2.0), False), ("0d-readonly", _ro(2.0), False), ("0d-bigendian", np.array(2.0, ">f8"), False),
    ("0d-float16", np.array(2.0, np.float16), False), ("0d-object", np.array(2.0, dtype=object), False),
    ("0d-object-str", np.array("2", dtype=object), True), ("0d-bool", np.array(True), True),
    ("ma.masked", np.ma.masked, True), ("0d-masked", np.ma.array(2.0, mask=True), True),
    ("0d-masked-unmasked", np.ma.array(2.0, mask=False), False),
    ("memoryview", memoryview(b"\x02"), True), ("generator", (x for x in [2.0]), True),
    ("1-elem-array", np.array([2.0]), True), ("mixed-list", [2.0, "a"], True),
]


def _fresh(v):
    """A generator is consumed by the first call: every case gets its own."""
    return (x for x in [2.0]) if inspect.isgenerator(v) else v


#: arrays for an array parameter (rewards, means, contexts): (label, build, verdict); verdict: "ok" -- a
#: valid array in unusual clothes, must be accepted; "bad" -- refused naming the parameter; "edge" --
#: accepted or refused, never a traceback. ``build(good)`` makes the case from a valid float array.
def _noncontig(g):
    wide = np.repeat(np.asarray(g), 2, axis=-1)
    return wide[..., ::2]


TYPE_ARRAYS = [
    ("readonly", _ro, "ok"), ("noncontiguous", _noncontig, "ok"),
    ("bigendian", lambda g: np.asarray(g).astype(np.asarray(g).dtype.newbyteorder(">")), "ok"), ("float16", lambda g: np.asarray(g, np.float16), "ok"),
    ("float32", lambda g: np.asarray(g, np.float32), "ok"), ("fortran", lambda g: np.asfortranarray(g), "ok"),
    ("object-numbers", lambda g: np.asarray(g, dtype=object), "ok"),
    ("masked-none", lambda g: np.ma.masked_array(g, mask=np.zeros(np.shape(g), bool)), "ok"),
    ("masked-one", lambda g: np.ma.masked_array(g, mask=np.eye(1, np.size(g), dtype=bool).reshape(np.shape(g))),
     "bad"),
    ("memoryview", lambda g: memoryview(np.ascontiguousarray(g, float)), "edge"),
    ("list-of-np-scalars", lambda g: np.asarray(g, np.float32).tolist() if np.ndim(g) > 1
     else [np.float32(x) for x in np.ravel(g)], "ok"),
    ("list-with-Fraction", lambda g: _swap_first(g, lambda x: fractions.Fraction(x).limit_denominator(1000)), "edge"),
    ("list-with-Decimal", lambda g: _swap_first(g, lambda x: decimal.Decimal(str(x))), "bad"),
    ("list-with-bool", lambda g: _swap_first(g, lambda x: True), "bad"),  # (an adjacency's bool: valid there)
    ("list-with-str_", lambda g: _swap_first(g, lambda x: np.str_(str(x))), "bad"),
    ("list-with-nan-lie", lambda g: _swap_first(g, lambda x: _NanFloat(x)), "edge"),
    ("list-with-raising", lambda g: _swap_first(g, lambda x: _FakeReal(RuntimeError("lying"))), "bad"),
    ("list-with-complex0", lambda g: _swap_first(g, lambda x: complex(x, 0)), "bad"),
    ("datetime", lambda g: np.full(np.shape(g), np.datetime64("2020-01-01")), "bad"),
    ("generator", lambda g: (x for x in np.asarray(g).tolist()), "bad"),
    ("lying-len", lambda g: _LyingLen(np.asarray(g).tolist()), "edge"),
    ("complex-zero-imag", lambda g: np.asarray(g, complex), "bad"),
    ("object-with-None", lambda g: _swap_first(g, lambda x: None), "bad"),
]


def _swap_first(g, f):
    a = np.asarray(g, float)
    out = a.tolist()
    if a.ndim == 1:
        out[0] = f(out[0])
    else:
        out[0][0] = f(out[0][0])
    return out


def _env_for(pol, k=2):
    """An environment ``pol`` runs on: contexts, a graph or plain Bernoulli arms, as it requires."""
    from privbandit.contextual import LinearContextual
    from privbandit.envs import Bernoulli, GraphFeedback

    if "contexts" in pol.requires:
        return LinearContextual(dim=5, n_arms=k)
    if "graph" in pol.requires:
        return GraphFeedback(Bernoulli([0.3, 0.6][:k]), np.eye(k, dtype=bool))
    return Bernoulli([0.3, 0.6][:k])


def _policy_case(name: str, param: str, v, rounds: int = 12, horizon: int = 100):
    """A case: build policy ``name`` with ``param=v``, run it ``rounds`` rounds and certify ``horizon`` rounds."""
    def build():
        from privbandit import budget, simulate
        from privbandit.policies import make_policy

        pol = make_policy(name, **{param: v})
        simulate(pol, _env_for(pol), rounds, 2, seed=0, progress=False)
        if pol.private:
            budget.epsilon(pol, horizon, 1e-6, 2)

    return build


def _relabel(fz: Fuzzer, outcome: str, finding: str) -> None:
    """A check's AssertionError (a broken invariant, not an escaped exception) is the finding ``finding``."""
    if outcome == "traceback" and fz.results[-1][3].startswith("AssertionError"):
        fz.results[-1] = (*fz.results[-1][:2], finding, fz.results[-1][3])


def fuzz_types(fz: Fuzzer) -> None:
    """Round 2, item 1: numbers and arrays that are not plain, through the Python API."""
    from privbandit import budget, simulate, sweep
    from privbandit.envs import Bernoulli, ClippedGaussian, TruncatedExponential, RewardTable, RewardTape, GraphFeedback
    from privbandit.policies import REGISTRY, make_policy
    from privbandit.contextual import LinearContextual, LoggedData, replay
    import accountants as A
    from accountants.best import default_accountants

    def bad_for(param, default, v, bad):
        if isinstance(default, bool):  # a flag: only a real bool (or numpy's) is a flag
            return not isinstance(v, (bool, np.bool_))
        return bad

    for name, cls in sorted(REGISTRY.items()):
        for param, p in inspect.signature(cls).parameters.items():
            if isinstance(p.default, str):
                continue  # named options: session 15's `choice` (strings, arrays, objects) covers them
            for label, v, bad in TYPE_SCALARS:
                def build(name=name, param=param, v=v):
                    pol = make_policy(name, **{param: _fresh(v)})
                    simulate(pol, _env_for(pol), 12, 2, seed=0, progress=False)
                    if pol.private:
                        budget.epsilon(pol, 100, 1e-6, 2)

                fz.call(f"types policy {name}", f"{param}={label}", build, bad=bad_for(param, p.default, v, bad),
                        names=(param,))
    pol = make_policy("dp_ucb", epsilon=1.0)
    env = Bernoulli([0.3, 0.6])
    for param, base in (("horizon", 12), ("replicates", 2), ("delta", 1e-6), ("seed", 0), ("max_tracked_bytes", 10**6),
                        ("realized_points", 4), ("ledger_replicates", 1)):
        for label, v, bad in TYPE_SCALARS:
            if param == "seed" and label in ("str_('2')", "memoryview", "mixed-list"):
                bad = False  # (a seed may be text or bytes: hashed, documented)
            if param == "seed" and label in ("1-elem-array",):
                bad = False  # (a seed sequence)
            kw = dict(horizon=12, replicates=2, seed=0, progress=False) | {param: _fresh(v)}
            if param in ("horizon", "replicates") and label.startswith(("uint64", "int64", "longdouble")):
                continue  # (valid and enormous: the memory check's cases, item 3)
            fz.call("types simulate", f"{param}={label}", lambda kw=kw: simulate(pol, env, **kw),
                    bad=bad and not (param == "seed" and isinstance(v, (np.str_,))), names=(param,))
        if param in ("horizon", "replicates"):
            for label, v, bad in TYPE_SCALARS:
                if label.startswith(("uint64", "int64", "longdouble")):
                    continue
                kw = dict(horizon=12, replicates=2) | {param: _fresh(v)}
                fz.call("types sweep", f"{param}={label}",
                        lambda kw=kw: sweep([pol], [env], kw["horizon"], kw["replicates"], seed=0),
                        bad=bad, names=(param,))
    fns = [
        ("budget.epsilon", budget.epsilon, dict(policy=pol, horizon=100, delta=1e-6, n_arms=2)),
        ("budget.delta", budget.delta, dict(policy=pol, horizon=100, epsilon=1.0, n_arms=2)),
        ("budget.mu", budget.mu, dict(policy=make_policy("gaussian_ts", c=4.0), horizon=100, n_arms=2)),
        ("budget.affordable_horizon", budget.affordable_horizon, dict(policy=pol, target=5.0, n_arms=2, delta=1e-6,
                                                                      max_horizon=10**4)),
        ("budget.invert", budget.invert, dict(policy="dp_ucb_int", target=1.0, horizon=100, solve_for="v",
                                              bounds=(1.01, 1.99), delta=1e-6, n_arms=2)),
        ("budget.ts_frontier", budget.ts_frontier, dict(target=5.0, horizon=100, n_arms=2, bs=[0, 4])),
    ]
    for fname, fn, params in fns:
        for param in params:
            if param in ("policy", "solve_for"):
                continue
            for label, v, bad in TYPE_SCALARS:
                if param in ("horizon", "max_horizon") and label.startswith(("uint64", "int64", "longdouble")):
                    bad = False
                fz.call(f"types {fname}", f"{param}={label}",
                        lambda fn=fn, params=params, param=param, v=v: fn(**(params | {param: _fresh(v)})),
                        bad=bad and not (param == "bs" and label in ("1-elem-array", "generator", "memoryview")),
                        names=(param, param.rstrip("s")))  # (bs: any iterable of whole numbers, documented)
    for label, build, verdict in TYPE_ARRAYS:
        for param, good in (("horizons", [10, 100]), ("bs", [0, 4])):
            v = build(np.asarray(good, float)) if verdict != "ok" or label not in ("float16",) else build(good)
            fn = (lambda v=v: budget.curve(pol, v, 1e-6, 2)) if param == "horizons" else \
                (lambda v=v: budget.ts_frontier(5.0, 100, 2, v))
            fz.call(f"types budget.{'curve' if param == 'horizons' else 'ts_frontier'}", f"{param}={label}", fn,
                    bad=verdict == "bad" and not (param == "bs" and label in ("generator", "memoryview")),
                    names=(param, param.rstrip("s")))  # (bs is any iterable of whole numbers: documented)
    # accountants: events, compose counts, epsilon / delta of every default accountant
    ev = A.Laplace(scale=1.0)
    for label, v, bad in TYPE_SCALARS:
        for cls, param in (("Laplace", "scale"), ("Gaussian", "sigma"), ("GDP", "mu"), ("ApproxDP", "delta"),
                           ("DiscreteGaussian", "grid"), ("ZCDP", "rho")):
            base = {"Laplace": dict(scale=1.0), "Gaussian": dict(sigma=1.0), "GDP": dict(mu=1.0),
                    "ApproxDP": dict(epsilon=1.0, delta=1e-6), "DiscreteGaussian": dict(sigma=1.0, grid=2**-20),
                    "ZCDP": dict(rho=0.5)}[cls]
            ok_value = not (param == "delta" and label in ("float16(0.5)", "float32(0.5)", "Fraction(1,2)")) and \
                param in ("delta",) and not bad
            fz.call(f"types accountants.{cls}", f"{param}={label}",
                    lambda cls=cls, base=base, param=param, v=v: A.best_epsilon(getattr(A, cls)(**(base | {param: _fresh(v)})) * 3, 1e-6),
                    bad=bad, names=(param,))
        fz.call("types compose", f"count={label}", lambda v=v: A.best_epsilon(ev * _fresh(v), 1e-6),
                bad=bad or label in ("float16(0.5)", "float32(0.5)", "Fraction(1,2)"), names=("count", "times"))
        for factory in default_accountants():
            nm = factory.__name__

            def method(factory=factory, v=v, which="epsilon"):
                acc = factory()
                acc.compose(ev, 3)
                return acc.epsilon(_fresh(v)) if which == "epsilon" else acc.delta(_fresh(v))

            fz.call(f"types accountant {nm}", f"epsilon(delta={label})", method, bad=bad, names=("delta",))
            fz.call(f"types accountant {nm}", f"delta(epsilon={label})", lambda m=method: m(which="delta"),
                    bad=bad, names=("epsilon",))
            fz.call(f"types accountant {nm}", f"compose(count={label})",
                    lambda factory=factory, v=v: factory().compose(ev, _fresh(v)),
                    bad=bad or label in ("float16(0.5)", "float32(0.5)", "Fraction(1,2)"), names=("count",))
    # mechanisms
    from privbandit.ledger import Ledger
    from privbandit import mechanisms as M

    for cls, params in (("TreeMechanism", dict(replicates=2, streams=2, epsilon=1.0, horizon=16)),
                        ("HybridMechanism", dict(replicates=2, streams=2, epsilon=1.0)),
                        ("IntervalMean", dict(replicates=2, streams=2, v=1.5, epsilon=1.0))):
        for param in params:
            for label, v, bad in TYPE_SCALARS:
                fz.call(f"types mechanism {cls}", f"{param}={label}",
                        lambda cls=cls, params=params, param=param, v=v: getattr(M, cls)(
                            **(params | {param: _fresh(v)}), rng=np.random.default_rng(0), ledger=Ledger.unrecorded(2, 2)),
                        bad=bad, names=(param,))
    # environments: means, tables, tapes
    for label, build, verdict in TYPE_ARRAYS:
        for cls in (Bernoulli, TruncatedExponential, ClippedGaussian):
            means = build(np.array([0.3, 0.6]))
            fz.call(f"types env {cls.__name__}", f"means={label}",
                    lambda cls=cls, means=means: simulate(make_policy("ucb1"), cls(means), 6, 2, seed=0, progress=False),
                    bad=verdict == "bad", names=("means", "rates", "locs", "arm"), ok_required=verdict == "ok")
        table = build(np.full((10, 2), 0.5))
        fz.call("types env RewardTable", f"table={label}",
                lambda t=table: simulate(make_policy("exp3"), RewardTable(t), 6, 2, seed=0, progress=False),
                bad=verdict == "bad", names=("table", "reward"), ok_required=verdict == "ok")
        tape = build(np.full((2, 10), 0.5))
        fz.call("types env RewardTape", f"tape={label}",
                lambda t=tape: simulate(make_policy("dp_ucb"), RewardTape(t), 6, 2, seed=0, progress=False),
                bad=verdict == "bad", names=("tape", "reward"), ok_required=verdict == "ok")
        # contextual: a logged data set's every column
        rng = np.random.default_rng(0)
        cols = dict(contexts=rng.random((20, 5)), actions=np.zeros(20, int), rewards=np.full(20, 0.5),
                    propensities=np.full(20, 0.5))
        for col, good in cols.items():
            v = build(good)
            fz.call("types contextual LoggedData", f"{col}={label}",
                    lambda col=col, v=v: replay(make_policy("lin_ucb"), LoggedData(**(cols | {col: v}), n_arms=2)),
                    bad=verdict == "bad" and not (label == "list-with-bool" and col in ("contexts", "rewards")),
                    names=(col, col.rstrip("s")),  # (bool contexts and rewards: one-hot features, clicks; documented)
                    ok_required=verdict == "ok" and not (col == "actions" and label in (
                        "float16", "float32", "object-numbers", "list-of-np-scalars")))  # (actions: an integer dtype)
        theta = build(np.tile(np.array([1.0, 0.6, 0.0, 0.0, 0.0]) / math.sqrt(2), (2, 1)))
        fz.call("types env LinearContextual", f"theta={label}",
                lambda th=theta: LinearContextual(dim=5, n_arms=2, theta=th), bad=verdict == "bad", names=("theta",),
                ok_required=verdict == "ok" and label != "float16")  # (float16 rounds theta off its required form)
    for label, v, bad in TYPE_SCALARS:
        for param in ("dim", "n_arms", "noise", "theta_seed"):
            base = dict(dim=5, n_arms=2)
            fz.call("types env LinearContextual", f"{param}={label}",
                    lambda param=param, v=v: simulate(make_policy("lin_ucb"), LinearContextual(**(base | {param: _fresh(v)})),
                                                      6, 2, seed=0, progress=False),
                    bad=bad, names=(param, "horizon"))  # (127 arms need a horizon >= 127: named so)
    # graphs: networkx graphs whose nodes are not 0..K-1, directed, multi; adjacency in unusual clothes
    import networkx as nx

    from privbandit.envs.graphs import check_adjacency

    graphs = {
        "nx_str_nodes": (nx.relabel_nodes(nx.path_graph(3), {0: "x", 1: "y", 2: "z"}), "bad"),
        "nx_1_based": (nx.relabel_nodes(nx.path_graph(3), {0: 1, 1: 2, 2: 3}), "bad"),
        "nx_np_int_nodes": (nx.relabel_nodes(nx.path_graph(3), {i: np.int64(i) for i in range(3)}), "ok"),
        "nx_bool_nodes": (nx.Graph([(False, True), (True, 2)]), "edge"),
        "nx_float_int_nodes": (nx.Graph([(0.0, 1.0), (1.0, 2.0)]), "edge"),
        "nx_tuple_nodes": (nx.Graph([((0,), (1,)), ((1,), (2,))]), "bad"),
        "nx_digraph_sym": (nx.DiGraph([(0, 1), (1, 0), (1, 2), (2, 1)]), "edge"),
        "nx_multidigraph": (nx.MultiDiGraph([(0, 1), (1, 2)]), "edge"),
        "nx_empty": (nx.Graph(), "bad"), "nx_big_labels": (nx.Graph([(0, 1), (1, 10**6)]), "bad"),
        "nx_negative_nodes": (nx.Graph([(-1, 0), (0, 1)]), "bad"),
    }
    for label, build, verdict in TYPE_ARRAYS:
        if label in ("generator", "lying-len"):
            continue
        graphs[f"adjacency {label}"] = (build(np.eye(3)), "edge" if verdict != "bad" or label == "list-with-bool"
                                        else "bad")
    for label, (g, verdict) in graphs.items():
        fz.call("types env GraphFeedback", f"graph={label}",
                lambda g=g: simulate(make_policy("ucb_n"), GraphFeedback(Bernoulli([0.2, 0.5, 0.8]), g), 6, 2,
                                     seed=0, progress=False),
                bad=verdict == "bad", names=("graph", "adjacency", "node", "arm"), ok_required=verdict == "ok")
        fz.call("types graphs.check_adjacency", label, lambda g=g: check_adjacency(g, 3), bad=verdict == "bad",
                names=("graph", "adjacency", "node"), ok_required=verdict == "ok")
    # the deployment API: create's numbers, update's reward
    from privbandit.deploy import Deployment

    tmp = Path(tempfile.mkdtemp(prefix="privbandit-fuzz16-"))
    try:
        good = tmp / "good.db"
        Deployment.create(good, "dp_ucb", n_arms=2, budget=50.0, delta=1e-6, seed=1).close()
        for label, v, bad in TYPE_SCALARS:
            for param in ("n_arms", "budget", "delta", "horizon", "seed"):
                kw = dict(n_arms=2, budget=5.0, delta=1e-6, seed=1) | {param: _fresh(v)}
                fz.call("types Deployment.create", f"{param}={label}",
                        lambda kw=kw: Deployment.create(tmp / f"c{len(fz.results)}.db", "dp_ucb", **kw).close(),
                        bad=bad and not (param == "seed" and label == "1-elem-array"), names=(param,))
            fz.call("types Deployment.create", f"params.epsilon={label}",
                    lambda v=v: Deployment.create(tmp / f"c{len(fz.results)}.db", "dp_ucb", params={"epsilon": _fresh(v)},
                                                  n_arms=2, budget=5.0, delta=1e-6).close(),
                    bad=bad and "float-" not in label, names=("epsilon", "params"))
            # (a float subclass in params is stored as JSON by float.__repr__: its value, consistently)

            def upd(v=v, which="reward"):
                with Deployment.open(good) as dep:
                    d = dep.select()
                    if which == "reward":
                        dep.update(d.decision, _fresh(v))
                    else:
                        dep.update(_fresh(v), 0.5)

            fz.call("types Deployment.update", f"reward={label}", upd, bad=bad, names=("reward",))
            fz.call("types Deployment.update", f"decision={label}", lambda u=upd: u(which="decision"),
                    bad=bad or not label.startswith(("int", "uint", "0d", "Fraction", "Decimal('2')")),
                    names=("decision",))
            def status(v=v):
                with Deployment.open(good) as dep:
                    dep.status(last=_fresh(v))

            fz.call("types Deployment.status", f"last={label}", status, bad=bad, names=("last",))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _rlimit_as(gib: float):
    """Cap this process's address space for a part that tries allocations beyond the machine (so a check
    that misses is a MemoryError here, not the machine swapping); returns the restore function."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = int(gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def fuzz_resources(fz: Fuzzer, tmp: Path) -> None:
    """Round 2, item 3: shapes and run sizes whose arrays exceed the machine's memory must be refused up
    front, naming the parameters (an estimate of the bytes before allocating), never a MemoryError; a
    KeyboardInterrupt during a run leaves no output file and no staging directory behind."""
    if os.environ.get("PRIVBANDIT_FUZZ_CHILD") != "resources":
        # in a child process: a check that misses is a MemoryError under the address-space cap, and a
        # MemoryError inside numba / BLAS can leave this process unusable (a segfault later, measured on
        # 990ee7c) -- the other parts must not inherit that
        import json

        dump = tmp / "resources.json"
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--only", "resources", "--dump", str(dump),
                               "--seed", str(fz.seed), "--limit", str(fz.cap)], env=dict(os.environ, PRIVBANDIT_FUZZ_CHILD="resources"),
                              capture_output=True, text=True, cwd=str(tmp))
        if dump.exists():
            fz.results.extend(tuple(r) for r in json.loads(dump.read_text()))
        if proc.returncode < 0 or not dump.exists():
            fz.results.append(("resources", "child process", "traceback",
                                f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"))
        return
    import networkx as nx

    from privbandit import budget, simulate, sweep
    from privbandit.engine import physical_memory
    from privbandit.envs import (Bernoulli, ClippedGaussian, GraphFeedback, RewardTable, RewardTape,
                                 TruncatedExponential)
    from privbandit.contextual import LinearContextual, LoggedData
    from privbandit.ledger import Ledger
    from privbandit import mechanisms as M
    from privbandit.policies import make_policy

    phys = physical_memory() or 16 * 2**30
    n = 2 * phys // 8  # entries whose float64 copy is twice the machine
    k_graph = math.isqrt(2 * phys) + 1  # nodes whose K x K bool adjacency is twice the machine
    restore = _rlimit_as(min(8.0, phys / 2**30 / 2))
    try:
        pol = make_policy("dp_ucb")
        cases = {
            "Bernoulli means (n,)": (lambda: Bernoulli(np.broadcast_to(0.5, (n,))), ("means",)),
            "TruncatedExponential rates (n,)": (lambda: TruncatedExponential(np.broadcast_to(0.5, (n,))), ("rates", "means")),
            "ClippedGaussian locs (n,)": (lambda: ClippedGaussian(np.broadcast_to(0.5, (n,))), ("locs", "means")),
            "RewardTable (n/2, 2)": (lambda: RewardTable(np.broadcast_to(0.5, (n // 2, 2))), ("table",)),
            "RewardTape (2, n/2)": (lambda: RewardTape(np.broadcast_to(0.5, (2, n // 2))), ("tape",)),
            "graph networkx K nodes": (lambda: GraphFeedback(Bernoulli(np.full(k_graph, 0.5)), nx.empty_graph(k_graph)),
                                       ("graph",)),
            "graph broadcast (K, K)": (lambda: GraphFeedback(Bernoulli(np.full(k_graph, 0.5)),
                                                             np.broadcast_to(True, (k_graph, k_graph))), ("graph",)),
            "budget.curve horizons (n,)": (lambda: budget.curve(pol, np.broadcast_to(10, (n,)), 1e-6, 2), ("horizons",)),
            "LoggedData contexts (n/5, 5)": (lambda: LoggedData(
                np.broadcast_to(0.5, (n // 5, 5)), np.broadcast_to(0, (n // 5,)), np.broadcast_to(0.5, (n // 5,)),
                np.broadcast_to(0.5, (n // 5,)), 2), ("contexts",)),
            "Ledger replicates x streams": (lambda: Ledger(10**6, 10**6), ("replicates", "streams")),
            "TreeMechanism replicates x streams": (lambda: M.TreeMechanism(
                replicates=10**6, streams=10**6, epsilon=1.0, horizon=16, rng=np.random.default_rng(0),
                ledger=Ledger.unrecorded(1, 1)), ("replicates", "streams")),
            "simulate horizon x replicates": (lambda: simulate(pol, Bernoulli([0.3, 0.6]), phys, 2, progress=False),
                                              ("horizon", "replicates")),
            "simulate lin_ucb replicates x K x dim^2": (
                lambda: simulate(make_policy("lin_ucb"), LinearContextual(dim=100, n_arms=16384), 16384,
                                 int(2 * phys // (8 * 16384 * 100 * 100)) + 1, progress=False),
                ("replicates", "arms", "dim")),
            "simulate private_lin_ucb contexts R x K x dim": (
                lambda: simulate(make_policy("private_lin_ucb", dim=1000), LinearContextual(dim=1000, n_arms=2**20),
                                 2**20, int(2 * phys // (8 * 2**20 * 1000)) + 1, progress=False),
                ("replicates", "arms", "dim")),
            "sweep horizon x replicates": (lambda: sweep([pol], [Bernoulli([0.3, 0.6])], phys, 2), ("horizon",)),
        }
        for label, (fn, names) in cases.items():
            fz.call("resources", label, fn, bad=True, names=names)
    finally:
        restore()
    # KeyboardInterrupt mid-run: the command line says "interrupted" (exit 130) and writes nothing
    from privbandit.cli import main

    for argv_tail, outputs in ((["run", "dp_ucb", "--horizon", "3000000", "--replicates", "4",
                                 "--quiet", "--save", "{d}/r.csv", "--plot", "{d}/r.png"], ("r.csv", "r.csv.json", "r.png")),
                               (["experiment", "tossou2016-2arm", "--horizon", "300000", "--replicates", "2",
                                 "--out", "{d}/exp"], ("exp/summary.csv", "exp/regret.png"))):
        for delay in (0.5, 2.0):
            d = tmp / f"interrupt{len(fz.results)}"
            d.mkdir()
            argv = [a.format(d=d) for a in argv_tail]

            def interrupted(argv=argv, d=d, outputs=outputs, delay=delay):
                def fire(signum, frame):
                    raise KeyboardInterrupt

                old = signal.signal(signal.SIGALRM, fire)
                signal.setitimer(signal.ITIMER_REAL, delay)
                try:
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                        rc = main(argv)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, old)
                left = [o for o in outputs if (d / o).exists()] + [str(p) for p in d.rglob(".privbandit-*")]
                if rc != 130 or left:
                    raise AssertionError(f"exit {rc}, left behind: {left}")

            outcome = fz.call("interrupt", f"{argv[0]} after {delay} s", interrupted, bad=False)
            _relabel(fz, outcome, "truncated")


#: a writer process for the kill tests: ``python -c WRITER kind target`` writes ``target`` over and over
#: (printing "ready" once the first write is done) until it is killed
_WRITER = r'''
import sys, numpy as np
kind, target = sys.argv[1], sys.argv[2]
import matplotlib
matplotlib.use("Agg")
from privbandit import simulate, sweep
from privbandit.envs import Bernoulli
from privbandit.policies import make_policy
if kind in ("save_csv", "save_parquet"):
    res = simulate(make_policy("dp_ucb"), Bernoulli([0.3, 0.6]), 20000, 2, seed=0, progress=False,
                   checkpoints=np.arange(1, 20001))
    write = lambda: res.save(target)
elif kind == "sweep_plot":
    sw = sweep([make_policy("dp_ucb"), make_policy("ucb1")], [Bernoulli([0.3, 0.6])], 200, 2, seed=0)
    write = lambda: sw.plot(target)
write()
print("ready", flush=True)
while True:
    write()
'''


def _complete(kind: str, path: Path, old: bytes) -> str:
    """'old' / 'new' when ``path`` holds the old bytes or a whole new file; else what is wrong."""
    if not path.exists():
        return "missing"
    data = path.read_bytes()
    if data == old:
        return "old"
    if kind == "save_csv":
        import pandas as pd

        try:
            frame = pd.read_csv(io.BytesIO(data))
        except Exception as exc:  # noqa: BLE001
            return f"unreadable ({type(exc).__name__})"
        return "new" if len(frame) == 20000 and data.endswith(b"\n") else f"truncated ({len(frame)} rows)"
    if kind == "sweep_plot":
        return "new" if data.startswith(b"\x89PNG") and data.rstrip().endswith(b"IEND\xaeB`\x82") else \
            f"truncated ({len(data)} bytes)"
    if kind == "save_parquet":
        return "new" if data.startswith(b"PAR1") and data.endswith(b"PAR1") else f"truncated ({len(data)} bytes)"
    return "unknown kind"


def fuzz_kills(fz: Fuzzer, tmp: Path, quick: bool) -> None:
    """Round 2, item 2: SIGKILL every writer at random points. A file output must afterwards hold its old
    complete content or a new complete one; a deployment store must reopen with every acknowledged call,
    an odometer >= the spend of every returned decision, no decision lost or credited twice."""
    rng = random.Random(fz.rng.random())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([_tree()] + sys.path))
    kills = 3 if quick else 6
    writers = ["save_csv", "sweep_plot"]
    try:
        import pyarrow  # noqa: F401

        writers.append("save_parquet")
    except ImportError:
        pass
    for kind in writers:
        suffix = {"save_csv": ".csv", "save_parquet": ".parquet"}.get(kind, ".png")
        for i in range(kills):
            target = tmp / f"kill_{kind}_{i}{suffix}"
            old = b"OLD CONTENT, complete\n"
            target.write_bytes(old)
            proc = _spawn([sys.executable, "-c", _WRITER, kind, str(target)], env=env, cwd=str(tmp),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

            def kill_once(proc=proc, target=target, kind=kind, old=old):
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(proc.stderr.read()[-500:])
                time.sleep(rng.uniform(0.0, 0.6))
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                proc.stdout.close()
                proc.stderr.close()
                state = _complete(kind, target, old)
                if state not in ("old", "new"):
                    raise AssertionError(state)

            outcome = fz.call("kill writer", f"{kind} #{i}", kill_once, bad=False)
            _relabel(fz, outcome, "truncated")
    # the deployment store: a writer selects, updates, snapshots, closes and reopens; killed at random
    from privbandit.deploy import Deployment
    from privbandit.audit.deployment import deployment_audit

    worker = r'''
import sys, numpy as np
from privbandit.deploy import Deployment
path, steps = sys.argv[1], int(sys.argv[2])
dep = Deployment.open(path)
rng = np.random.default_rng(int(sys.argv[3]))
pending = []
for step in range(steps):
    u = rng.random()
    if pending and (len(pending) >= 3 or u < 0.45):
        d, arm = pending.pop(int(rng.integers(len(pending))))
        r = float(np.random.default_rng([12345, d]).random() < (0.2, 0.5, 0.8)[arm])
        dep.update(d, r)
        print("U", d, r, flush=True)
    elif u < 0.9:
        dec = dep.select()
        pending.append((dec.decision, dec.arm))
        print("S", dec.decision, dec.arm, flush=True)
    elif u < 0.95:
        dep.snapshot()
    else:
        dep.close()
        dep = Deployment.open(path)
'''
    for policy, params in (("dp_ucb", {}), ("gaussian_ts", {"b": 2, "c": 50.0}), ("dp_ts", {}), ("private_ucb", {})):
        path = tmp / f"kill_{policy}.db"
        Deployment.create(path, policy, params=params, n_arms=3, budget=1e6, delta=1e-6, horizon=100_000, seed=3,
                          synchronous="normal").close()
        acked_s, acked_u = {}, {}
        for i in range(kills):
            proc = _spawn([sys.executable, "-c", worker, str(path), "100000", str(1000 * i + 1)], env=env,
                                    cwd=str(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

            def kill_store(proc=proc, path=path):
                first = proc.stdout.readline()
                if not first:
                    raise RuntimeError(proc.stderr.read()[-500:])
                time.sleep(rng.uniform(0.0, 0.4))
                os.kill(proc.pid, signal.SIGKILL)
                rest = proc.stdout.read()
                proc.wait()
                proc.stdout.close()
                proc.stderr.close()
                for kind, *f in (ln.split() for ln in [first, *rest.splitlines()] if ln.strip()):
                    (acked_s if kind == "S" else acked_u)[int(f[0])] = int(f[1]) if kind == "S" else float(f[1])
                with Deployment.open(path) as dep:  # the store reopens after every kill
                    rows = {r["decision"]: r for r in dep.decisions()}
                    status = dep.status()
                    policy_rounds = sum(r["kind"] == "policy" for r in rows.values())
                    spent = dep.odometer.epsilon(policy_rounds)
                    acked_policy = sum(rows[d]["kind"] == "policy" for d in acked_s if d in rows)
                    problems = []
                    if len(rows) != len(dep.decisions()) or status["policy_rounds"] != policy_rounds:
                        problems.append("policy rounds miscounted")
                    if status["spent_epsilon"] != spent or spent < dep.odometer.epsilon(acked_policy):
                        problems.append(f"odometer {status['spent_epsilon']} below the returned decisions' spend")
                    lost = [d for d, arm in acked_s.items() if d not in rows or rows[d]["arm"] != arm]
                    lost += [d for d, r in acked_u.items() if rows.get(d, {}).get("reward") != r]
                    if lost:
                        problems.append(f"acknowledged calls lost: {lost[:5]}")
                    logged = [sum(r["releases"][a] + (r["update_releases"] or [0] * 3)[a] for r in rows.values())
                              for a in range(3)]
                    if status["releases_per_arm"] != logged or status["applied_updates"] > policy_rounds:
                        problems.append("releases or updates credited twice")
                res = deployment_audit(path)
                if res.verdict != "CONSISTENT":
                    problems.append(f"audit {res.verdict}")
                if problems:
                    raise AssertionError("; ".join(problems))

            outcome = fz.call("kill deploy store", f"{policy} kill #{i}", kill_store, bad=False)
            _relabel(fz, outcome, "truncated")



# === Session 17 (s17/fuzz): round 3 -- output sets, files read, huge numbers, environment, store, concurrency ===
#: a saver process: ``python -c SAVER path mode n``: saves a run of horizon 40 then 30, alternately, n times
#: (printing "saved" after each); mode "kill@K" SIGKILLs itself right after its K-th os.replace -- a real kill at
#: a chosen point of the move (K = 1: the data file moved, its metadata not yet); "run" saves through the
#: command line's ``run --save`` instead
_SAVER = r"""
import os, signal, sys
from privbandit import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import make_policy
path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [simulate(make_policy("dp_ucb"), Bernoulli([0.3, 0.6]), h, 2, seed=h, progress=False) for h in (40, 30)]
if mode.startswith("kill@"):
    real, calls, at = os.replace, [0], int(mode[5:])
    def replace(a, b):
        real(a, b)
        calls[0] += 1
        if calls[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)
    os.replace = replace
for i in range(n):
    if mode == "run":
        from privbandit.cli import main
        main(["run", "dp_ucb", "--horizon", str((40, 30)[i % 2]), "--replicates", "2", "--seed", str((40, 30)[i % 2]),
              "--quiet", "--save", path])
    else:
        runs[i % 2].save(path)
    print("saved", flush=True)
"""


def _pair_state(path: Path) -> str:
    """'one save' when the reader gives ``path`` and ``path.json`` as the two files of one save (the frame's rows
    are the metadata's horizon); 'detected' when the reader refuses them as not one; else 'mismatched'. The
    reader is ``privbandit.saved.load_saved`` where it exists, else pandas and json (nothing checks a pair)."""
    import json as _json

    import pandas as pd

    try:
        from privbandit.saved import load_saved
    except ImportError:
        meta = _json.loads(Path(str(path) + ".json").read_text())
        frame = pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)
    else:
        try:
            frame, meta = load_saved(path)
        except ValueError as exc:
            return "detected" if "does not match" in str(exc) else f"mismatched (refused for another reason: {exc})"
    if len(frame) == meta["horizon"]:
        return "one save"
    return f"mismatched ({len(frame)} rows, metadata horizon {meta['horizon']}, read as one save)"


def fuzz_sets(fz: Fuzzer, tmp: Path, quick: bool) -> None:
    """Round 3, item 1: an output set (``Result.save``'s data file and its ``.json`` metadata) under real
    SIGKILLs -- at the one point between the two moves (deterministic), at random points of a save loop -- and
    under concurrent savers. Afterwards the pair must be one save, or be refused by the reader as not one
    (``detected``); ``mismatched`` (a pair of two saves that nothing flags) is the finding."""
    from privbandit import simulate
    from privbandit.envs import Bernoulli
    from privbandit.policies import make_policy

    rng = random.Random(fz.rng.random())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([_tree()] + sys.path))
    d = tmp / "sets"
    d.mkdir()
    fz.limit = 120.0  # (a saver process starts in ~3 s of CPU: 15 s wall at load 10)
    old = simulate(make_policy("dp_ucb"), Bernoulli([0.3, 0.6]), 30, 2, seed=30, progress=False)
    suffixes = [".csv"]
    with contextlib.suppress(ImportError):
        import pyarrow  # noqa: F401

        suffixes.append(".parquet")

    def run_saver(path, mode, n, kill_after=None):
        proc = _spawn([sys.executable, "-c", _SAVER, str(path), mode, str(n)], env=env, cwd=str(d),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if kill_after is not None:
            proc.stdout.readline()
            time.sleep(kill_after)
            os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
        if proc.returncode not in (0, -signal.SIGKILL):
            raise RuntimeError(err.strip()[-300:])

    for suffix in suffixes:
        for mode in ("kill@1", "kill@2", "run kill@1"):
            path = d / f"between{len(fz.results)}{suffix}"
            old.save(path)

            def between(path=path, mode=mode):
                if mode.startswith("run"):  # the command line's nested staging: its own moves count too
                    run_saver(path, "kill@1", 1)
                else:
                    run_saver(path, mode, 1)
                state = _pair_state(path)
                if state.startswith("mismatched"):
                    raise AssertionError(state)

            outcome = fz.call("set kill between moves", f"{suffix} {mode}", between, bad=False)
            _relabel(fz, outcome, "mismatched")
        for i in range(2 if quick else 4):
            path = d / f"random{len(fz.results)}{suffix}"
            old.save(path)

            def at_random(path=path):
                run_saver(path, "loop", 10**6, kill_after=rng.uniform(0.0, 0.5))
                state = _pair_state(path)
                if state.startswith("mismatched"):
                    raise AssertionError(state)
                # (session 18) the kill may leave its staging directory: the next save there removes it
                old.save(path)
                left = [p.name for p in path.parent.glob(".privbandit-*")]
                if left:
                    raise AssertionError(f"staging directories left after the next save: {left}")

            outcome = fz.call("set kill at random", f"{suffix} #{i}", at_random, bad=False)
            _relabel(fz, outcome, "mismatched")
        path = d / f"concurrent{suffix}"
        old.save(path)

        def concurrent(path=path):
            # three savers, 10 saves each, into one path; pairs are sampled by a reader meanwhile too
            procs = [_spawn([sys.executable, "-c", _SAVER, str(path), "loop", "10"], env=env, cwd=str(d),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
            seen = Counter()
            while any(p.poll() is None for p in procs):
                with contextlib.suppress(FileNotFoundError, ValueError):
                    seen[_pair_state(path).split(" (")[0]] += 1
                time.sleep(0.01)
            for p in procs:
                p.communicate()
            seen[_pair_state(path).split(" (")[0]] += 1
            if seen["mismatched"]:
                raise AssertionError(f"pairs sampled while three processes saved: {dict(seen)}")

        fz.limit, limit = 400.0, fz.limit
        outcome = fz.call("set concurrent savers", f"{suffix} 3 x 10", concurrent, bad=False)
        fz.limit = limit
        _relabel(fz, outcome, "mismatched")



def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def fuzz_reads(fz: Fuzzer, tmp: Path) -> None:
    """Round 3, item 2: files the toolkit reads, edited by hand or not files at all -- a saved result and its
    metadata (``privbandit.saved.load_saved``), a logged data set (``load_log``), a replay log (``deploy
    replay``) and a key file (``--key-file``, ``PRIVBANDIT_DEPLOY_KEY_FILE``): truncated, wrong types, NaN / inf,
    numbers beyond the floats, wrong shapes, a BOM, unicode, symlinks, FIFOs (open() blocks on one: ``hang``),
    directories."""
    import json as _json

    from privbandit import simulate
    from privbandit.contextual import load_log
    from privbandit.deploy import Deployment
    from privbandit.envs import Bernoulli
    from privbandit.policies import make_policy

    d = tmp / "reads"
    d.mkdir()
    fz.limit = 30.0  # (a FIFO blocks open() forever: each such case is a hang after this limit)
    # -- a saved result and its metadata
    try:
        from privbandit.saved import load_saved
    except ImportError:
        load_saved = None
    res = simulate(make_policy("dp_ucb"), Bernoulli([0.3, 0.6]), 25, 2, seed=1, progress=False)
    good = d / "good.csv"
    res.save(good)
    data, meta_text = good.read_text(), Path(str(good) + ".json").read_text()
    meta = _json.loads(meta_text)

    def edited(**changes):
        m = dict(meta)
        for k, v in changes.items():
            if v is KeyError:
                m.pop(k, None)
            else:
                m[k] = v
        return _json.dumps(m)

    cases = {  # name: (data text or callable(path), metadata text or callable(path), valid?)
        "good": (data, meta_text, True),
        "bom metadata": (data, "\ufeff" + meta_text, True),
        "data truncated": (data[:len(data) // 2], meta_text, False),
        "data one value edited": (data.replace(",", ";", 1), meta_text, False),
        "data empty": ("", meta_text, False),
        "data binary": ("\x00\xff\xfe" * 10, meta_text, False),
        "metadata truncated": (data, meta_text[:len(meta_text) // 2], False),
        "metadata empty": (data, "", False),
        "metadata not an object": (data, "[1, 2]", False),
        "metadata deep": (data, "[" * 100_000 + "]" * 100_000, False),
        "metadata utf-16": (data, meta_text.encode("utf-16").decode("latin-1"), False),
        "metadata horizon text": (data, edited(horizon="25"), False),
        "metadata horizon nan": (data, edited(horizon=math.nan), False),
        "metadata horizon 1e400": (data, edited(horizon=10**400), False),
        "metadata horizon float": (data, edited(horizon=25.0), False),
        "metadata horizon other": (data, edited(horizon=26), False),
        "metadata delta inf": (data, edited(delta=math.inf), False),
        "metadata delta text": (data, edited(delta="1e-6"), False),
        "metadata replicates -1": (data, edited(replicates=-1), False),
        "metadata policy list": (data, edited(policy=[1]), False),
        "metadata digest missing": (data, edited(data_sha256=KeyError), False),
        "metadata digest number": (data, edited(data_sha256=1), False),
        "metadata digest other": (data, edited(data_sha256="0" * 64), False),
        "metadata missing": (data, None, False),
        "metadata directory": (data, "DIR", False),
        "metadata fifo": (data, "FIFO", False),
        "metadata huge": (data, " " * (17 * 2**20) + meta_text, False),
        "data directory": ("DIR", meta_text, False),
        "data fifo": ("FIFO", meta_text, False),
        "data symlink": ("LINK", meta_text, True),
        "data dangling": ("DANGLING", meta_text, False),
    }
    for i, (name, (data_text, meta_text_i, valid)) in enumerate(cases.items()):
        path = d / f"saved{i}.csv"
        meta_path = Path(str(path) + ".json")
        for target, text in ((path, data_text), (meta_path, meta_text_i)):
            if text is None:
                continue
            if text == "DIR":
                target.mkdir()
            elif text == "FIFO":
                _fifo(target)
            elif text == "LINK":
                target.symlink_to(good)
            elif text == "DANGLING":
                target.symlink_to(d / "gone.csv")
            else:
                target.write_text(text, encoding="utf-8", errors="surrogateescape") if "utf-16" not in name or \
                    target != meta_path else target.write_bytes(text.encode("latin-1"))
        if load_saved is None:
            fz.results.append(("reads load_saved", name, "traceback", "no reader: privbandit.saved does not exist"))
            continue
        fz.call("reads load_saved", name, lambda path=path: load_saved(path), bad=not valid,
                names=("path", "metadata", str(path.name)))
    # -- a logged data set
    log = "x0,x1,action,reward,propensity\n" + "".join(f"0.{i},0.5,{i % 2},0.5,0.5\n" for i in range(10))
    logs = {
        "bom.csv": ("\ufeff" + log, True), "inf.csv": (log.replace("0.1,0.5", "inf,0.5", 1), False),
        "1e400.csv": (log.replace("0.1,0.5", "1e400,0.5", 1), False),
        "reward_inf.csv": (log.replace(",0.5,0.5\n", ",inf,0.5\n", 1), False),
        "propensity_0.csv": (log.replace(",0.5,0.5\n", ",0.5,0\n", 1), False),
        "action_big.csv": (log.replace(",1,0.5", ",99999999999999999999,0.5", 1), False),
        "action_negative.csv": (log.replace(",1,0.5", ",-1,0.5", 1), False),
        "unicode_header.csv": (log.replace("x0", "\u00e9\u4e2d", 1), True),
        "duplicate_header.csv": (log.replace("x1", "x0", 1), False),
        "crlf.csv": (log.replace("\n", "\r\n"), True), "fifo.csv": ("FIFO", False), "link.csv": ("LINK", True),
        "wide.csv": (log.replace("0.5\n", "0.5,9\n", 1), False), "quoted.csv": (log.replace("0.5,0.5\n", '"0.5",0.5\n', 1), True),
    }
    with contextlib.suppress(ImportError):  # (session 18) Parquet logs: a name twice in the schema, not Parquet
        import pyarrow as pa
        import pyarrow.parquet as pq

        cols = [pa.array(np.arange(10) / 10), pa.array(np.full(10, 0.5)), pa.array(np.arange(10) % 2),
                pa.array(np.full(10, 0.5)), pa.array(np.full(10, 0.5))]
        for name, names in (("dup_context.parquet", ["x0", "x0", "action", "reward", "propensity"]),
                            ("dup_reward.parquet", ["x0", "x1", "action", "reward", "reward"]),
                            ("good.parquet", ["x0", "x1", "action", "reward", "propensity"])):
            pq.write_table(pa.Table.from_arrays(cols, names=names), d / ("log_" + name))
            logs[name] = ("WRITTEN", name == "good.parquet")
        (d / "log_garbage.parquet").write_bytes(b"PAR1 not parquet PAR1")
        logs["garbage.parquet"] = ("WRITTEN", False)
    for name, (text, valid) in logs.items():
        path = d / ("log_" + name)
        if text == "WRITTEN":
            fz.call("reads load_log", name, lambda p=path: load_log(p), bad=not valid,
                    names=("path", "log", "column", "reward", "action", "propensit", "context", path.name))
            continue
        if text == "FIFO":
            _fifo(path)
        elif text == "LINK":
            (d / "log_target.csv").write_text(log)
            path.symlink_to(d / "log_target.csv")
        else:
            path.write_text(text)
        fz.call("reads load_log", name, lambda p=path: load_log(p), bad=not valid,
                names=("path", "log", "column", "reward", "action", "propensit", "context", path.name))
    # -- a replay log and a key file, through the command line
    store = d / "store.db"
    Deployment.create(store, "dp_ucb", n_arms=2, budget=5.0, delta=1e-6, seed=1).close()
    tables = {"bom.csv": ("\ufeffarm0,arm1\n0.5,0.2\n", True), "inf.csv": ("arm0,arm1\ninf,0.2\n", False),
              "1e400.csv": ("arm0,arm1\n1e400,0.2\n", False), "crlf.csv": ("arm0,arm1\r\n0.5,0.2\r\n", True),
              "fifo.csv": ("FIFO", False), "utf16.csv": ("UTF16", False),
              "long_field.csv": ("arm0,arm1\n" + "1" * 200_000 + ",0.2\n", False),
              "many_rows_bad_tail.csv": ("arm0,arm1\n" + "0.5,0.2\n" * 50 + "0.5,x\n", False)}
    for name, (text, valid) in tables.items():
        path = d / ("replay_" + name)
        if text == "FIFO":
            _fifo(path)
        elif text == "UTF16":
            path.write_bytes("arm0,arm1\n0.5,0.2\n".encode("utf-16"))
        else:
            path.write_text(text)
        fz.cli("reads deploy replay", ["deploy", "replay", str(store), str(path)], bad=not valid)
    keys = {"good": b"0123456789abcdef-a-key-of-32-byt\n", "empty": b"", "short": b"abc\n", "fifo": "FIFO",
            "dir": "DIR", "huge": b"k" * (1 << 17), "binary": bytes(range(256)), "missing": None,
            # (session 18: obviously weak keys, refused for a new store)
            "zeros": b"\x00" * 32, "one byte": b"k" * 32 + b"\n", "pattern": b"\x01\x02" * 16,
            "almost one byte": b"0" * 31 + b"1"}
    for name, content in keys.items():
        path = d / f"key_{name}"
        if content == "FIFO":
            _fifo(path)
        elif content == "DIR":
            path.mkdir()
        elif content is not None:
            path.write_bytes(content)
        kstore = d / f"kstore_{name}.db"
        fz.cli("reads --key-file", ["deploy", "init", str(kstore), "--policy", "dp_ucb", "--n-arms", "2", "--budget",
                                    "5", "--delta", "1e-6", "--key-file", str(path)],
               bad=name not in ("good", "binary"))
        if name in ("zeros", "one byte", "pattern", "almost one byte"):  # (the refusal must say why)
            entry, label, outcome, detail = fz.results[-1]
            if outcome == "good" and "key" not in detail.lower():
                fz.results[-1] = (entry, label, "unnamed", detail)



def fuzz_huge(fz: Fuzzer) -> None:
    """Round 3, item 1: huge-but-finite (and tiny) values for every numeric parameter of every registry policy and
    of the environments, run for 200 rounds: each must be refused by name or run cleanly -- an overflow later in
    the run (a RuntimeWarning: ``LinearContextual(noise=1e308)``, ``lin_ts(v=1e308)``) is the finding."""
    from privbandit import simulate
    from privbandit.contextual import LinearContextual
    from privbandit.envs import ClippedGaussian, TruncatedExponential
    from privbandit.policies import REGISTRY, make_policy

    values = [1e308, -1e308, 1.7976931348623157e308, 1e200, 1e154, 1e-308, 5e-324, 10**308]

    for name, cls in sorted(REGISTRY.items()):
        for param, p in inspect.signature(cls).parameters.items():
            if isinstance(p.default, (str, bool)):
                continue
            for v in values:
                fz.call(f"huge policy {name}", f"{param}={v!r}", _policy_case(name, param, v, 200, 1000), bad=False,
                        names=(param,))
    envs = {
        "LinearContextual": (lambda **k: LinearContextual(**({"dim": 3, "n_arms": 2} | k)), ("noise",), "lin_ucb"),
        "ClippedGaussian": (lambda **k: ClippedGaussian(**({"locs": [0.3, 0.6]} | k)), ("scale",), "ucb1"),
        "ClippedGaussian locs": (lambda v: ClippedGaussian([v, 0.5]), None, "ucb1"),
        "TruncatedExponential": (lambda v: TruncatedExponential([v, 1.0]), None, "ucb1"),
    }
    for ename, (make, params, policy) in envs.items():
        for param in params or (None,):
            for v in values:
                def run(make=make, param=param, v=v, policy=policy):
                    env = make(**{param: v}) if param else make(v)
                    simulate(make_policy(policy), env, 200, 2, seed=0, progress=False)

                fz.call(f"huge env {ename}", f"{param or 'value'}={v!r}", run, bad=False,
                        names=(param or "locs", "rates", "means"))


#: a child for the environment part: imports the package under the environment given and runs a small simulation
_ENV_CHILD = r"""
from privbandit import simulate
from privbandit.envs import Bernoulli
from privbandit.policies import make_policy
r = simulate(make_policy("dp_ucb"), Bernoulli([0.3, 0.6]), 300, 4, seed=0, progress=False)
print("ok", float(r.regret_mean[-1]))
"""


def fuzz_env(fz: Fuzzer, tmp: Path) -> None:
    """Round 3, item 2: the environment variables the package reads. ``PRIVBANDIT_JIT`` / ``PRIVBANDIT_NO_JIT``
    (read at import: a child process each) -- a bad value must be named on stderr (a warning) and the run must
    go on with the default, a valid one must change nothing; ``PRIVBANDIT_DEPLOY_KEY`` / ``..._KEY_FILE`` (read
    per call) through ``deploy init`` and ``select`` -- empty, short, huge, bytes that are not UTF-8, a FIFO."""
    base_env = dict(os.environ, PYTHONPATH=os.pathsep.join([_tree()] + sys.path))
    for var in ("PRIVBANDIT_JIT", "PRIVBANDIT_NO_JIT", "PRIVBANDIT_TRACEBACK"):
        base_env.pop(var, None)
    fz.limit = 120.0
    jit = {"PRIVBANDIT_JIT": ["always", "auto", "", "garbage", "ALWAYS", " always", "always\n", "x" * 100_000,
                              b"\xff\xfe".decode("utf-8", "surrogateescape")],
           "PRIVBANDIT_NO_JIT": ["1", "0", "", "true", "yes", "2", b"\xff".decode("utf-8", "surrogateescape")]}
    reference = None
    for var, texts in jit.items():
        for text in texts:
            valid = text in ("always", "auto", "", "1", "0")

            def child(var=var, text=text, valid=valid):
                nonlocal reference
                env = dict(base_env)
                env[var] = text
                proc = subprocess.run([sys.executable, "-c", _ENV_CHILD], env={k: os.fsencode(v) for k, v in env.items()},
                                      capture_output=True, text=True, errors="replace", timeout=110)
                lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
                if proc.returncode or "Traceback" in proc.stderr:
                    raise RuntimeError(f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
                if reference is None:
                    reference = proc.stdout
                if proc.stdout != reference:
                    raise RuntimeError(f"results differ under {var}={text[:20]!r}: {proc.stdout} vs {reference}")
                if valid and lines:
                    raise RuntimeError(f"a valid value printed: {lines[0][:200]}")
                if not valid:
                    if not any(var in ln for ln in lines):
                        raise ValueError(f"{var}={text[:20]!r} accepted silently")  # -> "unnamed" by the names check
                    raise ValueError(f"named: {[ln for ln in lines if var in ln][0][:200]}")

            fz.call("env import-time", f"{var}={text[:20]!r}", child, bad=not valid, names=("named",))
    # the deployment key variables, read at each call
    from privbandit.deploy.store import KEY_ENV, KEY_FILE_ENV

    d = tmp / "envkeys"
    d.mkdir()
    fifo = _fifo(d / "fifo")
    (d / "dir").mkdir()
    (d / "good").write_bytes(b"0123456789abcdef-a-key-of-32-byt")
    strong = "0123456789abcdef-a-key-of-32-byt"
    # (session 18: "k" * 32, " " * 32, a 2-byte pattern: obviously weak keys, refused for a new store)
    cases = [(KEY_ENV, strong, True), (KEY_ENV, "short", False), (KEY_ENV, "k" * 1_000_000, False),
             (KEY_ENV, strong * 30_000, True), (KEY_ENV, "k" * 32, False),
             (KEY_ENV, b"\xff\xfe".decode("utf-8", "surrogateescape") * 16, False), (KEY_ENV, " " * 32, False),
             (KEY_ENV, b"\xff\xfe".decode("utf-8", "surrogateescape") + strong, True),
             (KEY_FILE_ENV, str(d / "good"), True), (KEY_FILE_ENV, str(fifo), False), (KEY_FILE_ENV, str(d / "dir"), False),
             (KEY_FILE_ENV, str(d / "missing"), False), (KEY_FILE_ENV, "\x7f" * 5000, False)]
    saved = {v: os.environ.pop(v, None) for v in (KEY_ENV, KEY_FILE_ENV)}
    fz.limit = 8.0
    try:
        for i, (var, text, valid) in enumerate(cases):
            os.environ[var] = text
            store = d / f"s{i}.db"
            fz.cli("env key", ["deploy", "init", str(store), "--policy", "dp_ucb", "--n-arms", "2", "--budget", "5",
                               "--delta", "1e-6"], bad=not valid)
            entry, _, outcome, detail = fz.results[-1]
            if outcome == "good" and var not in detail and "key" not in detail.lower():
                outcome = "unnamed"  # (the one line must say which input it refuses)
            fz.results[-1] = (entry, f"{var}={text[:24]!r} init", outcome, detail)
            if valid:
                fz.cli("env key", ["deploy", "select", str(store)], bad=False)
                fz.results[-1] = (fz.results[-1][0], f"{var}={text[:24]!r} select", *fz.results[-1][2:])
            os.environ.pop(var)
    finally:
        for v, text in saved.items():
            os.environ.pop(v, None)
            if text is not None:
                os.environ[v] = text



#: hand edits of a deployment store's tables (SQL run on a copy): each makes the store say something its
#: calls did not record -- a tampered count, a malformed cell, a missing row -- or is outside its schema
_STORE_EDITS = {
    "releases not json": "UPDATE decisions SET releases = 'not json' WHERE id = 2",
    "releases 1e400": "UPDATE decisions SET releases = '[1e400, 0]' WHERE id = 2",
    "releases object": "UPDATE decisions SET releases = '{\"a\": 1}' WHERE id = 2",
    "releases negative": "UPDATE decisions SET releases = '[-1, 0]' WHERE id = 2",
    "releases wrong length": "UPDATE decisions SET releases = '[1, 0, 0]' WHERE id = 2",
    "releases text cell": "UPDATE decisions SET releases = 7 WHERE id = 2",
    "arm 99": "UPDATE decisions SET arm = 99 WHERE id = 2",
    "arm -1": "UPDATE decisions SET arm = -1 WHERE id = 2",
    "arm text": "UPDATE decisions SET arm = 'x' WHERE id = 2",
    "arm 1.5": "UPDATE decisions SET arm = 1.5 WHERE id = 2",
    "round -5": "UPDATE decisions SET round = -5 WHERE id = 2",
    "round text": "UPDATE decisions SET round = 'abc' WHERE id = 2",
    "round 1e300": "UPDATE decisions SET round = 1e300 WHERE id = 2",
    "reward nan text": "UPDATE updates SET reward = 'nan' WHERE decision_id = 2",
    "reward 1e308": "UPDATE updates SET reward = 1e308, raw_reward = 1e308 WHERE decision_id = 2",
    "reward -1": "UPDATE updates SET reward = -1 WHERE decision_id = 2",
    "reward blob": "UPDATE updates SET reward = x'00ff' WHERE decision_id = 2",
    "applied 7": "UPDATE updates SET applied = 7 WHERE decision_id = 2",
    "update of no decision": "UPDATE updates SET decision_id = 999 WHERE decision_id = 2",
    "decision deleted": "DELETE FROM decisions WHERE id = 2",
    "update deleted": "DELETE FROM updates WHERE decision_id = 2",
    "rounds -1": "UPDATE state SET rounds = -1",
    "rounds 10**18": "UPDATE state SET rounds = 1000000000000000000",
    "rounds text": "UPDATE state SET rounds = 'x'",
    "version text": "UPDATE state SET version = 'x'",
    "open_decision 999": "UPDATE state SET open_decision = 999",
    "blob garbage, digest matching": "UPDATE state SET blob = x'00112233', digest = "
                                     "'8ab0e1b0c7d79b4b7d6a0d8a0c2bd5ec8c27e13c4b7a6a8b0a3f2b1e6c5d4e3f'",
    "digest text": "UPDATE state SET digest = 'x'",
    "state row deleted": "DELETE FROM state",
    "config n_arms 1e400": "UPDATE meta SET value = json_set(value, '$.n_arms', 1e400) WHERE key = 'config'",
    "config n_arms text": "UPDATE meta SET value = json_set(value, '$.n_arms', '2') WHERE key = 'config'",
    "config budget -1": "UPDATE meta SET value = json_set(value, '$.budget', -1) WHERE key = 'config'",
    "config policy unknown": "UPDATE meta SET value = json_set(value, '$.policy', 'nope') WHERE key = 'config'",
    "config params bad": "UPDATE meta SET value = json_set(value, '$.params', json('{\"epsilon\": -1}')) WHERE key = 'config'",
    "config not object": "UPDATE meta SET value = '[1]' WHERE key = 'config'",
    "config nan": "UPDATE meta SET value = replace(value, '\"delta\": 1e-06', '\"delta\": NaN') WHERE key = 'config'",
    "meta format gone": "DELETE FROM meta WHERE key = 'format'",
    "decisions dropped": "DROP TABLE decisions",
    "decisions a view": "ALTER TABLE decisions RENAME TO d2; CREATE VIEW decisions AS SELECT * FROM d2",
    "updates column dropped": "ALTER TABLE updates DROP COLUMN created",
    "trigger rewriting rewards": "CREATE TRIGGER t AFTER INSERT ON updates BEGIN "
                                 "UPDATE updates SET reward = 1 WHERE decision_id = NEW.decision_id; END",
}


def fuzz_store(fz: Fuzzer, tmp: Path) -> None:
    """Round 3, item 2: a deployment store whose tables were edited by hand (``_STORE_EDITS``), then one that is
    read-only (file, directory), locked by another process for a moment, and a copy of the store taken while a
    transaction is open. An edited store must be refused (StoreError / ValueError) by open, select, update,
    status or the audit -- ``accepted`` when every one of them took it -- never a traceback."""
    from privbandit.audit.deployment import deployment_audit
    from privbandit.deploy import Deployment

    d = tmp / "store"
    d.mkdir()
    good = d / "good.db"
    with Deployment.create(good, "dp_ucb", n_arms=2, budget=50.0, delta=1e-6, seed=1) as dep:
        for _ in range(4):
            x = dep.select()
            dep.update(x.decision, 0.5)
        dep.select()  # (an open decision: id 5)
    for name, sql in _STORE_EDITS.items():
        path = d / f"edit{len(fz.results)}.db"
        shutil.copy(good, path)
        con = sqlite3.connect(path)
        con.executescript(sql)
        con.commit()
        con.close()

        def use(path=path):
            with Deployment.open(path) as dep:
                dep.status()
                x = dep.select()
                dep.update(x.decision, 0.25)
                dep.status(last=10)
            res = deployment_audit(path)
            if res.verdict != "CONSISTENT":
                raise ValueError(f"store: the audit says {res.verdict}")

        fz.call("store edited", name, use, bad=True, names=("store", str(path)))
    # read-only file and directory: refused by name (a reader cannot even open a WAL store read-only)
    ro = d / "ro"
    ro.mkdir()
    shutil.copy(good, ro / "s.db")
    os.chmod(ro / "s.db", 0o444)
    fz.call("store read-only", "file 0444", lambda: Deployment.open(ro / "s.db").select(), bad=os.geteuid() != 0,
            names=("store", "s.db"))
    os.chmod(ro, 0o555)
    fz.call("store read-only", "directory 0555", lambda: Deployment.open(ro / "s.db").select(), bad=os.geteuid() != 0,
            names=("store", "s.db"))
    os.chmod(ro, 0o755)
    # locked by another process for 3 s (an exclusive transaction): the call waits and then succeeds
    locked = d / "locked.db"
    shutil.copy(good, locked)
    holder = _spawn([sys.executable, "-c", "import sqlite3, sys, time\n"
                               "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                               "c.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(3)\n"
                               "c.execute('COMMIT')", str(locked)], stdout=subprocess.PIPE, text=True)
    holder.stdout.readline()
    fz.limit, limit = 60.0, fz.limit
    fz.call("store locked", "3 s exclusive lock", lambda: Deployment.open(locked).select(), bad=False)
    fz.limit = limit
    holder.wait()
    holder.stdout.close()



#: texts for an option at its edges: what session 15's numbers did not try (NUL, unicode, huge, paths, pairs)
EDGE_TEXTS = ["", " ", "\x00", "a\x00b", "\u00e9", "\ufeff1", "-", "--", "=", "x" * 10_000, "1" * 400, "1e308",
              "-1e308", "0x1p-1074", "1_000", "\u0661\u0660", "1e-999", "+1", "1.", ".5", "nan(1)", "Infinity"]
#: --param texts: name=value pairs that are nonsense, and two that are valid for dp_ucb
PARAM_TEXTS = {"epsilon=0.5": False, "epsilon=1e-300": False, "epsilon=nan": True, "epsilon=abc": True,
               "epsilon=1e400": True, "epsilon=": True, "=1": True, "epsilon": True, "nosuch=1": True,
               "epsilon==1": True, "epsilon=1=2": True, "epsilon=[1]": True, "epsilon=\x00": True,
               "epsilon=1,2": True, "\u00e9=1": True, "epsilon=inf": True, "EPSILON=1": True}


def fuzz_edges(fz: Fuzzer, tmp: Path) -> None:
    """Round 3, item 2: every option of every subcommand (``privbandit --help``, walked from the parser) at its
    edges: NUL bytes, unicode digits, a BOM, 10,000 characters, hex floats, subnormals, ``=``; ``--param`` pairs
    that are nonsense; output paths that are directories, NUL, unicode, too long; ``--min-version`` of every
    deploy subcommand. A one-line refusal or a run are both fine here; ``traceback`` / ``warning`` / ``hang``
    are the findings (``accepted`` only for the ``--param`` pairs known to be nonsense)."""
    import argparse as _argparse

    from privbandit.cli import build_parser
    from privbandit.deploy import Deployment

    d = tmp / "edges"
    d.mkdir()
    store = d / "store.db"
    Deployment.create(store, "dp_ucb", n_arms=2, budget=50.0, delta=1e-6, seed=1).close()
    (d / "log.csv").write_text("arm0,arm1\n0.5,0.2\n0.1,0.9\n")
    bases = {
        "audit": ["audit", "dp_ucb", "--tier", "smoke", "--horizon", "10"],
        "deploy init": ["deploy", "init", "{new}", "--policy", "dp_ucb", "--n-arms", "2", "--budget", "5",
                        "--delta", "1e-6"],
        "deploy select": ["deploy", "select", str(store)], "deploy update": ["deploy", "update", str(store),
                                                                             "--decision", "1", "--reward", "0.5"],
        "deploy status": ["deploy", "status", str(store)], "deploy replay": ["deploy", "replay", str(store), str(d / "log.csv")],
        "deploy audit": ["deploy", "audit", str(store)],
        "run": ["run", "dp_ucb", "--horizon", "20", "--replicates", "1", "--quiet"],
        "experiment": ["experiment", "tossou2016-2arm", "--horizon", "10", "--replicates", "1"],
        "budget": ["budget", "dp_ucb", "--horizon", "100"],
        "invert": ["invert", "dp_ucb_int", "--epsilon", "1", "--horizon", "100", "--solve-for", "v", "--bounds",
                   "1.01", "1.99"],
        "certify": ["certify", "--releases", "10"],
    }
    heavy = {"audit", "experiment"}  # (a valid value runs for seconds to minutes: only texts refused are driven)
    fz.limit = 60.0

    def options(parser, prefix):
        for a in parser._actions:
            if isinstance(a, _argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from options(sub, prefix + [name])
            elif a.option_strings and a.nargs != 0 and "-h" not in a.option_strings:
                yield " ".join(prefix), a

    for cmd, action in options(build_parser(), []):
        if cmd not in bases:
            continue
        opt = action.option_strings[-1]
        if opt == "--param":
            texts = PARAM_TEXTS
        elif opt in ("--save", "--plot", "--out"):
            ext = {"--save": ".csv", "--plot": ".png", "--out": ""}[opt]
            texts = {str(d): False, str(d / ("\u00e9" + ext)): False, str(d / ("x" * 300 + ext)): False,
                     str(d / "nodir" / ("x" + ext)): False, "/proc/x" + ext: False, str(d / ("a\x00b" + ext)): False,
                     str(store) + ("/x" + ext if ext else ""): False}
        else:
            texts = dict.fromkeys(EDGE_TEXTS, False)
        for text, nonsense in texts.items():
            if cmd in heavy and not nonsense and text not in ("\x00", "", "=", "x" * 10_000, "\u00e9"):
                continue
            argv = [a.replace("{new}", str(d / f"new{len(fz.results)}.db")) for a in bases[cmd]]
            values = [text] * (action.nargs if isinstance(action.nargs, int) else 1)
            if opt in argv and action.nargs not in ("+", "*"):
                i = argv.index(opt)
                n = action.nargs if isinstance(action.nargs, int) else 1
                argv[i + 1:i + 1 + n] = values
            else:
                argv += [opt, *values]
            if opt == "--param" and cmd not in ("run", "budget", "deploy init", "audit"):
                continue
            fz.cli(f"edges {cmd} {opt}", argv, bad=nonsense)
    # positional arguments: policy and experiment names, store and log paths
    for text in ["", "\x00", "dp_ucb\x00", "DP_UCB", "dp-ucb", "\u00e9", "x" * 10_000, "-1", "../dp_ucb"]:
        for cmd in ("run", "budget"):  # (DP_UCB and dp-ucb: documented spellings of dp_ucb)
            fz.cli(f"edges {cmd} POLICY", [cmd, text] + bases[cmd][2:], bad=text not in ("DP_UCB", "dp-ucb"))
        fz.cli("edges deploy select STORE", ["deploy", "select", text], bad=True)
        fz.cli("edges deploy replay LOG", ["deploy", "replay", str(store), text], bad=True)



_DEPLOY_WORKER = r"""
import sys
from privbandit.deploy import Deployment
from privbandit.audit.deployment import deployment_audit
path, role, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if role == "writer":
    with Deployment.open(path) as dep:
        for i in range(n):
            x = dep.select()
            dep.update(x.decision, (i % 3) / 2)
            if i % 7 == 0:
                dep.snapshot()
elif role == "reader":
    for i in range(n):
        with Deployment.open(path) as dep:
            dep.status(last=3)
        verdict = deployment_audit(path).verdict
        if verdict != "CONSISTENT":
            sys.exit(f"audit said {verdict} at read {i}")
print("done", flush=True)
"""


def fuzz_concurrency(fz: Fuzzer, tmp: Path) -> None:
    """Round 3, item 2: processes at once on one store -- two ``deploy init`` of one new path (exactly one must
    succeed, the other refuse in one line), two writers with a reader running status and the audit meanwhile
    (every audit CONSISTENT; afterwards every call counted once), and a writer racing a second ``create``."""
    from privbandit.audit.deployment import deployment_audit
    from privbandit.deploy import Deployment

    d = tmp / "concurrency"
    d.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([_tree()] + sys.path))
    fz.limit = 400.0
    for i in range(3):
        path = d / f"race{i}.db"

        def init_race(path=path):
            argv = [sys.executable, "-m", "privbandit", "deploy", "init", str(path), "--policy", "dp_ucb", "--n-arms",
                    "2", "--budget", "5", "--delta", "1e-6"]
            procs = [_spawn(argv, env=env, cwd=str(d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for _ in range(2)]
            outs = [p.communicate(timeout=300) for p in procs]
            codes = sorted(p.returncode for p in procs)
            errs = [e.strip() for _, e in outs if e.strip()]
            if codes != [0, 2] or len(errs) != 1 or len(errs[0].splitlines()) != 1 or "Traceback" in errs[0]:
                raise RuntimeError(f"exit codes {codes}, stderr {errs}")
            with Deployment.open(path) as dep:
                dep.select()

        fz.call("concurrency init race", f"#{i}", init_race, bad=False)
    path = d / "shared.db"
    Deployment.create(path, "dp_ucb", n_arms=2, budget=1e6, delta=1e-6, seed=3).close()

    def writers_and_reader():
        procs = [_spawn([sys.executable, "-c", _DEPLOY_WORKER, str(path), role, n], env=env, cwd=str(d),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for role, n in (("writer", "40"), ("writer", "40"), ("reader", "8"))]
        outs = [p.communicate(timeout=380) for p in procs]
        bad = [f"{p.args[3]}: exit {p.returncode}: {e.strip()[-200:]}" for p, (_, e) in zip(procs, outs) if p.returncode]
        if bad:
            raise RuntimeError("; ".join(bad))
        with Deployment.open(path) as dep:
            st = dep.status()
            rows = dep.decisions()
        # (a select while the other writer's round awaits its reward is a hold decision: not a policy round)
        counts = {k: st[k] for k in ("decisions", "policy_rounds", "hold_decisions", "exploit_decisions", "updates",
                                      "applied_updates", "pending")}
        if len(rows) != 80 or counts["decisions"] != 80 or counts["updates"] != 80 or counts["pending"] \
                or counts["policy_rounds"] + counts["hold_decisions"] + counts["exploit_decisions"] != 80 \
                or counts["applied_updates"] != counts["policy_rounds"]:
            raise AssertionError(f"two writers of 40 calls: {len(rows)} decisions logged, status counts {counts}")
        if deployment_audit(path).verdict != "CONSISTENT":
            raise AssertionError("audit after the writers")

    outcome = fz.call("concurrency writers+reader", "2 writers x 40, reader x 8", writers_and_reader, bad=False)
    _relabel(fz, outcome, "truncated")


def _round4():
    """Round 4 (session 18, s18/fuzz): numbers in other clothes, pickling, objects used after a failed call."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import fuzz_round4

    return fuzz_round4


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from privbandit.cli_checks import real, whole

    ap.add_argument("--seed", type=whole(0), default=15)
    ap.add_argument("--quick", action="store_true", help="fewer random command lines, no audit run")
    ap.add_argument("--only", default="cli,deploy,api,acc,mech,data,files")
    ap.add_argument("--show", type=whole(0), default=5, help="findings printed per entry point")
    ap.add_argument("--dump", help="also write every case's (entry, label, outcome, detail) to this JSON file")
    ap.add_argument("--limit", type=real(0, math.inf, lo_open=True), default=math.inf,
                    help="cap every case's time limit at this many seconds (cases then end as hang; a check that "
                         "no part leaves a process behind)")
    args = ap.parse_args(argv)
    if not args.limit > 0:
        ap.error(f"--limit must be > 0 seconds, got {args.limit}")
    global EXPECTED
    from privbandit.deploy import StoreError

    EXPECTED = (StoreError,)
    # imported before any case: a case's time limit (SIGALRM) firing inside a first import of scipy under
    # load left the module half-initialised, and every later case failed with its NameError
    import privbandit.audit.cli  # noqa: F401
    import privbandit.cli  # noqa: F401
    import scipy.ndimage  # noqa: F401
    import scipy.stats  # noqa: F401
    fz = Fuzzer(args.seed, cap=args.limit)
    tmp = Path(tempfile.mkdtemp(prefix="privbandit-fuzz-"))
    here = os.getcwd()
    os.chdir(tmp)  # (relative store names such as "1" are created here, not in the caller's directory)
    started = time.perf_counter()
    parts = {"cli": lambda: fuzz_cli(fz, tmp, args.quick), "deploy": lambda: fuzz_deploy(fz, tmp, args.quick),
             "api": lambda: fuzz_api(fz, args.quick), "acc": lambda: fuzz_accountants(fz),
             "mech": lambda: fuzz_mechanisms(fz), "data": lambda: fuzz_data(fz), "files": lambda: fuzz_files(fz, tmp),
             "types": lambda: fuzz_types(fz), "resources": lambda: fuzz_resources(fz, tmp),
             "kills": lambda: fuzz_kills(fz, tmp, args.quick), "sets": lambda: fuzz_sets(fz, tmp, args.quick),
             "reads": lambda: fuzz_reads(fz, tmp), "huge": lambda: fuzz_huge(fz), "env": lambda: fuzz_env(fz, tmp),
             "store": lambda: fuzz_store(fz, tmp), "edges": lambda: fuzz_edges(fz, tmp),
             "concurrency": lambda: fuzz_concurrency(fz, tmp),
             "numtypes": lambda: _round4().fuzz_numtypes(fz, args.quick), "pickle": lambda: _round4().fuzz_pickle(fz, tmp),
             "afterfail": lambda: _round4().fuzz_afterfail(fz, tmp)}
    try:
        for part in args.only.split(","):
            t0 = time.perf_counter()
            n0 = len(fz.results)
            fz.limit = 20.0  # (a part may set its own limit: not inherited by the next)
            try:
                parts[part]()
            except Exception:  # noqa: BLE001 -- a bug of the fuzzer itself: reported, the other parts still run
                import traceback

                traceback.print_exc()
                fz.results.append((f"fuzzer {part}", "crashed", "traceback", "the fuzzer itself raised"))
            print(f"[{part}: {len(fz.results) - n0} cases, {time.perf_counter() - t0:.0f} s]", file=sys.stderr)
    finally:
        left = _reap()  # (none: every case reaps its own; a part's crash between its spawn and its case would)
        if left:
            print(f"[{left} child process(es) still running at the end: killed]", file=sys.stderr)
        os.chdir(here)
        for root, dirs, _ in os.walk(tmp):
            for x in dirs:
                os.chmod(os.path.join(root, x), 0o700)
        shutil.rmtree(tmp, ignore_errors=True)
    if args.dump:
        import json

        Path(args.dump).write_text(json.dumps(fz.results))
    per = defaultdict(Counter)
    for entry, _, outcome, _ in fz.results:
        per[entry][outcome] += 1
    total = Counter(o for _, _, o, _ in fz.results)
    print(f"{len(fz.results)} cases in {time.perf_counter() - started:.0f} s (seed {args.seed}): "
          + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    print(f"{'entry point':<40} {'cases':>6} {'findings':>9}  outcomes")
    for entry in sorted(per):
        c = per[entry]
        print(f"{entry:<40} {sum(c.values()):>6} {sum(c[f] for f in FINDINGS):>9}  "
              + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    shown = Counter()
    print("\nfindings:")
    for entry, label, outcome, detail in fz.results:
        if outcome in FINDINGS and shown[entry] < args.show:
            shown[entry] += 1
            print(f"  [{outcome}] {entry} :: {label} :: {detail}")
    return 1 if any(total[f] for f in FINDINGS) else 0


if __name__ == "__main__":
    sys.exit(main())
