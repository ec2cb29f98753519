"""The one registry class (`common.registry.Registry`): lazy builtins, the did-you-mean error that
both `except KeyError` and `except ValueError` read, and every registry of the project built on it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from common.registry import Registry, UnknownName


def test_an_unknown_name_is_one_line_with_a_did_you_mean_for_either_except() -> None:
    r: Registry[int] = Registry("engine")
    r["simulated"] = 1
    r["vllm"] = 2
    for kind in (KeyError, ValueError):
        with pytest.raises(kind) as e:
            r["simulatd"]
        assert str(e.value) == "unknown engine 'simulatd' (did you mean 'simulated'?); known: simulated, vllm"
    assert isinstance(r.unknown("x"), UnknownName) and "\n" not in str(r.unknown("x"))
    assert r.names() == ["simulated", "vllm"] and len(r) == 2 and "vllm" in r and "x" not in r


def test_builtins_are_imported_on_the_first_read_not_when_the_registry_is_made() -> None:
    code = (
        "import sys; from common.registry import Registry; "
        "r = Registry('thing', builtins=('json',)); sys.modules.pop('json', None); "
        "assert 'json' not in sys.modules; 'x' in r; assert 'json' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_register_stores_the_decorated_object_and_setitem_overrides() -> None:
    r: Registry[object] = Registry("sampler")

    @r.register("tpe")
    def tpe() -> None: ...

    assert r["tpe"] is tpe
    r["tpe"] = 3
    assert r["tpe"] == 3
    del r["tpe"]
    assert "tpe" not in r


def test_methods_engines_benchmarks_and_samplers_are_registries() -> None:
    from actors.registry import ENGINES
    from data.benchmarks.catalog import CATALOG
    from debate.registry import METHODS
    from sweep.study.samplers import PRUNERS, SAMPLERS

    for registry in (ENGINES, CATALOG, METHODS):
        assert isinstance(registry, Registry) and len(registry) > 3
    assert isinstance(SAMPLERS._factories, Registry) and isinstance(PRUNERS._factories, Registry)
    with pytest.raises(ValueError, match=r"unknown method 'pera' \(did you mean 'pear'\?\)"):
        METHODS["pera"]
    with pytest.raises(KeyError, match=r"unknown benchmark 'gsm9k' \(did you mean 'gsm8k'\?\)"):
        CATALOG["gsm9k"]
    with pytest.raises(ValueError, match=r"unknown sampler 'tpee' \(did you mean 'tpe'\?\)"):
        SAMPLERS.build("tpee")


def test_a_registry_read_in_a_fresh_process_sees_its_builtins() -> None:
    """`METHODS` read without importing debate.methods first still lists every method."""
    code = "from debate.registry import METHODS; assert 'pear' in METHODS and 'rumad' in METHODS"
    subprocess.run([sys.executable, "-c", code], check=True)
