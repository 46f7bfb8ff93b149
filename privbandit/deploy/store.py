"""The SQLite store of a deployment: schema, integrity checks, transactions, state snapshots.

One file holds everything a deployment needs to continue exactly where its last acknowledged call
left off (docs/deploy.md):

* ``meta``       -- the configuration (JSON) and the format marker;
* ``state``      -- one row: the pickled policy run, its generator and its ledger (every noisy value
  the policy ever drew lives in this snapshot), its SHA-256, and the round counters;
* ``decisions``  -- every decision: arm, kind (policy round, hold, exploit), the releases the call
  made per arm and the digest of the state it left behind;
* ``updates``    -- every accepted reward, at most one per decision (the primary key).

Every public call of a deployment is one ``BEGIN IMMEDIATE`` transaction: it takes the write lock
before reading the state, so two processes never both advance the same snapshot (no lost update),
and a process killed before ``COMMIT`` leaves the previous snapshot untouched (WAL journal; with the
default ``synchronous=full`` an acknowledged call survives a power cut too, not only a SIGKILL --
see :data:`SYNCHRONOUS`).

The file is marked with ``PRAGMA application_id`` and versioned with ``PRAGMA user_version``; a file
that is not SQLite, another application's database, a newer schema or a snapshot whose digest does
not match gives a :class:`StoreError` naming the problem. Snapshots are plain data (session 13,
:mod:`privbandit.deploy.snapshot`), read back by an unpickler that builds no object of ours and
restored into a fresh run after verification; legacy snapshots (pickled objects) are refused unless
the store is opened with ``allow_legacy`` (session 14), which reads them with a restricted unpickler
that only builds numpy, privbandit and accountants objects and migrates the store. With a key (session
14, :func:`state_mac`), ``meta`` also holds an HMAC-SHA256 tag of the configuration, the counters and
the snapshot's digest, rewritten with every snapshot and verified at every call.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import io
import json
import math
import os
import stat
import pickle
import sqlite3
import zlib
from collections import Counter
from contextlib import contextmanager

from accountants._validate import shown

APPLICATION_ID = 0x50424450  # "PBDP": privbandit deployment
SCHEMA_VERSION = 1
FORMAT = "privbandit-deploy"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL,          -- bumped by every write of the snapshot
    rounds INTEGER NOT NULL,           -- policy rounds opened (select(t) called for t <= rounds)
    open_decision INTEGER,             -- the decision of the policy round awaiting its reward
    blob BLOB NOT NULL,                -- zlib-compressed pickle of (run, generator, ledger)
    digest TEXT NOT NULL               -- SHA-256 of blob
);
CREATE TABLE decisions (
    id INTEGER PRIMARY KEY,
    round INTEGER,                     -- the policy round (NULL for hold / exploit decisions)
    arm INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('policy', 'hold', 'exploit')),
    releases TEXT NOT NULL,            -- JSON: noise releases per arm made by this call
    state_digest TEXT NOT NULL,        -- digest of the snapshot after this call
    created REAL NOT NULL
);
CREATE TABLE updates (
    decision_id INTEGER PRIMARY KEY REFERENCES decisions (id),
    reward REAL NOT NULL,              -- as the policy saw it (clipped to [0, 1])
    raw_reward REAL NOT NULL,          -- as given
    applied INTEGER NOT NULL,          -- 1 if fed to the policy (policy rounds), 0 if stored only
    releases TEXT NOT NULL,
    state_digest TEXT NOT NULL,
    created REAL NOT NULL
);
"""


class StoreError(Exception):
    """The file is not a usable deployment store (missing, corrupt, foreign or of another schema)."""


