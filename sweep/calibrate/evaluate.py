"""Run a targets file's rows in-process (no Ray, no Parquet): every row on every seed and every item
of its dataset, on one backend per team member, and measure what the paper's tables report per row —
accuracy (percent, mean and sample std over seeds), price-weighted cost and tokens per task, and cost
as a percent of the dataset's reference row.

Episodes seed their calls by (seed, dataset, item, round, agent, phase), never by the method, so rows
on one seed share round 0 (paired comparisons, as in a sweep); nothing here has to arrange it."""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from actors.population import PopulationBackend
from actors.populations import Population
from data.benchmarks.registry import load_benchmark
from data.grading.graders import grader_for
from data.types import Sample
from debate.episode import Agent, run_episode
from debate.methods import Method, build_method
from sweep import interrupt
from sweep.calibrate.backends import MakeBackend
from sweep.calibrate.expected import vote_accuracy
from sweep.calibrate.targets import Row, Targets
from sweep.calibrate.workers import estimated, picklable, shardable, sharded
from sweep.config.errors import ConfigError

Job = tuple[int, int, Method, list[Agent], Sample, str]  # row index, seed, method, team, item, dataset
MIN_MAX_TOKENS = 512  # a sweep's default output cap; raised for members whose replies run longer


@dataclass(frozen=True)
class RowResult:
    """One row as predicted: accuracy in percent (mean over seeds, sample std or None with one seed),
    mean cost (price-weighted, per task) and tokens (prompt + completion, per task), and the cost as
    a percent of the dataset's reference row (None without one)."""

    key: str
    acc: float
    std: float | None
    cost: float
    tokens: float
    cost_pct: float | None
    episodes: int


class Quiet(NamedTuple):
    """A row scored by expectation: the population its seats play, the seats (members, repeats
    allowed) and the benchmark."""

    row: Row
    population: Population
    seats: list[str]
    dataset: str


class Outcome(NamedTuple):
    """What is kept of one episode."""

    correct: bool
    cost: float
    tokens: int  # prompt + completion, every turn


@dataclass
class Throughput:
    """Episodes run and the seconds they took, over every `Evaluator.run` call."""

    episodes: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.episodes / self.seconds if self.seconds > 0 else 0.0


def max_tokens_for(targets: Targets, member: str) -> int:
    """The output cap of a member's seat: a sweep's default, or twice its q95 reply when that is longer
    (a cap should shorten a rare long reply, not every reply of a verbose model)."""
    q95 = int(targets.members.get(member, {}).get("tokens_q95") or 0)
    return max(MIN_MAX_TOKENS, 2 * q95)


def row_method(row: Row, checkpoints: Mapping[str, str]) -> Method:
    """The row's method, with its checkpoint when the row needs one (keyed by row key or label)."""
    args = dict(row.method.get("args") or {})
    ckpt = checkpoints.get(row.key, checkpoints.get(row.label))
    if ckpt is not None:
        args["checkpoint"] = ckpt
    try:
        return build_method(str(row.method["name"]), args)
    except (ValueError, TypeError, KeyError) as e:
        raise ConfigError(f"{row.key}.method: {str(e).strip(chr(39))}; fix the row's method") from None


def runnable(rows: Sequence[Row], checkpoints: Mapping[str, str]) -> list[Row]:
    """The rows that can run: a row that needs a checkpoint only when one is given for it."""
    return [r for r in rows if r.needs != "checkpoint" or r.key in checkpoints or r.label in checkpoints]


