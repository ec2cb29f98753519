"""Expand a sweep config into episode tasks with deterministic ids; count episodes and calls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from data.registry import load_benchmark
from data.types import Sample
from debate.episode import Agent
from debate.methods import Method, build_method
from debate.spec import canonical_json, stable_hash
from sweep.config import ConfigError, DatasetSpec, SweepConfig


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

    def team(self, agents: Mapping[str, Agent]) -> list[Agent]:
        """The episode's team: each seat's agent (adversarial seats marked)."""
        return [replace(agents[m], adversarial=True) if i in self.adversarial else agents[m] for i, m in enumerate(self.seats)]

    @property
    def run_name(self) -> str:
        return f"{self.method.spec.label()} | {self.dataset.name}/{self.dataset.split} | seed {self.seed}"

    @property
    def rounds(self) -> int:
        return int(self.method_spec["rounds"])


@dataclass(frozen=True)
class EpisodeTask:
    episode_id: str
    group: Group
    sample: Sample


@dataclass(frozen=True)
class Plan:
    groups: list[Group]
    tasks: list[EpisodeTask]

    def calls(self) -> int:
        """An upper bound on model calls: every seat answers in round 0, then makes one call per phase
        of each debate round (`update`: 1; `critique_revise`: 2, fewer for seats with no targets)."""
        return sum(
            len(t.group.seats) * (1 + t.group.rounds * len(t.group.method.phases)) for t in self.tasks
        )


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
    tasks: list[EpisodeTask] = []
    for entry in cfg.method_entries():
        if entry.name == "consistency" and entry.args.get("match"):
            continue  # matched to another method's measured cost: planned once settled (sweep.costmatch)
        method = build_method(entry.name, entry.args)
        spec = resolved_method_spec(cfg, method)
        id_spec = resolved_method_spec(cfg, method, identity=True)
        team_specs = [
            cfg.models[m].model_dump(exclude={"replicas", "num_gpus", "num_cpus", "max_concurrency"})
            for m in spec["agents"]
        ]
        for i, ds in enumerate(cfg.datasets):
            ds_id = {"name": ds.name, "split": ds.split}
            for seed in cfg.seeds:
                key = stable_hash({"method": id_spec, "team": team_specs, "dataset": ds_id, "seed": seed})
                adversarial = frozenset(spec.get("adversarial", ()))
                group = Group(key, method, spec, ds, seed, tuple(spec["agents"]), adversarial)
                groups.append(group)
                for s in samples[i]:
                    eid = stable_hash(
                        {"method": id_spec, "team": team_specs, "dataset": ds_id, "item": s.id, "seed": seed}
                    )
                    tasks.append(EpisodeTask(eid, group, s))
    ids = [t.episode_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ConfigError("methods: two entries resolve to the same method spec; remove the duplicate")
    return Plan(groups, tasks)


def method_spec_json(group: Group) -> str:
    return canonical_json(group.method_spec)
