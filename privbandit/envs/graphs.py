"""Feedback graphs: the generators of Tossou, Dimitrakakis & Dubhashi's (2017) experiments.

A feedback graph over K arms is a (K, K) boolean adjacency matrix of the CLOSED neighbourhood
(diagonal True, symmetric: the graphs are undirected, seed 002 section 3.3): playing arm i reveals
the rewards of every j with ``adjacency[i, j]``. Every generator is seeded from a numpy Generator, so a
graph is a deterministic function of its seed; preferential attachment comes from networkx (optional
extra ``graph``), the models whose pairs are independent are drawn with numpy (same law, faster):

* :class:`ErdosRenyi` -- G(n, p) (Erdos & Renyi 1959);
* :class:`BarabasiAlbert` -- preferential attachment with ``m`` edges per new node: a power-law
  degree distribution (Barabasi & Albert 1999);
* :class:`PlantedPartition` -- ``groups`` equal blocks, edge probability ``p_in`` inside a block and
  ``p_out`` across blocks (Condon & Karp 2001; a two-level stochastic block model);
* :class:`DisjointCliques` -- ``n / size`` cliques of ``size`` arms (the graph of Caron et al. 2012's
  clique-cover bound: UCB-N's regret scales with the number of cliques, not of arms).

Each model knows ``max_degree_bound``: the largest degree any graph it can produce has (K - 1
unless the model caps it). Certificates under the "round" relation compose over max degree + 1
streams, so a redrawn graph is certified at this bound; a fixed graph at its actual max degree.
"""

from __future__ import annotations

import abc
import dataclasses

import numpy as np

from accountants._validate import NOT_NUMBERS, check_bytes, shown, unmasked
from privbandit.mechanisms._base import whole


def _networkx():
    try:
        import networkx
    except ImportError as exc:  # pragma: no cover - networkx is in the test extra
        raise ImportError("graph generators need networkx: pip install 'privbandit[graph]'") from exc
    return networkx


def _seed(rng: np.random.Generator) -> int:
    """A networkx seed drawn from ``rng`` (networkx takes ints or random.Random instances)."""
    return int(rng.integers(0, 2**63 - 1))


def adjacency_from_edges(n: int, edges) -> np.ndarray:
    """The closed-neighbourhood adjacency matrix (diagonal True, symmetric) of an edge list."""
    check_bytes(f"a graph of {n} nodes (its {n} x {n} adjacency matrix)", n * n, "a feedback graph must have fewer nodes")
    adj = np.eye(n, dtype=bool)
    e = np.asarray(list(edges), dtype=np.int64).reshape(-1, 2)
    if e.size:
        if e.min() < 0 or e.max() >= n:
            raise ValueError(f"edges must join arms in [0, {n - 1}]")
        adj[e[:, 0], e[:, 1]] = True
        adj[e[:, 1], e[:, 0]] = True
    return adj


