"""Rollouts for `sweep.train.ppo`: which episodes an update (or an evaluation of the policy's mean)
runs, and the steps, rewards and metrics read back from their trajectories."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from debate.episode import Agent
from debate.policies.observation import Observation
from debate.rewards import TERMS, reward_terms, step_rewards
from debate.routers.base import Router
from debate.spec import derive_seed, stable_hash
from debate.trajectory import EpisodeResult
from sweep.run.plan import EpisodeTask, Group, build_plan
from sweep.run.scheduler import RunStats, run_tasks
from sweep.train.config import TrainSetup


@dataclass
class Batch:
    """One update's steps, episode after episode (`ends` marks each episode's last round)."""

    agents: torch.Tensor
    pairs: torch.Tensor
    glob: torch.Tensor
    actions: torch.Tensor
    logp: torch.Tensor
    values: torch.Tensor
    rewards: np.ndarray
    acted: torch.Tensor
    ends: np.ndarray
    metrics: dict[str, float] = field(default_factory=dict)
    masks: torch.Tensor | None = None  # which parts of each action count (all, where None)
    episode: np.ndarray | None = None  # each step's episode, an index into the results


def keep_into(finished: dict[str, EpisodeResult]) -> Callable[[EpisodeTask, EpisodeResult, Any], None]:
    """The scheduler's episode callback for rollouts: keep each result by episode id."""

    def keep(task: EpisodeTask, result: EpisodeResult, diagnostics: Any) -> None:
        finished[task.episode_id] = result

    return keep


def training_items(setup: TrainSetup) -> list[tuple[Group, Any]]:
    """Every (dataset group, sample) of the base sweep's training datasets, under its first seed."""
    plan = build_plan(setup.base)
    first = setup.base.seeds[0]
    return [(t.group, t.sample) for t in plan.tasks if t.group.seed == first]


def rollout_tasks(
    setup: TrainSetup,
    items: list[tuple[Group, Any]],
    router: Router,
    tag: Any,
    size: int,
    rng: np.random.Generator,
    repeats: int = 1,
) -> list[EpisodeTask]:
    """`size` episodes: items drawn from `rng`, each with its own seed (from `tag` and its index),
    routed by `router`; with `repeats` > 1, size / repeats items, each run `repeats` times in a row."""
    if repeats > 1:
        count = size // repeats
        drawn = rng.choice(len(items), size=count, replace=count > len(items))
        picks = np.repeat(drawn, repeats)
    else:
        picks = rng.choice(len(items), size=size, replace=size > len(items))
    method = dataclasses.replace(setup.method, router=router)
    tasks = []
    for j, i in enumerate(picks):
        group, sample = items[int(i)]
        seed = derive_seed("train", setup.seed, tag, j)  # the algorithm's own seed, in the fingerprint
        key = stable_hash({"train": setup.fingerprint(), "tag": tag, "episode": j})
        tasks.append(EpisodeTask(key, dataclasses.replace(group, key=key, method=method, seed=seed), sample))
    return tasks


async def run_rollouts(
    tasks: list[EpisodeTask],
    agents: Mapping[str, Agent],
    concurrency: int,
    on_progress: Callable[[RunStats], None] = lambda s: None,
    kept: list[int] | None = None,
) -> list[EpisodeResult]:
    """Run the episodes; their results in task order (a failed episode is left out; `kept`, if
    given, receives the indices of the tasks that finished). Fails when more than half of them
    failed. `on_progress` sees the totals as each episode finishes."""
    finished: dict[str, EpisodeResult] = {}
    stats = await run_tasks(tasks, agents, keep_into(finished), concurrency, on_progress)
    if len(finished) < max(1, len(tasks) // 2):
        raise RuntimeError(f"{len(stats.failures)} of {len(tasks)} episodes failed: {stats.failures[0]}")
    done = [j for j, t in enumerate(tasks) if t.episode_id in finished]
    if kept is not None:
        kept.extend(done)
    return [finished[tasks[j].episode_id] for j in done]


def collect(setup: TrainSetup, results: list[EpisodeResult]) -> Batch:
    """The steps of finished episodes as tensors, with their rewards and the rollout's metrics."""
    weights, budget = setup.rewards, int(setup.method.router.budget)  # type: ignore[union-attr]
    obs, actions, logp, values, rewards, acted, ends, entropy = [], [], [], [], [], [], [], []
    masks, episode = [], []
    totals = {name: 0.0 for name in TERMS}
    used, edges = 0, 0
    for e, res in enumerate(results):
        terms = reward_terms(res.trajectory, weights, budget)
        for name in TERMS:
            totals[name] += float(terms[name].sum())
        steps = res.trajectory[1:]
        for k, (rec, r) in enumerate(zip(steps, step_rewards(terms), strict=True)):
            assert rec.decision is not None
            record = rec.decision.record
            obs.append(Observation.from_record(record["obs"]))
            actions.append(np.asarray(record["action"], dtype=np.float32))
            masks.append(np.asarray(record.get("mask", np.ones_like(actions[-1])), dtype=np.float32))
            episode.append(e)
            logp.append(record["logp"])
            values.append(record["value"])
            entropy.append(record["entropy"])
            acted.append(bool(record["acted"]))
            rewards.append(float(r))
            ends.append(k == len(steps) - 1)
            used += len(rec.active)
            edges += len(rec.decision.graph.edges)
    n_ep = max(1, len(results))
    metrics = {
        "episodes": float(len(results)),
        "return": sum(totals.values()) / n_ep,
        **{f"reward.{name}": v / n_ep for name, v in totals.items()},
        "accuracy": sum(r.correct for r in results) / n_ep,
        "accuracy_round0": sum(r.round_correct[0] for r in results) / n_ep,
        "tokens_per_task": sum(r.prompt_tokens + r.completion_tokens for r in results) / n_ep,
        "calls_per_task": sum(r.calls for r in results) / n_ep,
        "activations": used / n_ep,
        "budget": float(budget),
        "activations_per_budget": used / n_ep / budget if budget else 0.0,
        "visible_edges_per_round": edges / max(1, len(obs)),
        "entropy": float(np.mean(entropy)) if entropy else 0.0,
    }
    t = torch.from_numpy
    return Batch(
        t(np.stack([o.agents for o in obs])),
        t(np.stack([o.pairs for o in obs])),
        t(np.stack([o.glob for o in obs])),
        t(np.stack(actions)),
        torch.tensor(logp, dtype=torch.float32),
        torch.tensor(values, dtype=torch.float32),
        np.asarray(rewards),
        torch.tensor(acted),
        np.asarray(ends),
        metrics,
        t(np.stack(masks)),
        np.asarray(episode),
    )
