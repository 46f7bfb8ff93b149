"""Reading back what :meth:`SimulationResult.save` wrote: the tidy frame and its ``<path>.json`` metadata,
checked to be the two files of **one** save (session 17, s17/fuzz).

A save is two files, each moved into place atomically (``cli_checks.staged_outputs``: the data file first,
then its metadata -- sorted order, ``r.csv`` before ``r.csv.json``), but not the pair: a process killed
between the two moves leaves the new ``r.csv`` beside the old ``r.csv.json``, each complete, and nothing in
either said they did not belong together. The metadata now records the SHA-256 of the data file it was
written with (``data_sha256``); :func:`load_saved` recomputes it and refuses a pair that does not match --
an interrupted save, or a data file edited or replaced after it. Every refusal is a ``ValueError`` naming the
file and what is wrong with it (a file edited by hand, truncated, not JSON, a directory, ...), never a
traceback from pandas, pyarrow or json.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from accountants._validate import shown

#: the sidecar's keys that name its data file (written by ``save`` since session 17)
DIGEST_KEY, DATA_KEY = "data_sha256", "data_file"
#: a save's metadata is a few kB (policy and environment parameters); a sidecar beyond this is not one,
#: and is refused before it is read into memory
MAX_METADATA_BYTES = 16 * 2**20
#: columns ``SimulationResult.to_frame`` always writes
REQUIRED_COLUMNS = ("policy", "environment", "round", "regret_mean", "regret_lower", "regret_upper",
                    "certified_epsilon", "delta")


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks (a saved frame can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(2**20), b""):
            h.update(block)
    return h.hexdigest()


def _regular_file(p: Path, what: str) -> None:
    if not p.exists():
        raise ValueError(f"{what} {str(p)!r} does not exist")
    if not p.is_file():  # a directory, a FIFO, a device: open() would fail or block
        raise ValueError(f"{what} {str(p)!r} is not a regular file")


def _metadata(p: Path) -> dict[str, Any]:
    meta_path = Path(str(p) + ".json")
    _regular_file(meta_path, "metadata")
    size = meta_path.stat().st_size
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata {str(meta_path)!r} is {size} bytes, more than a save's metadata can be "
                         f"({MAX_METADATA_BYTES} bytes)")
    try:
        # utf-8-sig: a BOM an editor added is harmless; NaN stays readable ("seconds" of a run not timed)
        meta = json.loads(meta_path.read_bytes().decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # (RecursionError: JSON nested deeply)
        raise ValueError(f"metadata {str(meta_path)!r} is not valid JSON ({type(exc).__name__}: "
                         f"{str(exc)[:120]})") from None
    except OSError as exc:
        raise ValueError(f"metadata {str(meta_path)!r}: cannot read it ({exc.strerror or exc})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"metadata {str(meta_path)!r} must hold a JSON object, got {type(meta).__name__}")
    return meta


def _check_fields(meta: dict, meta_name: str) -> None:
    """The fields a reader relies on, with their types and ranges (an edited sidecar is refused here)."""
    horizon, replicates, delta = meta.get("horizon"), meta.get("replicates"), meta.get("delta")
    for key, value in (("horizon", horizon), ("replicates", replicates)):
        if type(value) is not int or value < 1:
            raise ValueError(f"metadata {meta_name!r}: {key} must be a whole number >= 1, got {shown(value)}")
    if type(delta) not in (int, float) or not 0 <= delta < 1:
        raise ValueError(f"metadata {meta_name!r}: delta must be a number in [0, 1), got {shown(delta)}")
    for key in ("policy", "environment"):
        if not isinstance(meta.get(key), dict):
            raise ValueError(f"metadata {meta_name!r}: {key} must be a JSON object, got {shown(meta.get(key))}")


def load_saved(path: str | os.PathLike, *, verify: bool = True):
    """The tidy frame (pandas) and the metadata dict of a :meth:`SimulationResult.save` at ``path``.

    With ``verify`` (the default) the metadata's ``data_sha256`` must equal the data file's SHA-256: a save
    interrupted between its two files, or a data file changed after it, is refused (``ValueError``), never
    read as the other file's run. ``verify=False`` reads a pair without checking it (metadata written before
    session 17 records no digest). Either way the frame must have the columns and the rounds 1..horizon its
    metadata says."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"path must be a .csv or .parquet file name, got {shown(path)}")
    if not isinstance(verify, bool):
        raise ValueError(f"verify must be True or False, got {shown(verify)}")
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValueError(f"path must end in .csv or .parquet, got {shown(p.name)}")
    from privbandit.cli_checks import set_lock

    _regular_file(p, "path")
    with set_lock(p.parent, shared=True):  # (a concurrent save moves its two files under the exclusive lock)
        return _load(p, suffix, verify)


