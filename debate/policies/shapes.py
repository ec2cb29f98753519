"""The parameters each kind of policy network has, by name and shape, read from a checkpoint's
architecture without torch. `debate.policies.checkpoint` checks every checkpoint against them when it
loads, so a file whose weights do not fit its architecture is refused in one line while a config
validates, never with a torch error in the middle of a sweep. `tests/test_train_state.py` holds them
equal to the networks' own `state_dict()` shapes, so a change to a network cannot leave them behind."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from common.registry import Registry
from debate.policies.arch import PolicyArch
from debate.policies.pruning import CUES, PruningArch
from debate.policies.pruning import KIND as PRUNING

# What `sweep train` writes (float32) and what a network may be loaded from without loss or surprise.
DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


@dataclass(frozen=True)
class Network:
    """A kind of policy network as its checkpoints are checked: the architecture's sizes (whole
    numbers >= 1) and its parameters' shapes from the architecture (TypeError or ValueError when
    the mapping is no architecture of this kind)."""

    sizes: tuple[str, ...]
    shapes: Callable[[dict[str, Any]], dict[str, tuple[int, ...]]]


def _of_policy(d: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return _actor_critic(PolicyArch.from_dict(d))


def _of_pruning(d: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return _pruning(PruningArch.from_dict(d))


# By the method whose policy it is: an architecture's `kind` names it; one without (RUMAD's) is "rumad".
NETWORKS: Registry[Network] = Registry("policy network")
NETWORKS["rumad"] = Network(("hidden", "horizon", "agent_features", "global_features"), _of_policy)
NETWORKS[PRUNING] = Network(("n_agents", "dim", "hidden"), _of_pruning)


def kind_of(arch: Mapping[str, Any]) -> str:
    """The method whose network `arch` describes: its `kind` where a network of that kind is
    registered ("cpp": a pruning network), else "rumad" (an actor-critic)."""
    kind = arch.get("kind")
    return kind if isinstance(kind, str) and kind in NETWORKS else "rumad"


def expected(arch: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Parameter name -> shape of the network `arch` describes; ValueError naming what is wrong when
    `arch` is no architecture a policy has (an unknown key, a size that is not a whole number)."""
    kind = kind_of(arch)
    network = NETWORKS[kind]
    for key in network.sizes:
        value = arch.get(key)
        if key in arch and (type(value) is not int or value < 1):
            raise ValueError(f"architecture field '{key}' is {value!r}, not a whole number >= 1")
    try:
        return network.shapes(dict(arch))
    except (TypeError, ValueError) as e:  # an unknown or missing key, a bad head name
        raise ValueError(f"not a {kind} policy's architecture ({e})") from None


def _linear(name: str, n_in: int, n_out: int, bias: bool = True) -> dict[str, tuple[int, ...]]:
    return {f"{name}.weight": (n_out, n_in), **({f"{name}.bias": (n_out,)} if bias else {})}


def _actor_critic(a: PolicyArch) -> dict[str, tuple[int, ...]]:
    """`debate.policies.actor_critic.ActorCritic`: encoder, per-edge head, critic (and log-std, the
    critic's own encoder, the per-agent activation head)."""
    h, g, out = a.hidden, a.global_features, 2 if a.head == "beta" else 1
    x = a.agent_features + a.seats + g
    shapes = _linear("encoder.0", x, h) | _linear("encoder.2", h, h)
    shapes |= _linear("edge.0", 2 * h + 1, h) | _linear("edge.2", h, out)
    shapes |= _linear("critic.0", h + g, h) | _linear("critic.2", h, 1)
    if a.critic == "separate":
        shapes |= _linear("value_encoder.0", x, h) | _linear("value_encoder.2", h, h)
    if a.head == "bernoulli":
        shapes |= _linear("act.0", h + g, h) | _linear("act.2", h, 1)
    return shapes | ({"log_std": ()} if a.head == "gaussian" else {})


def _pruning(a: PruningArch) -> dict[str, tuple[int, ...]]:
    """`debate.policies.fuseglu.PruningNet`: behaviour embeddings, two FuseGLU blocks, the score."""
    shapes: dict[str, tuple[int, ...]] = {
        "behaviour": (a.n_agents, a.dim),
        **_linear("w_s", a.dim, 1, bias=False),
        **({"author": (a.n_agents, a.dim)} if a.author_seat else {}),
        **({"trust": (a.n_agents, a.n_agents)} if a.seat_trust else {}),
        **({"cues": CUES} if a.confidence_cues else {}),
        **({"author_bias": (a.n_agents,)} if a.author_bias else {}),
    }
    for block in ("fuse_query", "fuse_response"):
        for norm in ("norm_x", "norm_y", "norm_out"):
            shapes |= {f"{block}.{norm}.weight": (a.dim,), f"{block}.{norm}.bias": (a.dim,)}
        shapes |= _linear(f"{block}.w_g", a.dim, a.hidden, bias=False) | _linear(
            f"{block}.w_u", a.dim, a.hidden, bias=False
        )
        shapes |= _linear(f"{block}.w_d", a.hidden, a.dim, bias=False)
    return shapes


def mismatch(arch: Mapping[str, Any], weights: Mapping[str, np.ndarray]) -> str | None:
    """What is wrong with `weights` for `arch` (a missing, extra, misshapen or non-float parameter),
    or None when they fit."""
    want = expected(arch)
    missing, extra = sorted(set(want) - set(weights)), sorted(set(weights) - set(want))
    if missing or extra:
        parts = [
            f"missing {', '.join(missing[:3])}" if missing else "",
            f"unexpected {', '.join(extra[:3])}" if extra else "",
        ]
        return f"its weights do not fit its architecture ({'; '.join(p for p in parts if p)})"
    for name, shape in want.items():
        w = weights[name]
        if w.dtype not in DTYPES:
            return f"weight '{name}' has dtype {w.dtype}, not a float"
        if tuple(w.shape) != shape:
            return f"weight '{name}' has shape {tuple(w.shape)}, its architecture needs {shape}"
    return None
