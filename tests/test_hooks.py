"""The optional hooks of a method's params class are declared in one table (`debate.hooks`): a read
of an undeclared name is an error, an absent hook reads as its default, and every registered method
that declares a data hook gives it the default's shape."""

from __future__ import annotations

import pytest

from debate.hooks import HOOKS, hook
from debate.methods import METHODS
from debate.routers.oracle import Oracle


def test_absent_hooks_read_as_their_defaults_and_a_typo_is_an_error() -> None:
    class Plain:
        pass

    assert hook(Plain, "RENAMED") == {} and hook(Plain, "LABEL") == () and hook(Plain, "seats") is None
    assert hook(Oracle, "ENGINE_NEEDS") == ("reads_gold", "reads the gold answer")
    with pytest.raises(KeyError, match=r"no hook 'RENAME'; the hooks are: RENAMED, ADDED"):
        hook(Plain, "RENAME")


def test_registered_methods_declare_data_hooks_in_the_default_s_shape() -> None:
    declared = 0
    for d in METHODS.values():
        for name in ("RENAMED", "ADDED", "LABEL", "ENGINE_NEEDS"):
            if hasattr(d.params, name):
                declared += 1
                assert isinstance(hook(d.params, name), type(HOOKS[name])), (d.name, name)
    assert declared >= 3  # the table is in use (LABEL, ENGINE_NEEDS, RENAMED at least)
