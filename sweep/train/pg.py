"""CPP's on-policy policy gradient (§3.2), in the CleanRL manner: one file, read top to bottom.

An action is one keep/prune decision: agent i, in debate round t, on the k-th response of its order.
Rollouts are ordinary episodes, run by `sweep.run.scheduler.run_tasks` on the agents it is given (the
engine pool of `sweep run`, or in-process backends), at most `concurrency` in flight, routed by
`debate.routers.cpp.CppPolicyRouter` around the live network (sampling every decision from the
episode's router rng). The driver alone updates the network. Before the first update, the behaviour
embeddings are initialised from each seat's encoded validation replies (`sweep.train.behaviour`),
whose lengths the checkpoint keeps for truncation. Per update u:

1. k_u = `pg.first_stage_k` for the first `pg.first_stage_updates` updates, then `reward.k` (the
   two-stage schedule); the entropy coefficient is `entropy_coef * entropy_decay**(u - 1)`;
2. draw `episodes_per_update` training items (each with its own episode seed) and run them (with
   `pg.group_size` > 1, episodes_per_update / group_size items, each run group_size times);
3. read every action back from the decision records (agent, query and candidate embeddings, kept;
   `sweep.train.pg_update.collect`), score it with Table 1 and accumulate its return over appendix
   A's dependencies (`debate.cpp_reward.returns`, a pure function of the trajectory; with
   `pg.action_states`, of the states after every action too, which `debate.action_states` measures
   after the episodes);
4. the policy step (`sweep.train.pg_update`): by default one gradient step on
   -mean(G * log p(a)) - c_u * mean(H(p))  (with `norm_returns`, G less the batch's mean return of
   the same (round, position) — a baseline, ours: an early action gathers more dependents' rewards
   than a late one — scaled by the batch's std; with `pg.group_size` > 1, less the mean return of
   the same item's episodes at the same decision), gradients clipped at `max_grad_norm`; with
   `pg.clip` > 0, `pg.epochs` passes of `pg.minibatches` steps each on PPO's clipped surrogate;
5. record the state (`sweep.train.state`), then log the update's metrics to MLflow — so a training
   killed at any moment resumes from its last update.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.console import Console

from data.grading.graders import grader_for
from debate.action_states import Spend, action_correctness
from debate.episode import Agent
from debate.policies.fuseglu import Pruner, PruningNet, build, load_weights
from debate.policies.pruning import PruningArch
from debate.routers.cpp import CppPolicyRouter, CppRouter
from debate.trajectory import EpisodeResult
from sweep.run.plan import EpisodeTask
from sweep.train import state
from sweep.train.behaviour import author_tag, behaviour
from sweep.train.config import TrainSetup
from sweep.train.pg_config import CppPolicyConfig, PGConfig
from sweep.train.pg_update import Actions as Actions  # re-exported, as collect
from sweep.train.pg_update import collect as collect
from sweep.train.pg_update import pg_update
from sweep.train.progress import TrainProgress
from sweep.train.rollouts import rollout_tasks, run_rollouts, training_items
from sweep.train.run import TrainOutcome
from sweep.train.run import train as train  # re-exported: the one entry
from sweep.train.tracking import plot_curves


def stage_k(setup: TrainSetup, update: int) -> float:
    """The keep reward's k of update `update` (1-based): the two-stage schedule."""
    pg = setup.section("pg", PGConfig)
    return pg.first_stage_k if update <= pg.first_stage_updates else float(setup.rewards.k)


async def action_states(
    setup: TrainSetup,
    tasks: list[EpisodeTask],
    results: list[EpisodeResult],
    agents: Mapping[str, Agent],
    spend: Spend | None = None,
) -> list[np.ndarray] | None:
    """Each finished episode's states after every action (`debate.action_states`) when the training
    asks for them (`pg.action_states`), else None: the round's pair serves every action. The probes'
    calls, tokens and cost are added to `spend`."""
    if not setup.section("pg", PGConfig).action_states:
        return None
    gate = asyncio.Semaphore(max(1, setup.base.concurrency))

    async def one(task: EpisodeTask, res: EpisodeResult) -> np.ndarray:
        g = task.group
        async with gate:
            return await action_correctness(
                g.method,
                g.team(agents),
                task.sample,
                grader_for(task.sample),
                g.seed,
                g.dataset.name,
                res,
                spend,
            )

    return list(await asyncio.gather(*(one(t, r) for t, r in zip(tasks, results, strict=True))))


