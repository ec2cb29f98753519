"""PPO for a learned router (RUMAD), in the CleanRL manner: one file, read top to bottom.

A step is one debate round of one episode: the policy observed the debate, set the round's edge
weights, and the reward (`debate.rewards`, a pure function of the trajectory) scored the round.
Rollouts are ordinary episodes, run by `sweep.scheduler.run_tasks` on the agents it is given (the
engine pool of `sweep run`, or in-process backends), at most `concurrency` in flight. The driver alone
updates the policy, between rollout batches. Per update:

1. draw `episodes_per_update` training items (each with its own episode seed) and run them with the
   policy sampling: `debate.routers.rumad.PolicyRouter` around the live network;
2. read every round's decision record (observation, action as drawn, log-probability, value) and
   reward back from each trajectory;
3. GAE(gamma, lambda) per episode; the last round is terminal;
4. `epochs` passes of clipped PPO over shuffled minibatches: the policy loss on the rounds where the
   policy could act (budget left), the value loss on every round, minus an entropy bonus;
5. record the state (`sweep.train.state`: policy file, optimizer, rng, metrics), then log the
   update's metrics to MLflow — so a training killed at any moment resumes from its last update.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.console import Console

from debate.episode import Agent
from debate.policies.actor_critic import ActorCritic, PolicyArch, build, load_weights
from debate.policies.controller import Controller, one_thread
from debate.policies.observation import Observation
from debate.rewards import TERMS, reward_terms, step_rewards
from debate.routers.rumad import PolicyRouter
from debate.spec import derive_seed, stable_hash
from debate.trajectory import EpisodeResult
from sweep.plan import EpisodeTask, Group, build_plan
from sweep.scheduler import run_tasks
from sweep.train import state
from sweep.train.config import TrainSetup
from sweep.train.tracking import NullTrainTracker, plot_curves


@dataclass
class TrainOutcome:
    policy: Path  # the final policy file
    digest: str  # its content hash
    history: list[dict[str, float]]
    resumed_from: int  # updates already done when this run started
    run_id: str | None = None


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
    setup: TrainSetup, items: list[tuple[Group, Any]], router: PolicyRouter, update: int, rng: np.random.Generator
) -> list[EpisodeTask]:
    """This update's episodes: items drawn from `rng`, each with its own seed, routed by `router`."""
    size = setup.cfg.ppo.episodes_per_update
    picks = rng.choice(len(items), size=size, replace=size > len(items))
    method = dataclasses.replace(setup.method, router=router)
    tasks = []
    for j, i in enumerate(picks):
        group, sample = items[int(i)]
        seed = derive_seed("train", setup.cfg.ppo.seed, update, j)
        key = stable_hash({"train": setup.fingerprint(), "update": update, "episode": j})
        tasks.append(EpisodeTask(key, dataclasses.replace(group, key=key, method=method, seed=seed), sample))
    return tasks


def collect(setup: TrainSetup, results: list[EpisodeResult]) -> Batch:
    """The steps of finished episodes as tensors, with their rewards and the rollout's metrics."""
    weights, budget = setup.rewards, int(setup.method.router.budget)  # type: ignore[union-attr]
    obs, actions, logp, values, rewards, acted, ends, entropy = [], [], [], [], [], [], [], []
    totals = {name: 0.0 for name in TERMS}
    used, edges = 0, 0
    for res in results:
        terms = reward_terms(res.trajectory, weights, budget)
        for name in TERMS:
            totals[name] += float(terms[name].sum())
        steps = res.trajectory[1:]
        for k, (rec, r) in enumerate(zip(steps, step_rewards(terms), strict=True)):
            assert rec.decision is not None
            record = rec.decision.record
            obs.append(Observation.from_record(record["obs"]))
            actions.append(np.asarray(record["action"], dtype=np.float32))
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
        t(np.stack([o.agents for o in obs])), t(np.stack([o.pairs for o in obs])), t(np.stack([o.glob for o in obs])),
        t(np.stack(actions)), torch.tensor(logp, dtype=torch.float32), torch.tensor(values, dtype=torch.float32),
        np.asarray(rewards), torch.tensor(acted), np.asarray(ends), metrics,
    )  # fmt: skip


def gae(rewards: np.ndarray, values: np.ndarray, ends: np.ndarray, gamma: float, lam: float) -> np.ndarray:
    """Generalised advantage estimates; an episode's last step is terminal (no bootstrap)."""
    adv = np.zeros(len(rewards))
    last = 0.0
    for t in reversed(range(len(rewards))):
        going = 0.0 if ends[t] else 1.0
        next_value = values[t + 1] if going else 0.0
        delta = rewards[t] + gamma * next_value - values[t]
        last = delta + gamma * lam * going * last
        adv[t] = last
    return adv


