import dp_accounting
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountants import Composed, Gaussian, Laplace, PureAccountant, PureDP, SelfComposed, from_dp_accounting, to_dp_accounting
from accountants.events import NO_EVENT, ApproxDP

leaf = st.one_of(
    st.builds(Laplace, scale=st.floats(0.01, 1e3)),
    st.builds(Gaussian, sigma=st.floats(0.01, 1e3)),
    st.builds(PureDP, epsilon=st.floats(1e-3, 20.0)),
)
events = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.builds(lambda es: Composed(tuple(es)), st.lists(inner, max_size=3)),
        st.builds(SelfComposed, inner, st.integers(0, 50)),
    ),
    max_leaves=8,
)


def _same(a, b):
    if isinstance(a, PureDP):
        assert isinstance(b, PureDP) and b.epsilon == pytest.approx(a.epsilon, rel=1e-12)
    elif isinstance(a, Composed):
        assert isinstance(b, Composed) and len(a.events) == len(b.events)
        for x, y in zip(a.events, b.events):
            _same(x, y)
    elif isinstance(a, SelfComposed):
        assert isinstance(b, SelfComposed) and a.count == b.count
        _same(a.event, b.event)
    else:
        assert a == b


@settings(max_examples=60, deadline=None)
@given(events)
def test_round_trip_preserves_structure(event):
    dp_event = to_dp_accounting(event)
    _same(event, from_dp_accounting(dp_event))
    # a second round trip keeps the structure (PureDP epsilons are rounded up by a few ulps each time,
    # never down: the conversion from a noise parameter must not understate epsilon)
    _same(from_dp_accounting(dp_event), from_dp_accounting(to_dp_accounting(from_dp_accounting(dp_event))))


def test_sensitivity_folds_into_noise_multiplier():
    ev = Laplace(scale=6.0, sensitivity=3.0)
    back = from_dp_accounting(to_dp_accounting(ev))
    assert back == Laplace(scale=2.0)
    assert PureAccountant().compose(back).epsilon(1e-6) == PureAccountant().compose(ev).epsilon(1e-6)
    assert isinstance(to_dp_accounting(Composed((ev, ev))), dp_accounting.ComposedDpEvent)
    assert isinstance(to_dp_accounting(SelfComposed(ev, 3)), dp_accounting.SelfComposedDpEvent)


def test_unsupported_dp_events_raise_naming_the_type():
    with pytest.raises(ValueError, match="PoissonSampledDpEvent"):
        from_dp_accounting(dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.0)))
    with pytest.raises(ValueError, match="num_buckets"):
        from_dp_accounting(dp_accounting.RandomizedResponseDpEvent(0.5, 3))
    assert from_dp_accounting(dp_accounting.NoOpDpEvent()) == NO_EVENT
    with pytest.raises(ValueError, match="ApproxDP|epsilon, delta"):
        to_dp_accounting(ApproxDP(0.1, 1e-6))
