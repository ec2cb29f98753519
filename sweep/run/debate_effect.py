"""What debate did, the lines `sweep run` ends with: for each debate method × dataset of the plan, the
majority vote's accuracy after each round (round 0 → the last), and the answers agents changed between
their round-0 answer and their final one, wrong → right (W2R) and right → wrong (R2W); then how to open
an episode where debate changed an answer in `sweep view`. Methods without debate rounds (cot, vote,
consistency, ...) get no lines: nothing in them is debated.

Read from the stored episodes and turns of this plan only, so other sweeps sharing the output dir (or a
larger --limit run before) do not count. An agent's answer is its last parsed, non-critique reply (what
the debate state carries forward); an agent with none counts as wrong, as in the vote.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from rich.console import Console

from sweep.config.sweep import SweepConfig
from sweep.run.plan import Plan
from sweep.store.results import ResultStore

_PHASE_ORDER = {"initial": 0, "critique": 1, "update": 2, "revise": 2}  # within a round


@dataclass(frozen=True)
class Effect:
    """One debate method × dataset: the vote's accuracy per round and the agents' answer changes."""

    method: str
    dataset: str  # "name/split"
    episodes: int
    vote_accuracy: list[float]  # after round 0, 1, ..., the last
    w2r: int  # agents wrong at round 0 and right at the end
    r2w: int  # agents right at round 0 and wrong at the end
    agents: int  # (episode, agent) pairs counted
    example: str | None  # an episode id to open in `sweep view`, or None when no answer changed
    example_why: str  # what changed in `example`, in words


def _planned(plan: Plan) -> pl.DataFrame:
    """Episode ids of the plan's debate groups (rounds > 0), with their method label and dataset."""
    rows = [
        (g.episode_id(s), g.method.label, f"{g.dataset.name}/{g.dataset.split}")
        for g in plan.groups
        if g.rounds > 0
        for s in g.samples
    ]
    schema = dict.fromkeys(("episode_id", "method", "dataset_split"), pl.String)
    return pl.DataFrame(rows, schema=schema, orient="row")


def _grader() -> Callable[[str, str | None, str], bool]:
    """`right(benchmark, answer, gold)`, asking the benchmark's grader once per distinct answer."""
    cache: dict[tuple[str, str, str], bool] = {}

    def right(bench: str, answer: str | None, gold: str) -> bool:
        if answer is None:
            return False
        key = (bench, answer, gold)
        if key not in cache:
            from data import grade

            try:
                cache[key] = grade(bench, answer, gold) == "correct"
            except (KeyError, ValueError):  # a benchmark this checkout does not know: not credited
                cache[key] = False
        return cache[key]

    return right


