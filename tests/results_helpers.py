"""Real sweep results without Ray, for report and viewer tests: the sweep's own plan, scheduler and
Parquet writer, with the engines built in this process (simulated ones are fast and deterministic)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from sweep.config.sweep import SweepConfig, load_config
from sweep.engines.pool import local_agents
from sweep.run.plan import build_plan
from sweep.run.runner import write_resolved_config
from sweep.run.scheduler import run_tasks
from sweep.store.records import Recorder
from sweep.store.results import BufferedWriter, ResultStore
from tests.conftest import ROOT


def sweep_config(
    source: str | dict[str, Any], out: Path, *overrides: str, tmp: Path | None = None
) -> SweepConfig:
    """A config from an example name (`examples/<name>.yaml`) or a dict, writing to `out`."""
    if isinstance(source, dict):
        path = (tmp or out.parent) / f"{out.name}.yaml"
        path.write_text(yaml.safe_dump(source))
    else:
        path = ROOT / "examples" / f"{source}.yaml"
    return load_config(str(path), list(overrides), str(out))


def run_in_process(cfg: SweepConfig) -> Path:
    """Run every episode of `cfg` into its output dir (no Ray, no call cache, no MLflow)."""
    plan = build_plan(cfg)
    out = Path(cfg.output_dir).resolve()
    write_resolved_config(cfg, out)
    used = {m: cfg.models[m] for m in sorted({s for t in plan.tasks for s in t.group.seats})}
    agents = local_agents(cfg, used)
    simulated = {m for m, s in used.items() if s.engine == "simulated"}
    with BufferedWriter(ResultStore(out), max_episodes=40) as writer:
        record = Recorder(writer, cfg.identity(), simulated)
        stats = asyncio.run(run_tasks(plan.tasks, agents, record, cfg.concurrency))
    assert not stats.failures, stats.failures[:3]
    return out


def add_columns(path: Path, columns: dict[str, tuple[pa.DataType, Any]]) -> None:
    """Rewrite one Parquet part with these columns (added, or replaced where present):
    name -> (type, value per row, or a function of the row's dict)."""
    table = pq.read_table(path)
    rows = table.to_pylist()
    for name, (type_, value) in columns.items():
        values = [value(r) if callable(value) else value for r in rows]
        field, array = pa.field(name, type_, nullable=True), pa.array(values, type_)
        i = table.schema.get_field_index(name)
        table = table.set_column(i, field, array) if i >= 0 else table.append_column(field, array)
    pq.write_table(table, path)


def drop_columns(path: Path, names: list[str]) -> None:
    """Rewrite one Parquet part without `names`, as a writer older than those columns stored it."""
    table = pq.read_table(path)
    pq.write_table(table.drop_columns([n for n in names if n in table.schema.names]), path)


HOSTILE = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def plant_hostile_text(out: Path) -> str:
    """Put hostile, over-long model text into one stored turn; returns its episode id."""
    path = sorted((out / "turns").glob("part-*.parquet"))[0]
    table = pq.read_table(path)
    texts = table.column("text").to_pylist()
    texts[0] = HOSTILE + "x" * 30_000
    table = table.set_column(table.schema.get_field_index("text"), "text", pa.array(texts, pa.string()))
    pq.write_table(table, path)
    return str(table.column("episode_id")[0])
