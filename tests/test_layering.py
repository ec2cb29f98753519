"""The house's floors, as the Layout table of docs/layout.md (a page of the docs site) states them:
each package imports only the packages its row allows (read from the table), no module takes part in
an import cycle (imports inside functions count: a lazy import is still an arrow), no package module
exceeds 300 lines, and debate/ never imports ray, vllm, optuna or mlflow — not even indirectly."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ROOT / "docs" / "layout.md"  # the table both this test and the docs site read
FORBIDDEN = {"ray", "vllm", "optuna", "mlflow"}
LAZY = {"torch"}  # debate/ may use it (learned policies), but only once a policy is built
PACKAGES = ("sweep", "debate", "actors", "data", "search_spaces", "common")
MAX_LINES = 300


def allowed_imports(table: str) -> dict[str, set[str]]:
    """package -> the project packages its Layout row allows (the table's last column)."""
    rows = re.findall(r"^\| `(\w+)/` \|.*\| ([^|]*) \|$", table, flags=re.M)
    return {pkg: set(re.findall(r"`(\w+)`", last)) for pkg, last in rows}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Every absolute module name `path` imports, at any depth of the code (`from a import b` adds
    `a.b` too, since b may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports (a package import counts as its `__init__`)."""
    return {m: {n for n in imports(p) if n in modules and n != m} for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def violations(graph: dict[str, set[str]], allowed: dict[str, set[str]]) -> list[str]:
    bad = []
    for m, targets in sorted(graph.items()):
        pkg = m.split(".")[0]
        for t in sorted(targets):
            other = t.split(".")[0]
            if other != pkg and other not in allowed[pkg]:
                bad.append(f"{m} imports {t}")
    return bad


def test_the_readme_table_names_every_package() -> None:
    allowed = allowed_imports(LAYOUT.read_text(encoding="utf-8"))
    assert set(allowed) == set(PACKAGES)
    assert allowed["sweep"] == {"debate", "actors", "data", "search_spaces", "common"}
    assert allowed["actors"] == allowed["data"] == allowed["search_spaces"] == {"common"}
    assert allowed["common"] == set()  # the ground floor imports nothing of the project


def test_imports_follow_the_readme_layout() -> None:
    allowed = allowed_imports(LAYOUT.read_text(encoding="utf-8"))
    assert violations(import_graph(project_modules()), allowed) == []


def test_no_import_cycles() -> None:
    assert cycles(import_graph(project_modules())) == []


def test_no_package_module_exceeds_300_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in project_modules().values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


@pytest.mark.parametrize(
    "graph, allowed, expect_violation, expect_cycle",
    [
        ({"data.a": {"actors.b"}, "actors.b": set()}, {"data": set(), "actors": set()}, True, False),
        ({"actors.b": {"debate.c"}, "debate.c": set()}, {"actors": set(), "debate": {"actors"}}, True, False),
        (
            {"debate.c": {"actors.b"}, "actors.b": set()},
            {"actors": set(), "debate": {"actors"}},
            False,
            False,
        ),
        ({"data.a": {"data.b"}, "data.b": {"data.c"}, "data.c": {"data.a"}}, {"data": set()}, False, True),
    ],
)
def test_the_checks_catch_sideways_upward_and_circular_imports(
    graph: dict[str, set[str]], allowed: dict[str, set[str]], expect_violation: bool, expect_cycle: bool
) -> None:
    assert bool(violations(graph, allowed)) is expect_violation
    assert bool(cycles(graph)) is expect_cycle


def test_lazy_imports_are_arrows_too(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(
        "def f():\n    from data.benchmarks.registry import load_benchmark\n    import actors.base\n"
    )
    assert {"data.benchmarks.registry", "data.benchmarks.registry.load_benchmark", "actors.base"} <= imports(
        f
    )


def test_debate_sources_import_no_heavy_framework() -> None:
    files = sorted((ROOT / "debate").rglob("*.py"))
    assert files, "debate/ has no modules"
    for f in files:
        bad = {n.split(".")[0] for n in imports(f)} & FORBIDDEN
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"


def test_importing_the_core_loads_no_heavy_framework() -> None:
    code = (
        "import sys, debate, debate.episode, debate.methods, debate.rewards, actors.registry, data; "
        "import actors.registry as r; r.engine_names(); "
        "from debate.methods import build_method; build_method('rumad'); "  # a learned router, not yet built
        f"bad = [m for m in {sorted(FORBIDDEN | LAZY)!r} if m in sys.modules]; "
        "assert not bad, bad"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
