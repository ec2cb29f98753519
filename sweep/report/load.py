"""Reading one or more sweep output dirs for reports and the viewer: committed Parquet parts only,
tolerant of columns that older parts lack, one row per episode id, with a readable method label and
the model team of each episode's sweep.

Columns added to the episode rows: `method_key` (the method as it ran, minus its team: what rows of a
table are), `method_label` (the stored column where present, else derived from `method_spec`), `team`
(the models used together with the episode's models, see `_teams`), `tokens` (prompt + completion), `answered` (the final vote
has an answer; an unparsable episode counts as wrong), `_dir` (index of the output dir) and `_part`
(the part file's name: its `turns/` and `rounds/` rows are in the part of the same name).

A part that cannot be read is skipped with a one-line warning naming it (`sweep.report.parts`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from debate.registry import distinct_labels
from debate.spec import canonical_json
from sweep.report.parts import EPISODE_KEYS, PART_GLOB, ROUND_KEYS, Warn, read_parts, stderr_warning
from sweep.report.parts import committed_parts as committed_parts  # importable from here, as before
from sweep.report.parts import scan_parts as scan_parts


class ReportInputError(ValueError):
    """An output dir that cannot be read; the message names the dir and the fix."""


def check_input(out: Path) -> Path:
    """`out` as a Path, or a ReportInputError for a path no file system can hold (a NUL character)."""
    if "\x00" in str(out):
        raise ReportInputError(f"{str(out)!r}: the path holds a NUL character; give a sweep's output_dir")
    return Path(out)


def _check_dir(out: Path) -> list[Path]:
    out = check_input(out)
    if not (out / "episodes").is_dir():
        raise ReportInputError(f"{out}: no episodes/ folder here (give a sweep's output_dir)")
    parts = committed_parts(out)
    if not parts:
        raise ReportInputError(f"{out}: episodes/ holds no committed part yet (run the sweep first)")
    return parts


def read_episodes(
    dirs: list[Path], columns: list[str] | None = None, warn: Warn = stderr_warning
) -> pl.DataFrame:
    """Every committed episode row of `dirs`, one per episode id (earliest part of the first dir
    wins, as in `ResultStore`), with `_dir` and `_part`. An unreadable part is skipped with a warning
    (`warn`); a dir with no readable part is a `ReportInputError`."""
    frames = []
    for i, out in enumerate(dirs):
        frame = read_parts(_check_dir(Path(out)), columns, warn, EPISODE_KEYS)
        if frame is None:
            raise ReportInputError(
                f"{out}: no part of episodes/ can be read (each is named in a warning above); rerun the "
                "sweep there (it sets unreadable parts aside and runs their episodes again)"
            )
        frames.append(frame.with_columns(pl.lit(i, pl.Int32).alias("_dir")))
    episodes = pl.concat(frames, how="diagonal_relaxed")
    return episodes.unique(subset="episode_id", keep="first", maintain_order=True)


def read_rounds(dirs: list[Path], episodes: pl.DataFrame, warn: Warn = stderr_warning) -> pl.DataFrame:
    """The `rounds/` rows of the kept episodes (only from the part their episode row came from);
    an empty frame when no dir has a readable rounds table (an unreadable part: a warning)."""
    frames = []
    for i, out in enumerate(dirs):
        names = {p.name for p in committed_parts(Path(out))}
        paths = sorted(p for p in (Path(out) / "rounds").glob(PART_GLOB) if p.name in names)
        frame = read_parts(paths, None, warn, ROUND_KEYS) if paths else None
        if frame is not None:
            frames.append(frame.with_columns(pl.lit(i, pl.Int32).alias("_dir")))
    if not frames:
        return pl.DataFrame(
            {"episode_id": [], "round": []}, schema={"episode_id": pl.String, "round": pl.Int32}
        )
    rounds = pl.concat(frames, how="diagonal_relaxed")
    keys = episodes.select("episode_id", "_dir", "_part")
    return rounds.join(keys, on=["episode_id", "_dir", "_part"], how="semi")


def method_identity(spec_json: str) -> dict[str, Any]:
    """What makes a method row: the stored spec without its team (`agents`, `n_agents`), so that the
    same method run by two teams (one per model family, as in the papers' tables) is one row."""
    spec = json.loads(spec_json)
    return {k: v for k, v in spec.items() if k not in ("agents", "n_agents")}


def derive_label(identity: dict[str, Any]) -> str:
    """The method's readable label (`debate.registry.label`, as the `method_label` column holds it);
    every argument for a method this checkout does not know (newer results)."""
    from debate.registry import METHODS, label

    name = str(identity.get("name", "?"))
    args = identity.get("args", {}) or {}
    if name in METHODS:
        return label(name, args)
    inner = ", ".join(f"{k}={v}" for k, v in sorted(args.items()))
    return f"{name}({inner})" if inner else name


@dataclass(frozen=True)
class MethodInfo:
    key: str
    label: str


def method_infos(specs: list[str], stored_labels: dict[str, str]) -> dict[str, MethodInfo]:
    """method_spec JSON -> its row key and label. A stored `method_label` wins; derived labels that
    would collide between different keys get their rounds and protocol appended."""
    identities = {s: method_identity(s) for s in specs}
    keys = {s: canonical_json(ident) for s, ident in identities.items()}
    labels: dict[str, str] = {}
    for s, ident in identities.items():
        key = keys[s]
        if key in labels:
            continue
        labels[key] = stored_labels.get(s) or derive_label(ident)
    labels = distinct_labels(labels)
    return {s: MethodInfo(keys[s], labels[keys[s]]) for s in specs}


@dataclass(frozen=True)
class Results:
    """Episode rows (with the added columns above), their `rounds/` rows, and the method keys in
    the order of the sweep configs' `methods:` lists (unknown ones after, by label)."""

    dirs: list[Path]
    episodes: pl.DataFrame
    rounds: pl.DataFrame
    order: list[str]
    benchmarks: list[tuple[str, str]] = field(default_factory=list)  # (dataset, split), config order

    def label(self, key: str) -> str:
        row = self.episodes.filter(pl.col("method_key") == key).row(0, named=True)
        return str(row["method_label"])


def _teams(episodes: pl.DataFrame) -> pl.DataFrame:
    """sweep_id -> its model team: the models of all sweeps connected by a shared model, sorted and
    joined by '+'. So a CoT baseline run alone on the team's first model, or a one-model consistency
    baseline, lands in the column of the team it belongs to; disjoint model families stay apart."""
    sets = {
        sid: set(models)
        for sid, models in episodes.select("sweep_id", "models")
        .explode("models")
        .drop_nulls()
        .group_by("sweep_id")
        .agg(pl.col("models").unique())
        .iter_rows()
    }
    parent = {m: m for ms in sets.values() for m in ms}

    def root(m: str) -> str:
        while parent[m] != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m

    for ms in sets.values():
        first, *rest = sorted(ms) or [""]
        for m in rest:
            parent[root(m)] = root(first)
    members: dict[str, set[str]] = {}
    for m in parent:
        members.setdefault(root(m), set()).add(m)
    team = {sid: "+".join(sorted(members[root(min(ms))])) if ms else "" for sid, ms in sets.items()}
    return pl.DataFrame(
        {"sweep_id": list(team), "team": list(team.values())},
        schema={"sweep_id": pl.String, "team": pl.String},
    )


def with_methods(episodes: pl.DataFrame) -> pl.DataFrame:
    """Add `method_key`, `method_label`, `team`, `tokens` and `answered` to raw episode rows."""
    specs = episodes["method_spec"].unique().to_list()
    stored: dict[str, str] = {}
    if "method_label" in episodes.columns:
        for spec, label in episodes.select("method_spec", "method_label").drop_nulls().iter_rows():
            stored.setdefault(spec, label)
    infos = method_infos(specs, stored)
    episodes = episodes.drop("method_label", strict=False).with_columns(
        method_key=pl.col("method_spec").replace_strict({s: i.key for s, i in infos.items()}),
        method_label=pl.col("method_spec").replace_strict({s: i.label for s, i in infos.items()}),
        tokens=pl.col("prompt_tokens") + pl.col("completion_tokens"),
        answered=pl.col("final_answer").is_not_null(),
    )
    return episodes.join(_teams(episodes), on="sweep_id", how="left")


def _configs(dirs: list[Path]) -> list[dict[str, Any]]:
    """The readable config.resolved.yaml of each dir (skipping missing or broken ones)."""
    import yaml

    found = []
    for out in dirs:
        try:
            cfg = yaml.safe_load((Path(out) / "config.resolved.yaml").read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(cfg, dict):
            found.append(cfg)
    return found


def config_order(dirs: list[Path], keys: list[str]) -> list[str]:
    """`keys` ordered as the `methods:` lists of the dirs' config.resolved.yaml name them; the others
    after them, in their given order."""
    from debate.methods import resolve

    idents = {k: json.loads(k) for k in keys}
    ordered: list[str] = []
    for cfg in _configs(dirs):
        for entry in cfg.get("methods") or []:
            try:
                name = entry["name"] if isinstance(entry, dict) else str(entry)
                args = resolve(name, entry.get("args") if isinstance(entry, dict) else None).kwargs
            except Exception:  # a method this checkout does not know: ordered by label below
                continue
            ordered += [k for k, i in idents.items() if i.get("name") == name and i.get("args") == args]
    return list(dict.fromkeys(ordered + keys))


def benchmark_order(dirs: list[Path], present: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (dataset, split) pairs `present`, in the order of the configs' `datasets:` lists."""
    listed = [
        (d.get("name"), d.get("split", "test"))
        for cfg in _configs(dirs)
        for d in cfg.get("datasets") or []
        if isinstance(d, dict)
    ]
    return list(dict.fromkeys([b for b in listed if b in present] + sorted(present)))


def load_results(dirs: list[Path], warn: Warn = stderr_warning) -> Results:
    """Read and enrich every committed episode of `dirs`, and their rounds (an unreadable part is
    skipped with a warning, `warn`)."""
    dirs = [Path(d) for d in dirs]
    episodes = with_methods(read_episodes(dirs, warn=warn))
    by_label = dict(episodes.select("method_key", "method_label").unique().iter_rows())
    keys = sorted(by_label, key=lambda k: by_label[k])
    present = sorted(set(episodes.select("dataset", "split").iter_rows()))
    return Results(
        dirs,
        episodes,
        read_rounds(dirs, episodes, warn),
        config_order(dirs, keys),
        benchmark_order(dirs, present),
    )
