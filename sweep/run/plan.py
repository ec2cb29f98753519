"""Expand a sweep config into episode tasks with deterministic ids; count episodes and calls.

The plan holds its groups and their samples; tasks are made as they are iterated, so a sweep of
100k episodes never holds 100k task objects (`Plan.tasks` is a lazy sequence)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, overload

from actors import populations
from actors.populations import PopulationError
from data.benchmarks.registry import load_benchmark
from data.types import Sample
from debate.episode import Agent
from debate.methods import Method, build_method
from debate.spec import canonical_json, hash_text, stable_hash
from sweep.config.sweep import ConfigError, DatasetSpec, SweepConfig, population_ref


@dataclass(frozen=True)
class Group:
    """One MLflow child run: a method spec on a dataset under a seed."""

    key: str
    method: Method
    method_spec: dict[str, Any]
    dataset: DatasetSpec
    seed: int
    seats: tuple[str, ...]  # model name per seat
    adversarial: frozenset[int] = frozenset()  # seats that argue for a wrong answer
    samples: tuple[Sample, ...] = field(default=(), repr=False, compare=False)
    # The canonical JSON of an episode id's hash input around its item id (see `build_plan`).
    id_head: str = field(default="", repr=False, compare=False)
    id_tail: str = field(default="", repr=False, compare=False)

    def team(self, agents: Mapping[str, Agent]) -> list[Agent]:
        """The episode's team: each seat's agent (adversarial seats marked)."""
        return [
            replace(agents[m], adversarial=True) if i in self.adversarial else agents[m]
            for i, m in enumerate(self.seats)
        ]

    @property
    def run_name(self) -> str:
        return f"{self.method.label} | {self.dataset.name}/{self.dataset.split} | seed {self.seed}"

    @property
    def rounds(self) -> int:
        return int(self.method_spec["rounds"])

    def episode_id(self, sample: Sample) -> str:
        """The id of this group's episode on `sample`."""
        return hash_text(self.id_head + canonical_json(sample.id) + self.id_tail)

    def tasks(self) -> Iterator[EpisodeTask]:
        for s in self.samples:
            yield EpisodeTask(self.episode_id(s), self, s)

    def calls(self) -> int:
        """An upper bound on the calls of one episode (see `Plan.calls`)."""
        return len(self.seats) * (1 + self.rounds * len(self.method.phases))


@dataclass(frozen=True)
class EpisodeTask:
    episode_id: str
    group: Group
    sample: Sample


class PlanTasks(Sequence[EpisodeTask]):
    """Every task of a plan, group after group, made on demand."""

    def __init__(self, groups: Sequence[Group]) -> None:
        self.groups = groups
        self._starts = [0]
        for g in groups:
            self._starts.append(self._starts[-1] + len(g.samples))

    def __len__(self) -> int:
        return self._starts[-1]

    def __iter__(self) -> Iterator[EpisodeTask]:
        for g in self.groups:
            yield from g.tasks()

    @overload
    def __getitem__(self, i: int) -> EpisodeTask: ...
    @overload
    def __getitem__(self, i: slice) -> list[EpisodeTask]: ...
    def __getitem__(self, i: int | slice) -> EpisodeTask | list[EpisodeTask]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        g = bisect.bisect_right(self._starts, i) - 1
        group = self.groups[g]
        sample = group.samples[i - self._starts[g]]
        return EpisodeTask(group.episode_id(sample), group, sample)


@dataclass(frozen=True)
class Plan:
    groups: list[Group]
    # model -> (population name, content digest), for each model on a population file (not v1)
    populations: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def tasks(self) -> PlanTasks:
        return PlanTasks(self.groups)

    def calls(self) -> int:
        """An upper bound on model calls: every seat answers in round 0, then makes one call per phase
        of each debate round (`update`: 1; `critique_revise`: 2, fewer for seats with no targets)."""
        return sum(len(g.samples) * g.calls() for g in self.groups)


def resolved_method_spec(cfg: SweepConfig, method: Method, identity: bool = False) -> dict[str, Any]:
    """The method as it will actually run: its args, protocol, team and rounds. `identity`: with the
    arguments as episode ids hash them (`debate.registry`: renamed and later-added arguments)."""
    team, adversaries = cfg.team(), cfg.adversaries()
    try:
        picked = method.seat_indices([(m, i in adversaries) for i, m in enumerate(team)])
    except ValueError as e:
        raise ConfigError(f"methods ({method.spec.name}): {e}") from None
    spec = {
        "name": method.spec.name,
        "args": method.spec.identity()["args"] if identity else method.spec.kwargs,
        "protocol": method.protocol if method.router is not None else "none",
        "rounds": method.num_rounds(cfg.rounds) if method.router is not None else 0,
        "n_agents": len(picked),
        "agents": [team[j] for j in picked],
    }
    if adversaries:  # absent otherwise: the specs (and episode ids) of honest teams stay as they were
        spec["adversarial"] = [s for s, j in enumerate(picked) if j in adversaries]
    return spec


