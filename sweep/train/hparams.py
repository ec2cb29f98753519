"""The trainers' hyperparameter sections of a training config: `policy:` (RUMAD's network), `ppo:`,
`pg:` (CPP's policy gradient) and `cpp:` (CPP's network and behaviour initialisation), each strict and
bounded (`sweep.train.limits`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from debate.policies.arch import HEADS
from debate.spec import closest
from sweep.train import limits as lim


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PolicyConfig(_Strict):
    """The network (`debate.policies.actor_critic`): Table 6's hidden size, the head, the initial log-std."""

    hidden: lim.Hidden = 128  # <= 65536 (limits.HIDDEN_MAX)
    head: str = "gaussian"
    log_std_init: lim.Finite = Field(0.0, ge=-20, le=20)  # std from 2e-9 to 5e8

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


class PGConfig(_Strict):
    """CPP's on-policy policy gradient (§3.2): REINFORCE on every keep/prune action with its return
    over appendix A's dependencies, an entropy bonus whose coefficient decays, and the two-stage k
    schedule (the first `first_stage_updates` updates reward keeping an already right answer with
    `first_stage_k`, then `reward.k`). The paper gives no values; ours are the defaults."""

    updates: lim.Updates = 60  # <= 1e6
    episodes_per_update: lim.Episodes = 32  # <= 1e5
    lr: lim.Finite = Field(3e-4, gt=0, le=10)
    entropy_coef: lim.Coef = 0.01  # <= 1e6
    entropy_decay: lim.Finite = Field(0.97, gt=0, le=1)  # per update: coef_u = entropy_coef * decay**(u - 1)
    first_stage_updates: lim.Stage = 0  # 0: one stage, reward.k throughout
    first_stage_k: lim.Finite = Field(1.0, ge=-1, le=1)
    norm_returns: lim.StrictBool = True  # returns less their (round, position) mean, over their std (ours)
    max_grad_norm: lim.PositiveCoef = 1.0
    seed: lim.Seed = 0  # in [0, 2**32); initialises the network and seeds every draw of the training


class CppPolicyConfig(_Strict):
    """CPP's network and its behaviour-embedding initialisation: each seat's round-0 replies to
    `behaviour_items` validation questions (the training dataset at `behaviour_split`, from
    `behaviour_offset`; the paper: ~60, 10 suffice) are encoded and averaged; their lengths are the
    output statistics truncation reads (App. C)."""

    encoder: str = "hashed"
    hidden: lim.Hidden = 256  # <= 65536
    behaviour_items: lim.Items = 10  # <= 10000
    behaviour_split: str = ""  # "": the training dataset's split
    behaviour_offset: lim.Offset = 0  # <= 1e7, as a dataset's offset

    @field_validator("encoder")
    @classmethod
    def _known_encoder(cls, v: str) -> str:
        if v not in ("hashed", "minilm"):
            raise ValueError(
                f"unknown encoder '{v}'{closest(v, ['hashed', 'minilm'])}; known: hashed, minilm"
            )
        return v
