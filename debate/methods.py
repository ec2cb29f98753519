"""Debate methods by name: which router, which protocol, and any team-size or round overrides.

A method is data, not a subclass: the one episode loop in `debate.episode` runs every method."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from debate.routers import ROUTERS, Router
from debate.spec import Registry, Spec

PROTOCOLS = ("update",)  # critique_revise (PEAR) lands with the PEAR router


@dataclass(frozen=True)
class MethodParts:
    """What a method factory returns: everything but its own spec."""

    router: Router | None  # None: no debate rounds (cot, cot_sc)
    protocol: str = "update"
    n_agents: int | None = None  # forces the team size (cot: 1, cot_sc: m); None = from config
    rounds: int | None = None  # forces the number of debate rounds; None = from config


@dataclass(frozen=True)
class Method:
    """A built method with the resolved spec that identifies it everywhere (ids, Parquet, MLflow)."""

    spec: Spec
    router: Router | None
    protocol: str
    n_agents: int | None
    rounds: int | None

    def team_size(self, configured: int) -> int:
        return self.n_agents if self.n_agents is not None else configured

    def num_rounds(self, configured: int) -> int:
        return self.rounds if self.rounds is not None else configured


METHODS: Registry[MethodParts] = Registry("method")


def build_method(name: str, args: Mapping[str, Any] | None = None) -> Method:
    """Resolve and build a registered method; ValueError with a did-you-mean on a bad name or arg."""
    spec = METHODS.resolve(name, args)
    parts = METHODS.build(name, args)
    if parts.protocol not in PROTOCOLS:
        raise ValueError(
            f"method '{name}': unknown protocol '{parts.protocol}'; known: {', '.join(PROTOCOLS)}"
        )
    return Method(spec, parts.router, parts.protocol, parts.n_agents, parts.rounds)


@METHODS.register("cot")
def cot() -> MethodParts:
    """One agent, one chain-of-thought call."""
    return MethodParts(router=None, n_agents=1, rounds=0)


@METHODS.register("cot_sc")
def cot_sc(m: int = 5) -> MethodParts:
    """Self-consistency: `m` independent samples (agents cycle through the configured models), majority vote."""
    if m < 1:
        raise ValueError(f"cot_sc: m must be >= 1, got {m}")
    return MethodParts(router=None, n_agents=m, rounds=0)


@METHODS.register("fixed")
def fixed(topology: str = "clique", protocol: str = "update") -> MethodParts:
    """The same topology every round: clique, star, ring, chain or zero."""
    return MethodParts(router=ROUTERS.build("fixed", {"topology": topology}), protocol=protocol)


@METHODS.register("random")
def random_graph(k: int = 2, protocol: str = "update") -> MethodParts:
    """Each target sees `k` sources drawn uniformly every round."""
    return MethodParts(router=ROUTERS.build("random", {"k": k}), protocol=protocol)
