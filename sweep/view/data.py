"""The viewer's queries over sweep output dirs. At start only the `episodes/` rows are read (one
small row per episode); an episode's turns and rounds are read when it is opened, from the one part
file that holds them (parts share their name across `episodes/`, `turns/` and `rounds/`), so a sweep
of any size never has its turns loaded at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from debate.spec import closest
from sweep.report.load import read_episodes, with_methods
from sweep.view.episode import episode_detail

LIST_COLUMNS = [
    "episode_id",
    "method_label",
    "dataset",
    "split",
    "item_id",
    "seed",
    "correct",
    "answered",
    "flip",
    "final_answer",
    "gold",
    "round_correct",
    "tokens",
    "calls",
    "cost",
    "parse_failures",
    "team",
]
OUTCOMES = ("correct", "wrong", "unparsable")
FLIPS = ("w2r", "r2w", "none")
MAX_LIMIT = 500
MAX_OFFSET = 2**31 - 1  # far past any sweep; polars' slice overflows on offsets from 2**63


class QueryError(ValueError):
    """A bad filter or page; the message names the parameter and what it accepts."""


@dataclass(frozen=True)
class Query:
    method: str | None = None  # a method label
    dataset: str | None = None  # "dataset/split"
    team: str | None = None
    outcome: str | None = None  # correct | wrong | unparsable
    flip: str | None = None  # w2r | r2w | none: did the vote flip between round 0 and the end
    parse_failures: bool = False  # only episodes with a parse failure
    item: str | None = None  # substring of the item id
    offset: int = 0
    limit: int = 50

    def check(self) -> None:
        if self.outcome not in (None, *OUTCOMES):
            raise QueryError(f"outcome must be one of {', '.join(OUTCOMES)}, got {self.outcome!r}")
        if self.flip not in (None, *FLIPS):
            raise QueryError(f"flip must be one of {', '.join(FLIPS)}, got {self.flip!r}")
        if not 0 <= self.offset <= MAX_OFFSET or not 1 <= self.limit <= MAX_LIMIT:
            raise QueryError(f"need 0 <= offset <= {MAX_OFFSET} and 1 <= limit <= {MAX_LIMIT}")


def _flip() -> pl.Expr:
    first = pl.col("round_correct").list.first()
    return (
        pl.when(~first & pl.col("correct"))
        .then(pl.lit("w2r"))
        .when(first & ~pl.col("correct"))
        .then(pl.lit("r2w"))
        .otherwise(pl.lit("none"))
    )


class ViewData:
    """The episode index of `dirs` and the queries the viewer's API answers."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = [Path(d) for d in dirs]
        episodes = with_methods(read_episodes(self.dirs))
        self.index = episodes.with_columns(
            flip=_flip(), dataset_split=pl.format("{}/{}", "dataset", "split")
        ).sort("dataset", "split", "item_id", "seed", "method_label", maintain_order=True)
        self._row = {eid: i for i, eid in enumerate(self.index["episode_id"].to_list())}

    def meta(self) -> dict[str, Any]:
        ix = self.index
        methods = ix.group_by("method_label").agg(pl.len().alias("episodes")).sort("method_label")
        return {
            "dirs": [str(d) for d in self.dirs],
            "episodes": ix.height,
            "methods": methods.to_dicts(),
            "datasets": sorted(ix["dataset_split"].unique().to_list()),
            "teams": sorted(ix["team"].unique().to_list()),
            "outcomes": list(OUTCOMES),
            "flips": list(FLIPS),
            "simulated": bool(ix["simulated"].all()),
        }

    def check_known(self, q: Query) -> None:
        """QueryError when `q` names a method, dataset or team these dirs do not hold (a typo would
        otherwise select nothing and export an empty page)."""
        wanted = {"--method": ("method_label", q.method), "--dataset": ("dataset_split", q.dataset)}
        for flag, (column, value) in {**wanted, "--team": ("team", q.team)}.items():
            known = sorted(self.index[column].unique().to_list())
            if value is not None and value not in known:
                shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
                raise QueryError(
                    f"{flag}: no episodes of {value!r} here{closest(value, known)}; known: {shown}"
                )

    def check_episode(self, episode_id: str) -> None:
        """QueryError when no episode of these dirs has the id `episode_id`."""
        if episode_id not in self._row:
            dirs = ", ".join(map(str, self.dirs))
            raise QueryError(
                f"--episode: no episode {episode_id!r} in {dirs}{closest(episode_id, list(self._row))}; "
                "the viewer's list shows each episode's id"
            )

    def matching(self, q: Query) -> pl.DataFrame:
        ix = self.index
        conds = []
        for column, value in (("method_label", q.method), ("dataset_split", q.dataset), ("team", q.team)):
            if value is not None:
                conds.append(pl.col(column) == value)
        if q.outcome == "unparsable":
            conds.append(~pl.col("answered"))
        elif q.outcome is not None:
            conds.append(pl.col("correct") == (q.outcome == "correct"))
        if q.flip is not None:
            conds.append(pl.col("flip") == q.flip)
        if q.parse_failures:
            conds.append(pl.col("parse_failures") > 0)
        if q.item:
            conds.append(pl.col("item_id").str.contains(q.item, literal=True))
        return ix.filter(*conds) if conds else ix

    def episodes(self, q: Query) -> dict[str, Any]:
        """One page of the episodes matching `q` (by dataset, item, seed, method), with the total count."""
        q.check()
        hits = self.matching(q)
        page = hits.slice(q.offset, q.limit).select(LIST_COLUMNS)
        return {"total": hits.height, "offset": q.offset, "limit": q.limit, "rows": page.to_dicts()}

    def episode(self, episode_id: str) -> dict[str, Any] | None:
        """Everything about one episode (its row, rounds, turns, graphs), or None if unknown."""
        i = self._row.get(episode_id)
        if i is None:
            return None
        row = self.index.row(i, named=True)
        detail = episode_detail(row, self.dirs[row["_dir"]])
        detail["siblings"] = self.siblings(row)
        return detail

    def siblings(self, row: dict[str, Any]) -> list[dict[str, Any]]:
        """The same item under the same seed and team, run by the other methods."""
        same = self.index.filter(
            (pl.col("dataset") == row["dataset"])
            & (pl.col("split") == row["split"])
            & (pl.col("item_id") == row["item_id"])
            & (pl.col("seed") == row["seed"])
            & (pl.col("team") == row["team"])
            & (pl.col("episode_id") != row["episode_id"])
        )
        return (
            same.select("episode_id", "method_label", "correct", "final_answer")
            .sort("method_label")
            .to_dicts()
        )
