"""The Laplace mechanism as an instrumented, vectorised release.

Dwork, McSherry, Nissim & Smith (2006); Dwork & Roth (2014), Theorem 3.6: f(D) + Lap(s/eps) is
eps-DP for f of L1 sensitivity s. ALGORITHMS.md section 1.
"""

from __future__ import annotations

import numpy as np

from privbandit.ledger import Ledger
from privbandit.mechanisms._base import check_name
from privbandit.mechanisms.sampling import NoiseSampler


def _unshared(a) -> np.ndarray:
    """``a`` itself when no one can write it (read-only down to an immutable ``bytes`` buffer, as the
    ledger's shared layouts are), else a copy."""
    b = a
    while isinstance(b, np.ndarray) and not b.flags.writeable:
        b = b.base
    return a if isinstance(b, bytes) else np.array(a)


class _Release:
    kind = "laplace"

    def __init__(self, rng: np.random.Generator, ledger: Ledger | None, name: str, *, exact: bool = False) -> None:
        # None: a run without a ledger (simulate(ledger=False)); releases are then not recorded.
        if ledger is not None and not isinstance(ledger, Ledger):
            raise ValueError(f"ledger must be a privbandit.ledger.Ledger, got {type(ledger).__name__}")
        self.ledger = ledger
        self.sampler = NoiseSampler(rng, exact=exact)
        self.name = check_name(name)

    def _arrays(self, statistic, param, sensitivity, pname):
        statistic = np.atleast_1d(np.asarray(statistic, dtype=float))
        if statistic.ndim != 1:
            raise ValueError(f"statistic must be 1-D (one value per release), got shape {statistic.shape}")
        if np.any(~np.isfinite(statistic)):
            raise ValueError("statistic must be finite")
        m = statistic.size
        param = np.broadcast_to(np.asarray(param, dtype=float), (m,))
        sensitivity = np.broadcast_to(np.asarray(sensitivity, dtype=float), (m,))
        if np.any(~(param > 0)) or np.any(~np.isfinite(param)):
            raise ValueError(f"{pname} must lie in (0, inf) elementwise")
        if np.any(~(sensitivity > 0)) or np.any(~np.isfinite(sensitivity)):
            raise ValueError("sensitivity must lie in (0, inf) elementwise")
        return statistic, param, sensitivity


class LaplaceRelease(_Release):
    """One-off noisy statistics: ``statistic + Lap(scale)``, each recorded with its footprint.

    ``release(statistic (m,), scale (m,), sensitivity (m,), replicate, stream, lo, hi, node=None)``
    returns the m noisy values; release i depends on records [lo[i], hi[i]) of stream ``stream[i]``
    of replicate ``replicate[i]`` and is (sensitivity/scale)-DP. In exact mode the statistic is
    rounded to the grid and the recorded sensitivity accounts for the rounding.
    """

    def release(self, statistic, scale, sensitivity, replicate, stream, lo, hi, node=None) -> np.ndarray:
        statistic, scale, sensitivity = self._arrays(statistic, scale, sensitivity, "scale")
        noisy = self.sampler.laplace_release(statistic, scale)
        if self.ledger is not None:
            self.ledger.record_laplace(replicate, stream, lo, hi, self.sampler.effective_scale(scale),
                                       self.sampler.effective_sensitivity(sensitivity),
                                       mechanism=self.name, node=node, discrete=self.sampler.exact)
        return noisy

    def release_records(self, values: np.ndarray, scale: float, replicate: np.ndarray, stream: np.ndarray,
                        position: np.ndarray, end: np.ndarray | None = None) -> np.ndarray:
        """One release per record: ``values[i] + Lap(scale)``, where ``values[i]`` is record
        ``position[i]`` of stream ``stream[i]`` of replicate ``replicate[i]`` (a reward in [0, 1]:
        sensitivity 1; footprint [position, position + 1)) -- or, with ``end``, a sum of sensitivity 1
        over records [position[i], end[i]) (e.g. a batch's loss sum). Equivalent to :meth:`release`
        with those arguments, for a policy's internal path: ``values`` is a float array, ``scale`` a
        validated float. The index arrays are copied before the ledger stages them: the caller may reuse them."""
        exact = self.sampler.exact
        if exact:  # rewards are not on the grid: the public path rounds them
            noisy = self.sampler.laplace_release(values, scale)
        else:
            noisy = self.sampler._sum_release(values, scale)
        if self.ledger is not None:
            # float mode reports the scale and sensitivity as given (what effective_* return there,
            # without re-validating them per call); exact mode the grid-rounded ones
            eff_scale, eff_sens = ((float(self.sampler.effective_scale(scale)),
                                    float(self.sampler.effective_sensitivity(1.0))) if exact else (scale, 1.0))
            # copies (session 13): the ledger stages arrays that own their data uncopied until its next drain, so
            # a caller reusing its buffers changed the recorded footprints -- three releases of record 0, then
            # positions [0, 0, 0] overwritten with [0, 1, 2], realized 3.0 -> 1.0 (an under-count). Copying three
            # index arrays costs ~1 us a call (16 us at 100 replicates); the policies' arrays are fresh anyway
            # (the ledger's layouts -- read-only, on bytes nobody can write -- are passed on as they are: the
            # ledger recognises them by identity)
            replicate, stream, position = _unshared(replicate), _unshared(stream), _unshared(position)
            self.ledger._record_from_mechanism(replicate, stream, position,
                                               position + 1 if end is None else _unshared(end),
                                               eff_scale, eff_sens, self.name, None, discrete=exact)
        return noisy
