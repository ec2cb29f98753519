"""RUMAD's trainer, as the trainers' table holds it (`sweep.train.trainers`): PPO (`sweep.train.ppo`,
its program) on RUMAD's reward (`debate.rewards.RewardWeights`), with its two config sections —
`ppo:` (its own: RUMAD Table 6 where the paper gives a value) and `policy:` (the network) — each strict
and bounded (`sweep.train.limits`). Torch-free: a config validates without it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from debate.policies.arch import HEADS
from debate.rewards import RewardWeights
from debate.spec import closest
from sweep.train import limits as lim
from sweep.train.trainers import Trainer, register

if TYPE_CHECKING:
    from sweep.train.config import TrainConfig


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PolicyConfig(_Strict):
    """The network (`debate.policies.actor_critic`): Table 6's hidden size, the head, the initial log-std."""

    hidden: lim.Hidden = 128  # <= 65536 (limits.HIDDEN_MAX)
    head: str = "gaussian"  # gaussian | beta | bernoulli (a gate per agent and per edge)
    log_std_init: lim.Finite = Field(0.0, ge=-20, le=20)  # std from 2e-9 to 5e8
    seats: int = Field(0, ge=0, le=1024)  # > 0: each agent's features hold its seat, one-hot
    critic: Literal["shared", "separate"] = "shared"  # separate: the value head's own encoder
    ADDED: ClassVar[dict[str, Any]] = {"seats": 0, "critic": "shared"}

    @field_validator("head")
    @classmethod
    def _known_head(cls, v: str) -> str:
        if v not in HEADS:
            raise ValueError(f"unknown head '{v}'{closest(v, list(HEADS))}; known: {', '.join(HEADS)}")
        return v


class PPOConfig(_Strict):
    """PPO (CleanRL's, on debate rounds as steps). Defaults: RUMAD Table 6 where it gives a value."""

    # Counts are bounded (sweep.train.limits): updates <= 1e6, episodes_per_update <= 1e5, epochs <= 1000
    updates: lim.Updates = 200  # policy updates; raise it and rerun to train on from the last one
    episodes_per_update: lim.Episodes = 64  # rollouts collected before each update
    epochs: lim.Epochs = 4  # passes over each rollout batch
    minibatches: lim.Episodes = 4  # at most episodes_per_update
    lr: lim.Finite = Field(1e-4, gt=0, le=10)
    gamma: lim.Finite = Field(0.99, ge=0, le=1)
    gae_lambda: lim.Finite = Field(0.95, ge=0, le=1)
    clip: lim.PositiveCoef = 0.2  # coefficients: finite, <= 1e6
    value_coef: lim.Coef = 0.01
    entropy_coef: lim.Coef = 0.0
    max_grad_norm: lim.PositiveCoef = 0.5
    norm_adv: lim.StrictBool = True
    target_kl: lim.PositiveCoef | None = None  # stop an update's epochs early past this KL
    seed: lim.Seed = 0  # in [0, 2**32); initialises the network and seeds every draw of the training
    # gae: GAE on the critic; group: each item runs `group_size` times per update and a step's
    # advantage is its return-to-go less the mean of its item's episodes at that step (ours: the
    # critic sees no item, and item difficulty is most of a return's variance)
    advantage: Literal["gae", "group"] = "gae"
    group_size: lim.Episodes = 1
    ADDED: ClassVar[dict[str, Any]] = {"advantage": "gae", "group_size": 1}


def check(cfg: TrainConfig) -> None:
    """What no one section can check alone: a minibatch holds at least one episode's rounds; a
    group baseline needs groups that fill the update."""
    ppo = cfg.section("ppo", PPOConfig)
    if ppo.advantage == "group" and (ppo.group_size < 2 or ppo.episodes_per_update % ppo.group_size):
        raise ValueError(
            f"ppo.group_size: {ppo.group_size} with advantage 'group' must be >= 2 and divide "
            f"ppo.episodes_per_update ({ppo.episodes_per_update}); set e.g. ppo.group_size=4"
        )
    if ppo.minibatches > ppo.episodes_per_update:
        raise ValueError(
            f"ppo.minibatches: {ppo.minibatches} is more than ppo.episodes_per_update "
            f"({ppo.episodes_per_update}); lower ppo.minibatches or raise ppo.episodes_per_update"
        )


register(
    Trainer(
        method="rumad",
        name="ppo",
        reward=RewardWeights,
        sections={"ppo": PPOConfig, "policy": PolicyConfig},
        module="sweep.train.ppo",
        check=check,
    )
)