def check_adjacency(adjacency, n_arms: int | None = None) -> np.ndarray:
    """``adjacency`` as a read-only closed-neighbourhood bool matrix, or ValueError.

    Accepts a square bool/0-1 array or an undirected networkx graph (no weights other than 1) on the
    whole-number nodes 0..K-1. The matrix must be symmetric (undirected feedback graphs).

    The diagonal is normalised HERE, the one place every graph passes through (fixed graphs, model
    draws, ``graph=`` of a schedule, :func:`max_degree`): it is set, whatever was given. Playing an
    arm always reveals its own reward -- the played arm's record enters its stream once -- so a self-
    loop (a True diagonal entry, a networkx edge (i, i)) means nothing more, and an adjacency without
    the diagonal (networkx's open neighbourhoods) nothing less; the degree D of the "round" relation
    (D + 1 streams per round) counts each other arm once either way. Weighted, NaN or non-0/1 entries,
    directed or weighted networkx graphs and non-integer node labels are refused: D would be
    ambiguous, and a silent reading could count a neighbour as absent.
    """
    if hasattr(adjacency, "edges") and hasattr(adjacency, "number_of_nodes"):
        n = adjacency.number_of_nodes()
        nodes = list(adjacency.nodes)
        if any(isinstance(v, NOT_NUMBERS) or not isinstance(v, (int, np.integer)) for v in nodes) \
                or sorted(nodes) != list(range(n)):
            raise ValueError(f"a networkx graph must have the whole-number nodes 0..K-1, got {shown(sorted(nodes, key=repr))}")
        if adjacency.is_directed():
            raise ValueError("graph must be undirected (a networkx DiGraph is not: feedback graphs are undirected, "
                             "seed 002 section 3.3)")
        weights = [d.get("weight", 1) for *_, d in adjacency.edges(data=True)]
        # (a bool weight is not a number: True passed as weight 1)
        odd = {w for w in weights if isinstance(w, NOT_NUMBERS) or not isinstance(w, (int, float, np.integer, np.floating))
               or w != 1}
        if odd:
            raise ValueError(f"graph edges must be unweighted (weight 1), got weights {shown(sorted(odd, key=repr))}")
        adjacency = adjacency_from_edges(n, adjacency.edges())  # (u, v) pairs, for multigraphs too
    if type(adjacency).__module__.startswith("scipy.sparse"):
        # a scipy sparse matrix or array (networkx.to_scipy_sparse_array's adjacency) read as its dense
        # matrix; np.asarray made it a 0-d object array: "got shape ()". Duplicate entries add up (2: refused)
        import scipy.sparse

        if scipy.sparse.issparse(adjacency):
            adjacency = adjacency.toarray()
    unmasked("graph", adjacency)  # (np.asarray drops a mask: the values under it were read as edges)
    try:
        a = np.asarray(adjacency)
    except ValueError:  # a ragged list of lists
        a = np.asarray(None)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 2:
        got = f"shape {a.shape}" if a.ndim else shown(adjacency)
        raise ValueError(f"graph must be a square (K, K) adjacency matrix with K >= 2, got {got}")
    # (a broadcast view costs nothing until the bool copy and the symmetry check below)
    check_bytes(f"graph of shape {a.shape}", 2 * a.shape[0] ** 2, "a feedback graph must have fewer nodes")
    if a.dtype != bool:
        if a.dtype.kind not in "iuf" or not np.all((a == 0) | (a == 1)):
            raise ValueError(f"graph adjacency entries must be 0/1 or bool, got dtype {a.dtype}"
                             + ("" if a.dtype.kind not in "iuf" else
                                f" with entry {shown(a[~((a == 0) | (a == 1))].ravel()[0].item())}"))
        a = a.astype(bool)
    if n_arms is not None and a.shape[0] != n_arms:
        raise ValueError(f"graph must have n_arms = {n_arms} nodes, got {a.shape[0]}")
    if not np.array_equal(a, a.T):
        raise ValueError("graph must be symmetric (undirected feedback graphs, seed 002 section 3.3)")
    a = a.copy()
    np.fill_diagonal(a, True)
    a.setflags(write=False)
    return a


def max_degree(adjacency) -> int:
    """The maximum (open-neighbourhood) degree of a feedback graph, read through :func:`check_adjacency`.

    Any graph that function accepts (with or without its diagonal, a networkx graph): a raw matrix's
    row sums would be one short without the diagonal (a path graph's degree 2 read as 1, certifying
    the "round" relation over too few streams) and meaningless with weights."""
    return int(check_adjacency(adjacency).sum(axis=1).max()) - 1


class GraphModel(abc.ABC):
    """A random-graph model over ``n`` arms; :meth:`sample` draws one closed adjacency matrix."""

    n: int

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One closed adjacency matrix, a deterministic function of ``rng``'s state."""

    @property
    def max_degree_bound(self) -> int:
        """The largest degree any draw can have (certificates of redrawn graphs use it)."""
        return self.n - 1

    def params(self) -> dict:
        return {"graph": type(self).__name__, **dataclasses.asdict(self)}


def _independent_pairs(rng: np.random.Generator, p) -> np.ndarray:
    """Closed adjacency of a graph whose pairs {i < j} are joined independently with probability
    ``p[i, j]`` (a scalar or an (n, n) array).

    G(n, p) and the planted partition are such products of Bernoullis; drawing the upper triangle
    with numpy is the same law as networkx's ``gnp_random_graph`` / ``planted_partition_graph`` and
    far faster at K = 1000 (a few ms instead of ~0.3 s), which matters when the graph is redrawn
    every round. One uniform per ordered pair is drawn; only the upper triangle is used.
    """
    n = np.shape(p)[0]
    upper = np.triu(rng.random((n, n)) < p, 1)
    return check_adjacency(upper | upper.T)