class StoreUnavailable(StoreError, sqlite3.OperationalError):
    """A sound store that SQLite cannot use right now: locked past the busy timeout, disk full, an I/O
    error, a read-only file. The call's transaction was rolled back, so it released and recorded
    nothing; the same call may succeed later (a read-only file needs its permissions fixed first).

    Also an ``sqlite3.OperationalError`` -- what these errors were before they named the store -- with
    SQLite's ``sqlite_errorname`` / ``sqlite_errorcode`` copied over, so retry loops written against
    sqlite3 keep working. The command line exits 1 on it (2 is for bad input and damaged stores)."""

    @classmethod
    def from_sqlite(cls, path: str, exc: sqlite3.OperationalError) -> "StoreUnavailable":
        name = getattr(exc, "sqlite_errorname", None) or "SQLITE_ERROR"
        out = cls(f"{path}: the deployment store cannot be used now ({exc}; {name}): this call released and "
                  "recorded nothing")
        out.sqlite_errorname, out.sqlite_errorcode = name, getattr(exc, "sqlite_errorcode", None)
        return out


#: Modules whose classes a snapshot holds: the policy run, its mechanisms, samplers, schedule and ledger.
_STATE_MODULES = ("privbandit.policies.", "privbandit.mechanisms.", "privbandit.ledger", "privbandit.schedule",
                  "privbandit.feedback", "accountants.")
