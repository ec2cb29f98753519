"""`sweep plan --estimate`: calls, tokens and GPU-hours of a sweep on a throughput profile (a batch
curve, `actors.batch_curve.BatchCurve`).

Calls are the plan's upper bound. Prompt tokens come from rendering a sample of the plan's episodes
with the real prompts, the simulated population standing in for the models (their replies are
shorter than a real model's, and peers' replies are quoted in later prompts, so debate rounds'
prompts are under-counted); completion tokens are the profile's mean reply per call (and
`max_tokens` as the bound). GPU-hours assume every replica saturated on requests of the mean size
(`BatchCurve.saturated`): a floor that a well-fed cluster approaches (bench/cluster_sim.py)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from actors.base import ChatRequest, Completion
from actors.batch_curve import BatchCurve
from actors.registry import build_backend
from sweep.config import ConfigError, SweepConfig
from sweep.plan import Plan, build_plan
from sweep.pool import build_agents
from sweep.scheduler import run_tasks

SAMPLE_PER_GROUP = 2  # episodes rendered per group


def load_curve(path: str | None) -> BatchCurve:
    """The profile at `path` (a YAML mapping of BatchCurve fields), or the default one."""
    if not path:
        return BatchCurve()
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--estimate: no throughput profile at {p} (a YAML mapping of batch-curve fields)")
    try:
        return BatchCurve.from_mapping(yaml.safe_load(p.read_text(encoding="utf-8")) or {})
    except (ValueError, TypeError, yaml.YAMLError) as e:
        raise ConfigError(f"--estimate {p}: {e}") from None


class _Counter:
    """A stand-in engine: the simulated population's replies; counts prompt characters per call."""

    def __init__(self, model: str) -> None:
        self.inner = build_backend("simulated", model, {})
        self.calls = 0
        self.chars = 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls += len(requests)
        self.chars += sum(len(m.content) for r in requests for m in r.messages)
        return list(await self.inner.generate(requests))


def estimate(cfg: SweepConfig, curve: BatchCurve, plan: Plan | None = None) -> dict[str, Any]:
    """The figures `sweep plan --estimate` prints."""
    plan = plan or build_plan(cfg)
    models = sorted({m for g in plan.groups for m in g.seats})
    counters = {m: _Counter(m) for m in models}
    agents = build_agents({m: cfg.models[m] for m in models}, counters, None)
    sample = [t for g in plan.groups for t in list(g.tasks())[:SAMPLE_PER_GROUP]]
    asyncio.run(run_tasks(sample, agents, lambda *a: None, 64))
    sampled_calls = sum(c.calls for c in counters.values())
    chars = sum(c.chars for c in counters.values())
    calls = plan.calls()
    prompt_per_call = math.ceil(chars * curve.tokens_per_char / max(1, sampled_calls))
    max_tokens = max(cfg.models[m].sampling.max_tokens for m in models)
    completion_per_call = min(curve.completion_tokens, max_tokens)
    rate = curve.saturated(prompt_per_call, completion_per_call)
    gpu_hours = calls / rate["requests_per_s"] / 3600.0
    return {
        "episodes": len(plan.tasks),
        "calls": calls,
        "prompt_tokens": calls * prompt_per_call,
        "completion_tokens": calls * completion_per_call,
        "completion_tokens_bound": calls * max_tokens,
        "prompt_tokens_per_call": prompt_per_call,
        "requests_per_s_per_gpu": rate["requests_per_s"],
        "gpu_hours": gpu_hours,
        "curve": curve.name,
    }


def estimate_lines(figures: dict[str, Any]) -> list[str]:
    f = figures
    return [
        f"estimate on {f['curve']}: {f['calls']:,} calls (upper bound) in {f['episodes']:,} episodes",
        f"  prompt tokens ~{f['prompt_tokens']:,} ({f['prompt_tokens_per_call']:,} per call, sampled; debate "
        "rounds under-counted: stand-in replies are short)",
        f"  completion tokens ~{f['completion_tokens']:,} (the profile's mean reply); at most "
        f"{f['completion_tokens_bound']:,} (max_tokens)",
        f"  GPU-hours ~{f['gpu_hours']:.2f} with every replica saturated "
        f"({f['requests_per_s_per_gpu']:.1f} requests/s per replica)",
    ]