def ppo_update(
    module: ActorCritic, optimizer: torch.optim.Optimizer, batch: Batch, setup: TrainSetup, rng: np.random.Generator
) -> dict[str, float]:
    """Clipped PPO epochs over the batch; returns the losses, approx-KL and clip fraction."""
    cfg = setup.cfg.ppo
    values = batch.values.numpy().astype(np.float64)
    advantages = torch.tensor(gae(batch.rewards, values, batch.ends, cfg.gamma, cfg.gae_lambda), dtype=torch.float32)
    returns = advantages + batch.values
    size = len(batch.rewards)
    mb = max(1, size // cfg.minibatches)
    kls, clips, pg_losses, v_losses = [], [], [], []
    for _ in range(cfg.epochs):
        order = rng.permutation(size)
        for start in range(0, size, mb):
            idx = torch.from_numpy(order[start : start + mb])
            logp, entropy, value = module.evaluate(batch.agents[idx], batch.pairs[idx], batch.glob[idx], batch.actions[idx])
            log_ratio = logp - batch.logp[idx]
            ratio = log_ratio.exp()
            acted = batch.acted[idx].float()
            with torch.no_grad():  # http://joschu.net/blog/kl-approx.html
                kls.append(float(((ratio - 1) - log_ratio).mul(acted).sum() / acted.sum().clamp(min=1)))
                clips.append(float(((ratio - 1).abs() > cfg.clip).float().mul(acted).sum() / acted.sum().clamp(min=1)))
            adv = advantages[idx]
            if cfg.norm_adv and acted.sum() > 1:
                chosen = adv[acted > 0]
                adv = (adv - chosen.mean()) / (chosen.std() + 1e-8)
            pg = torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip, 1 + cfg.clip))
            pg_loss = (pg * acted).sum() / acted.sum().clamp(min=1)
            v_loss = 0.5 * ((value - returns[idx]) ** 2).mean()
            ent = (entropy * acted).sum() / acted.sum().clamp(min=1)
            loss = pg_loss - cfg.entropy_coef * ent + cfg.value_coef * v_loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), cfg.max_grad_norm)
            optimizer.step()
            pg_losses.append(float(pg_loss.detach()))
            v_losses.append(float(v_loss.detach()))
        if cfg.target_kl is not None and kls[-1] > cfg.target_kl:
            break
    var = float(np.var(returns.numpy()))
    explained = 1 - float(np.var(returns.numpy() - values)) / var if var > 0 else 0.0
    out = {
        "approx_kl": float(np.mean(kls)), "clip_frac": float(np.mean(clips)), "policy_loss": float(np.mean(pg_losses)),
        "value_loss": float(np.mean(v_losses)), "explained_variance": explained,
    }  # fmt: skip
    if hasattr(module, "log_std"):
        out["log_std"] = float(module.log_std.detach())
    return out


def train(
    setup: TrainSetup,
    agents: Mapping[str, Agent],
    tracker: Any = None,
    console: Console | None = None,
    on_update: Callable[[list[dict[str, float]]], bool] | None = None,
) -> TrainOutcome:
    """Train (or resume training) the policy on `agents`; after each update `on_update` sees every
    update's metrics so far and may return True to stop early (a study's pruner)."""
    return asyncio.run(train_async(setup, agents, tracker, console, on_update))


async def train_async(
    setup: TrainSetup, agents: Mapping[str, Agent], tracker: Any = None, console: Console | None = None,
    on_update: Callable[[list[dict[str, float]]], bool] | None = None,
) -> TrainOutcome:  # fmt: skip
    """`train` inside a running event loop (a study's trial)."""
    tracker, console = tracker or NullTrainTracker(), console or Console(stderr=True)
    one_thread()
    cfg = setup.cfg.ppo
    arch = PolicyArch(setup.cfg.policy.hidden, setup.cfg.policy.head, setup.cfg.policy.log_std_init, setup.base.rounds)
    module = build(arch, cfg.seed)
    optimizer = torch.optim.Adam(module.parameters(), lr=cfg.lr, eps=1e-5)
    rng = np.random.default_rng([cfg.seed, 0x7E])
    history: list[dict[str, float]] = []
    latest: tuple[Path, str] | None = None
    resume = state.load(setup)
    if resume is not None:
        loaded = state.restore(resume, setup.out)
        load_weights(module, loaded.weights)
        optimizer.load_state_dict(resume.optimizer)
        rng.bit_generator.state = resume.rng
        history, latest = resume.history, (state.checkpoint_dir(setup.out) / resume.policy_file, loaded.digest)
        console.print(f"resumed from update {resume.update} ({resume.policy_file})")
    tracker.sync(history)
    start = len(history)
    items = training_items(setup)
    params = setup.method.router
    for update in range(start + 1, cfg.updates + 1):
        t0 = time.perf_counter()
        router = PolicyRouter(params, Controller(module, f"training-u{update}"), sample=True)  # type: ignore[arg-type]
        tasks = rollout_tasks(setup, items, router, update, rng)
        finished: dict[str, EpisodeResult] = {}
        stats = await run_tasks(tasks, agents, keep_into(finished), setup.base.concurrency)
        if len(finished) < max(1, len(tasks) // 2):
            raise RuntimeError(f"update {update}: {len(stats.failures)} of {len(tasks)} episodes failed: {stats.failures[0]}")
        batch = collect(setup, [finished[t.episode_id] for t in tasks if t.episode_id in finished])
        losses = ppo_update(module, optimizer, batch, setup, rng)
        metrics = {"update": float(update), **batch.metrics, **losses, "failures": float(len(stats.failures))}
        metrics["seconds"] = time.perf_counter() - t0
        history.append(metrics)
        latest = state.save(setup, update, module, optimizer, rng, history)
        tracker.log_updates([metrics])
        if update % setup.cfg.checkpoint_every == 0:
            tracker.log_checkpoint(latest[0])
        console.print(
            f"update {update}/{cfg.updates}: return {metrics['return']:+.3f}  accuracy {metrics['accuracy']:.3f}  "
            f"tokens/task {metrics['tokens_per_task']:.0f}  activations {metrics['activations']:.1f}/{metrics['budget']:.0f}  "
            f"kl {metrics['approx_kl']:.4f}",
            highlight=False,
        )
        if on_update is not None and on_update(history):
            break
    if latest is None:  # updates: 0 to do and nothing recorded: record the initial network
        latest = state.save(setup, 0, module, optimizer, rng, history)
    final = state.finish(setup.out, latest[0])
    curves = plot_curves(history, setup.out / "plots" / "training_curves.png", setup.cfg.name) if history else None
    tracker.finish(final, curves)
    return TrainOutcome(final, latest[1], history, start, tracker.run_id)
