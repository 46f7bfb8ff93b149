import math

import numpy as np
import pytest

from accountants import ZCDP, Gaussian, RDPAccountant, best_epsilon
from accountants.interop import from_dp_accounting, to_dp_accounting


def test_zcdp_is_bounded_by_rdp_only_and_matches_the_gaussian_rdp_curve():
    # rho-zCDP is exactly the Gaussian's RDP curve with rho = mu^2 / 2, so RDP certifies both alike
    alphas = np.array([1.5, 2.0, 10.0])
    np.testing.assert_allclose(ZCDP(0.125).rdp(alphas), Gaussian(sigma=2.0).rdp(alphas), rtol=1e-15)
    cert = best_epsilon(ZCDP(0.125) * 40, 1e-6)
    assert cert.by == "rdp"
    assert all(v is None for k, v in cert.values.items() if k != "rdp")
    assert cert.value == pytest.approx(RDPAccountant().compose(Gaussian(sigma=2.0), 40).epsilon(1e-6), rel=1e-12)
    # and it is never below the exact GDP value of the continuous Gaussian (RDP is an upper bound)
    assert cert.value >= best_epsilon(Gaussian(sigma=2.0) * 40, 1e-6).value


def test_zcdp_interop_and_validation():
    assert from_dp_accounting(to_dp_accounting(ZCDP(0.3) * 4)).grouped() == {ZCDP(0.3): 4}
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="rho"):
            ZCDP(bad)
