"""One engine pool for `sweep run`, `sweep study` and `sweep train`: Ray, the engine actors of the
models a run needs, the LLM-call cache, and the agents (one per model) that episodes are given."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console

from actors.base import Backend
from debate.episode import Agent
from debate.prompts import REPLY_SCHEMA
from sweep.cache import CachedBackend, CallCache
from sweep.config import ModelSpec, SweepConfig, model_identity
from sweep.reaper import watch_descendants
from sweep.repair import check_cache
from sweep.sanitize import SanitizingBackend


def build_agents(
    models: Mapping[str, ModelSpec], backends: Mapping[str, Backend], cache: CallCache | None
) -> dict[str, Agent]:
    """One `Agent` per pool model: its engine (behind the call cache when there is one), its
    sampling, its reply schema and its prices. Replies are sanitised before the cache stores them,
    and again after it (a cache written by an older version may hold what no writer accepts)."""
    agents = {}
    for m, spec in models.items():
        backend: Backend = SanitizingBackend(backends[m])
        if cache is not None:
            backend = SanitizingBackend(CachedBackend(backend, cache, model_identity(m, spec)))
        schema = dict(REPLY_SCHEMA) if spec.structured_output else None
        s = spec.sampling
        agents[m] = Agent(
            m, backend, s.max_tokens, s.temperature, s.top_p, schema, spec.price_in, spec.price_out
        )
    return agents


class EnginePool:
    """`with EnginePool(cfg, models, address, console) as pool:` starts Ray and one set of engine
    actors for `models` (names of `cfg.models`), opens the call cache in the output dir, and builds
    `pool.agents`; leaving the block stops the engines and closes the cache."""

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
        self.backends: dict[str, Any] = {}
        self.cache: CallCache | None = None
        self.agents: dict[str, Agent] = {}
        self.encoders: Any = None  # sentence encoders for routers that read content, in Ray actors

    @property
    def simulated(self) -> set[str]:
        """The models whose results are labelled simulated."""
        return {m for m in self.models if self.cfg.models[m].engine == "simulated"}

    def __enter__(self) -> EnginePool:
        from sweep.encoders import HostedEncoders
        from sweep.engines import start_engines
        from sweep.ray_runtime import init_ray

        t0 = time.perf_counter()
        out = Path(self.cfg.output_dir).resolve()
        if self.cfg.cache:  # a corrupt cache is set aside now, not found after engines start
            check_cache(out / "llm_cache.sqlite")
        if self.warm_math:
            from data.mathcheck import checker

            checker().start()  # its worker takes seconds to start: not inside the first episode's vote
        info = init_ray(self.address or self.cfg.ray.address, self.cfg.ray.num_cpus)
        specs = {m: self.cfg.models[m] for m in self.models}
        watch_descendants()  # Ray's local processes (and the math worker) stop with this driver
        self.backends = start_engines(specs)
        watch_descendants()  # the engines' worker processes too
        self.console.print(
            f"ray: {info['mode']}; engines ready for {', '.join(self.models)} in {time.perf_counter() - t0:.1f} s"
        )
        self.cache = CallCache(out / "llm_cache.sqlite") if self.cfg.cache else None
        self.agents = build_agents(specs, self.backends, self.cache)
        self.encoders = HostedEncoders().start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        from sweep.engines import stop_engines

        try:
            if self.encoders is not None:
                self.encoders.stop()
            stop_engines(self.backends)
        finally:
            if self.cache is not None:
                self.cache.close()

    def cache_line(self) -> str | None:
        """What the call cache did, for the console; None without a cache."""
        if self.cache is None:
            return None
        return f"llm-call cache: {self.cache.hits} hits, {self.cache.misses} engine calls ({self.cache.path.name})"
