"""Debate methods by name: which router, which protocol, which prompt family, and any team-size or
round overrides.

A method is data, not a subclass: the one episode loop in `debate.episode` runs every method. A
protocol is the ordered phases of a debate round (`PROTOCOLS`); the last phase writes the agents' new
answers. Any router runs under either protocol (`protocol` is an argument of every routed method).
Arguments are declared once, as the fields of the method's params dataclass (`debate.registry`);
routers register themselves in their own files (`debate/routers/`), methods without rounds here.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import debate.baselines  # noqa: F401 - registers vote and consistency
import debate.routers  # noqa: F401 - registers the routed methods
from debate.hooks import hook
from debate.prompt_views import MAX_PEER_REASONING_CHARS
from debate.prompts import STYLE_PHASES, STYLES
from debate.registry import METHODS, label, method, method_def, resolve
from debate.routers.base import Router
from debate.spec import Spec

__all__ = ["METHODS", "PROTOCOLS", "Method", "build_method", "resolve"]

# protocol -> the phases of one debate round, in order. `update`: each agent answers again after
# seeing its sources (one call per agent). `critique_revise` (PEAR): each source writes one critique
# call covering all its targets (an agent with no targets makes none), then every agent revises with
# the critiques it received, ACCEPTing or REJECTing each (one call per agent).
PROTOCOLS: dict[str, tuple[str, ...]] = {"update": ("update",), "critique_revise": ("critique", "revise")}


@dataclass(frozen=True)
class Method:
    """A built method with the resolved spec that identifies it everywhere (ids, Parquet, MLflow)."""

    spec: Spec
    router: Router | None
    protocol: str
    n_agents: int | None
    rounds: int | None
    prompt_style: str = "pear"
    params: Any = None  # the params object (a router's is `router`); it may pick the seats
    reasoning_chars: int = MAX_PEER_REASONING_CHARS  # of each earlier reply a prompt shows; 0: all

    @property
    def label(self) -> str:
        """Readable: the name and the arguments that define it, e.g. `fixed(topology=ring)`."""
        return label(self.spec.name, self.spec.kwargs)

    @property
    def phases(self) -> tuple[str, ...]:
        """The phases of one debate round under this method's protocol."""
        return PROTOCOLS[self.protocol]

    def team_size(self, configured: int) -> int:
        return self.n_agents if self.n_agents is not None else configured

    def num_rounds(self, configured: int) -> int:
        return self.rounds if self.rounds is not None else configured

    def seat_indices(self, keys: Sequence[Hashable]) -> list[int]:
        """The team member each seat runs on, given one key per member (model, adversarial): the
        method's own choice where its params have `seats` (vote, consistency), else seat i on member
        i mod the team's size, for `team_size` seats."""
        pick = hook(self.params, "seats")
        if pick is not None:
            return list(pick(list(keys)))
        return [i % len(keys) for i in range(self.team_size(len(keys)))]


def build_method(name: str, args: Mapping[str, Any] | None = None) -> Method:
    """Resolve and build a registered method; ValueError naming the bad name, argument or value."""
    d = method_def(name)
    spec = resolve(name, args)
    kwargs = spec.kwargs
    style = kwargs["prompt_style"]
    if style not in STYLES:
        raise ValueError(f"method '{name}': unknown prompt_style '{style}'; known: {', '.join(STYLES)}")
    chars = kwargs["reasoning_chars"]
    if chars < 0:
        raise ValueError(f"method '{name}': reasoning_chars must be >= 0 (0: whole replies), got {chars}")
    params = d.params(**{k: kwargs[k] for k in d.own_defaults()})
    if not d.routed:  # no debate rounds: the params object says how many agents answer
        return Method(spec, None, "update", hook(params, "team_size"), 0, style, params, chars)
    protocol = kwargs["protocol"]
    if protocol not in PROTOCOLS:
        raise ValueError(f"method '{name}': unknown protocol '{protocol}'; known: {', '.join(PROTOCOLS)}")
    missing = [p for p in PROTOCOLS[protocol] if p not in STYLE_PHASES[style]]
    if missing:
        raise ValueError(
            f"method '{name}': prompt_style '{style}' has no {'/'.join(missing)} templates; "
            f"use protocol 'update' or prompt_style 'pear'"
        )
    if d.check is not None:
        d.check(kwargs)
    return Method(spec, params, protocol, hook(params, "team_size"), None, style, params, chars)


@method("cot", protocol=None, summary="one agent, one chain-of-thought answer")
@dataclass(frozen=True)
class ChainOfThought:
    """One agent, one chain-of-thought call."""

    @property
    def team_size(self) -> int:
        return 1


@method("cot_sc", protocol=None, summary="self-consistency: m independent answers, majority vote")
@dataclass(frozen=True)
class SelfConsistency:
    """Self-consistency: `m` independent samples (agents cycle through the configured models), majority vote."""

    m: int = 5
    LABEL: ClassVar[tuple[str, ...]] = ("m",)

    def __post_init__(self) -> None:
        if self.m < 1:
            raise ValueError(f"cot_sc: m must be >= 1, got {self.m}")

    @property
    def team_size(self) -> int:
        return self.m
