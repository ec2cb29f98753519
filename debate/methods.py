"""Debate methods by name: which router, which protocol, which prompt family, and any team-size or
round overrides.

A method is data, not a subclass: the one episode loop in `debate.episode` runs every method. A
protocol is the ordered phases of a debate round (`PROTOCOLS`); the last phase writes the agents' new
answers. Any router runs under either protocol (`protocol` is an argument of every routed method)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from debate.prompts import STYLE_PHASES, STYLES
from debate.routers import ROUTERS, Router
from debate.spec import Registry, Spec

# protocol -> the phases of one debate round, in order. `update`: each agent answers again after
# seeing its sources (one call per agent). `critique_revise` (PEAR): each source writes one critique
# call covering all its targets (an agent with no targets makes none), then every agent revises with
# the critiques it received, ACCEPTing or REJECTing each (one call per agent).
PROTOCOLS: dict[str, tuple[str, ...]] = {"update": ("update",), "critique_revise": ("critique", "revise")}


@dataclass(frozen=True)
class MethodParts:
    """What a method factory returns: everything but its own spec."""

    router: Router | None  # None: no debate rounds (cot, cot_sc)
    protocol: str = "update"
    prompt_style: str = "pear"  # the template family (debate.prompts.STYLES)
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
    prompt_style: str = "pear"

    @property
    def phases(self) -> tuple[str, ...]:
        """The phases of one debate round under this method's protocol."""
        return PROTOCOLS[self.protocol]

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
    if parts.prompt_style not in STYLES:
        raise ValueError(
            f"method '{name}': unknown prompt_style '{parts.prompt_style}'; known: {', '.join(STYLES)}"
        )
    missing = [p for p in PROTOCOLS[parts.protocol] if p not in STYLE_PHASES[parts.prompt_style]]
    if parts.router is not None and missing:
        raise ValueError(
            f"method '{name}': prompt_style '{parts.prompt_style}' has no {'/'.join(missing)} templates; "
            f"use protocol 'update' or prompt_style 'pear'"
        )
    return Method(spec, parts.router, parts.protocol, parts.n_agents, parts.rounds, parts.prompt_style)


@METHODS.register("cot")
def cot(prompt_style: str = "pear") -> MethodParts:
    """One agent, one chain-of-thought call."""
    return MethodParts(router=None, n_agents=1, rounds=0, prompt_style=prompt_style)


@METHODS.register("cot_sc")
def cot_sc(m: int = 5, prompt_style: str = "pear") -> MethodParts:
    """Self-consistency: `m` independent samples (agents cycle through the configured models), majority vote."""
    if m < 1:
        raise ValueError(f"cot_sc: m must be >= 1, got {m}")
    return MethodParts(router=None, n_agents=m, rounds=0, prompt_style=prompt_style)


@METHODS.register("fixed")
def fixed(topology: str = "clique", protocol: str = "update", prompt_style: str = "pear") -> MethodParts:
    """The same topology every round: clique, star, ring, chain or zero."""
    router = ROUTERS.build("fixed", {"topology": topology})
    return MethodParts(router=router, protocol=protocol, prompt_style=prompt_style)


@METHODS.register("random")
def random_graph(k: int = 2, protocol: str = "update", prompt_style: str = "pear") -> MethodParts:
    """Each target sees `k` sources drawn uniformly every round."""
    return MethodParts(router=ROUTERS.build("random", {"k": k}), protocol=protocol, prompt_style=prompt_style)


@METHODS.register("pear")
def pear(
    k: int = 2,
    mc_permutations: int = 100,
    candidates: str = "relabel",
    alpha_t: float = 0.2,
    alpha_i: float = 0.7,
    alpha_l: float = 0.7,
    tau_src: int = 4,
    tau_tgt: int = 3,
    tau_low: int = 3,
    normalize_terms: bool = True,
    temperature: float = 0.7,
    beta: float = 0.6,
    influence: str = "adoption",
    rho_init: str = "uniform",
    use_t: bool = True,
    use_i: bool = True,
    use_l: bool = True,
    protocol: str = "critique_revise",
    prompt_style: str = "pear",
) -> MethodParts:
    """PEAR's state-aware router (debate.routers.pear; every argument is documented there), under
    `critique_revise` by default. Ablations: `use_t` / `use_i` / `use_l` false (the term's alpha -> 0)."""
    args = {k_: v for k_, v in locals().items() if k_ not in ("protocol", "prompt_style")}
    if influence == "accept" and protocol != "critique_revise":
        raise ValueError(
            "pear: influence 'accept' reads critique verdicts; it needs protocol critique_revise"
        )
    return MethodParts(router=ROUTERS.build("pear", args), protocol=protocol, prompt_style=prompt_style)
