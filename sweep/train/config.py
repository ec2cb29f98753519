"""The training config: which base sweep to draw rollouts from (models, team, training datasets,
rounds, concurrency), the trained router's fixed arguments, the reward weights, and the sections of
the trainers' table (`sweep.train.trainers`): each learned method's trainer names its own sections
and their classes — RUMAD's PPO `ppo:` and `policy:` (RUMAD Table 6 by default), CPP's policy gradient
`pg:` and `cpp:` (CPP §3.2). The method picks its trainer (`algorithm`, if given, must name it).
Validated in full before anything starts; every error is one `ConfigError` line naming the field
and the fix."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from common.added import without_added
from debate.methods import Method, build_method
from debate.spec import closest, stable_hash
from sweep.config import paths
from sweep.config.errors import model_or_error, validation_line
from sweep.config.sweep import ConfigError, SweepConfig, Tracking, apply_override, read_yaml, validate
from sweep.train import limits as lim
from sweep.train.trainers import TRAINERS, OwnSection, Trainer, all_sections

S = TypeVar("S", bound=BaseModel)
# the config's own keys a training's fingerprint leaves out unless its trainer keeps them (`fingerprinted`)
OPTIONAL_IN_FINGERPRINT = frozenset({"algorithm"})
# where a training writes and how it is evaluated: never its course (its fingerprint leaves them out)
NOT_FINGERPRINTED = frozenset({"name", "output_dir", "tracking", "checkpoint_every", "sweep", "overrides"})
NOT_FINGERPRINTED |= {"eval_every", "eval_episodes"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MethodSpec(_Strict):
    name: str = "rumad"
    args: dict[str, Any] = Field(default_factory=dict)


class TrainConfig(_Strict):
    """The keys every training has. The trainers' sections are fields of `config_class()`, the
    subclass a config is validated with (one field per registered trainer's section)."""

    name: lim.RunName = "train"  # the MLflow run's name: 1-100 characters, a plain path component
    output_dir: str = "runs/train"  # checkpoints/, policy.npz, mlflow.db, the call cache (see _validated)
    sweep: str  # the base sweep YAML (relative to this file): models, agents, datasets, rounds
    overrides: list[str] = Field(default_factory=list)  # `key=value` applied to the base sweep
    method: MethodSpec = MethodSpec()  # the trained router and its fixed arguments (thresholds, budget)
    reward: dict[str, lim.RewardValue] = Field(default_factory=dict)  # its trainer's reward; unset: defaults
    algorithm: str | None = None  # None: the method's trainer's (rumad: ppo, cpp: pg); else it must be that
    checkpoint_every: lim.Every = 10  # a kept copy every k <= 1e6 updates (the latest is kept always)
    eval_every: lim.EveryOrNever = 10  # evaluate the policy's mean every k <= 1e6 updates (0: never)
    eval_episodes: lim.Episodes = 64  # on this many (<= 1e5) fixed training items and seeds; the best is kept
    allow_test_split: lim.StrictBool = False
    tracking: Tracking = Tracking(experiment="debate-sweep-training")

    @field_validator("method", mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v

    @field_validator("tracking", mode="before")
    @classmethod
    def _training_experiment(cls, v: Any) -> Any:
        # `tracking: {enabled: true}` still logs with the trainings, not into the sweeps' experiment
        return {"experiment": "debate-sweep-training", **v} if isinstance(v, dict) else v

    @overload
    def section(self, key: str) -> BaseModel: ...
    @overload
    def section(self, key: str, kind: type[S]) -> S: ...
    def section(self, key: str, kind: type[BaseModel] = BaseModel) -> BaseModel:
        """The validated section `key` of a registered trainer (`ppo`, `policy`, `pg`, `cpp`, ...),
        checked to be a `kind`."""
        value = getattr(self, key, None) if key in all_sections() else None
        if not isinstance(value, kind):
            raise KeyError(f"no trainer section '{key}' of type {kind.__name__} in this config")
        return value

    @model_validator(mode="after")
    def _trainable(self) -> TrainConfig:
        trainer = TRAINERS.get(self.method.name)
        if trainer is None:
            raise ValueError(
                f"method: '{self.method.name}' has no trainable policy; trainable: {', '.join(TRAINERS.names())}"
            )
        if not trainer.sections.keys() <= type(self).model_fields.keys():
            raise TypeError("TrainConfig lacks the trainers' sections: validate with config_class()")
        if self.algorithm is not None and self.algorithm != trainer.name:
            pairs = ", ".join(f"{TRAINERS[m].name}: {m}" for m in TRAINERS.names())
            raise ValueError(
                f"algorithm: '{self.algorithm}' does not train {self.method.name}; it trains with "
                f"'{trainer.name}' ({pairs})"
            )
        known = trainer.reward_keys()
        for key in self.reward:
            if key not in known:
                raise ValueError(
                    f"reward: unknown reward weight '{key}'{closest(key, known)}; known: {', '.join(known)}"
                )
        trainer.reward(**self.reward)  # ranges
        if trainer.check is not None:
            trainer.check(self)
        fixed = {"checkpoint", "init_seed"} & set(self.method.args)
        if fixed:
            raise ValueError(
                f"method.args.{sorted(fixed)[0]}: training starts from a fresh network seeded by "
                f"{trainer.name}.seed; remove it"
            )
        return self


@functools.cache
def _with(sections: tuple[tuple[str, type[BaseModel]], ...]) -> type[TrainConfig]:
    clash = [key for key, _ in sections if key in TrainConfig.model_fields]
    if clash:
        raise TypeError(f"trainer section '{clash[0]}' is a key of every training config; rename it")
    fields: dict[str, Any] = {key: (cls, Field(default_factory=cls)) for key, cls in sections}
    return create_model("TrainConfig", __base__=TrainConfig, __module__=__name__, **fields)


def config_class() -> type[TrainConfig]:
    """`TrainConfig` with a field per registered trainer's section (its class; defaults when absent)."""
    return _with(tuple(all_sections().items()))


@dataclass(frozen=True)
class TrainSetup:
    """A validated training: its config and the base sweep it draws rollouts from."""

    cfg: TrainConfig
    base: SweepConfig  # methods: the trained router with its fixed arguments
    source: Path

    @property
    def out(self) -> Path:
        return Path(self.cfg.output_dir).resolve()

    @property
    def method(self) -> Method:
        return build_method(self.cfg.method.name, self.cfg.method.args)

    @property
    def trainer(self) -> Trainer:
        """The method's trainer, from the table (`sweep.train.trainers`)."""
        return TRAINERS[self.cfg.method.name]

    @property
    def algorithm(self) -> str:
        return self.trainer.name

    @property
    def rewards(self) -> Any:
        """The reward coefficients: the trainer's reward class (`RewardWeights`, `CppReward`)."""
        return self.trainer.reward(**self.cfg.reward)

    @overload
    def section(self, key: str) -> BaseModel: ...
    @overload
    def section(self, key: str, kind: type[S]) -> S: ...
    def section(self, key: str, kind: type[BaseModel] = BaseModel) -> BaseModel:
        """The config's section `key` (`TrainConfig.section`)."""
        return self.cfg.section(key, kind)

    @property
    def hparams(self) -> OwnSection:
        """The trainer's own section (`ppo:`, `pg:`), keyed by its algorithm's name."""
        return cast(OwnSection, self.cfg.section(self.trainer.name))  # `Trainer` checked its fields

    @property
    def updates(self) -> int:
        """The updates a finished training has made (its trainer's `updates`)."""
        return self.hparams.updates

    @property
    def seed(self) -> int:
        """The seed of the training's own trainer (`ppo.seed`, `pg.seed`): the network's
        initialisation and every draw, the rollouts' engine seeds included. Its section is in the
        fingerprint, so a resume with another seed is refused."""
        return self.hparams.seed

    def fingerprint(self) -> str:
        """What decides the training's course; a resumed training must match it. Its own section's
        `updates` is left out, so a finished training can be extended by raising it (and how often
        it is evaluated)."""
        base = self.base.model_dump(
            mode="json", exclude={"output_dir", "tracking", "ray", "concurrency", "cache", "name"}
        )
        # evaluations never change the training; the other trainers' sections do not apply (a RUMAD
        # training's fingerprint is what it was before CPP's sections existed)
        trainer = self.trainer
        others = (all_sections().keys() - trainer.sections.keys()) | (
            OPTIONAL_IN_FINGERPRINT - set(trainer.fingerprinted)
        )
        cfg = self.cfg.model_dump(mode="json", exclude={*NOT_FINGERPRINTED, *others})
        cfg[trainer.name].pop("updates")
        for key, section in trainer.sections.items():  # keys added later, at the old behaviour
            cfg[key] = without_added(cfg[key], getattr(section, "ADDED", {}))
        return stable_hash({"base": base, "train": cfg})

    def with_params(self, params: dict[str, Any], output_dir: str) -> TrainSetup:
        """This training with some reward weights and router arguments replaced (a study trial's)."""
        rk, pk = self.trainer.reward_keys(), self.trainer.tuned
        reward = {**self.cfg.reward, **{k: v for k, v in params.items() if k in rk}}
        args = {**self.cfg.method.args, **{k: v for k, v in params.items() if k not in rk and k not in pk}}
        raw = self.cfg.model_dump(mode="json") | {"reward": reward, "output_dir": output_dir}
        own = self.trainer.name
        raw[own] = {**raw[own], **{k: v for k, v in params.items() if k in pk}}
        raw["method"] = {"name": self.cfg.method.name, "args": args}
        cfg = _validated(raw)
        return TrainSetup(cfg, _base_sweep(cfg, self.source.parent), self.source)


def _line(e: ValidationError) -> str:
    """The first validation error in one line; an unknown key's did-you-mean from its own section."""

    def keys_at(loc: Sequence[Any]) -> list[str]:
        sections: dict[str, type[BaseModel]] = {**all_sections(), "tracking": Tracking, "method": MethodSpec}
        return list(sections.get(str(loc[0]) if len(loc) > 1 else "", config_class()).model_fields)

    return validation_line(e, keys_at, noun="training key")


def _validated(raw: dict[str, Any]) -> TrainConfig:
    cfg = model_or_error(config_class(), raw, _line)
    where = lim.training_dir(cfg.output_dir)  # before anything is written (`sweep train --validate` too)
    if cfg.tracking.uri is not None:
        paths.file_url(cfg.tracking.uri, "tracking.uri")  # as a sweep's: no system place, a file of its kind
    return cfg if where == cfg.output_dir else cfg.model_copy(update={"output_dir": where})


def load_train(
    path: str | Path,
    sets: list[str] | None = None,
    base_sets: list[str] | None = None,
    out: str | None = None,
) -> TrainSetup:
    """Read and validate a training config and the base sweep it names. `sets` override training keys,
    `base_sets` are appended to its `overrides` of the base sweep, `out` replaces `output_dir`."""
    p = Path(path)
    raw = read_yaml(p, "a training YAML, e.g. examples/train_rumad_simulated.yaml", "sweep, method, reward")
    for item in sets or []:
        apply_override(raw, item)
    if out is not None:
        raw["output_dir"] = out
    if isinstance(raw.get("overrides", []), list):
        raw["overrides"] = [*raw.get("overrides", []), *(base_sets or [])]
    cfg = _validated(raw)
    return TrainSetup(cfg, _base_sweep(cfg, p.parent), p)


def _base_sweep(cfg: TrainConfig, here: Path) -> SweepConfig:
    """The base sweep with the training's overrides and output dir, running the trained router."""
    path = Path(cfg.sweep) if Path(cfg.sweep).is_absolute() else here / cfg.sweep
    raw = read_yaml(
        path if path.is_file() else Path(cfg.sweep),
        "the base sweep YAML named by `sweep`",
        "models, agents, datasets",
    )
    for item in cfg.overrides:
        try:
            apply_override(raw, item)
        except ConfigError as e:
            raise ConfigError(f"overrides: {e}".replace("--set ", "")) from None
    raw["output_dir"] = cfg.output_dir
    raw["methods"] = [{"name": cfg.method.name, "args": dict(cfg.method.args)}]
    try:
        base = validate(raw)
    except ConfigError as e:
        raise ConfigError(f"sweep ({cfg.sweep}): {e}") from None
    for i, ds in enumerate(base.datasets):
        if (ds.split == "test" or ds.split.endswith(":test")) and not cfg.allow_test_split:
            raise ConfigError(
                f"datasets[{i}].split: '{ds.split}' is the held-out test split; train on train or dev "
                f"(overrides: [datasets.{i}.split=train]) or set allow_test_split: true"
            )
    if base.rounds < 1:
        raise ConfigError(
            "rounds: a policy that routes debate rounds needs rounds >= 1 in the base sweep; set rounds: 1 or more"
        )
    if len(base.team()) < 2:
        raise ConfigError(
            "agents: a policy that routes between agents needs at least 2 seats in the base sweep; add a seat"
        )
    return base
