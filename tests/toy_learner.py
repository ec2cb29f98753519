"""A toy learned router and its trainer, from this file alone: what a third learned router brings
(CONTRIBUTING.md, "Add a trainer"), in miniature. Its router, network, reward, config section and
program live here; `register()` makes the three registrations a real one makes in three other files:

1. the router as a method (`debate.registry.method`; a real router's file is imported by
   `debate/routers/__init__.py`);
2. the trainer in the trainers' table (`sweep.train.trainers.register`; a real trainer's file is in
   `TRAINERS`' builtins);
3. its network's parameter shapes (`debate.policies.shapes.NETWORKS`), which every checkpoint it
   writes is checked against when read back (a resume, an evaluation).

The router: every agent sees each other agent with probability `keep`. Its "network" is one logit
(keep = sigmoid(logit)); the trainer ("hill") nudges it up when an update's mean reward beats its
`baseline` and down when not — no policy gradient, only the machinery: the real rollouts
(`sweep.train.rollouts`), the real state (`sweep.train.state`: checkpoints, resume, fingerprints).
`tests/test_toy_learner.py` drives it through `load_train` and `sweep train`."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console

from debate.decision import Decision
from debate.episode import Agent
from debate.graph import Graph
from debate.policies import checkpoint as ckpt
from debate.policies.shapes import NETWORKS, Network
from debate.registry import METHODS, method
from debate.state import DebateState
from debate.trajectory import EpisodeResult
from sweep.train import limits as lim
from sweep.train.trainers import TRAINERS, Trainer
from sweep.train.trainers import register as register_trainer

METHOD, ALGORITHM, KIND = "toy", "hill", "toy"


# --- the router (a real one: debate/routers/<name>.py) ------------------------------------------


@dataclass(frozen=True)
class ToyRouter:
    """Each ordered pair of agents is an edge with probability `chance`, drawn from the round's rng:
    `keep`, or the trained one of `checkpoint` (a policy `sweep train` wrote for it)."""

    keep: float = 0.5
    checkpoint: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= self.keep <= 1.0:
            raise ValueError(f"toy: keep must be in [0, 1], got {self.keep}")

    @staticmethod
    def identity_of(args: dict[str, Any]) -> dict[str, Any]:
        """Episode ids hash the checkpoint's content, not its path (`debate.registry`)."""
        ref = args.get("checkpoint")
        return {**args, "checkpoint": f"sha:{ckpt.load(ref, KIND).digest}"} if ref else args

    @property
    def chance(self) -> float:
        if not self.checkpoint:
            return self.keep
        return 1 / (1 + math.exp(-float(ckpt.load(self.checkpoint, KIND).weights["logit"][0])))

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        n, chance = state.n, self.chance
        edges = [(s, t) for s in range(n) for t in range(n) if s != t and rng.random() < chance]
        return Decision(Graph(n, edges), record={"keep": chance, "edges": len(edges)})


# --- its network's shapes (a real one: an entry in debate/policies/shapes.py) --------------------