@dataclass
class Evaluator:
    """Runs rows of `targets` on `seeds`, at most `limit` items per dataset (None: the dataset
    entry's own subset). Datasets load once, on first use; `throughput` accumulates over runs.
    `expected`: rows that never debate, on a population, score their expected accuracy
    (`sweep.calibrate.expected`) instead of episodes (no cost: a fit scores accuracy alone)."""

    targets: Targets
    seeds: Sequence[int]
    limit: int | None = None
    concurrency: int = 64
    expected: bool = False
    checkpoints: Mapping[str, str] = field(default_factory=dict)
    workers: int = 1  # processes a large run's episodes are split over (`sweep.calibrate.workers`)
    throughput: Throughput = field(default_factory=Throughput)
    _samples: dict[str, list[Sample]] = field(default_factory=dict, repr=False)

    def for_worker(self) -> Evaluator:
        """This evaluator's settings for a worker process (`sweep.calibrate.workers`): no loaded items,
        one process, its own throughput."""
        return replace(self, workers=1, throughput=Throughput(), _samples={})

    def samples(self, key: str) -> list[Sample]:
        """The items of dataset `key` (a key of `targets.datasets`), loaded once."""
        if key not in self._samples:
            entry = dict(self.targets.datasets[key])
            limit = entry.get("limit")
            if self.limit is not None:
                limit = self.limit if limit is None else min(int(limit), self.limit)
            try:
                items = load_benchmark(
                    str(entry["name"]),
                    str(entry.get("split", "test")),
                    limit,
                    int(entry.get("offset") or 0),
                    entry.get("seed"),
                    entry.get("path"),
                )
            except (FileNotFoundError, KeyError, ValueError) as e:
                raise ConfigError(f"datasets.{key} ({entry.get('name')}): {str(e).strip(chr(39))}") from None
            if not items:
                raise ConfigError(f"datasets.{key}: selects no item of {entry['name']}; lower its offset")
            self._samples[key] = items
        return self._samples[key]

    def team(self, members: Sequence[str], make_backend: MakeBackend) -> dict[str, Agent]:
        """One agent per member: its engine, output cap and prices (one engine object per member, so
        an episode batches each member's calls together)."""
        agents = {}
        for m in dict.fromkeys(members):
            spec = self.targets.members.get(m, {})
            agents[m] = Agent(
                model=m,
                backend=make_backend(m),
                max_tokens=max_tokens_for(self.targets, m),
                price_in=float(spec.get("price_in") or 0.0),
                price_out=float(spec.get("price_out") or 0.0),
            )
        return agents

    def run(self, rows: Sequence[Row], make_backend: MakeBackend) -> dict[str, RowResult]:
        """Every row on every seed and item; results keyed by row key. The reference rows that set
        the cost percentages are among `rows` when they should be used."""
        return interrupt.run(self.arun(rows, make_backend))  # SIGTERM stops it as Ctrl-C does

    async def arun(self, rows: Sequence[Row], make_backend: MakeBackend) -> dict[str, RowResult]:
        jobs, quiet = self.jobs(rows, make_backend)
        start = time.perf_counter()
        if not jobs and len(quiet) > 1 and self.workers > 1 and picklable(make_backend):
            return await estimated(self, quiet, make_backend)  # half of them in a worker
        # The episodes (in worker processes when sharded) run while this process scores the rest.
        sharding = shardable(make_backend, len(jobs), self.workers)
        running = asyncio.ensure_future(
            sharded(self, rows, make_backend, len(jobs)) if sharding else self.episodes(rows, jobs)
        )
        await asyncio.sleep(0)  # the task starts first: its shards reach the pool
        try:
            expected = self.expected_results(quiet)
        except BaseException:
            running.cancel()
            raise
        results = await running
        self.throughput.episodes += len(jobs)
        self.throughput.seconds += time.perf_counter() - start
        per_row: dict[int, dict[int, list[Outcome]]] = {}
        for job, res in zip(jobs, results, strict=True):
            per_row.setdefault(job[0], {}).setdefault(job[1], []).append(res)
        return summarise(rows, self.targets, per_row) | expected

    def jobs(self, rows: Sequence[Row], make_backend: MakeBackend) -> tuple[list[Job], list[Quiet]]:
        """The run's episodes in a fixed order (row, seed, item), and the rows scored by expectation
        instead (`expected`); it makes no estimate (each worker calls it)."""
        agents = self.team([m for r in rows for m in (r.agents or self.targets.agents)], make_backend)
        jobs: list[Job] = []
        quiet: list[Quiet] = []
        for i, row in enumerate(rows):
            method = row_method(row, self.checkpoints)
            team = [agents[m] for m in (row.agents or self.targets.agents)]
            name = str(self.targets.datasets[row.dataset]["name"])
            population = _population_of(team) if self.expected and method.rounds == 0 else None
            if population is not None:
                seats = [team[j].model for j in method.seat_indices([a.model for a in team])]
                quiet.append(Quiet(row, population, seats, name))
                continue
            for seed in self.seeds:
                jobs += [(i, seed, method, team, s, name) for s in self.samples(row.dataset)]
        return jobs, quiet

    def expected_results(self, quiet: Sequence[Quiet]) -> dict[str, RowResult]:
        """Each quiet row at its expected accuracy (`sweep.calibrate.expected`)."""
        out = {}
        for q in quiet:
            acc = 100.0 * vote_accuracy(q.population, q.seats, self.samples(q.row.dataset), q.dataset)
            out[q.row.key] = RowResult(q.row.key, acc, None, math.nan, math.nan, None, 0)
        return out

    async def episodes(self, rows: Sequence[Row], jobs: Sequence[Job]) -> list[Outcome]:
        """Each job's episode, `concurrency` at a time, in job order."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(job: Job) -> Outcome:
            i, seed, method, team, sample, name = job
            async with gate:
                res = await run_episode(method, team, sample, grader_for(sample), seed, rows[i].rounds, name)
            # Only the three numbers are kept: a report's 10k episodes with their states would not fit.
            return Outcome(
                res.correct, res.cost, sum(t.prompt_tokens + t.completion_tokens for t in res.turns)
            )

        return list(await asyncio.gather(*(one(j) for j in jobs)))


def _population_of(team: Sequence[Agent]) -> Population | None:
    """The population every seat of `team` plays, when they all play one (else None: v1 engines)."""
    backends = [a.backend for a in team]
    if not all(isinstance(b, PopulationBackend) for b in backends):
        return None
    found = {id(b.population): b.population for b in backends if isinstance(b, PopulationBackend)}
    return next(iter(found.values())) if len(found) == 1 else None


def summarise(
    rows: Sequence[Row], targets: Targets, per_row: Mapping[int, Mapping[int, Sequence[Outcome]]]
) -> dict[str, RowResult]:
    """Per row: accuracy per seed (percent) -> mean and sample std; cost and tokens per task over all
    episodes; then cost as a percent of the reference row of the row's dataset, when it ran."""
    raw: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        by_seed = per_row.get(i, {})
        accs = [100.0 * sum(r.correct for r in eps) / len(eps) for eps in by_seed.values() if eps]
        episodes = [r for eps in by_seed.values() for r in eps]
        n = len(episodes)
        raw[row.key] = {
            "acc": statistics.fmean(accs) if accs else math.nan,
            "std": statistics.stdev(accs) if len(accs) > 1 else None,
            "cost": sum(r.cost for r in episodes) / n if n else math.nan,
            "tokens": sum(r.tokens for r in episodes) / n if n else math.nan,
            "episodes": n,
        }
    out = {}
    for row in rows:
        ref = targets.reference(row.dataset)
        base = raw.get(ref.key) if ref is not None else None
        pct = 100.0 * raw[row.key]["cost"] / base["cost"] if base and base["cost"] > 0 else None
        out[row.key] = RowResult(key=row.key, cost_pct=pct, **raw[row.key])
    return out
