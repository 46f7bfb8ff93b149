"""Checks the command line makes before it computes anything.

* argparse ``type=`` factories that reject a bad number at parse time with a message naming the
  valid range (``whole``, ``real``): ``nan``, ``inf``, ``0`` or ``1.5`` never reach a computation;
* :func:`writable_file` / :func:`writable_dir` — an output path is checked (and a directory
  created) *before* a run of minutes, not after it;
* :func:`refuse_repeated_options` — ``--horizon 30 --horizon 40`` is an error, not "the last wins";
* :func:`require_extra` — an optional extra (matplotlib, pandas, pyarrow, dask) is imported up front,
  so a missing one is reported at once with the ``pip install`` line that fixes it.

Every failure is a ``ValueError`` (or ``argparse.ArgumentTypeError`` at parse time), which
``privbandit.cli.main`` turns into one line, ``privbandit: error: ...``, and exit status 2.
"""

from __future__ import annotations

import argparse
import decimal
import math
import os
import stat
import sys
from contextlib import contextmanager
from pathlib import Path

from accountants import _validate

#: which optional extra (pyproject.toml) provides each importable module
EXTRAS = {"matplotlib": "plot", "pandas": "frames", "pyarrow": "frames", "dask": "dask",
          "distributed": "dask", "tqdm": "progress"}


def _interval(lo, hi, lo_open: bool, hi_open: bool) -> str:
    left = "(" if lo_open or lo == -math.inf else "["
    right = ")" if hi_open or hi == math.inf else "]"
    # short where exact ("1e+30"), else every digit (the least normal float)
    return f"{left}{_validate.exact_text(lo)}, {_validate.exact_text(hi)}{right}"


def _shown(text: str) -> str:
    """The user's text in a message, shortened (``accountants._validate.shown``: a 5000-digit number
    is not echoed in full)."""
    return _validate.shown(text, quote=False)


def plain_number_text(text: str) -> bool:
    """Whether ``text`` spells a number the way the documentation does: ASCII, no ``_``. float(),
    int() and Decimal() also read digit-group underscores ("1_0" is 10: a mistyped "1.0" became a
    budget ten times larger) and any script's decimal digits (fullwidth "\uff11", Arabic-Indic
    "\u0663"), which the command line refuses rather than reads silently."""
    return text.isascii() and "_" not in text


_PLAIN = " (ASCII digits, no '_' separators)"


