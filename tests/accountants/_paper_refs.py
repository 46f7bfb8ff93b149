"""Per-record truths of the graph-feedback, adversarial and contextual policies, derived from the papers
(shared ALGORITHMS.md), not from the policies' schedules -- session 12 (s12/acc).

A certificate eps at delta is below the truth iff the true delta(eps) of the worst record's releases
exceeds delta. Each function below gives, for a horizon t, multisets of releases that some record of
some run provably IS in (the releases of one achievable record, or a sub-multiset of them: a
sub-composition is a post-processing, so its curve lies below). Their delta at the certificate is
then computed exactly (GDP, one Laplace) or bounded from below rigorously
(:func:`tests.accountants._exact.laplace_log_delta_lower`): a positive ``log_delta_lower - log delta``
is a certificate below the truth.

Derivations (ALGORITHMS.md sections in brackets):

* one Laplace per record [8.1 DP-EXP3-Lap: Lap(1/eps) on each observed reward; 12.1 private EXP3:
  Lap(1/eps) on each observed loss; 12.1 Asi et al.: each record in its batch's loss sum, Lap(1/eps),
  sensitivity 1, released at the batch end; 6.2 Lazy-DP-TS: every observation in one fresh batch with
  one Lap(1/eps)]: delta(eps) = 1 - e^{(eps - eps0)/2} on [0, eps0), exactly.
* the hybrid mechanism H(eps) of an arm's stream holding n items [2.1-2.3; DP-UCB-Bound 4.2 with side
  observations]: the logarithmic part at eps/2 puts one Lap(2/eps) on the increment (2^k, 2^{k+1}]
  when the count reaches 2^{k+1}; the binary mechanism B_k of the block (2^k, 2^{k+1}) receives at most
  2^k - 1 items, so L = floor(log2(2^k - 1)) + 1 = k levels at eps/2, nodes Lap(2k/eps); the block's
  first record lies in the dyadic p-sums of sizes 1, 2, 4, ... completed by then: bit_length(m) of
  them when the block holds m items. Records 1 and 2 are each in one logarithmic release only.
* Gaussian TS [5.1-5.2, Lemmas 3-5]: each round after a record is observed, its arm's draw is a
  Gaussian release of sensitivity 1/(k+1) and sd sqrt(c/(k+1)); a record of an arm that is never
  observed again keeps k = max(b, 1) (b pre-pulls: the arm's last pre-pull; b = 0: its first
  observation), over t - K b (b >= 1) or t - 1 (b = 0) releasing rounds: mu^2 = n / (c (k + 1)).
  With side observations and an empty graph the same run exists ("entry" neighbours).
* tree aggregation [3.1; 12.3]: the first record of a tree holding n items lies in the nodes
  [0, 2^j) for 2^j <= n: bit_length(n) nodes. Shariff & Sheffet's node is a Gaussian on the packed
  (upper-triangle) Gram matrix of [z; r]: the pair (z, r) = (L e1, 1), (L e2, 0) changes it by L^2,
  -L^2, L and 1 in four entries, L2 norm sqrt(2 L^4 + L^2 + 1) (achievable; the declared sqrt 2 (L^2 + 1)
  bounds every pair). Mishra & Thakurta's node puts Lap(levels w / eps0) on each packed entry of
  (A, b) (w its range: L^2 for A, 2L for b); z = (L / sqrt d) 1 against -z with r = 1 leaves A and
  changes every b entry by 2L / sqrt d: d Laplace releases of eps0 / (levels sqrt d) per node.
"""

from __future__ import annotations

import math

import mpmath

from tests.accountants._exact import gdp_delta, laplace_log_delta_lower


def hybrid_candidates(n: int, eps: float) -> list[dict[float, int]]:
    """Release multisets {eps0: count} of Laplace releases of the records of a hybrid stream with n items."""
    if n <= 0:
        return []
    out = [{eps / 2.0: 1}]  # record 1 (and record 2 once n >= 2): one logarithmic release
    k = 1
    while (1 << k) < n:
        items = min(n, (1 << (k + 1)) - 1) - (1 << k)  # items the block's binary mechanism holds
        cand: dict[float, int] = {}
        if n >= (1 << (k + 1)):
            cand[eps / 2.0] = 1
        nodes = items.bit_length()
        if nodes:
            e = eps / (2.0 * k)
            cand[e] = cand.get(e, 0) + nodes
        if cand:
            out.append(cand)
        k += 1
    return out


def single_laplace_log_delta(scale: float, eps: float) -> float:
    """log of the exact delta(eps) of one Lap(``scale``) release of sensitivity 1 (eps0 = 1/scale exactly,
    the noise actually drawn): log(1 - e^{(eps - eps0)/2}) for eps < eps0 (mpmath, 60 digits)."""
    with mpmath.workdps(60):
        e0 = 1 / mpmath.mpf(scale)
        if eps >= e0:
            return -math.inf
        return float(mpmath.log(-mpmath.expm1((mpmath.mpf(eps) - e0) / 2)))


def laplace_multiset_log_delta_lower(groups: dict[float, int], eps: float) -> float:
    """Rigorous lower bound on log delta(eps) of the composition {eps0: count} of Laplace releases."""
    items = sorted((math.nextafter(e0, 0.0), n) for e0, n in groups.items() if n > 0)
    if not items:
        return -math.inf
    if eps >= sum(e0 * n for e0, n in items):
        return -math.inf
    spread = math.sqrt(sum(n * e0 * e0 for e0, n in items))
    e0min = items[0][0]
    h = e0min / 2.0 ** max(5, math.ceil(math.log2(e0min * 5e3 / spread)))
    return laplace_log_delta_lower(items, eps, h)


