"""The CPU model's throughput curve for `sweep plan --estimate`: prompt and completion tokens/s of
SmolLM2-135M through llama.cpp (one thread per instance, as the quickstart runs it) with 1 and 2
requests in flight, measured on this machine with the config's real requests.

The requests are those a sweep sends: every call of the config's first episodes, rendered with the
real prompts and reply schema while the simulated population answers (so debate rounds quote peers);
the first `--requests` of them go to the real model. Per call, llama.cpp's own counters give the
prompt-evaluation time; the rest of the call's wall time (decoding, grammar-constrained sampling,
detokenising) is charged to the completion, so the rates are what a sweep sees end to end. With 2
in flight, two instances each serve half the requests at once: the rates are per request.

Writes the profile YAML (default `sweep/profiles/smollm2_cpu.yaml`, shipped in the package) with
the load average before and after, since the machine may be shared:

    .venv/bin/python bench/cpu_model_curve.py                       # writes the packaged profile
    .venv/bin/python bench/cpu_model_curve.py --requests 4 --out /tmp/curve.yaml
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from actors.base import ChatRequest, Completion  # noqa: E402
from actors.llama_cpp import LlamaCppBackend, chat_kwargs  # noqa: E402
from actors.registry import build_backend  # noqa: E402
from sweep.config.sweep import load_config  # noqa: E402
from sweep.engines.pool import build_agents  # noqa: E402
from sweep.run.plan import build_plan  # noqa: E402
from sweep.run.scheduler import run_tasks  # noqa: E402

DEFAULT_OUT = ROOT / "sweep" / "profiles" / "smollm2_cpu.yaml"


class Recorder:
    """Records the requests episodes send; the simulated population writes the replies."""

    def __init__(self, model: str) -> None:
        self.inner = build_backend("simulated", model, {})
        self.requests: list[ChatRequest] = []

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.requests += requests
        return list(await self.inner.generate(requests))


def sweep_requests(config: str, n: int) -> tuple[str, list[ChatRequest]]:
    """(the model the engine loads, `n` requests spread over the config's episodes and rounds)."""
    cfg = load_config(config, ["tracking.enabled=false", "cache=false"])
    plan = build_plan(cfg)
    models = sorted({m for g in plan.groups for m in g.seats})
    if len(models) != 1 or cfg.models[models[0]].engine != "llama_cpp":
        sys.exit("cpu_model_curve: give a config whose team is one llama_cpp model")
    recorder = Recorder(models[0])
    agents = build_agents({models[0]: cfg.models[models[0]]}, {models[0]: recorder}, None)
    tasks = []
    for g in plan.groups:  # a few episodes of each method: first-round and debate prompts alike
        tasks += list(g.tasks())[:2]
    asyncio.run(run_tasks(tasks, agents, lambda *a: None, 64))
    reqs = recorder.requests
    stride = max(1, len(reqs) // n)  # spread over the methods and rounds, not the first few alone
    return cfg.models[models[0]].model or models[0], reqs[::stride][:n]


def one_call(llm: Any, kwargs: dict[str, Any]) -> dict[str, float]:
    """One call on `llm` from an empty KV cache: its prompt tokens and prompt-eval seconds (llama.cpp's
    counters), completion tokens, wall seconds and prompt characters."""
    from llama_cpp import llama_cpp as lib

    llm.reset()
    lib.llama_perf_context_reset(llm._ctx.ctx)  # private handle: 0.3.36 offers no public one
    t0 = time.perf_counter()
    response = llm.create_chat_completion(**kwargs)
    wall = time.perf_counter() - t0
    perf = lib.llama_perf_context(llm._ctx.ctx)
    usage = response["usage"]
    return {
        "prompt_tokens": float(usage["prompt_tokens"]),
        "prompt_s": perf.t_p_eval_ms / 1000.0,
        "completion_tokens": float(usage["completion_tokens"]),
        "wall_s": wall,
        "chars": float(sum(len(m["content"]) for m in kwargs["messages"])),
    }


def measure(backend: LlamaCppBackend, requests: list[ChatRequest], in_flight: int) -> list[dict[str, float]]:
    """Every request once, `in_flight` instances at a time (one thread each, a shared queue)."""
    todo = [chat_kwargs(r, backend.schema_for(r)) for r in requests]
    lock, out = threading.Lock(), []

    def worker(llm: Any) -> None:
        while True:
            with lock:
                if not todo:
                    return
                kwargs = todo.pop(0)
            row = one_call(llm, kwargs)
            with lock:
                out.append(row)

    threads = [threading.Thread(target=worker, args=(llm,)) for llm in backend.pool.instances[:in_flight]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def rates(rows: list[dict[str, float]]) -> dict[str, float]:
    prompt = sum(r["prompt_tokens"] for r in rows)
    completion = sum(r["completion_tokens"] for r in rows)
    prompt_s = sum(r["prompt_s"] for r in rows)
    rest_s = sum(r["wall_s"] - r["prompt_s"] for r in rows)
    return {
        "prompt_tokens_per_s": round(prompt / prompt_s, 1),
        "completion_tokens_per_s": round(completion / rest_s, 1),
        "calls": len(rows),
        "mean_call_s": round(sum(r["wall_s"] for r in rows) / len(rows), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "examples" / "quickstart.yaml"))
    ap.add_argument("--requests", type=int, default=8, help="calls per in-flight level (default 8)")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    args = ap.parse_args()
    model, requests = sweep_requests(args.config, args.requests)
    load_before = os.getloadavg()
    backend = LlamaCppBackend(model, n_threads=1, n_parallel=2)
    levels, all_rows = {}, []
    for k in (1, 2):
        rows = measure(backend, requests, k)
        levels[k] = rates(rows)
        all_rows += rows
        print(f"{k} in flight: {levels[k]}", flush=True)
    load_after = os.getloadavg()
    profile = {
        "name": "SmolLM2-135M Q4_1 via llama.cpp, 1 thread per instance",
        "engine": "llama_cpp",
        "model": model,
        "n_threads": 1,
        "in_flight": {
            k: {kk: v[kk] for kk in ("prompt_tokens_per_s", "completion_tokens_per_s")}
            for k, v in levels.items()
        },
        "completion_tokens": round(sum(r["completion_tokens"] for r in all_rows) / len(all_rows)),
        "tokens_per_char": round(
            sum(r["prompt_tokens"] for r in all_rows) / sum(r["chars"] for r in all_rows), 3
        ),
        "measured": {
            "at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "cpus": os.cpu_count(),
            "load_avg_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
            "calls_per_level": args.requests,
            "mean_call_s": {k: v["mean_call_s"] for k, v in levels.items()},
            "config": os.path.relpath(args.config, ROOT)
            if args.config.startswith(str(ROOT))
            else args.config,
        },
    }
    header = (
        "# Throughput of the CPU model, measured by bench/cpu_model_curve.py (rerun it to refresh on your\n"
        "# machine); read by `sweep plan --estimate` for llama_cpp models. Rates are per request at 1 and\n"
        "# 2 requests in flight; `completion_tokens` is the mean reply, `tokens_per_char` prompt tokens per\n"
        "# character of the messages (chat template included).\n"
    )
    Path(args.out).write_text(header + yaml.safe_dump(profile, sort_keys=False), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
