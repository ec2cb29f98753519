"""One engine pool: `sweep run` and `sweep study` start engines through `sweep.engines.pool.EnginePool`, and no
other package module starts engine actors itself."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def calls_to(path: Path, name: str) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sum(
        isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == name
        for n in ast.walk(tree)
    )


def test_only_the_pool_starts_engines() -> None:
    starters = {
        str(p.relative_to(ROOT)) for p in (ROOT / "sweep").rglob("*.py") if calls_to(p, "start_engines")
    }
    assert starters == {"sweep/engines/pool.py"}


def test_run_and_study_both_enter_the_pool() -> None:
    for module in ("sweep/run/runner.py", "sweep/study/cli.py"):
        assert calls_to(ROOT / module, "EnginePool") == 1, module
