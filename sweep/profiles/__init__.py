"""Throughput profiles for `sweep plan --estimate`, one kind per engine:

- `llama_cpp`: a `CpuCurve` measured on a CPU (`smollm2_cpu.yaml`, written by
  `bench/cpu_model_curve.py`): prompt and completion tokens/s per request at each number of requests
  in flight. A CPU engine uses no GPU.
- `vllm` and `openai` (a server): the batch curve of one GPU replica (`actors.batch_curve.BatchCurve`,
  by default an 8B model on an H100-class GPU, modelled).
- `simulated`: no profile; its `latency_s` per batch is the whole of its time (`sweep.run.estimate`).

`load_profile(path)` reads either kind of YAML (a mapping with `in_flight` is a CPU curve), as
`--estimate CURVE` gives it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from actors.batch_curve import BatchCurve
from actors.registry import engine_traits

HOME = Path(__file__).resolve().parent
CPU_PROFILES = {"llama_cpp": HOME / "smollm2_cpu.yaml"}
CPU_ENGINES = frozenset(CPU_PROFILES)


@dataclass(frozen=True)
class CpuCurve:
    """A CPU engine's measured rates: `in_flight[k]` = (prompt, completion) tokens/s of one request
    while k run at once (on their own single-threaded instances)."""

    name: str
    in_flight: Mapping[int, tuple[float, float]]
    completion_tokens: int  # the mean reply measured
    tokens_per_char: float  # prompt tokens per character of the messages (chat template included)
    engine: str = "llama_cpp"
    model: str = ""
    measured: Mapping[str, Any] = field(default_factory=dict)

    def level(self, slots: int) -> int:
        """The measured level that `slots` requests in flight run at: the largest measured one not
        above it (at least the smallest). More in flight than measured gains nothing beyond it."""
        levels = sorted(self.in_flight)
        return max([k for k in levels if k <= slots] or levels[:1])

    def call_s(self, k: int, prompt_tokens: float, completion_tokens: float) -> float:
        """Seconds one call of this size takes with `k` (a measured level) in flight."""
        prompt_rate, completion_rate = self.in_flight[k]
        return prompt_tokens / prompt_rate + completion_tokens / completion_rate

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> CpuCurve:
        known = set(cls.__dataclass_fields__) | {"n_threads"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f"CPU curve: unknown key(s) {unknown}; known: {', '.join(sorted(known))}")
        levels = raw.get("in_flight")
        if not isinstance(levels, Mapping) or not levels:
            raise ValueError("CPU curve: in_flight must map requests in flight to their rates")
        rates: dict[int, tuple[float, float]] = {}
        for k, r in levels.items():
            if not isinstance(k, int) or k < 1 or not isinstance(r, Mapping):
                raise ValueError(f"CPU curve: in_flight.{k} must be a count >= 1 with its rates")
            pair = (r.get("prompt_tokens_per_s"), r.get("completion_tokens_per_s"))
            if not all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in pair):
                raise ValueError(
                    f"CPU curve: in_flight.{k} needs prompt_tokens_per_s and completion_tokens_per_s > 0"
                )
            rates[k] = (float(pair[0]), float(pair[1]))  # type: ignore[arg-type]
        fields = {k: v for k, v in raw.items() if k not in ("in_flight", "n_threads")}
        try:
            curve = cls(in_flight=rates, **fields)
        except TypeError as e:
            raise ValueError(f"CPU curve: {e}") from None
        if curve.completion_tokens < 1 or curve.tokens_per_char <= 0:
            raise ValueError("CPU curve: completion_tokens must be >= 1 and tokens_per_char > 0")
        return curve


Profile = BatchCurve | CpuCurve


def load_profile(path: Path) -> Profile:
    """The profile in the YAML at `path`: a CPU curve if it has `in_flight`, else a batch curve.
    ValueError (or OSError, yaml.YAMLError) when it cannot be read or is not one."""
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(raw, Mapping):
        raise ValueError("a profile is a YAML mapping (of batch-curve fields, or a CPU curve)")
    return CpuCurve.from_mapping(raw) if "in_flight" in raw else BatchCurve.from_mapping(raw)


def engine_profile(engine: str) -> Profile | None:
    """The packaged profile for `engine`; None for a simulated engine (its latency is its time)."""
    if engine_traits(engine).simulated:
        return None
    if engine in CPU_PROFILES:
        profile = load_profile(CPU_PROFILES[engine])
        assert isinstance(profile, CpuCurve), f"{CPU_PROFILES[engine]} is not a CPU curve"
        return profile
    return BatchCurve()  # vllm, a server behind openai, or an engine without a profile of its own
