"""Digests for golden-master tests: sha256 over arrays and over a ledger's draws and releases.

Accountant figures (realized epsilon at delta, realized mu) are deliberately not hashed: they come
from scipy's special functions and dp-accounting, whose last bits vary with library versions and the
CPU's SIMD paths. Draws, plain sums of per-release epsilons and the tight release lists do not.
"""

from __future__ import annotations

import hashlib

import numpy as np


class Digest:
    """sha256 over a sequence of arrays (dtype, shape and bytes of each; object arrays as text)."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def add(self, x) -> None:
        a = np.asarray(x)
        if a.dtype == object:
            self._h.update("|".join(map(str, a.ravel().tolist())).encode())
            return
        a = np.ascontiguousarray(a)
        self._h.update(f"{a.dtype.str}{a.shape}".encode())
        self._h.update(a.tobytes())

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def add_ledger(d: Digest, led) -> None:
    """Fold a ``privbandit.ledger.Ledger`` into ``d``: draw counts, the plain sum of per-release
    epsilons and, in tight mode, every recorded release with its footprint, scale and node."""
    d.add(led.draws)
    d.add(led.realized_pure_epsilon())
    if led.tight:
        for key, arr in sorted(led.releases().items()):
            d.add(np.asarray([key], dtype=object))
            d.add(arr)
