"""Compiled steps of DP-TS's split mechanism around its draws (issue 19).

Hu & Hegde (UAI 2022), Algorithm 1: :class:`privbandit.mechanisms.split.SplitMechanism`. Each
kernel here chains the one implementation of its parts in :mod:`privbandit.mechanisms._kernels`
(the binary core's ``binary_prepare`` / ``binary_commit``, the two-part counters' ``split_blocks``,
``gather_add``, ``log_commit`` and ``reset_rows``) into one call, so an insert crosses from Python into
compiled code twice per part (before and after its draw) instead of four to six times. Same
source compiled or interpreted (``Kernel.at``), same bits (tests/privbandit/mechanisms/
test_split_kernels.py and the golden digests). No kernel draws noise: the caller releases through
the mechanism's ``NoiseSampler._sum_release`` between the two kernels of a part and reports to the
ledger, in the order the unfused path did (logarithmic part first, each part drawn then reported).
"""

from __future__ import annotations

import numpy as np

from privbandit.mechanisms._kernels import _add_parts_flat, binary_commit, binary_prepare, count_items_flat, kernel, \
    log_commit, reset_rows, split_blocks
from privbandit.mechanisms._stream_kernels import stream_pulled_entries


@kernel
def hh_split_binary_prepare(pending: np.ndarray, block: np.ndarray, rr: np.ndarray, kk: np.ndarray, v: np.ndarray,
                            epsilon: float, tau: np.ndarray, nodes: np.ndarray, f: np.ndarray, r: np.ndarray,
                            m: np.ndarray, scale: np.ndarray, new: np.ndarray, dropped: np.ndarray,
                            level: np.ndarray, limit: int) -> tuple[int, int, int]:
    """Items after the first m = 2^(r+1) - 1 of their streams (flat rows ``f`` of the binary core
    ``tau`` / ``nodes``): read the node each completes (``binary_prepare``: its exact p-sum ``new``
    and the noisy nodes it drops, at ``level``); then, only if the core holds enough levels, add
    ``v`` to the items pending for the next logarithmic release and write each stream's block ``r``,
    its footprint offset ``m`` = 2^(r+1) - 1 (``split_blocks``) and its node scale
    ``scale`` = 2 (r + 1) / eps, as numpy's ``2.0 * (r + 1.0) / epsilon``.

    Returns (top, min r, max r); a ``top`` above the core's levels means nothing but ``level`` was
    written: the caller grows the core and calls again; -1 that a row already holds ``limit`` items
    (the core's capacity; the split's core is unbounded) and nothing was written."""
    top = binary_prepare(tau, nodes, f, v, new, dropped, level, limit)
    if top < 0 or top > nodes.shape[1]:
        return top, 0, 0
    r_min, r_max = split_blocks(pending, block, rr, kk, v, r, m)
    for i in range(r.size):
        scale[i] = 2.0 * (float(r[i]) + 1.0) / epsilon
    return top, r_min, r_max


@kernel
def hh_split_count_prepare(count: np.ndarray, rr: np.ndarray, kk: np.ndarray, o: np.ndarray, flush: np.ndarray,
                           pending: np.ndarray, block: np.ndarray, v: np.ndarray, epsilon: float, tau: np.ndarray,
                           nodes: np.ndarray, f: np.ndarray, r: np.ndarray, m: np.ndarray, scale: np.ndarray,
                           new: np.ndarray, dropped: np.ndarray, level: np.ndarray,
                           limit: int) -> tuple[int, int, int, int]:
    """An insert's first step: count one item into each stream (``count_items_flat`` at the streams'
    flat index ``f``, which indexes the (R, K) ``count`` as it does the core's rows: new counts ``o``,
    ``flush`` where o = 2^j - 1, the logarithmic part's release); when no stream flushes (most
    inserts: a stream flushes log2 of its count times), every item goes to the binary part, whose
    first kernel (:func:`hh_split_binary_prepare`) runs in the same call. Returns (how many flush,
    then ``hh_split_binary_prepare``'s (top, min r, max r), or zeros when some stream flushes and
    the caller routes the items itself)."""
    n_flush = count_items_flat(count, f, 1, o, flush, True)
    if n_flush:
        return n_flush, 0, 0, 0
    top, r_min, r_max = hh_split_binary_prepare(pending, block, rr, kk, v, epsilon, tau, nodes, f, r, m, scale, new,
                                                dropped, level, limit)
    return 0, top, r_min, r_max


