"""The study config: which base sweep to tune on, which method and search space, which objectives,
sampler, pruner and storage. Validated in full (the base sweep, the split, the space against the
method registry, the sampler's and pruner's arguments) before any trial runs; every error is one
`ConfigError` line naming the field and the fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from debate.spec import closest, stable_hash
from search_spaces import SearchSpace, SpaceError, find_space, parse_space
from sweep.config.errors import ConfigError, model_or_error, validation_line
from sweep.config.fields import Large, PlainName, Seconds, Small
from sweep.config.sweep import SweepConfig, Tracking, apply_override, check_places, read_yaml, validate
from sweep.config.yaml_limits import read_file
from sweep.study.samplers import PRUNERS, SAMPLERS
from sweep.study.spaces import check_method
from sweep.study.training import TrainSpec, load_training
from sweep.train.config import TrainSetup

# objective name -> (direction, the key of `sweep.tracking.metrics.group_metrics` it reads)
Direction = Literal["maximize", "minimize"]
OBJECTIVES: dict[str, tuple[Direction, str]] = {
    "accuracy": ("maximize", "accuracy"),
    "tokens": ("minimize", "tokens_per_task"),
    "cost": ("minimize", "cost_per_task"),
    "calls": ("minimize", "calls_per_task"),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Named(_Strict):
    """A registered component by name and arguments (method, sampler, pruner)."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class StudyConfig(_Strict):
    name: PlainName = "study"  # the Optuna study name, the MLflow parent run's, its lock file's
    output_dir: str = "runs/study"  # results store, journal, plots; replaces the base sweep's output_dir
    sweep: str  # the base sweep YAML (relative to this file): models, agents, datasets, rounds, seeds
    overrides: list[str] = Field(default_factory=list)  # `key=value` applied to the base sweep
    method: Named  # the tuned method and its fixed (untuned) arguments
    search_space: str | dict[str, Any]  # a packaged space name, a path, or a space inline
    objectives: list[str] = Field(default_factory=lambda: ["accuracy"], min_length=1)
    sampler: Named = Named(name="tpe")
    pruner: Named | None = None  # single objective only; steps are the trial's episodes
    n_trials: Large = 20  # finished trials the study aims at, over every driver
    parallel: Small = 4  # trials in flight at once in one driver
    storage: str | None = None  # default: journal file <output_dir>/study.journal; or an RDB URL
    allow_test_split: bool = Field(False, strict=True)  # tuning on test leaks the held-out set
    tracking: Tracking = Tracking(experiment="debate-sweep-studies")
    heartbeat_s: Seconds = 30.0  # how often a driver marks its running trials alive
    stale_after_s: Seconds = 600.0  # a running trial of a silent driver on another host
    train: TrainSpec | None = None  # trials train a policy first, then evaluate it (`sweep.study.training`)

    @field_validator("method", "sampler", "pruner", mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v

    @field_validator("objectives")
    @classmethod
    def _known_objectives(cls, v: list[str]) -> list[str]:
        for name in v:
            if name not in OBJECTIVES:
                raise ValueError(
                    f"unknown objective '{name}'{closest(name, list(OBJECTIVES))}; known: {', '.join(OBJECTIVES)}"
                )
        if len(set(v)) != len(v):
            raise ValueError("an objective appears twice; list each objective once")
        return v

    @model_validator(mode="after")
    def _components(self) -> StudyConfig:
        for field, reg, entry in (("sampler", SAMPLERS, self.sampler), ("pruner", PRUNERS, self.pruner)):
            if entry is not None:
                try:
                    reg.resolve(entry.name, entry.args)
                except (ValueError, TypeError) as e:
                    raise ValueError(f"{field}: {e}") from None
        multi = len(self.objectives) > 1
        if multi and self.pruner is not None:
            raise ValueError(
                "pruner: Optuna prunes single-objective studies only; drop the pruner or keep one objective"
            )
        if multi and self.sampler.name == "cmaes":
            raise ValueError("sampler: cmaes is single-objective; use tpe or nsga2 for several objectives")
        if self.train is not None and self.pruner is not None:
            raise ValueError(
                "pruner: trials that train are pruned on their training curve; drop pruner, set train.prune_*"
            )
        return self

    def directions(self) -> list[Direction]:
        return [OBJECTIVES[o][0] for o in self.objectives]


@dataclass(frozen=True)
class StudySetup:
    """A validated study: its config, the base sweep it tunes on, and the search space."""

    cfg: StudyConfig
    base: SweepConfig  # methods replaced by the tuned method with its defaults
    space: SearchSpace
    source: Path
    training: TrainSetup | None = None  # with `train:`: the training each trial runs before it evaluates

    @property
    def out(self) -> Path:
        return Path(self.cfg.output_dir).resolve()

    def storage_url(self) -> str:
        """`journal:<path>` for a journal file, else the RDB URL as given."""
        given = self.cfg.storage
        if given is None:
            return f"journal:{self.out / 'study.journal'}"
        return given if "://" in given or given.startswith("journal:") else f"journal:{Path(given).resolve()}"

    def fingerprint(self) -> str:
        """What decides a trial's outcome besides its params; a resumed study must match it."""
        base = self.base.model_dump(
            mode="json", exclude={"methods", "output_dir", "tracking", "ray", "concurrency", "cache", "name"}
        )
        keep: dict[str, Any] = {
            "base": base,
            "method": self.cfg.method.model_dump(),
            "space": self.space.to_dict(),
        }
        keep["objectives"] = self.cfg.objectives
        if self.training is not None:  # absent otherwise: the fingerprints of existing studies stay
            keep["train"] = [self.training.fingerprint(), self.cfg.train and self.cfg.train.model_dump()]
        return stable_hash(keep)

    def trial_sweep(self, params: dict[str, Any]) -> SweepConfig:
        """The base sweep running the method with `params` (over its fixed args): one trial's work."""
        raw = self.base.model_dump(mode="json")
        raw["methods"] = [{"name": self.cfg.method.name, "args": {**self.cfg.method.args, **params}}]
        return validate(raw)


def load_study(
    path: str | Path,
    sets: list[str] | None = None,
    base_sets: list[str] | None = None,
    out: str | None = None,
) -> StudySetup:
    """Read and validate a study config and everything it names. `sets` override study keys,
    `base_sets` are appended to its `overrides` of the base sweep, `out` replaces `output_dir`."""
    p = Path(path)
    raw = read_yaml(
        p, "a study YAML, e.g. examples/study_random_simulated.yaml", "sweep, method, search_space"
    )
    for item in sets or []:
        apply_override(raw, item)
    if out is not None:
        raw["output_dir"] = out
    raw.setdefault("overrides", [])
    if isinstance(raw["overrides"], list):
        raw["overrides"] = [*raw["overrides"], *(base_sets or [])]
    cfg = model_or_error(StudyConfig, raw, _one_line)
    try:
        if isinstance(cfg.search_space, dict):
            space = parse_space(cfg.search_space, f"{p}: search_space")
        else:
            found = find_space(cfg.search_space, p.parent)
            space = parse_space(read_file(found, "a search space YAML"), str(found))
        if cfg.train is None:
            check_method(space, cfg.method.name, cfg.method.args)
    except SpaceError as e:
        raise ConfigError(str(e)) from None
    except (TypeError, ValueError, RecursionError) as e:  # a space shape the parser did not expect
        raise ConfigError(f"search_space: {type(e).__name__}: {str(e)[:200]}; check its params") from None
    base = _base_sweep(cfg, p.parent)
    _check_split(base, cfg.allow_test_split)
    training = (
        load_training(cfg.train, p.parent, base, cfg.method.name, cfg.method.args, space)
        if cfg.train
        else None
    )
    setup = StudySetup(cfg, base, space, p, training)
    check_places(base, {"tracking.uri": cfg.tracking.uri, "storage": cfg.storage and setup.storage_url()})
    return setup


def _one_line(e: ValidationError) -> str:
    """The first validation error in one line; an unknown key's did-you-mean from the study's keys."""
    known = {*StudyConfig.model_fields, *Named.model_fields, *Tracking.model_fields}
    return validation_line(e, lambda loc: known, noun="study key")


def base_file(cfg: StudyConfig, here: Path) -> dict[str, Any]:
    """The base sweep YAML as written (no study overrides)."""
    path = Path(cfg.sweep) if Path(cfg.sweep).is_absolute() else here / cfg.sweep
    path = path if path.is_file() else Path(cfg.sweep)
    return read_yaml(path, "the base sweep YAML named by `sweep`", "models, agents, datasets")


def _base_sweep(cfg: StudyConfig, here: Path) -> SweepConfig:
    """The base sweep with the study's overrides, output dir and tuned method (its defaults)."""
    raw = base_file(cfg, here)
    for item in cfg.overrides:
        try:
            apply_override(raw, item)
        except ConfigError as e:
            raise ConfigError(f"overrides: {e}".replace("--set ", "")) from None
    raw["output_dir"] = cfg.output_dir
    raw["methods"] = [{"name": cfg.method.name, "args": dict(cfg.method.args)}]
    try:
        return validate(raw)
    except ConfigError as e:
        raise ConfigError(f"sweep ({cfg.sweep}): {e}") from None


def is_test_split(split: str) -> bool:
    return split == "test" or split.endswith(":test")


def _check_split(base: SweepConfig, allowed: bool) -> None:
    for i, ds in enumerate(base.datasets):
        if is_test_split(ds.split) and not allowed:
            raise ConfigError(
                f"datasets[{i}].split: '{ds.split}' is the held-out test split; tune on train or dev "
                f"(overrides: [datasets.{i}.split=train]) or set allow_test_split: true"
            )
