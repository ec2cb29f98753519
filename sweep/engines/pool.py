"""One engine pool for `sweep run`, `sweep study` and `sweep train`: the engines of the models a run
needs (in the driver process, or Ray actors), the LLM-call cache, and the agents (one per model) that
episodes are given.

Engines start when the first call the cache cannot answer needs them, not before: a rerun of a
finished sweep, or one the cache answers whole, starts neither Ray nor a model. Where an engine runs
is `ray.in_process` (default: the simulated engine in-process, every other engine in Ray actors)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console

from actors.base import Backend, ChatRequest, Completion
from actors.registry import engine_traits
from debate.episode import Agent
from debate.prompts import REPLY_SCHEMA
from sweep.config.sweep import ModelSpec, SweepConfig, model_identity
from sweep.engines.reaper import watch_descendants
from sweep.run.progress import seconds_since_start
from sweep.run.scheduler import CallMeter, FatalError
from sweep.store.cache import CachedBackend, CallCache
from sweep.store.repair import check_cache
from sweep.store.sanitize import SanitizingBackend

RAY_LOG = "logs/ray.log"  # in the output dir: Ray's own log lines, off the user's terminal


class MeteredBackend:
    """A `Backend` that counts, in `meter`, the calls episodes send through it: in flight while
    awaited, then answered (with their tokens). Cache hits count as calls: episodes' totals do."""

    def __init__(self, inner: Backend, meter: CallMeter) -> None:
        self.inner, self.meter = inner, meter

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.meter.in_flight += len(requests)
        try:
            out = await self.inner.generate(requests)
        finally:
            self.meter.in_flight -= len(requests)
        self.meter.done += len(out)
        self.meter.tokens += sum(c.prompt_tokens + c.completion_tokens for c in out)
        return out


def build_agents(
    models: Mapping[str, ModelSpec],
    backends: Mapping[str, Backend],
    cache: CallCache | None,
    meter: CallMeter | None = None,
) -> dict[str, Agent]:
    """One `Agent` per pool model: its engine (behind the call cache when there is one, and counted
    in `meter` when given), its sampling, its reply schema and its prices. Replies are sanitised
    before the cache stores them, and the cache sanitises what it reads from disk (an older version
    may have stored what no writer accepts)."""
    agents = {}
    for m, spec in models.items():
        backend: Backend = SanitizingBackend(backends[m])
        if cache is not None:
            backend = CachedBackend(backend, cache, model_identity(m, spec))
        if meter is not None:
            backend = MeteredBackend(backend, meter)
        s = spec.sampling
        schema = reply_schema(s.max_tokens) if spec.structured_output else None
        agents[m] = Agent(
            m, backend, s.max_tokens, s.temperature, s.top_p, schema, spec.price_in, spec.price_out
        )
    return agents


def local_agents(cfg: SweepConfig, models: Iterable[str] | None = None) -> dict[str, Agent]:
    """One `Agent` per model of `models` (default: the team's), each engine built in this process, no
    call cache: episodes without Ray or a pool, for benches and tests."""
    from actors.registry import build_backend

    specs = {m: cfg.models[m] for m in sorted(set(cfg.team()) if models is None else set(models))}
    return build_agents(
        specs, {m: build_backend(s.engine, s.model or m, dict(s.args)) for m, s in specs.items()}, None
    )


def reply_schema(max_tokens: int) -> dict[str, Any]:
    """The reply schema with `reasoning` bounded by the token budget: at most `max_tokens - 64`
    characters (a token is at least a character of such text; 64 tokens stay for the keys, the answer
    and the confidence). A grammar then closes the string in time for the answer, where a small model
    that loops in its reasoning would be cut off mid-JSON by `max_tokens` (unparsable)."""
    props = dict(REPLY_SCHEMA["properties"])  # type: ignore[call-overload]
    bound = max(64, min(props["reasoning"]["maxLength"], max_tokens - 64))
    props["reasoning"] = {**props["reasoning"], "maxLength": bound}
    return {**REPLY_SCHEMA, "properties": props}


def in_process(cfg: SweepConfig, model: str, address: str | None = None) -> bool:
    """Whether `model` runs in the driver process (`ray.in_process`; default: an engine whose traits
    say `in_process` — the simulated one — unless a cluster is named — `--address`, `ray.address` or the `RAY_ADDRESS` a job gets — where
    every engine runs on the cluster)."""
    if cfg.ray.in_process is not None:
        return cfg.ray.in_process
    if address or cfg.ray.address or os.environ.get("RAY_ADDRESS"):
        return False
    return engine_traits(cfg.models[model].engine).in_process


class EngineStartError(FatalError):
    """The engines could not be started: the whole run stops, not one episode."""


class LazyBackend:
    """A `Backend` that starts its engine on the first call (`start` returns it) and forwards
    every call to it. The start blocks the event loop: nothing can run without the engine. A failed
    start is raised again to every later call, never retried per episode."""

    def __init__(self, start: Callable[[], Backend]) -> None:
        self._start = start
        self.backend: Backend | None = None
        self._error: BaseException | None = None

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if self.backend is None:
            if self._error is None:
                try:
                    self.backend = self._start()
                except Exception as e:
                    self._error = e
            if self._error is not None:
                raise EngineStartError(f"engines did not start: {self._error}") from self._error
        assert self.backend is not None
        return await self.backend.generate(requests)