def build_plan(cfg: SweepConfig) -> Plan:
    """Every (method, dataset, seed, item) as a task. Loads each dataset once."""
    samples: dict[int, list[Sample]] = {}
    for i, ds in enumerate(cfg.datasets):
        try:
            samples[i] = load_benchmark(ds.name, ds.split, ds.limit, ds.offset, ds.seed, ds.path)
        except (FileNotFoundError, KeyError, ValueError) as e:
            raise ConfigError(f"datasets[{i}] ({ds.name}): {str(e).strip(chr(39))}") from None
        if not samples[i]:
            raise ConfigError(
                f"datasets[{i}].offset: {ds.offset} selects no item of {ds.name}/{ds.split}; lower offset"
            )
        for j in range(i):
            same = cfg.datasets[j].name == ds.name and cfg.datasets[j].split == ds.split
            if same and {s.id for s in samples[j]} & {s.id for s in samples[i]}:
                raise ConfigError(
                    f"datasets[{i}]: repeats items of datasets[{j}] ({ds.name}/{ds.split}); "
                    "remove it or give them disjoint offset/limit"
                )
    groups: list[Group] = []
    pops: dict[str, tuple[str, str]] = {}  # model -> its population's (name, digest), read once per plan
    for entry in cfg.method_entries():
        if entry.name == "consistency" and entry.args.get("match"):
            continue  # matched to another method's measured cost: planned once settled (sweep.run.costmatch)
        method = build_method(entry.name, entry.args)
        spec = resolved_method_spec(cfg, method)
        id_spec = resolved_method_spec(cfg, method, identity=True)
        team_specs = [_team_spec(cfg, m, pops) for m in spec["agents"]]
        for i, ds in enumerate(cfg.datasets):
            ds_id = {"name": ds.name, "split": ds.split}
            for seed in cfg.seeds:
                key = stable_hash({"method": id_spec, "team": team_specs, "dataset": ds_id, "seed": seed})
                # An episode id hashes {"method", "team", "dataset", "item", "seed"}; canonical JSON
                # sorts the keys, so all but the item id is the same text for the whole group.
                head = f'{{"dataset":{canonical_json(ds_id)},"item":'
                tail = f',"method":{canonical_json(id_spec)},"seed":{canonical_json(seed)},"team":{canonical_json(team_specs)}}}'
                seats = tuple(spec["agents"])
                adversarial = frozenset(spec.get("adversarial", ()))
                groups.append(
                    Group(key, method, spec, ds, seed, seats, adversarial, tuple(samples[i]), head, tail)
                )
    _check_unique(groups)
    return Plan(groups, pops)


def _team_spec(cfg: SweepConfig, model: str, pops: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """What an episode id hashes of one seat's model. A model on a population file (the simulated
    engine's `population`, other than "v1") adds the file's content digest, so editing any number of
    the file changes every id; v1 models' specs, and so their ids, stay as they were."""
    spec = cfg.models[model]
    out = spec.model_dump(exclude={"replicas", "num_gpus", "num_cpus", "max_concurrency"})
    ref = population_ref(spec)
    if ref != "v1":
        if model not in pops:
            try:
                pop = populations.load(ref)
            except PopulationError as e:
                raise ConfigError(f"models.{model}.args.population: {_reason(e)}") from None
            pops[model] = (pop.name, pop.digest)
        out["population_digest"] = pops[model][1]
    return out


def _reason(e: PopulationError) -> str:
    """The error's text without its own `args.population: ` prefix (the caller names the field)."""
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text.removeprefix("args.population: ")


def _check_unique(groups: list[Group]) -> None:
    """Two tasks with one id: two method entries resolving to the same spec (the same group key and
    an item in common), or one item twice in a dataset."""
    by_key: dict[str, set[str]] = {}
    for g in groups:
        ids = {s.id for s in g.samples}
        seen = by_key.setdefault(g.key, set())
        if len(ids) != len(g.samples) or ids & seen:
            raise ConfigError("methods: two entries resolve to the same method spec; remove the duplicate")
        seen |= ids


def method_spec_json(group: Group) -> str:
    return canonical_json(group.method_spec)
