"""Hostile inputs, eleventh round (session 14, lead): names a user mistypes get their close match."""

from __future__ import annotations

import pytest

from privbandit.contextual.envs import ClassificationBandit


@pytest.mark.parametrize("given, meant", [("DIGITS", "digits"), ("brest_cancer", "breast_cancer"), ("Wine", "wine")])
def test_dataset_typo_names_its_close_match(given, meant):
    # names stay exact (no silent case folding), but the message says which one was meant
    with pytest.raises(ValueError, match=rf"dataset must be one of .*got '{given}'; did you mean '{meant}'\?"):
        ClassificationBandit(given)


def test_dataset_far_from_every_name_lists_them_without_a_guess():
    with pytest.raises(ValueError) as info:
        ClassificationBandit("mnist")
    assert "did you mean" not in str(info.value) and "digits, wine, breast_cancer, iris" in str(info.value)

