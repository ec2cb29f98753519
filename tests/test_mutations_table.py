"""The mutation table in docs/testing.md and `bench/mutations.yaml` stay in step, so the table cannot drift
silently: a row per entry and an entry per row (by name), every patch still applies (its `find` is in
its file exactly once today), every named test exists. No mutation is run here (`bench/mutations.py`
does that); its loader, patcher and copy check are."""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import ROOT

HEADER = "| mutation | caught by |"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_mutations", ROOT / "bench" / "mutations.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


mutations = _module()


def readme_rows() -> list[str]:
    """The first cell of every row of docs/testing.md's mutation table."""
    lines = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8").splitlines()
    assert lines.count(HEADER) == 1, f"docs/testing.md must hold one table headed {HEADER!r}"
    rows = []
    for line in lines[lines.index(HEADER) + 2 :]:  # past the header and its --- line
        if not line.startswith("|"):
            break
        rows.append(line[1:].split(" | ", 1)[0].strip())
    return rows


def test_every_readme_row_has_an_entry_and_every_entry_a_row() -> None:
    rows = readme_rows()
    names = [m.name for m in mutations.load()]
    entries = list(dict.fromkeys(names))  # a row's variants share its name
    assert len(rows) >= 20 and len(set(rows)) == len(rows)
    assert not set(rows) - set(entries), f"rows without an entry: {sorted(set(rows) - set(entries))}"
    assert not set(entries) - set(rows), f"entries without a row: {sorted(set(entries) - set(rows))}"
    assert len(entries) == len({m.entry for m in mutations.load()}), "two entries share a name"


@pytest.mark.parametrize("m", mutations.load(), ids=lambda m: f"{m.entry}-{m.label or 'one'}")
def test_each_patch_finds_its_snippet_exactly_once_today(m: Any) -> None:
    for p in m.patches:
        text = (ROOT / p.file).read_text(encoding="utf-8")
        assert text.count(p.find) == 1, (
            f"{p.file}: the table is stale: {p.find!r} occurs {text.count(p.find)} times"
        )


def test_every_named_test_exists() -> None:
    for m in mutations.load():
        for item in m.tests:
            for arg in (a for a in shlex.split(item) if a.startswith("tests/")):
                path, _, name = arg.partition("::")
                assert (ROOT / path).is_file(), f"{m.id}: no test file {path}"
                if name:
                    func = name.split("::")[-1].split("[")[0]
                    source = (ROOT / path).read_text(encoding="utf-8")
                    assert re.search(rf"^(async )?def {re.escape(func)}\(", source, re.M), f"{m.id}: no {arg}"


def test_a_stale_find_is_refused_and_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    for text, count in (("x = 1\n", 0), ("a = 2\na = 2\n", 2)):
        target.write_text(text)
        why = mutations.apply(tmp_path, [mutations.Patch("m.py", "a = 2", "a = 3")])
        assert why is not None and f"occurs {count} times" in why and target.read_text() == text
    target.write_text("a = 2\nb = 1\n")
    assert mutations.apply(tmp_path, [mutations.Patch("m.py", "a = 2", "a = 3")]) is None
    assert target.read_text() == "a = 3\nb = 1\n"


def test_options_run_alone_and_node_ids_together() -> None:
    got = mutations.runs(["tests/a.py::t", 'tests/b.py -k "x or y"', "tests/c.py"])
    assert got == [["tests/a.py::t", "tests/c.py"], ["tests/b.py", "-k", "x or y"]]


def test_the_copy_is_what_its_tests_import(tmp_path: Path) -> None:
    """The project is installed editable: without PYTHONPATH first, the checkout would be imported."""
    python = sys.executable
    with mutations.copy_of_tree(mutations.working_tree(), keep=False) as copy:
        assert (copy / "sweep" / "cli.py").read_bytes() == (ROOT / "sweep" / "cli.py").read_bytes()
        assert mutations.check_imports(python, copy) is None
    elsewhere = tmp_path / "no-code"  # only `tests/`: the rest would come from the editable install
    (elsewhere / "tests").mkdir(parents=True)
    why = mutations.check_imports(python, elsewhere)
    assert why is not None and "outside the copy" in why and str(ROOT / "sweep") in why