class EnginePool:
    """`with EnginePool(cfg, models, address, console) as pool:` prepares the engines of `models`
    (names of `cfg.models`; each starts on its first uncached call), opens the call cache in the
    output dir, and builds `pool.agents`; leaving the block stops what started and closes the cache."""

    def __init__(
        self,
        cfg: SweepConfig,
        models: Iterable[str],
        address: str | None = None,
        console: Console | None = None,
        warm_math: bool = False,
    ) -> None:
        self.cfg, self.models = cfg, sorted(set(models))
        self.address, self.console, self.warm_math = address, console or Console(stderr=True), warm_math
        self.backends: dict[str, Any] = {}  # the started engines, by model
        self.remote: dict[str, Any] = {}  # the Ray-hosted ones (stopped on exit)
        self.cache: CallCache | None = None
        self.agents: dict[str, Agent] = {}
        self.meter = CallMeter()  # the agents' calls, for progress
        self.encoders: Any = None  # sentence encoders for routers that read content, in Ray actors

    @property
    def simulated(self) -> set[str]:
        """The models whose results are labelled simulated."""
        return {m for m in self.models if engine_traits(self.cfg.models[m].engine).simulated}

    def __enter__(self) -> EnginePool:
        out = Path(self.cfg.output_dir).resolve()
        if self.cfg.cache:  # a corrupt cache is set aside now, not found after engines start
            check_cache(out / "llm_cache.sqlite")
        if self.warm_math:
            from data.grading.mathcheck import checker

            checker().start()  # its worker takes seconds to start: not inside the first episode's vote
            watch_descendants()  # the math worker stops with this driver
        specs = {m: self.cfg.models[m] for m in self.models}
        lazy = {m: LazyBackend(self._starter(m)) for m in specs}
        self.cache = CallCache(out / "llm_cache.sqlite") if self.cfg.cache else None
        self.agents = build_agents(specs, lazy, self.cache, self.meter)
        # Ray hosts the engines: encoders too
        if any(not in_process(self.cfg, m, self.address) for m in specs):
            # imports Ray (~1 s): only where Ray hosts something
            from sweep.engines.encoders import HostedEncoders

            self.encoders = HostedEncoders(self._init_ray).start()
        return self

    def _starter(self, model: str) -> Callable[[], Backend]:
        def start() -> Backend:
            if model not in self.backends:
                if in_process(self.cfg, model, self.address):
                    self._start_local(model)
                else:
                    self._start_remote()
            return self.backends[model]

        return start

    def _start_local(self, model: str) -> None:
        from actors.registry import build_backend

        t0, spec = time.perf_counter(), self.cfg.models[model]
        self.backends[model] = build_backend(spec.engine, spec.model or model, dict(spec.args))
        self.console.print(f"engine {model}: in-process, ready to answer{_took(t0)}")

    def _init_ray(self) -> dict[str, Any]:
        """Attach to or start Ray (once; later calls find it up)."""
        from sweep.engines.ray_runtime import init_ray

        ray_opts = self.cfg.ray
        log = Path(self.cfg.output_dir).resolve() / RAY_LOG
        info = init_ray(
            self.address or ray_opts.address,
            ray_opts.num_cpus,
            ray_opts.start_timeout_s,
            ray_opts.start_attempts,
            log_file=log,
        )
        watch_descendants()  # Ray's local processes stop with this driver
        return info

    def _start_remote(self) -> None:
        """Ray and every Ray-hosted model of the pool at once: they start in parallel, and the
        others will be asked for soon."""
        from sweep.engines.actors import start_engines

        t0 = time.perf_counter()
        info = self._init_ray()
        self.console.print(f"ray: {info['mode']}{_took(t0)}; its log: {info.get('log', '-')}")
        wanted = {m: self.cfg.models[m] for m in self.models if not in_process(self.cfg, m, self.address)}
        t0 = time.perf_counter()
        self.remote = start_engines(wanted)  # returns once every replica has loaded its model
        watch_descendants()  # the engines' worker processes too
        self.backends.update(self.remote)
        self.console.print(f"engine {', '.join(wanted)}: in Ray actors, ready to answer{_took(t0)}")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self.encoders is not None:
                self.encoders.stop()
            if self.remote:
                from sweep.engines.actors import stop_engines

                stop_engines(self.remote)
            for m, backend in self.backends.items():
                if m not in self.remote:
                    _close(backend)
        finally:
            if self.cache is not None:
                self.cache.close()

    def cache_line(self) -> str | None:
        """What the call cache did, for the console; None without a cache."""
        if self.cache is None:
            return None
        return f"llm-call cache: {self.cache.hits} hits, {self.cache.misses} engine calls ({self.cache.path.name})"


def _took(t0: float) -> str:
    """' in 4.2 s (61.0 s after the command started)': readiness as it happens, not a guess before."""
    since = seconds_since_start()
    after = f" ({since:.1f} s after the command started)" if since is not None else ""
    return f" in {time.perf_counter() - t0:.1f} s{after}"


def _close(backend: Any) -> None:
    """Let an in-process engine release what it holds (as `EngineActor.close` does in an actor)."""
    import asyncio

    for name in ("aclose", "close"):
        fn = getattr(backend, name, None)
        if fn is not None:
            result = fn()
            if hasattr(result, "__await__"):
                asyncio.run(result)
            return