async def rollouts(
    setup: TrainSetup,
    tasks: list[EpisodeTask],
    agents: Mapping[str, Agent],
    on_progress: Callable[[Any], None],
    spend: Spend | None = None,
    kept: list[int] | None = None,
) -> tuple[list[EpisodeResult], list[np.ndarray] | None]:
    """The finished episodes of `tasks`, and their states after every action (`action_states`);
    `kept`, if given, receives the indices of the tasks that finished."""
    kept = [] if kept is None else kept
    results = await run_rollouts(tasks, agents, setup.base.concurrency, on_progress, kept)
    return results, await action_states(setup, [tasks[j] for j in kept], results, agents, spend)


def probe_metrics(spend: Spend, episodes: int) -> dict[str, float]:
    """What the action-state probes cost per rollout episode (outside the episodes' own figures)."""
    n = max(1, episodes)
    return {
        "probe_calls_per_task": spend.calls / n,
        "probe_tokens_per_task": (spend.prompt_tokens + spend.completion_tokens) / n,
        "probe_cost_per_task": spend.cost / n,
    }


async def run(
    setup: TrainSetup,
    agents: Mapping[str, Agent],
    tracker: Any,
    console: Console,
    on_update: Callable[[list[dict[str, float]]], bool] | None,
    progress: TrainProgress,
) -> TrainOutcome:
    """CPP's policy-gradient program, from a fresh network or the last update's state
    (`sweep.train.run` sets up the tracker, console and progress and awaits it)."""
    torch.set_num_threads(1)
    cfg, params = setup.section("pg", PGConfig), setup.method.router
    net_cfg = setup.section("cpp", CppPolicyConfig)
    assert isinstance(params, CppRouter)
    rng = np.random.default_rng([cfg.seed, 0xC99])
    history: list[dict[str, float]] = []
    latest: tuple[Path, str] | None = None
    resume = state.load(setup)
    if resume is not None:
        loaded = state.restore(resume, setup.out)
        net = PruningNet(PruningArch.from_dict(loaded.arch))
        load_weights(net, loaded.weights)
        rng.bit_generator.state = resume.rng
        history, latest = (
            resume.history,
            (state.checkpoint_dir(setup.out) / resume.policy_file, loaded.digest),
        )
        console.print(f"resumed from update {resume.update} ({resume.policy_file})")
    else:  # 0. behaviour embeddings and output lengths from the validation questions
        progress.say(f"behaviour embeddings: each seat answers {net_cfg.behaviour_items} validation items")
        progress.phase_start("behaviour embeddings", 0)
        embeddings, lengths = await behaviour(setup, agents)
        arch = PruningArch(
            len(lengths),
            embeddings.shape[1],
            net_cfg.hidden,
            net_cfg.encoder,
            tuple(setup.base.team()),
            lengths,
            author_tag=author_tag(setup),
            # the network's options (ours) are the config's added keys, by the same names
            **{name: getattr(net_cfg, name) for name in CppPolicyConfig.ADDED},
        )
        net = build(arch, cfg.seed, embeddings)
    optimizer = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    if resume is not None:
        optimizer.load_state_dict(resume.optimizer)
    tracker.sync(history)
    start, items = len(history), training_items(setup)
    progress.begin(start + 1, cfg.episodes_per_update, setup.base.rounds, len(setup.base.team()))
    for update in range(start + 1, cfg.updates + 1):
        t0 = time.perf_counter()
        k, ent_coef = stage_k(setup, update), cfg.entropy_coef * cfg.entropy_decay ** (update - 1)  # 1.
        router = CppPolicyRouter(params, Pruner(net, f"training-u{update}"), sample=True)
        group = cfg.group_size  # each drawn item runs `group` times in a row
        tasks = rollout_tasks(setup, items, router, update, cfg.episodes_per_update, rng, group)
        progress.phase_start(f"update {update}/{cfg.updates}: rollouts", len(tasks))
        spend, done = Spend(), list[int]()
        results, states = await rollouts(setup, tasks, agents, progress.on_progress, spend, done)  # 2.
        groups = np.asarray(done) // group if group > 1 else None
        batch = collect(results, dataclasses.replace(setup.rewards, k=k), states, groups)  # 3.
        losses = pg_update(net, optimizer, batch, setup, ent_coef, update)  # 4.
        metrics = {
            "update": float(update),
            "k": k,
            **batch.metrics,
            **({} if states is None else probe_metrics(spend, len(results))),
            **losses,
            "failures": float(len(tasks) - len(results)),
        }
        if setup.cfg.eval_every and update % setup.cfg.eval_every == 0:
            progress.phase_start(
                f"update {update}/{cfg.updates}: evaluating the policy", setup.cfg.eval_episodes
            )
            metrics |= await evaluate(setup, net, items, agents, update, progress.on_progress)
        metrics["seconds"] = time.perf_counter() - t0
        history.append(metrics)
        latest = state.save(setup, update, net, optimizer, rng, history)  # 5.
        tracker.log_updates([metrics])
        if update % setup.cfg.checkpoint_every == 0:
            tracker.log_checkpoint(latest[0])
        progress.say(f"{_line(metrics, cfg.updates)}  | {progress.updated(update, metrics['seconds'])}")
        if on_update is not None and on_update(history):
            break
    if latest is None:
        latest = state.save(setup, 0, net, optimizer, rng, history)
    final = state.finish(setup.out, latest[0])
    curves = (
        plot_curves(history, setup.out / "plots" / "training_curves.png", setup.cfg.name) if history else None
    )
    best = state.best_file(setup.out)
    tracker.finish(final, curves, extra=[best] if best.is_file() else [])
    return TrainOutcome(final, latest[1], history, start, tracker.run_id, best if best.is_file() else None)


