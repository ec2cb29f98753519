"""Consistency baselines matched to another method's measured cost (CPP's Table 3): a method entry
`{name: consistency, args: {pool: fuse|best|<model>, match: <method>}}` is pending until the matched
method (named by its name, when one entry has it, or by its label) has run; `sweep run` runs the rest
of the sweep first, then settles the entry from the stored episodes on the same items and seeds:

- the target: the matched method's mean price-weighted cost per episode;
- each seat's cost per sample: the mean cost of that seat's round-0 call in those episodes (a
  consistency sample on seat s is that very call: the same prompt and call seed);
- `best`: the model whose round-0 answers there were right most often (`debate.baselines.strongest`);
- `m`: the sample count whose summed cost comes nearest the target (`debate.baselines.matched_m`).

The settled entry names its `m` and pool and no longer `match`, so its episodes are those of the same
plain consistency run (ids, cache). `build_plan` leaves pending entries out.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from data import grade
from debate.baselines import Consistency, matched_m, strongest
from sweep.config.sweep import ConfigError, SweepConfig
from sweep.run.plan import build_plan
from sweep.store.results import ResultStore


def is_pending(entry: Any) -> bool:
    return entry.name == "consistency" and bool(entry.args.get("match"))


def without_pending(cfg: SweepConfig) -> SweepConfig:
    """The sweep less its pending entries (what runs first)."""
    kept = [e for e in cfg.methods if not is_pending(e)]
    if not kept:
        raise ConfigError("methods: every entry matches another's cost; add the method they match")
    return cfg.model_copy(update={"methods": kept})


def _mean(values: pl.Series) -> float:
    """A cost column's mean (0 for no rows); polars types `mean()` as any scalar."""
    mean = values.mean()
    return float(mean) if isinstance(mean, int | float) else 0.0


def _target_ids(cfg: SweepConfig, target: str, i: int) -> list[str]:
    """The episode ids of the one method entry `target` names (by name or label)."""
    plan = build_plan(without_pending(cfg))
    specs = {
        g.method.spec.label()
        for g in plan.groups
        if target in (g.method.spec.name, g.method.spec.label(), g.method.label)
    }
    if not specs:
        raise ConfigError(
            f"methods[{i}].args.match: no method '{target}' in this sweep; name one of its methods"
        )
    if len(specs) > 1:
        raise ConfigError(
            f"methods[{i}].args.match: '{target}' names {len(specs)} entries; give one's label, e.g. {sorted(specs)[0]}"
        )
    return [t.episode_id for t in plan.tasks if t.group.method.spec.label() in specs]


def settle(cfg: SweepConfig, store: ResultStore) -> SweepConfig:
    """The sweep with every pending entry settled from the stored episodes (see the module docstring)."""
    episodes, turns = store.episodes(), store.turns()
    team, adversaries = cfg.team(), cfg.adversaries()
    keys = [(m, j in adversaries) for j, m in enumerate(team)]
    methods = []
    for i, entry in enumerate(cfg.methods):
        if not is_pending(entry):
            methods.append(entry)
            continue
        ids = _target_ids(cfg, str(entry.args["match"]), i)
        ep = episodes.filter(pl.col("episode_id").is_in(ids))
        if ep.height < len(ids):
            raise ConfigError(
                f"methods[{i}].args.match: {len(ids) - ep.height} episodes of '{entry.args['match']}' are not stored yet"
            )
        first = turns.filter(pl.col("episode_id").is_in(ids) & (pl.col("round") == 0))
        seat_cost = [float(_mean(first.filter(pl.col("agent") == j)["cost"])) for j in range(len(team))]
        pool = str(entry.args.get("pool", "fuse"))
        if pool == "best":
            pool = strongest(_accuracy(first, ep))
        m = matched_m(seat_cost, Consistency(pool=pool).members(keys), float(_mean(ep["cost"])))
        args = {k: v for k, v in entry.args.items() if k != "match"} | {"pool": pool, "m": m}
        methods.append(entry.model_copy(update={"args": args}))
    return cfg.model_copy(update={"methods": methods})


def _accuracy(first: pl.DataFrame, ep: pl.DataFrame) -> dict[str, float]:
    """Each model's share of right round-0 answers."""
    joined = first.join(ep.select("episode_id", "dataset", "gold"), on="episode_id")
    right: dict[str, list[bool]] = {}
    for row in joined.iter_rows(named=True):
        ok = (
            row["answer"] is not None
            and grade(row["dataset"], str(row["answer"]), str(row["gold"])) == "correct"
        )
        right.setdefault(row["model"], []).append(ok)
    return {m: sum(v) / len(v) for m, v in right.items()}