def real(lo: float = -math.inf, hi: float = math.inf, *, lo_open: bool = False, hi_open: bool = False):
    """An argparse type: a finite real number in the given interval (open or closed at each end)."""

    def parse(text: str) -> float:
        try:
            if not plain_number_text(text):
                raise ValueError(text)
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a real number in {_interval(lo, hi, lo_open, hi_open)}, "
                                             f"got {_validate.shown(text)}{_PLAIN * (not plain_number_text(text))}") from None
        ok = math.isfinite(value) and (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
        if not ok:
            raise argparse.ArgumentTypeError(f"must lie in {_interval(lo, hi, lo_open, hi_open)}, got {_shown(text)}")
        return value

    parse.__name__ = "real number"
    return parse


def whole(lo: int = 0, hi: float = math.inf):
    """An argparse type: a whole number in [lo, hi] (``1e5`` and ``100000`` both accepted).

    The text is read as an exact decimal, not through a float: ``1e23`` is 10^23, not the float
    99999999999999991611392, and ``1e30`` passes a bound of 10^30. A number beyond 4300 digits
    (Python's int conversion limit) is out of range, and is refused without being built."""

    def parse(text: str) -> int:
        try:
            exact = decimal.Decimal(text) if plain_number_text(text) else None
        except (decimal.InvalidOperation, ValueError, TypeError):
            exact = None
        if exact is None or not exact.is_finite() or exact != exact.to_integral_value():
            raise argparse.ArgumentTypeError(f"expected a whole number in {_interval(lo, hi, False, False)}, "
                                             f"got {_validate.shown(text)}{_PLAIN * (not plain_number_text(text))}")
        if exact.adjusted() >= 4300 or not lo <= exact <= (decimal.Decimal(hi) if math.isfinite(hi) else exact):
            raise argparse.ArgumentTypeError(f"must be a whole number in {_interval(lo, hi, False, False)}, "
                                             f"got {_shown(text)}")
        return int(exact)

    parse.__name__ = "whole number"
    return parse


positive = real(0.0, lo_open=True)
#: a delta or an error level: (0, 1), and a normal float, as the accountants require
#: (``accountants._validate.probability``; a subnormal alpha of 1e-320 made the audit's Wilson
#: interval NaN and printed RuntimeWarnings)
probability = real(sys.float_info.min, 1.0, hi_open=True)



def _delta_or_zero(text: str) -> float:
    """An argparse type: the delta of a certificate, 0 (pure DP: the accountants' exact pure epsilon, inf with
    a release that is not pure; session 15) or a normal float in (0, 1) as :data:`probability`."""
    try:
        # exactly zero (read as a decimal, session 16): float("1e-400") underflows to 0.0, and a delta the user
        # wrote as 1e-400 was certified as pure DP without a word
        if plain_number_text(text) and decimal.Decimal(text.strip()) == 0:
            return 0.0
    except (decimal.InvalidOperation, ValueError):
        pass
    try:
        return probability(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 0, pure DP)") from None


_delta_or_zero.__name__ = "real number"
delta_or_zero = _delta_or_zero


def writable_file(path: str, option: str, suffixes: tuple[str, ...] | None = None) -> Path:
    """``path`` names a file that can be created: non-empty, an allowed suffix, an existing,
    writable parent directory, and not a directory itself."""
    if not path or not path.strip():
        raise ValueError(f"{option} needs a file name, got an empty string")
    p = Path(path)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise ValueError(f"{option} must end in {' or '.join(suffixes)}, got {path!r}")
    if p.is_dir():
        raise ValueError(f"{option} {path!r} is a directory; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"{option} {path!r}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{option} {path!r}: directory {str(parent)!r} is not writable")
    return p


def writable_dir(path: str, option: str) -> Path:
    """``path`` is (or is created as) a writable directory; created now, before any computing."""
    if not path or not path.strip():
        raise ValueError(f"{option} needs a directory name, got an empty string")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{option} {path!r} is a file, not a directory; give a directory name")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{option} {path!r}: cannot create the directory ({exc.strerror or exc})") from None
    if not os.access(p, os.W_OK):
        raise ValueError(f"{option} {path!r} is not a writable directory")
    return p


#: a staging directory's name: ``.privbandit-<host>-<pid>-<random>`` (host: 8 hex digits of this machine's name)
STAGE_PREFIX = ".privbandit-"
#: a staging directory named before session 18 (no host or pid) is removed once this old: a save stages for
#: seconds (a figure, a frame), so one this old was left by a process killed mid-save
LEGACY_STAGE_AGE = 3600.0


def _host_tag() -> str:
    import hashlib
    import socket

    return hashlib.sha256(socket.gethostname().encode(errors="surrogateescape")).hexdigest()[:8]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # (another user's process, or a pid the system cannot hold: not ours to judge dead)
    return True


def remove_stale_stages(directory: Path) -> list[str]:
    """Remove the staging directories in ``directory`` that a process killed mid-save left behind (session 18,
    s18/fuzz; a SIGKILL runs no ``finally``): those named by this machine for a process that no longer exists,
    and those named before session 18 older than :data:`LEGACY_STAGE_AGE`; only our own (same owner), only
    directories. A live saver's stage -- its process still running, here or on another machine sharing the
    directory -- is left alone. Returns the names removed. Called by every staged save into ``directory``."""
    import shutil
    import time

    removed = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(STAGE_PREFIX)]
    except OSError:
        return removed
    host, uid = _host_tag(), os.geteuid() if hasattr(os, "geteuid") else None
    for name in names:
        path = Path(directory) / name
        try:
            st = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid):
            continue
        parts = name[len(STAGE_PREFIX):].split("-")
        if len(parts) == 3 and parts[1].isdigit():
            stale = parts[0] == host and not _pid_alive(int(parts[1]))
        else:
            stale = time.time() - st.st_mtime > LEGACY_STAGE_AGE
        if stale:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(name)
    return removed


