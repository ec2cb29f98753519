"""`sweep plan --estimate`: calls, tokens, wall time and (for GPU engines) GPU-hours of a sweep, each
model on the throughput profile of the engine the config names (`sweep.profiles`): llama_cpp on a
curve measured on a CPU, vLLM (and an OpenAI-compatible server) on the batch curve of one GPU, the
simulated engine on its own `latency_s`. `--estimate CURVE` puts every model on that profile instead.

Calls are the plan's upper bound, per model from its seats. Prompt tokens come from rendering a
sample of the plan's episodes with the real prompts, the simulated population standing in for the
models (their replies are shorter than a real model's, and peers' replies are quoted in later
prompts, so debate rounds' prompts are under-counted); completion tokens are the profile's mean reply
per call (and `max_tokens` as the bound). Wall time is the model calls' alone (no engine start):
- a CPU curve: the calls one after another at the rates measured with the model's instances
  (`replicas` × `n_parallel`) in flight, divided by them; CPU models share the machine, so theirs add;
- a batch curve: every replica saturated on requests of the mean size (`BatchCurve.saturated`), a
  floor that a well-fed cluster approaches (bench/cluster_sim.py); GPU-hours are replica-hours times
  the replica's GPUs;
- simulated: `latency_s` per batch (one batch per episode step), `concurrency` episodes at once.
Models on different engines run side by side: the sweep's wall time is the longest of theirs."""

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
from sweep.config.sweep import ConfigError, SweepConfig
from sweep.engines.pool import build_agents
from sweep.profiles import CpuCurve, Profile, engine_profile, load_profile
from sweep.run.plan import Plan, build_plan
from sweep.run.scheduler import run_tasks

SAMPLE_PER_GROUP = 2  # episodes rendered per group