def _load(p: Path, suffix: str, verify: bool):
    meta = _metadata(p)
    meta_name = p.name + ".json"
    if meta.get("kind") == EXPERIMENT_KIND:
        raise ValueError(f"path {str(p)!r} is an experiment's summary (privbandit experiment --out): read it with "
                         "privbandit.saved.load_summary(directory)")
    if verify:
        recorded = meta.get(DIGEST_KEY)
        if recorded is None:
            raise ValueError(f"metadata {meta_name!r} records no {DIGEST_KEY} (written before session 17?): its "
                             "pairing with the data file cannot be checked; load_saved(path, verify=False) reads it "
                             "unchecked")
        if not isinstance(recorded, str) or recorded != file_sha256(p):
            raise ValueError(f"path {str(p)!r} does not match its metadata {meta_name!r} (the SHA-256 it records "
                             "differs): the two files are not one save -- a save interrupted between them, or a file "
                             "changed or replaced after it; save again")
    _check_fields(meta, meta_name)
    frame = _read_frame(p, suffix)
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"path {str(p)!r} is not a saved result: missing column(s) {', '.join(missing)}")
    rounds = frame["round"].to_numpy()
    horizon = meta["horizon"]
    if len(frame) != horizon or rounds.dtype.kind not in "iu" or not (rounds == range(1, horizon + 1)).all():
        raise ValueError(f"path {str(p)!r}: its rounds must be 1..{horizon} (the metadata's horizon), got "
                         f"{len(frame)} rows")
    for column in REQUIRED_COLUMNS[3:]:
        if frame[column].dtype.kind != "f":
            raise ValueError(f"path {str(p)!r}: column {column} must hold numbers")
    if not all(math.isnan(x) or x >= 0 for x in frame["certified_epsilon"].to_numpy()):
        raise ValueError(f"path {str(p)!r}: column certified_epsilon must be >= 0")
    frame.attrs["metadata"] = meta
    return frame, meta


def _read_frame(p: Path, suffix: str):
    import pandas as pd

    try:
        return pd.read_csv(p) if suffix == ".csv" else pd.read_parquet(p)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 -- pandas / pyarrow raise many types for a file not theirs
        raise ValueError(f"path {str(p)!r} is not a readable {suffix[1:]} file ({type(exc).__name__}: "
                         f"{str(exc)[:160]})") from None


# --- an experiment's --out directory (session 18, s18/fuzz) -----------------------------------------------------
#: the ``kind`` of an experiment summary's metadata; its files, moved in this (sorted) order, the metadata last
EXPERIMENT_KIND = "privbandit-experiment-summary"
SUMMARY, FIGURE = "summary.csv", "regret.png"


def write_summary_metadata(meta_path: str | os.PathLike, summary_path: str | os.PathLike,
                           figure_path: str | os.PathLike, **fields: Any) -> None:
    """Write ``summary.csv.json`` beside an experiment's ``summary.csv`` and ``regret.png``: ``fields`` (the
    experiment, horizon, replicates, seed) and the SHA-256 of both files. ``privbandit experiment --out`` wrote
    the two files with nothing pairing them: a kill between their moves left a new summary beside an old
    figure, and no reader could tell. The metadata sorts after both, so it moves last."""
    meta = {"kind": EXPERIMENT_KIND, **fields, DATA_KEY: SUMMARY, DIGEST_KEY: file_sha256(summary_path),
            "figure_file": FIGURE, "figure_sha256": file_sha256(figure_path)}
    Path(meta_path).write_text(json.dumps(meta, indent=2, default=str))


def load_summary(directory: str | os.PathLike, *, verify: bool = True):
    """The summary frame (pandas) and the metadata dict of ``privbandit experiment --out DIRECTORY``.

    With ``verify`` (the default) the metadata's digests must equal ``summary.csv``'s and ``regret.png``'s:
    an ``--out`` interrupted between its files, or a file changed after it, is refused (ValueError naming
    the file), never read as one run's output. Directories written before session 18 have no metadata:
    ``verify=False`` reads their ``summary.csv`` unchecked."""
    if not isinstance(directory, (str, os.PathLike)) or not str(directory).strip():
        raise ValueError(f"directory must name an experiment's --out directory, got {shown(directory)}")
    if not isinstance(verify, bool):
        raise ValueError(f"verify must be True or False, got {shown(verify)}")
    d = Path(directory)
    if not d.is_dir():
        raise ValueError(f"directory {str(d)!r} is not a directory")
    from privbandit.cli_checks import set_lock

    summary = d / SUMMARY
    _regular_file(summary, "summary")
    with set_lock(d, shared=True):  # (the command line moves the three files under the exclusive lock)
        meta: dict[str, Any] = {}
        if verify:
            meta = _metadata(summary)
            name = SUMMARY + ".json"
            if meta.get("kind") != EXPERIMENT_KIND:
                raise ValueError(f"metadata {name!r} is not an experiment summary's (kind {shown(meta.get('kind'))})")
            for file, key in ((SUMMARY, DIGEST_KEY), (FIGURE, "figure_sha256")):
                _regular_file(d / file, "figure" if file == FIGURE else "summary")
                recorded = meta.get(key)
                if not isinstance(recorded, str) or recorded != file_sha256(d / file):
                    raise ValueError(f"{file} in {str(d)!r} does not match its metadata {name!r} (the SHA-256 it "
                                     "records differs): the files are not one experiment's output -- an --out "
                                     "interrupted between them, or a file changed after it; run it again")
        frame = _read_frame(summary, ".csv")
    frame.attrs["metadata"] = meta
    return frame, meta
