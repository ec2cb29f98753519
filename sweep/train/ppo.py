"""PPO for a learned router (RUMAD), in the CleanRL manner: one file, read top to bottom.

A step is one debate round of one episode: the policy observed the debate, set the round's edge
weights, and the reward (`debate.rewards`, a pure function of the trajectory) scored the round.
Rollouts are ordinary episodes, run by `sweep.run.scheduler.run_tasks` on the agents it is given (the
engine pool of `sweep run`, or in-process backends), at most `concurrency` in flight. The driver alone
updates the policy, between rollout batches. Per update:

1. draw `episodes_per_update` training items (each with its own episode seed) and run them with the
   policy sampling: `debate.routers.rumad.PolicyRouter` around the live network;
2. read every round's decision record (observation, action as drawn, log-probability, value) and
   reward back from each trajectory;
3. GAE(gamma, lambda) per episode, the last round terminal; or, with `advantage: group`, each step's
   discounted return-to-go less the mean over its item's episodes of theirs at that step;
4. `epochs` passes of clipped PPO over shuffled minibatches: the policy loss on the rounds where the
   policy could act (budget left), the value loss on every round, minus an entropy bonus;
5. record the state (`sweep.train.state`: policy file, optimizer, rng, metrics), then log the
   update's metrics to MLflow — so a training killed at any moment resumes from its last update.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.console import Console

from debate.episode import Agent
from debate.policies.actor_critic import ActorCritic, PolicyArch, build, load_weights
from debate.policies.controller import Controller, one_thread
from debate.routers.rumad import PolicyRouter
from sweep.train import state
from sweep.train.config import TrainSetup
from sweep.train.ppo_config import PolicyConfig, PPOConfig
from sweep.train.progress import TrainProgress
from sweep.train.rollouts import Batch, collect, rollout_tasks, run_rollouts, training_items
from sweep.train.run import TrainOutcome
from sweep.train.run import train as train  # re-exported: the one entry
from sweep.train.tracking import plot_curves


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


def returns_to_go(rewards: np.ndarray, ends: np.ndarray, gamma: float) -> np.ndarray:
    """Each step's discounted return to the end of its episode."""
    out = np.zeros(len(rewards))
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + (0.0 if ends[t] else gamma * running)
        out[t] = running
    return out