def load_curve(path: str | None) -> Profile | None:
    """The profile at `path` (a YAML batch curve or CPU curve), or None: each engine's own."""
    if not path:
        return None
    p = Path(path)
    if not p.is_file():
        raise ConfigError(
            f"--estimate: no throughput profile at {p} (a YAML mapping of batch-curve fields, or a CPU "
            "curve as bench/cpu_model_curve.py writes it)"
        )
    try:
        return load_profile(p)
    except (ValueError, TypeError, OSError, yaml.YAMLError) as e:
        raise ConfigError(
            f"--estimate {p}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None


class _Counter:
    """A stand-in engine: the simulated population's replies; counts calls, prompt characters and
    the stand-in's completion tokens."""

    def __init__(self, model: str) -> None:
        self.inner = build_backend("simulated", model, {})
        self.calls = self.chars = self.completion = 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = list(await self.inner.generate(requests))
        self.calls += len(requests)
        self.chars += sum(len(m.content) for r in requests for m in r.messages)
        self.completion += sum(c.completion_tokens for c in out)
        return out


def _seat_load(plan: Plan, model: str) -> tuple[int, int, int]:
    """(calls, batches, longest episode in steps) of `model` over the plan: each seat makes one call
    per step (round 0, then each phase of each round), the model's seats of one step one batch."""
    calls = batches = longest = 0
    for g in plan.groups:
        seats = g.seats.count(model)
        if seats:
            steps = g.calls() // len(g.seats)
            calls += len(g.samples) * steps * seats
            batches += len(g.samples) * steps
            longest = max(longest, steps)
    return calls, batches, longest


def _model(cfg: SweepConfig, plan: Plan, m: str, c: _Counter, override: Profile | None) -> dict[str, Any]:
    spec = cfg.models[m]
    profile = override or engine_profile(spec.engine)
    calls, batches, longest = _seat_load(plan, m)
    tpc = profile.tokens_per_char if profile is not None else BatchCurve().tokens_per_char
    prompt = math.ceil(c.chars * tpc / max(1, c.calls))
    bound = spec.sampling.max_tokens
    mean_reply = (
        profile.completion_tokens if profile is not None else math.ceil(c.completion / max(1, c.calls))
    )
    completion = min(mean_reply, bound)
    row: dict[str, Any] = {
        "engine": spec.engine,
        "calls": calls,
        "prompt_tokens_per_call": prompt,
        "prompt_tokens": calls * prompt,
        "completion_tokens": calls * completion,
        "completion_tokens_bound": calls * bound,
        "gpu_hours": None,
        "cpu": False,
    }
    if isinstance(profile, CpuCurve):
        slots = spec.replicas * int(spec.args.get("n_parallel", 1))
        k = profile.level(slots)
        prompt_rate, completion_rate = profile.in_flight[k]
        wall = calls * profile.call_s(k, prompt, completion) / k
        how = f"{k} in flight at {prompt_rate:g} prompt + {completion_rate:g} completion tok/s each"
        load = profile.measured.get("load_avg_1m_before_after")
        if isinstance(load, list) and len(load) == 2:  # the machine it was measured on may have been busy
            how += f", measured at load {load[0]:g}-{load[1]:g} on {profile.measured.get('cpus', '?')} cores"
        if profile.model and (spec.model or m) != profile.model:
            how += f"; measured for {profile.model}, not {spec.model or m}"
        row.update(cpu=True, profile=profile.name, in_flight=k, wall_s=wall, how=how)
    elif isinstance(profile, BatchCurve):
        rate = profile.saturated(prompt, completion)["requests_per_s"]
        replica_hours = calls / rate / 3600.0
        gpus = max(1.0, spec.num_gpus)  # a replica is at least one GPU: the curve models one
        row.update(
            profile=profile.name,
            requests_per_s=rate,
            wall_s=replica_hours * 3600.0 / spec.replicas,
            gpu_hours=replica_hours * gpus,
            how=f"every replica saturated at {rate:.1f} requests/s, {spec.replicas} replica(s)",
        )
    else:
        latency = float(spec.args.get("latency_s", 0.0))
        in_flight = max(1, min(cfg.concurrency, len(plan.tasks)))
        wall = latency * max(longest, batches / in_flight)
        row.update(profile="", wall_s=wall, how=f"latency_s {latency:g} per batch")
    return row


def estimate(cfg: SweepConfig, curve: Profile | None = None, plan: Plan | None = None) -> dict[str, Any]:
    """The figures `sweep plan --estimate` prints; `curve` puts every model on that profile."""
    plan = plan or build_plan(cfg)
    models = sorted({m for g in plan.groups for m in g.seats})
    counters = {m: _Counter(m) for m in models}
    agents = build_agents({m: cfg.models[m] for m in models}, counters, None)
    sample = [t for g in plan.groups for t in list(g.tasks())[:SAMPLE_PER_GROUP]]
    asyncio.run(run_tasks(sample, agents, lambda *a: None, 64))
    rows = {m: _model(cfg, plan, m, counters[m], curve) for m in models}
    cpu = sum(r["wall_s"] for r in rows.values() if r["cpu"])  # CPU models share the machine
    gpu = [r["gpu_hours"] for r in rows.values() if r["gpu_hours"] is not None]
    calls = sum(r["calls"] for r in rows.values())
    return {
        "episodes": len(plan.tasks),
        "calls": calls,
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows.values()),
        "completion_tokens": sum(r["completion_tokens"] for r in rows.values()),
        "completion_tokens_bound": sum(r["completion_tokens_bound"] for r in rows.values()),
        "prompt_tokens_per_call": math.ceil(sum(r["prompt_tokens"] for r in rows.values()) / max(1, calls)),
        "wall_s": max([cpu, *(r["wall_s"] for r in rows.values() if not r["cpu"])]),
        "gpu_hours": sum(gpu) if gpu else None,
        "models": rows,
    }


def hh_mm(seconds: float) -> str:
    """`seconds` as hh:mm (to the nearest minute)."""
    minutes = round(seconds / 60.0)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _hours(h: float) -> str:
    return f"{h:.2f}" if h >= 0.01 or h == 0 else f"{h:.1g}"


def estimate_lines(figures: dict[str, Any]) -> list[str]:
    f = figures
    lines = [f"estimate: {f['calls']:,} calls (upper bound) in {f['episodes']:,} episodes"]
    for m, r in f["models"].items():
        gpu = f", GPU-hours ~{_hours(r['gpu_hours'])}" if r["gpu_hours"] is not None else ""
        lines.append(
            f"  {m}: {r['engine']}{', ' + r['profile'] if r['profile'] else ''} ({r['how']}): "
            f"{r['calls']:,} calls, wall ~{hh_mm(r['wall_s'])}{gpu}"
        )
    lines += [
        f"  prompt tokens ~{f['prompt_tokens']:,} ({f['prompt_tokens_per_call']:,} per call, sampled; debate "
        "rounds under-counted: stand-in replies are short)",
        f"  completion tokens ~{f['completion_tokens']:,} (the profile's mean reply; simulated: its own); at most "
        f"{f['completion_tokens_bound']:,} (max_tokens)",
        f"  wall time ~{hh_mm(f['wall_s'])} (hh:mm; {f['wall_s']:,.0f} s of model calls, engine start not "
        "included)",
    ]
    if f["gpu_hours"] is None:
        lines.append("  no GPU: every engine here runs on the CPU or is simulated")
    else:
        lines.append(f"  GPU-hours ~{_hours(f['gpu_hours'])} with every replica saturated (a floor)")
    return lines
