"""Tree-based aggregation of vector- and matrix-valued streams, with every node reported to the ledger.

The binary mechanism of Chan, Shi & Song (2011, Alg. 2) applied to a stream of vectors (a packed
symmetric matrix is a vector: its upper triangle, :func:`privbandit.contextual.linalg.packed_outer`).
Used by the private linear contextual policies:

* Mishra & Thakurta (UAI 2015, Appendix D as reconstructed in ALGORITHMS.md 3.5): Laplace node noise
  on each scalar stream of an arm's ``A`` and ``b`` (``noise="laplace"``, per-entry scales);
* Shariff & Sheffet (NeurIPS 2018; ALGORITHMS.md 12.3): Gaussian node noise on the upper triangle
  of the augmented Gram matrix of ``[z; r]`` (``noise="gaussian"``).

Each insert appends one vector to one stream (the played arm's, or stream 0 for a shared model) of
every selected replicate and completes exactly one node -- the dyadic range ``[n - 2^i, n)`` of
record positions, ``i`` the lowest set bit of the new count ``n`` -- whose noise is one fresh draw
of the whole vector; the lower nodes' noise is discarded. Output: the exact running sum plus the
noise of the nodes alive (the binary decomposition of ``n``).

Ledger. A node is ONE release of a vector-valued statistic and is recorded once, on its footprint,
with the sensitivity of the whole vector in the units of its noise:

* Laplace: per-entry scales ``b_i = scale * weights[i]``; the release is the vector ``u_i / weights[i]``
  plus i.i.d. Lap(``scale``) noise, which is ``(sensitivity / scale)``-DP when ``sensitivity`` bounds
  the L1 norm of the change of ``u / weights`` between neighbouring records. The declared schedule
  composes such nodes as :class:`accountants.events.PureDP` (valid for any pure-DP mechanism: a vector
  Laplace release is not claimed to have the scalar Laplace's privacy-loss distribution).
* Gaussian: i.i.d. N(0, ``sigma``^2) noise per entry, ``sensitivity`` the L2 norm of the change;
  exactly a scalar Gaussian mechanism of that sensitivity (GDP mu = sensitivity / sigma).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from accountants._validate import real_array, shown
from accountants.events import NO_EVENT, Event, Gaussian, PureDP
from privbandit.mechanisms._base import check_ledger, check_name, positive, whole
from privbandit.mechanisms.sampling import NoiseSampler


class VectorTreeMechanism:
    """Binary mechanism over ``streams`` vector streams (entries ``size``) per replicate, vectorised.

    ``VectorTreeMechanism(replicates, streams, size, *, horizon, noise, scale, sensitivity,
    weights=None, rng, ledger, name)``: ``horizon`` is the most vectors one stream may hold (levels
    ``L = horizon.bit_length()``); ``noise`` ``"laplace"`` or ``"gaussian"``; ``scale`` the Laplace
    scale (or Gaussian sigma) of the weighted entries; ``weights`` (``size``,) positive per-entry
    multipliers (Laplace only; default ones); ``sensitivity`` the L1 (Laplace, of ``u / weights``) or
    L2 (Gaussian) sensitivity of one vector, reported to the ledger with every node.

    Memory: the noise of the alive nodes, ``replicates * streams * L * size`` floats.
    """

    def __init__(self, replicates: int, streams: int, size: int, *, horizon: int, noise: str, scale: float,
                 sensitivity: float, weights=None, rng: np.random.Generator, ledger, name: str) -> None:
        self.replicates = whole("replicates", replicates, 1)
        self.streams = whole("streams", streams, 1)
        self.size = whole("size", size, 1)
        self.horizon = whole("horizon", horizon, 1)
        if noise not in ("laplace", "gaussian"):
            raise ValueError(f"noise must be 'laplace' or 'gaussian', got {shown(noise)}")
        self.noise = noise
        self.scale = positive("scale", scale)
        self.sensitivity = positive("sensitivity", sensitivity)
        # a read-only copy (session 13): np.asarray kept the caller's array, and every node's Laplace noise
        # is drawn times the weights -- weights set to 1e-9 after construction drew ~no noise while the
        # ledger and the schedule still recorded sensitivity / scale per node (a certificate far below
        # the truth). real_array: numbers only ("2" and True were read as numbers).
        w = np.ones(self.size) if weights is None else real_array("weights", weights)
        if w.shape != (self.size,) or not (np.isfinite(w).all() and (w > 0).all()):
            raise ValueError(f"weights must be {self.size} positive finite numbers, got shape {w.shape}")
        if noise == "gaussian" and not np.all(w == 1.0):
            raise ValueError("weights must be all ones for noise='gaussian' (one sigma for every entry)")
        w.setflags(write=False)
        self.weights = w
        self.name = check_name(name)
        self.ledger = check_ledger(ledger, self.replicates, self.streams)
        self.sampler = NoiseSampler(rng)
        self.levels = self.horizon.bit_length()
        self.count = np.zeros((self.replicates, self.streams), dtype=np.int64)
        self.exact_sum = np.zeros((self.replicates, self.streams, self.size))
        self.noise_sum = np.zeros((self.replicates, self.streams, self.size))
        self._nodes = np.zeros((self.replicates, self.streams, self.levels, self.size))

    def noisy_sum(self, rows=None, streams=None) -> np.ndarray:
        """The released sums: all (R, S, size), or those of (``rows``, ``streams``) pairs."""
        if rows is None:
            return self.exact_sum + self.noise_sum
        return self.exact_sum[rows, streams] + self.noise_sum[rows, streams]

    def _draw(self, m: int) -> np.ndarray:
        if self.noise == "laplace":
            return self.sampler.laplace(self.scale, size=(m, self.size)) * self.weights
        return self.sampler.gaussian(np.full((m, self.size), self.scale))

    def insert(self, values: np.ndarray, streams: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Append ``values[r]`` (R, size) to stream ``streams[r]`` of every replicate r with
        ``mask[r]`` (default: all). Returns the replicates inserted into (int array)."""
        values = np.asarray(values, dtype=float)
        if values.shape != (self.replicates, self.size):
            raise ValueError(f"values must have shape ({self.replicates}, {self.size}), got {values.shape}")
        streams = np.asarray(streams)
        if streams.shape != (self.replicates,):
            raise ValueError(f"streams must have shape ({self.replicates},), got {streams.shape}")
        rows = np.arange(self.replicates) if mask is None else np.flatnonzero(mask)
        if rows.size == 0:
            return rows
        st = streams[rows].astype(np.int64)
        if st.min() < 0 or st.max() >= self.streams:
            raise ValueError(f"streams must lie in [0, {self.streams - 1}]")
        v = values[rows]
        if not np.isfinite(v).all():
            raise ValueError("values must be finite")
        n = self.count[rows, st] + 1
        if int(n.max()) > self.horizon:
            raise ValueError(f"horizon: a stream already holds {self.horizon} vectors (range [1, horizon])")
        low = n & -n
        level = np.bitwise_count(low - 1).astype(np.int64)
        nodes = self._nodes[rows, st]  # (m, L, size) copy
        lower = np.arange(self.levels)[None, :] < level[:, None]
        dropped = np.where(lower[:, :, None], nodes, 0.0).sum(axis=1)
        fresh = self._draw(rows.size)
        nodes[lower] = 0.0
        nodes[np.arange(rows.size), level] = fresh
        self._nodes[rows, st] = nodes
        self.noise_sum[rows, st] += fresh - dropped
        self.exact_sum[rows, st] += v
        self.count[rows, st] = n
        lo = n - low
        self.ledger._record_from_mechanism(rows.copy(), st, lo, n.copy(), self.scale, self.sensitivity,
                                           self.name, lo * 64 + level, gaussian=self.noise == "gaussian")
        return rows

    def node_event(self) -> Event:
        """The privacy of one node for one record (see the module docstring)."""
        if self.noise == "laplace":
            # rounded up (session 17): to nearest the quotient can be an ulp below the release's exact epsilon
            return PureDP.at_least(Fraction(self.sensitivity) / Fraction(self.scale))
        return Gaussian(self.scale, self.sensitivity)

    def privacy_schedule(self, n: int) -> Event:
        """Worst-case releases of one record when its stream holds ``n`` vectors: the first record is
        in the nodes [0, 2^j) for every 2^j <= n, ``n.bit_length()`` (<= L) nodes."""
        n = whole("n", n, 0)
        if n > self.horizon:
            raise ValueError(f"n must lie in [0, horizon={self.horizon}], got {n}")
        return NO_EVENT if n == 0 else self.node_event() * n.bit_length()