def group_advantages(returns: np.ndarray, episode: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """returns less the mean return of the same group's steps at the same step index (`groups`:
    each episode's group); a group of one episode gets 0."""
    step = np.zeros(len(returns), dtype=np.int64)
    for t in range(1, len(returns)):
        step[t] = step[t - 1] + 1 if episode[t] == episode[t - 1] else 0
    key = groups[episode] * 1_000_003 + step
    adv = np.zeros(len(returns))
    for k in np.unique(key):
        at = key == k
        adv[at] = returns[at] - returns[at].mean()
    return adv


def ppo_update(
    module: ActorCritic,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    setup: TrainSetup,
    rng: np.random.Generator,
    groups: np.ndarray | None = None,
) -> dict[str, float]:
    """Clipped PPO epochs over the batch; returns the losses, approx-KL and clip fraction. `groups`:
    each episode's item group (for `advantage: group`)."""
    cfg = setup.section("ppo", PPOConfig)
    values = batch.values.numpy().astype(np.float64)
    if cfg.advantage == "group":
        assert groups is not None and batch.episode is not None
        mc = returns_to_go(batch.rewards, batch.ends, cfg.gamma)
        advantages = torch.tensor(group_advantages(mc, batch.episode, groups), dtype=torch.float32)
        returns = torch.tensor(mc, dtype=torch.float32)
    else:
        advantages = torch.tensor(
            gae(batch.rewards, values, batch.ends, cfg.gamma, cfg.gae_lambda), dtype=torch.float32
        )
        returns = advantages + batch.values
    size = len(batch.rewards)
    mb = max(1, size // cfg.minibatches)
    kls, clips, pg_losses, v_losses = [], [], [], []
    for _ in range(cfg.epochs):
        order = rng.permutation(size)
        for start in range(0, size, mb):
            idx = torch.from_numpy(order[start : start + mb])
            mask = batch.masks[idx] if batch.masks is not None else None
            logp, entropy, value = module.evaluate(
                batch.agents[idx], batch.pairs[idx], batch.glob[idx], batch.actions[idx], mask
            )
            log_ratio = logp - batch.logp[idx]
            ratio = log_ratio.exp()
            acted = batch.acted[idx].float()
            with torch.no_grad():  # http://joschu.net/blog/kl-approx.html
                kls.append(float(((ratio - 1) - log_ratio).mul(acted).sum() / acted.sum().clamp(min=1)))
                clips.append(
                    float(((ratio - 1).abs() > cfg.clip).float().mul(acted).sum() / acted.sum().clamp(min=1))
                )
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
        "approx_kl": float(np.mean(kls)),
        "clip_frac": float(np.mean(clips)),
        "policy_loss": float(np.mean(pg_losses)),
        "value_loss": float(np.mean(v_losses)),
        "explained_variance": explained,
    }
    if hasattr(module, "log_std"):
        out["log_std"] = float(module.log_std.detach())
    return out


async def run(
    setup: TrainSetup,
    agents: Mapping[str, Agent],
    tracker: Any,
    console: Console,
    on_update: Callable[[list[dict[str, float]]], bool] | None,
    progress: TrainProgress,
) -> TrainOutcome:
    """RUMAD's PPO program, from a fresh network or the last update's state (`sweep.train.run` sets
    up the tracker, console and progress and awaits it)."""
    one_thread()
    cfg, policy = setup.section("ppo", PPOConfig), setup.section("policy", PolicyConfig)
    arch = PolicyArch(
        policy.hidden,
        policy.head,
        policy.log_std_init,
        setup.base.rounds,
        seats=policy.seats,
        critic=policy.critic,
    )
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
        history, latest = (
            resume.history,
            (state.checkpoint_dir(setup.out) / resume.policy_file, loaded.digest),
        )
        console.print(f"resumed from update {resume.update} ({resume.policy_file})")
    tracker.sync(history)
    start = len(history)
    items = training_items(setup)
    params = setup.method.router
    progress.begin(start + 1, cfg.episodes_per_update, setup.base.rounds, len(setup.base.team()))
    for update in range(start + 1, cfg.updates + 1):
        t0 = time.perf_counter()
        # 1. rollouts with the policy sampling
        router = PolicyRouter(params, Controller(module, f"training-u{update}"), sample=True)  # type: ignore[arg-type]
        group = cfg.group_size if cfg.advantage == "group" else 1
        tasks = rollout_tasks(setup, items, router, update, cfg.episodes_per_update, rng, group)
        progress.phase_start(f"update {update}/{cfg.updates}: rollouts", len(tasks))
        kept: list[int] = []
        results = await run_rollouts(tasks, agents, setup.base.concurrency, progress.on_progress, kept)
        # 2.-4. steps and rewards, advantages, clipped PPO epochs
        batch = collect(setup, results)
        losses = ppo_update(module, optimizer, batch, setup, rng, np.asarray(kept) // group)
        metrics = {
            "update": float(update),
            **batch.metrics,
            **losses,
            "failures": float(len(tasks) - len(results)),
        }
        # the policy's mean (what evaluation runs) on a fixed set of training items, now and then
        if setup.cfg.eval_every and update % setup.cfg.eval_every == 0:
            progress.phase_start(
                f"update {update}/{cfg.updates}: evaluating the mean policy", setup.cfg.eval_episodes
            )
            metrics |= await evaluate(setup, module, items, agents, update, progress.on_progress)
        metrics["seconds"] = time.perf_counter() - t0
        history.append(metrics)
        # 5. record, then log
        latest = state.save(setup, update, module, optimizer, rng, history)
        tracker.log_updates([metrics])
        if update % setup.cfg.checkpoint_every == 0:
            tracker.log_checkpoint(latest[0])
        progress.say(f"{_line(metrics, cfg.updates)}  | {progress.updated(update, metrics['seconds'])}")
        if on_update is not None and on_update(history):
            break
    if latest is None:  # updates: 0 to do and nothing recorded: record the initial network
        latest = state.save(setup, 0, module, optimizer, rng, history)
    final = state.finish(setup.out, latest[0])
    curves = (
        plot_curves(history, setup.out / "plots" / "training_curves.png", setup.cfg.name) if history else None
    )
    best = state.best_file(setup.out)
    tracker.finish(final, curves, extra=[best] if best.is_file() else [])
    return TrainOutcome(final, latest[1], history, start, tracker.run_id, best if best.is_file() else None)


async def evaluate(
    setup: TrainSetup,
    module: ActorCritic,
    items: list[Any],
    agents: Mapping[str, Agent],
    update: int,
    on_progress: Callable[[Any], None] = lambda s: None,
) -> dict[str, float]:
    """The policy's mean on `eval_episodes` training items and seeds, the same at every evaluation."""
    router = PolicyRouter(setup.method.router, Controller(module, f"eval-u{update}"), sample=False)  # type: ignore[arg-type]
    fixed = np.random.default_rng([setup.seed, 0xE7A1])
    tasks = rollout_tasks(setup, items, router, "eval", setup.cfg.eval_episodes, fixed)
    got = collect(setup, await run_rollouts(tasks, agents, setup.base.concurrency, on_progress)).metrics
    keys = (
        "return",
        "accuracy",
        "tokens_per_task",
        "activations",
        *(k for k in got if k.startswith("reward.")),
    )
    return {f"eval.{k}": got[k] for k in keys}


def _line(m: dict[str, float], updates: int) -> str:
    """One console line per update."""
    line = (
        f"update {m['update']:.0f}/{updates}: return {m['return']:+.3f}  accuracy {m['accuracy']:.3f}  "
        f"tokens/task {m['tokens_per_task']:.0f}  activations {m['activations']:.1f}/{m['budget']:.0f}  kl {m['approx_kl']:.4f}"
    )
    if "eval.return" in m:
        line += f"  | eval (mean policy): return {m['eval.return']:+.3f} accuracy {m['eval.accuracy']:.3f} activations {m['eval.activations']:.1f}"
    return line