@kernel
def hh_split_pulled_prepare(arms: np.ndarray, values: np.ndarray, streams: int, kk: np.ndarray, f: np.ndarray,
                            count: np.ndarray, rr: np.ndarray, o: np.ndarray, flush: np.ndarray, pending: np.ndarray,
                            block: np.ndarray, epsilon: float, tau: np.ndarray, nodes: np.ndarray, r: np.ndarray,
                            m: np.ndarray, scale: np.ndarray, new: np.ndarray, dropped: np.ndarray, level: np.ndarray,
                            limit: int) -> tuple[int, int, int, int, int]:
    """A bandit round's insert (stream ``arms[r]`` of replicate r gets ``values[r]``) up to its first
    draw, in one call: ``stream_pulled_entries`` (the entries' checks, ``kk`` and the flat index
    ``f``), then, only if every entry passed, :func:`hh_split_count_prepare` on them (rows ``rr``,
    the pulled layout) -- the two kernels ``insert_pulled`` called one after the other, without the
    crossing back to Python between them. Returns (``stream_pulled_entries``'s code, then
    ``hh_split_count_prepare``'s four results); a non-zero code means nothing else was written."""
    bad = stream_pulled_entries(arms, values, streams, kk, f)
    if bad:
        return bad, 0, 0, 0, 0
    n_flush, top, r_min, r_max = hh_split_count_prepare(count, rr, kk, o, flush, pending, block, values, epsilon, tau,
                                                        nodes, f, r, m, scale, new, dropped, level, limit)
    return 0, n_flush, top, r_min, r_max


@kernel
def hh_split_binary_commit(tau: np.ndarray, total: np.ndarray, nodes: np.ndarray, f: np.ndarray, new: np.ndarray,
                           noisy: np.ndarray, dropped: np.ndarray, level: np.ndarray, top: int, base: int,
                           offsets: np.ndarray, lo: np.ndarray, hi: np.ndarray, node: np.ndarray,
                           noisy_sum: np.ndarray, log_sum: np.ndarray) -> None:
    """After the nodes' release ``noisy``: the binary core's commit (``binary_commit``: new nodes,
    totals, footprints ``lo``, ``hi``, ``node``), then each
    stream's output ``noisy_sum`` = its logarithmic part + its binary total (``_add_parts_flat``
    from the core's totals: ``f`` indexes the (R, K) ``noisy_sum`` and ``log_sum`` too)."""
    binary_commit(tau, total, nodes, f, new, noisy, dropped, level, top, base, offsets, lo, hi, node)
    _add_parts_flat(noisy_sum, log_sum, total, f)


@kernel
def hh_split_log_commit(log_sum: np.ndarray, pending: np.ndarray, noisy_sum: np.ndarray, block: np.ndarray,
                        rr: np.ndarray, kk: np.ndarray, t: np.ndarray, noisy: np.ndarray, lo: np.ndarray,
                        node: np.ndarray, core_nodes: np.ndarray, core_total: np.ndarray, core_tau: np.ndarray,
                        f: np.ndarray) -> None:
    """After the logarithmic releases ``noisy`` at counts ``t`` = 2^(r+1) - 1: ``log_commit`` (C, the
    pending items, the output, the new block r, the footprints), then the streams' binary core rows
    ``f`` restart empty (``reset_rows``)."""
    log_commit(log_sum, pending, noisy_sum, block, rr, kk, t, 1, noisy, lo, node)
    reset_rows(core_nodes, core_total, core_tau, f)


# --- fresh batches (privbandit.mechanisms.fresh_batch.FreshBatchMean) ---------------------------------


@kernel
def hh_batch_gather(open_sum: np.ndarray, pending: np.ndarray, count: np.ndarray, n_batches: np.ndarray,
                    rr: np.ndarray, kk: np.ndarray, stat: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    node: np.ndarray) -> None:
    """Before the releases of the open batches of streams (rr[i], kk[i]): the statistic (the batch
    sum), the footprint [count - pending, count) and the ledger node (the batch number)."""
    for i in range(rr.size):
        r, c = rr[i], kk[i]
        stat[i] = open_sum[r, c]
        lo[i] = count[r, c] - pending[r, c]
        hi[i] = count[r, c]
        node[i] = n_batches[r, c]


@kernel
def hh_batch_close(noisy_sum: np.ndarray, batch_size: np.ndarray, n_batches: np.ndarray, pending: np.ndarray,
                   open_sum: np.ndarray, target: np.ndarray, rr: np.ndarray, kk: np.ndarray,
                   noisy: np.ndarray) -> None:
    """After the releases ``noisy``: store them, record the closed batches' sizes, count them and open
    empty batches (no target)."""
    for i in range(rr.size):
        r, c = rr[i], kk[i]
        noisy_sum[r, c] = noisy[i]
        batch_size[r, c] = pending[r, c]
        n_batches[r, c] += 1
        pending[r, c] = 0
        open_sum[r, c] = 0.0
        target[r, c] = 0
