"""Session 14 (s14/acc): "a certificate is never below the truth, at any delta and any count".

* Inversions are monotone in the target: ``calibrate`` (behind ``budget.invert``) stopped within xtol
  of the feasibility boundary, wherever brentq and the bisection happened to land, and the certificate
  is monotone in its parameter only up to last-digit noise; target t and the next float above it
  returned per-release epsilons up to 2.4e-10 relative apart in the wrong order (a larger budget, a
  noisier parameter). The answer is now the boundary on a 40-bit lattice (``_lattice_boundary``).
"""

import math

import numpy as np
import pytest

from accountants import calibrate
from privbandit import budget


# --- 1. monotone inversions -----------------------------------------------------------------------------
@pytest.mark.parametrize("name, target, delta", [
    ("lazy_dp_ts", 0.001, 1e-6),   # before: 0x1.06ab14f08635ap-10 at t, ...ef78e15p-10 at nextafter(t)
    ("dp_exp3_lap", 1.0, 0.5),     # before: ...f009818p+1 at t, ...f009810p+1 at nextafter(t)
    ("dp_exp3_lap", 0.1, 0.1),     # before: ...76b895c6p-2 at t, ...76b8959ep-2 at nextafter(t)
])
def test_invert_never_returns_a_noisier_parameter_for_a_larger_target(name, target, delta):
    """Targets t < nextafter(t) < t (1 + 1e-12) < t (1 + 1e-9): the per-release epsilon returned must
    not fall, and each answer's own certificate (the one a run reports) stays within its target."""
    values = []
    for t in (target, math.nextafter(target, math.inf), target * (1 + 1e-12), target * (1 + 1e-9)):
        inv = budget.invert(name, t, 2, solve_for="epsilon", bounds=(1e-9, 700.0), n_arms=2, delta=delta)
        assert inv.certificate <= t
        assert budget.epsilon(inv.policy, 2, delta, 2).value <= t
        values.append(inv.value)
    assert values == sorted(values), [v.hex() for v in values]


def test_calibrate_answers_the_boundary_not_a_point_within_xtol():
    """A noisy but monotone-in-the-large certificate (+-60 ulps, like a Laplace release's at delta 0.1):
    every target in a fine ladder gets an answer no smaller than the previous target's, and within a
    few lattice cells (9e-13 relative) of the exact boundary."""
    rng = np.random.default_rng(14)
    noise = {}

    def cert(p):  # p * (1 + noise), the noise a fixed function of p (a certificate is deterministic)
        if p not in noise:
            noise[p] = float(rng.integers(-60, 61)) * 2.0 ** -52
        return p * (1.0 + noise[p])

    answers = [calibrate(cert, t, 1e-9, 10.0, increasing=True).parameter
               for t in np.linspace(0.5, 0.5 * (1 + 1e-9), 12)]
    assert answers == sorted(answers)
    for t, a in zip(np.linspace(0.5, 0.5 * (1 + 1e-9), 12), answers):
        assert cert(a) <= t and a >= t * (1 - 1e-11)


def test_calibrate_lattice_answer_for_a_decreasing_certificate():
    """increasing=False (a noise scale): the smallest feasible lattice point; monotone the other way."""
    answers = [calibrate(lambda s: 1.0 / s, t, 1e-6, 1e6, increasing=False).parameter
               for t in (2.0, math.nextafter(2.0, 3.0), 2.0 * (1 + 1e-12), 2.0 * (1 + 1e-9))]
    assert answers == sorted(answers, reverse=True)
    assert all(1.0 / a <= t for a, t in zip(answers, (2.0, math.nextafter(2.0, 3.0), 2.0 * (1 + 1e-12), 2.0 * (1 + 1e-9))))
    assert answers[0] <= 0.5 * (1 + 2e-12)
