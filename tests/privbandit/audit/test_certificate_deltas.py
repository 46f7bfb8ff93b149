"""The certificate check compares at small deltas too (session 12, after round 14's ts_tiny_delta_split).

Round 14 (written blind) planted a Gaussian-TS schedule whose epsilon is converted at 10 delta only below
delta = 1e-6; the check compared at 1e-5 and 1e-3 only and passed it. It now also compares every
certificate at 1e-7 and 1e-9, and all-Gaussian certificates (an exact GDP floor) down to 1e-300."""

from __future__ import annotations

import importlib.util
import math
import pathlib
import sys

from privbandit.audit.certificate import CERT_DELTAS, GDP_DELTAS, certificate_shortfall
from privbandit.policies import GaussianTS, LazyDPTS
from privbandit.policies.gaussian_ts import GaussianTSSchedule
from privbandit.policies.hu_hegde import LazyDPTSSchedule

_BENCH = pathlib.Path(__file__).resolve().parents[3] / "bench"


def _round14():
    sys.path.insert(0, str(_BENCH))  # the round modules import the earlier rounds' helpers by name
    spec = importlib.util.spec_from_file_location("audit_planted_round14", _BENCH / "audit_planted_round14.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _slipped_below(base, threshold):
    """``base``'s schedule class, its (eps, delta) certificate computed at 10 delta below ``threshold``."""

    class Slipped(base):
        def epsilon(self, rounds, delta, accountants=None):
            return super().epsilon(rounds, delta * 10 if delta < threshold else delta, accountants)

        def live_certificates(self, rounds, delta, accountants=None):
            return super().live_certificates(rounds, delta * 10 if delta < threshold else delta, accountants)

    return Slipped


def test_round14s_tiny_delta_split_is_refuted():
    bug = _round14().ROUND14_BUGS["ts_tiny_delta_split"]()
    short = certificate_shortfall(bug.privacy_schedule(200, 2), [50, 200])
    assert short is not None and short[1] < 1e-6 and short[2] < short[3], short
    # its clean twin passes
    assert certificate_shortfall(GaussianTS(1, 4.0).privacy_schedule(200, 2), [50, 200]) is None


def test_a_gaussian_certificate_wrong_only_far_out_is_refuted():
    for threshold in (1e-11, 1e-25, 1e-150, 1e-250):
        sched = _slipped_below(GaussianTSSchedule, threshold)(1, 4.0, 2)
        short = certificate_shortfall(sched, [50, 200])
        assert short is not None and short[1] < threshold, (threshold, short)
    assert min(GDP_DELTAS) <= 1e-300


def test_a_laplace_certificate_wrong_only_below_1e_8_is_refuted():
    clean = LazyDPTS().privacy_schedule(200, 2)
    assert certificate_shortfall(clean, [50, 200]) is None
    sched = _slipped_below(LazyDPTSSchedule, 1e-8)
    slipped = sched.__new__(sched)
    slipped.__dict__.update(clean.__dict__)
    short = certificate_shortfall(slipped, [50, 200])
    assert short is not None and short[1] == 1e-9, short
    assert 1e-9 in CERT_DELTAS and all(d >= 1e-9 for d in CERT_DELTAS)  # above the PLD floor's FFT noise
