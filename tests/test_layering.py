"""The house's floors: debate/ never imports ray, vllm, optuna or mlflow — not even indirectly."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {"ray", "vllm", "optuna", "mlflow"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_debate_sources_import_no_heavy_framework() -> None:
    files = sorted((ROOT / "debate").rglob("*.py"))
    assert files, "debate/ has no modules"
    for f in files:
        bad = _imports(f) & FORBIDDEN
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"


def test_lower_floors_never_import_sweep() -> None:
    for pkg in ("debate", "actors", "data"):
        for f in (ROOT / pkg).rglob("*.py"):
            assert "sweep" not in _imports(f), f"{f.relative_to(ROOT)} imports sweep/"


def test_importing_the_core_loads_no_heavy_framework() -> None:
    code = (
        "import sys, debate.episode, debate.methods, actors.registry, data; "
        "import actors.registry as r; r.engine_names(); "
        f"bad = [m for m in {sorted(FORBIDDEN)!r} if m in sys.modules]; "
        "assert not bad, bad"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