def gdp_log_delta(mu2: mpmath.mpf, eps: float) -> float:
    """log of the exact delta(eps) of sqrt(mu2)-GDP (Dong, Roth & Su 2022, Cor. 2.13; mpmath)."""
    if mu2 <= 0:
        return -math.inf
    d = gdp_delta(mpmath.sqrt(mu2), eps)
    with mpmath.workdps(50):
        return float(mpmath.log(d)) if d > 0 else -math.inf


def gaussian_ts_mu2(t: int, n_arms: int, b: int, c: float) -> mpmath.mpf:
    """mu^2 of the record of an arm never observed after it (5.1-5.2), in mpmath."""
    n = t - n_arms * b if b >= 1 else t - 1
    if n <= 0:
        return mpmath.mpf(0)
    k = max(b, 1)
    with mpmath.workdps(50):
        return mpmath.mpf(n) / (mpmath.mpf(c) * (k + 1))


def joint_dp_mu2(n: int, bound: float, sigma: float) -> mpmath.mpf:
    """mu^2 of the first record of a Shariff-Sheffet tree holding n items (achievable pair, see above)."""
    with mpmath.workdps(50):
        L = mpmath.mpf(bound)
        sens = mpmath.sqrt(2 * L ** 4 + L ** 2 + 1)
        return n.bit_length() * (sens / mpmath.mpf(sigma)) ** 2


def mishra_groups(n: int, eps0: float, levels: int, dim: int) -> dict[float, int]:
    """The Laplace releases of the first record of a Mishra-Thakurta tree holding n items (see above)."""
    return {eps0 / (levels * math.sqrt(dim)): dim * n.bit_length()} if n > 0 else {}


def mishra_candidates(n: int, eps0: float, levels: int, dim: int) -> list[dict[float, int]]:
    """Session 13: the first record's releases for three achievable pairs (contexts in the L-ball, rewards in
    [0, 1]; the certificate's sensitivity covers a context change). An entry moving by D against its
    sensitivity w (L^2 in A, 2 L in b) is a Laplace release of eps D eps0 / (levels w), in each of the
    bit_length(n) nodes; the truth is at least the largest of their curves.

    * s12's pair: z = (L/sqrt d) 1 against -z, r = 1: A unchanged, every b entry by 2 L / sqrt d;
    * z = (L/sqrt d) 1, r = 1 against z' = 0: every packed A entry (d(d+1)/2 of them) by L^2 / d -- the
      largest sum_{i<=j} |z_i z_j| of the L-ball, (d + 1) L^2 / 2 -- and every b entry by L / sqrt d;
    * the same z against z' = L e_1, r' = 0: A_11 by (1 - 1/d) L^2, the other A entries by L^2 / d, b as
      above (more in l1 than the second for d >= 3).
    """
    if n <= 0:
        return []
    nodes, d = n.bit_length(), dim
    unit = eps0 / levels
    b_part = unit / (2.0 * math.sqrt(d))
    packed = d * (d + 1) // 2

    def merge(pairs):
        out: dict[float, int] = {}
        for e, k in pairs:
            if k > 0 and e > 0:
                out[e] = out.get(e, 0) + k * nodes
        return out

    return [merge([(unit / math.sqrt(d), d)]),
            merge([(unit / d, packed), (b_part, d)]),
            merge([(unit * (1.0 - 1.0 / d), 1), (unit / d, packed - 1), (b_part, d)])]


def gaussian_ts_round_star_mu2(t: int, n_arms: int, b: int, c: float) -> mpmath.mpf:
    """Session 13: mu^2 of one round's record under "round" neighbours on a star of degree K - 1 (5.1-5.2,
    k_i counting every observation). The hub h is played at the record's round s and observes all K arms;
    afterwards the run plays one leaf j only, so the other K - 2 leaves are never observed again (their k
    frozen) and h, j are observed every round (k growing by one). Each round after s every arm's draw is a
    1/sqrt(c (k + 1))-GDP release of the record's observation of that arm; composed exactly (GDP):

    * b = 0: s = 1, every arm then holds k = 1; t - 1 releasing rounds r = 2..t, where k_h = k_j = r - 1:
      mu^2 = (K - 2)(t - 1) / (2 c) + 2 sum_{r=2}^{t} 1 / (c r);
    * b >= 1: s = K b, the hub's last pre-pull (the hub pre-pulled last); a leaf's own b pre-pulls and the
      hub's b make k = 2 b, the hub's k = K b; n = t - K b releasing rounds:
      mu^2 = (K - 2) n / (c (2 b + 1)) + sum_{m<n} [1 / (c (K b + m + 1)) + 1 / (c (2 b + m + 1))].

    The certificate's K n / (c (max(b, 1) + 1)) is the same with every arm frozen at the least count.
    """
    K = n_arms
    with mpmath.workdps(50):
        c = mpmath.mpf(c)
        if b == 0:
            if t < 2:
                return mpmath.mpf(0)
            return (K - 2) * mpmath.mpf(t - 1) / (2 * c) + 2 * (mpmath.harmonic(t) - 1) / c
        n = t - K * b
        if n <= 0:
            return mpmath.mpf(0)

        def tail(a):  # sum_{m<n} 1/(a + m + 1)
            return mpmath.digamma(a + n + 1) - mpmath.digamma(a + 1)

        return (K - 2) * mpmath.mpf(n) / (c * (2 * b + 1)) + (tail(K * b) + tail(2 * b)) / c