async def evaluate(
    setup: TrainSetup,
    net: PruningNet,
    items: list[Any],
    agents: Mapping[str, Agent],
    update: int,
    on_progress: Callable[[Any], None] = lambda s: None,
) -> dict[str, float]:
    """The thresholded policy (what evaluation runs) on `eval_episodes` training items and seeds,
    the same at every evaluation, scored under the final reward (`reward.k`, whatever the stage), so
    evaluations compare across the schedule and the best one (by eval.return) is kept."""
    router = CppPolicyRouter(setup.method.router, Pruner(net, f"eval-u{update}"), sample=False)  # type: ignore[arg-type]
    fixed = np.random.default_rng([setup.seed, 0xE7A1])
    tasks = rollout_tasks(setup, items, router, "eval", setup.cfg.eval_episodes, fixed)
    results, states = await rollouts(setup, tasks, agents, on_progress)
    got = collect(results, setup.rewards, states).metrics
    return {
        f"eval.{key}": got[key]
        for key in ("return", "accuracy", "cost_per_task", "tokens_per_task", "kept_edges")
    }


def _line(m: dict[str, float], updates: int) -> str:
    """One console line per update."""
    line = (
        f"update {m['update']:.0f}/{updates}: return {m['return']:+.3f}  accuracy {m['accuracy']:.3f}  "
        f"cost/task {m['cost_per_task']:.5f}  kept {m['kept_edges']:.1f}  k {m['k']:+.2f}  entropy {m['entropy']:.3f}"
    )
    if "eval.return" in m:
        line += f"  | eval: return {m['eval.return']:+.3f} accuracy {m['eval.accuracy']:.3f} kept {m['eval.kept_edges']:.1f}"
    return line
