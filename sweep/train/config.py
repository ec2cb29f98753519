"""The training config: which base sweep to draw rollouts from (models, team, training datasets,
rounds, concurrency), the trained router's fixed arguments, the policy network, the reward weights and
the algorithm's hyperparameters. Two algorithms, chosen by `algorithm` (default: the method's own):
`ppo` for RUMAD (`ppo:`, `policy:`; RUMAD Table 6 by default) and `pg` for CPP (`pg:`, `cpp:`; the
on-policy policy gradient of CPP §3.2). Validated in full before anything starts; every error is one
`ConfigError` line naming the field and the fix."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from debate.cpp_reward import CppReward
from debate.methods import Method, build_method
from debate.rewards import RewardWeights
from debate.spec import closest, stable_hash
from sweep.config import paths
from sweep.config.errors import model_or_error, validation_line
from sweep.config.sweep import ConfigError, SweepConfig, Tracking, apply_override, read_yaml, validate
from sweep.train import limits as lim
from sweep.train.algorithms import ALGORITHMS, SECTIONS, Algorithm
from sweep.train.hparams import CppPolicyConfig as CppPolicyConfig  # re-exported
from sweep.train.hparams import PGConfig as PGConfig  # re-exported
from sweep.train.hparams import PolicyConfig as PolicyConfig  # re-exported
from sweep.train.hparams import PPOConfig as PPOConfig  # re-exported

TRAINABLE = ("rumad", "cpp")  # routers with a learned policy this trainer can update
ALGORITHM = {"rumad": "ppo", "cpp": "pg"}  # each method's algorithm (the only one it trains with)
REWARDS: dict[str, type] = {"rumad": RewardWeights, "cpp": CppReward}
REWARD_KEYS = [f.name for f in dataclasses.fields(RewardWeights)]


def reward_keys(method: str) -> list[str]:
    """The reward coefficients of a trainable method."""
    return [f.name for f in dataclasses.fields(REWARDS.get(method, RewardWeights))]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MethodSpec(_Strict):
    name: str = "rumad"
    args: dict[str, Any] = Field(default_factory=dict)


class TrainConfig(_Strict):
    name: lim.RunName = "train"  # the MLflow run's name: 1-100 characters, a plain path component
    output_dir: str = "runs/train"  # checkpoints/, policy.npz, mlflow.db, the call cache (see _validated)
    sweep: str  # the base sweep YAML (relative to this file): models, agents, datasets, rounds
    overrides: list[str] = Field(default_factory=list)  # `key=value` applied to the base sweep
    method: MethodSpec = MethodSpec()  # the trained router and its fixed arguments (thresholds, budget)
    policy: PolicyConfig = PolicyConfig()
    reward: dict[str, lim.RewardValue] = Field(default_factory=dict)  # RewardWeights fields; unset: Table 5
    ppo: PPOConfig = PPOConfig()
    algorithm: str | None = None  # ppo | pg; None: the method's (rumad: ppo, cpp: pg)
    pg: PGConfig = PGConfig()
    cpp: CppPolicyConfig = CppPolicyConfig()
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

    @model_validator(mode="after")
    def _trainable(self) -> TrainConfig:
        if self.method.name not in TRAINABLE:
            raise ValueError(
                f"method: '{self.method.name}' has no trainable policy; trainable: {', '.join(TRAINABLE)}"
            )
        if self.algorithm is not None and self.algorithm != ALGORITHM[self.method.name]:
            raise ValueError(
                f"algorithm: '{self.algorithm}' does not train {self.method.name}; it trains with "
                f"'{ALGORITHM[self.method.name]}' (ppo: rumad, pg: cpp)"
            )
        known = reward_keys(self.method.name)
        for key in self.reward:
            if key not in known:
                raise ValueError(
                    f"reward: unknown reward weight '{key}'{closest(key, known)}; known: {', '.join(known)}"
                )
        REWARDS[self.method.name](**self.reward)  # ranges
        if self.ppo.minibatches > self.ppo.episodes_per_update:
            raise ValueError(
                f"ppo.minibatches: {self.ppo.minibatches} is more than ppo.episodes_per_update "
                f"({self.ppo.episodes_per_update}); lower ppo.minibatches or raise ppo.episodes_per_update"
            )
        fixed = {"checkpoint", "init_seed"} & set(self.method.args)
        if fixed:
            raise ValueError(
                f"method.args.{sorted(fixed)[0]}: training starts from a fresh network seeded by ppo.seed "
                "(pg.seed for CPP); remove it"
            )
        return self


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
    def rewards(self) -> Any:
        """The reward coefficients: `RewardWeights` (rumad) or `CppReward` (cpp)."""
        return REWARDS[self.cfg.method.name](**self.cfg.reward)

    @property
    def algorithm(self) -> str:
        return self.cfg.algorithm or ALGORITHM[self.cfg.method.name]

    @property
    def trainer(self) -> Algorithm:
        """The training's algorithm, from the table (`sweep.train.algorithms`)."""
        return ALGORITHMS[self.algorithm]

    @property
    def hparams(self) -> PPOConfig | PGConfig:
        """The algorithm's own section (`ppo:` or `pg:`)."""
        section = getattr(self.cfg, self.trainer.name)  # each algorithm's section is keyed by its name
        assert isinstance(section, PPOConfig | PGConfig)
        return section

    @property
    def updates(self) -> int:
        """The updates a finished training has made (its algorithm's `updates`)."""
        return self.hparams.updates

    @property
    def seed(self) -> int:
        """The seed of the training's own algorithm (`ppo.seed` or `pg.seed`): the network's
        initialisation and every draw, the rollouts' engine seeds included. Its section is in the
        fingerprint, so a resume with another seed is refused."""
        return self.hparams.seed

    def fingerprint(self) -> str:
        """What decides the training's course; a resumed training must match it. `ppo.updates` is left
        out, so a finished training can be extended by raising it (and how often it is evaluated)."""
        base = self.base.model_dump(
            mode="json", exclude={"output_dir", "tracking", "ray", "concurrency", "cache", "name"}
        )
        where = {
            "name",
            "output_dir",
            "tracking",
            "checkpoint_every",
            "sweep",
            "overrides",
            "eval_every",
            "eval_episodes",
        }
        # evaluations never change the training; the other algorithm's sections do not apply (a RUMAD
        # training's fingerprint is what it was before CPP's sections existed)
        cfg = self.cfg.model_dump(mode="json", exclude=where | (SECTIONS - self.trainer.reads))
        cfg[self.trainer.name].pop("updates")
        return stable_hash({"base": base, "train": cfg})

    def with_params(self, params: dict[str, Any], output_dir: str) -> TrainSetup:
        """This training with some reward weights and router arguments replaced (a study trial's)."""
        rk, pk = reward_keys(self.cfg.method.name), self.trainer.tuned
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
        sections: dict[str, type[BaseModel]] = {"ppo": PPOConfig, "policy": PolicyConfig, "pg": PGConfig}
        sections |= {"cpp": CppPolicyConfig, "tracking": Tracking, "method": MethodSpec}
        return list(sections.get(str(loc[0]) if len(loc) > 1 else "", TrainConfig).model_fields)

    return validation_line(e, keys_at, noun="training key")


def _validated(raw: dict[str, Any]) -> TrainConfig:
    cfg = model_or_error(TrainConfig, raw, _line)
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
    raw = read_yaml(p, "a training YAML, e.g. examples/train_rumad_simulated.yaml", "sweep, method, ppo")
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
