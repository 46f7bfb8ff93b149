"""The Gaussian mechanism as an instrumented, vectorised release.

f(D) + N(0, sigma^2) with L2 sensitivity s is (s/sigma)-GDP (Dong, Roth & Su 2022, Theorem 2.7);
ALGORITHMS.md section 1.
"""

from __future__ import annotations

import numpy as np

from privbandit.mechanisms.laplace import _Release


class GaussianRelease(_Release):
    """One-off noisy statistics: ``statistic + N(0, sigma^2)``, each recorded with its footprint.

    ``release(statistic (m,), sigma (m,), sensitivity (m,), replicate, stream, lo, hi, node=None)``
    returns the m noisy values; release i is (sensitivity/sigma)-GDP. Exact mode uses the discrete
    Gaussian (see :mod:`privbandit.mechanisms.sampling` for what it certifies and its cost).
    """

    kind = "gaussian"

    def release(self, statistic, sigma, sensitivity, replicate, stream, lo, hi, node=None) -> np.ndarray:
        statistic, sigma, sensitivity = self._arrays(statistic, sigma, sensitivity, "sigma")
        noisy = self.sampler.gaussian_release(statistic, sigma)
        if self.ledger is not None:
            # exact mode: the discrete Gaussian is proven for the zCDP curve only (not GDP)
            record = self.ledger.record_discrete_gaussian if self.sampler.exact else self.ledger.record_gaussian
            record(replicate, stream, lo, hi, self.sampler.effective_sigma(sigma),
                   self.sampler.effective_sensitivity(sensitivity), mechanism=self.name, node=node)
        return noisy