def _shapes(arch: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    if arch != {"kind": KIND}:
        raise ValueError(f"unexpected architecture fields {sorted(set(arch) - {'kind'})}")
    return {"logit": (1,)}


NETWORK = Network(sizes=(), shapes=_shapes)


class ToyArch:
    """What `sweep.train.state.save` asks of a network's `arch`."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND}


# --- the trainer's own config and reward (a real one: sweep/train/<algorithm>_config.py) ---------


@dataclass(frozen=True)
class ToyReward:
    """An episode's reward: `accuracy` if it ends right, less `edge_cost` per edge of every round."""

    accuracy: float = 1.0
    edge_cost: float = 0.01

    def __post_init__(self) -> None:
        if self.edge_cost < 0:
            raise ValueError(f"edge_cost must be >= 0, got {self.edge_cost}")


class HillConfig(BaseModel):
    """The `hill:` section: its own, so it holds `updates` and `seed`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    updates: lim.Updates = 2  # strict and bounded as every trainer's counts (sweep.train.limits)
    episodes_per_update: lim.Episodes = 4
    lr: lim.Finite = Field(0.5, gt=0, le=10)
    baseline: lim.Finite = Field(0.5, ge=-10, le=10)
    seed: lim.Seed = 0


TRAINER = Trainer(
    method=METHOD,
    name=ALGORITHM,
    reward=ToyReward,
    sections={ALGORITHM: HillConfig},
    module=__name__,  # this module's `run`
    tuned=("lr",),
)


def register() -> None:
    """The three registrations (see the module docstring)."""
    method(METHOD, summary="toy: each pair an edge with probability keep (tests/toy_learner.py)")(ToyRouter)
    register_trainer(TRAINER)
    NETWORKS[KIND] = NETWORK


def unregister() -> None:
    """Undo `register()` (the registries are mappings)."""
    for registry, name in ((METHODS, METHOD), (TRAINERS, METHOD), (NETWORKS, KIND)):
        registry.pop(name, None)


# --- the program (a real one: sweep/train/<algorithm>.py) ---------------------------------------


def reward_of(result: EpisodeResult, reward: ToyReward) -> float:
    edges = sum(len(rec.decision.graph.edges) for rec in result.trajectory[1:] if rec.decision is not None)
    return reward.accuracy * float(result.correct) - reward.edge_cost * edges


async def run(
    setup: Any,
    agents: Mapping[str, Agent],
    tracker: Any,
    console: Console,
    on_update: Callable[[list[dict[str, float]]], bool] | None,
    progress: Any,
) -> Any:
    """The hill trainer's program, from a fresh logit or the last update's state."""
    import torch

    from sweep.train import state
    from sweep.train.rollouts import rollout_tasks, run_rollouts, training_items
    from sweep.train.run import TrainOutcome

    class ToyNet(torch.nn.Module):
        arch = ToyArch()

        def __init__(self) -> None:
            super().__init__()
            self.logit = torch.nn.Parameter(torch.zeros(1))

    cfg = setup.section(ALGORITHM, HillConfig)
    net = ToyNet()
    optimizer = torch.optim.SGD(net.parameters(), lr=cfg.lr)
    rng = np.random.default_rng([cfg.seed, 0x70])
    history: list[dict[str, float]] = []
    latest: tuple[Path, str] | None = None
    resume = state.load(setup)
    if resume is not None:
        loaded = state.restore(resume, setup.out)  # checked against NETWORKS[KIND]
        net.load_state_dict({k: torch.from_numpy(v) for k, v in loaded.weights.items()})
        optimizer.load_state_dict(resume.optimizer)
        rng.bit_generator.state = resume.rng
        history = resume.history
        latest = (state.checkpoint_dir(setup.out) / resume.policy_file, loaded.digest)
        console.print(f"resumed from update {resume.update} ({resume.policy_file})")
    tracker.sync(history)
    start, items = len(history), training_items(setup)
    progress.begin(start + 1, cfg.episodes_per_update, setup.base.rounds, len(setup.base.team()))
    for update in range(start + 1, cfg.updates + 1):
        t0 = time.perf_counter()
        keep = float(torch.sigmoid(net.logit.detach())[0])
        router = dataclasses.replace(setup.method.router, keep=keep)
        tasks = rollout_tasks(setup, items, router, update, cfg.episodes_per_update, rng)
        progress.phase_start(f"update {update}/{cfg.updates}: rollouts", len(tasks))
        results = await run_rollouts(tasks, agents, setup.base.concurrency, progress.on_progress)
        mean = float(np.mean([reward_of(r, setup.rewards) for r in results]))
        loss = -(mean - cfg.baseline) * net.logit.sum()  # up when the reward beats the baseline
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metrics = {
            "update": float(update),
            "return": mean,
            "accuracy": sum(r.correct for r in results) / max(1, len(results)),
            "tokens_per_task": sum(r.prompt_tokens + r.completion_tokens for r in results)
            / max(1, len(results)),
            "keep": keep,
        }
        metrics["seconds"] = time.perf_counter() - t0
        history.append(metrics)
        latest = state.save(setup, update, net, optimizer, rng, history)
        tracker.log_updates([metrics])
        progress.say(f"update {update}/{cfg.updates}: keep {keep:.3f} return {mean:+.3f}")
        if on_update is not None and on_update(history):
            break
    if latest is None:
        latest = state.save(setup, 0, net, optimizer, rng, history)
    final = state.finish(setup.out, latest[0])
    tracker.finish(final, None)
    return TrainOutcome(final, latest[1], history, start, tracker.run_id, None)