def agent_answers(turns: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """Per (episode, agent): its round-0 answer `first` and its final answer `last`, graded against the
    episode's gold (`first_ok`, `last_ok`). `episodes` needs `episode_id`, `dataset` and `gold`."""
    answered = pl.col("parsed") & pl.col("answer").is_not_null() & (pl.col("phase") != "critique")
    said = (
        turns.filter(answered)
        .with_columns(
            pl.col("phase").replace_strict(_PHASE_ORDER, default=2, return_dtype=pl.Int8).alias("_p")
        )
        .sort("episode_id", "agent", "round", "_p")
    )
    keys = ["episode_id", "agent"]
    first = said.filter(pl.col("round") == 0).group_by(keys).agg(pl.col("answer").last().alias("first"))
    last = said.group_by(keys).agg(pl.col("answer").last().alias("last"))
    both = (
        turns.select(keys)
        .unique()
        .join(first, on=keys, how="left")
        .join(last, on=keys, how="left")
        .join(episodes.select("episode_id", "dataset", "gold"), on="episode_id")
        .sort(keys)
    )
    right = _grader()
    rows = both.select("dataset", "first", "last", "gold").iter_rows()
    graded = [(right(d, f, g), right(d, x, g)) for d, f, x, g in rows]
    return both.with_columns(
        first_ok=pl.Series([a for a, _ in graded], dtype=pl.Boolean),
        last_ok=pl.Series([b for _, b in graded], dtype=pl.Boolean),
    )


def _vote_accuracy(round_correct: list[list[bool]]) -> list[float]:
    """The share of episodes whose vote is right after each round; an episode that stopped early keeps
    its last vote for the rounds it did not run."""
    n = max((len(r) for r in round_correct), default=0)
    padded = [r + [r[-1]] * (n - len(r)) for r in round_correct if r]
    return [sum(r[i] for r in padded) / len(padded) for i in range(n)] if padded else []


def debate_effects(plan: Plan, out_dir: Path) -> list[Effect]:
    """The effects of every debate method × dataset of `plan` with stored episodes in `out_dir`, in plan order."""
    planned = _planned(plan)
    if planned.is_empty():
        return []
    store = ResultStore(out_dir)
    episodes = planned.join(store.episodes(["dataset", "gold", "round_correct", "correct"]), on="episode_id")
    if episodes.is_empty():
        return []
    turns = store.turns().join(episodes.select("episode_id"), on="episode_id", how="semi")
    agents = agent_answers(turns, episodes).join(
        episodes.select("episode_id", "method", "dataset_split"), on="episode_id"
    )
    effects = []
    for (method, dataset), group in episodes.group_by("method", "dataset_split", maintain_order=True):
        mine = agents.filter((pl.col("method") == method) & (pl.col("dataset_split") == dataset))
        w2r = mine.filter(~pl.col("first_ok") & pl.col("last_ok"))
        r2w = mine.filter(pl.col("first_ok") & ~pl.col("last_ok"))
        example, why = _example(group, w2r, r2w)
        effects.append(
            Effect(
                method=str(method),
                dataset=str(dataset),
                episodes=group.height,
                vote_accuracy=_vote_accuracy(group["round_correct"].to_list()),
                w2r=w2r.height,
                r2w=r2w.height,
                agents=mine.height,
                example=example,
                example_why=why,
            )
        )
    return effects


def _example(episodes: pl.DataFrame, w2r: pl.DataFrame, r2w: pl.DataFrame) -> tuple[str | None, str]:
    """The episode worth opening first: the vote went wrong → right, else the most agents did, else
    the most agents went right → wrong. Ties go to the smallest id, so the choice is stable."""
    flipped = episodes.filter(~pl.col("round_correct").list.first() & pl.col("correct")).sort("episode_id")
    if flipped.height:
        return str(flipped["episode_id"][0]), "the vote went wrong → right"
    for changed, words in ((w2r, "wrong → right"), (r2w, "right → wrong")):
        if changed.height:
            top = changed.group_by("episode_id").len().sort(["len", "episode_id"], descending=[True, False])
            n = int(top["len"][0])
            return str(top["episode_id"][0]), f"{n} agent{'s' if n > 1 else ''} went {words}"
    return None, ""


def sweep_command() -> str:
    """How the user invoked this CLI, so the printed command works as typed: `.venv/bin/sweep` when that
    is what ran, `sweep` from PATH, else `python -m sweep`."""
    argv0 = sys.argv[0] if sys.argv else ""
    return argv0 if Path(argv0).name == "sweep" else "python -m sweep"


def effect_lines(effects: list[Effect], out_dir: Path, command: str = "sweep") -> list[str]:
    """The lines `sweep run` prints: a heading, then per effect the vote per round and the answer changes,
    then one line on how to open an episode in `sweep view`. No lines without a debate method."""
    if not effects:
        return []
    lines = ["what debate did (majority vote accuracy after each round; agents' answers, round 0 → final):"]
    for e in effects:
        votes = " → ".join(f"{a:.3f}" for a in e.vote_accuracy)
        last = len(e.vote_accuracy) - 1
        lines.append(f"  {e.method} on {e.dataset} ({e.episodes} episodes): vote, rounds 0 → {last}: {votes}")
        lines.append(
            f"    answers changed by debate: {e.w2r} wrong → right (W2R), {e.r2w} right → wrong (R2W), "
            f"of {e.agents} agent answers"
        )
    shown = next((e for e in effects if e.example is not None), None)
    view = f"{command} view {out_dir}"
    if shown is None:
        lines.append(f"  no agent changed its answer; browse the transcripts with: {view}")
    else:
        lines.append(
            f"  see one ({shown.method}, {shown.dataset}: {shown.example_why}): {view} --episode {shown.example}"
        )
    return lines


def print_effects(console: Console, cfg: SweepConfig, plan: Plan | None, out_dir: Path) -> None:
    """Print `effect_lines` for the sweep `cfg` (its plan built again when not given) on `console`."""
    if plan is None:  # the caller re-planned (cost-matched entries were settled after a first pass)
        from sweep.run.plan import build_plan

        plan = build_plan(cfg)
    for line in effect_lines(debate_effects(plan, out_dir), out_dir, sweep_command()):
        console.print(line, markup=False, highlight=False)