#: Exactly the numpy callables a pickled array, dtype, scalar or generator is rebuilt with (numpy 1.x
#: spells ``numpy._core`` as ``numpy.core``). numpy as a whole is not allowed: it holds callables that
#: run code (``numpy.testing``'s ``runstring`` execs a string; ``_ufunc_reconstruct`` imports any name).
_NUMPY = {(core + module, name) for core in ("numpy._core.", "numpy.core.")
          for module, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"), ("numeric", "_frombuffer"))}
_NUMPY |= {("numpy", "dtype"), ("numpy", "ndarray"), ("numpy.random._pickle", "__generator_ctor"),
           ("numpy.random._pickle", "__bit_generator_ctor"), ("numpy.random._pickle", "__randomstate_ctor"),
           ("numpy.random.bit_generator", "SeedSequence"), ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
           ("numpy.random._generator", "Generator"), ("numpy.random._pcg64", "PCG64"),
           ("numpy.random._pcg64", "PCG64DXSM"), ("numpy.random._mt19937", "MT19937"),
           ("numpy.random._philox", "Philox"), ("numpy.random._sfc64", "SFC64")}
_BUILTINS = {"complex", "frozenset", "set", "slice", "range", "bytearray", "dict", "list", "tuple", "int", "float",
             "bool", "str", "bytes"}


def _state_object(module: str, name: str) -> bool:
    """Whether ``module.name`` is something a snapshot may name: a class defined in one of the state
    modules (not one they import: ``privbandit.deploy.store.os`` reached ``os.system``), or a
    module-level singleton of such a class pickled by its name (the ledger's layouts)."""
    import sys

    if not module.startswith(_STATE_MODULES) or not name.isidentifier() or name.startswith("__") \
            or module.rpartition(".")[2].endswith(("kernels", "_native")):
        # (the kernel modules' classes are never stored -- runs look kernels up at each call -- and a
        # kernel is callable: _kernels._SamplerCall calls the C function at the address it holds)
        return False
    __import__(module)
    obj = getattr(sys.modules[module], name, None)
    if isinstance(obj, type):
        return obj.__module__ == module
    cls = type(obj)
    return cls.__module__.startswith(_STATE_MODULES) and getattr(cls, "__reduce__", None) is not object.__reduce__ \
        and obj.__reduce__() == name


def _bound_method(obj, name):
    """``getattr`` as a legacy snapshot may use it: a method of an object of a state class, looked up
    by a plain name (a bound method pickles as ``getattr(obj, name)``: IntervalMean's default scale,
    the Gaussian posterior's release parameters, the ledger's prefix recorder). The builtin itself
    would reach anything: ``getattr(cls, "__init__")``, then its ``__globals__``, then ``os``. Since
    session 13 it returns an inert :class:`~privbandit.deploy.snapshot.MethodRef`, never the method:
    a crafted snapshot could call a bound method with crafted arguments while it was read."""
    import inspect

    from privbandit.deploy.snapshot import MethodRef

    cls = type(obj)
    if type(name) is str and name.isidentifier() and not name.startswith("__") and cls.__module__.startswith(
            _STATE_MODULES) and _state_object(cls.__module__, cls.__name__):
        method = getattr(cls, name, None)
        if inspect.isfunction(method) and getattr(method, "__module__", "").startswith(_STATE_MODULES):
            return MethodRef(obj, name)
    raise StoreError(f"state snapshot asks for attribute {name!r} of a {cls.__module__}.{cls.__qualname__}, "
                     "which a deployment never stores")


class _SnapshotUnpickler(pickle.Unpickler):
    """Builds only what a deployment's snapshot holds -- plain containers, numpy arrays, dtypes,
    scalars and generators, and the classes of the state modules -- so that a crafted file (a store
    received from elsewhere, ``privbandit deploy audit STORE``) cannot run code: the digest beside the
    blob guards against corruption, not against a forger, who recomputes it. Names are looked up
    whole (a dotted name such as ``os.system`` is refused, as find_class would resolve it at
    protocol 4 and above) and ``getattr`` only hands out methods of state objects."""

    def find_class(self, module: str, name: str):
        if module == "builtins" and name in _BUILTINS:
            return super().find_class(module, name)
        if module == "builtins" and name == "getattr":
            return _bound_method
        if (module, name) in _NUMPY:
            return super().find_class(module, name)
        try:
            ok = _state_object(module, name)
        except Exception:  # a module that cannot be imported, or a singleton whose __reduce__ fails
            ok = False
        if ok:
            return super().find_class(module, name)
        raise StoreError(f"state snapshot refers to {module}.{name}, which a deployment never stores")


def dump_state(obj) -> tuple[bytes, str]:
    """Encode the state as plain data (:func:`privbandit.deploy.snapshot.encode`: no object of ours
    is pickled), pickle and compress it (zlib level 1: the ledger's difference arrays are mostly
    zeros, measured 17x smaller at 20000 rounds for ~2 ms) and return it with its SHA-256."""
    from privbandit.deploy import snapshot

    try:
        blob = zlib.compress(snapshot.dumps(obj), 1)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise ValueError(f"policy state cannot be persisted (it holds an object pickle cannot store: {exc})") from None
    return blob, hashlib.sha256(blob).hexdigest()


#: How to migrate a legacy store, quoted by the refusal (session 14)
LEGACY_OPTION = "allow_legacy=True (command line: --allow-legacy)"


def load_state(blob: bytes, digest: str, path: str, allow_legacy: bool = False):
    """The stored snapshot as plain data (the dict :func:`dump_state` encoded), digest-checked, built
    by an unpickler that makes no object of ours. A legacy snapshot (objects pickled, before session
    13) is refused unless ``allow_legacy`` (session 14): reading it runs the restricted object
    unpickler, which still builds state classes through their constructors and ``__setstate__`` with
    whatever the file holds. With ``allow_legacy`` it is read that way; either form is then verified
    against a fresh run and restored into it by the caller (privbandit.deploy.snapshot), which writes
    a legacy store back in the data format at once (migrated: read this way only once)."""
    from privbandit.deploy import snapshot

    if hashlib.sha256(blob).hexdigest() != digest:
        raise StoreError(f"{path}: the state snapshot does not match its digest (corrupt store)")
    try:
        raw = zlib.decompress(blob)
    except Exception as exc:
        raise StoreError(f"{path}: the state snapshot cannot be read ({exc})") from None
    try:
        data = snapshot.loads(raw)
    except snapshot.NotData:
        data = None  # names a class or function: a legacy snapshot
    except Exception as exc:  # any other unpickling failure is corruption
        raise StoreError(f"{path}: the state snapshot cannot be read ({exc})") from None
    if data is not None:
        # (data without the format marker is returned as it is: no deployment writes it, and the
        # caller refuses it as a snapshot that is not a policy run, a generator and a ledger)
        return data["state"] if type(data) is dict and data.get("format") == snapshot.FORMAT else data
    if not allow_legacy:
        # (refused before the object unpickler runs: DataUnpickler stopped at the first name, before any
        # object was built or called)
        raise StoreError(f"{path}: its state snapshot is in the object-pickle format of privbandit before session 13, "
                         "which is read by building the state classes with what the file holds; if the store is "
                         f"yours, open it once with {LEGACY_OPTION} to verify it and migrate it to the data-only "
                         "format")
    try:
        legacy = _SnapshotUnpickler(io.BytesIO(raw)).load()
    except StoreError:
        raise
    except Exception as exc:  # any unpickling failure is corruption
        raise StoreError(f"{path}: the state snapshot cannot be read ({exc})") from None
    return legacy


# --- optional authentication (session 14) ---------------------------------------------------------
#: The environment variables a key is read from when none is passed: the key itself (text, at least
#: KEY_MIN bytes as UTF-8) or the path of a file holding it.
KEY_ENV, KEY_FILE_ENV = "PRIVBANDIT_DEPLOY_KEY", "PRIVBANDIT_DEPLOY_KEY_FILE"
KEY_MIN = 16  # bytes: 128 bits (HMAC-SHA256 takes any length; a short key is guessable offline)
MAC_SCHEME = "hmac-sha256"
_KEY_HINT = f"key=..., --key-file FILE, or the environment variable {KEY_ENV} or {KEY_FILE_ENV}"
_scoped_key: contextvars.ContextVar = contextvars.ContextVar("privbandit_deploy_key", default=None)


def key_bytes(key, source: str = "key") -> bytes:
    """``key`` (bytes or str) as bytes of at least :data:`KEY_MIN`, or a ValueError naming ``source``."""
    if isinstance(key, str):
        try:
            key = key.encode()
        except UnicodeEncodeError as exc:  # (lone surrogates: was codec's "surrogates not allowed", naming nothing)
            raise ValueError(f"{source} must be bytes or text that encodes to UTF-8; its character "
                             f"{exc.object[exc.start]!r} at position {exc.start} does not") from None
    if not isinstance(key, (bytes, bytearray)):
        raise ValueError(f"{source} must be bytes or a str of at least {KEY_MIN} bytes, got {shown(key)}")
    if len(key) < KEY_MIN:
        raise ValueError(f"{source} must hold at least {KEY_MIN} bytes (128 bits), got {len(key)}")
    return bytes(key)


#: the least empirical entropy a new store's key may have, in bits: the Shannon entropy of its byte frequencies
#: times its length (16 random bytes have ~60; 16 bytes of one value 0). A test of the obvious mistakes -- a key
#: file of zeros (``truncate -s 32``, ``head -c 32 /dev/zero``), one repeated byte, a short pattern repeated --
#: not a proof of unpredictability
KEY_MIN_ENTROPY_BITS = 32


def weak_key(key: bytes) -> str | None:
    """Why ``key`` is an obviously weak key (one repeated byte, a pattern shorter than :data:`KEY_MIN` bytes
    repeated, fewer than :data:`KEY_MIN_ENTROPY_BITS` bits of empirical entropy), or None."""
    n = len(key)
    for period in range(1, min(n // 2, KEY_MIN - 1) + 1):
        if key[period:] == key[:-period]:  # (key[i] == key[i + period] for every i: periodic)
            return f"one byte value ({key[0]:#04x}) repeated {n} times" if period == 1 else \
                f"a pattern of {period} bytes repeated over its {n} bytes"
    bits = -sum(c * math.log2(c / n) for c in Counter(key).values())
    if bits < KEY_MIN_ENTROPY_BITS:
        return f"{bits:.1f} bits of empirical entropy (a new key needs {KEY_MIN_ENTROPY_BITS})"
    return None


def check_key_strength(key: bytes, source: str = "key") -> bytes:
    """``key``, or a ValueError naming ``source`` when :func:`weak_key` finds it obviously weak (session 18: a
    key file of 32 zero bytes authenticated a new store). Applied when a store is created, not when one is
    opened: a store created under such a key before stays readable with it."""
    reason = weak_key(key)
    if reason is not None:
        raise ValueError(f"{source} is not a usable key for a new store: {reason}. Use random bytes, e.g. "
                         "head -c 32 /dev/urandom > KEYFILE (a key file), or python -c 'import secrets; "
                         "print(secrets.token_hex(32))'")
    return key


#: the most bytes a key file may hold (a key is 16 bytes to this)
KEY_FILE_MAX = 1 << 16


def read_key_file(path, source: str = "--key-file") -> bytes:
    """The key held in the regular file at ``path``: its bytes, trailing whitespace (a newline) removed.

    Opened non-blocking and checked to be a regular file before it is read: a FIFO blocked ``open`` forever (a
    hang, not an error), and a file beyond :data:`KEY_FILE_MAX` bytes was read cut at that length, so two key
    files differing only past it authenticated each other's stores (session 17)."""
    name = f"{source} {os.fsdecode(path)!r}"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ValueError(f"{name}: cannot read the key file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # (before fdopen, which refuses a directory with its own OSError)
        os.close(fd)
        raise ValueError(f"{name} is not a regular file (a key file holds {KEY_MIN} to {KEY_FILE_MAX} bytes)")
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(KEY_FILE_MAX + 1)
        except OSError as exc:
            raise ValueError(f"{name}: cannot read the key file ({exc.strerror or exc})") from None
    if len(data) > KEY_FILE_MAX:
        raise ValueError(f"{name} holds more than {KEY_FILE_MAX} bytes; a key file holds {KEY_MIN} to {KEY_FILE_MAX}")
    return key_bytes(data.rstrip(b" \t\r\n"), name)


@contextmanager
def using_key(key):
    """Within the block, a store opened without ``key=`` uses ``key`` (the command line's --key-file for
    the audit, which opens the store itself)."""
    token = _scoped_key.set(None if key is None else key_bytes(key))
    try:
        yield
    finally:
        _scoped_key.reset(token)


def resolve_key(key, new_store: bool = False) -> bytes | None:
    """The key a call uses: ``key`` if given, else :func:`using_key`'s, else the environment's
    (:data:`KEY_ENV`, then :data:`KEY_FILE_ENV`), else None (no authentication). ``new_store``: the key of a
    store being created, refused when obviously weak (:func:`check_key_strength`)."""
    if key is not None:
        return check_key_strength(key_bytes(key), "key") if new_store else key_bytes(key)
    if _scoped_key.get() is not None:
        return check_key_strength(_scoped_key.get(), "key") if new_store else _scoped_key.get()
    source, found = _environment_key()
    return check_key_strength(found, source) if new_store and found is not None else found


def _environment_key() -> tuple[str, bytes | None]:
    """(the variable it came from, the key) of the environment's key, or ("", None)."""
    if os.environ.get(KEY_ENV) and os.environ.get(KEY_FILE_ENV):
        # (the first silently won: a store created under one of two different keys then opened only while the
        # other variable was unset -- which one was meant is not ours to guess)
        raise ValueError(f"the environment sets both {KEY_ENV} and {KEY_FILE_ENV}: set one (or pass key= / --key-file)")
    if os.environ.get(KEY_ENV):
        # the variable's own bytes (os.fsencode undoes the surrogate escapes Python decoded them with): a key that
        # is not UTF-8 text is still a key -- identical bytes for one that is
        source = f"the environment variable {KEY_ENV}"
        return source, key_bytes(os.fsencode(os.environ[KEY_ENV]), source)
    if os.environ.get(KEY_FILE_ENV):
        source = f"the environment variable {KEY_FILE_ENV}"
        return source, read_key_file(os.environ[KEY_FILE_ENV], source)
    return "", None


def state_mac(key: bytes, config: dict, version: int, rounds: int, open_decision, digest: str) -> str:
    """HMAC-SHA256 under ``key`` of the configuration (all of it, as sorted-key JSON), the state row's
    version and round counters, and the snapshot's SHA-256 (which covers the snapshot): what decides the
    certificate (configuration, rounds) and every noisy value the policy will use (the snapshot)."""
    message = "\0".join((MAC_SCHEME, json.dumps(config, sort_keys=True), str(int(version)), str(int(rounds)),
                          "" if open_decision is None else str(int(open_decision)), digest))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def check_mac(path: str, key: bytes | None, stored: str | None, expected_of) -> None:
    """Refuse a store whose authentication does not hold: a keyed store (``stored`` tag) opened without
    a key or with another key, or modified without the key; a key given for a store that has no tag
    (written without a key, or its tag stripped). ``expected_of(key)`` computes the tag."""
    if stored is None and key is None:
        return
    if key is None:
        raise StoreError(f"{path}: the store is authenticated ({MAC_SCHEME}) and no key was given; give its key: "
                         f"{_KEY_HINT}")
    if stored is None:
        raise StoreError(f"{path}: a key was given but the store carries no authentication tag: it was written "
                         "without a key, or its tag was removed; open it without a key to read it as an "
                         "unauthenticated store")
    if type(stored) is not str or not hmac.compare_digest(stored, expected_of(key)):
        raise StoreError(f"{path}: the store does not match its authentication tag ({MAC_SCHEME}): its "
                         "configuration, counters or snapshot were modified without the key, or the key is not "
                         "this store's")


SYNCHRONOUS = ("full", "normal")
"""``full``: fsync at every commit -- an acknowledged call survives a power cut or OS crash as well
as a killed process. ``normal`` (WAL): no fsync at commit -- an acknowledged call survives a killed
process (SIGKILL), but the last ones may be lost if the machine itself goes down."""


def store_path(path) -> str | bytes:
    """``os.fspath(path)``, or a ValueError naming ``store`` (not os.fspath's TypeError) for a non-path."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ValueError(f"store must be the path of a file (a str or os.PathLike), got {shown(path)}")
    try:
        return os.fspath(path)
    except TypeError as exc:  # an os.PathLike whose __fspath__ returns something else
        raise ValueError(f"store must be the path of a file, got {shown(path)} ({exc})") from None


def file_identity(path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path``, or None when nothing can be found there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def connect(path: str, *, create: bool, synchronous: str = "full") -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit); a new store is configured at once,
    an existing file by :func:`configure` after :func:`check`."""
    path = store_path(path)
    text = os.fsdecode(path)
    if text in ("", ":memory:") or "\0" in text:
        # sqlite3 would open a temporary or in-memory database for these: nothing would persist
        raise ValueError(f"store must be the path of a file (not empty, not ':memory:', no NUL byte), got {shown(path)}")
    if create and os.path.exists(path):
        raise ValueError(f"store {path!r} already exists; open it instead of initialising it again")
    if not create:
        try:  # (os.path.exists says False for a file in a directory we may not search: "no such store" misled)
            size = os.stat(path).st_size
        except FileNotFoundError:
            raise StoreError(f"{path}: no such deployment store") from None
        except OSError as exc:
            raise StoreError(f"{path}: cannot open the deployment store ({exc.strerror or exc})") from None
        if os.path.isdir(path):  # (sqlite3: "unable to open database file")
            raise StoreError(f"{path}: a directory, not a deployment store")
        if size == 0:
            raise StoreError(f"{path}: empty file, not a deployment store")
        if not os.access(path, os.R_OK):  # sqlite3 says only "unable to open database file"
            raise StoreError(f"{path}: cannot open the deployment store (permission denied: it must be readable "
                             "and writable)")
    parent = os.path.dirname(os.path.abspath(path))
    if create and not os.path.isdir(parent):  # (sqlite3 says only "unable to open database file")
        raise ValueError(f"store {path!r}: directory {parent!r} does not exist")
    try:
        conn = sqlite3.connect(path, timeout=60.0, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open ({exc})") from None
    if create:
        configure(conn, path, synchronous)
    return conn


def configure(conn: sqlite3.Connection, path: str, synchronous: str = "full") -> None:
    """WAL journal, FULL sync, busy timeout. Called on a new store, or on an existing file only
    after :func:`check` accepted it (a foreign SQLite file is never switched to WAL)."""
    try:
        conn.execute("PRAGMA busy_timeout = 60000")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"{path}: cannot switch the journal to WAL (got {mode})")
        if synchronous not in SYNCHRONOUS:
            raise StoreError(f"{path}: synchronous must be one of {', '.join(SYNCHRONOUS)}, got {shown(synchronous)}")
        conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    except sqlite3.DatabaseError as exc:
        raise _not_a_store(path, exc) from None


#: SQLite result codes of a file or directory this process may not write (permissions, a read-only mount)
_NOT_WRITABLE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")


def _not_a_store(path: str, exc: sqlite3.DatabaseError) -> StoreError:
    """The StoreError for a file SQLite refused while it was being checked or configured: "not a
    privbandit deployment store", unless the refusal was about writing. A sound store in a directory
    or a file this process may not write (the WAL journal needs the -wal and -shm files beside it,
    even to read) was reported as "not a privbandit deployment store"."""
    if (getattr(exc, "sqlite_errorname", None) or "").startswith(_NOT_WRITABLE):
        return StoreError(f"{path}: the deployment store cannot be written ({exc}): a deployment needs write "
                          "access to the file and to its directory (its journal files live beside it)")
    return StoreError(f"{path}: not a privbandit deployment store ({exc})")


def initialise(conn: sqlite3.Connection, config: dict, blob: bytes, digest: str, path: str = "store",
               key: bytes | None = None) -> None:
    with transaction(conn):
        # connect()'s "already exists" check and this write lock are not one step: two processes
        # initialising the same new path can both pass the check. The second one finds the first's
        # schema here, under the lock, and leaves it alone (was sqlite3's "table meta already exists")
        if conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
            raise ValueError(f"store {path!r} already exists (another process initialised it just now); "
                             "open it instead of initialising it again")
        # statement by statement: executescript would commit the open transaction first
        for statement in filter(str.strip, _SCHEMA.split(";")):
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
        conn.execute("INSERT INTO meta VALUES ('config', ?)", (json.dumps(config, sort_keys=True),))
        conn.execute("INSERT INTO state VALUES (1, 0, 0, NULL, ?, ?)", (blob, digest))
        if key is not None:  # (the key itself is never stored: only the scheme and the tag)
            conn.execute("INSERT INTO meta VALUES ('auth', ?)", (MAC_SCHEME,))
            conn.execute("INSERT INTO meta VALUES ('mac', ?)", (state_mac(key, config, 0, 0, None, digest),))


def check(conn: sqlite3.Connection, path: str) -> dict:
    """Validate the file and return its configuration."""
    try:
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        empty = app == 0 and not conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise _not_a_store(path, exc) from None
    if empty:
        # what a process killed inside `deploy init` leaves (the file, no schema): init refuses the
        # path because it exists, so say how to get out
        raise StoreError(f"{path}: an empty SQLite file, not a deployment store (an interrupted init?); "
                         "nothing was recorded in it: delete it and init again")
    if app != APPLICATION_ID:
        raise StoreError(f"{path}: not a privbandit deployment store (SQLite application_id {app:#x}, "
                         f"expected {APPLICATION_ID:#x})")
    if version != SCHEMA_VERSION:
        newer = "a newer" if version > SCHEMA_VERSION else "an older"
        raise StoreError(f"{path}: store schema version {version} was written by {newer} privbandit; "
                         f"this one reads schema version {SCHEMA_VERSION}")
    try:
        # a trigger runs inside privbandit's own transactions and can rewrite what they record (a planted
        # "UPDATE updates SET reward = 1" after each insert: the log then disagreed with the rewards the policy
        # was fed, and open, status and the audit all passed it -- session 17). The schema has none.
        triggers = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
    except sqlite3.DatabaseError as exc:
        raise _not_a_store(path, exc) from None
    if triggers:
        raise StoreError(f"{path}: corrupt deployment store (it holds the trigger(s) {', '.join(map(repr, triggers))}, "
                         "which privbandit never creates: they would rewrite its records); drop them only if you know "
                         "who added them")
    try:
        rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        config = json.loads(rows["config"])
        if rows.get("format") != FORMAT:
            raise KeyError("format")
    except (sqlite3.DatabaseError, KeyError, ValueError, RecursionError) as exc:  # (RecursionError: JSON nested
        # 100,000 deep was an "internal error")
        raise StoreError(f"{path}: corrupt deployment store (meta table: {exc})") from None
    return config


@contextmanager
def transaction(conn: sqlite3.Connection):
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception): the write lock is held
    from the first read, so concurrent writers serialise instead of overwriting each other."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
