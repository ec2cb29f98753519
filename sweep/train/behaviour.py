"""CPP's behaviour embeddings and output statistics, from validation questions (§3.1.1, App. C):
every seat of the team answers `behaviour_items` questions on its own (round 0, the same calls — and
call seeds — as a debate's first round on those items, so the call cache serves them); each seat's
replies, read as the pruning policy reads responses (headed by their author or not, as the method's
`author_tag` says), are encoded and averaged into its initial
behaviour embedding, and their completion-token counts are the lengths truncation takes quantiles of."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from data.benchmarks.registry import load_benchmark
from data.grading.graders import grader_for
from debate.encoders import encoder_for
from debate.episode import Agent, run_episode
from debate.methods import build_method
from debate.routers.cpp import CppRouter, response_text
from debate.state import next_view
from sweep.config.sweep import ConfigError
from sweep.train.config import TrainSetup
from sweep.train.pg_config import CppPolicyConfig


def seats(setup: TrainSetup, agents: Mapping[str, Agent]) -> list[Agent]:
    """The base sweep's team as agents, adversarial seats marked."""
    adversaries = setup.base.adversaries()
    return [
        replace(agents[m], adversarial=True) if i in adversaries else agents[m]
        for i, m in enumerate(setup.base.team())
    ]


def author_tag(setup: TrainSetup) -> bool:
    """Whether the trained policy reads responses headed by their author: the method's `author_tag`
    (null: true, as every policy before the option)."""
    router = setup.method.router
    return not isinstance(router, CppRouter) or router.author_tag is not False


async def behaviour(
    setup: TrainSetup, agents: Mapping[str, Agent]
) -> tuple[np.ndarray, tuple[tuple[int, ...], ...]]:
    """(initial behaviour embeddings (n, dim), each seat's validation output lengths)."""
    cfg, ds = setup.section("cpp", CppPolicyConfig), setup.base.datasets[0]
    split = cfg.behaviour_split or ds.split
    try:
        samples = load_benchmark(ds.name, split, cfg.behaviour_items, cfg.behaviour_offset, ds.seed, ds.path)
    except (FileNotFoundError, KeyError, ValueError) as e:
        raise ConfigError(f"cpp.behaviour_split ({ds.name}/{split}): {e}") from None
    team = seats(setup, agents)
    style = setup.method.prompt_style
    answer = build_method(
        "cot_sc", {"m": len(team), "prompt_style": style}
    )  # round 0 only, one call per seat
    seed, sem = setup.base.seeds[0], asyncio.Semaphore(setup.base.concurrency)
    tag = author_tag(setup)

    async def one(sample: object) -> list[tuple[int, str, int]]:
        async with sem:
            res = await run_episode(answer, team, sample, grader_for(sample), seed, 0, ds.name)  # type: ignore[arg-type]
        return [
            (t.agent, response_text(next_view(None, t), t.agent, tag), t.completion_tokens) for t in res.turns
        ]

    rows = [r for rs in await asyncio.gather(*(one(s) for s in samples)) for r in rs]
    encoder = encoder_for(cfg.encoder)
    vectors = await encoder.embed([text for _, text, _ in rows])
    n = len(team)
    embeddings = np.zeros((n, encoder.dim), np.float32)
    for i in range(n):
        mine = [k for k, (agent, _, _) in enumerate(rows) if agent == i]
        embeddings[i] = vectors[mine].mean(axis=0)
    lengths = tuple(tuple(int(tok) for agent, _, tok in rows if agent == i) for i in range(n))
    return embeddings, lengths