class _Stage:
    """A fresh private directory (``tempfile.mkdtemp``: mode 0700, a name no one else can have chosen) beside
    the destination, named for this machine and process (:func:`remove_stale_stages` removes it if the process
    is killed before its ``finally``); ``path(name)`` is where to write the file ``name``."""

    def __init__(self, directory: Path, option: str) -> None:
        import tempfile

        self.directory, self.option = directory, option
        remove_stale_stages(directory)
        try:
            self.tmp = Path(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{_host_tag()}-{os.getpid()}-", dir=directory))
        except OSError as exc:
            raise ValueError(f"{option} {str(directory)!r}: cannot write there ({exc.strerror or exc})") from None

    def path(self, name: str) -> str:
        return str(self.tmp / name)


@contextmanager
def staged_outputs(directory, option: str):
    """Write output files into a private directory beside ``directory`` and move each into ``directory``
    with ``os.replace`` on success (session 14, s14/deploy). Whatever already sits at a destination -- a
    symlink planted in a shared ``--out`` directory pointing at a file of the user's, a regular file --
    is replaced, never written through (pandas, matplotlib and open() follow a symlink: ``--out DIR``
    wrote through ``DIR/summary.csv -> ~/.bashrc``), and a reader never sees a half-written file. On an
    error nothing is moved and the private directory is removed.

    Each file is moved atomically, the set is not: files move in sorted name order, so a sidecar named after
    its data file (``r.csv.json``) moves after it (``r.csv``, a prefix, sorts first) and a kill between the
    two leaves new data beside the old sidecar -- which records its data file's digest
    (``privbandit.saved``), so a reader detects the mismatch. Concurrent writers into one directory move
    their sets one at a time (:func:`set_lock`), so their files do not interleave."""
    import shutil

    stage = _Stage(Path(directory), option)
    try:
        yield stage
        with set_lock(Path(directory)):
            for name in sorted(os.listdir(stage.tmp)):
                try:
                    os.replace(stage.tmp / name, Path(directory) / name)
                except OSError as exc:  # e.g. a directory of that name is in the way
                    raise ValueError(f"{option}: cannot write {str(Path(directory) / name)!r} "
                                     f"({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(stage.tmp, ignore_errors=True)


@contextmanager
def set_lock(directory: Path, shared: bool = False):
    """An exclusive ``flock`` on ``directory`` itself while a set of files moves in: two processes saving to
    one path interleaved their moves (A's r.csv, B's r.csv, B's r.csv.json, A's r.csv.json), leaving one's data
    beside the other's metadata (session 17). ``shared``: a reader's lock (``privbandit.saved.load_saved``), so it
    never reads one set's data between its moves. The lock is advisory (among privbandit processes), creates no
    file, and dies with its process (a SIGKILL never leaves it held). Where directories cannot be locked (no
    fcntl, or a file system that refuses), the moves go ahead unlocked, as before."""
    try:
        import fcntl

        fd = os.open(directory, os.O_RDONLY)
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # (closing the descriptor releases the lock)


def require_extra(module: str, purpose: str) -> None:
    """Import ``module`` now, or ValueError naming the extra to install (for ``purpose``)."""
    try:
        __import__(module)  # through builtins.__import__, so tests can simulate a missing extra
    except ImportError:
        extra = EXTRAS.get(module.split(".")[0], "all")
        raise ValueError(f"{purpose} needs {module.split('.')[0]}, which is not installed; "
                         f"install the optional extra: pip install 'privbandit[{extra}]'") from None


def refuse_repeated_options(parser: argparse.ArgumentParser, args: list[str]) -> None:
    """An option that takes one value given twice (``--horizon 30 --horizon 40``) is a usage error
    (``parser.error``), not "the last one wins" (argparse's default): one of the two was not meant.
    Abbreviations argparse would accept count as the option they abbreviate (``--hor 30 --horizon 40``,
    ``--hor=30``). Repeatable options (``--param``) are ``append`` actions and are left alone; flags too."""
    args = args[:args.index("--")] if "--" in args else args
    longs = {o: a for a in parser._actions for o in a.option_strings if o.startswith("--")}

    def owner(token: str):
        name = token.split("=", 1)[0] if token.startswith("--") else token
        for action in parser._actions:
            if name in action.option_strings:
                return action
        if token.startswith("--") and parser.allow_abbrev:
            # argparse resolves a unique prefix of a long option to it (an ambiguous one is its own error)
            hits = {id(a): a for o, a in longs.items() if o.startswith(name)}
            if len(hits) == 1:
                return next(iter(hits.values()))
        return None

    given: dict[int, list[str]] = {}
    for token in args:
        action = owner(token) if token.startswith("-") else None
        if action is None or action.nargs == 0 or isinstance(action, argparse._AppendAction):
            continue
        given.setdefault(id(action), []).append(token)
        if len(given[id(action)]) > 1:
            parser.error(f"argument {'/'.join(action.option_strings)}: given {len(given[id(action)])} times "
                         f"({' and '.join(t.split('=', 1)[0] for t in given[id(action)])}); give it once")


def print_message(parser: argparse.ArgumentParser, message: str, file=None) -> None:
    """argparse's ``_print_message`` without its ``except (AttributeError, OSError): pass``: ``--help``
    or ``--version`` into a full device or a closed stdout printed nothing and exited with status 0.
    The OSError now reaches the command line's handler (one line, status 2); a closed stream (None)
    is one too."""
    if message:
        file = file or sys.stderr
        if file is None:
            raise OSError("standard output is closed")
        file.write(message)