def _integral(value) -> bool:
    """A whole number (2.0 counts; NaN, inf, True and a timedelta64 do not -- int() of NaN or inf would raise
    unnamed)."""
    if isinstance(value, NOT_NUMBERS):
        return False
    if isinstance(value, (int, np.integer)):  # any size (np.isfinite of 2**70 is a TypeError)
        return True
    return isinstance(value, (float, np.floating)) and bool(np.isfinite(value)) and int(value) == value


def _check_p(name: str, p) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float, np.floating)) or not 0 <= p <= 1:
        raise ValueError(f"{name} must lie in [0, 1], got {shown(p)}")
    return float(p)


@dataclasses.dataclass(frozen=True)
class ErdosRenyi(GraphModel):
    """G(n, p): every pair of arms joined independently with probability ``p``."""

    n: int
    p: float

    def __post_init__(self):
        whole("n", self.n, 2)
        object.__setattr__(self, "p", _check_p("p", self.p))

    def sample(self, rng):
        return _independent_pairs(rng, np.full((self.n, self.n), self.p))


@dataclasses.dataclass(frozen=True)
class BarabasiAlbert(GraphModel):
    """Preferential attachment: each new arm joins ``m`` existing arms (power-law degrees)."""

    n: int
    m: int = 2

    def __post_init__(self):
        whole("n", self.n, 2)
        if not _integral(self.m) or not 1 <= self.m < self.n:
            raise ValueError(f"m must be a whole number in [1, n - 1 = {self.n - 1}], got {shown(self.m)}")
        object.__setattr__(self, "m", int(self.m))  # (m=2.0 reached networkx as a float: its TypeError, session 18)

    def sample(self, rng):
        edges = _networkx().barabasi_albert_graph(self.n, self.m, seed=_seed(rng)).edges
        return check_adjacency(adjacency_from_edges(self.n, edges))


@dataclasses.dataclass(frozen=True)
class PlantedPartition(GraphModel):
    """``groups`` blocks of n / groups arms; edge probability ``p_in`` within, ``p_out`` across."""

    n: int
    groups: int
    p_in: float
    p_out: float

    def __post_init__(self):
        whole("n", self.n, 2)
        if not _integral(self.groups) or not 1 <= self.groups <= self.n \
                or self.n % self.groups:
            raise ValueError(f"groups must be a whole number in [1, n] dividing n = {self.n}, got {shown(self.groups)}")
        object.__setattr__(self, "groups", int(self.groups))
        object.__setattr__(self, "p_in", _check_p("p_in", self.p_in))
        object.__setattr__(self, "p_out", _check_p("p_out", self.p_out))

    def sample(self, rng):
        block = np.arange(self.n) // (self.n // self.groups)
        return _independent_pairs(rng, np.where(block[:, None] == block[None, :], self.p_in, self.p_out))

    @property
    def max_degree_bound(self) -> int:
        if self.p_out == 0:
            return self.n // self.groups - 1
        return self.n - 1


@dataclasses.dataclass(frozen=True)
class DisjointCliques(GraphModel):
    """``n / size`` disjoint cliques of ``size`` arms; a redraw permutes which arms share a clique."""

    n: int
    size: int

    def __post_init__(self):
        whole("n", self.n, 2)
        if not _integral(self.size) or not 1 <= self.size <= self.n \
                or self.n % self.size:
            raise ValueError(f"size must be a whole number in [1, n] dividing n = {self.n}, got {shown(self.size)}")
        object.__setattr__(self, "size", int(self.size))  # (size=3.0: numpy's "cannot be interpreted as an integer")

    def sample(self, rng):
        # a random assignment of arms to cliques (so arm indices carry no information about cliques)
        perm = rng.permutation(self.n)
        blocks = perm.reshape(-1, self.size)
        i, j = np.triu_indices(self.size, 1)
        edges = np.stack([blocks[:, i].ravel(), blocks[:, j].ravel()], axis=1)
        return check_adjacency(adjacency_from_edges(self.n, edges))

    @property
    def max_degree_bound(self) -> int:
        return self.size - 1


__all__ = ["GraphModel", "ErdosRenyi", "BarabasiAlbert", "PlantedPartition", "DisjointCliques",
           "check_adjacency", "adjacency_from_edges", "max_degree"]

