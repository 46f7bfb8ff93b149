"""Privacy accountants: events in, certified (epsilon, delta), mu or RDP curves out.

No knowledge of bandits lives here (DESIGN.md, "Layers"). Events mirror ``dp_accounting``'s
vocabulary; each accountant is a small module with the same interface
(``compose(event, count)``, ``epsilon(delta)``, ``delta(epsilon)``).
"""

from accountants.base import Accountant, UnsupportedEventError
from accountants.advanced import AdvancedCompositionAccountant, advanced_composition_epsilon
from accountants.best import Certificate, best_delta, best_epsilon
from accountants.calibrate import Calibration, UnreachableTargetError, calibrate
from accountants.events import (
    GDP,
    ApproxDP,
    Composed,
    DiscreteGaussian,
    DiscreteLaplace,
    Event,
    Gaussian,
    Laplace,
    LeafEvent,
    PureDP,
    SelfComposed,
    ZCDP,
)
from accountants.gdp import GDPAccountant
from accountants.interop import dp_accounting_accountant, from_dp_accounting, neighboring_relation, to_dp_accounting
from accountants.kov import KOVHeterogeneousAccountant
from accountants.laplace_exact import LaplaceExactAccountant
from accountants.optimal import OptimalHomogeneousAccountant
from accountants.pld import PLDAccountant
from accountants.pure import PureAccountant
from accountants.rdp import RDPAccountant

__all__ = [
    "Accountant", "UnsupportedEventError", "Certificate", "best_delta", "best_epsilon",
    "Calibration", "UnreachableTargetError", "calibrate", "GDP", "ApproxDP", "Composed", "Event",
    "Gaussian", "DiscreteLaplace", "DiscreteGaussian", "Laplace", "LeafEvent",
    "PureDP", "SelfComposed", "ZCDP", "GDPAccountant", "PureAccountant",
    "AdvancedCompositionAccountant", "advanced_composition_epsilon", "KOVHeterogeneousAccountant",
    "OptimalHomogeneousAccountant", "LaplaceExactAccountant", "RDPAccountant", "PLDAccountant", "to_dp_accounting",
    "from_dp_accounting", "dp_accounting_accountant", "neighboring_relation",
]
