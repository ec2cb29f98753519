"""The table `sweep run` ends with: the report's first table (`sweep.report.summary`) over the plan's
episodes — per method and dataset, the seeds and episodes, accuracy mean ± std over seeds, the share
of unparsable final answers, and parse failures, tokens, calls (and cost, when priced) per task.

Labels: one scheme for `sweep plan`, this table and `sweep report` (`plan_labels`): the method's
short label (its name and the arguments that differ from their defaults), with rounds and protocol
appended only where two methods of the plan would otherwise share one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table

from debate.registry import distinct_labels
from debate.spec import canonical_json
from sweep.run.plan import Group, Plan

if TYPE_CHECKING:  # polars and pyarrow load only when a summary is made, not for `sweep plan`'s labels
    from sweep.store.results import ResultStore

_READ = (
    "seed",
    "item_id",
    "dataset",
    "split",
    "correct",
    "final_answer",
    "round_correct",
    "prompt_tokens",
    "completion_tokens",
    "calls",
    "cost",
    "parse_failures",
)


def row_key(g: Group) -> str:
    """What makes a row: the method as it ran without its team (`sweep.report.load.method_identity`)."""
    return canonical_json({k: v for k, v in g.method_spec.items() if k not in ("agents", "n_agents")})


def plan_labels(plan: Plan) -> dict[str, str]:
    """Row key -> label, in plan order: `Method.label` (what episodes store as `method_label`), with
    `[rounds=…, protocol=…]` appended where two keys share a label, as `sweep report` does."""
    labels: dict[str, str] = {}
    for g in plan.groups:
        labels.setdefault(row_key(g), g.method.label)
    return distinct_labels(labels)


def summarize(plan: Plan, store: ResultStore) -> list[dict[str, Any]]:
    """The report's summary rows (`sweep.report.summary.summary_table`) for the episodes of `plan`
    that `store` holds: one per (method, dataset, split), in plan order."""
    import polars as pl

    from sweep.report.load import Results
    from sweep.report.summary import DIAGNOSTICS, summary_table
    from sweep.store.schema import EPISODE_SCHEMA

    labels = plan_labels(plan)
    ids, keys = [], []
    for g in plan.groups:
        key = row_key(g)
        for s in g.samples:
            ids.append(g.episode_id(s))
            keys.append(key)
    planned = pl.DataFrame(
        {"episode_id": ids, "method_key": keys}, schema={"episode_id": pl.String, "method_key": pl.String}
    ).with_columns(method_label=pl.col("method_key").replace_strict(labels, return_dtype=pl.String))
    diagnostics = [c for c in DIAGNOSTICS if c in EPISODE_SCHEMA.names]
    episodes = store.episodes([*_READ, *diagnostics]).join(planned, on="episode_id")
    if episodes.is_empty():
        return []
    episodes = episodes.with_columns(
        team=pl.lit(""),  # one sweep: one team
        tokens=pl.col("prompt_tokens") + pl.col("completion_tokens"),
        answered=pl.col("final_answer").is_not_null(),
    )
    rows = summary_table(Results([store.out_dir], episodes, pl.DataFrame(), list(labels))).to_dicts()
    order = {key: i for i, key in enumerate(labels)}
    datasets: dict[tuple[str, str], int] = {}
    for g in plan.groups:
        datasets.setdefault((g.dataset.name, g.dataset.split), len(datasets))
    return sorted(rows, key=lambda r: (datasets[(r["dataset"], r["split"])], order[r["method_key"]]))


def _pm(mean: float, std: float | None) -> str:
    return f"{mean:.3f}" if std is None else f"{mean:.3f} ± {std:.3f}"


def summary_table(rows: list[dict[str, Any]], simulated: bool) -> Table:
    """The rows as a terminal table: per-task columns only; cost only when some method has a price."""
    title = "results (simulated agents)" if simulated else "results"
    priced = any((r["cost_per_task"] or 0) > 0 for r in rows)
    caption = (
        "accuracy: mean ± std over seeds (no std with one seed); unparsable: episodes with no final answer"
    )
    table = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    columns = [
        "method",
        "dataset",
        "seeds",
        "episodes",
        "accuracy ± std",
        "unparsable",
        "parse fail/task",
        "tokens/task",
        "calls/task",
    ] + (["cost/task"] if priced else [])
    for col in columns:
        text = col in ("method", "dataset")
        table.add_column(col, justify="left" if text else "right", no_wrap=not text)
    for r in rows:
        cells = [
            r["method_label"],
            f"{r['dataset']}/{r['split']}",
            str(r["seeds"]),
            str(r["episodes"]),
            _pm(r["accuracy_mean"], r["accuracy_std"]),
            f"{r['unparsable_rate']:.1%}",
            f"{r['parse_failures_per_task']:.2f}",
            f"{r['tokens_per_task']:.0f}",
            f"{r['calls_per_task']:.1f}",
        ]
        table.add_row(*cells, *([f"{r['cost_per_task']:.6f}"] if priced else []))
    return table
