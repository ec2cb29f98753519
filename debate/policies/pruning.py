"""What a CPP pruning policy is, without torch: its sizes, the sentence encoder its embeddings come
from, whether the response texts it reads are headed by their author ("Agent 2": a seat tell the
paper's main method does not have), whether it also learns an embedding of each candidate's author
seat (`author_seat`, ours: a seat feature, as RUMAD-G's) or a keep bias per (reader, author) pair
(`seat_trust`, ours) or a keep bias per confidence cue (`confidence_cues`, ours: whether the
candidate is the reader's own response, whether its answer is the reader's, and both stated
confidences — what `confidence_keep` reads), whether it reads the texts at all (`content`, ours),
the team it was made for (one behaviour embedding per seat), and each seat's output lengths on the
validation questions its behaviour embeddings were initialised from (App. C's truncation reads their
quantiles). Config validation, checkpoints and truncation caps read this without loading torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from common.added import without_added

KIND = "cpp"
# `confidence_cues`' table: own response?, the same answer as the reader's?, the reader's stated
# confidence, the author's (0..5; 0 stands for none)
CUES = (2, 2, 6, 6)


def cues_of(
    agent: int, candidate: int, confidences: Sequence[int], answers: Sequence[str | None]
) -> tuple[int, int, int, int]:
    """The cell of `confidence_cues`' table for `agent` deciding on `candidate`'s response."""
    same = answers[candidate] is not None and answers[candidate] == answers[agent]
    clip = lambda c: min(5, max(0, int(c or 0)))  # noqa: E731
    return int(candidate == agent), int(same), clip(confidences[agent]), clip(confidences[candidate])


@dataclass(frozen=True)
class PruningArch:
    """A FuseGLU pruning policy's shape and provenance (see the module docstring)."""

    n_agents: int
    dim: int = 384  # the encoder's output size (MiniLM: 384)
    hidden: int = 256  # the GLU's inner size (W_g, W_u: dim -> hidden; W_d: hidden -> dim)
    encoder: str = "hashed"
    seat_models: tuple[str, ...] = ()
    output_lengths: tuple[tuple[int, ...], ...] = ()  # per seat: completion tokens on validation items
    kind: str = field(default=KIND)
    author_tag: bool = True  # responses read as "Agent N\n..." (the policies made before the option)
    author_seat: bool = False  # a trained embedding of each candidate's author seat (ours, not the paper's)
    seat_trust: bool = False  # a trained keep bias per (reader, author) pair of seats (ours)
    # a trained keep bias per (own response?, same answer?, reader's confidence, author's confidence) (ours)
    confidence_cues: bool = False
    author_bias: bool = False  # a trained keep bias per author seat, shared by every reader (ours)
    # false: the network reads no text, its query and response embeddings zeroed; what is left is
    # the reader's behaviour embedding and the seat and cue features (ours: a learned rule of thumb)
    content: bool = True
    # a checkpoint's bytes as before each option
    ADDED: ClassVar[dict[str, Any]] = {
        "author_tag": True,
        "author_seat": False,
        "seat_trust": False,
        "confidence_cues": False,
        "author_bias": False,
        "content": True,
    }

    def __post_init__(self) -> None:
        if self.kind != KIND:
            raise ValueError(f"not a CPP policy (kind {self.kind!r})")
        if self.n_agents < 2 or self.dim < 1 or self.hidden < 1:
            raise ValueError("cpp policy: n_agents must be >= 2, dim and hidden >= 1")
        for name in self.ADDED:  # every option added since the first checkpoints is a switch
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"cpp policy: {name} must be true or false, got {getattr(self, name)!r}")
        for name in ("seat_models", "output_lengths"):  # own fields, by name
            value = getattr(self, name)
            if value and len(value) != self.n_agents:
                raise ValueError(f"cpp policy: {name} must have one entry per seat ({self.n_agents})")

    def caps(self, quantile: float | Sequence[float]) -> dict[int, int]:
        """Seat -> output cap: the `quantile` of its validation output lengths (rounded up); a
        sequence gives each seat its own quantile, in seat order (the paper's q85/q95/q95)."""
        if not self.output_lengths:
            raise ValueError(
                "cpp: truncation needs a checkpoint with validation output lengths (sweep train writes them)"
            )
        qs = [float(quantile)] * self.n_agents if isinstance(quantile, int | float) else list(quantile)
        if len(qs) != self.n_agents:
            raise ValueError(
                f"cpp: {len(qs)} truncation quantiles for {self.n_agents} seats; give one per seat"
            )
        return {
            i: max(1, math.ceil(float(np.quantile(np.asarray(lengths, dtype=float), q))))
            for i, (lengths, q) in enumerate(zip(self.output_lengths, qs, strict=True))
        }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["seat_models"] = list(self.seat_models)
        d["output_lengths"] = [list(x) for x in self.output_lengths]
        return without_added(d, self.ADDED)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PruningArch:
        if d.get("kind") != KIND:
            raise ValueError(
                f"not a CPP policy checkpoint (kind {d.get('kind')!r}); sweep train with method cpp writes them"
            )
        d = dict(d)
        d["seat_models"] = tuple(d.get("seat_models", ()))
        d["output_lengths"] = tuple(tuple(int(v) for v in x) for x in d.get("output_lengths", ()))
        return cls(**d)
